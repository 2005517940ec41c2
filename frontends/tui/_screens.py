"""Overlays: each is a modal screen that owns focus until it is dismissed (Escape closes
any of them), and the command palette's provider of smith's commands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Hit, Hits, Provider
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from smith.text import inert

if TYPE_CHECKING:
    from smith.sdk import Command

OVERLAY_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 80%; max-width: 100; height: auto; max-height: 80%;
    border: round $accent; background: $surface; padding: 0 1;
}}
{name} .title {{ text-style: bold; padding-bottom: 1; }}
"""


class InfoScreen(ModalScreen[None]):
    """Lines to read (help, the plugin list); any key in BINDINGS closes it."""

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
            yield Static("\n".join(inert(line) for line in self.lines), id="info-body",
                         markup=False)  # fmt: skip

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of several options (sessions, branches, levels); Escape picks nothing."""

    DEFAULT_CSS = OVERLAY_CSS.format(name="ChoiceScreen")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, options: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.options = list(options)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(inert(self.title_text), classes="title", markup=False)
            yield OptionList(*(Option(Text(inert(label)), id=key) for key, label in self.options))

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SmithCommands(Provider):
    """smith's commands (from the product plugin) in Textual's command palette."""

    def _commands(self) -> Sequence[Command]:
        commands: Sequence[Command] = getattr(self.app, "plugin_commands", ())
        return commands

    async def discover(self) -> Hits:
        for command in self._commands():
            yield Hit(1.0, f"/{command.name}", self._runner(command), help=command.description)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(f"/{command.name} {command.description}")
            if score > 0:
                yield Hit(score, matcher.highlight(f"/{command.name}"), self._runner(command),
                          help=command.description)  # fmt: skip

    def _runner(self, command: Command) -> Callable[[], None]:
        def run() -> None:
            self.app.run_command(command.name, "")  # type: ignore[attr-defined]

        return run
