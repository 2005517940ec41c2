"""Answers as Markdown: a streaming answer settles into Markdown parts only at paragraph
ends outside code blocks; code blocks are coloured by language; long ones fold until
expanded (frontends/tui/_render.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console

from smith.frontends.tui._render import fold_code, render_message, settle_point
from tests.test_tui import SIZE, _app, _type, visible


def _lines(renderable: object, width: int = 80) -> str:
    console = Console(width=width, color_system="truecolor", record=True)
    console.print(renderable)
    return console.export_text()


def test_a_streaming_answer_settles_only_outside_code_blocks() -> None:
    prose = "intro paragraph " * 5 + "\n\n"
    code = "```python\n" + "x = 1\n\n" * 40 + "```\n\n"
    text = prose + code + "after\n\nmore"
    cut = settle_point(text, 0, 10)
    assert text[:cut].count("```") % 2 == 0  # never inside the fence
    assert text[:cut] == prose + code + "after\n\n"  # the last paragraph end outside
    # Inside an open fence there is nowhere to settle after the intro.
    open_fence = prose + "```python\n" + "y = 2\n\n" * 40
    assert settle_point(open_fence, 0, 10) == len(prose)
    assert settle_point("no paragraph end yet", 0, 5) == 1


def test_long_code_blocks_fold_and_short_ones_do_not() -> None:
    long = "```python\n" + "".join(f"line {n}\n" for n in range(50)) + "```\nafter"
    folded = fold_code(long, 30)
    assert "line 29" in folded and "line 30" not in folded
    assert "… 20 more lines (click or Ctrl+O to show)" in folded and folded.endswith("```\nafter")
    short = "```\na\nb\n```"
    assert fold_code(short, 30) == short and fold_code("no code", 1) == "no code"


def test_a_recorded_answer_colours_its_code_and_expands_folded_blocks() -> None:
    body = "Here:\n\n```python\n" + "".join(f"value_{n} = {n}\n" for n in range(40)) + "```\n"
    message = {"role": "assistant", "content": [{"type": "text", "text": body}]}
    collapsed = render_message(message)
    assert "more lines" in _lines(collapsed) and "value_39" not in _lines(collapsed)
    assert "value_39" in _lines(render_message(message, expanded=True))
    console = Console(width=80, color_system="truecolor", record=True)
    console.print(render_message(message, expanded=True))
    assert console.export_html().count("color: #") > 3  # coloured, not plain


def test_streamed_paragraphs_are_shown_as_markdown_once_settled(tmp_path: Path) -> None:
    from smith.frontends.tui._transcript import Transcript
    from smith.providers import End, TextDelta
    from tests.runtime_kit import Fake, Gate

    paragraphs = [f"**bold {i}** " + "word " * 60 for i in range(6)]
    gate = Gate()
    fake = Fake([*(TextDelta(p + "\n\n") for p in paragraphs), gate, End("success")])

    async def main() -> None:
        app = _app(tmp_path, (fake, "m"))
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "write")
            await gate.reached.wait()
            await pilot.pause(0.1)
            t = app.query_one(Transcript)
            settled = [b for b in t.blocks if b.key.startswith("live-") and b.key[-2:] == "-0"]
            assert settled, "no paragraph settled while streaming"
            shown = visible(app)
            assert "bold 4" in shown and "**bold" not in shown  # drawn as Markdown
            gate.opened.set()
            assert app.runtime is not None
            await app.runtime.wait_idle()

    asyncio.run(asyncio.wait_for(main(), 60))
