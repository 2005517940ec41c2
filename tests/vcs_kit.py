"""Helpers for file history tests: real git projects, and exact pictures of a tree."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path | str | None = None) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    )
    return out.stdout


def git_project(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository with `files` committed."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"src/app.py": "def app():\n    return 'hello'\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("init", "-q", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-qm", "init", cwd=path)
    return path


def picture(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file and link under `root` but .git: (kind, bytes or link target, mode bits)."""
    found: dict[str, tuple[str, bytes, int]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                found[rel] = ("link", os.readlink(full).encode(), 0)
            else:
                found[rel] = ("file", Path(full).read_bytes(), st.st_mode & 0o7777)
    return found


def dirs(root: Path) -> set[str]:
    return {
        os.path.relpath(d, root)
        for d, _, _ in os.walk(root)
        if ".git" not in Path(d).relative_to(root).parts
    } - {"."}


def git_dir_hash(root: Path) -> str:
    """A hash of every byte and name under the project's own .git."""
    h = hashlib.sha256()
    for directory, subdirs, files in sorted(os.walk(root / ".git")):
        subdirs.sort()
        for name in sorted(files):
            full = Path(directory) / name
            h.update(str(full.relative_to(root)).encode())
            h.update(full.read_bytes())
    return h.hexdigest()
