"""`smith [PROMPT]`: the interactive app in the terminal (Textual).

    smith                      a new session in this project
    smith "fix the tests"      ... starting with that prompt
    smith --continue           the project's latest session
    smith --resume SESSION     a session by name, id or id prefix
    smith --session NAME       a session by name (created if there is none)

With no model configured it runs the offline demo model and says how to set a real one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.cli import Context
    from smith.diagnostics import Diagnostic
    from smith.runtime import Assembly
    from smith.session import Session

# The tui.keys.* settings the app reads (the product plugin's KEYBINDINGS name them).
KEY_ACTIONS = (
    "abort", "quit", "latest", "palette", "help", "search", "expand", "editor", "history",
    "steer", "follow-up",
)  # fmt: skip

NO_SESSION = DiagnosticKind(
    "cli.no-session-to-continue",
    what="there is no session of this project to continue ({project})",
    why="--continue opens the project's most recent session, and it has none yet",
    fix="run `smith` to start one, or `smith sessions list --all` to find another",
)


NO_TERMINAL = DiagnosticKind(
    "cli.no-terminal",
    what="the interactive app needs a terminal, and {which} is not one",
    why="`smith` draws a fullscreen interface and reads keys; without a terminal it could "
    "only hang",
    fix='run it in a terminal, or use `smith eval "PROMPT"` (add --json for events) in '
    "scripts and pipes",
)


def run(ctx: Context, *, prompt: str | None, options: dict[str, Any]) -> int:
    import sys

    from smith.runtime import DEMO_BANNER, build

    # textual-serve runs the app over pipes with its own driver (smith web): allowed.
    web = bool(os.environ.get("TEXTUAL_DRIVER"))
    if not web:
        for name, stream in (("standard input", sys.stdin), ("standard output", sys.stdout)):
            if not stream.isatty():
                raise NO_TERMINAL.error(value=name, source=Source("argument", "smith"),
                                        which=name)  # fmt: skip
    # Under smith web the app's stderr reaches only the server's terminal, which said the
    # configuration's warnings at launch, and only once the tab has closed: they are shown
    # in the app instead.
    config = ctx.config(warn=not web)
    _terminal_settings(config)  # before Textual is imported: it reads them once
    # Warnings before the app runs are shown when it opens; later ones, in it.
    notices: list[str] = [w.render() for w in config.warnings] if web else []
    tell: list[Callable[[Diagnostic], None]] = []

    def warn(diagnostic: Diagnostic) -> None:
        if tell:
            tell[0](diagnostic)
        else:
            notices.append(diagnostic.render())

    # Everything is checked before anything is created (smith.runtime.build).
    assembly = build(config, cwd=ctx.cwd, surface="tui", warn=warn, env=ctx.env)
    _log_file(assembly)
    session = _open_session(assembly, options)
    from smith import memory
    from smith.packages import package_themes

    from ._app import SmithApp
    from ._history import PromptHistory
    from ._models import catalog_choices

    if assembly.is_demo:
        notices.insert(0, DEMO_BANNER)
    keys = {
        action: str(config[f"tui.keys.{action}"])
        for action in KEY_ACTIONS
        if config[f"tui.keys.{action}"]
    }
    app = SmithApp(
        assembly.runtime,
        session,
        banner=None,
        prompt=prompt,
        plugins=assembly.plugin_list.active,  # the one list, resolved from config
        keys=keys,
        theme=str(config["tui.theme"]) if config["tui.theme"] else None,
        themes=package_themes(config),  # installed packages' themes, registered by the app
        layout=str(config["tui.layout"]),  # among the plugins' layouts (_layout)
        layout_source=config.origin("tui.layout").source,
        session_source=Sessions(config.home, config.project_root),
        models=lambda: catalog_choices(config, ctx.env),
        show_memory=memory.enabled(),  # --memory-accounting / SMITH_MEMORY_ACCOUNTING=1
        templates=assembly.templates,  # prompt templates are commands too
        notify=config["tui.notify"] is True,
        editor_lines=_int(config["tui.editor.max-lines"], 8),
        history=(history := PromptHistory.for_project(config.home, config.project_root)),
        debug=config["debug"] is True,
    )
    tell.append(lambda d: app.tell(d.render(), error=True))
    app.banner = "\n".join(notices) or None
    try:
        code = app.run(mouse=config["tui.mouse"] is True)
        left = app.session  # the one open when it ended (/resume may have switched)
        farewell = _farewell(left.id, len(left), history.drafts.load(left.id))
    finally:
        app.session.close()
    ended_by_signal = app.leaving is not None and app.leaving.leaving  # no terminal to tell
    if not os.environ.get("TEXTUAL_DRIVER") and not ended_by_signal:  # not smith web's pipe
        import contextlib

        with contextlib.suppress(OSError):  # a terminal gone meanwhile
            print(farewell)
            if history.drafts.problem:
                print(f"smith: your unsent draft was not kept: {history.drafts.problem}")
    return int(code or app.return_code or 0)  # 1 after an internal error


def _farewell(session_id: str, entries: int, draft: tuple[str, bool] | None) -> str:
    """What is printed once the app is gone (the terminal is the shell's again): the
    session and how to open it again, as the peers do."""
    from smith.text import counted

    resume = f"smith --resume {session_id}"
    kept = ""
    if draft is not None:
        kept = "your cleared draft, which Up shows" if draft[1] else "your unsent draft"
    if entries:
        with_draft = f", with {kept}" if kept else ""
        return (f"smith: session {session_id} ({counted(entries, 'entry')}{with_draft}); "
                f"resume it with: {resume}")  # fmt: skip
    if kept:
        return f"smith: session {session_id} recorded nothing; {kept} is kept: {resume}"
    return f"smith: session {session_id} recorded nothing (nothing to resume)"


def _log_file(assembly: Assembly) -> None:
    """The app owns the terminal: smith's log records go to $SMITH_HOME/logs/smith.log,
    masked as in every mode."""
    from smith._atomic import private_dirs

    path = private_dirs(os.path.join(assembly.config.home, "logs"), assembly.config.home)
    log = os.open(os.path.join(path, "smith.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    stream = open(log, "a", encoding="utf-8")  # noqa: SIM115
    assembly.log_to(stream, fmt="%(asctime)s smith: %(levelname)s: %(name)s: %(message)s")


def _terminal_settings(config: Any) -> None:
    """Explicit overrides of what Textual would detect; `auto` leaves detection to it
    (from the environment only: nothing is probed, so start-up never waits)."""
    from . import _render

    color = str(config["tui.color"])
    if color == "none":
        os.environ["NO_COLOR"] = "1"
    elif color != "auto":
        os.environ["TEXTUAL_COLOR_SYSTEM"] = color
    _render.HYPERLINKS = config["tui.hyperlinks"] is True


class Sessions:
    """This project's sessions, for the app's /new, /resume, /continue and /fork: the
    assembly's (smith.runtime.ProjectSessions); the app opens no session file itself."""

    def __init__(self, home: str, project: str) -> None:
        from smith.runtime import ProjectSessions

        self.sessions = ProjectSessions(home, project)

    def new(self) -> Session:
        from smith.runtime import session_name

        return self.sessions.new(session_name("smith"))

    def latest(self) -> Session | None:
        return self.sessions.latest()

    def open(self, id: str) -> Session:
        return self.sessions.open(id)

    def listing(self) -> list[tuple[str, str]]:
        """(id, label) of the project's sessions with messages, newest first (_resume)."""
        from smith.diagnostics import SmithError

        from ._resume import label

        out = []
        for path in self.sessions.paths():  # newest first
            try:
                info = os.stat(path)
                s = self.sessions.read(path)
            except (SmithError, OSError):  # unreadable, or gone since it was listed
                continue
            shown = label(s, info.st_mtime, info.st_size)
            if shown is not None:
                out.append((s.id, shown))
        return out

    def fork(self, session: Session) -> Session:
        return self.sessions.fork(session)


def _open_session(assembly: Assembly, options: dict[str, Any]) -> Session:
    if options.get("resume"):
        return assembly.sessions.open(assembly.find_session(str(options["resume"])))
    if options.get("session"):
        found = assembly.named_session(str(options["session"]))
        assert found is not None
        return found
    if options.get("continue"):
        try:
            return assembly.latest_session()
        except SmithError as exc:
            if exc.diagnostic.code != "session.none-in-project":
                raise
            project = assembly.config.project_root
            raise NO_SESSION.error(
                value=project, source=Source("flag", "--continue"), project=project
            ) from None
    return assembly.new_session("smith")


def play_replay(
    session: Session,
    run_starts: dict[str, int],
    turns: Any,
    *,
    speed: float | None,
    max_gap: float,
) -> int:
    """`smith replay SESSION` in a terminal: the app plays the recorded session."""
    from ._replay import ReplayApp, steps_of

    app = ReplayApp(session, steps_of(session, run_starts, turns), speed=speed,
                    max_gap=max_gap)  # fmt: skip
    code = app.run()
    return int(code or 0)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) else default


# What callers use: the CLI runs the app, replay plays a session in it, tests open it.
__all__ = ["KEY_ACTIONS", "Sessions", "play_replay", "run"]
