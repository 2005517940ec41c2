"""The app's policy for UI intents (docs/ui.md), through Textual's Pilot with the test
plugin (tests/ui_plugin.py) in its runtime and commands: a plugin's notice is a Textual
notification, its status and progress sit in the status line, its question is an
overlay that owns focus (Enter answers, Escape refuses or denies), and how a question
ended is shown from its record in the session. `smith web` serves this same app
(tests/test_web.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smith.effects import ToolContext, builtin_tools
from smith.frontends.tui._app import SmithApp
from smith.frontends.tui._screens import QuestionScreen
from smith.runtime import Runtime
from smith.sdk import Plugin, resolve_plugins
from smith.session import Session
from tests import ui_plugin
from tests.runtime_kit import Fake, call, say
from tests.test_tui import SIZE, _project, _settle, _type, run, status, visible


def _app(tmp_path: Path, fake: Fake, plugins: list[Plugin] | None = None) -> SmithApp:
    project = _project(tmp_path)
    session = Session.create(str(tmp_path / "s.smith"), name="tui", cwd=str(project))
    plugins = plugins if plugins is not None else [ui_plugin.PLUGIN]

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        return Runtime(session, model=(fake, "m"), tools=list(builtin_tools().values()),
                       context=ctx, plugins=plugins)  # fmt: skip

    return SmithApp(factory, session, plugins=[*resolve_plugins().active, *plugins])


def _notices(app: SmithApp) -> list[tuple[str, str, str]]:
    return [(n.title, n.message, n.severity) for n in app._notifications]


async def _asked(pilot: Any, app: SmithApp) -> QuestionScreen:
    for _ in range(200):
        await pilot.pause(0.02)
        if isinstance(app.screen, QuestionScreen):
            return app.screen
    raise AssertionError("no question was asked")


def test_a_plugins_question_is_an_overlay_answered_with_the_keys_and_recorded(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        app = _app(tmp_path, Fake(say("Here I am.")))
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "hello")
            screen = await _asked(pilot, app)
            # The overlay owns focus and lists the choices; the app's keys step aside.
            assert screen.title_text == "asker asks: Which way?"
            assert screen.options == [("left", "Go left"), ("right", "Go right")]
            assert app.focused is not app.query_one("#input")
            assert ("asker", "starting", "information") in _notices(app)
            assert "asker is listening" in status(app) and "warming up 1/2" in status(app)
            await pilot.press("down", "enter")
            await _settle(app)
            await pilot.pause()
            assert not isinstance(app.screen, QuestionScreen)
            assert ("asker", "chose right (tui)", "information") in _notices(app)
            assert "? asker asked: Which way? → Go right (tui)" in visible(app)
            (record,) = [e.content for e in app.session.entries("question")]
            assert record["choice"] == "right" and record["frontend"] == "tui"

    run(main())


def test_escape_refuses_a_question_and_denies_a_confirmation(tmp_path: Path) -> None:
    async def main() -> None:
        fake = Fake(call(("ask_user", {"question": "Delete it?"})), say("ok"))
        only_tool = Plugin("asker", tools=ui_plugin.PLUGIN.tools,
                           commands=ui_plugin.PLUGIN.commands)  # fmt: skip
        app = _app(tmp_path, fake, [only_tool])
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "/ask Pick a fruit")  # a command asks through its host
            screen = await _asked(pilot, app)
            assert screen.intent.kind == "request_choice"
            assert screen.title_text == "asker asks: Pick a fruit"
            assert ("asker", "/ask: asking", "information") in _notices(app)
            await pilot.press("escape")
            await pilot.pause(0.1)
            assert "/ask: refused (the user dismissed it)" in visible(app)
            assert "refused by tui: the user dismissed it" in visible(app)
            await _type(pilot, "go")  # the model calls ask_user: a confirmation
            screen = await _asked(pilot, app)
            assert screen.intent.kind == "request_confirm"
            assert screen.options == [("yes", "Yes"), ("no", "No")]
            await pilot.press("escape")
            await _settle(app)
            await pilot.pause()
            assert "confirmed=False refused=None" in visible(app)  # Escape said no
            assert "Delete it? → No (tui)" in visible(app)

    run(main())


def test_an_abort_closes_the_overlay_of_the_question_it_refuses(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, Fake(say("Here I am.")))
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "hello")
            await _asked(pilot, app)
            assert app.runtime is not None
            app.runtime.abort()  # Ctrl+C would copy or abort; the overlay owns Escape
            await _settle(app)
            await pilot.pause()
            assert not isinstance(app.screen, QuestionScreen)
            assert "refused by tui: the agent was aborted before it was answered" in visible(app)

    run(main())


def test_a_choice_that_takes_a_reason_asks_for_it_on_a_line(tmp_path: Path) -> None:
    """Picking "Deny" (a choice of Question.reasons) opens a line for the reason: Escape
    there goes back to the choices, Enter answers with what was typed, and the record
    and the transcript carry it."""
    from textual.widgets import Input, OptionList

    from smith.sdk import Question

    question = Question("Write x?", [("once", "Approve once"), ("deny", "Deny")], reasons=["deny"])
    told: list[Any] = []

    async def ask(event: dict[str, Any], view: Any) -> None:
        told.append(await view.ask(question))

    async def main() -> None:
        app = _app(tmp_path, Fake(say("ok")), [Plugin("guard", handlers={"agent_start": ask})])
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _type(pilot, "hello")
            screen = await _asked(pilot, app)
            await pilot.press("down", "enter")  # Deny: the line for the reason
            await pilot.pause()
            note = screen.query_one("#question-note", Input)
            assert app.focused is note and screen.query_one(OptionList).disabled
            await pilot.press("escape")  # back to the choices, nothing answered
            await pilot.pause()
            assert not screen.query("#question-note") and isinstance(app.focused, OptionList)
            await pilot.press("enter")  # Deny again (the highlight stayed on it)
            await pilot.pause()
            await pilot.press(*"tests first", "enter")
            await _settle(app)
            await pilot.pause()
            assert [(r.choice, r.note) for r in told] == [("deny", "tests first")]
            (record,) = [e.content for e in app.session.entries("question")]
            assert record["choice"] == "deny" and record["note"] == "tests first"
            assert "→ Deny: tests first (tui)" in visible(app)

    run(main())
