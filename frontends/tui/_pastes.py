"""Long pastes in the editor: each is shown as a chip (`[pasted #2 50 lines]`) and sent
as pasted, whatever editing happened to the chip.

`Pastes` is the editor's chip -> paste mapping. It only grows, for as long as the editor
lives: a chip deleted and brought back (Ctrl+Z, Ctrl+Y, Ctrl+X then Ctrl+V, a message
sent back by a refusal) still stands for its paste. Each paste gets a number of its own,
so two pastes of the same length never share a chip. A chip is expanded only when its
whole text is present and it was pasted: text typed to look like one stays as typed.
The expansion is one pass, so a paste that itself holds chip-like text is sent as it is.

A prompt recalled from the history (or a draft brought back, `_history`) brings its
pastes with it; they are taken in under numbers free here (`adopt`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from smith.text import counted

CHIP = re.compile(r"\[pasted #(\d+) ([\d,]+) lines?\]")


def chip_for(number: int, text: str) -> str:
    return f"[pasted #{number} {counted(len(text.splitlines()), 'line')}]"


def expand(text: str, pastes: Mapping[str, str]) -> str:
    """`text` with each whole chip `pastes` knows replaced by its paste (one pass)."""
    if "[pasted #" not in text:
        return text
    return CHIP.sub(lambda m: pastes.get(m[0], m[0]), text)


class Pastes(dict[str, str]):
    """chip -> the text it stands for: every paste of this editor, never dropped."""

    def __init__(self) -> None:
        super().__init__()
        self._next = 1

    def add(self, text: str) -> str:
        """Keep `text` under a new chip; the chip."""
        chip = chip_for(self._next, text)
        while chip in self:  # taken by a chip put in with `update`
            self._next += 1
            chip = chip_for(self._next, text)
        self._next += 1
        self[chip] = text
        return chip

    def expand(self, text: str) -> str:
        return expand(text, self)

    def present(self, text: str) -> dict[str, str]:
        """The pastes whose chips `text` holds."""
        if "[pasted #" not in text:
            return {}
        return {m[0]: self[m[0]] for m in CHIP.finditer(text) if m[0] in self}

    def adopt(self, text: str, pastes: Mapping[str, str]) -> str:
        """`text` (from elsewhere: the history, a draft) with the chips of its `pastes`
        made this editor's: kept as they are when they already stand for the same paste
        here, else renumbered. Chips `pastes` does not know stay as they are."""
        if not pastes:
            return text
        renamed: dict[str, str] = {}

        def own(m: re.Match[str]) -> str:
            chip = m[0]
            if chip not in pastes:
                return chip
            if chip not in renamed:
                pasted = pastes[chip]
                renamed[chip] = chip if self.get(chip) == pasted else self.add(pasted)
            return renamed[chip]

        return CHIP.sub(own, text)

    def around(self, line: str, column: int, *, before: bool) -> tuple[int, int] | None:
        """The columns of the known chip that ends (`before`) or starts at `column` of
        `line`; None if there is none."""
        if "[pasted #" not in line:
            return None
        for m in CHIP.finditer(line):
            edge = m.end() if before else m.start()
            if edge == column and m[0] in self:
                return m.start(), m.end()
        return None


__all__ = ["CHIP", "Pastes", "chip_for", "expand"]
