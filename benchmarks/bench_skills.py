"""What skills cost a run's start: finding SKILL_COUNT skills (each SKILL.md read and its
front matter parsed) and composing the index, in process, against finding none in the
same folders; and `smith eval` with a scripted model, whole process, with SKILL_COUNT
skills against the same run with none (runs interleaved, medians). The index's size is
the figure the model pays for on every request."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile

from benchmarks._measure import best, smith_command, wall

SKILL_COUNT = 100


def _world(count: int) -> tuple[str, dict[str, str]]:
    """A home with `count` skills in ~/.claude/skills, and the environment to run in it."""
    root = tempfile.mkdtemp(prefix="smith-bench-skills-")
    home = os.path.join(root, "home")
    folder = os.path.join(home, ".claude", "skills")
    os.makedirs(folder)
    for n in range(count):
        os.makedirs(os.path.join(folder, f"skill-{n:03}"))
        with open(os.path.join(folder, f"skill-{n:03}", "SKILL.md"), "w") as f:
            f.write(
                f"---\nname: skill-{n:03}\ndescription: Does task {n} when the user asks "
                "for it, with its scripts.\n---\n\n# Instructions\n" + "A step.\n" * 100
            )
    os.makedirs(os.path.join(root, "project", ".git"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMITH_")}
    env.update(HOME=home, SMITH_HOME=os.path.join(root, "data"),
               SMITH_CONFIG_HOME=os.path.join(root, "config"))  # fmt: skip
    return root, env


def _catalog_ms(env: dict[str, str]) -> tuple[float, str]:
    """(best ms of discovery and the index, the index) with `env`'s folders."""
    from smith.config import resolve
    from smith.plugins._skills import discover, index, skill_folders

    saved = dict(os.environ)
    os.environ.update(env)  # ~ is the world's home
    try:
        config = resolve(env=env, cwd=os.path.join(os.path.dirname(env["SMITH_HOME"]), "project"))

        def run() -> str:
            folders = skill_folders(config, other_agents=True)
            return index(discover(folders, max_bytes=64 * 1024), max_bytes=8 * 1024)

        return best(run, 15) * 1e3, run()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _eval_argv(root: str) -> list[str]:
    script = os.path.join(root, "script.json")
    with open(script, "w") as f:
        json.dump({"responses": [{"text": "ok"}] * 100}, f)
    return [*smith_command(), "eval", "--no-session", "--model", f"scripted:{script}", "hi"]


def figures(repeat: int = 9) -> dict[str, float]:
    with_root, with_env = _world(SKILL_COUNT)
    none_root, none_env = _world(0)
    try:
        found_ms, text = _catalog_ms(with_env)
        empty_ms, _ = _catalog_ms(none_env)
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
        "discover_ms": found_ms,
        "discover_none_ms": empty_ms,
        "index_bytes": len(text.encode()),
        "index_listed": text.count("\n- "),
        "eval_ms": statistics.median(ours) * 1e3,
        "eval_none_ms": statistics.median(bare) * 1e3,
    }


def line(f: dict[str, float]) -> str:
    return (
        f"skills           {SKILL_COUNT} found in {f['discover_ms']:.1f} ms "
        f"(none: {f['discover_none_ms']:.2f} ms), index {f['index_bytes']:,.0f} bytes "
        f"({f['index_listed']:.0f} listed); "
        f"smith eval {f['eval_ms']:.0f} ms vs {f['eval_none_ms']:.0f} ms without skills"
    )


class Skills:
    def track_discover_100_ms(self) -> float:
        return figures(repeat=3)["discover_ms"]

    track_discover_100_ms.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(line(figures()))
