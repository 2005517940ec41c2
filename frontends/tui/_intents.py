"""The app as a UI frontend (smith.ui): what it shows of plugins' intents and how it
asks their questions.

The app attaches to its runtime with `AppFrontend` (`Runtime.attach`), so every event
reaches `SmithApp._show` through `smith.ui.deliver`, and every question a plugin asks
(from a handler, a command or a tool) comes to `AppFrontend.ask`:

- a Question or Confirm is a modal overlay (`QuestionScreen`) listing the choices; it
  owns focus until it is answered (Enter) or dismissed (Escape: a question is refused,
  a confirmation answered no); a choice that takes a reason asks for it on a line; an
  approval, or any question with a detail, is the approval overlay (_approve.py): the
  change or command shown whole, single keys, and Escape interrupting the turn;
- a plugin's Notify is a Textual notification (its level as the severity); the
  runtime's own notices (errors, retries) stay in the transcript as before;
- a plugin's Status and unfinished Progress are kept in the status line;
- a plugin's escape hatch (one it declared) is done: the value copied to the clipboard,
  a URL opened in the browser, the bell rung;
- how each question ended is recorded in the session (entry kind `question`) and shown
  in the transcript from that record, like every recorded entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from smith.text import inert
from smith.ui import QUESTIONS, SHOWN, Capabilities, Intent, Reply, interrupted, refused

from ._approve import screen_for
from ._screens import QuestionScreen

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ._app import SmithApp

DISMISSED = "the user dismissed it"
MAX_STATUS_KEYS = 8  # status lines kept per plugin (a new key past them is dropped)
MAX_STATUS_TEXT = 120  # characters of one status line (the rest cut, with an ellipsis)
SEVERITY = {"info": "information", "warning": "warning", "error": "error"}


class AppFrontend:
    name = "tui"
    capabilities = Capabilities(shows=frozenset(SHOWN), asks=frozenset(QUESTIONS))

    def __init__(self, app: SmithApp) -> None:
        self.app = app

    def show(self, intent: Intent) -> None:
        if intent.kind == "hatch":
            do_hatch(self.app, intent)
        else:
            self.app._show(intent)

    async def ask(self, intent: Intent) -> Reply:
        import asyncio

        answered: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

        def picked(key: str | None) -> None:
            if not answered.done():
                answered.set_result(key)

        screen = screen_for(intent)
        self.app.signal_away("smith needs an answer: " + str(intent.data.get("text", "")))
        # Through the app's queue: the question may come from any task (a handler's or a
        # tool's thread brings it to the loop without the app's context).
        self.app.call_later(self.app.push_screen, screen, picked)
        self.app.working.asked(True)
        try:
            key = await answered
        except asyncio.CancelledError:  # withdrawn (an abort, its timeout): close it
            self.app.call_later(_close, self.app, screen)
            raise
        finally:
            self.app.working.asked(False)
        if key is not None:
            return Reply(key, frontend=self.name, note=screen.note)
        if intent.kind == "request_confirm":
            return Reply("no", frontend=self.name)  # Escape denies
        if screen.interrupted:
            return interrupted(self.name)
        return refused(DISMISSED, self.name)


def do_hatch(app: SmithApp, intent: Intent) -> None:
    """A plugin's escape hatch (its plugin declared it: the runtime refuses any other):
    the value to the clipboard (Textual's OSC 52, which `smith web` hands to the
    browser), a URL opened in the browser (a new tab under `smith web`), the bell."""
    capability, value = intent.data.get("capability"), str(intent.data.get("value", ""))
    if capability == "clipboard":
        app.copy_to_clipboard(value)
    elif capability == "open-url":
        app.open_url(value)
    elif capability == "bell":
        app.bell()


def _close(app: SmithApp, screen: QuestionScreen) -> None:
    if app.screen is screen:  # (beneath another overlay, it stays until that closes)
        screen.dismiss(None)


def show_plugin(app: SmithApp, intent: Intent) -> None:
    """A plugin's notice, status or progress (its data names its `origin`)."""
    data = intent.data
    origin = str(data.get("origin", ""))
    if intent.kind == "notify":
        level = str(data.get("level", "info"))
        app.notify(inert(str(data.get("text", ""))), title=inert(origin),
                   severity=SEVERITY.get(level, "information"), markup=False)  # type: ignore[arg-type]  # fmt: skip
        return
    key = (origin, intent.kind, str(data.get("key") or data.get("label") or ""))
    if intent.kind == "status":
        text = str(data.get("text", ""))
    else:  # progress: shown until it is done
        done, total = data.get("done"), data.get("total")
        over = done is not None and total is not None and done >= total
        amount = f" {done:g}/{total:g}" if done is not None and total is not None else ""
        text = "" if over else f"{data.get('label', '')}{amount}"
    kept = app.plugin_status
    if not text:
        kept.pop(key, None)
    elif key in kept or sum(k[0] == origin for k in kept) < MAX_STATUS_KEYS:
        cut = text if len(text) <= MAX_STATUS_TEXT else text[: MAX_STATUS_TEXT - 1] + "…"
        kept[key] = inert(cut)
    else:  # past a plugin's MAX_STATUS_KEYS lines: dropped, the status line stays short
        return
    app._status()


def render_question(content: dict[str, Any]) -> RenderableType:
    """A recorded question and how it ended, as a transcript line."""
    asked = f"{content.get('origin') or 'smith'} asked: {content.get('text', '')}"
    if content.get("refused") is None:
        labels = {c.get("key"): c.get("label") for c in content.get("choices") or []}
        choice = content.get("choice")
        note = f": {content['note']}" if content.get("note") else ""
        how = f"{labels.get(choice) or choice}{note} ({content.get('frontend')})"
    elif content.get("interrupt"):
        how = f"interrupted ({content.get('frontend')})"
    else:
        how = f"refused by {content.get('frontend')}: {content.get('refused')}"
    return Text(inert(f"? {asked} → {how}"), style="dim")


def question_text(content: dict[str, Any]) -> str:
    return f"{content.get('text', '')} {content.get('choice') or content.get('refused') or ''}"
