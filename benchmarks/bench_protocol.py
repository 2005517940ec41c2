"""Events through the protocol: the runtime's events per second, `smith eval --json` and
`smith rpc` throughput, each against a baseline tree measured in the same run.

The session is scripted and tool-using: TURNS provider rounds, each streaming a text of
WORDS words (cut into three-word deltas) and one tool call, so a round is about 26 events
(turn and message starts and ends, the deltas, the tool's start and end).

- runtime: in a child process, a frontend attached to the runtime (`Runtime.attach`)
  counts what reaches it; events/s from the prompt to idle. A second run's frontend also
  encodes each event as an RPC notification line (the encoder of the tree under test).
- eval: `smith eval --json` of the session, the whole process: events/s and us per
  event (the process's start included), and a one-turn session's wall time (what
  loading the encoder costs a short run).
- rpc: `smith rpc` over stdio: sequential `get_state` round trips per second, and the
  `event` notifications per second of one prompt of the session (from the request to the
  `wait_idle` answer).

Every figure is measured for this tree and for the baseline, in child processes started
the same way (benchmarks/_tree.py) and interleaved, best of REPEAT; `*_ratio` is this
tree's over the baseline's (above 1: faster). The baseline is SMITH_BENCH_BASE: a commit
(HEAD~1: extracted and built in a temporary directory) or a directory holding a
checkout; without it, this tree is measured against itself (ratios near 1: the noise).
SMITH_BENCH_NEW (a commit) measures that commit instead of this working tree.

    SMITH_BENCH_BASE=HEAD~1 python benchmarks/bench_protocol.py
    SMITH_BENCH_NEW=C SMITH_BENCH_BASE=C~1 python benchmarks/bench_protocol.py
    SMITH_BENCH_BASE=HEAD~1 python benchmarks/bench_protocol.py --with-tui

`--with-tui` also runs benchmarks/bench_tui.py in both trees (`tui_figures`): the app's
first frame and streaming frame times at 100,000 entries, this tree against the baseline.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TURNS = 150
WORDS = 60
REPEAT = 7
GET_STATE = 400  # sequential round trips per run

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
TEXT = " ".join(f"word{i % 17}" for i in range(WORDS))


def _script(directory: Path, turns: int) -> str:
    step = {"text": TEXT, "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    path = directory / f"script-{turns}.json"
    responses = [step] * (turns - 1) + [{"text": "done"}]
    path.write_text(json.dumps({"responses": responses}))
    return str(path)


def _place(directory: Path) -> tuple[Path, dict[str, str]]:
    """A project with a file to read and an environment of its own."""
    project = directory / "project"
    (project / ".git").mkdir(parents=True)
    (project / "notes.txt").write_text("a short file the model reads every turn\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMITH_", "XDG_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed smith starts (_measure.py)
    env |= {
        "PYTHONPYCACHEPREFIX": str(directory / "pycache"),
        "HOME": str(directory),
        "SMITH_HOME": str(directory / "data"),
        "SMITH_CONFIG_HOME": str(directory / "config"),
        "XDG_CONFIG_HOME": str(directory / "config"),
        "SMITH_AGENT_MAX_ITERATIONS": str(TURNS + 1),
    }
    return project, env


# -- the runtime, in a child process (the worker below) --------------------------------


def _worker_runtime(script: str, project: str, encode: bool) -> dict[str, float]:
    import asyncio

    from smith.effects import ToolContext, builtin_tools
    from smith.runtime import Limits, Runtime
    from smith.session import Session
    from smith.ui import SHOWN, Capabilities

    if encode:
        from smith.frontends.rpc._protocol import encode as encoder
        from smith.frontends.rpc._protocol import notification

    class Counting:
        name = "bench"
        capabilities = Capabilities(shows=frozenset(SHOWN))

        def __init__(self) -> None:
            self.events = 0

        def show(self, intent: Any) -> None:
            self.events += 1
            if encode and intent.event is not None:
                encoder(notification("event", intent.event))

        async def ask(self, intent: Any) -> Any:
            raise AssertionError("nothing asks")

    async def run() -> tuple[float, int]:
        session = Session.create(str(Path(project) / f"s-{time.monotonic_ns()}.smith"))
        ctx = ToolContext(root=project, cwd=project, session=session)
        tools = [builtin_tools()["read"]]
        rt = Runtime(session, model=f"scripted:{script}", tools=tools, context=ctx,
                     limits=Limits(max_iterations=TURNS + 1))  # fmt: skip
        frontend = Counting()
        rt.attach(frontend)
        start, cpu = time.perf_counter(), time.process_time()
        rt.prompt("go")
        await rt.wait_idle()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        await rt.close()
        session.close()
        return elapsed, cpu, frontend.events

    elapsed, cpu, events = asyncio.run(run())
    return {"seconds": elapsed, "cpu": cpu, "events": float(events)}


def _runtime(
    root: Path, script: str, project: Path, env: dict[str, str], encode: bool
) -> tuple[float, float]:
    """(events/s, events per CPU second)."""
    argv = [str(HERE), "--worker", script, str(project), "1" if encode else "0"]
    out = subprocess.run(_tree_command(root, *argv), cwd=project, env=env,
                         capture_output=True, text=True, check=False)  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"the runtime worker failed in {root}: {out.stderr[-1500:]}")
    f = json.loads(out.stdout.splitlines()[-1])
    return f["events"] / f["seconds"], f["events"] / f["cpu"]


# -- smith eval --json -----------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _eval(root: Path, script: str, project: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, lines printed)."""
    argv = _tree_command(root, "-m", "smith", "eval", "--json", "--model", f"scripted:{script}",
                         "go")  # fmt: skip
    start, cpu = time.perf_counter(), _children_cpu()
    out = subprocess.run(argv, cwd=project, env=env, capture_output=True, check=False)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu
    lines = out.stdout.count(b"\n")
    if out.returncode or lines < 3:
        raise RuntimeError(f"smith eval failed in {root}: {out.stderr[-1500:]!r}")
    return elapsed, cpu, lines


