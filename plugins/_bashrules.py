"""Approval rules against a bash command, parsed as bash parses it (tree-sitter-bash).

`analyse(command)` parses once and finds every program the command runs: each simple
command anywhere in it (lists, pipelines, subshells, groups, loops, functions, command
and process substitutions, here-documents), its words as bash makes them
(plugins/_bashwords.py), and through what runs others (plugins/_bashprograms.py: wrappers
with their own options, `sh -c`, `eval` of literal text, `find -exec`, `git -c
alias.x='!...'`). What cannot be known before the command runs is `Unseen`, with the
programs it could be: a variable or substitution as the program, a glob (`/bin/r?`),
`eval` of computed text, code given to an interpreter, source bash's grammar rejects.

`denial(rules, analysis)` is the first deny rule that matches, or could match, with why;
`allows(rule, analysis)` whether an allow rule covers a lone simple command and all it
runs. Options are matched by meaning (`rm -rf` is `rm -Rf`, `rm --recursive --force`)."""

from __future__ import annotations

import fnmatch
import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

from ._bashprograms import HANDLERS, RUNS_ANYTHING, program
from ._bashwords import Word, basename_glob, expand, fallback, joined

DEPTH = 4  # code within code (`sh -c "eval 'bash -c ...'"`) looked into, at most
NESTED = 16  # commands within a command's words (`find -exec find -exec ...`), at most
EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution",
                        "process_substitution", "arithmetic_expansion"})  # fmt: skip
SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
# Variables whose value a program runs (GIT_PAGER, EDITOR, GIT_SSH_COMMAND, LESSOPEN) or
# that make programs load code (LD_PRELOAD, BASH_ENV, GIT_CONFIG_*): by their shape.
RUNNER_VAR = re.compile(r"(PAGER|EDITOR|VISUAL|COMMAND|ASKPASS|SSH|DIFF|OPEN|CLOSE|BROWSER|"
                        r"PROXY|CMD|HOOK)$")  # fmt: skip
LOADER_VAR = re.compile(r"^(BASH_ENV|ENV|LD_PRELOAD|LD_AUDIT|PYTHONSTARTUP|PYTHONPATH|PERL5OPT|"
                        r"PERL5LIB|PERL5DB|NODE_OPTIONS|RUBYOPT|PROMPT_COMMAND|SHELLOPTS|"
                        r"BASHOPTS|PS4|GIT_CONFIG\w*|GIT_EXEC_PATH|BASH_FUNC_.*)$")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Run:
    words: tuple[Word, ...]  # the program first, then its arguments
    name: str  # what the program is (plugins._bashprograms.program)
    at: int | None  # its program's index in a lone simple command's words, else None


@dataclass(frozen=True, slots=True)
class Unseen:
    why: str
    programs: tuple[str, ...]  # fnmatch patterns of the programs it could run ("*": any)


@dataclass(frozen=True, slots=True)
class Analysis:
    runs: tuple[Run, ...]
    unseen: tuple[Unseen, ...]
    simple: tuple[Word, ...] | None  # the words of a lone simple command, else None


_BRACE = re.compile(rb"(?<!\$)\{(?=[^\s}])")
_NOT_BLANKS = bytes.maketrans(b"\v\f\r", b"\x1c\x1c\x1c")


_PARSING = threading.Lock()


@functools.cache
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _parse(source: bytes) -> Any:
    with _PARSING:  # one parser, and smith mcp reviews calls on threads
        return _parser().parse(source).root_node


@functools.lru_cache(maxsize=512)
def analyse(command: str, depth: int = 0) -> Analysis:
    """Everything `command` runs, parsed once (and kept for the next call with it)."""
    walk = _Walk(command, depth)
    return Analysis(tuple(walk.runs), tuple(walk.hidden), walk.simple)


def _lone(root: Any) -> Any:
    """The command node when the source is one simple command and nothing else."""
    parts = [c for c in root.children if c.type != "comment"]
    if root.has_error or len(parts) != 1 or parts[0].type != "command":
        return None
    node = parts[0]
    stack = list(node.children)
    while stack:
        n = stack.pop()
        if (
            n.type in SUBSTITUTIONS
            or n.type == "variable_assignment"
            or n.type.endswith("redirect")
        ):
            return None
        stack += n.children
    return node


