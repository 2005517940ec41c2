"""The model picker (/model with no argument, or /model from the command palette): a
filterable list of models. Typing filters, ↑↓ move, Enter picks, Escape closes; models
that cannot be used now are listed, greyed, with the reason, and cannot be picked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from smith.text import inert

from ._models import ModelChoice, context_label, matches
from ._screens import OVERLAY_CSS

CURRENT = "● "


class ModelPicker(ModalScreen[str | None]):
    """Pick a model: its spec, or None (Escape)."""

    DEFAULT_CSS = (
        OVERLAY_CSS.format(name="ModelPicker")
        + """
    ModelPicker OptionList { text-wrap: nowrap; text-overflow: ellipsis; }
    ModelPicker .hint { color: $text-muted; padding-top: 1; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"),
        Binding("down", "move('cursor_down')", show=False),
        Binding("up", "move('cursor_up')", show=False),
        Binding("pagedown", "move('page_down')", show=False),
        Binding("pageup", "move('page_up')", show=False),
    ]

    def __init__(self, choices: Sequence[ModelChoice], current: str) -> None:
        super().__init__()
        self.choices = list(choices)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            with Vertical(classes="head"):
                yield Static(f"Model (now {inert(self.current)})", classes="title", markup=False)
                yield Input(placeholder="filter: provider or model name", id="model-filter")
            yield OptionList(id="models", classes="body")
            yield Static("type to filter · ↑↓ move · Enter use it · Esc cancel",
                         classes="hint", markup=False)  # fmt: skip

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _fill(self, query: str) -> None:
        listing = self.query_one(OptionList)
        listing.clear_options()
        shown = [c for c in self.choices if matches(c, query)]
        width = max((len(c.spec) for c in shown), default=0)
        listing.add_options([_option(c, width, c.spec == self.current) for c in shown])
        usable = [i for i, c in enumerate(shown) if c.usable]
        here = next((i for i in usable if shown[i].spec == self.current), None)
        listing.highlighted = here if here is not None else (usable[0] if usable else None)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        listing = self.query_one(OptionList)
        if listing.highlighted is not None:
            self._pick(listing.get_option_at_index(listing.highlighted))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._pick(event.option)

    def _pick(self, option: Option) -> None:
        if not option.disabled and option.id is not None:
            self.dismiss(option.id)

    def action_move(self, action: str) -> None:
        getattr(self.query_one(OptionList), f"action_{action}")()

    def action_cancel(self) -> None:
        self.dismiss(None)


def _option(choice: ModelChoice, width: int, current: bool) -> Option:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(CURRENT if current else "  ", style="bold green")
    text.append(inert(choice.spec).ljust(width), style="bold" if choice.usable else "dim")
    text.append(f"  {context_label(choice.context_window):>12}", style="dim")
    if choice.note:
        text.append(f"  {inert(choice.note)}", style="dim" if choice.usable else "dim italic")
    return Option(text, id=choice.spec, disabled=not choice.usable)
