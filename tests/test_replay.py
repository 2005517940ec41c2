"""`smith replay`: recorded sessions played back as live events, timed, ranged, re-executed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.protocol import schema
from tests.conftest import Result, SmithEnv
from tests.test_protocol import _invalid

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is needed")

TOOL_TURN = [
    {
        "text": "Reading and writing.",
        "tool_calls": [
            {"name": "read", "arguments": {"path": "README.md"}},
            {"name": "write", "arguments": {"path": "notes.txt", "content": "noted\n"}},
        ],
    },
    {"text": "It is a demo project.", "usage": {"input": 10, "output": 5}},
]


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "README.md").write_text("# demo project\n")
    return project


def _script(senv: SmithEnv, name: str, responses: list[dict[str, Any]]) -> str:
    path = senv.root / f"{name}.json"
    path.write_text(json.dumps({"responses": responses}))
    return f"scripted:{path}"


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def new_session_id(err: str) -> str:
    """The id `smith eval` reports on stderr: 'smith: session NAME (ID)'."""
    line = next(x for x in err.splitlines() if x.startswith("smith: session "))
    return line.rsplit("(", 1)[1].rstrip(")")


def _canonical(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with ids renamed in order of appearance and consecutive deltas of one
    channel joined: what a live run and its replay must agree on."""
    names: dict[str, str] = {}

    def rename(value: object) -> object:
        if isinstance(value, str) and value not in names:
            names[value] = f"id{len(names)}"
        return names.get(value, value) if isinstance(value, str) else value

    out: list[dict[str, Any]] = []
    for event in events:
        ev = dict(event)
        ev.pop("duration_ms", None)  # a call's wall time: measured live, recorded for replay
        for key in ("message_id", "prompt_id", "entry_id", "submission"):
            if key in ev:
                ev[key] = rename(ev[key])
        last = out[-1] if out else None
        if (
            ev["type"] == "message_delta"
            and last is not None
            and last["type"] == "message_delta"
            and (last["message_id"], last["channel"]) == (ev["message_id"], ev["channel"])
        ):
            last["delta"] += ev["delta"]
            continue
        out.append(ev)
    return out