class _Walk:
    """The walk of one command's syntax tree; the `Reach` its program handlers report to."""

    def __init__(self, command: str, depth: int) -> None:
        self.depth = depth
        self.runs: list[Run] = []
        self.hidden: list[Unseen] = []
        self.simple: tuple[Word, ...] | None = None
        self.stdin: Word | None = None
        self._base: int | None = None
        self._nested = 0
        self.src = command.encode("utf-8", "surrogatepass")
        self._chars = None if command.isascii() else self._char_offsets()
        # bash splits words on spaces and tabs only; tree-sitter also on \v, \f and \r,
        # so they are parsed as a character of a word (the words' text is the source's).
        # `{` followed by a word character is never bash's group (`{rm,-rf,x}` is brace
        # expansion), though tree-sitter reads it as one: parsed as a word character too.
        root = _parse(_BRACE.sub(b"\x1d", self.src.translate(_NOT_BLANKS)))
        top = _lone(root)
        errors = False
        covered = bytearray(len(self.src))
        stack = [root]
        while stack:
            node = stack.pop()
            kind = node.type
            if not node.child_count:
                covered[node.start_byte : node.end_byte] = b"\x01" * (
                    node.end_byte - node.start_byte
                )
            if kind == "command":
                self._command(node, top is not None and node.id == top.id)
            elif kind == "ERROR":
                errors = True
                self._error(self._text(node.start_byte, node.end_byte))
            elif kind == "variable_assignment":
                self._assignment(node)
            stack += reversed(node.children)
        if root.has_error and not errors:
            self._error(command)
        # Source no node holds (tree-sitter drops the `-` of `python - <<EOF`): words
        # this check never saw, so they could be anything.
        gaps = b"".join(self.src[m.start() : m.end()] for m in re.finditer(b"\0+", covered))
        lost = gaps.replace(b"\\\n", b"").strip(b" \t\n;").decode("utf-8", "replace")
        if lost:
            why = f"part of it, `{lost[:60]}`, is not read by bash's grammar as this check has it"
            self.hidden.append(Unseen(why, ("*",)))

    def _char_offsets(self) -> list[int]:
        offsets, at = [], 0
        for ch in self.src.decode("utf-8", "surrogatepass"):
            offsets += [at] * len(ch.encode("utf-8", "surrogatepass"))
            at += 1
        return [*offsets, at]

    def _text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "surrogatepass")

    def _words(self, nodes: list[Any]) -> list[Word]:
        """The words of adjacent nodes (`a"b"$c` is one word of three nodes)."""
        start, end = nodes[0].start_byte, nodes[-1].end_byte
        chars = self._chars
        spans: list[tuple[int, int]] = []
        stack = list(reversed(nodes))
        while stack:
            n = stack.pop()
            if n.type in EXPANSIONS:
                a, b = n.start_byte - start, n.end_byte - start
                if chars is not None:
                    a, b = chars[n.start_byte] - chars[start], chars[n.end_byte] - chars[start]
                spans.append((a, b))
            else:
                stack += reversed(n.children)
        return expand(self._text(start, end), spans)

    def _command(self, node: Any, top: bool) -> None:
        groups: list[list[Any]] = []
        for child in node.children:
            if child.type == "variable_assignment" or child.type.endswith("redirect"):
                continue
            if child.type == "comment":
                continue
            if groups and groups[-1][-1].end_byte == child.start_byte:
                groups[-1].append(child)
            else:
                groups.append([child])
        words = [w for g in groups for w in self._words(g)]
        if top:
            self.simple = tuple(words)
        self.stdin = self._stdin(node)
        self._program(words, 0 if top else None)
        self.stdin = None

    def _stdin(self, node: Any) -> Word | None:
        """A here-document's or here-string's text, when it is there to read."""
        parent = node.parent
        redirects = [*node.children, *(parent.children if parent is not None and
                                       parent.type == "redirected_statement" else [])]  # fmt: skip
        for r in redirects:
            if r.type == "herestring_redirect":
                parts = [c for c in r.children if c.type != "<<<"]
                return self._words(parts)[0] if parts else None
            if r.type == "heredoc_redirect":
                start = next((c for c in r.children if c.type == "heredoc_start"), None)
                body = next((c for c in r.children if c.type == "heredoc_body"), None)
                if body is None:
                    return Word("")
                delimiter = "" if start is None else self._text(start.start_byte, start.end_byte)
                quoted = re.search(r"['\"\\]", delimiter)
                text = self._text(body.start_byte, body.end_byte)
                if quoted or not any(c.type in EXPANSIONS for c in body.children):
                    return Word(text)
                return Word(text, "*", True, text)
        return None

    def _program(self, words: list[Word], at: int | None) -> None:
        """A command's program and, through it, what it runs."""
        while words:
            first = words[0]
            if not first.static:
                self._unknown_program(first)
                return
            name = program(first.text)
            self.runs.append(Run(tuple(words), name, at))
            handler = HANDLERS.get(name)
            if handler is None:
                return
            base, self._base = self._base, at
            try:
                nxt = handler(self, name, list(words[1:]))
            finally:
                self._base = base
            if nxt is None:
                return
            words = words[1 + nxt :]
            at = None if at is None else at + 1 + nxt

    def _unknown_program(self, word: Word) -> None:
        shape = basename_glob(word)
        anything = shape == "*" or any(fnmatch.fnmatchcase(n, shape) for n in RUNS_ANYTHING)
        unknown = "$" in word.raw or "`" in word.raw or word.splits
        why = f"its program, {word.shown()}, " + (
            "cannot be known before it runs"
            if unknown
            else "is a pattern that names a file only when it runs"
        )
        self.hidden.append(Unseen(why, ("*",) if anything else (shape,)))

    def _error(self, text: str) -> None:
        shapes = {basename_glob(w) for w in fallback(text)}
        anything = "*" in shapes or any(fnmatch.fnmatchcase(n, s) for s in shapes
                                        for n in RUNS_ANYTHING)  # fmt: skip
        shown = text if len(text) <= 60 else text[:60] + "…"
        self.hidden.append(Unseen(f"bash's grammar as this check reads it rejects `{shown}`",
                                  ("*",) if anything else tuple(sorted(shapes))))  # fmt: skip

    def _assignment(self, node: Any) -> None:
        name = next((c for c in node.children if c.type == "variable_name"), None)
        if name is None:
            return
        var = self._text(name.start_byte, name.end_byte)
        value = [c for c in node.children if c.is_named and c.id != name.id]
        if LOADER_VAR.match(var):
            self.hidden.append(Unseen(f"{var} makes programs load code no rule can see", ("*",)))
        elif RUNNER_VAR.search(var) and value:
            self.code(joined(self._words(value)), var)

    # Reach: what program handlers report.
    def run(self, words: Any, offset: int | None) -> None:
        base = self._base
        at = None if base is None or offset is None else base + 1 + offset
        if self._nested >= NESTED:
            self.unseen("it runs commands within commands too deep to look into")
            return
        self._nested += 1
        try:
            self._program(list(words), at)
        finally:
            self._nested -= 1

    def code(self, word: Word, what: str) -> None:
        if not word.static:
            self.hidden.append(
                Unseen(f"{what} runs text that cannot be known before it runs", ("*",))
            )
        elif self.depth >= DEPTH:
            self.hidden.append(Unseen(f"{what} runs code nested too deep to look into", ("*",)))
        else:
            inner = analyse(word.text, self.depth + 1)
            self.runs += [Run(r.words, r.name, None) for r in inner.runs]
            self.hidden += inner.unseen

    def unseen(self, why: str, programs: tuple[str, ...] = ("*",)) -> None:
        self.hidden.append(Unseen(why, programs))


