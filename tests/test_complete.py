"""`@` completion below the app: the file list and the fuzzy ranking."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smith.effects import ToolContext, builtin_tools, list_files
from smith.frontends.tui._files import Listing, ProjectFiles, context_lister, read_listing
from smith.frontends.tui._fuzzy import PathIndex, score
from smith.runtime import mentionable
from smith.runtime._attach import mentions


def _tree(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def test_the_list_is_what_find_sees(tmp_path: Path) -> None:
    _tree(tmp_path, "a.py", ".env", "sub/b.py", "build/out.o", "x.tmp", ".git/config")
    (tmp_path / ".gitignore").write_text("build/\n*.tmp\n")
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path), ignore=("sub/",))
    files, cut = list_files(ctx, 100)
    assert sorted(files) == [".env", ".gitignore", "a.py"] and not cut
    found = builtin_tools()["find"].run(ctx, {"pattern": "*"})
    assert sorted(files) == found.text.splitlines()  # the find tool's own policy


def test_the_list_stops_at_its_cap_and_says_so(tmp_path: Path) -> None:
    _tree(tmp_path, *(f"f{i}.txt" for i in range(30)))
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    files, cut = list_files(ctx, 10)
    assert len(files) == 10 and cut
    listing = read_listing(context_lister(ctx), limit=10)
    assert listing.cut and listing.note == "only the first 10 files are completed"
    files, cut = list_files(ctx, 30)
    assert len(files) == 30 and not cut


def test_a_listing_has_each_directory_once_and_only_mentionable_paths(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        "src/app.py",
        "src/deep/x.py",
        "my notes.md",
        "odd@name.txt",
        "end.",
        "evil\x1b[31mred.txt",
        "c1\x9b2J.txt",
    )  # fmt: skip (escapes: never shown raw)
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path / "."))
    listing = read_listing(context_lister(ctx))
    assert sorted(listing.index.paths) == ["src/", "src/app.py", "src/deep/", "src/deep/x.py"]
    assert listing.files == 2 and listing.note == ""


def test_a_missing_directory_gives_an_empty_listing_that_says_why(tmp_path: Path) -> None:
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path / "gone"))
    listing = read_listing(context_lister(ctx))
    assert len(listing.index) == 0 and listing.note.startswith("no file list:")


@given(st.text(alphabet="ab/. @)_\t-é", min_size=1, max_size=8))
def test_mentionable_paths_are_exactly_those_a_mention_reads_back(path: str) -> None:
    assert mentionable(path) == (mentions(f"@{path}") == [path])


# -- ranking --------------------------------------------------------------------------


def _ranked(query: str, *paths: str) -> list[str]:
    return [path for path, _ in PathIndex(list(paths)).top(query, 10)]


def test_only_subsequences_match_and_the_matched_characters_are_given() -> None:
    assert score("apy", "src/app.py") == score("apy", "src/app.py")
    found = score("sapy", "src/app.py")
    assert found is not None and found[1] == (0, 4, 5, 9)
    assert score("yp", "src/app.py") is None
    assert _ranked("zz", "src/app.py", "README.md") == []


def test_a_match_in_the_basename_beats_one_across_segments() -> None:
    assert _ranked("editor", "e/d/i/t/o/r.md", "frontends/tui/_editor.py", "editor/x/y.md") == [
        "frontends/tui/_editor.py",
        "editor/x/y.md",
        "e/d/i/t/o/r.md",
    ]


def test_segment_starts_and_consecutive_characters_win() -> None:
    assert _ranked("tc", "tests/conftest.py", "attic.py")[0] == "tests/conftest.py"
    assert _ranked("app", "src/a_p_p.py", "src/xapp.py", "src/app.py")[0] == "src/app.py"
    assert _ranked("app", "xaxpxp.py", "xapp.py") == ["xapp.py", "xaxpxp.py"]
    assert _ranked("fb", "fooBar.py", "foobar.py") == ["fooBar.py", "foobar.py"]


def test_equal_scores_go_to_the_shorter_path_then_the_first_alphabetically() -> None:
    assert _ranked("read", "docs/README.md", "x/README.md", "y/README.md") == [
        "x/README.md",
        "y/README.md",
        "docs/README.md",
    ]


def test_case_is_ignored_unless_the_query_has_a_capital() -> None:
    assert _ranked("readme", "README.md", "readme.txt") == ["README.md", "readme.txt"]
    assert _ranked("README", "README.md", "readme.txt") == ["README.md"]
    assert score("é", "Éa.md") is not None and score("É", "éa.md") is None


def test_an_empty_query_lists_the_shortest_paths_and_the_typed_path_is_skipped() -> None:
    index = PathIndex(["src/app.py", "src/", "a.md", "README.md"])
    assert [p for p, _ in index.top("", 3)] == ["a.md", "src/", "README.md"]
    assert [p for p, _ in index.top("src/", 3, skip="src/")] == ["src/app.py"]


def test_the_best_match_is_found_among_many_weaker_ones() -> None:
    noise = [f"editor/d{i}/{n}.md" for i in range(300) for n in ("x", "y")]
    paths = [*noise, "deep/down/frontends/tui/_editor.py"]
    assert PathIndex(paths).top("editor.py", 1)[0][0] == "deep/down/frontends/tui/_editor.py"


def test_a_list_is_stale_after_three_seconds_or_ten_times_its_reading() -> None:
    files = ProjectFiles(lambda work, then: None)
    assert files.stale()  # none yet
    quick = Listing(PathIndex([]), 0, False, took=0.01)
    slow = Listing(PathIndex([]), 0, False, took=1.5)
    for listing, fresh_at, stale_at in ((quick, 2.0, 3.5), (slow, 14.0, 15.5)):
        files.listing = listing
        listing.read_at = time.monotonic() - fresh_at
        assert not files.stale()
        listing.read_at = time.monotonic() - stale_at
        assert files.stale()
