"""What programs run, for approval rules (plugins/_bashrules.py): programs known by what
they are, not by one spelling (`/usr/bin/python3.12` is python, `gawk` is awk), and for
each program that runs others, how: a wrapper runs the command after its own options
(`nice -n 5 rm`), a shell or `eval` runs code, `find -exec` and `git -c alias.x='!...'`
run commands given as options, an interpreter runs code no rule can see into.

A handler gets the program's arguments and reports to a `Reach` what they run; it
returns where, in its arguments, the command it wraps starts (or None)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from ._bashgit import git
from ._bashwords import Word, basename_glob, joined

# A versioned spelling of a program (python3.12, lua5.4, perl5.36, pip-3.11, gdb-multiarch).
_VERSIONED = re.compile(r"^([A-Za-z][A-Za-z+_]*?)(?:[-.]?\d+(?:\.\d+)*[a-z]?|-multiarch)$")

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "oksh", "ash", "yash",
                    "posh", "fish", "csh", "tcsh", "rbash", "elvish", "xonsh", "nu"})  # fmt: skip
# Programs whose arguments are code in a language of their own (its options that give it).
INTERPRETERS: dict[str, str] = {
    "python": "c", "pypy": "c", "ipython": "c", "perl": "eE", "ruby": "e", "irb": "e",
    "node": "ep", "nodejs": "ep", "deno": "", "bun": "ep", "php": "rBRE", "lua": "e",
    "luajit": "e", "tclsh": "", "wish": "", "expect": "c", "Rscript": "e", "R": "e",
    "julia": "eE", "guile": "ce", "racket": "e", "sbcl": "", "ocaml": "", "ghci": "e",
    "runghc": "", "runhaskell": "", "scala": "e", "groovy": "e", "jshell": "", "osascript": "e",
    "pwsh": "cC", "powershell": "cC", "gdb": "x", "lldb": "o", "vim": "c", "vi": "c",
    "nvim": "c", "ex": "c", "view": "c", "emacs": "", "m4": "", "awk": "", "sed": "",
}  # fmt: skip
_FAMILIES = {"gawk": "awk", "mawk": "awk", "nawk": "awk", "goawk": "awk", "original-awk": "awk",
             "gsed": "sed", "ssed": "sed", "python": "python", "python3": "python",
             "pypy3": "pypy", "nodejs": "node", "gfind": "find", "bfs": "find", "fdfind": "fd",
             "gtar": "tar", "bsdtar": "tar", "gxargs": "xargs", "gtimeout": "timeout",
             "genv": "env", "sudoedit": "sudoedit"}  # fmt: skip


def program(path: str) -> str:
    """What a command word runs, by what it is: its base name, a versioned spelling
    (python3.12, lua5.4) as its family, a GNU or BSD variant (gawk, gsed) as the tool."""
    name = path.rsplit("/", 1)[-1]
    if name in _FAMILIES:
        return _FAMILIES[name]
    m = _VERSIONED.match(name)
    if m and (m.group(1) in INTERPRETERS or m.group(1) in SHELLS or m.group(1) in _PLAIN):
        return m.group(1)
    return name


_PLAIN = {"pip", "gcc", "clang", "llvm", "node", "python", "gdb"}


class Reach(Protocol):
    """Where a handler reports what a command runs (implemented by the rules' walker)."""

    stdin: Word | None  # the text on standard input when it is in the command (<<<, <<)

    def run(self, words: Sequence[Word], offset: int | None) -> None:
        """A command it runs: `offset` is its first word's index in the handler's args."""

    def code(self, word: Word, what: str) -> None:
        """Shell code it runs (`sh -c`, `eval`, `find -exec sh -c`): looked into."""

    def unseen(self, why: str, programs: tuple[str, ...] = ("*",)) -> None:
        """Something it runs that no rule can see: the programs it could be (patterns);
        none for what runs no program but is more than a prefix approval covers (`find
        -delete`, `git diff --output=FILE`)."""


Handler = Callable[[Reach, str, list[Word]], int | None]


def _long(name: str, known: Sequence[str]) -> str | None:
    """A long option as getopt_long takes it: exact, or an unambiguous abbreviation."""
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)] if name else []
    return hits[0] if len(hits) == 1 else None


