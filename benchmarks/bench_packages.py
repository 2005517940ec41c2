"""What installed declarative packages cost a run's start: PACKAGE_COUNT packages, each
with a skill, an agent definition, a hook (before MCP tools' calls: read and checked,
not run by a run without tool calls) and a theme in its plugin.kdl,
taken by the plugins that own those kinds (smith.packages: installed, package_folders,
package_hooks, package_mcp_servers, package_themes), in process, the first time (each
plugin.kdl parsed) and again (parsed once per file version); and `smith eval` with a
scripted model, whole process, with them against the same run with none (runs
interleaved, medians)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time

from benchmarks._measure import best, smith_command, wall

PACKAGE_COUNT = 20


def _world(count: int) -> tuple[str, dict[str, str]]:
    """A smith home with `count` packages installed, and the environment to run in it."""
    root = tempfile.mkdtemp(prefix="smith-bench-packages-")
    for n in range(count):
        package = os.path.join(root, "data", "plugins", f"pkg-{n:02}")
        for folder in ("skills/tidy", "agents"):
            os.makedirs(os.path.join(package, folder))
        with open(os.path.join(package, "plugin.kdl"), "w") as f:
            f.write(
                f'name "pkg-{n:02}"\nversion "1.0.0"\n'
                'hooks {\n    hook "gate" on="before-tool" match="mcp_.*" command="true"\n}\n'
                f'theme "theme-{n:02}" {{\n    primary "#1e90ff"\n    background "#fdf6e3"\n}}\n'
            )
        with open(os.path.join(package, "skills", "tidy", "SKILL.md"), "w") as f:
            f.write(f"---\nname: tidy-{n:02}\ndescription: Tidies things {n}\n---\nSteps.\n")
        with open(os.path.join(package, "agents", f"agent-{n:02}.md"), "w") as f:
            f.write(f"---\nname: agent-{n:02}\ndescription: Does {n}\n---\nYou do it.\n")
    os.makedirs(os.path.join(root, "project", ".git"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMITH_")}
    env.update(HOME=os.path.join(root, "home"), SMITH_HOME=os.path.join(root, "data"),
               SMITH_CONFIG_HOME=os.path.join(root, "config"))  # fmt: skip
    return root, env


def _parts_ms(root: str, env: dict[str, str]) -> tuple[float, float]:
    """(ms the first time, best ms again) of every kind's look at the packages."""
    from smith import packages
    from smith.config import resolve

    config = resolve(env=env, cwd=os.path.join(root, "project"))

    def run() -> None:
        packages.package_folders(config, "skills")
        packages.package_folders(config, "agents")
        packages.package_mcp_servers(config)
        packages.package_hooks(config)
        packages.package_themes(config)

    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    return first * 1e3, best(run, 15) * 1e3


def _eval_argv(root: str) -> list[str]:
    script = os.path.join(root, "script.json")
    with open(script, "w") as f:
        json.dump({"responses": [{"text": "ok"}] * 100}, f)
    return [*smith_command(), "eval", "--no-session", "--model", f"scripted:{script}", "hi"]


def figures(repeat: int = 9) -> dict[str, float]:
    with_root, with_env = _world(PACKAGE_COUNT)
    none_root, none_env = _world(0)
    try:
        first_ms, again_ms = _parts_ms(with_root, with_env)
        _, none_ms = _parts_ms(none_root, none_env)
        argv_with, argv_none = _eval_argv(with_root), _eval_argv(none_root)
        cwd = os.getcwd()
        ours: list[float] = []
        bare: list[float] = []
        try:
            os.chdir(os.path.join(with_root, "project"))
            wall(argv_with, 1, with_env)  # warm
            for _ in range(repeat):
                ours += wall(argv_with, 1, with_env)
                os.chdir(os.path.join(none_root, "project"))
                bare += wall(argv_none, 1, none_env)
                os.chdir(os.path.join(with_root, "project"))
        finally:
            os.chdir(cwd)
    finally:
        shutil.rmtree(with_root, ignore_errors=True)
        shutil.rmtree(none_root, ignore_errors=True)
    return {
        "parts_first_ms": first_ms,
        "parts_again_ms": again_ms,
        "parts_none_ms": none_ms,
        "eval_ms": statistics.median(ours) * 1e3,
        "eval_none_ms": statistics.median(bare) * 1e3,
    }


def line(f: dict[str, float]) -> str:
    return (
        f"packages         {PACKAGE_COUNT} declarative packages' parts found in "
        f"{f['parts_first_ms']:.1f} ms first, {f['parts_again_ms']:.2f} ms again "
        f"(none: {f['parts_none_ms']:.2f} ms); smith eval {f['eval_ms']:.0f} ms vs "
        f"{f['eval_none_ms']:.0f} ms without packages"
    )


class Packages:
    def track_parts_first_20_ms(self) -> float:
        return figures(repeat=3)["parts_first_ms"]

    track_parts_first_20_ms.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
