"""Completion in the app's editor: `@` completes project paths, `/` commands.

Typing `@` at the start of a word opens a list above the editor with the best matches of
what follows it (the fuzzy ranking of _fuzzy, over the paths of _files), the matched
characters highlighted. Up/Down (also Shift+Tab, Ctrl+P/Ctrl+N) move; Tab or Enter
accept: the word becomes `@PATH` and a space, or for a directory `@DIR/`, which keeps
completing inside it; Escape closes the list until the cursor leaves that word. Enter
while the list shows matches accepts rather than sends. The list follows the word as it
is typed and hides when the cursor leaves it. What is offered is what
smith.runtime.mentions reads back as that path, so an accepted path is attached as is.
Beside the paths, `@` offers what the app's plugins offer (Plugin.mentions, asked as the
list is drawn: the ready MCP servers' resources as `alias:uri`), first once what was
typed has a colon.

Typing `/` at the start of the message opens the same list over the commands and prompt
templates (`command_matches`: names starting with what was typed first, in the order
the plugins give them, then fuzzy matches of the name), each with its usage and
description, a window of SHOWN rows that follows the chosen one. Tab completes the name
and a space; Enter runs the chosen command when it needs no argument (as Claude Code
does: the editor sends `/name` and whatever follows it), else completes it like Tab.
While the list shows, Tab never moves the focus out of the editor. An entry that Up or
Down bring back from the prompt history opens no list (they go on walking it).
Nothing here is terminal-specific: the browser gets the same list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from ._files import Lister, Listing, ProjectFiles, runtime_lister
from ._fuzzy import Match, PathIndex, score

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from smith.sdk import Command

    from ._editor import Editor

SHOWN = 8  # matches shown at most
COLUMN = 20  # where the details (descriptions) start, at most
PREVIOUS = ("up", "shift+tab", "ctrl+p")
NEXT = ("down", "ctrl+n")
ACCEPT = ("tab", "enter")
# A row of the list: its text, the indices of its matched characters, and a detail shown
# dimmed after it (a command's description; "" for a path).
Row = tuple[str, tuple[int, ...], str]


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

    def show(self, rows: Sequence[Row], chosen: int, note: str, first: int = 0) -> None:
        """Rows `first` to `first + SHOWN` of `rows`, the chosen one marked; `note` below."""
        # Only the colour of a match and the background of the chosen row, so that a
        # chosen row's matches keep both.
        found = self.get_component_rich_style("completion--match")
        match = Style(color=found.color, bold=found.bold)
        chosen_style = self.get_component_rich_style("completion--chosen")
        picked = Style(bgcolor=chosen_style.bgcolor, bold=chosen_style.bold)
        muted = self.get_component_rich_style("completion--note")
        window = rows[first : first + SHOWN]
        room = max(16, self.app.size.width - 6)  # a longer path shows its end: …/name.py
        # Details line up after the texts (of all rows: the window may move), a longer
        # text pushing its own along.
        width = min(COLUMN, room // 2, max((len(text) for text, _, d in rows if d), default=0))
        lines: list[Text] = []
        for i, (text, positions, detail) in enumerate(window, first):
            cut = max(0, len(text) - room)
            row = Text("▸ " if i == chosen else "  ")
            row.append(f"…{text[cut + 1 :]}" if cut else text)
            if detail:
                row.append(" " * max(2, width - len(text) + 2))
                row.append(detail, style=Style(color=muted.color))
            if i == chosen:
                row.stylize(picked)
            for at in positions:
                if at > cut:
                    row.stylize(match, at - cut + 2, at - cut + 3)
            lines.append(row)
        if note:
            lines.append(Text(note, style=muted))
        self.update(Text("\n").join(lines))
        self.set_class(True, "shown")

    def hide(self) -> None:
        self.set_class(False, "shown")


class Completion:
    """The editor's completion (`@` paths, `/` commands): where the word being completed
    is, its matches and the chosen one, and the keys that act on them while they show."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.list = CompletionList(id="completion", markup=False)
        self.files = ProjectFiles(self._spawn)
        self.kind = ""  # "path" or "command": what the open list completes
        self.matches: list[Match] = []  # the texts offered (a path, or `/name`)
        self.commands: list[Command] = []  # the commands offered, as `matches` (commands)
        self.chosen = 0
        self.first = 0  # the first row shown (a window of SHOWN follows the chosen one)
        self.shown = False  # the list is on screen (it owns Escape, Tab; Enter with matches)
        self._word: tuple[int, int, int] | None = None  # row, start (the @ or /), end
        self._dismissed: tuple[int, int] | None = None  # the word Escape closed
        self._walking = False  # the last key walked the history (see `key`)
        self._mention_index: tuple[tuple[str, ...], PathIndex] | None = None

    def mount(self) -> None:
        """Put the list above the editor (beside it in its parent)."""
        parent = self.editor.parent
        if isinstance(parent, Widget):
            parent.mount(self.list, before=self.editor)

    # -- following the text --------------------------------------------------------

    def update(self, *, keep: bool = False) -> None:
        """Show the matches of the `@` or `/` word at the cursor, or hide the list
        (`keep`: the chosen match stays chosen if it is still there, as when a new list
        of paths arrives)."""
        found = self._current_word()
        if found is None:
            self._dismissed = None
            self.close()
            return
        kind, row, start, end, query = found
        if self._dismissed == (row, start):
            return
        if self._walking:
            self.close()
            return
        self._word = (row, start, end)
        opening = not self.shown or kind != self.kind
        self.shown = True
        self.kind = kind
        if kind == "command":
            self._show_commands(query, keep or not opening)
            return
        lister = self._lister()
        if lister is not None and (self.files.listing is None or (opening and self.files.stale())):
            self.files.start(lister, self._arrived)
        self._show(query, keep)

    def _show(self, query: str, keep: bool = False) -> None:
        listing = self.files.listing
        others = self._others(query)
        if listing is None and not others:
            self.matches = []
            self.list.show([], 0, "listing files…")
            return
        before = self.matches[self.chosen][0] if keep and self.matches else None
        paths = listing.index.top(query, SHOWN, skip=query) if listing is not None else []
        # What the plugins offer (an MCP resource, `alias:uri`) first once the query
        # names one (it has a colon), else after the paths.
        self.matches = [*others, *paths] if ":" in query else [*paths, *others]
        shown = [path for path, _ in self.matches]
        self.chosen = shown.index(before) if before in shown else 0
        self.first = 0
        note = listing.note if listing is not None else "listing files…"
        self._draw(note or ("" if self.matches else f"no path matches '{query}'"))

    def _others(self, query: str) -> list[Match]:
        """The best matches of `query` among what the app's plugins offer to `@` besides
        paths (Plugin.mentions: the ready MCP servers' resources as `alias:uri`)."""
        from smith.runtime import mentionable
        from smith.text import inert

        words: list[str] = []
        for plugin in getattr(self.editor.app, "plugins", ()):
            offer = getattr(plugin, "mentions", None)
            if offer is None:
                continue
            try:
                words += [w for w in offer() if mentionable(w) and inert(w) == w]
            except Exception:  # a plugin's bug never breaks the editor
                continue
        if not words:
            return []
        key = tuple(words)
        if self._mention_index is None or self._mention_index[0] != key:
            self._mention_index = (key, PathIndex(words))
        return self._mention_index[1].top(query, SHOWN, skip=query)

    def _show_commands(self, query: str, keep: bool) -> None:
        before = self.matches[self.chosen][0] if keep and self.matches else None
        offered: Sequence[Command] = getattr(self.editor.app, "plugin_commands", ())
        found = command_matches(query, offered)
        self.commands = [command for command, _ in found]
        self.matches = [(f"/{command.name}", tuple(p + 1 for p in at)) for command, at in found]
        names = [text for text, _ in self.matches]
        self.chosen = names.index(before) if before in names else 0
        self.first = 0
        self._draw()

    def _note(self) -> str:
        if self.kind == "command":
            if not self.matches:
                query = self._query()
                return f"no command matches '/{query}' (start with // to send a slash)"
            more = len(self.matches) - SHOWN
            return f"{more} more: ↑↓ to see them" if more > 0 and self.first == 0 else ""
        listing = self.files.listing
        return listing.note if listing else ""

    def _draw(self, note: str | None = None) -> None:
        """Show the matches, the window moved so that the chosen one is in it."""
        if self.chosen < self.first:
            self.first = self.chosen
        elif self.chosen >= self.first + SHOWN:
            self.first = self.chosen - SHOWN + 1
        if self.kind == "command":
            rows: list[Row] = [
                (f"{text} {c.usage}" if c.usage else text, at, c.description)
                for (text, at), c in zip(self.matches, self.commands, strict=True)
            ]
        else:
            rows = [(path, at, "") for path, at in self.matches]
        self.list.show(rows, self.chosen, self._note() if note is None else note, self.first)

    def _query(self) -> str:
        if self._word is None:
            return ""
        row, start, _ = self._word
        column = self.editor.cursor_location[1]
        return self.editor.document[row][start + 1 : column]

    def _arrived(self, listing: Listing) -> None:
        if self.shown and self.kind == "path":
            self.update(keep=True)

    def _current_word(self) -> tuple[str, int, int, int, str] | None:
        """(kind, row, start, end, query) of the word around the cursor that completes:
        one starting with `@` ("path"), or the message's first word when it starts with
        `/` ("command"; not `//`, which sends a slash); the query is what lies between
        the @ or / and the cursor. None if there is none."""
        editor = self.editor
        if not editor.selection.is_empty or editor.read_only:
            return None
        row, column = editor.cursor_location
        line = editor.document[row]
        start = column
        while start > 0 and not line[start - 1].isspace():
            start -= 1
        if start == column:
            return None
        end = column
        while end < len(line) and not line[end].isspace():
            end += 1
        query = line[start + 1 : column]
        if line[start] == "/" and row == 0 and start == 0 and not line.startswith("//"):
            return "command", row, start, end, query
        if line[start] != "@" or "@" in line[start + 1 : end]:
            return None
        return "path", row, start, end, query

    # -- keys ------------------------------------------------------------------------

    def key(self, key: str) -> bool:
        """Act on `key` if the list takes it now; whether it did."""
        if not self.shown:
            # Up or Down with no list walk the prompt history: an entry they bring back
            # (`/help`, `see @x.py`) opens no list, or the next Up or Down would move in
            # it rather than go on walking. A key that edits the text opens it again.
            self._walking = key in ("up", "down")
            return False
        if key == "escape":
            self.dismiss()
            return True
        if not self.matches:
            return key == "tab"  # Tab stays in the editor while the list shows
        if key in PREVIOUS or key in NEXT:
            step = -1 if key in PREVIOUS else 1
            self.chosen = (self.chosen + step) % len(self.matches)
            self._draw()
            return True
        if key in ACCEPT:
            # The text may have changed since the list was drawn: a key typed just
            # before reaches the text before its change reaches `update` (typing fast,
            # `/help` then Enter completed the word `/hel` it was drawn for: `/helpp`).
            if not self._follow():
                return False
            if not self.matches:
                return key == "tab"
            if self.kind == "command":
                return self.complete_command(run=key == "enter")
            self.accept()
            return True
        return False

    def _follow(self) -> bool:
        """Bring the list up to the text as it is now; whether it still shows."""
        self.update(keep=True)
        return self.shown

    def complete_command(self, *, run: bool) -> bool:
        """Replace the `/` word with the chosen command's name. Run (Enter): when the
        command needs no argument, or the message has one already, the name alone, and
        False, so the editor's Enter goes on to send it; else the name and a space, and
        True (the key was taken): the user types what follows."""
        if self._word is None or not self.matches:
            return True
        row, start, end = self._word
        command = self.commands[self.chosen]
        line = self.editor.document[row]
        rest = line[end:].strip() or "\n".join(self.editor.document.lines[1:]).strip()
        sends = run and (not needs_argument(command) or bool(rest))
        space = "" if sends or line[end : end + 1].isspace() else " "
        word = f"/{command.name}{space}"
        if line[start:end] != word:  # typed in full: nothing to change
            self.editor.replace(word, (row, start), (row, end))
            self.editor.move_cursor((row, start + len(word)))
        if sends:
            self.close()
            return False
        self.update()  # the space ends the word: the list closes
        return True

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
        self.kind = ""
        self.matches = []
        self.commands = []
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


def needs_argument(command: Command) -> bool:
    """Whether `command` cannot run without an argument: its usage names one that is not
    in brackets (`ENTRY [--force]`, not `[MODEL]`)."""
    return bool(command.usage) and not command.usage.lstrip().startswith("[")


def command_matches(
    query: str, commands: Sequence[Command]
) -> list[tuple[Command, tuple[int, ...]]]:
    """The commands `query` names, each with the indices of its name's matched characters:
    those whose name starts with it first (in the order given), then the rest whose name
    holds its characters in order, best first (_fuzzy's scoring)."""
    q = query.casefold()
    first = [(c, tuple(range(len(q)))) for c in commands if c.name.casefold().startswith(q)]
    ranked: list[tuple[int, int, Command, tuple[int, ...]]] = []
    for n, command in enumerate(commands):
        if command.name.casefold().startswith(q):
            continue
        found = score(query, command.name)
        if found is not None:
            ranked.append((-found[0], n, command, found[1]))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return first + [(command, at) for _, _, command, at in ranked]


# The editor's name for it from when it completed paths only.
PathCompletion = Completion

__all__ = ["Completion", "CompletionList", "PathCompletion", "command_matches", "needs_argument"]