def options(args: list[Word], takes: str = "", longs: Sequence[str] = (),
            long_takes: Sequence[str] = ()) -> int:  # fmt: skip
    """The index of the first operand after a wrapper's options (which end at the first
    operand or `--`, as getopt's "+" mode does). `takes`: short options with an argument."""
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if not w.static or t == "-" or not t.startswith("-"):
            return i
        if t == "--":
            return i + 1
        if t.startswith("--"):
            name, eq, _ = t[2:].partition("=")
            full = _long(name, [*longs, *long_takes])
            i += 2 if full in long_takes and not eq else 1
            continue
        for k, ch in enumerate(t[1:]):
            if ch in takes:
                i += k == len(t) - 2  # its argument is the next word
                break
        i += 1
    return i


def _assignments(args: list[Word], i: int) -> int:
    while i < len(args) and args[i].static and re.match(r"^[A-Za-z_]\w*=", args[i].text):
        i += 1
    return i


def _spec(takes: str = "", longs: str = "", long_takes: str = "", operands: int = 0,
          no_run: str = "") -> Handler:  # fmt: skip
    """A wrapper: options (`takes` short ones with an argument), `operands` words of its
    own (timeout's duration), then the command; an option in `no_run` runs nothing."""
    flags, valued = longs.split(), long_takes.split()

    def handler(reach: Reach, name: str, args: list[Word]) -> int | None:
        i = options(args, takes, flags, valued)
        used = {ch for w in args[:i] if w.text.startswith("-") and not w.text.startswith("--")
                for ch in w.text[1:]}  # fmt: skip
        if used & set(no_run):
            return None
        i = _assignments(args, i) if name in ("env", "sudo", "doas") else i
        return i + operands if i + operands < len(args) else None

    return handler


def _env(reach: Reach, name: str, args: list[Word]) -> int | None:
    i = options(args, "uCSPa", ["ignore-environment", "null", "debug", "list-signal-handling"],
                ["unset", "chdir", "split-string", "block-signal", "default-signal",
                 "ignore-signal", "argv0"])  # fmt: skip
    for k, w in enumerate(args[:i]):  # env -S 'rm -rf x': one string, split into words
        t = w.text
        if t.startswith("--") and "split-string".startswith(t[2:].partition("=")[0]):
            attached = t.partition("=")[2]
        elif t.startswith("-S"):
            attached = t[2:]
        else:
            continue
        given = Word(attached) if attached else args[min(k + 1, len(args) - 1)]
        reach.code(joined([given, *args[i:]]), "env -S")
        return None
    i = _assignments(args, i)
    return i if i < len(args) else None


def _xargs(reach: Reach, name: str, args: list[Word]) -> int | None:
    i = options(args, "adEILnPs", ["null", "no-run-if-empty", "verbose", "interactive",
                "exit", "open-tty", "show-limits"], ["arg-file", "delimiter", "eof",
                "replace", "max-lines", "max-args", "max-procs", "max-chars",
                "process-slot-var"])  # fmt: skip
    # What it runs is the command (echo when none) with words read from its input.
    reach.run([*(args[i:] or [Word("echo")]), Word("", "*", True, "<input>")], i)
    return None


