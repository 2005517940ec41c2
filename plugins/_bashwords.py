"""Words as bash makes them, for approval rules (plugins/_bashrules.py): the source of a
word with its quoting removed, ANSI-C quoting (`$'\\x72m'`) decoded and braces expanded
(`{rm,-rf,x}` is three words), as bash does before it runs anything. What bash only knows
when it runs (a variable, a substitution, a glob) stays a pattern: `Word.glob`, an
fnmatch pattern of what the word could turn out to be (`$HOME/bin/r?` -> `*/bin/r?`)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

MAX_WORDS = 128  # of one word's brace expansion; past it the word could be anything


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # as bash passes it to the program, the parts not known before it runs left out
    glob: str | None = None  # what it could be, where not known before it runs (else None)
    splits: bool = False  # an unquoted expansion: it may become several words, or none
    raw: str = ""  # as written

    @property
    def static(self) -> bool:
        return self.glob is None

    def could_be(self, text: str) -> bool:
        """Whether this word could be `text` when the command runs."""
        if self.glob is None:
            return self.text == text
        return self.splits or fnmatch.fnmatchcase(text, self.glob)

    def could_start_with_dash(self) -> bool:
        return self.could_be("-") or self.could_be("-x") or self.text.startswith("-")

    def shown(self) -> str:
        return self.raw or self.text


# An atom: (kind, text, quoted): kind "b" a bare character (braces and globs mean
# something), "q" quoted text (literal), "u" an expansion known only when it runs.
Atom = tuple[str, str, bool]

_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip
_NUMERIC = re.compile(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})")


def ansi_c(body: str) -> str:
    """The text of `$'...'` (without its quotes), as bash decodes it."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        elif m := _NUMERIC.match(body, i + 1):
            value = int(m.group(4), 8) if m.group(4) else int(m.group(0)[1:], 16)
            out.append(chr(value) if value < 0x110000 else "\ufffd")
            i = m.end()
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _closing(text: str, i: int) -> int:
    """The index of the `'` that ends a `$'...'` whose body starts at i."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "'":
            return i
        i += 1
    return len(text)


def atoms(text: str, unknown: list[tuple[int, int]] = ()) -> list[Atom]:  # type: ignore[assignment]
    """A word's source as atoms; `unknown` are the character ranges of its expansions
    (from the parser). Without them (the fallback for source the parser could not read),
    an unquoted `$` or a backquote starts an expansion that runs to the word's end."""
    spans = dict(unknown)
    out: list[Atom] = []
    i, quoted = 0, False
    while i < len(text):
        if i in spans:
            out.append(("u", text[i : spans[i]], quoted))
            i = spans[i]
            continue
        c = text[i]
        if not unknown and (c == "`" or (c == "$" and text[i + 1 : i + 2] not in ("", "'", '"'))):
            out.append(("u", text[i:], quoted))
            break
        if quoted:
            if c == '"':
                quoted = False
            elif c == "\\" and text[i + 1 : i + 2] in ("$", "`", '"', "\\", "\n"):
                i += 1
                if text[i] != "\n":
                    out.append(("q", text[i], True))
            else:
                out.append(("q", c, True))
            i += 1
        elif c == "\\":
            if text[i + 1 : i + 2] not in ("\n", ""):
                out.append(("q", text[i + 1], False))
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            end = len(text) if end < 0 else end
            out += [("q", ch, False) for ch in text[i + 1 : end]]
            i = end + 1
        elif c == "$" and text[i + 1 : i + 2] == "'":
            end = _closing(text, i + 2)
            out += [("q", ch, False) for ch in ansi_c(text[i + 2 : end])]
            i = end + 1
        elif c == "$" and text[i + 1 : i + 2] == '"':
            quoted, i = True, i + 2
        elif c == '"':
            quoted, i = True, i + 1
        else:
            out.append(("b", c, False))
            i += 1
    return out


def _bare(a: Atom, c: str) -> bool:
    return a[0] == "b" and a[1] == c


def _brace(seq: list[Atom]) -> tuple[int, int, list[int]] | None:
    """The first `{...}` that bash expands: its start, end and top-level commas."""
    for start, a in enumerate(seq):
        if not _bare(a, "{"):
            continue
        depth, commas = 0, list[int]()
        for j in range(start + 1, len(seq)):
            if _bare(seq[j], "{"):
                depth += 1
            elif _bare(seq[j], "}"):
                if depth == 0:
                    if commas or _sequence(seq[start + 1 : j]) is not None:
                        return start, j, commas
                    break
                depth -= 1
            elif _bare(seq[j], ",") and depth == 0:
                commas.append(j)
    return None