# Options by meaning, for the programs deny rules commonly name: each spelling to the
# meanings it has (`cp -a` copies recursively too). Short options group (`-rf`) unless
# the program's options are whole words (find's `-delete`).
MEANINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "rm": {"-R": ("-r",), "--recursive": ("-r",), "--force": ("-f",), "--dir": ("-d",),
           "--interactive": ("-i",), "--verbose": ("-v",), "--one-file-system": (),
           "--no-preserve-root": ("--no-preserve-root",), "--preserve-root": ()},
    "cp": {"-R": ("-r",), "--recursive": ("-r",), "-a": ("-a", "-r"), "--archive": ("-a", "-r"),
           "--force": ("-f",)},
    "mv": {"--force": ("-f",), "--no-clobber": ("-n",)},
    "ln": {"--symbolic": ("-s",), "--force": ("-f",)},
    "chmod": {"--recursive": ("-R",)}, "chown": {"--recursive": ("-R",)},
    "chgrp": {"--recursive": ("-R",)},
    "shred": {"--remove": ("-u",), "--zero": ("-z",), "--force": ("-f",)},
    "sed": {"--in-place": ("-i",)}, "find": {},
    "git push": {"--force": ("-f",), "--force-with-lease": ("-f",), "--delete": ("-d",),
                 "--mirror": ("--mirror",)},
    "git branch": {"-D": ("-d", "-f"), "--delete": ("-d",), "--force": ("-f",),
                   "-M": ("-m", "-f"), "--move": ("-m",)},
    "git clean": {"--force": ("-f",), "--dry-run": ("-n",)},
    "git checkout": {"--force": ("-f",)},
    "git switch": {"--force": ("-f",), "--discard-changes": ("-f",)},
    "git tag": {"--delete": ("-d",), "--force": ("-f",)},
}  # fmt: skip
WHOLE_WORD_OPTIONS = frozenset({"find"})
SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "KILL": 9, "USR1": 10, "USR2": 12, "TERM": 15,
           "CONT": 18, "STOP": 19}  # fmt: skip


