"""The installed packages: copies in `$SMITH_HOME/plugins/<name>/`, and what each came from
in `$SMITH_HOME/plugins/installed.json`:

    {"NAME": {"source": ..., "ref": ..., "commit": ..., "sha256": ..., "kind": ...,
              "version": ..., "installed_at": ..., "grants": [...]}}

    store = Store(home)
    store.install(fetched_root, package, record)    # copies, checks, replaces atomically
    store.remove(name); store.records(); store.path(name)

Every change happens under the store's lock (flock on its directory), so two `smith
plugins` runs cannot interleave; a package is copied into a staging folder inside the
store (links checked to stay inside it, `.git` left out) and swapped into place in one
step (renameat2's RENAME_EXCHANGE on Linux; elsewhere two renames), and
installed.json is replaced atomically (smith._atomic), so a reader sees the old package
or the new one, never half. Nothing is written outside the store's directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import time
import uuid
from collections.abc import Iterator

from smith._atomic import write_atomic
from smith.diagnostics import DiagnosticKind, Source
from smith.packages._manifest import PackageManifest
from smith.packages._read import valid_name
from smith.packages._sources import MAX_BYTES, MAX_FILES, verify_links

INDEX = "installed.json"
SKIPPED = (".git",)  # left out of a copy

PACKAGE_COPY = DiagnosticKind(
    "package.copy-refused",
    what="cannot install from {root}: {entry} {problem}",
    why="an installed package is a copy inside smith's data directory, and nothing in it "
    "may point out of it",
    fix="remove or replace {entry} in the package (a link may point only inside it)",
)
STORE_INDEX = DiagnosticKind(
    "package.index-unreadable",
    what="the list of installed packages cannot be read: {reason}",
    why="smith records where each package came from in {path}",
    fix="move {path} away and install the packages again",
)

PACKAGE_NAME = DiagnosticKind(
    "package.bad-name",
    what="{name!r} cannot name an installed package",
    why="an installed package is the folder of its name in {root}: a name is a letter, then "
    "letters, digits, '-' or '_', so that it names nothing outside that folder",
    fix="give the package's name as `smith plugins list` shows it",
)


class Store:
    """The installed packages under `home` (smith's data directory)."""

    def __init__(self, home: str) -> None:
        self.root = os.path.join(home, "plugins")
        self.index = os.path.join(self.root, INDEX)

    def path(self, name: str) -> str:
        """The folder of the installed package `name`; a name that is no package name
        (a path, `..`, empty) is refused, so no store operation reaches out of it."""
        if not valid_name(name):
            raise PACKAGE_NAME.error(value=name, source=Source("argument", name), name=name,
                                     root=self.root)  # fmt: skip
        return os.path.join(self.root, name)

    def records(self) -> dict[str, dict[str, object]]:
        """Each installed package's record, by name ({} when nothing is installed)."""
        try:
            with open(self.index, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise STORE_INDEX.error(source=Source("file", self.index), path=self.index,
                                    reason=str(exc)) from None  # fmt: skip
        if not isinstance(data, dict):
            raise STORE_INDEX.error(source=Source("file", self.index), path=self.index,
                                    reason="it holds no JSON object")  # fmt: skip
        return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        import fcntl

        os.makedirs(self.root, mode=0o700, exist_ok=True)
        fd = os.open(self.root, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def stage(self, source_root: str) -> str:
        """A checked copy of the package at `source_root` inside the store (a hidden
        staging folder the caller installs or discards); call under `locked()`."""
        self._sweep()
        staging = os.path.join(self.root, f".staging-{uuid.uuid4().hex[:12]}")
        try:
            copy_package(source_root, staging)
            verify_links(staging, source_root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return staging

    @staticmethod
    def snapshot(source_root: str, dest: str) -> None:
        """A checked private copy of the package at `source_root` in `dest` (which must
        not exist; a caller's own scratch folder): what is shown and asked about, then
        installed, so that a source changing meanwhile changes nothing installed.
        Refuses links out, devices and FIFOs (naming them) before anyone is asked."""
        copy_package(source_root, dest)
        verify_links(dest, source_root)

    def install(self, staging: str, package: PackageManifest, record: dict[str, object]) -> str:
        """Put the staged copy of `package` in place (replacing one of its name) and
        record it; call under `locked()`. Where it now is."""
        target = self.path(package.name)
        old = None
        if os.path.lexists(target) and _exchange(staging, target):
            old = staging  # swapped in one step: a starting smith sees the old or the new
        elif os.path.lexists(target):  # no atomic exchange here: a moment with neither
            old = os.path.join(self.root, f".old-{uuid.uuid4().hex[:12]}")
            os.rename(target, old)
            os.rename(staging, target)
        else:
            os.rename(staging, target)
        records = self.records()
        records[package.name] = {
            **record,
            "version": package.version,
            "kind": package.kind,
            "sha256": content_hash(target),
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "grants": package.asks(),
        }
        write_atomic(self.index, json.dumps(records, indent=2, sort_keys=True) + "\n", mode=0o600)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def remove(self, name: str) -> dict[str, object] | None:
        """Take package `name` out (its copy and its record); its record, or None if it
        was not installed. Call under `locked()`."""
        target = self.path(name)
        records = self.records()
        record = records.pop(name, None)
        if record is None and not os.path.isdir(target):
            return None
        if os.path.lexists(target):
            gone = os.path.join(self.root, f".old-{uuid.uuid4().hex[:12]}")
            os.rename(target, gone)
            shutil.rmtree(gone, ignore_errors=True)
        write_atomic(self.index, json.dumps(records, indent=2, sort_keys=True) + "\n", mode=0o600)
        return record or {}

    def _sweep(self) -> None:
        """Remove what an interrupted install or remove left (under the lock)."""
        for entry in os.listdir(self.root):
            if entry.startswith((".staging-", ".old-")):
                shutil.rmtree(os.path.join(self.root, entry), ignore_errors=True)


def _exchange(a: str, b: str) -> bool:
    """Swap the paths `a` and `b` in one step (Linux renameat2 RENAME_EXCHANGE); False
    where that is not offered (another system, an old kernel, a file system without it)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return bool(done == 0)


def copy_package(source: str, dest: str) -> None:
    """Copy the package at `source` to `dest` (which must not exist) without following
    links: a link is copied as a link and must stay inside the package; `.git` is left
    out; devices and FIFOs are refused; file modes keep only their execute bits."""
    real = os.path.realpath(source)
    count, size = 0, 0

    def refuse(entry: str, problem: str) -> None:
        raise PACKAGE_COPY.error(value=entry, source=Source("file", source), root=source,
                                 entry=entry, problem=problem)  # fmt: skip

    def walk(here: str, there: str) -> None:
        nonlocal count, size
        os.mkdir(there, 0o700 if here == source else 0o755)
        with os.scandir(here) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name in SKIPPED:
                    continue
                rel = os.path.relpath(entry.path, source)
                count += 1
                if count > MAX_FILES:
                    refuse(rel, f"is past the {MAX_FILES:,} files a package may hold")
                out = os.path.join(there, entry.name)
                if entry.is_symlink():
                    target = os.readlink(entry.path)
                    resolved = os.path.realpath(entry.path)
                    if os.path.isabs(target) or not (
                        resolved == real or resolved.startswith(real + os.sep)
                    ):
                        refuse(rel, f"is a link to {target!r}, out of the package")
                    os.symlink(target, out)
                elif entry.is_dir(follow_symlinks=False):
                    walk(entry.path, out)
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
                    if size > MAX_BYTES:
                        refuse(rel, f"takes the package past {MAX_BYTES:,} bytes")
                    shutil.copyfile(entry.path, out, follow_symlinks=False)
                    executable = entry.stat(follow_symlinks=False).st_mode & stat.S_IXUSR
                    os.chmod(out, 0o755 if executable else 0o644)
                else:
                    refuse(rel, "is a device, a FIFO or a socket")

    walk(source, dest)


def content_hash(root: str) -> str:
    """The SHA-256 of a package's content: each path (sorted), its kind, execute bit and
    bytes (a link: its target), so the same files give the same hash wherever they are;
    what a copy leaves out (`.git`) is left out."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)  # as a copy leaves them out
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if os.path.islink(path):
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode())
                continue
            mode = os.stat(path).st_mode
            digest.update(f"F {rel}\0{int(bool(mode & stat.S_IXUSR))}\0".encode())
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()


__all__ = ["INDEX", "Store", "content_hash", "copy_package"]
