"""The transcript: one line-API scroll view over blocks (messages, notices, live output).

Its cost follows what is visible, not the history: a block is a key and a function that
builds its renderable (decoding a session entry only then); it is rendered to lines only
when some of its rows are on screen, and its height is an estimate until then. Heights
sit in a Fenwick tree, so mapping a row to (block, line) and updating a height after
rendering are O(log n) in a 100,000-entry session.

While the view is at the bottom it follows new output; scrolled away, it never moves on
its own and `unseen` says new output is waiting below (the app shows a marker and a key
returns to the latest).

Text selection (a mouse drag) is Textual's: each line carries offsets metadata, and its y
is not a screen row but (block slot, line) packed in one int (`STRIDE`). Slots only grow
and never move, so a selection stays on the same text while output arrives below, the
view scrolls, or blocks above get their real heights.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from itertools import repeat
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

ESTIMATE = 3  # rows assumed for a block not rendered yet
STRIDE = 1 << 24  # a selection row is slot * STRIDE + line (no block has 16M lines)


class Heights:
    """Block heights with prefix sums (a Fenwick tree): row -> block in O(log n)."""

    def __init__(self) -> None:
        self._values: list[int] = []
        self._tree: list[int] = [0]

    def __len__(self) -> int:
        return len(self._values)

    def append(self, value: int) -> None:
        self._values.append(value)
        i = len(self._values)
        # The new node covers (i - lowbit(i), i]: its own value plus earlier sums.
        low = i & -i
        total = value
        j = i - 1
        while j > i - low:
            total += self._tree[j]
            j -= j & -j
        self._tree.append(total)

    def extend(self, value: int, count: int) -> None:
        """`count` blocks of `value` rows at the end: what as many appends make, in one
        pass (a node covering only new blocks holds its width times `value`; the few
        that also cover earlier blocks, the update path of the last old one, are summed)."""
        n0 = len(self._values)
        self._values.extend([value] * count)
        end = n0 + count
        self._tree.extend([(i & -i) * value for i in range(n0 + 1, end + 1)])
        if not n0:
            return
        base = self.before(n0)  # old nodes only: the new ones are past n0
        i = n0 + (n0 & -n0)
        while i <= end:
            self._tree[i] = base + (i - n0) * value - self.before(i - (i & -i))
            i += i & -i

    def __getitem__(self, i: int) -> int:
        return self._values[i]

    def set(self, i: int, value: int) -> None:
        delta = value - self._values[i]
        self._values[i] = value
        j = i + 1
        while j < len(self._tree):
            self._tree[j] += delta
            j += j & -j

    def before(self, i: int) -> int:
        """Rows above block i."""
        total = 0
        while i > 0:
            total += self._tree[i]
            i -= i & -i
        return total

    def total(self) -> int:
        return self.before(len(self._values))

    def find(self, row: int) -> int:
        """The block holding `row` (the last block for rows past the end)."""
        pos, step = 0, 1 << max(0, len(self._tree).bit_length() - 1)
        while step:
            nxt = pos + step
            if nxt < len(self._tree) and self._tree[nxt] <= row:
                pos = nxt
                row -= self._tree[nxt]
            step >>= 1
        return min(pos, len(self._values) - 1)

    def pop(self) -> None:
        self.set(len(self._values) - 1, 0)
        self._values.pop()
        self._tree.pop()


Source = Callable[[bool], "RenderableType | None"]  # (expanded) -> what to show


class Block:
    """One message or notice. A recorded entry keeps just the Entry (its content is
    decoded only when shown or searched); anything else keeps functions."""

    __slots__ = ("entry", "key", "source", "strips", "text", "width")

    def __init__(
        self,
        key: str,
        source: Source | None,
        text: Callable[[], str] | None,
        entry: Any = None,
    ) -> None:
        self.key = key
        self.source = source
        self.text = text  # its plain text, for search (None: not searchable)
        self.entry = entry
        self.strips: list[Strip] | None = None
        self.width = 0


class Transcript(ScrollView, can_focus=True):
    """Messages as they are recorded and as they stream."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    """
    unseen: reactive[bool] = reactive(False)

    class Scrolled(Message):
        """The view moved away from the bottom or came back to it."""

        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    def __init__(
        self,
        render_entry: Callable[[Any, bool], RenderableType | None] = lambda e, x: None,
        entry_text: Callable[[Any], str] = lambda e: "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.render_entry = render_entry  # how a recorded entry looks (expanded or not)
        self.entry_text = entry_text  # its text for search
        self.blocks: list[Block] = []
        self.heights = Heights()
        self.index: dict[str, int] = {}
        self.following = True
        self.expanded: set[str] = set()  # keys of blocks shown in full
        self.all_expanded = False
        self.search_query = ""  # highlighted on screen while a search is open
        self._serial = 0
        # Each block's slot: increasing, never reused (see STRIDE).
        self.slots: list[int] = []
        self._next_slot = 0
        # Textual's selection of this widget, and it with open ends made concrete.
        self._selection: tuple[Selection, Selection] | None = None
        self._wrapped_at = 0  # the width blocks were last wrapped at
        self._painting = False  # inside render_lines (a frame), not a hit test

    # -- content ---------------------------------------------------------------------

    def add(
        self,
        key: str,
        source: Callable[[], RenderableType | None] | Source,
        *,
        text: Callable[[], str] | None = None,
        expandable: bool = False,
    ) -> None:
        """Add a block at the end, or rebuild the block with this key in place. An
        `expandable` block's source takes whether it is expanded (click or Ctrl+O)."""
        if expandable:
            build: Source = source  # type: ignore[assignment]
        else:
            fixed: Callable[[], RenderableType | None] = source  # type: ignore[assignment]
            build = lambda expanded: fixed()  # noqa: E731
        block = Block(key, build, text)
        if key in self.index:
            self.blocks[self.index[key]] = block
            self._changed()
            return
        self.index[key] = len(self.blocks)
        self.blocks.append(block)
        self.heights.append(ESTIMATE)
        self._new_slot()
        self._changed()

    def _new_slot(self) -> None:
        self.slots.append(self._next_slot)
        self._next_slot += 1

    def rekey(self, old: str, new: str) -> None:
        """Give a block another key (the streaming message's tail becomes a settled
        part of it, and a new tail follows)."""
        i = self.index.pop(old)
        self.index[new] = i
        self.blocks[i].key = new

    def add_entries(self, entries: list[Any], ids: list[str] | None = None) -> None:
        """Add recorded entries at the end (`ids`: theirs, if known): one update for all
        of them, however many. A resumed session's 100,000 are added in bulk (index,
        blocks, heights and slots each in one pass); an entry already shown, or repeated,
        is skipped."""
        ids = [e.id for e in entries] if ids is None else ids
        index, start = self.index, len(self.blocks)
        fresh = dict(zip(ids, range(start, start + len(ids)), strict=True))
        if len(fresh) == len(ids) and fresh.keys().isdisjoint(index):  # all new, distinct
            index.update(fresh)
            self.blocks += map(Block, ids, repeat(None), repeat(None), entries)
        else:
            for eid, entry in zip(ids, entries, strict=True):
                if eid not in index:
                    index[eid] = len(self.blocks)
                    self.blocks.append(Block(eid, None, None, entry))
        count = len(self.blocks) - start
        self.heights.extend(ESTIMATE, count)
        self.slots += range(self._next_slot, self._next_slot + count)
        self._next_slot += count
        self._changed()

    def drop(self, key: str) -> None:
        """Take away the block with this key, wherever it is (live output replaced by its
        record). The last block goes; one further up is emptied to no rows, so the row
        map stays valid."""
        i = self.index.pop(key, None)
        if i is None:
            return
        if i == len(self.blocks) - 1:
            self.blocks.pop()
            self.heights.pop()
            self.slots.pop()
        else:
            self.blocks[i] = Block(f"removed-{key}-{i}", lambda expanded: None, None)
            self.heights.set(i, 0)
        self._changed()

    def unique(self, prefix: str) -> str:
        """A key no block has had (notices, which have no identity of their own)."""
        self._serial += 1
        return f"{prefix}-{self._serial}"

    def clear(self) -> None:
        self.blocks.clear()
        self.heights = Heights()
        self.index.clear()
        self.slots.clear()
        self.following = True
        self.unseen = False
        self._changed()

    def block_keys(self) -> list[str]:
        return [b.key for b in self.blocks]

    def _width(self) -> int:
        return self.scrollable_content_region.width

    def _to_bottom(self) -> None:
        # force: while the content is short there is no scrollbar, and Textual would
        # ignore the scroll, leaving a following view at the top once content grows.
        self.scroll_end(animate=False, immediate=True, force=True)

    def _changed(self) -> None:
        self.virtual_size = Size(self._width(), self.heights.total())
        if self.following:
            self._to_bottom()
        else:
            self.unseen = True
        self.refresh()

    # -- scrolling ---------------------------------------------------------------------

    def at_bottom(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        following = self.at_bottom()
        if following != self.following:
            self.following = following
            self.post_message(self.Scrolled(following))
        if following:
            self.unseen = False

    def latest(self) -> None:
        """Back to the newest output, following it again."""
        self.following = True
        self.unseen = False
        self._to_bottom()

    # -- rendering ---------------------------------------------------------------------

    def _render_block(self, i: int, width: int) -> list[Strip]:
        block = self.blocks[i]
        if block.strips is not None and block.width == width:
            return block.strips
        expanded = self.all_expanded or block.key in self.expanded
        try:
            if block.source is not None:
                renderable = block.source(expanded)
            else:
                renderable = self.render_entry(block.entry, expanded)
        except Exception as exc:  # one odd entry must not take the app down
            renderable = Text(f"(this entry cannot be shown: {type(exc).__name__})", "dim red")
        strips: list[Strip] = []
        if renderable is not None:
            options = self.app.console.options.update_width(max(1, width))
            lines = self.app.console.render_lines(renderable, options, pad=True)
            strips = [Strip(line, width) for line in lines]
            strips.append(Strip.blank(width))  # a gap between messages
        block.strips, block.width = strips, width
        if self.heights[i] != len(strips):
            self.heights.set(i, len(strips))
        return strips

    def _materialize(self) -> None:
        """Render every block with rows on screen, so this frame's heights are exact.
        A following view shows the last rows, so it renders from the last block up:
        rendering from the old position down left the block that scrolling to the new
        bottom brought in at its estimate (its end hidden until something else moved the
        view, issue 27)."""
        width = self._width()
        if not self.blocks or width <= 0:
            return
        before = self.heights.total()
        height = self.scrollable_content_region.height
        if self.following:
            i, rows = len(self.blocks) - 1, 0
            while i >= 0 and rows < height:
                rows += len(self._render_block(i, width))
                i -= 1
        else:
            top = int(self.scroll_y)
            i = self.heights.find(top)
            row = self.heights.before(i)
            while i < len(self.blocks) and row < top + height:
                row += len(self._render_block(i, width))
                i += 1
        self._fit_size(before)

    def _fit_size(self, before: int) -> None:
        """After rendering changed heights (from `before` rows in all): the scrollable
        size follows them, and a following view goes to the new bottom."""
        if self.heights.total() != before:
            self.virtual_size = Size(self._width(), self.heights.total())
        if self.following and self.scroll_y != self.max_scroll_y:
            self._to_bottom()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._materialize()
        # Painting needs no offsets metadata (see render_line): only hit-testing does, and
        # Textual asks render_line for that line directly, so a stream's frames do not pay
        # for it (tests/test_tui_selection.py fails if that ever changes).
        self._painting = True
        try:
            return super().render_lines(crop)
        finally:
            self._painting = False
            if self.heights.total() != self.virtual_size.height:
                # A block drawn for the first time while painting (a row _materialize
                # did not reach): the next frame shows the layout its real height makes.
                self._fit_size(self.virtual_size.height)
                self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self._width()
        row = int(self.scroll_y) + y
        if not self.blocks or row >= self.heights.total():
            return Strip.blank(width)
        i = self.heights.find(row)
        strips = self._render_block(i, width)
        line = row - self.heights.before(i)
        if 0 <= line < len(strips):
            strip = strips[line]
            y = self.slots[i] * STRIDE + line
            if self.search_query:
                strip = _highlight(strip, self.search_query, self.app.console)
            if self._selection is not None:
                span = self._selection[1].get_span(y)
                if span is not None:
                    # Its background only: the theme's foreground is "transparent", which
                    # as a Rich colour is the background itself (invisible text).
                    selected = self.screen.get_component_rich_style("screen--selection")
                    style = Style(bgcolor=selected.bgcolor)
                    strip = _restyle(strip, span, style, self.app.console)
            if self._painting:
                return strip
            # Where each cell is in the text, for Textual's selection (cached per strip).
            return strip.apply_offsets(0, y)
        return Strip([Segment(" " * width, Style())], width)

    # -- expanding and searching -----------------------------------------------------

    def toggle(self, i: int) -> None:
        key = self.blocks[i].key
        self.expanded ^= {key}
        self.blocks[i].strips = None
        self.refresh()

    def toggle_all(self) -> None:
        self.all_expanded = not self.all_expanded
        self.screen.clear_selection()  # every block's lines change under it
        for block in self.blocks:
            block.strips = None
        self.refresh()

    def focus_on_click(self) -> bool:
        """Clicks and drags (expanding, selecting) leave the focus in the input, so the
        user can go on typing."""
        return False

    def on_click(self, event: Click) -> None:
        if self.text_selection is not None:
            return  # the end of a drag that selected text, not a click on a block
        row = int(self.scroll_y) + event.y
        if self.blocks and row < self.heights.total():
            self.toggle(self.heights.find(row))

    def find(self, query: str, before: int | None = None) -> int | None:
        """The nearest block above `before` (default: the bottom) whose text holds
        `query`, case-insensitively; blocks are decoded only as the search reaches them."""
        needle = query.lower()
        start = len(self.blocks) if before is None else min(before, len(self.blocks))
        for i in range(start - 1, -1, -1):
            block = self.blocks[i]
            if block.entry is not None:
                found = self.entry_text(block.entry)
            elif block.text is not None:
                found = block.text()
            else:
                continue
            if needle in found.lower():
                return i
        return None

    def show_block(self, i: int) -> None:
        """Scroll so block i is at the top (and stop following)."""
        self.following = False
        self.scroll_to(y=self.heights.before(i), animate=False, immediate=True)
        self.refresh()

    def top_block(self) -> int:
        return self.heights.find(int(self.scroll_y)) if self.blocks else 0

    def on_resize(self) -> None:
        if self._width() != self._wrapped_at:
            # Only a new width re-wraps: a new height (the queue line showing) keeps the
            # rendered lines, and the selection on them.
            self._wrapped_at = self._width()
            if self._selection is not None:
                self.screen.clear_selection()  # re-wrapped: it would cover other text
            for block in self.blocks:
                block.strips = None  # re-wrapped at the new width when next seen
        self.virtual_size = Size(self._width(), self.heights.total())
        if self.following:
            self._to_bottom()
        self.refresh()

    # -- selecting -------------------------------------------------------------------

    def selection_updated(self, selection: Selection | None) -> None:
        """Textual's selection changed (a drag, a double click, or cleared). An open end
        (the drag went on past this widget, or select-all) stops at the visible edge:
        the selection covers what is on screen, never the whole history."""
        if selection is None:
            self._selection = None
        else:
            start, end = selection
            top = int(self.scroll_y)
            bottom = top + max(1, self.size.height) - 1
            self._selection = (selection, Selection(
                start if start is not None else Offset(0, self._row_key(top)),
                end if end is not None else Offset(self._width(), self._row_key(bottom)),
            ))  # fmt: skip
        self.refresh()

    def _row_key(self, row: int) -> int:
        """The selection y of a content row (clamped to the content)."""
        if not self.blocks:
            return 0
        row = max(0, min(row, self.heights.total() - 1))
        i = self.heights.find(row)
        return self.slots[i] * STRIDE + max(0, row - self.heights.before(i))

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text as shown, without styles: what copying puts on the clipboard
        (control characters in it are already inert stand-ins)."""
        if self._selection is None or self._selection[0] != selection:
            self.selection_updated(selection)
        assert self._selection is not None
        start, end = self._selection[1]
        assert start is not None and end is not None
        width = self._width()
        lines: list[str] = []
        first = bisect_left(self.slots, start.y // STRIDE)
        for i in range(first, len(self.blocks)):
            slot = self.slots[i]
            if slot > end.y // STRIDE:
                break
            for line, strip in enumerate(self._render_block(i, width)):
                y = slot * STRIDE + line
                if start.y <= y <= end.y:
                    text = "".join(seg.text for seg in strip if not seg.control)
                    if y == end.y:
                        text = text[: end.x]
                    if y == start.y:
                        text = text[start.x :]
                    lines.append(text.rstrip())
        return "\n".join(lines), "\n"


def _restyle(strip: Strip, span: tuple[int, int], style: Style, console: Console) -> Strip:
    """`strip` with the characters in `span` (end -1: to the end) shown in `style`."""
    text = Text.assemble(*((seg.text, seg.style or "") for seg in strip if not seg.control))
    start, end = span
    text.stylize(style, start, len(text) if end == -1 else end)
    return Strip(list(text.render(console)), strip.cell_length)


def _highlight(strip: Strip, query: str, console: Console) -> Strip:
    """`strip` with every occurrence of `query` shown reversed."""
    text = Text.assemble(*((seg.text, seg.style or "") for seg in strip if not seg.control))
    if query.lower() not in text.plain.lower():
        return strip
    text.highlight_words([query], style="reverse", case_sensitive=False)
    return Strip(list(text.render(console)), strip.cell_length)
