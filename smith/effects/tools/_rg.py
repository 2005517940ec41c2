"""Running ripgrep (the `ripgrep` wheel ships the rg binary) for find and grep, and the
project file list the app completes `@` paths from (`list_files`).

rg runs in the call's working directory with the searched path given relative to it, so
the paths it prints are relative to where the model is working (after a leading ./), the
same paths read and edit take. Hidden files are searched, .git never is, .gitignore files
apply even outside a git repository, and configured ignores (tools.ignore) are passed as
exclusion globs, which rg ranks above every .gitignore rule.

rg runs as one of smith's helper processes (smith._spawn.Child): without the
provider keys in its environment, ended with its call (cut short, cancelled by a timeout
or an abort, interrupted) and with smith, and always waited for. Walking a directory it
opens no FIFO, socket or device (those are not files to it); one named as the path is
refused by the tool before rg sees it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

from smith._spawn import Child
from smith.effects._tool import ToolCancelled, ToolContext, ToolError

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
    import sysconfig

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
    `stop_after`) once more than that many output records (lines) have been read. rg is
    ended and waited for when the call ends however it ends (ToolCancelled when
    `ctx.cancelled` is set: a timeout or an abort)."""
    cwd = os.path.realpath(ctx.cwd)
    target = os.path.relpath(where, cwd)
    excludes = [a for p in ctx.ignore for a in ("--glob", "!" + p.rstrip("/"))]
    argv = [binary(), *COMMON, *excludes, *args, "--", target]
    out, err = bytearray(), bytearray()
    cut = False
    lines = 0
    with Child(argv, cwd=cwd, env=ctx.process_env()) as child:
        for chunk in _chunks(child, ctx, err):
            out += chunk
            lines += chunk.count(b"\n")
            if stop_after and lines > stop_after:
                out = bytearray(b"\n".join(out.split(b"\n")[: stop_after + 1]) + b"\n")
                cut = True
            if len(out) > MAX_OUTPUT:
                del out[MAX_OUTPUT:]
                cut = True
            if cut:
                break
        code = None if cut else child.proc.wait()
    if code not in (None, 0, 1):  # 1 means "nothing matched"
        message = err.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"rg exit {code}"
        raise ToolError(
            f"search failed: {detail}; for exact text rather than a regular "
            "expression pass literal=true"
        )
    return bytes(out), cut


ERR_BYTES = 64 * 1024  # of rg's messages kept (the last line says what failed)
POLL = 0.1  # seconds between looks at ctx.cancelled while rg says nothing


def _chunks(child: Child, ctx: ToolContext, err: bytearray) -> Iterator[bytes]:
    """rg's output as it comes, its messages into `err`, until it closes both; raises
    ToolCancelled as soon as the call is cancelled (rg may wait for ever on a file that
    never ends)."""
    import selectors

    streams = [s for s in (child.proc.stdout, child.proc.stderr) if s is not None]
    with selectors.DefaultSelector() as sel:
        for stream in streams:
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, stream is child.proc.stdout)
        while sel.get_map():
            if ctx.cancelled.is_set():
                raise ToolCancelled("not-applied")
            for key, _ in sel.select(POLL):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                elif key.data:
                    yield chunk
                elif len(err) < ERR_BYTES:
                    err += chunk[: ERR_BYTES - len(err)]


def special(path: str) -> str:
    """What `path` is when it is a FIFO, a socket or a device ('a FIFO', ...), which
    search and listing skip; '' for anything else (a missing path included)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "")


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
    with Child(argv, cwd=cwd, env=ctx.process_env(), stderr=subprocess.DEVNULL) as child:
        for chunk in _chunks(child, ctx, bytearray()):
            *names, rest = (rest + chunk).split(b"\0")
            paths += (relative(text(name)) for name in names)
            if len(paths) > limit:
                cut = True
                break
    return paths[:limit], cut
