"""The app as `smith` builds it, for Pilot tests: configuration resolved with a model,
the one assembly's runtime, a new session and the prompt templates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import SmithEnv

if TYPE_CHECKING:
    from smith.diagnostics import Diagnostic
    from smith.frontends.tui._app import SmithApp
    from smith.session import Session


def assembled_app(
    senv: SmithEnv, project: Path, model: str, warn: Callable[[Diagnostic], None] | None = None
) -> tuple[Callable[[], SmithApp], Session]:
    """(what makes the app, in the test's event loop; the session it opens on); the
    build's warnings go to `warn` (as `smith` shows them when the app opens)."""
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build

    config = resolve(env=senv.env, flags={"model": model}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env, warn=warn)
    session = assembly.new_session("smith")
    return lambda: SmithApp(assembly.runtime, session, templates=assembly.templates), session