def _shell(reach: Reach, name: str, args: list[Word]) -> int | None:
    i, code = 0, False
    while i < len(args) and args[i].static and args[i].text[:1] in "-+" and args[i].text != "-":
        t = args[i].text
        if t == "--":
            i += 1
            break
        if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1
        elif not t.startswith("--") and "c" in t:
            code = True
        i += 1
    if code:
        if i < len(args):
            reach.code(args[i], f"{name} -c")
        return None
    if i < len(args) and not args[i].static:
        reach.unseen(f"{name} runs a script whose name cannot be known before it runs")
    elif i == len(args) or args[i].text in ("-", "/dev/stdin") or "-s" in (a.text for a in args):
        _stdin(reach, name)
    elif args[i].text.startswith(("/dev/fd/", "/proc/self/fd/")):
        reach.unseen(f"{name} reads its commands from a pipe")
    return None


def _stdin(reach: Reach, name: str) -> None:
    if reach.stdin is None:
        reach.unseen(f"{name} reads its commands from standard input, which cannot be seen")
    else:
        reach.code(reach.stdin, f"{name}'s standard input")


def _eval(reach: Reach, name: str, args: list[Word]) -> None:
    start = 1 if name == "trap" else 0
    if name == "trap" and (not args or args[0].text.startswith("-")):
        return None
    words = args[:1] if name == "trap" else args[start:]
    if words:
        reach.code(joined(words), f"`{name}`")
    return None


def _alias(reach: Reach, name: str, args: list[Word]) -> None:
    for w in args:
        if "=" in w.text or not w.static:
            reach.code(Word(w.text.partition("=")[2], w.glob and "*", w.splits), "alias")


def _source(reach: Reach, name: str, args: list[Word]) -> None:
    if not args or args[0].text in ("-", "/dev/stdin"):
        _stdin(reach, name)
    elif args[0].text.startswith(("/dev/fd/", "/proc/self/fd/")) or not args[0].static:
        reach.unseen(f"`{name}` reads commands from a file or pipe it names only when it runs")


def _interpreter(reach: Reach, name: str, args: list[Word]) -> None:
    """Code in another language: seen only as a file's name (`python x.py`); given inline
    (`python -c`, `perl -e`) or on standard input it could run any program."""
    family = program(name)
    letters = INTERPRETERS.get(family, "ce")
    for i, w in enumerate(args):
        t = w.text
        if not w.static and i == 0:
            break
        if t == "--" or not t.startswith(("-", "+")) or t == "-":
            if t == "-" or (t == "--" and i + 1 == len(args)):
                reach.unseen(
                    f"{name} runs code from its standard input, which no rule can see into"
                )
            if family in ("deno", "bun") and t in ("eval", "-e"):
                break
            return None
        if t.startswith("--") and t[2:].partition("=")[0] in ("eval", "print", "command",
                                                              "cmd", "execute"):  # fmt: skip
            break
        if (not t.startswith("--") and set(t[1:]) & set(letters)) or t.startswith("+"):
            break
    else:
        if family in ("gdb", "lldb", "vim", "vi", "nvim", "ex", "view", "emacs", "m4") or any(
            w.text in ("-V", "--version", "-h", "--help") for w in args
        ):
            return None  # an interactive program, or one that only says what it is
        reach.unseen(f"{name} runs code from its standard input, which no rule can see into")
        return None
    reach.unseen(
        f"{name} is given code to run, which could run any program; no rule can see into it"
    )
    return None


def _awk(reach: Reach, name: str, args: list[Word]) -> None:
    flags = ["characters-as-bytes", "posix", "traditional"]
    i = options(args, "FvfiEl", flags, ["field-separator", "assign", "file", "include", "exec",
                                        "load", "source"])  # fmt: skip
    given = [w.text for w in args[:i]]
    if any(g.startswith(("-l", "--lo", "-E", "--ex")) for g in given):
        reach.unseen(f"{name} loads code from a file it names")
    sources = [args[k + 1] for k, g in enumerate(given) if g in ("--source",) and k + 1 < i]
    if not any(g.startswith(("-f", "--fi")) for g in given) and i < len(args):
        sources.append(args[i])
    for w in sources:  # system(), print | "cmd", "cmd" | getline
        if not w.static or re.search(r"system|\||@load", w.text):
            reach.unseen(
                f"{name}'s program can run commands (system, pipes), which no rule can see into"
            )


