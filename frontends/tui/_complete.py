"""`@` completion of project paths in the app's editor.

Typing `@` at the start of a word opens a list above the editor with the best matches of
what follows it (the fuzzy ranking of _fuzzy, over the paths of _files), the matched
characters highlighted. Up/Down (also Shift+Tab, Ctrl+P/Ctrl+N) move; Tab or Enter
accept: the word becomes `@PATH` and a space, or for a directory `@DIR/`, which keeps
completing inside it; Escape closes the list until the cursor leaves that word. Enter
while the list shows matches accepts rather than sends. The list follows the word as it
is typed and hides when the cursor leaves it. What is offered is what
smith.runtime.mentions reads back as that path, so an accepted path is attached as is.
Nothing here is terminal-specific: the browser gets the same list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from ._files import Lister, Listing, ProjectFiles, runtime_lister
from ._fuzzy import Match

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._editor import Editor

SHOWN = 8  # matches shown at most
PREVIOUS = ("up", "shift+tab", "ctrl+p")
NEXT = ("down", "ctrl+n")
ACCEPT = ("tab", "enter")


class CompletionList(Static):
    """The matches, one a row, the chosen one marked; a note row below when needed."""

    DEFAULT_CSS = """
    CompletionList {
        height: auto; display: none; background: $panel; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    CompletionList.shown { display: block; }
    CompletionList > .completion--match { color: $accent; text-style: bold; }
    CompletionList > .completion--chosen { background: $boost; text-style: bold; }
    CompletionList > .completion--note { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "completion--match",
        "completion--chosen",
        "completion--note",
    }

    def show(self, matches: list[Match], chosen: int, note: str) -> None:
        # Only the colour of a match and the background of the chosen row, so that a
        # chosen row's matches keep both.
        found = self.get_component_rich_style("completion--match")
        match = Style(color=found.color, bold=found.bold)
        chosen_style = self.get_component_rich_style("completion--chosen")
        picked = Style(bgcolor=chosen_style.bgcolor, bold=chosen_style.bold)
        rows: list[Text] = []
        room = max(16, self.app.size.width - 6)  # a longer path shows its end: …/name.py
        for i, (path, positions) in enumerate(matches):
            cut = max(0, len(path) - room)
            row = Text("▸ " if i == chosen else "  ")
            row.append(f"…{path[cut + 1 :]}" if cut else path)
            if i == chosen:
                row.stylize(picked)
            for at in positions:
                if at > cut:
                    row.stylize(match, at - cut + 2, at - cut + 3)
            rows.append(row)
        if note:
            rows.append(Text(note, style=self.get_component_rich_style("completion--note")))
        self.update(Text("\n").join(rows))
        self.set_class(True, "shown")

    def hide(self) -> None:
        self.set_class(False, "shown")


class PathCompletion:
    """The editor's `@` completion: where the word being completed is, its matches and
    the chosen one, and the keys that act on them while they show."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.list = CompletionList(id="completion", markup=False)
        self.files = ProjectFiles(self._spawn)
        self.matches: list[Match] = []
        self.chosen = 0
        self.shown = False  # the list is on screen (it owns Escape; Enter with matches)
        self._word: tuple[int, int, int] | None = None  # row, start (the @), end
        self._dismissed: tuple[int, int] | None = None  # the word Escape closed

    def mount(self) -> None:
        """Put the list above the editor (beside it in its parent)."""
        parent = self.editor.parent
        if isinstance(parent, Widget):
            parent.mount(self.list, before=self.editor)

    # -- following the text --------------------------------------------------------

    def update(self, *, keep: bool = False) -> None:
        """Show the matches of the `@` word at the cursor, or hide the list (`keep`: the
        chosen path stays chosen if it is still there, as when a new list arrives)."""
        found = self._current_word()
        if found is None:
            self._dismissed = None
            self.close()
            return
        row, start, end, query = found
        if self._dismissed == (row, start):
            return
        self._word = (row, start, end)
        opening = not self.shown
        self.shown = True
        lister = self._lister()
        if lister is not None and (self.files.listing is None or (opening and self.files.stale())):
            self.files.start(lister, self._arrived)
        self._show(query, keep)

    def _show(self, query: str, keep: bool = False) -> None:
        listing = self.files.listing
        if listing is None:
            self.matches = []
            self.list.show([], 0, "listing files…")
            return
        before = self.matches[self.chosen][0] if keep and self.matches else None
        self.matches = listing.index.top(query, SHOWN, skip=query)
        paths = [path for path, _ in self.matches]
        self.chosen = paths.index(before) if before in paths else 0
        note = listing.note or ("" if self.matches else f"no path matches '{query}'")
        self.list.show(self.matches, self.chosen, note)

    def _arrived(self, listing: Listing) -> None:
        if self.shown:
            self.update(keep=True)

    def _current_word(self) -> tuple[int, int, int, str] | None:
        """(row, start, end, query) of the word starting with `@` around the cursor,
        the query being what lies between the @ and the cursor; None if there is none."""
        editor = self.editor
        if not editor.selection.is_empty or editor.read_only:
            return None
        row, column = editor.cursor_location
        line = editor.document[row]
        start = column
        while start > 0 and not line[start - 1].isspace():
            start -= 1
        if start == column or line[start] != "@":
            return None
        end = column
        while end < len(line) and not line[end].isspace():
            end += 1
        query = line[start + 1 : column]
        return None if "@" in line[start + 1 : end] else (row, start, end, query)

    # -- keys ------------------------------------------------------------------------

    def key(self, key: str) -> bool:
        """Act on `key` if the list takes it now; whether it did."""
        if not self.shown:
            return False
        if key == "escape":
            self.dismiss()
            return True
        if not self.matches:
            return False
        if key in PREVIOUS or key in NEXT:
            step = -1 if key in PREVIOUS else 1
            self.chosen = (self.chosen + step) % len(self.matches)
            listing = self.files.listing
            self.list.show(self.matches, self.chosen, listing.note if listing else "")
            return True
        if key in ACCEPT:
            self.accept()
            return True
        return False

    def accept(self) -> None:
        """Replace the word with the chosen path (a file's followed by a space)."""
        if self._word is None or not self.matches:
            return
        row, start, end = self._word
        path = self.matches[self.chosen][0]
        line = self.editor.document[row]
        space = "" if path.endswith("/") or line[end : end + 1].isspace() else " "
        self.editor.replace(f"@{path}{space}", (row, start), (row, end))
        column = start + 1 + len(path) + (1 if not path.endswith("/") else 0)
        self.editor.move_cursor((row, column))
        self.update()  # a directory keeps completing; a file's space ends the word

    def dismiss(self) -> None:
        """Escape: closed until the cursor leaves this word."""
        if self._word is not None:
            self._dismissed = self._word[:2]
        self.close()

    def close(self) -> None:
        self.shown = False
        self.matches = []
        self._word = None
        self.list.hide()

    # -- where the paths come from ---------------------------------------------------

    def _lister(self) -> Lister | None:
        """The project's files as the app's runtime lists them (its ListFiles operation:
        its working directory, its ignores); None before it has one."""
        runtime = getattr(self.editor.app, "runtime", None)
        return None if runtime is None else runtime_lister(runtime)

    def _spawn(self, work: Callable[[], Listing], then: Callable[[Listing], None]) -> None:
        app = self.editor.app

        def run() -> None:
            listing = work()
            app.call_from_thread(then, listing)

        self.editor.run_worker(run, thread=True, group="complete-files", exit_on_error=False)


__all__ = ["CompletionList", "PathCompletion"]
