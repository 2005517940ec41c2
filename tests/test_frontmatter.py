"""Front matter read by a YAML library (smith.frontmatter): values YAML gives (quoted
colons, lists), and what it refuses, with where and why."""

from __future__ import annotations

import pytest

from smith.frontmatter import MAX_BYTES, FrontMatterError, split


def test_front_matter_and_body() -> None:
    text = '---\nname: pdf-tools\ndescription: "Split: merge"\ntools: [read, grep]\n---\n# Body\n'
    data, body = split(text)
    assert data == {"name": "pdf-tools", "description": "Split: merge", "tools": ["read", "grep"]}
    assert body == "# Body\n"


def test_no_front_matter_is_an_empty_one() -> None:
    assert split("# Just a body\n---\n") == ({}, "# Just a body\n---\n")
    assert split("---\n---\nbody") == ({}, "body")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("---\nname: a\n", "never closed"),
        ("---\n- one\n---\n", "a list, not a mapping"),
        ("---\nname: [a\n---\n", "line 3: the front matter is not YAML"),
        ("---\na: &x [1, 2]\nb: *x\n---\n", "line 3: the front matter uses an alias"),
        ("---\n" + "k: " + "v" * MAX_BYTES + "\n---\n", "larger than 64 KiB"),
        # What YAML reads and Python cannot hold is refused, never raised past the reader.
        ("---\ncreated: 2026-02-30\n---\n", "a value smith cannot read: day is out of range"),
        ("---\nat: 2001-12-14t21:59:43.10+99:00\n---\n", "a value smith cannot read"),
        ("---\nn: " + "9" * 5000 + "\n---\n", "a value smith cannot read"),
    ],
)
def test_what_is_refused_says_where_and_why(text: str, says: str) -> None:
    with pytest.raises(FrontMatterError, match=says):
        split(text)
