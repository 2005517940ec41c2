"""`smith replay SESSION`: a recorded session played back as the events of a live run.

No provider and no credentials are involved: the events are reconstructed from the
session's records (`_timeline`), in source order, and played at the recorded pace
(`--speed N` times faster, `--instant` at once; `_playback`). `--turns` picks prompts.
The default output is a readable transcript (`_text`); `--json` prints the events of
docs/events.md as JSON lines, identical for the same session and flags on every run,
between a `replay_start` and a `replay_end` record (the state the records add up to).
`--reexecute` runs the recorded tool effects again in scratch copies of the project
restored from file history and reports each one (`_reexecute`); exit status 1 when one
diverged. See docs/replay.md.

Replay is a UI frontend (smith.ui, `ReplayFrontend`): the replayed events reach the
transcript or the JSON lines through `smith.ui.deliver`, like a live run's reach its
frontend. It shows how each recorded question ended and asks nothing itself: a
question given to it is refused (`NOTHING_ASKED`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from smith._lazy import lazy_exports
from smith.diagnostics import DiagnosticKind, SmithError, Source, did_you_mean
from smith.text import inert, replace_surrogates

if TYPE_CHECKING:
    import argparse

    from smith.cli import Context
    from smith.config import Config
    from smith.diagnostics import Diagnostic
    from smith.session import Session
    from smith.ui import Intent, Reply

    from ._reexecute import Reexecutor

REPLAY_NO_SESSION = DiagnosticKind(
    "cli.unknown-session",
    what="there is no session '{name}' to replay",
    why="replay takes a session's name or id (or an unambiguous prefix of an id), as "
    "`smith sessions list` shows them",
    fix="{hint}; `smith sessions list` lists this project's sessions (--all: every project's)",
)
REPLAY_BAD_NUMBER = DiagnosticKind(
    "cli.replay-number",
    what="{flag} {text} is not a positive number of {unit}",
    why="{flag} sets {purpose}, so it is a number greater than 0",
    fix="give a number greater than 0, e.g. {flag} {example}",
)
REPLAY_LEFT_OUT = DiagnosticKind(
    "replay.entries-left-out",
    severity="warning",
    what="{count} {noun} of this session cannot be replayed, left out: {entries}",
    why="{reason}; what they recorded is unknown, and the rest of the session plays as recorded",
    fix="`smith sessions show {id}` shows where they are in the tree; to go on without "
    "them, fork the session at an entry before the first (`smith sessions fork {id} --at "
    "ENTRY`)",
)
SHOWN_IDS = 10  # entries named in the notice; --json lists them all
# Injected by tests to see the timing without waiting for it.
CLOCK: Any = None
NOTHING_ASKED = "a replay only plays back what was recorded: nobody is asked anything"


class ReplayFrontend:
    """Replay as a UI frontend: every intent goes to `emit` as the event it stands
    for (the transcript, or a JSON line); questions are refused."""

    name = "replay"

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        from smith.ui import Capabilities

        self.emit = emit
        self.capabilities = Capabilities(cannot_ask=NOTHING_ASKED)

    def show(self, intent: Intent) -> None:
        if intent.event is not None:
            self.emit(intent.event)

    async def ask(self, intent: Intent) -> Reply:  # never called: replay asks nothing
        from smith.ui import refused

        return refused(NOTHING_ASKED, self.name)

    def __call__(self, item: dict[str, Any]) -> None:
        """One played item: an event through the dispatcher, replay's own records
        (re-execution reports) as they are."""
        from smith.ui import deliver

        if deliver(self, item) is None:
            self.emit(item)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION", help="the session's name or id")
    parser.add_argument("--json", action="store_true", help="print the events as JSON lines")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument(
        "--speed", metavar="N", help="play N times faster than recorded (default 1: real time)"
    )
    pace.add_argument("--instant", action="store_true", help="play everything at once")
    parser.add_argument(
        "--turns",
        metavar="RANGE",
        help="only these turns (prompts), counted from 1: 4, 3..5, 3.. or ..5",
    )
    parser.add_argument(
        "--max-gap",
        metavar="SECONDS",
        help="shorten longer pauses to this (default 10)",
    )
    parser.add_argument(
        "--reexecute",
        action="store_true",
        help="run the recorded tool effects again in a scratch copy of the project restored "
        "from file history, and report where their outputs differ",
    )


def _positive(text: str | None, flag: str, default: float, unit: str, purpose: str) -> float:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        example = "10" if flag == "--speed" else "5"
        raise REPLAY_BAD_NUMBER.error(
            value=text,
            source=Source("flag", flag),
            flag=flag,
            text=text,
            unit=unit,
            purpose=purpose,
            example=example,
        )
    return value


def find_session(config: Config, wanted: str) -> Session:
    """This project's session named (or with id) `wanted`, else the session whose id is or
    starts with it in any project; loaded read-only, so a session another smith is
    writing can be replayed."""
    from smith.runtime import ProjectSessions, session_path

    sessions = ProjectSessions(config.home, config.project_root)
    try:
        return sessions.read(session_path(config, wanted))
    except SmithError as exc:
        if exc.diagnostic.code != "session.not-found":
            raise
    known: list[str] = []
    for path in sessions.paths():
        try:
            found = sessions.read(path)
        except SmithError:
            continue
        known += [n for n in (found.name, found.id) if n]
    hint = did_you_mean(wanted, known, otherwise="check the name")
    raise REPLAY_NO_SESSION.error(
        value=wanted, source=Source("argument", wanted), name=wanted, hint=hint
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    from ._playback import DEFAULT_MAX_GAP, Clock, parse_turns, play
    from ._text import Transcript
    from ._timeline import reconstruct

    speed = (
        None
        if args.instant
        else _positive(
            args.speed,
            "--speed",
            1.0,
            "times the recorded pace",
            "how many times faster than recorded the session plays",
        )
    )
    max_gap = _positive(
        args.max_gap,
        "--max-gap",
        DEFAULT_MAX_GAP,
        "seconds",
        "the longest pause playback keeps",
    )
    turns = parse_turns(args.turns)
    config = ctx.config()
    session = find_session(config, args.session)
    timeline = reconstruct(session)
    turns.check(timeline.runs)
    if not (args.json or args.reexecute) and _terminal(ctx):
        return _in_the_app(session, timeline, turns, speed=speed, max_gap=max_gap)
    reexecutor = _reexecutor(ctx, config, session) if args.reexecute else None
    if args.json:

        def emit(item: dict[str, Any]) -> None:
            line = json.dumps(item, ensure_ascii=False)
            # A lone surrogate (an id of bytes that are not UTF-8) has no UTF-8 form.
            ctx.stdout.write(replace_surrogates(line)[0] + "\n")
            ctx.stdout.flush()

    else:
        emit = Transcript(ctx.stdout, first_turn=turns.first)
    summary = {"id": session.id, "name": session.name}
    if args.json:
        emit({"type": "replay_start", "session": summary, "turns": timeline.runs})
    else:
        name = inert(session.name or session.id)
        print(f"smith: replaying session {name} ({session.id})", file=ctx.stderr)
    left_out = _left_out(session, timeline)
    if left_out is not None and args.json:  # an `error` event (docs/events.md), ids in full
        ids = [entry for entry, _ in timeline.unreadable]
        emit({"type": "error", "diagnostic": left_out.to_dict(), "entries": ids})
    elif left_out is not None:
        print(left_out.render(), file=ctx.stderr)
    try:
        with _signals_interrupt():
            play(
                timeline,
                ReplayFrontend(emit),
                turns=turns,
                speed=speed,
                max_gap=max_gap,
                clock=CLOCK or Clock(),
                effect=reexecutor,
            )
    finally:
        if reexecutor is not None:
            reexecutor.close()
            for diagnostic in reexecutor.refused.values():
                print(diagnostic.render(), file=ctx.stderr)
    counts = reexecutor.counts if reexecutor is not None else None
    if args.json:
        emit({"type": "replay_end", "state": timeline.state, "reexecute": counts})
    elif counts is not None:
        done = ", ".join(f"{n} {status}" for status, n in counts.items())
        print(f"smith: re-executed tool effects: {done}", file=ctx.stderr)
    return 1 if counts is not None and counts["diverged"] else 0


def _left_out(session: Session, timeline: Any) -> Diagnostic | None:
    """The notice of entries the timeline left out (content it cannot decode or show)."""
    unreadable: list[tuple[str, str]] = timeline.unreadable
    if not unreadable:
        return None
    ids = ", ".join(repr(entry) for entry, _ in unreadable[:SHOWN_IDS])
    if len(unreadable) > SHOWN_IDS:
        ids += f" and {len(unreadable) - SHOWN_IDS} more"
    noun = "entry" if len(unreadable) == 1 else "entries"
    return REPLAY_LEFT_OUT(
        source=Source("file", session.path),
        count=len(unreadable),
        noun=noun,
        entries=ids,
        reason=unreadable[0][1],
        id=session.id,
    )


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP interrupt playback as Ctrl-C does (exit status 130): the
    command being re-run is ended with everything it started, and the scratch copy is
    removed, instead of both outliving smith."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals (smith run in-process by a test)
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _terminal(ctx: Context) -> bool:
    """Whether replay plays in the app: both ends are a terminal (else a transcript)."""
    import os
    import sys

    if os.environ.get("TEXTUAL_DRIVER"):
        return True  # smith web's driver: the app over pipes
    return ctx.stdout is sys.stdout and sys.stdout.isatty() and sys.stdin.isatty()


def _in_the_app(
    session: Session, timeline: Any, turns: Any, *, speed: float | None, max_gap: float
) -> int:
    from ..tui import play_replay  # noqa: TID252 (mypy follows the installed name)

    starts = {
        str(item.event["prompt_id"])[2:]: item.run
        for item in timeline.items
        if item.event is not None and item.event.get("type") == "agent_start"
    }
    return play_replay(session, starts, turns, speed=speed, max_gap=max_gap)


def _reexecutor(ctx: Context, config: Config, session: Session) -> Reexecutor:
    """Re-runs in a scratch copy, with what the one assembly gives a live call in the
    project (tools and their limits, the sandbox, credentials withheld, file history)."""
    from smith.runtime import build
    from smith.vcs import FileHistory

    from ._reexecute import HistorySnapshots, Reexecutor

    assembly = build(config, cwd=ctx.cwd, surface="replay", warn=ctx.print_diagnostic,
                     model=False)  # fmt: skip
    project = str(session.info.get("cwd") or config.project_root)
    history = FileHistory(assembly.history_settings, session, project)
    snapshots: HistorySnapshots | None = HistorySnapshots(history)
    unavailable = ""
    try:
        history.repo(create=False)
    except SmithError as exc:
        snapshots, unavailable = None, exc.diagnostic.what
    like = assembly.tool_context(None)
    return Reexecutor(
        {t.name: t for t in assembly.tools(like.limits)},
        project=project,
        snapshots=snapshots,
        unavailable=unavailable,
        like=like,
        limits=assembly.options.get("limits"),
        secrets=assembly.secrets,
    )


__all__ = [
    "NOTHING_ASKED",
    "REPLAY_BAD_NUMBER",
    "REPLAY_LEFT_OUT",
    "REPLAY_NO_SESSION",
    "ReplayFrontend",
    "add_arguments",
    "find_session",
    "markdown",
    "reconstruct",
    "run",
]

# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from ._text import markdown as markdown
    from ._timeline import reconstruct as reconstruct


_LAZY = {
    "markdown": "smith.frontends.replay._text",
    "reconstruct": "smith.frontends.replay._timeline",
}

__getattr__ = lazy_exports(__name__, _LAZY)
