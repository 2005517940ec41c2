"""`inert(text)`: untrusted text made safe to show on a terminal (smith.text says where
it is used). Here, below smith.diagnostics, so a rendered diagnostic quotes values
inertly without an import cycle (smith.text declares diagnostic kinds)."""

from __future__ import annotations

# C0 controls (but tab and newline), DEL and C1 controls -> visible stand-ins. ESC gets
# the symbol for escape, the rest caret or \x notation, so nothing reaches the terminal.
_INERT = {c: f"^{chr(c + 64)}" for c in range(32) if c not in (9, 10)}
_INERT[27] = "␛"
_INERT[127] = "^?"
_INERT.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
# Bidirectional embeddings, overrides and isolates reorder the text after them on screen
# (a file "invoice\u202etxt.exe" shows as "invoiceexe.txt"), and the marks (LRM, RLM,
# ALM) the neutral characters beside them: shown by code point.
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_INERT.update({c: f"<U+{c:04X}>" for c in _BIDI})


def inert(text: str) -> str:
    """`text` with every control character replaced by a visible stand-in."""
    return text.translate(_INERT)
