"""The app's editor: multi-line input on Textual's TextArea.

Enter sends (the editor posts `Editor.Submitted`); Ctrl+J, and Shift+Enter where the
terminal reports it, insert a newline. The editor grows with its content up to
`max_lines` rows (tui.editor.max-lines), then scrolls. `/na` shows the rest of the first
command named so as a suggestion (Right arrow takes it). A paste of more than
`PASTE_LINES` lines is shown as one chip (`[pasted #1 120 lines]`) and sent whole: `value`
is the text with every chip still in it replaced by its paste, whatever was done to the
chip meanwhile (`_pastes`); a chip is edited only whole (`edit`). An image (a pasted or
typed path to an image file, or Ctrl+V of one on the system clipboard: `_images`) is a
chip too (`[image 1: shot.png 34 KB]`); `message` gives the text to send, each image chip
left as `[image N]`, and the images in the order their chips appear. `@` completes
project paths (`completion`, _complete).

What was being written is never lost: Ctrl+C clears it as an edit (Ctrl+Z undoes it) and
puts it first in Up's walk (`discard`), and the text left in the editor when the app
ends is kept as the session's draft and shown again when the session is opened
(`_history.Drafts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Location

from ._complete import PathCompletion
from ._history import Prompt, PromptHistory, images_of, pastes_of
from ._pastes import CHIP, Pastes, expand

if TYPE_CHECKING:
    from smith.runtime import Image

    from ._images import ImageInput

PASTE_LINES = 5  # a paste of more lines than this is shown collapsed
IMAGE_NUMBER = re.compile(r"\[image (\d+): ")
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

        def __init__(
            self,
            editor: Editor,
            text: str,
            pastes: dict[str, str],
            mode: str,
            images: dict[str, Image] | None = None,
        ) -> None:
            super().__init__()
            self.editor = editor
            self.text = text  # as it stood, chips and all
            self.pastes = pastes  # paste chip -> its paste, for the chips in `text`
            self.mode = mode
            self.images = images or {}  # image chip -> its image

        @property
        def value(self) -> str:
            """What to send: the text stripped of what was typed around it, each chip
            replaced by its paste (a paste is sent as pasted), each image chip left as
            `[image N]` (the image goes as a part of its own: `message`)."""
            return self.message()[0]

        def message(self) -> tuple[str, tuple[Image, ...]]:
            """The text to send (`value`) and the images whose chips it holds, in the
            order they appear."""
            text, found = self._typed()
            return expand(text, self.pastes), tuple(self.images[chip] for chip in found)

        def entry(self) -> Prompt:
            """The history's entry for it: the text to send with its paste chips left
            in, and their pastes (recalled, it shows the chips again)."""
            text = self._typed()[0]
            return Prompt(text, {c: p for c, p in self.pastes.items() if c in text})

        def _typed(self) -> tuple[str, list[str]]:
            """The text stripped, each image chip as `[image N]`; the image chips found,
            in the order they appear."""
            text = self.text.strip()
            found = sorted((text.find(chip), chip) for chip in self.images if chip in text)
            for _, chip in found:
                text = text.replace(chip, chip.split(":", 1)[0] + "]")
            return text, [chip for _, chip in found]

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
        images: ImageInput | None = None,
        notice: Callable[[str], None] = lambda text: None,
        session: Callable[[], str] | None = None,
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
        self.pastes = Pastes()  # chip -> the text it stands for: every paste, kept
        self.images: dict[str, Image] = {}  # chip -> the image it stands for
        self.image_input = images  # where images come from (None: no images)
        self.notice = notice  # tells the user why an image was not attached
        self._numbered = 0  # the last image number given in this message
        self.prompts = history if history is not None else PromptHistory(None)
        self._walk: int | None = None  # the history entry shown, while walking it
        self._walk_text = ""  # as it was shown
        self._draft = Prompt("")  # what was being written before the walk
        self._session = session  # the id of the session a draft is kept for
        self._draft_of: str | None = None  # the session whose draft was shown at start
        self._cleared = Prompt("")  # the draft last cleared with Ctrl+C
        self.completion = PathCompletion(self)

    def on_mount(self) -> None:
        # The border takes a row above and below the text.
        self.styles.max_height = self.max_lines + 2
        self.completion.mount()
        if self._session is not None:
            self._draft_of = self._session()
            found = self.prompts.drafts.load(self._draft_of)
            if found is not None and found[1]:  # cleared: first in Up's walk again
                self._cleared = found[0]
                self.prompts.remember(found[0])
            elif found is not None:
                self._show(found[0])

    def on_unmount(self) -> None:
        """The app ends: what is in the editor is the session's draft (when it is empty,
        the draft last cleared with Ctrl+C, if any)."""
        if self._session is None:
            return
        session = self._session()
        drafts, draft = self.prompts.drafts, self.unsent()
        drafts.problem = drafts.save(session, draft or self._cleared, cleared=not draft)
        if self._draft_of is not None and self._draft_of != session:
            drafts.drop(self._draft_of)  # it came along to the session switched to

    def unsent(self) -> Prompt:
        """What is being written, with its pastes and images (while Up's walk shows an
        entry unchanged, what was being written before the walk)."""
        walked = self._walk is not None and self.text == self._walk_text
        return self._draft if walked else self._current()

    def discard(self) -> bool:
        """Ctrl+C on a draft: clear it as an edit Ctrl+Z undoes, and put it first in Up's
        walk (for this run). False when there is nothing to clear."""
        if not self.text:
            return False
        if self._walk is not None:
            self.prompts.remember(self._draft)  # what was written before the walk, too
        if self._walk is None or self.text != self._walk_text:  # not an entry as it was
            self._cleared = self._current()
            self.prompts.remember(self._cleared)
        self._walk = None
        self._draft = Prompt("")
        self.clear()
        return True

    def _current(self) -> Prompt:
        text = self.text
        images = {chip: image for chip, image in self.images.items() if chip in text}
        return Prompt(text, self.pastes.present(text), images)

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
        self.images.clear()
        self._numbered = 0
        self.load_text(text)
        self.move_cursor(self.document.end)

    def expand_pastes(self, text: str) -> str:
        return self.pastes.expand(text)

    def clear_text(self) -> None:
        self.value = ""

    def restore(self, text: str, images: Sequence[Image]) -> None:
        """Show again a message `message` gave (refused, say): each `[image N]` its chip."""
        chips = {}
        for n, image in enumerate(images, 1):
            chip = f"[image {n}: {image.label()}]"
            text = text.replace(f"[image {n}]", chip, 1) if f"[image {n}]" in text else text
            chips[chip] = image
        self.value = text
        self.images.update(chips)
        self._numbered = len(images)

    def attach_image(self, image: Image) -> str:
        """Show `image` as a chip at the cursor; the chip."""
        self._numbered = self._numbered + 1 if self.images else 1
        chip = f"[image {self._numbered}: {image.label()}]"
        self.images[chip] = image
        self._insert(chip)
        note = self.image_input.model_note() if self.image_input is not None else None
        if note is not None:
            self.notice(note)
        return chip

    def _image_from(self, text: str) -> bool:
        """Attach the image file `text` names (a whole paste or word); False when it
        names none. One that cannot be sent is a notice saying why."""
        path = self.image_input.path_of(text) if self.image_input is not None else None
        if path is None or self.image_input is None:
            return False
        found = self.image_input.load(path)
        if isinstance(found, str):
            self.notice(found)
            return False
        self.attach_image(found)
        return True

    def _images_pasted(self, text: str) -> bool:
        """Attach the image files a paste names, when every line of it names one (a file
        manager pastes several files a line each); False when it is anything else, or
        one cannot be sent (a notice says why, and the paste stays text)."""
        source = self.image_input
        lines = [line for line in text.split("\n") if line.strip()]
        paths = [source.path_of(line) for line in lines] if source is not None else []
        if source is None or not paths or None in paths:
            return False
        found = [source.load(path) for path in paths if path is not None]
        for problem in (f for f in found if isinstance(f, str)):
            self.notice(problem)
        if any(isinstance(f, str) for f in found):
            return False
        for n, image in enumerate(found):
            assert not isinstance(image, str)
            if n:
                self._insert(" ")
            self.attach_image(image)
        return True

    def _image_word(self) -> None:
        """The word just before the cursor, when it names an image file, becomes its chip."""
        if self.image_input is None or not self.selection.is_empty:
            return
        row, column = self.cursor_location
        line = self.document[row][:column]
        start = max(line.rfind(" "), line.rfind("\t")) + 1
        word = line[start:]
        if "." not in word or word in self.images or word.startswith("@"):
            return  # an @path is attached by the runtime, as a file or as an image
        path = self.image_input.path_of(word)
        if path is not None:
            self.delete((row, start), (row, column))
            if not self._image_from(word):
                self._insert(word)  # kept as typed; the notice said why

    def action_paste(self) -> None:
        """Ctrl+V: an image from the system clipboard where one is reachable, else the
        app's own clipboard text (TextArea's paste), with a notice saying why. The
        clipboard is read in a worker, so a slow clipboard tool never stalls the app."""
        if self.image_input is None or self.read_only:
            super().action_paste()
            return
        self.run_worker(self._paste_image(), group="clipboard", exclusive=True)

    async def _paste_image(self) -> None:
        import asyncio

        assert self.image_input is not None
        found = await asyncio.to_thread(self.image_input.clipboard)
        if isinstance(found, str):
            self.notice(found)
            super().action_paste()
        else:
            self.attach_image(found)

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
            self._show(self._draft)  # the walk ends where it began

    def _show_entry(self, after: int) -> None:
        """Show the entry before index `after` (walking back from the newest)."""
        if self._walk is None:
            self._draft = self._current()
        walk = after - 1
        self._show(self.prompts.entries[walk])
        self._walk, self._walk_text = walk, self.text

    def take_back(self, text: str) -> None:
        """Show `text`, a message sent (queued, say) and taken back to edit: as it was
        typed, its pastes as their chips, when it is the newest history entry sent so."""
        for entry in reversed(self.prompts.entries):
            pastes = pastes_of(entry)
            if pastes and expand(str(entry), pastes) == text:
                self._show(entry)
                return
        self.value = text

    def recall(self, entry: str) -> None:
        """Show `entry` of the history (Ctrl+R), its chips standing for its pastes."""
        self._show(entry)

    def _show(self, entry: str) -> None:
        """Show `entry` (of the history, or a draft) with its pastes and images."""
        self.value = self.pastes.adopt(str(entry), pastes_of(entry))
        images = images_of(entry)
        self.images.update(images)
        numbers = [int(m[1]) for chip in images if (m := IMAGE_NUMBER.match(chip))]
        self._numbered = max(numbers, default=0)

    # -- keys and paste ----------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        if self.read_only:
            return
        mode = self.submit_keys.get(event.key)
        if self.completion.key(event.key):  # the open list's keys come first
            event.stop()
            event.prevent_default()
            return
        sends = mode is not None and (event.key not in WHILE_BUSY or self._busy())
        if sends or event.key == "space":
            self._image_word()  # a typed image path becomes its chip once it is whole
        if sends:
            assert mode is not None
            event.stop()
            event.prevent_default()  # not TextArea's newline
            text = self.text
            broken = self.pastes.broken(text)
            if broken is not None:  # never a placeholder for what was pasted
                self.notice(
                    f"not sent: `{broken}` is what is left of a paste's chip, and would be "
                    "sent instead of the paste. Ctrl+Z undoes the edit, or delete the whole chip."
                )
                return
            sent = self.Submitted(self, text, self.pastes.present(text), mode, dict(self.images))
            self.pastes.forget(sent.pastes)  # they go with the message (and its entry)
            self.clear_text()
            if self._session is not None:
                self.prompts.drafts.drop(self._session())  # sent: no longer a draft
            if self._cleared and str(self._cleared) == text:
                self._cleared = Prompt("")  # brought back and sent
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
        if self._images_pasted(text):  # the whole paste names image files, one a line
            return
        lines = len(text.splitlines())
        if lines <= PASTE_LINES:
            self._insert(text)
            return
        self._insert(self.pastes.add(text))

    def edit(self, edit: Edit) -> EditResult:
        """Every edit (typed, pasted, deleted, cut, by the API) keeps a chip whole: one
        that would change part of a paste or image chip takes in the whole chip instead
        (Backspace at its end or a selection over part of it deletes it all, as one edit
        Ctrl+Z undoes), and text put inside a chip goes after it. Undo and redo replay
        the edits as they were made."""
        start, end = sorted((edit.from_location, edit.to_location))
        around = self._around_chips(start, end)
        if around != (start, end):
            edit = Edit(edit.text, *around, edit.maintain_selection_offset)
        return super().edit(edit)

    def _around_chips(self, start: Location, end: Location) -> tuple[Location, Location]:
        """`start`..`end` (in order) grown to take in the chips it cuts into; an empty
        one inside a chip moved to the chip's end."""
        (top, left), (bottom, right) = start, end
        for chip_start, chip_end in self._chips(top):
            if chip_start < left < chip_end:
                left = chip_end if start == end else chip_start
        for chip_start, chip_end in self._chips(bottom) if start != end else ():
            if chip_start < right < chip_end:
                right = chip_end
        return (top, left), ((bottom, right) if start != end else (top, left))

    def _chips(self, row: int) -> list[tuple[int, int]]:
        """The columns of the paste and image chips on `row`."""
        line = self.document[row] if row < self.document.line_count else ""
        pastes = CHIP.finditer(line) if "[pasted #" in line else ()
        found = [m.span() for m in pastes if m[0] in self.pastes]
        for chip in self.images if "[image " in line else ():
            at = line.find(chip)
            while at >= 0:
                found.append((at, at + len(chip)))
                at = line.find(chip, at + len(chip))
        return found

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
