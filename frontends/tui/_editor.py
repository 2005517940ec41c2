"""The app's editor: multi-line input on Textual's TextArea.

Enter sends (the editor posts `Editor.Submitted`); Ctrl+J, and Shift+Enter where the
terminal reports it, insert a newline. The editor grows with its content up to
`max_lines` rows (tui.editor.max-lines), then scrolls. `/na` shows the rest of the first
command named so as a suggestion (Right arrow takes it). A paste of more than
`PASTE_LINES` lines is shown as one chip (`[pasted 120 lines]`) and sent whole: `value`
is the text with every chip still in it replaced by its paste. `@` completes project
paths (`completion`, _complete).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from ._complete import PathCompletion
from ._history import PromptHistory

PASTE_LINES = 5  # a paste of more lines than this is shown collapsed
NEWLINE_KEYS = ("ctrl+j", "shift+enter")
# Keys that keep their own meaning while the agent is idle: bound to steer or follow-up,
# they send only while it works (Tab moves the focus otherwise).
WHILE_BUSY = frozenset({"tab"})


class Editor(TextArea):
    DEFAULT_CSS = """
    Editor { height: auto; min-height: 3; }
    """
    # Page Up/Down scroll the transcript, as they did over the one-line input.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "app.page(-1)", show=False),
        Binding("pagedown", "app.page(1)", show=False),
    ]

    class Submitted(Message):
        """The user sent the editor's text; `mode` says how (see `submit_keys`). The
        editor is already empty: keys typed after the one that sent are the next
        message's, however soon they come."""

        def __init__(self, editor: Editor, text: str, pastes: dict[str, str], mode: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text  # as it stood, chips and all
            self.pastes = pastes
            self.mode = mode

        @property
        def value(self) -> str:
            """What to send: the text stripped of what was typed around it, each chip
            replaced by its paste (a paste is sent as pasted)."""
            text = self.text.strip()
            for chip, pasted in self.pastes.items():
                text = text.replace(chip, pasted)
            return text

        @property
        def control(self) -> Editor:
            return self.editor

    def __init__(
        self,
        *,
        suggest: Callable[[str], str | None] = lambda text: None,
        submit_keys: Mapping[str, str] | None = None,
        max_lines: int = 8,
        history: PromptHistory | None = None,
        busy: Callable[[], bool] = lambda: False,
        placeholder: str = "",
        id: str | None = None,
    ) -> None:
        super().__init__(
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            placeholder=placeholder,
            id=id,
        )
        self._suggest = suggest
        self._busy = busy
        # key -> the mode it sends in; Enter sends ("prompt") unless it is bound here.
        self.submit_keys = {"enter": "prompt", **(submit_keys or {})}
        self.max_lines = max_lines
        self.pastes: dict[str, str] = {}  # chip -> the text it stands for
        self.prompts = history if history is not None else PromptHistory(None)
        self._walk: int | None = None  # the history entry shown, while walking it
        self._draft: tuple[str, dict[str, str]] = ("", {})  # the editor's before a walk
        self.completion = PathCompletion(self)

    def on_mount(self) -> None:
        # The border takes a row above and below the text.
        self.styles.max_height = self.max_lines + 2
        self.completion.mount()

    def on_text_area_changed(self) -> None:
        self.completion.update()

    def on_text_area_selection_changed(self) -> None:
        self.completion.update()

    # -- the text ----------------------------------------------------------------------

    @property
    def value(self) -> str:
        """The text to send: as typed, with each paste chip replaced by its paste."""
        return self.expand_pastes(self.text)

    @value.setter
    def value(self, text: str) -> None:
        self._walk = None
        self.pastes.clear()
        self.load_text(text)
        self.move_cursor(self.document.end)

    def expand_pastes(self, text: str) -> str:
        for chip, pasted in self.pastes.items():
            text = text.replace(chip, pasted)
        return text

    def clear_text(self) -> None:
        self.value = ""

    def update_suggestion(self) -> None:
        """The rest of a command name, while the cursor ends a one-line `/na`."""
        text = self.text
        at_end = self.selection.is_empty and self.cursor_location == self.document.end
        full = self._suggest(text) if at_end and "\n" not in text else None
        self.suggestion = full[len(text) :] if full and full.startswith(text) else ""

    # -- history -----------------------------------------------------------------------

    def action_cursor_up(self, select: bool = False) -> None:
        """Up at the first row shows the previous entry of the history."""
        if select or not self.navigator.is_first_wrapped_line(self.cursor_location):
            super().action_cursor_up(select)
        elif self.prompts.entries and self._walk != 0:
            self._show_entry(len(self.prompts.entries) if self._walk is None else self._walk)

    def action_cursor_down(self, select: bool = False) -> None:
        """Down at the last row shows the next entry, then what was being written."""
        last = self.navigator.is_last_wrapped_line(self.cursor_location)
        if select or self._walk is None or not last:
            super().action_cursor_down(select)
        elif self._walk + 1 < len(self.prompts.entries):
            self._show_entry(self._walk + 2)
        else:
            text, pastes = self._draft  # the walk ends where it began
            self.value = text
            self.pastes.update(pastes)

    def _show_entry(self, after: int) -> None:
        """Show the entry before index `after` (walking back from the newest)."""
        if self._walk is None:
            self._draft = (self.text, dict(self.pastes))
        walk = after - 1
        self.value = self.prompts.entries[walk]
        self._walk = walk

    # -- keys and paste ----------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        if self.read_only:
            return
        mode = self.submit_keys.get(event.key)
        if self.completion.key(event.key):  # the open list's keys come first
            event.stop()
            event.prevent_default()
        elif mode is not None and (event.key not in WHILE_BUSY or self._busy()):
            event.stop()
            event.prevent_default()  # not TextArea's newline
            sent = self.Submitted(self, self.text, dict(self.pastes), mode)
            self.clear_text()
            self.post_message(sent)
        elif event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self._insert("\n")

    async def _on_paste(self, event: events.Paste) -> None:
        """Every character of a paste is kept; a long one is shown as a chip."""
        if self.read_only:
            return
        event.prevent_default()  # not TextArea's own insertion
        # Terminals paste line ends as CR (xterm) or CRLF: they are newlines here.
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        lines = len(text.splitlines())
        if lines <= PASTE_LINES:
            self._insert(text)
            return
        chip = f"[pasted {lines} lines]"
        n = 1
        while chip in self.pastes:
            n += 1
            chip = f"[pasted {lines} lines #{n}]"
        self.pastes[chip] = text
        self._insert(chip)

    def action_delete_left(self) -> None:
        """Backspace just after a paste chip deletes the chip (and its paste) whole."""
        if not self._delete_chip(before=True):
            super().action_delete_left()

    def action_delete_right(self) -> None:
        if not self._delete_chip(before=False):
            super().action_delete_right()

    def _delete_chip(self, *, before: bool) -> bool:
        if self.read_only or not self.pastes or not self.selection.is_empty:
            return False
        row, column = self.cursor_location
        line = self.document[row]
        for chip in self.pastes:
            start = column - len(chip) if before else column
            if start >= 0 and line[start : start + len(chip)] == chip:
                self.delete((row, start), (row, start + len(chip)))
                if chip not in self.text:
                    del self.pastes[chip]
                return True
        return False

    def _insert(self, text: str) -> None:
        start, end = self.selection
        result = self.replace(text, start, end, maintain_selection_offset=False)
        self.move_cursor(result.end_location)
        self.focus()


def submit_keys(keys: Mapping[str, str]) -> dict[str, str]:
    """Editor key -> how it sends, from tui.keys.steer and tui.keys.follow-up."""
    modes = {"steer": "steer", "follow-up": "follow_up"}
    return {
        key.strip(): mode
        for name, mode in modes.items()
        for key in keys.get(name, "").split(",")
        if key.strip()
    }


def placeholder(keys: Mapping[str, str]) -> str:
    """What the empty editor says, with the keys as configured."""

    def shown(name: str) -> str:
        key = keys.get(name, "").split(",")[0].strip()
        return "+".join(part.capitalize() for part in key.split("+") if part)

    steer, follow = shown("steer"), shown("follow-up")
    later = ", ".join(x for x in (steer and f"{steer} steers", follow and f"{follow} queues") if x)
    return "Ask smith…  (Enter sends, Ctrl+J: new line" + (
        f"; while it works {later})" if later else ")"
    )
