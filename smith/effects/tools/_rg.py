"""Running ripgrep (the `ripgrep` wheel ships the rg binary) for find and grep."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

from smith.effects._tool import ToolContext, ToolError

# Hidden files count (.github, .env.example); .git never does; .gitignore applies even
# outside a git repository.
COMMON = [
    "--hidden",
    "--no-require-git",
    "--glob",
    "!.git",
    "--no-config",
    "--color",
    "never",
    "--no-messages",
]  # unreadable files are skipped quietly; pattern errors still show
MAX_OUTPUT = 16 * 1024 * 1024  # bytes of rg output read before giving up on completeness


def binary() -> str:
    here = os.path.join(sysconfig.get_path("scripts"), "rg")
    found = here if os.access(here, os.X_OK) else shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed; `pip install ripgrep` provides it")
    return found


def run(ctx: ToolContext, args: list[str], where: str) -> tuple[bytes, bool]:
    """rg's output (bounded) and whether it was cut at the bound. rg runs in the project
    root with `where` given relative to it, so the paths it prints are already relative
    to the root (after a leading ./, see `relative`)."""
    target = os.path.relpath(where, os.path.realpath(ctx.root))
    if not ctx.ignore:
        return _run(ctx, [*COMMON, *args, "--", target])
    import tempfile

    # Configured ignores are gitignore rules, applied after the project's own.
    with tempfile.NamedTemporaryFile("w", suffix=".ignore", encoding="utf-8") as rules:
        rules.write("\n".join(ctx.ignore) + "\n")
        rules.flush()
        return _run(ctx, [*COMMON, "--ignore-file", rules.name, *args, "--", target])


def _run(ctx: ToolContext, argv: list[str]) -> tuple[bytes, bool]:
    with subprocess.Popen(
        [binary(), *argv],
        cwd=ctx.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read(MAX_OUTPUT + 1)
        cut = len(out) > MAX_OUTPUT
        if cut:
            proc.kill()
            out = out[:MAX_OUTPUT]
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
    """A path rg printed, relative to the project root."""
    return path[2:] if path.startswith("./") else path
