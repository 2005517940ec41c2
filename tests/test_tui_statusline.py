"""The status line's fitting (frontends/tui/_statusline.py): what each field says, and
which give way first as the terminal narrows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from smith.frontends.tui._statusline import (
    COST,
    MODEL,
    STATE,
    Field,
    StatusLine,
    context_field,
    cost_text,
    fit,
    status_fields,
    tokens,
)

MODEL_NAME = "anthropic:claude-sonnet-4-5"


def _status(**over: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "model": MODEL_NAME,
        "thinking": "high",
        "queue": [],
        "cost": {"usd": 0.058, "complete": False,
                 "unknown": {"input": 0, "output": 0, "cache_read": 2, "cache_write": 2}},
        "context": {"tokens": 60_000, "system": 16_000, "limit": 200_000},
    }  # fmt: skip
    status.update(over)
    return status


def _line(width: int, *, busy: bool = False, **over: Any) -> str:
    fields = status_fields(_status(**over), busy=busy, session="fix the flaky tests")
    return fit(fields, width)


def test_wide_everything_is_said_in_full() -> None:
    line = _line(200)
    assert line == (
        f"{MODEL_NAME} · ready · thinking high · cost $0.0580 + unknown cache · "
        "context 38% of 200k · session fix the flaky tests"
    )


@pytest.mark.parametrize("width", [120, 100, 80, 60, 40])
def test_the_state_and_the_model_are_always_there(width: int) -> None:
    for busy in (False, True):
        line = _line(width, busy=busy)
        assert len(line) <= width, line
        assert MODEL_NAME in line and ("working" if busy else "ready") in line
    narrower = _line(30, busy=True)  # too narrow for the model's whole name
    assert narrower.endswith(" · working") and narrower.startswith("anthropic")


def test_lower_priority_fields_shorten_or_go_first() -> None:
    at80 = _line(80)
    assert at80.startswith(f"{MODEL_NAME} · ready · ") and len(at80) <= 80
    # thinking and the session go before cost and context are cut
    assert "thinking" not in at80 and "session" not in at80
    assert "38% of 200k" in at80 and "$0.0580" in at80
    at50 = _line(50)
    assert "ready" in at50 and "%" in at50  # the context's share outlasts the cost
    assert "$" not in at50


def test_a_model_too_long_for_the_line_is_cut_in_the_middle_never_the_state() -> None:
    long = "openrouter:some-provider/an-extremely-long-model-name-2025-10-01"
    line = fit([Field((long,), MODEL, required=True), Field(("working",), STATE, required=True),
                Field(("cost $1",), COST)], 40)  # fmt: skip
    assert len(line) <= 40 and line.endswith(" · working")
    model = line.split(" · ")[0]
    assert model.startswith("openrouter:some") and "…" in model and model.endswith("10-01")


@pytest.mark.parametrize("width", [40, 60, 80])
def test_wide_characters_are_measured_in_cells(width: int) -> None:
    from rich.cells import cell_len

    from smith.frontends.tui._working import Activity

    wide = status_fields(_status(model="模型" * 12), busy=True, session="修复测试" * 7)
    line = fit(wide, width)
    assert cell_len(line) <= width and "working" in line, line  # the state never cut off
    activity = Activity()
    activity.take("status", {"event": "agent_start"}, 0.0)
    activity.take("tool_activity", {"phase": "start", "tool_call_id": "c", "name": "bash",
                                    "arguments": {"command": "echo 修复测试修复测试修复测试"}},
                  0.0)  # fmt: skip
    said = activity.line(65.0, 0, "esc", width)
    assert cell_len(said) <= width and said.endswith("1m 05s · esc to interrupt"), said


def test_a_session_name_smith_made_is_whole_or_gone() -> None:
    made = status_fields(_status(), busy=False, session="smith 2026-12-07 10:59:18", given=False)
    assert "session smith 2026-12-07 10:59:18" in fit(made, 200)
    assert "2026-12-0…" not in fit(made, 80) and "smith 2026" not in fit(made, 80)
    given = status_fields(_status(), busy=False, session="fix the flaky tests in ci")
    assert any("fix the flaky t…" in fit(given, w) for w in range(60, 120))


def test_the_queue_is_said_only_when_something_is_queued() -> None:
    assert "queue" not in _line(200)
    item = {"id": "q1", "mode": "follow_up", "text": "and then"}
    assert "queue 1" in _line(200, queue=[item])


def test_context_as_a_share_of_the_window_or_an_estimate() -> None:
    assert context_field({"tokens": 60_000, "system": 16_000, "limit": 200_000}).forms[0] == (
        "context 38% of 200k"
    )
    unknown = context_field({"tokens": 9_000, "system": 3_300, "limit": None})
    assert unknown.forms[0] == "context ~12k tokens"
    assert context_field({"tokens": 0, "system": 2_312, "limit": None}).forms[0] == (
        "context ~2.3k tokens"
    )
    assert [tokens(n) for n in (12, 999, 1_000, 2_312, 12_345, 200_000, 1_048_576)] == [
        "12", "999", "1k", "2.3k", "12k", "200k", "1M"
    ]  # fmt: skip


def test_cost_says_what_is_known_without_alarm() -> None:
    exact = {"usd": 3.0, "complete": True, "unknown": dict.fromkeys(("input", "output"), 0)}
    assert cost_text(exact) == ("cost $3.0000", "$3.0000")
    assert cost_text({"usd": None, "complete": False})[0] == "cost unknown"
    cache = _status()["cost"]
    assert cost_text(cache)[0] == "cost $0.0580 + unknown cache"
    assert cost_text(cache)[-1] == "≥$0.0580"
    output = {**cache, "unknown": {"input": 0, "output": 1, "cache_read": 0, "cache_write": 0}}
    assert cost_text(output)[0] == "cost $0.0580 + unknown output"
    unpriced = {**cache, "unknown": dict.fromkeys(("input", "output"), 0)}
    assert cost_text(unpriced)[0] == "cost $0.0580 + unpriced tokens"
    pending = {**exact, "earlier": "pending"}
    assert cost_text(pending)[0] == "cost $3.0000 + earlier turns"
    for cost in (cache, output, unpriced, pending):
        assert "≥ $" not in cost_text(cost)[0] and "some usage unknown" not in cost_text(cost)[0]


def test_the_line_fits_again_when_the_terminal_is_resized(tmp_path: Path) -> None:
    from textual.app import App, ComposeResult

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusLine(id="status")

    async def main() -> None:
        app = Host()
        async with app.run_test(size=(200, 3)) as pilot:
            line = app.query_one(StatusLine)
            line.show(status_fields(_status(), busy=False, session="fix the flaky tests"))
            await pilot.pause()
            assert "session fix the flaky tests" in str(line.render())
            await pilot.resize_terminal(80, 3)
            await pilot.pause()
            narrow = str(line.render())
            assert "session" not in narrow and "ready" in narrow and len(narrow) <= 80
            await pilot.resize_terminal(200, 3)
            await pilot.pause()
            assert "session fix the flaky tests" in str(line.render())

    asyncio.run(asyncio.wait_for(main(), 60))