def _signal(text: str) -> str | None:
    name = text.upper().removeprefix("SIG")
    number = int(name) if name.isdigit() else SIGNALS.get(name)
    return None if number is None else f"-{number}"


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    literal: str  # the base name of its first word
    program: str  # what that program is (python3 -> python)
    key: str  # its MEANINGS entry: the program, or "git push"
    options: frozenset[str]  # meanings
    operands: tuple[str, ...]


def _key(literal: str, name: str, operands: list[str]) -> str:
    sub = f"{name} {operands[0]}" if operands else name
    return sub if sub in MEANINGS else (name if name in MEANINGS else literal)


@functools.lru_cache(maxsize=256)
def rule_words(text: str) -> tuple[str, ...]:
    """A rule's words as bash would make them (quotes removed, braces expanded)."""
    return tuple(w.text for token in text.split() for w in expand(token))


@functools.lru_cache(maxsize=256)
def rule(text: str) -> Rule | None:
    """A deny or allow rule's words, its options by meaning (None: an empty rule)."""
    words = rule_words(text)
    if not words:
        return None
    literal = words[0].rsplit("/", 1)[-1]
    name = program(literal)
    operands = [w for w in words[1:] if not w.startswith("-") or w == "-"]
    key = _key(literal, name, operands)
    options, _, _ = _meanings(key, [Word(w) for w in words[1:]])
    return Rule(text, literal, name, key, frozenset(options), tuple(operands))


def _meanings(key: str, words: list[Word]) -> tuple[set[str], set[str], list[tuple[Word, bool]]]:
    """A command's options by meaning, its operands, and its words not known before it
    runs (each with whether it comes after `--`, where it can be no option)."""
    table = MEANINGS.get(key, {})
    longs = [k[2:] for k in table if k.startswith("--")]
    options: set[str] = set()
    operands: set[str] = set()
    unknown: list[tuple[Word, bool]] = []
    ended, signal_next = False, False
    for w in words:
        t = w.text
        if not w.static:
            unknown.append((w, ended))
            continue
        if signal_next:
            options.add(_signal(t) or t)
            signal_next = False
        elif ended or t == "-" or not t.startswith("-"):
            operands.add(t)
            if key == "git push" and t.startswith("+"):
                options.add("-f")  # +refspec forces that ref
        elif t == "--":
            ended = True
        elif key in ("kill", "pkill", "killall") and (
            t in ("-s", "-n", "--signal") or _signal(t[1:]) or t.startswith("--signal=")
        ):
            if t.startswith("--signal="):
                options.add(_signal(t.partition("=")[2]) or t)
            elif t in ("-s", "-n", "--signal"):
                signal_next = True
            else:
                options.add(_signal(t[1:]) or t)
        elif t.startswith("--"):
            name = t[2:].partition("=")[0]
            hits = [k for k in longs if k.startswith(name)] if name not in longs else [name]
            spelled = f"--{hits[0]}" if len(hits) == 1 else f"--{name}"
            options.update(table.get(spelled, (spelled,)))
        elif key.split(maxsplit=1)[0] in WHOLE_WORD_OPTIONS:
            options.update(table.get(t, (t,)))
        else:
            for ch in t[1:]:
                options.update(table.get(f"-{ch}", (f"-{ch}",)))
    return options, operands, unknown


