"""A prompt a plugin handles as its command (HandleInput) is drawn in the app from its
record: what was typed, then the reply, or in red why the command failed (an
`input_handled` entry, so a resumed session shows it the same)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smith.effects import ToolContext, builtin_tools
from smith.frontends.tui._app import SmithApp
from smith.runtime import Runtime, ops
from smith.sdk import Command, HandleInput, Plugin, resolve_plugins
from smith.session import Session
from tests.test_tui import SIZE, _project, _settle, _type, run, visible


def _on_input(event: dict[str, Any], view: Any) -> list[Any] | None:
    text = event["text"].strip()
    if text == "/ping":
        return [HandleInput("pong")]
    if text == "/boom":
        return [HandleInput(error="out of pongs")]
    return None


def _sender(name: str) -> Any:
    return lambda host, arg: host.runtime.submit(ops.Prompt(f"/{name}"))


PINGER = Plugin(
    "pinger",
    handlers={"input": _on_input},
    commands=[Command("ping", "answers pong", _sender("ping")),
              Command("boom", "fails", _sender("boom"))],
)  # fmt: skip


def _app(tmp_path: Path, session: Session) -> SmithApp:
    project = tmp_path / "project"
    plugins = [*resolve_plugins().active, PINGER]

    def factory(session: Session) -> Runtime:
        ctx = ToolContext(root=str(project), cwd=str(project), session=session)
        tools = list(builtin_tools().values())
        return Runtime(session, model="demo", tools=tools, context=ctx, plugins=plugins)

    return SmithApp(factory, session, plugins=plugins)


def test_a_handled_command_shows_its_reply_or_its_error_from_the_record(tmp_path: Path) -> None:
    project = _project(tmp_path)
    path = str(tmp_path / "s.smith")

    async def main(session: Session, typed: list[str]) -> str:
        app = _app(tmp_path, session)
        async with app.run_test(size=SIZE) as pilot:
            for text in typed:
                await _type(pilot, text)
                await _settle(app)
            await pilot.pause()
            return visible(app)

    session = Session.create(path, name="tui", cwd=str(project))
    shown = run(main(session, ["/ping", "/boom"]))
    assert "/ping  (pinger)" in shown and "pong" in shown, shown
    assert "/boom  (pinger)" in shown and "failed: out of pongs" in shown, shown
    session.close()
    again = run(main(Session.open(path), []))  # resumed: drawn from the records alone
    assert "pong" in again and "failed: out of pongs" in again, again