_SEQ = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


def _sequence(inner: list[Atom]) -> list[str] | None:
    if any(a[0] != "b" for a in inner):
        return None
    m = _SEQ.match("".join(a[1] for a in inner))
    if not m:
        return None
    first, last, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return None
    a, b = (int(first), int(last)) if first.lstrip("-").isdigit() else (ord(first), ord(last))
    if abs(b - a) // step > MAX_WORDS:
        return ["*"] * (MAX_WORDS + 1)
    values = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
    return [str(v) if first.lstrip("-").isdigit() else chr(v) for v in values]


def braces(seq: list[Atom]) -> list[list[Atom]] | None:
    """Brace expansion of a word's atoms; None when it makes more than MAX_WORDS words."""
    found = _brace(seq)
    if found is None:
        return [seq]
    start, end, commas = found
    if commas:
        bounds = [start, *commas, end]
        parts = [seq[bounds[k] + 1 : bounds[k + 1]] for k in range(len(bounds) - 1)]
    else:
        parts = [[("q", s, False)] for s in _sequence(seq[start + 1 : end]) or []]
    out: list[list[Atom]] = []
    for part in parts:
        expanded = braces(seq[:start] + part + seq[end + 1 :])
        if expanded is None or len(out) + len(expanded) > MAX_WORDS:
            return None
        out += expanded
    return out


def _glob_chars(seq: list[Atom]) -> bool:
    bare = "".join(a[1] if a[0] == "b" else "\0" for a in seq)
    if "*" in bare or "?" in bare or re.search(r"[@+!]\(", bare):
        return True
    opened = bare.find("[")
    return opened >= 0 and "]" in bare[opened + 2 :]


def _word(seq: list[Atom], raw: str) -> Word:
    text = "".join(a[1] for a in seq if a[0] != "u")
    unknown = any(a[0] == "u" for a in seq)
    if not unknown and not _glob_chars(seq):
        return Word(text, raw=raw)
    pattern: list[str] = []
    for kind, value, _ in seq:
        if kind == "u":
            pattern.append("*")
        elif kind == "b":  # bash's [^...] is fnmatch's [!...]
            pattern.append("!" if value == "^" and pattern[-1:] == ["["] else value)
        else:
            pattern.append("".join(f"[{ch}]" if ch in "*?[" else ch for ch in value))
    glob = re.sub(r"[@+!]\(", "*(", "".join(pattern))
    return Word(text, glob, any(a[0] == "u" and not a[2] for a in seq), raw)


def expand(text: str, unknown: list[tuple[int, int]] = ()) -> list[Word]:  # type: ignore[assignment]
    """The words bash makes of one word's source (see the module's docstring)."""
    seq = atoms(text, unknown)
    expanded = braces(seq)
    if expanded is None:
        return [Word("", "*", True, text)]
    words = [_word(s, text) for s in expanded]
    # An unquoted expansion that is all of a word may vanish; quotes keep an empty word.
    return [w for w in words if w.text or not w.static or any(a[0] == "q" for a in seq)]


_TOKEN = re.compile(r"""(?:'[^']*'?|"(?:\\.|[^"\\])*"?|\\.|[^\s;&|()<>'"\\])+""")


def fallback(text: str) -> list[Word]:
    """Every word of source the parser could not read (split on blanks and operators)."""
    return [w for token in _TOKEN.findall(text) for w in expand(token)]


def basename_glob(word: Word) -> str:
    """What the last path component of `word` could be, as an fnmatch pattern."""
    if word.glob is None:
        return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in word.text.rsplit("/", 1)[-1])
    if word.splits:
        return "*"
    last = word.glob.rsplit("/", 1)[-1]
    # An expansion after the last slash may hold a slash of its own.
    return "*" + last[last.rindex("*") + 1 :] if "*" in last else last


def joined(words: list[Word]) -> Word:
    """Words joined with spaces, as shell code (what ssh, watch and `git submodule
    foreach` hand a shell); not known before it runs when one of them is not."""
    text = " ".join(w.text for w in words)
    return Word(text) if all(w.static for w in words) else Word(text, "*", True)
