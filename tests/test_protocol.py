"""The typed protocol (smith.protocol, issue 28): one declaration per event and operation,
the JSON Schema `smith rpc --schema` prints from them, and a scripted tool-using session
whose every event (eval --json and RPC) validates against it and names its submission."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from smith.protocol import EVENTS, HOOK_EVENTS, OPERATIONS, VERSION, schema
from smith.runtime import EVENT_TYPES
from smith.runtime.ops import ALIASES, APPLY
from smith.runtime.ops import OPERATIONS as APPLIED
from tests.conftest import Result, SmithEnv, smith_executable
from tests.rpc_kit import Rpc, script

HOOKS = {"input", "tool_call", "tool_result"}
TOOL_SESSION = [
    {"text": "Looking.", "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]},
    # A command that prints (tool_update, from its thread) and a file written (effect and
    # file-history entries, appended from tools' threads): their events name the prompt.
    {"text": "Noting.", "tool_calls": [
        {"id": "c2", "name": "bash", "arguments": {"command": "echo seen; sleep 0.7; echo done"}},
        {"id": "c3", "name": "write", "arguments": {"path": "notes.txt", "content": "x\n"}},
    ]},
    {"text": "There is a README.md.", "usage": {"input": 10, "output": 5}},
]  # fmt: skip


def _validator(name: str, doc: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": doc["$defs"]})


def _invalid(events: list[dict[str, Any]], doc: dict[str, Any]) -> list[str]:
    check = _validator("Event", doc)
    mapping = doc["$defs"]["Event"]["discriminator"]["mapping"]
    bad = []
    for ev in events:
        if not check.is_valid(ev):  # say why against its own kind's declaration
            own = jsonschema.Draft202012Validator({"$ref": mapping.get(ev["type"], "#/$defs/Event"),
                                                   "$defs": doc["$defs"]})  # fmt: skip
            found = jsonschema.exceptions.best_match(own.iter_errors(ev))
            bad.append(f"{ev['type']}: {found.message if found else '?'}")
    return bad


def test_every_event_type_and_operation_is_declared_once() -> None:
    emitted = set(EVENT_TYPES) - HOOKS
    # and eval's own last line, replay's first and last
    assert set(EVENTS) == emitted | {"result", "replay_start", "replay_end"}
    assert set(HOOK_EVENTS) == HOOKS
    # The runtime runs the declarations themselves: one class per operation, each with
    # what it does (smith.runtime.ops.APPLY), an older field spelling only as an alias.
    assert OPERATIONS == APPLIED and set(APPLY) == set(OPERATIONS.values())
    for name, aliases in ALIASES.items():
        assert set(aliases.values()) <= set(OPERATIONS[name].__struct_fields__), name


def test_the_schema_is_one_draft_2020_12_document_with_event_and_operation() -> None:
    doc = schema()
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["version"] == VERSION
    defs = doc["$defs"]
    assert len(defs["Event"]["anyOf"]) == len(EVENTS)
    assert len(defs["Operation"]["anyOf"]) == len(OPERATIONS)
    op = _validator("Operation", doc)
    assert op.is_valid({"op": "prompt", "text": "hi"}) and op.is_valid({"op": "abort"})
    # What the runtime takes as data, the schema takes: an older spelling; a count >= 0.
    assert op.is_valid({"op": "restore", "entry": "a1b2"})
    assert op.is_valid({"op": "restore", "target": "a1b2"})
    assert not op.is_valid({"op": "restore"})
    assert not op.is_valid({"op": "list_files", "limit": -1})
    assert not op.is_valid({"op": "prompt"}) and not op.is_valid({"op": "prompt", "txt": "x"})
    assert not _validator("Event", doc).is_valid({"type": "settled", "queue": 0, "extra": 1})


def test_smith_rpc_schema_prints_the_document() -> None:
    r = subprocess.run([smith_executable(), "rpc", "--schema"], capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(schema()))


def test_eval_json_events_validate_and_carry_the_prompts_id(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    (project / "README.md").write_text("# demo\n")
    r = smith("eval", "--json", "--model", script(senv, TOOL_SESSION), "what is here?", cwd=project)
    assert r.code == 0, r.err
    events = [json.loads(line) for line in r.out.splitlines() if line.strip()]
    assert {"tool_start", "tool_update", "tool_end", "entry", "agent_end", "result"} <= {
        e["type"] for e in events
    }
    assert {"effect_intent", "effect_completion", "vcs"} <= {
        e["kind"] for e in events if e["type"] == "entry"
    }
    assert _invalid(events, schema()) == []
    prompt = next(e for e in events if e["type"] == "agent_start")["prompt_id"]
    run = [e for e in events if e["type"] not in ("settled", "result")]
    assert {e.get("submission") for e in run} == {prompt}


def test_rpc_notifications_validate_and_carry_the_id_the_prompt_was_answered_with(
    senv: SmithEnv,
) -> None:
    project: Path = senv.make_project()
    (project / "README.md").write_text("# demo\n")
    rpc = Rpc(senv, project, "--model", script(senv, TOOL_SESSION))
    try:
        accepted = rpc.call("prompt", {"text": "what is here?"})
        assert accepted["status"] == "started"
        assert rpc.call("wait_idle")["busy"] is False
        state = rpc.call("get_state")
        assert state["protocol"] == VERSION
        events = rpc.events
        assert _invalid(events, schema()) == []
        assert [e["type"] for e in events][-1] == "settled"
        assert all(e["submission"] == accepted["id"] for e in events[:-1])
        assert "tool_end" in [e["type"] for e in events]
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_docs_events_md_is_generated_from_the_declarations() -> None:
    from smith.protocol._docs import with_tables

    doc = (Path(__file__).resolve().parents[1] / "docs" / "events.md").read_text()
    assert with_tables(doc) == doc, "docs/events.md drifted: run `python -m smith.protocol`"
    for tag, cls in EVENTS.items():  # and each row names every field its kind declares
        text = getattr(cls, "fields_doc", None)
        if text is not None:
            missing = [
                f for f in cls.__struct_fields__ if f != "submission" and f"`{f}`" not in text
            ]
            assert missing == [], f"{tag}: {missing} declared but not in its docs row"


def test_a_queued_prompts_events_carry_the_id_it_was_given_when_queued(senv: SmithEnv) -> None:
    project: Path = senv.make_project()
    words = " ".join(f"w{i}" for i in range(40))
    model = script(senv, [{"text": words, "delay_ms": 30}, {"text": "the second answer"}])
    rpc = Rpc(senv, project, "--model", model)
    try:
        first = rpc.call("prompt", {"text": "talk slowly"})
        rpc.event("message_start", role="assistant")  # busy from here
        queued = rpc.call("prompt", {"text": "and then this"})  # a follow-up
        assert first["status"] == "started" and queued["status"] == "queued"
        assert first["id"] != queued["id"]
        assert rpc.call("wait_idle")["busy"] is False
        events = rpc.events
        assert _invalid(events, schema()) == []
        # Delivered when the agent would have stopped: from its message on (the entry
        # recording it, then its message_start), the run works on it, and its events
        # carry the id it was given when queued.
        mine = next(i for i, e in enumerate(events) if e.get("submission") == queued["id"])
        assert events[mine]["type"] == "entry" and events[mine]["kind"] == "message"
        assert events[mine + 1]["type"] == "message_start"
        before, after = events[:mine], events[mine:-1]
        assert {e.get("submission") for e in before} <= {first["id"], None}
        assert all(e["type"] == "queue_changed" for e in before if "submission" not in e)
        assert {e["submission"] for e in after} == {queued["id"]}
        end = after[-1]
        assert end["type"] == "agent_end" and end["prompt_id"] == first["id"]
        assert end["submissions"] == [first["id"], queued["id"]]
        assert events[-1]["type"] == "settled"
    finally:
        code, err = rpc.close()
    assert code == 0, err


def test_docs_rpc_md_tables_are_generated_and_name_the_servers_methods() -> None:
    from smith.frontends.rpc._methods import METHODS as SERVED
    from smith.protocol._docs import with_method_tables
    from smith.protocol._rpc import METHODS as DECLARED

    doc = (Path(__file__).resolve().parents[1] / "docs" / "rpc.md").read_text()
    assert with_method_tables(doc) == doc, "docs/rpc.md drifted: run `python -m smith.protocol`"
    kinds = {"string": str, "boolean": bool, "integer": int, "array": list}
    declared = {
        m.name: [(n, getattr(t, "__origin__", t), r) for n, t, r in m.params] for m in DECLARED
    }
    served = {
        m.name: [(p.name, kinds[p.type], p.required) for p in m.params] for m in SERVED.values()
    }
    assert declared == served
    request = _validator("Request", schema())
    assert request.is_valid(
        {"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"text": "x"}}
    )
    assert request.is_valid({"jsonrpc": "2.0", "id": 2, "method": "get_state"})
    assert not request.is_valid({"jsonrpc": "2.0", "id": 3, "method": "prompt", "params": {}})
    assert not request.is_valid({"jsonrpc": "2.0", "id": 4, "method": "no.such"})


def test_plugin_actions_are_declared_once_below_the_sdk_and_in_the_schema() -> None:
    import msgspec

    import smith.sdk
    from smith.protocol import actions

    # The SDK hands plugins the protocol's own classes: one declaration each.
    for cls in (*actions.ACTION_TYPES, *{c for cs in actions.HOOK_ACTIONS.values() for c in cs}):
        assert getattr(smith.sdk, cls.__name__) is cls
    defs = schema()["$defs"]
    assert len(defs["Action"]["anyOf"]) == len(actions.ACTION_TYPES)
    hook_kinds = {c for cs in actions.HOOK_ACTIONS.values() for c in cs}
    assert len(defs["HookAction"]["anyOf"]) == len(hook_kinds)
    action, hook = _validator("Action", {"$defs": defs}), _validator("HookAction", {"$defs": defs})
    for value in (actions.SetModel("demo"), actions.Enqueue("steer", "and the docs")):
        assert action.is_valid(msgspec.to_builtins(value)), value
    deny = msgspec.to_builtins(actions.DenyCall("not on main", interrupt=True))
    assert deny == {"action": "deny_call", "reason": "not on main", "interrupt": True}
    assert hook.is_valid(deny) and not hook.is_valid({"action": "deny_call"})
    assert not action.is_valid({"action": "set_model", "model": "demo", "extra": 1})
    # An operation and an action may share a name; each keeps its own definition.
    assert defs["SetModel"]["properties"]["op"] == {"enum": ["set_model"]}
    assert defs["SetModelAction"]["properties"]["action"] == {"enum": ["set_model"]}
