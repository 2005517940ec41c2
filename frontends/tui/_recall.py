"""Finding things: Ctrl+R (tui.keys.history) in the prompt history, Ctrl+F
(tui.keys.search) in the transcript.

Ctrl+R opens an overlay that lists what was sent, newest first; typing filters it (every
word must appear, case-insensitively, in any order), ↑↓ move, Enter puts the entry back
into the editor to send again or change, Escape leaves the editor as it was. A long entry
shows its first line and how many lines it has; the filter looks at the whole text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from smith.text import counted, inert

from ._screens import OVERLAY_CSS

if TYPE_CHECKING:
    from textual.app import App

    from ._editor import Editor
    from ._transcript import Transcript

SHOWN = 200  # matches listed at most: the newest ones


def matching(entries: Sequence[str], query: str) -> list[int]:
    """Indexes of the entries that contain every word of `query`, newest first."""
    words = query.casefold().split()
    found = []
    for i in range(len(entries) - 1, -1, -1):
        text = entries[i].casefold()
        if all(word in text for word in words):
            found.append(i)
            if len(found) == SHOWN:
                break
    return found


def label(entry: str, query: str) -> Text:
    """One row: the entry's first line (the words searched for in bold), and its size."""
    lines = entry.splitlines() or [""]
    text = Text(inert(lines[0]), no_wrap=True, overflow="ellipsis")
    for word in query.casefold().split():
        start = text.plain.casefold().find(word)
        while start >= 0:
            text.stylize("bold reverse", start, start + len(word))
            start = text.plain.casefold().find(word, start + len(word))
    if len(lines) > 1:
        text.append(f"  (+{counted(len(lines) - 1, 'line')})", style="dim")
    return text


class HistorySearch(ModalScreen[str | None]):
    """Pick an entry of the prompt history: its text, or None (Escape)."""

    DEFAULT_CSS = (
        OVERLAY_CSS.format(name="HistorySearch")
        + """
    HistorySearch .hint { color: $text-muted; padding-top: 1; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"),
        Binding("down", "move('cursor_down')", show=False),
        Binding("up", "move('cursor_up')", show=False),
        Binding("pagedown", "move('page_down')", show=False),
        Binding("pageup", "move('page_up')", show=False),
    ]

    def __init__(self, entries: Sequence[str], query: str = "") -> None:
        super().__init__()
        self.entries = list(entries)
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical():
            with Vertical(classes="head"):
                yield Static("Prompt history", classes="title", markup=False)
                yield Input(self.query_text, placeholder="filter: words it contains", id="recall")
            yield OptionList(id="recalled", classes="body")
            yield Static("type to filter · ↑↓ move · Enter take it back · Esc cancel",
                         classes="hint", markup=False)  # fmt: skip

    def on_mount(self) -> None:
        self._fill(self.query_text)
        self.query_one(Input).focus()

    def _fill(self, query: str) -> None:
        listing = self.query_one(OptionList)
        listing.clear_options()
        found = matching(self.entries, query)
        if not found:
            what = "nothing sent yet" if not self.entries else "no entry has every word"
            listing.add_option(Option(Text(what, style="dim"), disabled=True))
            return
        listing.add_options([Option(label(self.entries[i], query), id=str(i)) for i in found])
        listing.highlighted = 0

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
            self.dismiss(self.entries[int(option.id)])

    def action_move(self, action: str) -> None:
        getattr(self.query_one(OptionList), f"action_{action}")()

    def action_cancel(self) -> None:
        self.dismiss(None)


class FindMixin:
    """The app's finding actions (it composes `#search`, the transcript and the editor)."""

    _match: int | None = None  # the block of the current transcript match

    def action_history_search(self) -> None:
        """Ctrl+R: what is picked replaces the editor's text; Escape leaves it be."""
        app: App[object] = self  # type: ignore[assignment]
        editor = self.editor

        def back(text: str | None) -> None:
            if text is not None:
                editor.recall(text)  # with its pastes: its chips stand for them again
            editor.focus()

        app.push_screen(HistorySearch(editor.prompts.entries), back)

    def action_search(self) -> None:
        """Ctrl+F: the find field over the transcript."""
        search = self._search_field()
        search.add_class("shown")
        search.focus()
        self._match = None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the find field: the next older match, wrapping to the newest."""
        if event.input.id != "search":
            return
        query = event.value.strip()
        t = self.transcript
        if not query:
            return
        if query != t.search_query:
            self._match = None
        t.search_query = query
        found = t.find(query, before=self._match)
        if found is None and self._match is not None:
            found = t.find(query)  # wrap around to the newest match
        if found is None:
            self.tell(f"no match for '{query}'")
            return
        self._match = found
        t.show_block(found)

    def _close_search(self) -> None:
        search = self._search_field()
        search.remove_class("shown")
        search.clear()
        self.transcript.search_query = ""
        self.transcript.refresh()
        self.editor.focus()

    def _search_field(self) -> Input:
        app: App[object] = self  # type: ignore[assignment]
        return app.query_one("#search", Input)

    if TYPE_CHECKING:  # the app's

        @property
        def editor(self) -> Editor: ...
        @property
        def transcript(self) -> Transcript: ...
        def tell(self, text: str, *, error: bool = False) -> None: ...