# -- smith rpc -------------------------------------------------------------------------


def _rpc(root: Path, script: str, project: Path, env: dict[str, str]) -> dict[str, float]:
    argv = _tree_command(root, "-m", "smith", "rpc", "--model", f"scripted:{script}")
    cpu = _children_cpu()
    proc = subprocess.Popen(argv, cwd=project, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def call(number: int, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request; read up to its answer; the notifications read before it."""
        request = {"jsonrpc": "2.0", "id": number, "method": method, "params": params or {}}
        stdin.write(json.dumps(request).encode() + b"\n")
        stdin.flush()
        seen = 0
        tag = f'"id":{number},'.encode()
        while True:
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"smith rpc ended early in {root}")
            if tag in line.replace(b" ", b"") and b'"method"' not in line:
                return seen
            seen += b'"method":"event"' in line.replace(b" ", b"")

    try:
        call(0, "get_state")  # started, imports done
        start = time.perf_counter()
        for number in range(1, GET_STATE + 1):
            call(number, "get_state")
        trips = time.perf_counter() - start
        start = time.perf_counter()
        seen = call(GET_STATE + 1, "prompt", {"text": "go"})
        seen += call(GET_STATE + 2, "wait_idle")
        streamed = time.perf_counter() - start
        call(GET_STATE + 3, "shutdown")
    finally:
        stdin.close()
        proc.wait(timeout=60)
    return {
        "get_state_per_s": GET_STATE / trips,
        "events_per_s": seen / streamed,
        "cpu_s": _children_cpu() - cpu,  # the whole process: start, round trips, prompt
    }


def _tree_command(root: Path, *args: str) -> list[str]:
    sys.path.insert(0, str(REPO))
    from benchmarks._tree import command

    return command(root, *args)


def _trees() -> dict[str, Path]:
    """This tree (or SMITH_BENCH_NEW's: a commit, to compare two commits alone, without
    what is uncommitted here) and the baseline (SMITH_BENCH_BASE's)."""
    sys.path.insert(0, str(REPO))
    from benchmarks._tree import baseline

    new = os.environ.get("SMITH_BENCH_NEW")
    return {
        "new": baseline(new) if new else REPO,
        "base": baseline(os.environ.get("SMITH_BENCH_BASE") or str(REPO)),
    }


def figures(repeat: int = REPEAT) -> dict[str, float]:
    trees = _trees()
    best: dict[str, float] = {}

    def keep(key: str, value: float, higher: bool = True) -> None:
        if key not in best:
            best[key] = value
        else:
            best[key] = max(best[key], value) if higher else min(best[key], value)

    directory = Path(tempfile.mkdtemp(prefix="smith-bench-protocol-"))
    try:
        project, env = _place(directory)
        script, short = _script(directory, TURNS), _script(directory, 2)
        for root in trees.values():  # bytecode caches written
            _eval(root, short, project, env)
        for _ in range(repeat):
            for name, root in trees.items():
                for kind, encode in (("events", False), ("encoded", True)):
                    wall, cpu = _runtime(root, script, project, env, encode)
                    keep(f"{name}_runtime_{kind}_per_s", wall)
                    keep(f"{name}_runtime_{kind}_per_cpu_s", cpu)
                elapsed, cpu, lines = _eval(root, script, project, env)
                keep(f"{name}_eval_events_per_s", lines / elapsed)
                keep(f"{name}_eval_us_per_event", elapsed / lines * 1e6, higher=False)
                keep(f"{name}_eval_cpu_us_per_event", cpu / lines * 1e6, higher=False)
                keep(f"{name}_eval_short_ms", _eval(root, short, project, env)[0] * 1e3, False)
                for key, value in _rpc(root, script, project, env).items():
                    keep(f"{name}_rpc_{key}", value, higher=key != "cpu_s")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    out = dict(best)
    for key in [k[4:] for k in best if k.startswith("new_")]:
        lower = key.endswith(("_us_per_event", "_ms", "cpu_s"))  # times: lower is better
        new, base = best[f"new_{key}"], best[f"base_{key}"]
        out[f"{key}_ratio"] = base / new if lower else new / base
    return out


def line(f: dict[str, float]) -> str:
    """The figures as compare.py prints them (ratios: the baseline's time over this
    tree's, above 1 faster; wall clock, then CPU time, which another process's load
    disturbs less)."""
    return (
        f"protocol events  runtime {f['new_runtime_events_per_s']:,.0f} events/s to an attached "
        f"frontend ({f['runtime_events_per_s_ratio']:.2f}x the baseline, CPU "
        f"{f['runtime_events_per_cpu_s_ratio']:.2f}x), {f['new_runtime_encoded_per_s']:,.0f} "
        f"encoded as RPC lines ({f['runtime_encoded_per_s_ratio']:.2f}x, CPU "
        f"{f['runtime_encoded_per_cpu_s_ratio']:.2f}x); eval --json "
        f"{f['new_eval_events_per_s']:,.0f} events/s, {f['new_eval_us_per_event']:.0f} us "
        f"per event ({f['eval_events_per_s_ratio']:.2f}x, CPU "
        f"{f['eval_cpu_us_per_event_ratio']:.2f}x), a one-turn run "
        f"{f['new_eval_short_ms']:.0f} ms ({f['eval_short_ms_ratio']:.2f}x); rpc "
        f"{f['new_rpc_get_state_per_s']:,.0f} get_state/s "
        f"({f['rpc_get_state_per_s_ratio']:.2f}x), {f['new_rpc_events_per_s']:,.0f} "
        f"notifications/s ({f['rpc_events_per_s_ratio']:.2f}x), the server's CPU "
        f"{f['rpc_cpu_s_ratio']:.2f}x"
    )


class Protocol:
    """asv: measured once (setup_cache); each track_ method reads one figure."""

    timeout = 900
    number = 1
    repeat = 1

    def setup_cache(self) -> dict[str, float]:
        return figures()

    def track_runtime_events_per_s(self, f: dict[str, float]) -> float:
        return f["new_runtime_events_per_s"]

    track_runtime_events_per_s.unit = "events/s"  # type: ignore[attr-defined]

    def track_runtime_events_ratio(self, f: dict[str, float]) -> float:
        return f["runtime_events_per_s_ratio"]

    track_runtime_events_ratio.unit = "x the baseline"  # type: ignore[attr-defined]

    def track_runtime_encoded_ratio(self, f: dict[str, float]) -> float:
        return f["runtime_encoded_per_s_ratio"]

    track_runtime_encoded_ratio.unit = "x the baseline"  # type: ignore[attr-defined]

    def track_eval_json_events_per_s(self, f: dict[str, float]) -> float:
        return f["new_eval_events_per_s"]

    track_eval_json_events_per_s.unit = "events/s"  # type: ignore[attr-defined]

    def track_eval_json_ratio(self, f: dict[str, float]) -> float:
        return f["eval_events_per_s_ratio"]

    track_eval_json_ratio.unit = "x the baseline"  # type: ignore[attr-defined]

    def track_eval_json_short_ratio(self, f: dict[str, float]) -> float:
        return f["eval_short_ms_ratio"]

    track_eval_json_short_ratio.unit = "x the baseline"  # type: ignore[attr-defined]

    def track_rpc_get_state_ratio(self, f: dict[str, float]) -> float:
        return f["rpc_get_state_per_s_ratio"]

    track_rpc_get_state_ratio.unit = "x the baseline"  # type: ignore[attr-defined]

    def track_rpc_notifications_ratio(self, f: dict[str, float]) -> float:
        return f["rpc_events_per_s_ratio"]

    track_rpc_notifications_ratio.unit = "x the baseline"  # type: ignore[attr-defined]


def _sample_events() -> list[dict[str, Any]]:
    """One scripted round's events, as the runtime emits them (dicts)."""
    message = {"role": "assistant", "content": [{"type": "text", "text": TEXT}],
               "stop": "tool_use", "usage": {"input": 1200, "output": 80}}  # fmt: skip
    result = {"text": "a short file", "details": {"path": "notes.txt"}, "ok": True}
    deltas = [" ".join(TEXT.split()[i : i + 3]) + " " for i in range(0, WORDS, 3)]
    return [
        {"type": "turn_start", "turn": 3, "submission": "p-1"},
        {"type": "message_start", "role": "assistant", "message_id": "m-3", "submission": "p-1"},
        *(
            {
                "type": "message_delta",
                "message_id": "m-3",
                "channel": "text",
                "delta": d,
                "submission": "p-1",
            }
            for d in deltas
        ),
        {
            "type": "message_end",
            "message_id": "m-3",
            "message": message,
            "entry_id": "e-9",
            "submission": "p-1",
        },
        {
            "type": "tool_start",
            "tool_call_id": "c-3",
            "name": "read",
            "arguments": {"path": "notes.txt"},
            "submission": "p-1",
        },
        {
            "type": "tool_end",
            "tool_call_id": "c-3",
            "name": "read",
            "result": result,
            "outcome": "ok",
            "is_error": False,
            "submission": "p-1",
        },
        {"type": "turn_end", "turn": 3, "stop": "tool_use", "submission": "p-1"},
    ]


def encode_figures(repeat: int = 7) -> dict[str, float]:
    """In this process, us per event: the standard library's encoding (what eval --json
    and rpc did) against the typed path's, and building an event as a dict (what the
    runtime does) against building its Struct (and the dict handlers and frontends read)."""
    import msgspec

    from smith.protocol import EVENTS, dumps_event, encode_line

    sys.path.insert(0, str(REPO))
    from benchmarks._measure import best

    events = _sample_events() * 50
    fields = [(EVENTS[e["type"]], {k: v for k, v in e.items() if k != "type"}) for e in events]
    n = len(events)

    def per_event(fn: Any) -> float:
        return best(fn, repeat) / n * 1e6

    return {
        "json_eval_us": per_event(lambda: [json.dumps(e, ensure_ascii=False) for e in events]),
        "typed_eval_us": per_event(lambda: [dumps_event(e) for e in events]),
        "json_rpc_us": per_event(
            lambda: [
                json.dumps(e, ensure_ascii=False, separators=(",", ":"), default=str).encode()
                for e in events
            ]
        ),
        "typed_rpc_us": per_event(lambda: [encode_line(e) for e in events]),
        "dict_build_us": per_event(lambda: [{"type": "x", **f} for _, f in fields]),
        "struct_build_us": per_event(lambda: [cls(**f) for cls, f in fields]),
        "struct_as_dict_us": per_event(
            lambda: [msgspec.structs.asdict(cls(**f)) for cls, f in fields]
        ),
    }


def encode_line_text(f: dict[str, float]) -> str:
    return (
        f"event encoding   eval --json line {f['typed_eval_us']:.2f} us per event "
        f"(json.dumps {f['json_eval_us']:.2f} us, {f['json_eval_us'] / f['typed_eval_us']:.1f}x), "
        f"rpc line {f['typed_rpc_us']:.2f} us ({f['json_rpc_us'] / f['typed_rpc_us']:.1f}x); "
        f"an event built as a dict {f['dict_build_us']:.2f} us, as a Struct "
        f"{f['struct_build_us']:.2f} us ({f['struct_as_dict_us']:.2f} us with the dict "
        "handlers read)"
    )


def tui_figures(repeat: int = 1) -> dict[str, float]:
    """benchmarks/bench_tui.py's figures (the app's first frame and streaming frames at
    100,000 entries) for this tree and the baseline, each in a child process, best of
    `repeat`; `*_ratio`: the baseline's time over this tree's (above 1: faster)."""
    trees = _trees()
    out: dict[str, float] = {}
    for _ in range(repeat):
        for name, root in trees.items():
            run = subprocess.run(_tree_command(root, str(HERE), "--tui"), cwd=REPO,
                                 capture_output=True, text=True, check=False)  # fmt: skip
            if run.returncode:
                raise RuntimeError(f"bench_tui failed in {root}: {run.stderr[-1500:]}")
            for key, value in json.loads(run.stdout.splitlines()[-1]).items():
                out[f"{name}_{key}"] = min(out.get(f"{name}_{key}", value), value)
    for key in ("first_frame_ms", "frame_median_ms", "frame_p95_ms", "empty_frame_median_ms"):
        out[f"{key}_ratio"] = out[f"base_{key}"] / out[f"new_{key}"]
    return out


def tui_line(f: dict[str, float]) -> str:
    return (
        f"tui vs baseline  first frame at 100k entries {f['new_first_frame_ms']:,.0f} ms "
        f"(baseline {f['base_first_frame_ms']:,.0f} ms, {f['first_frame_ms_ratio']:.2f}x); "
        f"streaming into 100k entries median {f['new_frame_median_ms']:.1f} ms "
        f"(baseline {f['base_frame_median_ms']:.1f} ms, {f['frame_median_ms_ratio']:.2f}x), "
        f"p95 {f['new_frame_p95_ms']:.1f} ms ({f['base_frame_p95_ms']:.1f} ms)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        script, project, encode = sys.argv[2:5]
        print(json.dumps(_worker_runtime(script, project, encode == "1")))
    elif sys.argv[1:2] == ["--tui"]:
        sys.path.insert(0, str(REPO))
        from benchmarks import bench_tui

        print(json.dumps(bench_tui.figures()))
    elif sys.argv[1:2] == ["--with-tui"]:
        print(encode_line_text(encode_figures()))
        print(line(figures()))
        print(tui_line(tui_figures()))
    else:
        print(encode_line_text(encode_figures()))
        print(line(figures()))