# A sed script's `e` command, or an `s` command with the `e` flag.
_SED_S = re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([A-Za-z0-9]*)", re.S)
_SED_ADDR = re.compile(r"/(?:\\.|[^/])*/|\\(.)(?:\\.|(?!\1).)*\1", re.S)


def _sed_runs(script: str) -> bool:
    if any("e" in m.group(2) for m in _SED_S.finditer(script)):
        return True
    rest = _SED_ADDR.sub(" ", _SED_S.sub(" ", script))
    return bool(re.search(r"(^|[;\n{}!\d$,\s])e", rest))


def _sed(reach: Reach, name: str, args: list[Word]) -> None:
    i = options(args, "efl", ["in-place", "quiet", "silent", "regexp-extended", "separate",
                "sandbox", "null-data", "unbuffered", "posix", "debug", "follow-symlinks"],
                ["expression", "file", "line-length"])  # fmt: skip
    given = [w.text for w in args[:i]]
    if any(g.startswith("--sa") for g in given):
        return None  # --sandbox: no e, r or w commands
    scripts = [
        args[k + 1] for k, g in enumerate(given) if g in ("-e", "--expression") and k + 1 < i
    ]
    scripts += [Word(g.partition("=")[2]) for g in given if g.startswith("--expression=")]
    scripts += [Word(g[2:]) for g in given if g.startswith("-e") and len(g) > 2]
    if not scripts and not any(g.startswith(("-f", "--file")) for g in given) and i < len(args):
        scripts.append(args[i])
    for w in scripts:
        if not w.static or _sed_runs(w.text):
            reach.unseen(
                f"{name}'s script may run a command (its e command), which no rule can see into"
            )
    return None


# find's actions that delete or write files: no prefix approval (`find .`) covers them.
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(reach: Reach, name: str, args: list[Word]) -> None:
    i = 0
    while i < len(args):
        w = args[i]
        execs = ("-exec", "-execdir", "-ok", "-okdir") if name == "find" else (
            "-x", "--exec", "-X", "--exec-batch")  # fmt: skip
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of {name}, {w.shown()}, cannot be known before it runs "
                         "and could be -exec")  # fmt: skip
        if name == "find" and w.text in _FIND_WRITES:
            reach.unseen(f"find {w.text} deletes or writes files", ())
        if w.text in execs:
            end = next(
                (j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args)
            )
            reach.run(args[i + 1 : end], i + 1)
            i = end
        i += 1


_TAR_RUNS = re.compile(r"^--(to-c|use-c|checkpoint-a|info-s|new-v|rsh-c|rmt-c)")


def _tar(reach: Reach, name: str, args: list[Word]) -> None:
    for k, w in enumerate(args):
        t = w.text
        nxt = args[k + 1] if k + 1 < len(args) else Word("")
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of tar, {w.shown()}, cannot be known before it runs and "
                         "could be an option that runs a command (--to-command)")  # fmt: skip
        elif _TAR_RUNS.match(t):
            value = Word(t.partition("=")[2]) if "=" in t else nxt
            reach.code(Word(value.text.removeprefix("exec="), value.glob), f"tar {t}")
        elif (t.startswith("-") and not t.startswith("--") and ("I" in t or "F" in t)) or (
            k == 0 and t.isalpha() and ("I" in t or "F" in t)
        ):
            reach.code(nxt, f"tar {t}")


