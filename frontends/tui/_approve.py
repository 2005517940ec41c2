"""The approval overlay: a question that carries what it is about (smith.ui.Detail), such
as approval's "smith wants to edit src/app.py", shown with the change itself.

    ╭────────────────────────────────────────────────────────────╮
    │ approval asks: smith wants to edit the file src/app.py     │
    │ ┌ diff ──────────────────────────────────────────────────┐ │
    │ │ --- a/src/app.py                                        │ │
    │ │ +# a comment                                            │ │
    │ └─────────────────────────────────────────────────────────┘ │
    │ 1 y  Approve once                                           │
    │ 2 a  Approve every edit call this session                   │
    │ 3 n  Deny, and say why (optional)                           │
    │ PgUp/PgDn scroll · Esc interrupts the turn                  │
    ╰────────────────────────────────────────────────────────────╯

The detail is a diff in the file's syntax colours (frontends/tui/_review.py), a whole
command, or text, in a region that scrolls (PgUp/PgDn, the wheel) while the choices stay
in view, at 80x24 too. Single keys answer: a choice's number (its place, 1 first) or its
letter (LETTERS: `y` once, `a` for the session, `p` a command's prefix for the session,
`A` always, `n` deny); both are shown beside each choice. Escape interrupts: the call is
denied and the turn ends (Reply.interrupt), unless a reason is being typed, when it goes
back to the choices as in every question.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from smith.text import inert
from smith.ui import Intent

from ._review import colour_diff
from ._screens import QuestionScreen

# The letter that answers each of approval's choices (its key in the Question).
LETTERS = {"once": "y", "session": "a", "prefix": "p", "always": "A", "deny": "n"}
HINT = "PgUp/PgDn scroll · Esc interrupts the turn"


def detail_view(detail: dict[str, object]) -> RenderableType:
    """A question's detail as shown: a diff coloured by its file's language, a command
    as a shell line, text as it is; with how much was left out, if any."""
    kind, text = str(detail.get("kind", "text")), str(detail.get("text", ""))
    cut = detail.get("cut")
    if kind == "diff":
        path = next((line[6:] for line in text.splitlines() if line.startswith("+++ b/")), "")
        shown: Text = colour_diff(text, path, text.count("\n") + 1) if text else Text(
            "(no change)", style="dim")  # fmt: skip
    elif kind == "command":
        shown = Text("$ ", style="bold")
        shown.append(inert(text))
    else:
        shown = Text(inert(text))
    if isinstance(cut, int) and cut:
        shown.append(f"\n… {cut} more characters not shown", style="dim")
    return shown


class ApprovalScreen(QuestionScreen):
    """A question with its detail and single-key answers; Escape interrupts."""

    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical {
        width: 96%; max-width: 140; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ApprovalScreen .title { text-style: bold; }
    ApprovalScreen #approval-detail {
        height: auto; min-height: 3; border: round $panel; scrollbar-size-vertical: 1;
    }
    ApprovalScreen OptionList, ApprovalScreen OptionList:focus {
        height: auto; border: none; padding: 0;
    }
    ApprovalScreen .hint { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "interrupt"),
        # Before the choices' own PgUp/PgDn (which move the highlight): the detail scrolls.
        Binding("pageup", "scroll_detail(-1)", "scroll up", show=False, priority=True),
        Binding("pagedown", "scroll_detail(1)", "scroll down", show=False, priority=True),
    ]

    def __init__(self, intent: Intent) -> None:
        super().__init__(intent)
        keys = [key for key, _ in self.options]
        self.by_key = {str(n): key for n, key in enumerate(keys, start=1) if n < 10}
        self.by_key |= {LETTERS[k]: k for k in keys if k in LETTERS}

    def compose(self) -> ComposeResult:
        data = self.intent.data
        detail = data.get("detail") if isinstance(data.get("detail"), dict) else None
        text = str(data.get("text", ""))
        if detail is not None:  # what the text quotes, the detail shows whole
            text = text.split("\n\n", 1)[0].rstrip(":")
        title = f"{data.get('origin') or 'smith'} asks: {text}"
        letters = {k: letter for letter, k in self.by_key.items() if not letter.isdigit()}
        with Vertical():
            yield Static(inert(title), classes="title", markup=False)
            if detail is not None:
                with VerticalScroll(id="approval-detail"):
                    yield Static(detail_view(detail), id="approval-detail-text")
            options = []
            for n, (key, label) in enumerate(self.options, start=1):
                row = Text(f"{n} " if n < 10 else "  ", style="bold")
                row.append(f"{letters.get(key, ' ')}  ", style="bold")
                row.append(inert(label))
                options.append(Option(row, id=key))
            yield OptionList(*options)
            yield Static(HINT if detail is not None else HINT.split(" · ", 1)[1],
                         classes="hint", markup=False)  # fmt: skip

    def on_mount(self) -> None:
        self.call_after_refresh(self.fit)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Bound the detail's region by what the rest leaves of the screen, so a long
        diff scrolls and the choices stay in view (a height of `auto` would push them
        off: its parent grows with it)."""
        regions = self.query("#approval-detail")
        if not regions:
            return
        box = self.query_one(Vertical)
        used = box.styles.gutter.height  # its border
        for child in box.children:
            if isinstance(child, OptionList):  # all its choices, whatever it was given
                used += len(self.options) + child.styles.gutter.height
            elif child.id != "approval-detail":
                used += child.outer_size.height
        regions.first().styles.max_height = max(3, self.size.height - used)

    def choose(self, key: str) -> None:
        super().choose(key)
        if self.giving is not None:  # the reason's line takes room: the detail gives it
            self.call_after_refresh(self.fit)

    def on_key(self, event: events.Key) -> None:
        if self.giving is not None:
            return  # a reason is being typed: the keys are its text
        key = self.by_key.get(event.character or "")
        if key is None:
            return
        event.stop()
        event.prevent_default()
        self.choose(key)

    def action_scroll_detail(self, direction: int) -> None:
        for region in self.query("#approval-detail").results(VerticalScroll):
            if direction < 0:
                region.scroll_page_up()
            else:
                region.scroll_page_down()

    def action_cancel(self) -> None:
        if self.giving is None:
            self.interrupted = True  # Escape on the choices: the user stops the turn
        super().action_cancel()


def screen_for(intent: Intent) -> QuestionScreen:
    """The overlay of a question: the approval overlay for one that carries a detail or
    comes from approval, else the plain question."""
    if intent.kind == "request_choice" and (
        intent.data.get("detail") or intent.data.get("origin") == "approval"
    ):
        return ApprovalScreen(intent)
    return QuestionScreen(intent)
