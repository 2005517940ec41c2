"""What git runs, for approval rules (plugins/_bashprograms.py has the other programs):
settings given with `-c` whose value is a command (`alias.x='!sh'`, `core.pager`), its
subcommands' options that run one (`rebase -x`, `grep -O`), and options that do more than
a prefix approval covers (`diff --output=FILE`, `log --ext-diff`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._bashwords import Word, joined

if TYPE_CHECKING:
    from ._bashprograms import Reach

# Settings whose value git runs (alias.x=!cmd, core.pager, core.sshCommand, diff.external,
# filter.x.clean, credential.helper, ...): by the shape of the key, not a list of keys.
_GIT_RUNS = re.compile(r"(pager|editor|command|cmd|textconv|clean|smudge|process|external|"
                       r"driver|program|helper|fsmonitor|hook|uploadpack|receivepack|askpass|"
                       r"proxy|browser|path|hookspath|exec|tool)$", re.I)  # fmt: skip
_GIT_FILE = re.compile(r"(^include|path$|hookspath$|^core\.worktree$|exec)", re.I)
# Subcommands' options whose value is a command: rebase -x, difftool -x, clone -u, ...
_GIT_SUB_RUNS = {"rebase": "x", "difftool": "x", "clone": "u", "archive": "", "fetch": "",
                 "pull": "", "push": "", "ls-remote": "", "filter-branch": "",
                 "send-email": "", "submodule": "", "bisect": "", "mergetool": "t"}  # fmt: skip
_GIT_LONG_RUNS = re.compile(r"^--(exec|extcmd|upload-pack|receive-pack|\w+-filter|"
                            r"sendmail-cmd|tool|x)(=|$)")  # fmt: skip
# Options any subcommand may take that do more than it says: write a file it names (the
# diff options' --output), run the diff or text-conversion programs git's configuration
# names (--ext-diff, --textconv: by default only where git's documentation says).
_GIT_BEYOND = {"output": "writes the file it names", "ext-diff": "runs the external diff "
               "program git's configuration names", "textconv": "runs the text-conversion "
               "programs git's configuration names"}  # fmt: skip


def _git_config(reach: Reach, setting: Word) -> None:
    key, _, value = setting.text.partition("=")
    if not setting.static:
        reach.unseen(f"git's setting {setting.shown()} cannot be known before it runs")
    elif _GIT_FILE.search(key):
        reach.unseen(f"git's setting {key} makes it run programs from a file or directory")
    elif key.lower().startswith("alias.") and value.startswith("!"):
        reach.code(Word(value[1:]), f"the alias {key}")
    elif _GIT_RUNS.search(key) or key.lower().startswith("pager."):
        reach.code(Word(value), f"git's setting {key}")


def git(reach: Reach, name: str, args: list[Word]) -> None:
    """git's own options (`-c` settings), then its subcommand's."""
    i = 0
    while i < len(args) and (args[i].text.startswith("-") or not args[i].static):
        w, t = args[i], args[i].text
        if not w.static:
            reach.unseen(f"an option of git, {w.shown()}, cannot be known before it runs")
        elif t in ("-c", "--config-env") and i + 1 < len(args):
            _git_config(reach, args[i + 1])
            i += 1
        elif t.startswith(("--config-env=", "-c")) and t not in ("-c",):
            _git_config(reach, Word(t.partition("=")[2] if t.startswith("--") else t[2:]))
        elif t.startswith("--exec-path="):
            reach.unseen("git --exec-path runs git's commands from a directory it names")
        elif t in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                   "--list-cmds", "--attr-source"):  # fmt: skip
            i += 1
        i += 1
    if i >= len(args):
        return None
    sub, rest = args[i].text, args[i + 1 :]
    for w in rest:  # git's options parser takes an unambiguous abbreviation (--ext, --out=)
        key = w.text.partition("=")[0][2:] if w.text.startswith("--") else ""
        full = next((k for k in _GIT_BEYOND if len(key) >= 3 and k.startswith(key)), None)
        full = None if key == "text" else full  # --text is an option of its own
        if w.static and full is not None:
            reach.unseen(f"git {sub} --{full} {_GIT_BEYOND[full]}", ())
    if sub == "grep":
        _git_grep(reach, rest)
    if sub not in _GIT_SUB_RUNS:
        return None
    if sub == "bisect" and rest[:1] and rest[0].text == "run":
        reach.run(rest[1:], i + 2)
    if sub == "submodule" and any(w.text == "foreach" for w in rest):
        after = rest[[w.text for w in rest].index("foreach") + 1 :]
        after = [w for w in after if w.text not in ("--recursive", "-q", "--quiet")]
        reach.code(joined(after), "git submodule foreach")
    short = _GIT_SUB_RUNS[sub]
    for k, w in enumerate(rest):
        t = w.text
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of git {sub}, {w.shown()}, cannot be known before it runs")
        elif _GIT_LONG_RUNS.match(t) or (short and t == f"-{short}"):
            value = Word(t.partition("=")[2]) if "=" in t else (rest[k + 1] if k + 1 < len(rest)
                                                                else Word(""))  # fmt: skip
            reach.code(value, f"git {sub} {t.partition('=')[0]}")
    return None


def _git_grep(reach: Reach, args: list[Word]) -> None:
    """`git grep -O<cmd>` and `--open-files-in-pager=<cmd>` run cmd (a shell command) on
    the files found; without one, the pager git's configuration names, as `git log` does."""
    for w in args:
        t = w.text
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of git grep, {w.shown()}, cannot be known before it "
                         "runs and could be -O, which runs a command")  # fmt: skip
        elif t.startswith("--") and "=" in t and "open-files-in-pager".startswith(t[2:].partition(
                "=")[0]) and len(t.partition("=")[0]) > 3:  # fmt: skip
            reach.code(Word(t.partition("=")[2]), "git grep --open-files-in-pager")
        elif t.startswith("-") and not t.startswith("--"):
            for k, ch in enumerate(t[1:], 2):  # -nOvim: O takes the rest of the word
                if ch == "O" and t[k:]:
                    reach.code(Word(t[k:]), "git grep -O")
                if ch in "OefABCm":  # takes an argument: the rest of the word is it
                    break
