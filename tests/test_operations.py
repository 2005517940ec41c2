"""The runtime's operations are typed, one declaration each (smith.runtime.ops): built
from data with a diagnostic for what is malformed, and submitted the same way typed or
as data; frontends read the one status view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from smith.diagnostics import SmithError
from smith.runtime import OPERATIONS, Runtime, ops, parse_op
from smith.sdk import resolve_plugins
from tests.runtime_kit import Fake, World, say

SAMPLES: dict[str, dict[str, Any]] = {
    "prompt": {"text": "hi"},
    "steer": {"text": "also this"},
    "follow_up": {"text": "then that"},
    "shell": {"command": "git status", "context": False},
    "abort": {},
    "compact": {"focus": "the parser"},
    "set_model": {"model": "demo"},
    "set_thinking": {"level": "high"},
    "set_mode": {"mode": "plan"},
    "queue_remove": {"id": "q-1"},
    "queue_clear": {},
    "undo": {"force": True},
    "redo": {},
    "restore": {"target": "a1b2", "conversation": True},
    "diff": {"a": "a1b2"},
    "history": {},
    "context": {"upcoming": False},
    "list_files": {"limit": 10},
    "plugins": {},
    "session_info": {},
    "entries": {"since": "a1b2", "kinds": ("message", "shell")},
    "tree": {},
    "select": {"leaf": "a1b2"},
    "fork": {"at": "a1b2", "name": "try again"},
}


def test_every_operation_is_declared_once_and_round_trips_as_data() -> None:
    assert sorted(OPERATIONS) == sorted(SAMPLES) and tuple(OPERATIONS) == Runtime.OPS
    for name, fields in SAMPLES.items():
        op = parse_op({"op": name, **fields})
        assert type(op) is OPERATIONS[name] and op.op == name
        assert parse_op(op.to_dict()) == op
        assert all(getattr(op, k) == v for k, v in fields.items())
        for field in fields:  # immutable, every field
            with pytest.raises(AttributeError, match="immutable"):
                setattr(op, field, "x")


@pytest.mark.parametrize(
    ("data", "code", "says"),
    [
        ({"op": "launch"}, "runtime.unknown-op", "prompt, steer, follow_up"),
        ({"text": "no op"}, "runtime.no-op", "not an object with an 'op' string"),
        ("prompt", "runtime.no-op", "not an object with an 'op' string"),
        (None, "runtime.no-op", "not an object with an 'op' string"),
        ({"op": "prompt"}, "runtime.bad-op", "text is missing"),
        ({"op": "prompt", "text": 3}, "runtime.bad-op", "text is int, not a string"),
        ({"op": "undo", "force": "yes"}, "runtime.bad-op", "force is str, not true or false"),
        ({"op": "abort", "now": True}, "runtime.bad-op", "now is not one of its fields"),
        ({"op": "restore"}, "runtime.bad-op", "target is missing"),
        ({"op": "list_files", "limit": True}, "runtime.bad-op", "bool, not a whole number"),
        ({"op": "list_files", "limit": "9"}, "runtime.bad-op", "str, not a whole number"),
        ({"op": "entries", "kinds": "message"}, "runtime.bad-op", "str, not a list of strings"),
        ({"op": "entries", "kinds": [1]}, "runtime.bad-op", "list, not a list of strings"),
        ({"op": "select"}, "runtime.bad-op", "leaf is missing"),
    ],
)
def test_malformed_operations_are_refused_naming_what_is_wrong(
    data: dict[str, Any], code: str, says: str
) -> None:
    with pytest.raises(SmithError) as refused:
        parse_op(data, "rpc")
    d = refused.value.diagnostic
    assert d.code == code and says in d.render(), d.render()
    assert d.source is not None and d.source.surface == "rpc"


def test_a_blank_input_and_an_unknown_entry_are_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    w = World(tmp_path)
    rt = w.runtime(Fake(say("hi")), surface="rpc")
    for op in ({"op": "prompt", "text": "  "}, ops.Steer(""), ops.FollowUp("\n")):
        with pytest.raises(SmithError) as refused:
            rt.submit(op)
        d = refused.value.diagnostic
        assert d.code == "runtime.empty-input" and d.source is not None
        assert d.source.surface == "rpc" and d.source.location.endswith(".text"), d
    for op, where in ((ops.Select("nope"), "select.leaf"), (ops.Fork(at="nope"), "fork.at"),
                      (ops.Entries(leaf="nope"), "entries.leaf")):  # fmt: skip
        with pytest.raises(SmithError) as refused:
            rt.submit(op)
        d = refused.value.diagnostic
        assert d.code == "session.unknown-entry" and d.source is not None, d
        assert (d.source.surface, d.source.location) == ("rpc", where) and "nope" in d.render()
    assert rt.submit(ops.Entries()).entries == []  # type: ignore[attr-defined]


def test_restore_takes_its_older_field_name() -> None:
    assert parse_op({"op": "restore", "entry": "a1b2"}) == ops.Restore("a1b2")


def test_typed_and_data_operations_do_the_same(tmp_path: Path) -> None:
    typed, data = World(tmp_path / "typed"), World(tmp_path / "data")

    async def run(world: World, submit: Any) -> Runtime:
        rt = world.runtime(Fake(say("one"), say("two")))
        assert rt.submit(submit("prompt", "first")).startswith("p-")
        await rt.wait_idle()
        rt.submit(submit("set_thinking", "high"))
        assert rt.submit(submit("prompt", "second")).startswith("p-")
        await rt.wait_idle()
        await rt.close()
        return rt

    def as_type(name: str, value: str) -> ops.Operation:
        return ops.Prompt(value) if name == "prompt" else ops.SetThinking(value)

    def as_data(name: str, value: str) -> dict[str, str]:
        return {"op": name, "text" if name == "prompt" else "level": value}

    one = asyncio.run(run(typed, as_type))
    two = asyncio.run(run(data, as_data))
    shape = [(e.kind, e.content.get("role")) for e in typed.session.entries()]  # type: ignore[union-attr]
    assert shape == [(e.kind, e.content.get("role")) for e in data.session.entries()]  # type: ignore[union-attr]
    assert one.thinking == two.thinking == "high"


def test_the_status_view_holds_what_frontends_show(tmp_path: Path) -> None:
    world = World(tmp_path)

    async def main() -> dict[str, Any]:
        rt = world.runtime(Fake(say("hello there")))
        before = rt.status()
        assert before["context"]["decoded"] is False and before["damage"] is None
        rt.submit(ops.Prompt("hi"))
        await rt.wait_idle()
        after = rt.status()
        await rt.close()
        return after

    status = asyncio.run(main())
    assert {"busy", "model", "thinking", "queue", "cost", "damage", "context", "memory"} <= set(
        status
    )
    assert status["context"]["tokens"] > 0 and status["context"]["decoded"] is True
    assert status["busy"] is False and status["queue"] == [] and status["memory"] is None
    # What frontends once read from the runtime's internals is in the view too.
    assert status["cwd"] == str(world.project)
    assert status["images"] == {"accepted": False, "max_bytes": 5 * 1024 * 1024}
    assert status["plugins"] == [p.name for p in resolve_plugins().active]


def test_the_project_files_and_the_plugin_list_are_operations(tmp_path: Path) -> None:
    world = World(tmp_path)
    (world.project / "a.py").write_text("")
    (world.project / "b.py").write_text("")

    async def main() -> tuple[object, object, object]:
        rt = world.runtime(Fake())
        listed = rt.submit(ops.ListFiles())
        cut = rt.submit({"op": "list_files", "limit": 1})
        plugins = rt.submit({"op": "plugins"})
        await rt.close()
        return listed, cut, plugins

    listed, cut, plugins = asyncio.run(main())
    assert isinstance(listed, dict) and {"a.py", "b.py"} <= set(listed["files"])
    assert listed["cut"] is False
    assert isinstance(cut, dict) and cut["cut"] is True and len(cut["files"]) == 1
    # The static list, but for the lifecycle of a plugin that starts (mcp), which the
    # runtime has started.
    expected = resolve_plugins().to_dict()
    for listed_plugins in (plugins, expected):
        for p in listed_plugins["plugins"]:  # type: ignore[index]
            if p["name"] == "mcp":
                p.pop("status")
                p.pop("diagnostic", None)
    assert plugins == expected


def test_file_history_operations_say_when_history_is_off(tmp_path: Path) -> None:
    world = World(tmp_path)

    async def main() -> None:
        rt = world.runtime(Fake())
        for op in (ops.Undo(), ops.Diff(), ops.History()):
            with pytest.raises(SmithError) as off:
                rt.submit(op)
            assert off.value.diagnostic.code == "history.off", off.value.diagnostic.code
        await rt.close()

    asyncio.run(main())


def test_a_count_below_zero_is_refused_naming_the_field() -> None:
    with pytest.raises(SmithError) as caught:
        parse_op({"op": "list_files", "limit": -1})
    assert caught.value.diagnostic.code == "runtime.bad-op"
    assert "limit" in caught.value.diagnostic.what and "below 0" in caught.value.diagnostic.what
    assert parse_op({"op": "list_files", "limit": 0}) == ops.ListFiles(0)


@pytest.mark.parametrize(
    ("op", "says"),
    [
        (ops.Prompt(5), "prompt.text"),  # type: ignore[arg-type]
        (ops.Select(None), "select.leaf"),  # type: ignore[arg-type]
        (ops.Fork(at=123), "fork.at"),  # type: ignore[arg-type]
        (ops.Shell(command=None), "shell.command"),  # type: ignore[arg-type]
        (ops.ListFiles(limit=-5), "list_files.limit"),
        (ops.SetThinking(level=None), "set_thinking.level"),  # type: ignore[arg-type]
    ],
)
def test_a_typed_operation_is_checked_as_its_data_is(
    tmp_path: Path, op: ops.Operation, says: str
) -> None:
    """msgspec checks a Struct decoded from data, not one built in Python: submit checks
    a typed operation as parse_op checks its data, with the same diagnostic."""
    rt = World(tmp_path).runtime(Fake(say("hi")))
    with pytest.raises(SmithError) as refused:
        rt.submit(op)
    d = refused.value.diagnostic
    assert d.code == "runtime.bad-op" and d.source is not None
    assert d.source.location == says, d.render()