def _remote_shell(reach: Reach, name: str, args: list[Word]) -> None:
    """rsync -e/--rsh/--rsync-path, scp -S, zip -TT, sort --compress-program, man -P:
    an option whose value is a command."""
    runs = {"rsync": ("-e", "--rsh", "--rsync-path"), "scp": ("-S",), "zip": ("-TT",
            "--unzip-command"), "sort": ("--compress-program",), "man": ("-P", "--pager"),
            "fd": ()}[name]  # fmt: skip
    for k, w in enumerate(args):
        t = w.text
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of {name}, {w.shown()}, cannot be known before it runs "
                         "and could be an option that runs a command")  # fmt: skip
        opt, eq, value = t.partition("=")
        if opt in runs or any(len(opt) > 3 and r.startswith(opt) for r in runs if r[:2] == "--"):
            reach.code(Word(value) if eq else (args[k + 1] if k + 1 < len(args) else Word("")),
                       f"{name} {opt}")  # fmt: skip
        elif name == "rsync" and t.startswith("-") and not t.startswith("--") and "e" in t[1:]:
            reach.code(args[k + 1] if k + 1 < len(args) else Word(""), "rsync -e")


def _rg(reach: Reach, name: str, args: list[Word]) -> None:
    """`rg --pre CMD` runs CMD with each file it searches as its argument (not a shell);
    `--hostname-bin CMD` runs CMD for its hyperlinks' host name."""
    for k, w in enumerate(args):
        t = w.text
        opt, eq, value = t.partition("=")
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of rg, {w.shown()}, cannot be known before it runs "
                         "and could be --pre, which runs a command")  # fmt: skip
        elif opt in ("--pre", "--hostname-bin") and (eq or k + 1 < len(args)):
            command = [Word(value)] if eq else [args[k + 1]]
            reach.run([*command, Word("", "*", True, "<file>")], None if eq else k + 1)


def _ssh(reach: Reach, name: str, args: list[Word]) -> None:
    i = options(args, "BbcDEeFIiJLlmOoPpQRSWw")
    for k, w in enumerate(args[:i]):
        value = w.text[2:] if w.text.startswith("-o") and len(w.text) > 2 else (
            args[k + 1].text if w.text == "-o" and k + 1 < len(args) else "")  # fmt: skip
        key, _, command = re.split(r"[ =]", value, maxsplit=1)[0], "", value
        if re.match(r"(?i)(proxy|local|knownhosts)command", key):
            reach.code(Word(re.split(r"[ =]", command, maxsplit=1)[-1]), f"ssh -o {key}")
    rest = args[i + 1 :]  # after the host: a command run by the remote shell
    if rest:
        reach.code(joined(rest), "ssh")


def _busybox(reach: Reach, name: str, args: list[Word]) -> int | None:
    return 0 if args else None


def _su(reach: Reach, name: str, args: list[Word]) -> int | None:
    """su -c, runuser -c, script -c, flock -c: a shell runs the option's value."""
    for k, w in enumerate(args):
        t = w.text
        cluster = t.startswith("-") and not t.startswith("--") and t.endswith("c")
        if (cluster or t in ("--command", "--session-command")) and k + 1 < len(args):
            reach.code(args[k + 1], f"{name} {t}")
        elif t.startswith(("--command=", "--session-command=")):
            reach.code(Word(t.partition("=")[2]), f"{name} {t.partition('=')[0]}")
    if name == "runuser" and "--" in (w.text for w in args):
        at = [w.text for w in args].index("--") + 1
        return at if at < len(args) else None
    if name == "flock":
        flags = ["shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"]
        i = options(args, "wEc", flags, ["timeout", "conflict-exit-code", "command"])
        return i + 1 if i + 1 < len(args) and not any(w.text == "-c" for w in args) else None
    return None


def _watch(reach: Reach, name: str, args: list[Word]) -> int | None:
    flags = ["beep", "color", "no-color", "errexit", "chgexit", "exec", "precise", "no-title",
             "no-wrap"]  # fmt: skip
    i = options(args, "nqd", flags, ["interval", "differences", "equexit"])
    if any(w.text in ("-x", "--exec") for w in args[:i]):
        return i if i < len(args) else None
    rest = args[i:]
    if rest:  # the words joined, run by sh -c
        reach.code(joined(rest), "watch")
    return None


