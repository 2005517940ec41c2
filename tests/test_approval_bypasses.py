"""Approval bypasses a review found (issue 27, item 9): an approved prefix never covers a
command that runs something else (`rg --pre CMD`, `git grep -O<cmd>`) or does what its
program is not trusted to do (`find . -delete`, `git diff --output=FILE`), a deny rule
sees the program such an option runs, and a prefix is offered in plain words only."""

from __future__ import annotations

import pytest

from smith.plugins.approval import matches, prefix


def _allowed(rule: str, command: str) -> bool:
    return matches(rule, "bash", {"command": command}, deny=False)


def _denied(rule: str, command: str) -> bool:
    return matches(rule, "bash", {"command": command}, deny=True)


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("rg", "rg --pre rm hello ."),  # rg runs `rm FILE` on every file it searches
        ("rg", "rg --pre=rm hello ."),
        ("rg", "rg --pre-glob '*.pdf' --pre rm hello ."),
        ("rg", "rg --hostname-bin rm --hyperlink-format=default hello"),
        ("rg", 'rg "$opt" hello .'),  # could be --pre=rm
        ("git grep", "git grep -Orm x"),  # runs `rm` on the files found
        ("git grep", "git grep -nOrm x"),
        ("git grep", "git grep --open-files-in-pager=rm x"),
        ("git grep", "git grep --open-files=rm x"),  # git takes an abbreviation
        ("find .", "find . -delete"),
        ("find .", "find . -name '*.o' -delete"),
        ("find .", "find . -fprint out"),
        ("find .", "find . -fprint0 out"),
        ("find .", "find . -fls out"),
        ("find .", "find . -fprintf out %p"),
        ("find .", "find . -exec rm {} ;"),
        ("find .", "find . -execdir rm {} +"),
        ("find .", "find . -ok rm {} ;"),
        ("find .", "find . -okdir rm {} ;"),
        ("git diff", "git diff --output=/home/u/.bashrc"),
        ("git log", "git log -p --output=x"),
        ("git log", "git log --outp=x"),  # an abbreviation
        ("git show", "git show --ext-diff"),  # runs diff.external
        ("git log", "git log --ext"),
        ("git show", "git show --textconv HEAD:x.bin"),  # runs textconv drivers
        ("npm test", "npm test --userconfig=/tmp/rc"),  # an rc file sets script-shell
        ("npm test", "npm test --globalconfig /tmp/rc"),
        ("npm test", "npm test --userc=/tmp/rc"),  # npm takes an abbreviation
        ("cargo test", "cargo +nightly install evil"),
        ("cargo +nightly", "cargo +nightly install evil"),  # as once offered: approves none
    ],
)
def test_an_approved_prefix_covers_no_option_that_runs_or_writes(rule: str, command: str) -> None:
    assert not _allowed(rule, command)


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("rg", "rg -n hello src"),
        ("rg", "rg --pretty hello"),
        ("git grep", "git grep -n x"),
        ("git grep", "git grep -O x"),  # the configured pager, as `git log` runs it
        ("find .", "find . -name '*.o' -print"),
        ("git diff", "git diff --text"),  # an option of its own, no abbreviation
        ("git diff", "git diff --no-ext-diff --no-textconv"),
        ("git log", "git log -p --stat"),
        ("npm install", "npm install --global typescript"),
        ("cargo test", "cargo +nightly test --release"),
        ("cargo +nightly test", "cargo +nightly test"),
    ],
)
def test_the_same_programs_plain_calls_are_still_covered(rule: str, command: str) -> None:
    assert _allowed(rule, command)


@pytest.mark.parametrize(
    "command",
    [
        "rg --pre rm x .",
        "rg --pre=rm x .",
        "rg --hostname-bin=rm x",
        "git grep -Orm x",
        "git grep -nOrm x",
        "git grep --open-files-in-pager=rm x",
        "git grep -O'rm -f' x",
    ],
)
def test_a_deny_rule_sees_the_program_an_option_runs(command: str) -> None:
    from smith.plugins._bashrules import analyse, denial

    why = denial(["rm"], analyse(command))
    assert why == "the approval.deny rule 'rm' matches this bash call"


@pytest.mark.parametrize(
    ("command", "first"),
    [
        ("rg --pre rm hello .", ""),
        ("rg -n hello", "rg"),
        ("git grep -Ovim x", ""),
        ("git grep -n x", "git grep"),
        ("find . -delete", ""),
        ("find . -fprint out", ""),
        ("git diff --output=x", ""),
        ("git log --ext-diff", ""),
        ("npm test --userconfig=/tmp/rc", ""),
        ("cargo +nightly test", "cargo test"),  # never `cargo +nightly`
        ("cargo +nightly install x", "cargo install"),
        ("cargo +nightly", ""),
        ("ls $'\\x3b' rm", "ls"),  # not `ls ;`
        ("ls 'a b'", "ls"),
        ("ls $'\\n'", "ls"),
        ("'git' \"status\"", "git status"),  # quotes are gone, the words plain
    ],
)
def test_a_prefix_is_plain_words_that_cover_this_call(command: str, first: str) -> None:
    assert prefix({"command": command}) == first
    if first:
        assert _allowed(first, command)


def test_a_deny_rule_leaves_harmless_uses_of_those_programs_alone() -> None:
    for command in ["rg -n rm .", "git grep -n rm", "git grep -O rm", "find . -name rm"]:
        assert not _denied("rm", command), command
