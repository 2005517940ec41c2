"""Keys as terminals send them, where Textual's parser falls short.

xterm's modifyOtherKeys (and terminals that copy it: tmux with `extended-keys`, some
others) sends a modified key that has no escape sequence of its own as
`CSI 27 ; MODIFIER ; CODE ~`: Shift+Enter is `ESC [27;2;13~`. Textual reads that as the
kitty protocol's `CSI CODE ; MODIFIER ; TEXT` with the fields in another order, and makes
`shift+\\r` of it (no binding matches; Alt+Enter loses its Alt). `KeyParser` rewrites a
control key's sequence into the kitty form of the same key (`ESC [13;2u`), which Textual
reads right, so Shift+Enter, Ctrl+Enter, Alt+Enter and the like arrive by their names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from textual import events
from textual._xterm_parser import XTermParser

_MODIFY_OTHER_KEYS = re.compile(r"\x1b\[27;(\d+);(\d+)~")


def kitty_form(sequence: str) -> str:
    """`CSI 27 ; M ; C ~` of a control key (Enter, Backspace, Escape, Tab: C below 32, or
    127) as `CSI C ; M u`; any other sequence as it is (Textual reads a printable key's,
    Shift+A's `CSI 27;2;65~`, as the character it types)."""
    found = _MODIFY_OTHER_KEYS.fullmatch(sequence)
    if found is None or not (int(found[2]) < 32 or int(found[2]) == 127):
        return sequence
    return f"\x1b[{found[2]};{found[1]}u"


class KeyParser(XTermParser):
    """Textual's terminal input parser, reading modifyOtherKeys sequences too."""

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        return super()._sequence_to_key_events(kitty_form(sequence), alt)


def install() -> None:
    """Make Textual's Linux driver read input with `KeyParser` (it builds its parser in
    its input thread, by the name its module imported)."""
    from textual.drivers import linux_driver

    linux_driver.XTermParser = KeyParser  # type: ignore[attr-defined]


__all__ = ["KeyParser", "install", "kitty_form"]