def test_replay_emits_the_events_of_the_live_run(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    # Calls that touch one file run one after the other, so the live order is fixed
    # (the records of concurrent calls interleave as their threads go).
    calls = [{"name": "write", "arguments": {"path": "notes.txt", "content": "noted\n"}},
             {"name": "read", "arguments": {"path": "notes.txt"}}]  # fmt: skip
    model = _script(senv, "s", [{**TOOL_TURN[0], "tool_calls": calls}, TOOL_TURN[1]])
    live = smith("eval", "--json", "--model", model, "what?", cwd=project)
    assert live.code == 0, live.err
    sid = new_session_id(live.err)
    replay = smith("replay", sid, "--json", "--instant", cwd=project)
    assert replay.code == 0, replay.err
    lines = _lines(replay.out)
    assert lines[0] == {"type": "replay_start", "session": lines[0]["session"], "turns": 1}
    assert lines[-1]["type"] == "replay_end"
    state = lines[-1]["state"]
    assert (state["turns"], state["rounds"], state["effects"]) == (1, 2, 2)
    assert state["unknown_effects"] == [] and lines[-1]["reexecute"] is None
    # session_start belongs to a live runtime (replay begins with replay_start instead).
    live_events = [
        e for e in _lines(live.out) if e["type"] not in ("result", "tool_update", "session_start")
    ]
    assert _canonical(lines[1:-1]) == _canonical(live_events)
    # Every record is an `entry` event where it was appended: the file history's
    # snapshots around the write among them; each event is one the protocol declares.
    kinds = [e["kind"] for e in lines if e["type"] == "entry"]
    assert kinds == [e["kind"] for e in _dump(smith, sid, project)]
    assert kinds.count("vcs") == 2 and kinds.count("effect_completion") == 2
    assert _invalid(lines, schema()) == []  # replay_start and replay_end too


def test_json_replay_is_byte_identical_across_runs(
    senv: SmithEnv, smith: Callable[..., Result], smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    live = smith("eval", "--model", _script(senv, "s", TOOL_TURN), "what is this?", cwd=project)
    assert live.code == 0, live.err
    sid = new_session_id(live.err)
    first = smith_process("replay", sid, "--json", "--instant", cwd=project)
    second = smith_process("replay", sid[:12], "--json", "--instant", cwd=project)
    assert first.code == 0, first.err
    assert first.out == second.out
    assert "It is a demo project." in first.out
    ids = {e.get("message_id") for e in _lines(first.out)} - {None}
    entries = {e["id"] for e in _dump(smith, sid, project)}
    assert ids and all(i.removeprefix("m-") in entries for i in ids)  # derived, not random


def test_a_calls_wall_time_live_and_in_replay(senv: SmithEnv, smith: Callable[..., Result]) -> None:
    """tool_end's duration_ms: measured around the call live, the time between its
    recorded intent and completion in replay (the same in every replay)."""
    project = _project(senv)
    live = smith("eval", "--json", "--model", _script(senv, "s", TOOL_TURN), "what?", cwd=project)
    assert live.code == 0, live.err
    ends = [e for e in _lines(live.out) if e["type"] == "tool_end"]
    assert len(ends) == 2 and all(e["duration_ms"] >= 0 for e in ends)
    sid = new_session_id(live.err)
    replay = smith("replay", sid, "--json", "--instant", cwd=project)
    recorded = {e["id"]: e for e in _dump(smith, sid, project)}
    replayed = [e for e in _lines(replay.out) if e["type"] == "tool_end"]
    started = {e["content"]["effect"]: e["ts"] for e in recorded.values()
               if e["kind"] == "effect_intent"}  # fmt: skip
    took = [float(e["ts"] - started[e["content"]["effect"]]) for e in recorded.values()
            if e["kind"] == "effect_completion"]  # fmt: skip
    assert sorted(e["duration_ms"] for e in replayed) == sorted(took)


def _dump(smith: Callable[..., Result], sid: str, project: Path) -> list[dict[str, Any]]:
    r = smith("sessions", "dump", sid, cwd=project)
    assert r.code == 0, r.err
    return [x for x in _lines(r.out) if "kind" in x]


# -- timing ---------------------------------------------------------------------------


class Recorder:
    """A clock that records sleeps (interleaved with what was emitted) instead of sleeping."""

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log

    def sleep(self, seconds: float) -> None:
        self.log.append(("sleep", round(seconds, 6)))


def _timed_session(senv: SmithEnv, project: Path) -> str:
    """A session whose records are seconds apart: prompt at 0 s, the tool call at 3 s,
    its effect from 3.1 to 5.1 s, its result at 5.2 s, the answer at 8 s."""
    from smith.session import SessionStore

    t0 = 1_700_000_000_000
    store = SessionStore(str(senv.data_home))
    with store.create(name="timed", cwd=str(project)) as s:
        s.append("message", {"role": "user", "content": [{"type": "text", "text": "go"}]}, ts=t0)
        call = {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"path": "."}}
        s.append(
            "message",
            {"role": "assistant", "content": [call], "stop": "tool_use", "usage": None},
            ts=t0 + 3000,
        )
        s.append(
            "effect_intent",
            {
                "effect": "fx-1",
                "kind": "tool",
                "name": "ls",
                "mutating": False,
                "cause": {"tool_call": "c1"},
                "generation": 0,
                "input": {"path": "."},
            },
            pair="fx-1",
            ts=t0 + 3100,
        )
        s.append(
            "effect_completion",
            {
                "effect": "fx-1",
                "outcome": "ok",
                "mutation": "not-applied",
                "output": {"ok": True, "text": "README.md", "details": {}},
            },
            pair="fx-1",
            ts=t0 + 5100,
        )
        s.append(
            "message",
            {
                "role": "tool_result",
                "tool_call_id": "c1",
                "tool_name": "ls",
                "content": [{"type": "text", "text": "README.md"}],
                "is_error": False,
                "outcome": "ok",
                "details": {},
            },
            pair="c1",
            ts=t0 + 5200,
        )
        answer = {
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "stop": "success",
            "usage": None,
        }
        s.append("message", answer, ts=t0 + 8000)
        return s.id


def test_speed_divides_the_recorded_gaps(
    senv: SmithEnv, smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(senv)
    sid = _timed_session(senv, project)
    log: list[tuple[str, Any]] = []
    monkeypatch.setattr("smith.frontends.replay.CLOCK", Recorder(log))
    monkeypatch.setattr(
        "smith.frontends.replay._text.Transcript.__call__",
        lambda self, item: log.append(("event", item["type"])),
    )
    r = smith("replay", sid, "--speed", "10", cwd=project)
    assert r.code == 0, r.err
    sleeps = [s for kind, s in log if kind == "sleep"]
    assert sum(sleeps) == pytest.approx(0.8)  # 8 s recorded, 10 times faster
    assert sleeps == pytest.approx([0.3, 0.01, 0.2, 0.01, 0.28])
    # Each pause comes before what was recorded after it, in source order; each record
    # is an `entry` event at its recorded time, as it was live.
    assert log == [
        ("event", "agent_start"),
        ("event", "entry"),
        ("event", "message_start"),
        ("event", "message_delta"),
        ("event", "message_end"),
        ("event", "turn_start"),
        ("event", "message_start"),
        ("sleep", 0.3),
        ("event", "entry"),
        ("event", "message_end"),
        ("event", "tool_start"),
        ("sleep", 0.01),
        ("event", "entry"),  # the effect's intent
        ("sleep", 0.2),
        ("event", "entry"),  # its completion
        ("event", "tool_end"),
        ("sleep", 0.01),
        ("event", "entry"),  # the tool result
        ("event", "turn_end"),
        ("event", "turn_start"),
        ("event", "message_start"),
        ("sleep", 0.28),
        ("event", "message_delta"),
        ("event", "entry"),
        ("event", "message_end"),
        ("event", "turn_end"),
        ("event", "agent_end"),
        ("event", "settled"),
    ]


def test_instant_never_sleeps_and_long_pauses_are_capped(
    senv: SmithEnv, smith: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(senv)
    sid = _timed_session(senv, project)
    log: list[tuple[str, Any]] = []
    monkeypatch.setattr("smith.frontends.replay.CLOCK", Recorder(log))
    assert smith("replay", sid, "--instant", "--json", cwd=project).code == 0
    assert log == []
    assert smith("replay", sid, "--json", "--max-gap", "1", cwd=project).code == 0
    assert [s for _, s in log] == [1.0, 0.1, 1.0, 0.1, 1.0]  # real time, at most 1 s


# -- turn ranges ---------------------------------------------------------------------


def _three_prompts(senv: SmithEnv, smith: Callable[..., Result], project: Path) -> str:
    for n in (1, 2, 3):
        model = _script(senv, f"s{n}", [{"text": f"answer {n}"}])
        r = smith("eval", "--session", "three", "--model", model, f"prompt {n}", cwd=project)
        assert r.code == 0, r.err
    return "three"


@pytest.mark.parametrize(
    ("turns", "expected"),
    [("2", [2]), ("2..3", [2, 3]), ("2..", [2, 3]), ("..2", [1, 2]), ("1..1", [1])],
)
def test_a_turn_range_replays_only_those_prompts(
    senv: SmithEnv, smith: Callable[..., Result], turns: str, expected: list[int]
) -> None:
    project = _project(senv)
    name = _three_prompts(senv, smith, project)
    r = smith("replay", name, "--json", "--instant", "--turns", turns, cwd=project)
    assert r.code == 0, r.err
    events = _lines(r.out)
    prompts = [
        e["delta"] for e in events if e["type"] == "message_delta" and e["message_id"][:2] != "m-"
    ]
    answers = [
        e["delta"] for e in events if e["type"] == "message_delta" and e["message_id"][:2] == "m-"
    ]
    assert prompts == [f"prompt {n}" for n in expected]
    assert answers == [f"answer {n}" for n in expected]
    assert [e["type"] for e in events].count("agent_start") == len(expected)
    assert events[-1]["state"]["turns"] == 3  # the state is that of the whole session


def test_the_human_transcript_numbers_the_turns_of_the_range(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    name = _three_prompts(senv, smith, project)
    r = smith("replay", name, "--instant", "--turns", "3", cwd=project)
    assert r.code == 0, r.err
    assert r.out.startswith("── turn 3 ")
    assert "> prompt 3\nanswer 3\n" in r.out and "prompt 2" not in r.out
    # Before the prompt, the environment the model was told (each run had its own
    # script: another model, so a block of its own).
    told = r.out.split("\n", 1)[1]
    assert told.startswith("[the model was told its environment]\n  Working directory: ")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--turns", "0"], "'0' is not a range of turns"),
        (["--turns", "3..2"], "'3..2' is not a range of turns"),
        (["--turns", "x.."], "'x..' is not a range of turns"),
        (["--turns", "4.."], "asks for turns the session does not have: it has 3"),
        (["--speed", "0"], "--speed 0 is not a positive number"),
        (["--speed", "fast"], "--speed fast is not a positive number"),
        (["--max-gap", "-1"], "--max-gap -1 is not a positive number of seconds"),
    ],
)
def test_bad_flags_are_usage_errors_with_a_diagnostic(
    senv: SmithEnv, smith: Callable[..., Result], args: list[str], says: str
) -> None:
    project = _project(senv)
    name = _three_prompts(senv, smith, project)
    r = smith("replay", name, *args, "--json", cwd=project)
    assert r.code == 2, r.err
    assert says in r.err and r.out == ""


def test_an_unknown_session_gets_a_did_you_mean(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    _three_prompts(senv, smith, project)
    r = smith("replay", "thre", cwd=project)
    assert r.code == 2
    assert "there is no session 'thre' to replay" in r.err
    assert "did you mean 'three'?" in r.err


# -- re-execution and unknown effects ------------------------------------------------------


def test_reexecute_reports_a_divergence_when_a_file_changed(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    write = [
        {
            "text": "Writing.",
            "tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "one\n"}}],
        },
        {"text": "ok"},
    ]
    read = [
        {"text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "it says two"},
    ]
    model = _script(senv, "w", write)
    assert smith("eval", "--session", "div", "--model", model, "write", cwd=project).code == 0
    (project / "a.txt").write_text("two\n")  # changed outside smith, after the snapshot
    model = _script(senv, "r", read)
    assert smith("eval", "--session", "div", "--model", model, "read", cwd=project).code == 0
    r = smith("replay", "div", "--json", "--instant", "--reexecute", cwd=project)
    assert r.code == 1, r.err  # a divergence
    reports = [e for e in _lines(r.out) if e["type"] == "reexecute"]
    assert [(x["tool"], x["status"]) for x in reports] == [("write", "same"), ("read", "diverged")]
    diverged = reports[1]
    assert diverged["tool_call_id"] == "call_0_0" and diverged["effect"].startswith("fx-")
    assert "text" in diverged["differs"]
    assert diverged["expected"]["text"] == "two\n" and diverged["actual"]["text"] == "one\n"
    assert _lines(r.out)[-1]["reexecute"] == {"same": 1, "diverged": 1, "unknown": 0, "skipped": 0}
    assert (project / "a.txt").read_text() == "two\n"  # the project itself is untouched
    human = smith("replay", "div", "--instant", "--reexecute", "--turns", "2", cwd=project)
    assert human.code == 1
    assert "≠ read (" in human.out and "re-run, diverged:" in human.out
    assert 'text: expected "two\\n"' in human.out and 'actual   "one\\n"' in human.out


def test_unknown_effects_are_shown_and_never_rerun(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    from smith.effects import EffectJournal
    from smith.session import SessionStore

    project = _project(senv)
    marker = senv.root / "ran-again"
    command = f"touch {marker}"
    store = SessionStore(str(senv.data_home))
    with store.create(name="crashed", cwd=str(project)) as s:
        s.append("message", {"role": "user", "content": [{"type": "text", "text": "touch it"}]})
        call = {"type": "tool_call", "id": "c1", "name": "bash", "arguments": {"command": command}}
        s.append(
            "message", {"role": "assistant", "content": [call], "stop": "tool_use", "usage": None}
        )
        # The process died while the command ran: an intent, no completion, no result.
        fx = EffectJournal(s).begin("bash", {"command": command}, cause={"tool_call": "c1"})
        path = s.path
    size = Path(path).stat().st_size
    r = smith("replay", "crashed", "--json", "--instant", "--reexecute", cwd=project)
    assert r.code == 0, r.err
    events = _lines(r.out)
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["tool_call_id"] == "c1" and end["outcome"] == "unknown" and end["is_error"]
    assert end["result"]["mutation"] == "unknown"
    report = next(e for e in events if e["type"] == "reexecute")
    assert (report["effect"], report["status"]) == (fx.id, "unknown")
    assert "no completion was recorded" in report["reason"]
    assert events[-1]["state"]["unknown_effects"] == [fx.id]
    assert next(e for e in events if e["type"] == "agent_end")["stop"] == "unknown"
    assert not marker.exists()  # never re-run
    assert Path(path).stat().st_size == size  # replay only reads: nothing reconciled
    human = smith("replay", "crashed", "--instant", "--reexecute", cwd=project)
    assert "? bash: outcome unknown" in human.out
    assert f"? bash ({fx.id}): not re-run (unknown)" in human.out
    assert not marker.exists()


def test_prompts_rounds_and_stops_are_read_from_the_records() -> None:
    from smith.frontends.replay._timeline import reconstruct
    from smith.session import Session

    def text(t: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": t}]

    calls = [{"type": "tool_call", "id": c, "name": "nope", "arguments": {}} for c in ("c1", "c2")]
    rows: list[tuple[str, int, dict[str, Any], str | None]] = [
        ("u1", 0, {"role": "user", "content": text("go")}, None),
        ("a1", 5, {"role": "assistant", "content": calls, "stop": "tool_use"}, None),
        (
            "r1",
            10,
            {
                "role": "tool_result",
                "tool_call_id": "c1",
                "content": text("no tool"),
                "is_error": True,
                "outcome": "error",
                "details": {},
            },
            "c1",
        ),
        (
            "r2",
            20,
            {
                "role": "tool_result",
                "tool_call_id": "c2",
                "content": text("no tool"),
                "is_error": True,
                "outcome": "error",
                "details": {},
            },
            "c2",
        ),
        ("q1", 21, {"role": "user", "content": text("also this"), "queued": "steer"}, None),
        ("a2", 30, {"role": "assistant", "content": text("ok"), "stop": "success"}, None),
        ("u2", 40, {"role": "user", "content": text("next")}, None),
        ("a3", 50, {"role": "assistant", "content": [], "stop": "error", "error": "boom"}, None),
    ]
    parent = None
    entries = []
    for eid, ts, content, pair in rows:
        entries.append(
            {
                "id": eid,
                "parent": parent,
                "ts": ts,
                "kind": "message",
                "content": content,
                "pair": pair,
            }
        )
        parent = eid
    timeline = reconstruct(Session.from_entries(entries))
    events = [(i.ts, i.event) for i in timeline.items if i.event is not None]
    types = [e["type"] for _, e in events]
    assert types.count("agent_start") == 2  # the steer is delivered within the first prompt
    assert [(ts, e["turn"]) for ts, e in events if e["type"] == "turn_end"] == [
        (20, 1),  # once the last call has its result
        (30, 2),
        (50, 1),
    ]
    ends = [e for _, e in events if e["type"] == "agent_end"]
    assert [(e["prompt_id"], e["stop"]) for e in ends] == [("p-u1", "end"), ("p-u2", "error")]
    assert ends[1]["error"] == "boom"
    tool_ends = [
        (ts, e["tool_call_id"], e["outcome"]) for ts, e in events if e["type"] == "tool_end"
    ]
    # No effect ran for either: both ended as the batch began, before their results
    # were recorded (the first at 10), each result an `entry` event after them.
    assert tool_ends == [(10, "c1", "error"), (10, "c2", "error")]
    after = [(e["type"], e.get("id")) for _, e in events][types.index("tool_end") :][:5]
    assert after == [("tool_end", None), ("tool_end", None), ("entry", "r1"), ("entry", "r2"),
                     ("turn_end", None)]  # fmt: skip
    assert timeline.state["turns"] == 2 and timeline.state["rounds"] == 3


@needs_bwrap
def test_reexecute_runs_a_shell_command_in_the_sandbox_on_a_copy_where_the_project_is(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    """The probe: commands that spell the project's path so no text substitution finds
    it (`//`, `$(printf ...)`) appended to real project files when re-run. In the
    sandbox the scratch copy is mounted where the project is, so every spelling reaches
    the copy: the re-run does what the live run did, and the project is untouched. A
    provider key is withheld as in a live run (the re-run's output matches)."""
    project = _project(senv)
    doubled = str(project).replace("/", "//")
    printf = "$(printf '%s' " + repr(str(project)) + ")"
    commands = [f"echo again >> {doubled}/notes.txt", f"echo again >> {printf}/notes.txt",
                f"cat {project}/notes.txt; echo key=${{ANTHROPIC_API_KEY:-none}}"]  # fmt: skip
    model = _script(
        senv,
        "sh",
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": c}} for c in commands]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "w.txt", "content": "w"}}]},
            {"text": "ok"},
        ],
    )
    env = {"ANTHROPIC_API_KEY": "sk-ant-replay-never-sees-it"}
    r = smith("eval", "--session", "sh", "--model", model, "go", cwd=project, env=env)
    assert r.code == 0, r.err
    (project / "notes.txt").write_text("the user's own text\n")
    r = smith("replay", "sh", "--json", "--instant", "--reexecute", cwd=project, env=env)
    assert (project / "notes.txt").read_text() == "the user's own text\n"  # never touched
    assert r.code == 0, r.err + r.out
    reports = [e for e in _lines(r.out) if e["type"] == "reexecute"]
    assert [(x["tool"], x["status"]) for x in reports] == [
        ("bash", "same"),
        ("bash", "same"),
        ("bash", "same"),  # the copy's notes, appended to twice; and no key
        ("write", "same"),
    ]
    assert "sk-ant-replay" not in r.out


def test_reexecute_refuses_a_shell_command_where_the_sandbox_is_off(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = _project(senv)
    doubled = str(project).replace("/", "//")
    model = _script(
        senv,
        "sh",
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo x >> {doubled}/n"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "w.txt", "content": "w"}}]},
            {"text": "ok"},
        ],
    )
    assert smith("eval", "--session", "sh", "--model", model, "go", cwd=project).code == 0
    (project / "n").write_text("the user's own text\n")
    r = smith("replay", "sh", "--json", "--instant", "--reexecute", cwd=project,
              env={"SMITH_SANDBOX_MODE": "off"})  # fmt: skip
    assert (project / "n").read_text() == "the user's own text\n"  # never touched
    assert r.code == 0, r.err
    reports = [e for e in _lines(r.out) if e["type"] == "reexecute"]
    assert [(x["tool"], x["status"]) for x in reports] == [("bash", "skipped"), ("write", "same")]
    assert reports[0]["code"] == "replay.unconfined-tool"
    assert "only the sandbox confines bash" in reports[0]["reason"]
    assert "here the sandbox is off" in reports[0]["reason"]
    assert r.err.count("warning: bash effects are not re-executed") == 1
    assert "  why: " in r.err and "  fix: " in r.err
    assert "Traceback" not in r.err
