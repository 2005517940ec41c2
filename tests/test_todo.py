"""The todo tool (plugins/plan.py) as a model may misuse it: several calls in one
response, an index given as 1.0, content with newlines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import Result, SmithEnv
from tests.rpc_kit import script
from tests.test_plan import TODOS, _events, _todo, _todo_events

Smith = Callable[..., Result]


def _calls(*arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "todo", "arguments": a} for a in arguments]}


def test_todo_calls_of_one_response_apply_in_order_each_from_the_last(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    three = [*TODOS, {"content": "ship it", "status": "pending"}]
    updates = [{"update": {"index": n, "status": "completed"}} for n in (1, 2, 3)]
    model = script(senv, [_calls({"todos": three}, *updates), _todo(update={"index": 1,
                   "status": "in_progress"}), {"text": "ok"}])  # fmt: skip
    r = smith("eval", "--json", "--session", "w", "--model", model, "go", cwd=project)
    assert r.code == 0, r.err
    lists = _todo_events(_events(r.out))
    assert len(lists) == 5
    assert [i["status"] for i in lists[3]] == ["completed"] * 3  # every update kept
    # The next response starts from the list the last call of the batch left.
    assert [i["status"] for i in lists[4]] == ["in_progress", "completed", "completed"]


def test_an_index_of_1_0_is_item_1_and_a_fraction_a_tool_error(
    senv: SmithEnv, smith: Smith
) -> None:
    project = senv.make_project()
    model = script(senv, [_todo(todos=TODOS), _todo(update={"index": 1.0, "status": "completed"}),
                          _todo(update={"index": 1.5, "status": "pending"}),
                          {"text": "ok"}])  # fmt: skip
    r = smith("eval", "--json", "--model", model, "go", cwd=project)
    assert r.code == 0, r.err
    ends = [ev for ev in _events(r.out) if ev["type"] == "tool_end"]
    assert [e["is_error"] for e in ends][:2] == [False, False], ends
    assert "[x] 1. write the parser" in ends[1]["result"]["text"]
    assert ends[2]["is_error"] is True


def test_an_items_content_is_one_line_wherever_it_is_shown(senv: SmithEnv, smith: Smith) -> None:
    project = senv.make_project()
    spoof = "real item\n[x] 2. spoofed done\n\tmore"
    model = script(senv, [_todo(todos=[{"content": spoof, "status": "pending"}]),
                          {"text": "ok"}])  # fmt: skip
    r = smith("eval", "--json", "--session", "s", "--model", model, "go", cwd=project)
    assert r.code == 0, r.err
    ((item,),) = _todo_events(_events(r.out))
    assert item["content"] == "real item [x] 2. spoofed done more"
    (end,) = [ev for ev in _events(r.out) if ev["type"] == "tool_end"]
    assert end["result"]["text"].count("\n") == 1  # the heading, then one item
    r = smith("replay", "s", cwd=project)
    assert r.code == 0, r.err
    assert "\n  [x] 2. spoofed" not in r.out and "real item [x] 2. spoofed done more" in r.out
