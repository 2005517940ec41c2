"""Where a package comes from: a directory, an archive (.tar.gz, .tgz, .tar, .zip) or a git
repository (a URL: `file://`, `https://`, `ssh://`, `git@host:path`; or a local
repository's path given with a ref), with a ref pinned as `SOURCE@REF` or `--ref REF`.

    fetched = fetch(source, ref, scratch)   # the package's files under scratch (a temp dir)
    fetched.root, fetched.source, fetched.ref, fetched.commit

Nothing is written outside `scratch`. An archive member that is absolute, climbs out with
`..`, is a link pointing out of the package, or is a device is refused (naming it), as is
an archive past MAX_FILES files or MAX_BYTES bytes. git runs with no configuration but
smith's own: no system or user config, no hooks, no fsmonitor, no templates, no
submodules, no credential prompts, so cloning runs no program the repository names.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass

from smith.diagnostics import DiagnosticKind, Source

MAX_FILES = 20_000
MAX_BYTES = 512 * 1024 * 1024
GIT_TIMEOUT = 300.0
ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
_URL = re.compile(r"^(file|https?|ssh|git)://|^[\w.-]+@[\w.-]+:")

SOURCE_MISSING = DiagnosticKind(
    "package.source-missing",
    what="{where} is no package source smith can read: {reason}",
    why="a package installs from a directory, an archive (.tar.gz, .tgz, .tar, .zip) or a "
    "git repository (a URL, or a local repository with a ref)",
    fix="give the package's directory, archive or repository URL (`smith plugins install "
    "./my-plugin`, `smith plugins install https://host/repo.git@v1`)",
)
ARCHIVE_UNSAFE = DiagnosticKind(
    "package.archive-unsafe",
    what="the archive {archive} holds {member}, which {problem}",
    why="a package is unpacked only inside smith's own directories: nothing in it may "
    "point or climb out of it, and it holds files, directories and links among them",
    fix="repack the package with relative paths inside one folder, and without links "
    "pointing out of it",
)
ARCHIVE_TOO_BIG = DiagnosticKind(
    "package.archive-too-big",
    what="the archive {archive} holds {amount}, more than a package may ({limit})",
    why="unpacking stops at this bound so that no archive can fill the disk",
    fix="make the package smaller (leave build outputs and caches out of it)",
)
REF_OF_A_FOLDER = DiagnosticKind(
    "package.ref-of-a-folder",
    what="{source_arg} was read as the folder {where} at the git ref {ref!r}, but {where} is no "
    "git repository",
    why="`SOURCE@REF` (or --ref) pins a ref of a git repository; a plain folder has none",
    fix="install the folder as it is (`smith plugins install {where}`), or give the "
    "repository that has the ref",
)
GIT_FAILED = DiagnosticKind(
    "package.git-failed",
    what="git could not {action} {where}: {reason}",
    why="a package from a git repository is cloned, then its ref checked out",
    fix="check the URL and the ref (`git ls-remote {where}` lists the refs)",
)


@dataclass(frozen=True)
class Fetched:
    root: str  # the package's directory (a copy under scratch, or the directory itself)
    source: str  # as recorded: an absolute path or a URL
    ref: str  # the ref asked for ("" for none)
    commit: str  # the commit installed from git ("" otherwise)
    kind: str  # "directory", "archive" or "git"


def split_ref(source: str, ref: str | None) -> tuple[str, str]:
    """(source, ref): `SOURCE@REF` splits at its last `@` when what follows holds no `/`
    or `:` and the whole is no existing path (git@host:path keeps its `@`)."""
    if ref:
        return source, ref
    head, at, tail = source.rpartition("@")
    if at and head and tail and "/" not in tail and ":" not in tail and not os.path.exists(source):
        return head, tail
    return source, ""


def fetch(source: str, ref: str | None, scratch: str) -> Fetched:
    """The package `source` names, fetched under `scratch` (see the module's docstring)."""
    where, pinned = split_ref(source, ref)
    if pinned and not _URL.match(where) and os.path.isdir(where) and not _is_repo(where):
        raise REF_OF_A_FOLDER.error(value=source, source=Source("argument", source),
                                    source_arg=source, where=where, ref=pinned)  # fmt: skip
    if _URL.match(where) or (pinned and os.path.isdir(where)):
        url = where if _URL.match(where) else os.path.abspath(where)
        root, commit = _clone(url, pinned, scratch)
        return Fetched(root, url, pinned, commit, "git")
    path = os.path.abspath(os.path.expanduser(where))
    if os.path.isdir(path):
        return Fetched(path, path, "", "", "directory")
    if os.path.isfile(path) and path.lower().endswith(ARCHIVES):
        unpacked = os.path.join(scratch, "unpacked")
        os.mkdir(unpacked)
        if path.lower().endswith(".zip"):
            _unzip(path, unpacked)
        else:
            _untar(path, unpacked)
        return Fetched(_single_folder(unpacked), path, "", "", "archive")
    reason = "it is a file, but no archive" if os.path.exists(path) else "nothing is there"
    raise _missing(where, reason)


def _is_repo(path: str) -> bool:
    """Whether the folder `path` is a git repository (a work tree's, or a bare one)."""
    bare = all(os.path.exists(os.path.join(path, p)) for p in ("HEAD", "objects", "refs"))
    return os.path.exists(os.path.join(path, ".git")) or bare


def _missing(where: str, reason: str) -> Exception:
    return SOURCE_MISSING.error(value=where, source=Source("argument", where), where=where,
                                reason=reason)  # fmt: skip


def _single_folder(unpacked: str) -> str:
    """The package's root in an unpacked archive: the archive's one folder when it has
    no manifest of its own at the top (name-1.0/plugin.kdl)."""
    entries = os.listdir(unpacked)
    if len(entries) == 1 and not os.path.exists(os.path.join(unpacked, "plugin.kdl")):
        only = os.path.join(unpacked, entries[0])
        if os.path.isdir(only) and not os.path.islink(only):
            return only
    return unpacked


def _member_problem(name: str) -> str | None:
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "climbs out of the package with '..'"
    return None


def _link_problem(name: str, target: str) -> str | None:
    """Whether a link at `name` (in the archive) to `target` stays inside the package: a
    target may only go down from the link's folder (no absolute path, no `..` part), so
    no chain of links, whatever else the archive unpacks, can lead out of it."""
    if not target or target.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", target):
        return f"is a link to the absolute path {target!r}"
    if ".." in re.split(r"[/\\]", target):
        return f"is a link to {target!r}, which climbs with '..' (a link may only point down)"
    return None


def _inside(dest: str, path: str) -> bool:
    """Whether `path`'s folder, links followed, is `dest` or inside it."""
    real = os.path.realpath(dest)
    parent = os.path.realpath(os.path.dirname(path))
    return parent == real or parent.startswith(real + os.sep)


def _unsafe(path: str, member: str, problem: str) -> Exception:
    return ARCHIVE_UNSAFE.error(value=member, source=Source("file", path),
                                archive=os.path.basename(path), member=member,
                                problem=problem)  # fmt: skip


def _untar(path: str, dest: str) -> None:
    """Unpack a tar after checking every member (ours: no climbing, no link pointing up or
    out, no special files, which alone keep every write inside `dest` on any Python), with
    tarfile's data filter besides where it has one; what the filter refuses is said as
    what it is, naming the member."""
    import tarfile

    archive = os.path.basename(path)
    try:
        with tarfile.open(path, "r:*") as tar:
            members = tar.getmembers()
            _bounded(archive, len(members), sum(m.size for m in members if m.isreg()))
            for m in members:
                problem = _member_problem(m.name)
                if problem is None and m.issym():
                    problem = _link_problem(m.name, m.linkname)
                elif problem is None and m.islnk() and _member_problem(m.linkname):
                    problem = f"is a hard link to {m.linkname!r}, out of the package"
                elif problem is None and not (m.isreg() or m.isdir()):
                    problem = "is a device, a FIFO or another special file"
                if problem is not None:
                    raise _unsafe(path, m.name, problem)
            data_filter = getattr(tarfile, "data_filter", None)
            if data_filter is not None:  # 3.11.4 on: its checks besides ours
                try:
                    tar.extractall(dest, members=members, filter="data")
                except tarfile.FilterError as exc:
                    member = exc.tarinfo.name if exc.tarinfo is not None else "a member"
                    raise _unsafe(path, member, f"is refused: {exc}") from None
            else:
                tar.extractall(dest, members=members)  # every member was checked above
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise _missing(path, f"it cannot be unpacked ({exc})") from None
    verify_links(dest, path)


def _unzip(path: str, dest: str) -> None:
    """Unpack a zip: every member checked first (no climbing, no link pointing up or out,
    no name twice, nothing inside a link); then folders and files, each written only
    where its folder (links followed) is inside `dest`; links last."""
    import zipfile

    archive = os.path.basename(path)
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            _bounded(archive, len(infos), sum(i.file_size for i in infos))
            seen: set[str] = set()
            links: list[str] = []
            for info in infos:
                problem = _member_problem(info.filename)
                key = "/".join(p for p in re.split(r"[/\\]", info.filename) if p not in ("", "."))
                if problem is None and key in seen:
                    problem = "is in it twice"
                seen.add(key)
                if problem is None and stat.S_ISLNK(info.external_attr >> 16):
                    target = z.read(info)[:4096].decode("utf-8", "replace")
                    problem = _link_problem(info.filename, target)
                    links.append(key)
                if problem is not None:
                    raise _unsafe(path, info.filename, problem)
            for info in infos:
                key = "/".join(p for p in re.split(r"[/\\]", info.filename) if p not in ("", "."))
                inside = next((link for link in links if key.startswith(link + "/")), None)
                if inside is not None:
                    raise _unsafe(path, info.filename, f"is inside the link {inside}")
            written = 0
            for info in sorted(infos, key=lambda i: stat.S_ISLNK(i.external_attr >> 16)):
                out = os.path.join(dest, *re.split(r"[/\\]", info.filename.rstrip("/")))
                if not _inside(dest, out):  # cannot happen after the checks above
                    raise _unsafe(path, info.filename, "would be written out of the package")
                if info.is_dir():
                    os.makedirs(out, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(out), exist_ok=True)
                if not _inside(dest, out):
                    raise _unsafe(path, info.filename, "would be written out of the package")
                if stat.S_ISLNK(info.external_attr >> 16):
                    os.symlink(z.read(info).decode("utf-8"), out)
                    continue
                with z.open(info) as src, open(out, "xb") as dst:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > MAX_BYTES:  # a header that lied about the size
                            _bounded(archive, 0, written)
                        dst.write(chunk)
                if (info.external_attr >> 16) & 0o111:
                    os.chmod(out, 0o755)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise _missing(path, f"it cannot be unpacked ({exc})") from None
    verify_links(dest, path)


def _bounded(archive: str, files: int, size: int) -> None:
    where = Source("argument", archive)
    if files > MAX_FILES:
        raise ARCHIVE_TOO_BIG.error(source=where, archive=archive, amount=f"{files:,} files",
                                    limit=f"{MAX_FILES:,} files")  # fmt: skip
    if size > MAX_BYTES:
        raise ARCHIVE_TOO_BIG.error(source=where, archive=archive, amount=f"{size:,} bytes",
                                    limit=f"{MAX_BYTES:,} bytes")  # fmt: skip


def verify_links(root: str, origin: str) -> None:
    """Every link under `root` resolves inside it (a chain of links included); raises
    ARCHIVE_UNSAFE naming the first that does not."""
    real = os.path.realpath(root)
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if target != real and not target.startswith(real + os.sep):
                    member = os.path.relpath(path, root)
                    raise ARCHIVE_UNSAFE.error(value=member, source=Source("file", origin),
                                               archive=os.path.basename(origin), member=member,
                                               problem=f"is a link to {os.readlink(path)!r}, "
                                               "out of the package")  # fmt: skip


def git_env(scratch: str) -> dict[str, str]:
    """An environment in which git reads no configuration but what smith gives it."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSH_AUTH_SOCK", "HTTPS_PROXY", "https_proxy",
            "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=scratch,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="true",
        SSH_ASKPASS="true",
        GIT_SSH_COMMAND="ssh -oBatchMode=yes",
    )
    return env


# Settings for every git call: nothing the repository's or anyone's config names is run.
SAFE_GIT = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", "protocol.ext.allow=never", "-c", "submodule.recurse=false",
            "-c", "core.symlinks=true", "-c", "advice.detachedHead=false")  # fmt: skip


def _git(args: list[str], scratch: str, cwd: str | None = None, watch: str = "") -> str:
    """Run git (SAFE_GIT, git_env); with `watch`, a folder it writes, stopped once that
    folder passes MAX_BYTES, so that no repository can fill the disk."""
    import tempfile
    import time

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["git", *SAFE_GIT, *args], cwd=cwd, env=git_env(scratch),
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + GIT_TIMEOUT
        while True:
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                over = watch and _size(watch) > MAX_BYTES
                if over or time.monotonic() > deadline:
                    proc.kill()
                    proc.wait()
                    if over:
                        raise RuntimeError(f"it passed {MAX_BYTES:,} bytes, more than a package "
                                           "may take, and was stopped") from None  # fmt: skip
                    raise RuntimeError(f"git took more than {GIT_TIMEOUT:.0f} s") from None
        if watch and _size(watch) > MAX_BYTES:
            raise RuntimeError(f"it takes more than {MAX_BYTES:,} bytes, more than a package may")
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError((stderr.strip().splitlines() or ["git failed"])[-1])
    return stdout.strip()


def _size(root: str) -> int:
    """The bytes of the files under `root` (what cannot be read counts nothing)."""
    total = 0
    for here, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(here, name)).st_size
            except OSError:
                continue
    return total


def _clone(url: str, ref: str, scratch: str) -> tuple[str, str]:
    """Clone `url` into scratch/repo and check out `ref` (else the default branch): the
    checkout's path and its commit."""
    repo = os.path.join(scratch, "repo")
    try:
        _git(["clone", "--quiet", "--no-checkout", "--template=", "--no-recurse-submodules",
              "--", url, repo], scratch, watch=repo)  # fmt: skip
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        raise GIT_FAILED.error(source=Source("argument", url), action="clone", reason=str(exc),
                               where=url) from None  # fmt: skip
    try:
        commit = ""
        for candidate in [ref, f"origin/{ref}"] if ref else ["HEAD"]:
            try:
                commit = _git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"],
                              scratch, repo)  # fmt: skip
                break
            except RuntimeError:
                continue
        if not commit:
            raise RuntimeError(f"no branch, tag or commit named {ref!r}")
        _git(["checkout", "--quiet", "--detach", commit], scratch, repo, watch=repo)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        action = f"check out {ref or 'HEAD'} of"
        raise GIT_FAILED.error(source=Source("argument", url), action=action, reason=str(exc),
                               where=url) from None  # fmt: skip
    return repo, commit


__all__ = ["Fetched", "fetch", "split_ref", "verify_links"]
