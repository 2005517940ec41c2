"""The files libgit2 reads besides the project's content (ignore and attribute rules, the
project's own git directory), checked before it reads them: a few can hang it for ever.

- libgit2 (1.9) loops for ever parsing an ignore file with a line whose pattern is empty
  before a vertical tab or form feed (`\\v`, `\\f`: at the start, after blanks, after `!`
  or `/`). Git reads such a line as a pattern that starts with that character.
- It opens `.gitignore`, `.gitattributes`, the excludes file and the project's `.git`
  files by name, following links and blocking: a FIFO (or a device) there never returns.

Rule files smith writes or copies (the shadow repository's `info/exclude`, its copy of the
user's global excludes, the copies `ignored_in` probes) are neutralised: each such
character is escaped, which is how git reads it anyway. Files in the work tree are the
user's, never rewritten: `RuleFiles` checks every one libgit2 can reach before it does
(by stat data, so an unchanged tree costs one `lstat` per directory), and an unsafe one
pauses file history with HISTORY_UNSAFE_RULES, naming the file, the line and the fix.
A walk of the tree is exposed as `RuleFiles.check_tree`; `check_above(path)` covers the
rule files an ignore lookup of `path` reads.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

from smith.diagnostics import DiagnosticKind, SmithError, Source

HISTORY_UNSAFE_RULES = DiagnosticKind(
    "history.unsafe-rules",
    what="file history is paused for this project: {path} {problem}",
    why="libgit2, the library smith's file history uses, {effect}; smith never rewrites "
    "your files, so it takes no snapshot (and makes no undo, redo or restore) while the "
    "file is like this. git itself is not affected",
    fix="{fix}; file history goes on by itself once the file is fixed (or set vcs.enabled "
    "to false for this project)",
)

# A line libgit2 loops on: nothing but blanks, `!` and `/` before a \v or \f (a `#` line is
# a comment, and a backslash before the character escapes it).
HANGS = re.compile(rb"^[ \t\r!/]*[\v\f]", re.M)
UNESCAPED = re.compile(rb"(?<!\\)((?:\\\\)*)([\v\f])")
RULE_NAMES = (".gitignore", ".gitattributes")
READ_LIMIT = 64 << 20  # an ignore file past this is refused rather than read whole
KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}

Stamp = tuple[int, int, int, int]


def hanging_line(data: bytes) -> int | None:
    """The number (from 1) of the first line of ignore rules `data` libgit2 would loop on."""
    found = HANGS.search(data)
    if found is None:
        return None
    return data.count(b"\n", 0, found.start()) + 1


def neutralised(data: bytes) -> bytes:
    """Ignore rules `data` with every unescaped \\v and \\f escaped: the same patterns for
    git, and nothing libgit2 loops on."""
    return UNESCAPED.sub(rb"\1\\\2", data)


def literal(rel: str) -> str:
    """An ignore pattern matching exactly the path `rel` (relative, with `/`)."""
    escaped = re.sub(r"([\\*?\[\]!# \v\f])", r"\\\1", rel)
    return escaped


def unsafe(path: str, problem: str, effect: str, fix: str, shown: str) -> SmithError:
    return HISTORY_UNSAFE_RULES.error(
        value=shown, source=Source("file", path), path=shown, problem=problem,
        effect=effect, fix=fix,
    )  # fmt: skip


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def stamp(path: str) -> Stamp | None:
    """What changes when the file at `path` does (None: there is none)."""
    try:
        return _stamp(os.stat(path))
    except OSError:
        return None


def read_rules(path: str, shown: str, *, content: bool = True) -> bytes | None:
    """The bytes of the rule file at `path` as libgit2 would read them (None: it would
    take it for absent: missing, a directory, unreadable), raising HISTORY_UNSAFE_RULES
    if reading it would hang libgit2. `content`: check its ignore lines too (else the
    bytes are not read: b"" stands for a regular file)."""
    try:
        st = os.stat(path)  # libgit2 follows links
    except OSError:
        return None
    kind = KINDS.get(stat.S_IFMT(st.st_mode))
    if kind is not None:
        leads = "leads to" if os.path.islink(path) else "is"
        raise unsafe(
            path, f"{leads} {kind}, not a regular file", "blocks for ever opening it",
            "replace it with a regular file, or remove it", shown,
        )  # fmt: skip
    if not stat.S_ISREG(st.st_mode):
        return None
    if not content:
        return b""
    text = read_regular(path)
    if text is None:
        return None
    line = hanging_line(text)
    if line is not None:
        vertical = b"\v" in text.splitlines()[line - 1]
        char = "a vertical tab (\\v)" if vertical else "a form feed (\\f)"
        raise unsafe(
            path, f"has {char} at the start of line {line}", "loops for ever on such a line",
            f"remove that character from line {line} (git reads the line as a pattern "
            "starting with it, which names no usual file)", shown,
        )  # fmt: skip
    return text


def read_regular(path: str, limit: int = READ_LIMIT) -> bytes | None:
    """The bytes of `path` if it is a regular file (after links) of at most `limit`
    bytes, read without blocking; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks) if size <= limit else None


