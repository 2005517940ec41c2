"""Long pastes in the editor: each is shown as a chip (`[pasted #2 50 lines]`) and sent
as pasted, whatever editing happened to the chip.

`Pastes` is the editor's chip -> paste mapping. A paste is kept while the message it
was pasted into is being written: a chip deleted and brought back (Ctrl+Z, Ctrl+Y,
Ctrl+X then Ctrl+V, a Ctrl+C clearing undone) still stands for its paste. Once its
message is sent (`forget`) the paste goes with the message (and its history entry), and
chip text typed later stays as typed; the entry recalled brings it back under its own
chip. Each paste gets a number of its own, so two pastes of the same length never share
a chip. A chip is expanded only when its whole text is present and it was pasted: text
typed to look like one stays as typed. The expansion is one pass, so a paste that
itself holds chip-like text is sent as it is. The editor keeps a chip whole (`Editor.edit`);
`broken` finds what is left of one some other way, so it is never sent as a placeholder.

A prompt recalled from the history (or a draft brought back, `_history`) brings its
pastes with it; they are taken in under numbers free here (`adopt`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from smith.text import counted

CHIP = re.compile(r"\[pasted #(\d+) ([\d,]+) lines?\]")
NUMBERED = re.compile(r"pasted #(\d+)")  # what is left of a chip that lost an edge


def chip_for(number: int, text: str) -> str:
    return f"[pasted #{number} {counted(len(text.splitlines()), 'line')}]"


def expand(text: str, pastes: Mapping[str, str]) -> str:
    """`text` with each whole chip `pastes` knows replaced by its paste (one pass)."""
    if "[pasted #" not in text:
        return text
    return CHIP.sub(lambda m: pastes.get(m[0], m[0]), text)


class Pastes(dict[str, str]):
    """chip -> the text it stands for: the pastes of the message being written (and of
    the ones before it that were not sent)."""

    def __init__(self) -> None:
        super().__init__()
        self._next = 1
        self._sent: dict[str, str] = {}  # chip -> paste, of the messages sent

    def forget(self, chips: Iterable[str]) -> None:
        """The messages holding `chips` were sent: their pastes went with them."""
        for chip in chips:
            if chip in self:
                self._sent[chip] = self.pop(chip)

    def add(self, text: str) -> str:
        """Keep `text` under a new chip; the chip."""
        chip = chip_for(self._next, text)
        while chip in self or chip in self._sent:  # taken by one put in with `update`
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
                if pasted in (self.get(chip), self._sent.get(chip)):  # the same paste
                    self[chip] = pasted
                    renamed[chip] = chip
                else:
                    renamed[chip] = self.add(pasted)
            return renamed[chip]

        return CHIP.sub(own, text)

    def broken(self, text: str) -> str | None:
        """What is left in `text` of the chip of a paste held here that is not whole
        there any more (`[pasted #2 50 lines` of `[pasted #2 50 lines]`), if any."""
        if "pasted #" not in text:
            return None
        whole = {m.start() + 1 for m in CHIP.finditer(text) if m[0] in self}
        numbers = {m[1] for chip in self if (m := CHIP.fullmatch(chip))}
        for m in NUMBERED.finditer(text):
            if m[1] in numbers and m.start() not in whole:
                end = text.find("]", m.end())
                end = len(text) if end < 0 else end + 1
                return text[max(m.start() - 1, 0) : min(end, m.end() + 20)]
        return None


__all__ = ["CHIP", "Pastes", "chip_for", "expand"]
