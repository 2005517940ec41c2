"""What a hook costs a tool call (plugins/hooks.py): a runtime running CALLS `ls` calls
with a scripted model, in process, with a before-tool hook running `true` in the sandbox
(workspace-write: bubblewrap, the socket filter), the same hook with the sandbox off, no
hook configured (the hooks plugin active, finding nothing to run), and the hooks plugin
disabled (`plugin_idle_ms`: what the plugin costs a call with no hook, which its
`Plugin.wants` keeps from starting a handler thread); runs interleaved in the same
process, medians. A hook's cost per call is its run's time less the run with no hook,
over CALLS.

    python benchmarks/bench_hooks.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALLS = 20  # tool calls per run
HOOK = 'hooks { hook "t" on="before-tool" command="true"; }\n'
VARIANTS = {
    "disabled": 'plugins { disabled "hooks"; }\n',
    "none": "",
    "sandboxed": HOOK,
    "off": HOOK + 'sandbox { mode "off"; }\n',
}


def _world() -> tuple[str, dict[str, dict[str, str]]]:
    """A project, a script of CALLS ls calls, and each variant's environment."""
    root = tempfile.mkdtemp(prefix="smith-bench-hooks-")
    os.makedirs(os.path.join(root, "project", ".git"))
    calls = [{"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}] * CALLS
    with open(os.path.join(root, "script.json"), "w") as f:
        json.dump({"responses": [*calls, {"text": "done"}]}, f)
    envs = {}
    for name, text in VARIANTS.items():
        config = os.path.join(root, f"config-{name}")
        os.makedirs(config)
        with open(os.path.join(config, "config.kdl"), "w") as f:
            f.write(text)
        envs[name] = {"HOME": os.path.join(root, "home"), "SMITH_CONFIG_HOME": config,
                      "SMITH_HOME": os.path.join(root, "data"),
                      "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # fmt: skip
    return root, envs


def _run(root: str, env: dict[str, str], n: int) -> float:
    """Seconds one prompt of the script takes (runtime built, CALLS calls, closed)."""
    from smith.config import resolve
    from smith.effects import Sandbox, ToolContext, builtin_tools
    from smith.runtime import Limits, Runtime
    from smith.sdk import resolve_plugins
    from smith.session import Session

    project = os.path.join(root, "project")
    config = resolve(env=env, cwd=project)
    plugins = resolve_plugins(config)

    async def main() -> float:
        session = Session.create(os.path.join(root, f"session-{n}.jsonl"), cwd=project)
        ctx = ToolContext(root=project, cwd=project, session=session,
                          sandbox=Sandbox.from_config(config))  # fmt: skip
        rt = Runtime(session, model=f"scripted:{root}/script.json",
                     tools=list(builtin_tools().values()), context=ctx, config=config,
                     plugin_list=plugins, limits=Limits(retry_delay=0.001))  # fmt: skip
        start = time.perf_counter()
        rt.prompt("go")
        await rt.wait_idle()
        took = time.perf_counter() - start
        await rt.close()
        session.close()
        return took

    return asyncio.run(main())


def figures(runs: int = 7) -> dict[str, float]:
    """ms per call of each variant (medians of `runs` interleaved runs), and each hook's
    cost per call over no hook."""
    root, envs = _world()
    try:
        times: dict[str, list[float]] = {name: [] for name in envs}
        n = 0
        for env in envs.values():  # warm: imports, the sandbox probe, the filter
            n += 1
            _run(root, env, n)
        for _ in range(runs):
            for name, env in envs.items():
                n += 1
                times[name].append(_run(root, env, n))
        per_call = {k: statistics.median(v) * 1e3 / CALLS for k, v in times.items()}
        return {
            **{f"{k}_ms_per_call": v for k, v in per_call.items()},
            "hook_sandboxed_ms": per_call["sandboxed"] - per_call["none"],
            "hook_off_ms": per_call["off"] - per_call["none"],
            "plugin_idle_ms": per_call["none"] - per_call["disabled"],
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


class HookCost:
    timeout = 600
    number = 1
    repeat = 1

    def setup(self) -> None:
        from smith.effects import Sandbox

        if Sandbox().effective != "workspace-write":
            raise NotImplementedError("bubblewrap cannot run here")  # asv: skipped
        self.found = figures(runs=5)

    def track_hook_sandboxed_ms(self) -> float:
        return self.found["hook_sandboxed_ms"]

    def track_hook_off_ms(self) -> float:
        return self.found["hook_off_ms"]

    def track_plugin_idle_ms(self) -> float:
        return self.found["plugin_idle_ms"]

    track_hook_sandboxed_ms.unit = "ms"  # type: ignore[attr-defined]
    track_hook_off_ms.unit = "ms"  # type: ignore[attr-defined]
    track_plugin_idle_ms.unit = "ms"  # type: ignore[attr-defined]


if __name__ == "__main__":
    for key, value in figures().items():
        print(f"{key:<28} {value:7.2f}")
