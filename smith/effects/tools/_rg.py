"""Running ripgrep (the `ripgrep` wheel ships the rg binary) for find and grep, and the
project file list the app completes `@` paths from (`list_files`).

rg runs in the call's working directory with the searched path given relative to it, so
the paths it prints are relative to where the model is working (after a leading ./), the
same paths read and edit take. Hidden files are searched, .git never is, .gitignore files
apply even outside a git repository, and configured ignores (tools.ignore) are passed as
exclusion globs, which rg ranks above every .gitignore rule.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

from smith.effects._tool import ToolContext, ToolError

COMMON = [
    "--hidden",
    "--no-require-git",
    "--glob",
    "!.git",
    "--no-config",
    "--color",
    "never",
    "--no-messages",  # unreadable files are skipped quietly; pattern errors still show
]
MAX_OUTPUT = 16 * 1024 * 1024  # bytes of rg output read before giving up on completeness


def binary() -> str:
    here = os.path.join(sysconfig.get_path("scripts"), "rg")
    found = here if os.access(here, os.X_OK) else shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed; `pip install ripgrep` provides it")
    return found


def name_filter(glob: str) -> list[str]:
    """rg arguments that keep only files whose name matches `glob` while still honouring
    every ignore rule (a file type, unlike --glob, does not override .gitignore). Only for
    globs without '/': callers match path globs themselves."""
    return ["--type-add", f"smithsel:{glob}", "--type", "smithsel"]


def run(
    ctx: ToolContext, args: list[str], where: str, *, stop_after: int = 0
) -> tuple[bytes, bool]:
    """rg's output and whether it was cut short: at MAX_OUTPUT bytes, or (with
    `stop_after`) once that many output records (NUL-free lines) have been read."""
    cwd = os.path.realpath(ctx.cwd)
    target = os.path.relpath(where, cwd)
    excludes = [a for p in ctx.ignore for a in ("--glob", "!" + p.rstrip("/"))]
    argv = [binary(), *COMMON, *excludes, *args, "--", target]
    with subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        if stop_after:
            chunks, size, lines = [], 0, 0
            for line in proc.stdout:
                chunks.append(line)
                size += len(line)
                lines += 1
                if lines > stop_after or size > MAX_OUTPUT:
                    break
            out = b"".join(chunks)
            cut = lines > stop_after or size > MAX_OUTPUT
        else:
            out = proc.stdout.read(MAX_OUTPUT + 1)
            cut = len(out) > MAX_OUTPUT
            out = out[:MAX_OUTPUT]
        if cut:
            proc.kill()
        err = proc.stderr.read()
        code = proc.wait()
    if code not in (0, 1) and not cut:  # 1 means "nothing matched"
        message = err.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"rg exit {code}"
        raise ToolError(
            f"search failed: {detail}; for exact text rather than a regular "
            "expression pass literal=true"
        )
    return out, cut


def relative(path: str) -> str:
    """A path rg printed, relative to the working directory."""
    return path[2:] if path.startswith("./") else path


def text(raw: bytes) -> str:
    """rg's bytes as text; file names that are not UTF-8 keep their bytes as \\xNN."""
    return raw.decode("utf-8", "backslashreplace")


def list_files(ctx: ToolContext, limit: int) -> tuple[list[str], bool]:
    """The files under the working directory as the find tool sees them (hidden files
    included, .git and what .gitignore or tools.ignore ignore left out), relative to it,
    in rg's order: at most `limit`, and whether there were more."""
    cwd = os.path.realpath(ctx.cwd)
    excludes = [a for p in ctx.ignore for a in ("--glob", "!" + p.rstrip("/"))]
    argv = [binary(), *COMMON, *excludes, "--files", "--null", "--", "."]
    paths: list[str] = []
    rest = b""
    cut = False
    with subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 1 << 16):
            *names, rest = (rest + chunk).split(b"\0")
            paths += (relative(text(name)) for name in names)
            if len(paths) > limit:
                cut = True
                proc.kill()
                break
        proc.wait()
    return paths[:limit], cut