class RuleFiles:
    """The rule files of one work tree, checked: each is read again only when its stat
    data changes (a link, whose target can change unseen, every time)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.files: dict[str, Stamp | None] = {}  # present rule file -> stat (None: a link)
        # directory -> (inode and mtime, the subdirectories entered)
        self.dirs: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}
        self.key: object = None  # what the last walk's decisions depended on besides rules

    def check_file(self, rel: str) -> bool:
        """Check the rule file at `rel` (raising HISTORY_UNSAFE_RULES); False if it
        appeared, went or changed since it was last checked."""
        full = os.path.join(self.root, rel)
        try:
            st = os.lstat(full)
        except OSError:
            return self.files.pop(rel, False) is False
        now = None if stat.S_ISLNK(st.st_mode) else _stamp(st)
        known = rel in self.files
        if known and now is not None and self.files[rel] == now:
            return True
        read_rules(full, rel, content=rel.endswith(".gitignore"))
        self.files[rel] = now
        return known and now is None

    def check_above(self, path: str) -> None:
        """Check the `.gitignore` files an ignore lookup of `path` reads: those of the
        root and of each directory above `path`."""
        parts = path.rstrip("/").split("/")[:-1]
        self.check_file(".gitignore")
        for depth in range(1, len(parts) + 1):
            self.check_file("/".join(parts[:depth]) + "/.gitignore")

    def check_tree(self, enters: Callable[[str], bool], key: object = None) -> None:
        """Check the rule files of every directory a scan may enter: from the root down,
        into each subdirectory (not `.git`, not a link) for which `enters(rel)` holds. A
        directory whose listing is unchanged since the last walk is not listed again,
        nor are its subdirectories asked about again, unless a rule file or `key`
        changed meanwhile (the rule files known are checked first, each by its stat)."""
        known = self.dirs if self._rules_unchanged() and key == self.key else {}
        walked: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}
        top, lstat, isdir = self.root + "/", os.lstat, stat.S_ISDIR  # (a hot loop)
        stack = [""]
        while stack:
            rel = stack.pop()
            try:
                st = lstat(top + rel if rel else self.root)
            except OSError:
                continue
            if not isdir(st.st_mode):
                continue
            seen = (st.st_ino, st.st_mtime_ns)  # a name made, gone or renamed changes it
            before = known.get(rel)
            if before is not None and before[0] == seen:
                entered = before[1]  # no rule file came or went: its listing is the same
            else:
                prefix = rel + "/" if rel else ""
                for name in RULE_NAMES:
                    if not self.check_file(prefix + name):
                        known = {}  # what is ignored below here may differ now
                entered = tuple(self._subdirs(top + rel if rel else self.root, prefix, enters))
            walked[rel] = (seen, entered)
            stack += entered
        self.dirs, self.key = walked, key

    def _subdirs(self, full: str, prefix: str, enters: Callable[[str], bool]) -> list[str]:
        try:
            with os.scandir(full) as listing:
                names = [e.name for e in listing if e.is_dir(follow_symlinks=False)]
        except OSError:
            return []
        subdirs = (prefix + n for n in names if n.lower() != ".git")
        return [rel for rel in subdirs if enters(rel)]

    def _rules_unchanged(self) -> bool:
        unchanged = True
        for rel in list(self.files):
            unchanged = self.check_file(rel) and unchanged
        return unchanged


def check_gitdirs(root: str) -> bool:
    """Whether every `.git` from `root` up (the ones libgit2's discovery may read) is safe
    to open: a `.git` file, and the files libgit2 reads in a git directory (HEAD, config,
    index, commondir, gitdir), are each absent, a directory or a regular file."""
    current = os.path.realpath(root)
    while True:
        dot = os.path.join(current, ".git")
        try:
            st = os.stat(dot)
        except OSError:
            st = None
        if st is not None:
            if stat.S_ISREG(st.st_mode):
                first = (read_regular(dot, 4096) or b"").split(b"\n", 1)[0]
                target = first[len(b"gitdir:") :].strip() if first.startswith(b"gitdir:") else b""
                if target and not _gitdir_safe(os.path.join(current, os.fsdecode(target))):
                    return False
            elif stat.S_ISDIR(st.st_mode):
                if not _gitdir_safe(dot):
                    return False
            else:
                return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _gitdir_safe(gitdir: str, depth: int = 0) -> bool:
    for name in ("HEAD", "config", "index", "commondir", "gitdir"):
        try:
            st = os.stat(os.path.join(gitdir, name))
        except OSError:
            continue
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return False
    common = read_regular(os.path.join(gitdir, "commondir"), 4096)
    if common and common.strip() and depth < 4:  # a worktree's: the main git directory
        other = os.path.join(gitdir, os.fsdecode(common.strip()))
        if os.path.realpath(other) != os.path.realpath(gitdir):
            return _gitdir_safe(other, depth + 1)
    return True
