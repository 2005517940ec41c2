"""`smith sessions show --json` writes what json.dumps(indent=2) wrote, byte for byte, by a
faster encoder (smith._jsonout): non-ASCII, control characters, quotes, lone surrogates,
large integers and empty sessions included."""

from __future__ import annotations

import json
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from smith._jsonout import ascii_only, rows, with_rows
from tests.conftest import SmithEnv, smith_executable

ODD = [
    "plain",
    "é ü ß",  # Latin-1
    "€ 中文 \u2028\u2029\ufeff",  # the BMP past Latin-1, line and paragraph separators
    "😀 𝄞",  # astral: a surrogate pair each
    "".join(chr(i) for i in range(32)) + "\x7f\x80\x9f",  # C0, DEL, C1
    'quote " backslash \\ slash / tab \t',
    "",
]


def _rows(texts: list[str]) -> list[dict[str, object]]:
    return [
        {"id": t, "parent": None if i == 0 else texts[i - 1], "ts": i * 1_000_003, "kind": t}
        for i, t in enumerate(texts)
    ]


def test_rows_write_the_standard_librarys_bytes_for_odd_text() -> None:
    items = _rows(ODD)
    assert rows(items) == json.dumps(items, indent=2)
    assert rows(items, depth=2) == json.dumps(items, indent=2).replace("\n", "\n    ")
    head: dict[str, object] = {"id": "s\u00e9", "name": "\U0001f600", "n": None, "r": {}}
    assert with_rows(head, "entries", items) == json.dumps({**head, "entries": items}, indent=2)
    assert with_rows(head, "entries", []) == json.dumps({**head, "entries": []}, indent=2)


def test_what_orjson_refuses_goes_through_the_standard_library() -> None:
    # A lone surrogate (an id that is not UTF-8, read with surrogateescape), integers past
    # 64 bits, negative and boundary ones, booleans.
    items: list[dict[str, object]] = [
        {"id": "bad \udc80 byte", "ts": 1, "kind": "message", "parent": None},
        {"id": "big", "ts": 1 << 70, "kind": "x", "parent": True},
        {"id": "edge", "ts": -(1 << 63), "kind": "y", "parent": False},
        {"id": "top", "ts": (1 << 64) - 1, "kind": "z", "parent": None},
    ]
    for item in items:
        assert rows([item]) == json.dumps([item], indent=2)


def test_ascii_only_escapes_as_ensure_ascii() -> None:
    for text in ODD:
        assert ascii_only(json.dumps(text, ensure_ascii=False)) == json.dumps(text)


_text = st.text(st.characters(codec="utf-8"), max_size=12) | st.text(max_size=12)
_row = st.fixed_dictionaries(
    {
        "id": _text,
        "parent": st.none() | _text,
        "ts": st.integers(min_value=-(1 << 70), max_value=1 << 70),
        "kind": _text,
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_row, max_size=6), st.integers(min_value=0, max_value=3))
def test_rows_match_json_dumps(items: list[dict[str, object]], depth: int) -> None:
    expected = json.dumps(items, indent=2).replace("\n", "\n" + "  " * depth)
    assert rows(items, depth) == expected


def test_show_json_through_the_command_line(senv: SmithEnv) -> None:
    """A session whose name, ids and kinds hold non-ASCII and control characters: the
    output is the standard library's indent=2 JSON of the same summary and entries."""
    from smith.session import SessionStore

    store = SessionStore(str(senv.data_home))
    session = store.create(name="na\u00efve \x1b[31m \U0001f600", cwd=str(senv.root), id="odd-1")
    for i, text in enumerate(t for t in ODD if t):
        session.append(f"k\u00e9{i}", {"text": text}, id=f"{text}#{i}")
    path = session.path
    session.close()
    r = subprocess.run(
        [smith_executable(), "sessions", "show", "odd-1", "--json"],
        cwd=senv.root,
        env=senv.env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("ascii")  # every character past ASCII is escaped
    data = json.loads(out)
    from smith.session import Session

    loaded = Session.load(path)
    entries = [
        {"id": e.id, "parent": e.parent, "ts": e.ts, "kind": e.kind} for e in loaded.entries()
    ]
    assert data["entries"] == entries and data["name"] == "na\u00efve \x1b[31m \U0001f600"
    expected = json.dumps({**{k: v for k, v in data.items() if k != "entries"},
                           "entries": entries}, indent=2)  # fmt: skip
    assert out == expected + "\n"