def _spellings(key: str, meaning: str) -> list[str]:
    table = MEANINGS.get(key, {})
    return [meaning, *(k for k, v in table.items() if meaning in v)]


def verdict(r: Rule, run: Run) -> str | None:
    """Whether `run` is the rule's: "" it is, a reason it could be, or None."""
    literal = run.words[0].text.rsplit("/", 1)[-1]
    if literal != r.literal and run.name != r.program:
        return None
    options, operands, unknown = _meanings(r.key, list(run.words[1:]))
    could = ""
    for meaning in sorted(r.options - options):
        spellings = _spellings(r.key, meaning)
        w = next((u for u, ended in unknown if not ended
                  and any(u.could_be(s) for s in spellings)), None)  # fmt: skip
        if w is None:
            return None
        could = could or (
            f"its argument {w.shown()} cannot be known before it runs and could be "
            f"{meaning} (put `--` before arguments that are no options)"
        )
    for operand in r.operands:
        if operand in operands:
            continue
        w = next((u for u, _ in unknown if u.could_be(operand)), None)
        if w is None:
            return None
        could = (
            could
            or f"its argument {w.shown()} cannot be known before it runs and could be {operand}"
        )
    return could


def denial(rules: list[str], analysis: Analysis) -> str | None:
    """Why the first deny rule that matches denies the command, else why the first that
    could match it does (what it cannot see), else None."""
    could = None
    for text in rules:
        r = rule(text)
        if r is None:
            continue
        for run in analysis.runs:
            why = verdict(r, run)
            if why == "":
                return f"the approval.deny rule {text!r} matches this bash call"
            if why is not None and could is None:
                could = f"the approval.deny rule {text!r} could match this bash call: {why}"
        if could is None:
            for u in analysis.unseen:
                if any(
                    fnmatch.fnmatchcase(n, p) for p in u.programs for n in (r.literal, r.program)
                ):
                    could = (f"the approval.deny rule {text!r} could match this bash call: "
                             f"{u.why}, so it is denied")  # fmt: skip
                    break
    return could


# Programs rustup runs under the toolchain a first `+word` names (`cargo +nightly test`).
TOOLCHAINS = frozenset({"cargo", "rustc", "rustdoc", "rust-gdb", "rust-lldb", "clippy-driver",
                        "rustfmt", "cargo-clippy", "cargo-fmt", "rust-analyzer"})  # fmt: skip


def toolchain(words: tuple[Word, ...]) -> bool:
    """Whether the second word picks a rustup toolchain (`cargo +nightly`)."""
    return (len(words) > 1 and words[0].static and program(words[0].text) in TOOLCHAINS
            and words[1].static and words[1].text.startswith("+"))  # fmt: skip


def allows(text: str, analysis: Analysis) -> bool:
    """Whether the allow rule `text` covers the command: a lone simple command (no list,
    pipe, redirection, substitution or assignment) whose first words are the rule's, and
    which runs nothing beyond them (`find .` does not cover `find . -exec rm {} ;`, nor
    `git` cover `git -c alias.x='!sh' x`). A toolchain (`cargo +nightly test`) is skipped
    unless the rule names one: `cargo test` covers it; `cargo +nightly` covers nothing."""
    want = rule_words(text)
    words = analysis.simple
    if not want or words is None or analysis.unseen:
        return False
    named = len(want) > 1 and want[1].startswith("+") and program(want[0]) in TOOLCHAINS
    if named and len(want) == 2:
        return False  # a toolchain and no subcommand (once offered): it approves none
    skipped = toolchain(words) and not named
    if skipped:
        words = words[:1] + words[2:]
    if len(words) < len(want):
        return False
    if any(not w.static or w.text != x for w, x in zip(words, want, strict=False)):
        return False
    return all(r.at is not None and r.at < len(want) + skipped for r in analysis.runs[1:])
