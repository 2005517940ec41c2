"""Overlays: each is a modal screen that owns focus until it is dismissed (Escape closes
any of them), and the command palette's provider of smith's commands.

Every overlay fits the smallest supported terminal (80x24): its box is at most 90% of
the screen high, the title is docked at its top, a hint saying how to move and how to
close it at its bottom, and the body between them (`.body`) scrolls within what is left.
Overlays of other modules build on OVERLAY_CSS and the same classes. `QuestionScreen`
asks a plugin's question (the app's `AppFrontend.ask`, _intents.py); the approval
overlay (_approve.py) builds on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Hit, Hits, Provider
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from smith.text import inert
from smith.ui import NOTE_MAX, Intent

if TYPE_CHECKING:
    from smith.sdk import Command

OVERLAY_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 90%; max-width: 100; height: auto; max-height: 90%;
    border: round $accent; background: $surface; padding: 0 1;
}}
{name} .title {{ text-style: bold; padding-bottom: 1; }}
{name} > Vertical > .title, {name} > Vertical > .head {{
    dock: top; height: auto; max-height: 50%;
}}
{name} .hint {{ color: $text-muted; dock: bottom; height: auto; }}
{name} .body {{ height: auto; max-height: 100%; }}
"""

SCROLL_HINT = "↑↓ PgUp PgDn scroll · Esc close"
CHOICE_HINT = "↑↓ move · Enter choose · Esc cancel"


class InfoScreen(ModalScreen[None]):
    """Lines to read (help, keys, the plugin list), scrolled with the arrows and page
    keys; Escape, q or Enter closes it."""

    DEFAULT_CSS = OVERLAY_CSS.format(name="InfoScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "dismiss", "close"),
    ]

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(inert(self.title_text), classes="title", markup=False)
            with VerticalScroll(id="info-scroll", classes="body"):
                yield Static("\n".join(inert(line) for line in self.lines), id="info-body",
                             markup=False)  # fmt: skip
            yield Static(SCROLL_HINT, classes="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#info-scroll", VerticalScroll).focus()  # its keys scroll it

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of several options (sessions, branches, levels); Escape picks nothing."""

    DEFAULT_CSS = OVERLAY_CSS.format(name="ChoiceScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    HINT = CHOICE_HINT

    def __init__(self, title: str, options: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.options = list(options)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(inert(self.title_text), classes="title", markup=False)
            yield OptionList(*(Option(Text(inert(label)), id=key) for key, label in self.options),
                             classes="body")  # fmt: skip
            yield Static(self.HINT, classes="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


# Palette scores: any match of a command's name ranks above a match of its description
# alone (typing `model` finds /model before /context, "what the model is told"), a
# name starting with what was typed above other name matches, and a description-only
# match below Textual's own commands' name matches.
BY_PREFIX = 2000.0
BY_NAME = 1000.0
BY_DESCRIPTION = 0.01


class SmithCommands(Provider):
    """smith's commands (from the plugins, and prompt templates) in Textual's command
    palette; their text is shown as written (brackets included), never read as markup."""

    def _commands(self) -> Sequence[Command]:
        commands: Sequence[Command] = getattr(self.app, "plugin_commands", ())
        return commands

    async def discover(self) -> Hits:
        for command in self._commands():
            yield Hit(1.0, escape(f"/{command.name}"), self._runner(command),
                      text=f"/{command.name}", help=escape(command.description))  # fmt: skip

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        typed = query.strip().lstrip("/").casefold()
        for command in self._commands():
            score = rank(matcher.match, typed, command)
            if score > 0:
                name = f"/{command.name}"
                shown = matcher.highlight(name) if score >= BY_NAME else escape(name)
                yield Hit(score, shown, self._runner(command), text=name,
                          help=escape(command.description))  # fmt: skip

    def _runner(self, command: Command) -> Callable[[], None]:
        def run() -> None:
            self.app.run_command(command.name, "")  # type: ignore[attr-defined]

        return run


def rank(match: Callable[[str], float], typed: str, command: Command) -> float:
    """The palette's score of `command` for a query that `match` scores (Textual's fuzzy
    matcher) and that reads `typed` without its slash; 0: no match."""
    by_name = match(f"/{command.name}")
    if by_name > 0:
        prefix = bool(typed) and command.name.casefold().startswith(typed)
        return (BY_PREFIX if prefix else BY_NAME) + by_name
    return match(f"/{command.name} {command.description}") * BY_DESCRIPTION


class QuestionScreen(ChoiceScreen):
    """A plugin's question: its text and choices; Escape picks nothing. A choice that
    takes a reason (Question.reasons: "Deny") asks for it on a line below the choices:
    Enter answers with what was typed (nothing typed: no reason), Escape goes back to the
    choices."""

    def __init__(self, intent: Intent) -> None:
        data = intent.data
        title = f"{data.get('origin') or 'smith'} asks: {data.get('text', '')}"
        choices = data.get("choices", [])
        super().__init__(title, [(str(c["key"]), str(c["label"])) for c in choices])
        self.intent = intent
        self.reasons = {str(c["key"]) for c in choices if c.get("reason")}
        self.note = ""  # the reason given with the answer
        self.giving: str | None = None  # the choice whose reason is being typed
        self.interrupted = False  # dismissed by a user who stops the turn (_approve.py)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        key = event.option.id
        if key not in self.reasons:
            return  # ChoiceScreen answers with it
        event.prevent_default()
        self.choose(key)

    def choose(self, key: str) -> None:
        """Answer with the choice `key`, or first ask for the reason it takes."""
        if key not in self.reasons:
            self.dismiss(key)
            return
        self.giving = key
        label = dict(self.options).get(key, key)
        note = Input(placeholder=f"{label}: why? (Enter sends, also with nothing typed)",
                     max_length=NOTE_MAX, id="question-note")  # fmt: skip
        self.query_one(Vertical).mount(note)
        self.query_one(OptionList).disabled = True
        note.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.note = event.value
        self.dismiss(self.giving)

    def action_cancel(self) -> None:
        if self.giving is None:
            self.dismiss(None)
            return
        self.giving = None  # back to the choices
        self.query_one("#question-note").remove()
        options = self.query_one(OptionList)
        options.disabled = False
        options.focus()