def _any_word(reach: Reach, name: str, args: list[Word]) -> None:
    """A wrapper whose options this check does not model (bwrap, strace, parallel, npx):
    any of its words could be the command it runs."""
    shapes = tuple(sorted({basename_glob(w) for w in args}))
    if shapes:
        reach.unseen(f"{name} runs a command among its arguments, which this check does not "
                     "model", shapes)  # fmt: skip


def _options_run(reach: Reach, name: str, args: list[Word], long: tuple[str, ...],
                 short: str = "", plain: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Options whose value is a program or code (`npm --script-shell=...`, `go test
    -exec`): long ones (`--` or, for go, `-`) also as the unambiguous abbreviations their
    parsers take (but `plain`, options of their own); `short`: letters of such short options."""
    for w in args:
        t = w.text
        if not w.static and w.could_start_with_dash():
            reach.unseen(f"an argument of {name}, {w.shown()}, cannot be known before it runs "
                         "and could be an option that runs a command")  # fmt: skip
            continue
        key = t.lstrip("-").partition("=")[0]
        dashed = t.startswith("--") or (name == "go" and t.startswith("-"))
        if dashed and len(key) >= 2 and key not in plain and any(k.startswith(key) for k in long):
            reach.unseen(f"{name} {t.partition('=')[0]} names a program or code it runs, "
                         "which no rule can see into")  # fmt: skip
        elif short and t.startswith("-") and not t.startswith("--") and set(t[1:]) & set(short):
            reach.unseen(f"{name} {t} names a command it runs, which no rule can see into")


# Subcommands that run a command given after them (`uv run CMD`, `npm exec CMD`): any
# word of the call could be that command's program.
_RUNNERS = {
    "npm": ("exec", "x", "explore", "create", "init", "innit"),
    "uv": ("run", "tool"), "poetry": ("run", "shell"), "pipenv": ("run", "shell"),
    "pdm": ("run",), "hatch": ("run", "shell"), "rye": ("run",), "bundle": ("exec",),
    "conda": ("run",), "mamba": ("run",), "micromamba": ("run",), "mise": ("exec", "x"),
    "asdf": ("exec",), "direnv": ("exec",), "devbox": ("run", "shell"),
    "nix": ("run", "shell", "develop"), "flatpak": ("run",), "snap": ("run",),
    "dotnet": ("exec",), "go": (), "cargo": (), "make": (),
}  # fmt: skip
# Options whose value is a program or code.
_NPM_PROGRAMS = ("script-shell", "shell", "browser", "editor", "viewer", "git", "node-options",
                 "call", "node-gyp", "userconfig", "globalconfig")  # fmt: skip
# A configuration file sets those too: --userconfig and --globalconfig name one (npm's
# `--global` is itself, no abbreviation of --globalconfig).
_NPM_PLAIN = ("global",)


def _runner(reach: Reach, name: str, args: list[Word]) -> None:
    """A package or build tool whose subcommands run what their files say (`npm test`,
    `cargo test`, `go test`, `make test`: not looked into, as `make` is not), but some
    of which run a command given to them (`uv run`, `npm exec`) or have options that do
    (`npm --script-shell`, `go test -exec`, `cargo --config target.x.runner=...`,
    `make --eval`, `make CC='sh -c ...'`)."""
    if any(w.static and w.text in _RUNNERS[name] for w in args):
        _any_word(reach, name, args)
        return
    if name == "npm":
        _options_run(reach, name, args, _NPM_PROGRAMS, "c", _NPM_PLAIN)
    elif name == "go":
        _options_run(reach, name, args, ("exec", "toolexec", "vettool"))
        if args[:1] and args[0].text == "env" and any(w.text.startswith("-w") for w in args):
            reach.unseen("go env -w sets what later go commands run with (GOFLAGS)")
    elif name == "cargo":
        _options_run(reach, name, args, ("config",), "")
    elif name == "make":
        _options_run(reach, name, args, ("eval",), "E")
        values = [w.text.partition("=")[2] for w in args
                  if w.static and not w.text.startswith("-") and "=" in w.text]  # fmt: skip
        if values:  # a deny rule could match only a program the values name (not `V=1`)
            shapes = tuple(sorted({basename_glob(Word(x)) for v in values for x in v.split()}))
            reach.unseen("make's variable assignments can change the commands its rules run",
                         shapes)  # fmt: skip


HANDLERS: dict[str, Handler] = {
    "env": _env, "xargs": _xargs, "eval": _eval, "trap": _eval, "alias": _alias,
    "source": _source, ".": _source,
    "nice": _spec("n", "", "adjustment"), "nohup": _spec(), "setsid": _spec("", "ctty fork wait"),
    "time": _spec("fo", "append verbose portability quiet", "format output"),
    "command": _spec("", "", "", 0, "vV"), "builtin": _spec(), "exec": _spec("a"),
    "sudo": _spec("ugChprtUTDR", "preserve-env login shell non-interactive background "
                  "stdin askpass set-home reset-timestamp", "user group close-from host prompt "
                  "role type other-user command-timeout chdir chroot", 0, "elvkK"),
    "doas": _spec("uC", "", "", 0, "C"), "stdbuf": _spec("ioe", "", "input output error"),
    "ionice": _spec("cnp", "", "class classdata pid pgid uid", 0, "pPu"),
    "chrt": _spec("TPD", "", "sched-runtime sched-period sched-deadline", 1, "p"),
    "taskset": _spec("", "", "", 1, "p"), "timeout": _spec("sk", "foreground preserve-status "
                                                           "verbose", "signal kill-after", 1),
    "unshare": _spec("SGRwl"), "nsenter": _spec("tSGrw"), "chroot": _spec("", "skip-chdir",
                                                                          "userspec groups", 1),
    "caffeinate": _spec("tw"), "catchsegv": _spec(), "fakeroot": _spec("sil"),
    "busybox": _busybox, "toybox": _busybox, "su": _su, "runuser": _su, "script": _su,
    "flock": _su, "watch": _watch, "ssh": _ssh, "find": _find, "fd": _find, "git": git,
    "tar": _tar, "rsync": _remote_shell, "scp": _remote_shell, "zip": _remote_shell,
    "sort": _remote_shell, "man": _remote_shell, "awk": _awk, "sed": _sed, "rg": _rg,
    **dict.fromkeys(SHELLS, _shell),
    **dict.fromkeys(INTERPRETERS.keys() - {"awk", "sed"}, _interpreter),
    **dict.fromkeys(("bwrap", "firejail", "systemd-run", "strace", "ltrace", "valgrind", "perf",
                     "parallel", "npx", "pnpx", "bunx", "uvx", "pipx", "pkexec", "sg",
                     "proot", "torsocks", "proxychains", "expect", "dbus-run-session",
                     "xvfb-run", "nix-shell", "with-contenv", "entr", "inotifywait", "pnpm",
                     "yarn"), _any_word),
    **dict.fromkeys(_RUNNERS, _runner),
}  # fmt: skip
# Programs whose own options, arguments or subcommands can run a command (git -c, find
# -exec, tar --to-command, npm exec, uv run, go test -exec): a prefix approval of one
# stops before its options, and allows no call in which they run something.
RUNS_BY_OPTION = frozenset({"git", "find", "fd", "tar", "rsync", "scp", "zip", "sort", "man",
                            *_RUNNERS})  # fmt: skip
# Programs that only an option or two of makes run a command (`rg --pre`): a prefix
# approval of the program alone (`rg`) is offered, and allows no call with them.
RUNS_BY_FLAG = frozenset({"rg"})
# Programs that run what follows them, or code: no prefix approval is offered for them.
RUNS_ANYTHING = (frozenset(HANDLERS) - RUNS_BY_OPTION - RUNS_BY_FLAG) | {
    "docker", "podman", "kubectl", "nerdctl", "mosh", "sshpass", "ssh"}  # fmt: skip
