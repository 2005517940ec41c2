"""`/diff`'s pager: a turn's file changes, file by file, each a unified diff in its
language's colours (the transcript's review rendering, frontends/tui/_review.py).

n / p (or ] / [) go to the next / previous file, the arrows and page keys scroll,
Escape or q closes it (the line under the title says so). Each file's diff is coloured
when the pager opens; a file's diff over LIMIT lines is cut (the rest is in the session:
`smith diff` prints it all).
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from smith.text import inert

from ._review import colour_diff, counts

LIMIT = 2000  # lines of one file's diff the pager shows
_FILE = re.compile(r"^diff --git a/(.*?) b/(.*)$", re.M)

CSS = """
DiffScreen { align: center middle; }
DiffScreen > Vertical {
    width: 95%; height: 90%; border: round $accent; background: $surface; padding: 0 1;
}
DiffScreen .title { text-style: bold; padding-bottom: 1; }
DiffScreen .file { text-style: bold; color: $accent; padding-top: 1; }
"""


def split_files(patch: str) -> list[tuple[str, str]]:
    """(path, its part of `patch`) for each file of a git-style unified diff; one part
    named "changes" when the patch names no file."""
    starts = list(_FILE.finditer(patch))
    if not starts:
        return [("changes", patch)] if patch.strip() else []
    parts = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(patch)
        parts.append((match.group(2), patch[match.start() : end]))
    return parts


class DiffScreen(ModalScreen[None]):
    DEFAULT_CSS = CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "close"),
        Binding("n,right_square_bracket", "file(1)", "next file"),
        Binding("p,left_square_bracket", "file(-1)", "previous file"),
    ]

    def __init__(self, title: str, summary: str, patch: str) -> None:
        super().__init__()
        self.title_text = title
        self.summary = summary
        self.files = split_files(patch)
        self.at = 0

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(inert(self.title_text), classes="title", markup=False)
            yield Static(f"{inert(self.summary)}  (n/p: next/previous file, Esc or q: close)",
                         markup=False)  # fmt: skip
            with VerticalScroll(id="diff-body"):
                for n, (path, part) in enumerate(self.files):
                    added, removed = counts(part)
                    head = Text(f"{inert(path)}  +{added} -{removed}")
                    yield Static(head, classes="file", id=f"file-{n}")
                    yield Static(colour_diff(part, path, LIMIT), markup=False)

    def on_mount(self) -> None:
        self.query_one("#diff-body", VerticalScroll).focus()

    def action_file(self, step: int) -> None:
        if not self.files:
            return
        self.at = max(0, min(len(self.files) - 1, self.at + step))
        body = self.query_one("#diff-body", VerticalScroll)
        body.scroll_to_widget(self.query_one(f"#file-{self.at}"), top=True, animate=False)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
