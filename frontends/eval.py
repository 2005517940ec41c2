"""`smith eval PROMPT`: one prompt through the runtime, without the TUI.

Human output (default): the answer streams to stdout; tool activity, retries and errors
go to stderr. `--json`: every runtime event as one JSON line on stdout (docs/events.md),
ending in a `result` record. Exit codes: 0 the agent finished, 1 it stopped on an error
or a limit, 2 bad usage or configuration, 130 aborted (Ctrl-C, SIGTERM).

UI intents (docs/ui.md): eval is a frontend of its runtime (`_EvalFrontend`, attached
with `Runtime.attach`). It shows a plugin's notice on stderr (`--json`: the `ui` event),
drops status and a plugin's progress in human mode, and refuses every question at once:
nobody is there to answer. The refusal is a `ui.question-refused` warning on stderr
naming what was asked (and, with `--json`, the `intent_refused` event).

Every run is recorded: in a new session named after the time and the prompt (its name
and id go to stderr), in `--session NAME`, or with `--no-session` in a temporary session
store under `$SMITH_HOME/tmp/` that is removed when eval exits cleanly (any of the exit
codes above) and kept, its path already printed to stderr, when the process dies (a
kill, a crash). Effects never run without that durable record (smith.effects).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from smith.diagnostics import DiagnosticKind, Source
from smith.text import inert, replace_surrogates

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from smith.cli import Context
    from smith.diagnostics import Diagnostic
    from smith.runtime import Assembly, Image, Runtime
    from smith.session import Session
    from smith.ui import Intent, Reply

EMPTY_PROMPT = DiagnosticKind(
    "cli.empty-prompt",
    what="the prompt is empty (from {where})",
    why="eval runs one prompt, and an empty one asks the model nothing",
    fix='pass the prompt as an argument, e.g. smith eval "what does this project do?", or '
    "pipe it in with smith eval -",
)
QUESTION_REFUSED = DiagnosticKind(
    "ui.question-refused",
    severity="warning",
    what='asked "{text}" ({choices}); smith eval refused it ({reason})',
    why="eval runs one prompt without anyone to answer, so a question is refused at once "
    "and {origin} goes on without an answer",
    fix="run it in the app (smith), or drive smith over smith rpc, whose client answers "
    "questions (docs/ui.md)",
)
CANNOT_ASK = "smith eval runs without anyone to answer"
# handled: a plugin took the prompt as a command (its reply is the answer; no turn ran)
SUCCESS_STOPS = ("end", "done", "handled")
EXIT_ABORTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", metavar="PROMPT", help="what to ask; - reads it from stdin")
    parser.add_argument("--json", action="store_true", help="print the events as JSON lines")
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="attach an image (PNG, JPEG, GIF or WebP, at most images.max-bytes) to the "
        "prompt; repeat for more. Refused before anything runs for a model without image "
        "input",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--session", metavar="NAME", help="continue this session (name or id) instead of a new one"
    )
    which.add_argument(
        "--no-session",
        action="store_true",
        help="record in a temporary session store, removed on a clean exit (kept, with its "
        "path on stderr, if smith is killed)",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from smith.runtime import DEMO_BANNER, build

    # Bytes that are not UTF-8 (on stdin, or in argv, which Python decodes the same way)
    # arrive as lone surrogates: the runtime replaces them with U+FFFD and says so.
    text = _read_stdin() if args.prompt == "-" else args.prompt
    if not text.strip():
        where = "standard input" if args.prompt == "-" else "the PROMPT argument"
        raise EMPTY_PROMPT.error(value=text, source=Source("argument", args.prompt), where=where)
    # Everything is checked before anything is created (smith.runtime.build).
    assembly = build(ctx.config(), cwd=ctx.cwd, surface="eval", warn=ctx.print_diagnostic,
                     env=ctx.env)  # fmt: skip
    # Images are read and checked against the model before a session is made.
    images = assembly.load_images(args.image, "flag", "--image")
    if assembly.is_demo and not args.json:
        print(DEMO_BANNER, file=ctx.stderr)
    words = _words(str(assembly.secrets.redact(replace_surrogates(text)[0])))
    if not args.no_session:
        # Only --session reopens a session: a generated name is a label, not a key (two
        # runs of one prompt in one second would otherwise share a conversation).
        session = (
            assembly.named_session(args.session)
            if args.session
            else assembly.new_session("eval", words)
        )
        assert session is not None
        with session:
            print(inert(f"smith: session {session.name} ({session.id})"), file=ctx.stderr)
            return asyncio.run(_main(args, ctx, assembly, session, text, images))
    scratch = _scratch_store(assembly.config.home)
    print(f"smith: no session: recording in {scratch} until this run ends", file=ctx.stderr)
    try:
        from smith.runtime import ProjectSessions, session_name

        scratch_sessions = ProjectSessions(scratch, assembly.config.project_root)
        with scratch_sessions.new(session_name("eval", words)) as session:
            code = asyncio.run(_main(args, ctx, assembly, session, text, images))
    except BaseException:
        print(f"smith: the temporary session store is kept: {scratch}", file=ctx.stderr)
        raise
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    return code


def _read_stdin() -> str:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # replaced by something without bytes (a test's StringIO)
        return sys.stdin.read()
    return bytes(stream.read()).decode("utf-8", "surrogateescape")


def _scratch_store(home: str) -> str:
    """A new temporary session store: on smith's own disk rather than a tmpfs, so the
    record of what the run did survives whatever ends the process."""
    import tempfile

    from smith._atomic import private_dirs

    parent = os.path.join(home, "tmp")
    private_dirs(parent, home)  # owner-only, as everything under SMITH_HOME
    return tempfile.mkdtemp(prefix="eval-", dir=parent)


def _words(text: str) -> str:
    return " ".join(text.split())[:40].rstrip()


async def _main(
    args: argparse.Namespace,
    ctx: Context,
    assembly: Assembly,
    session: Session,
    text: str,
    images: tuple[Image, ...] = (),
) -> int:
    import asyncio
    import signal

    assembly.log_to(ctx.stderr)
    runtime = assembly.runtime(session)
    out = _Output(ctx.stdout, runtime)
    render = _json_printer(out) if args.json else _HumanPrinter(out, ctx.stderr)
    runtime.attach(_EvalFrontend(render, ctx, json_events=args.json))
    if runtime.status().get("mode") == "plan":  # the session's, or --plan's (docs/plan.md)
        print("smith: plan mode: only read-only tools run (--no-plan leaves it)", file=ctx.stderr)
        runtime.announce_mode()  # its `mode` event came before anyone listened
    final: dict[str, Any] = {}
    runtime.on_event(lambda ev: final.update(_ended(ev)) if ev["type"] in ENDS else None)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, runtime.abort)
    try:
        runtime.prompt(text, images)
        await runtime.wait_idle()
        cost = runtime.status()["cost"]  # settled: nothing runs that could add to it
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        await runtime.close()
    stop = str(final.get("stop", "error"))
    code = 0 if stop in SUCCESS_STOPS else EXIT_ABORTED if stop == "abort" else 1
    if args.json:
        out.write(json.dumps(_result(session, cost, final, code, args.no_session)) + "\n")
    elif code and not out.closed:
        error = final.get("error") or f"the agent stopped: {stop}"
        print(inert(f"smith: {error}"), file=ctx.stderr)
    out.flush()
    return code


class _Output:
    """stdout that, once its reader has gone (a closed pipe), aborts the run instead of
    failing on every event: nobody is left to read the answer."""

    def __init__(self, stream: TextIO, runtime: Runtime) -> None:
        self.stream = stream
        self.runtime = runtime
        self.closed = False

    def write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self.closed = True
            self.runtime.abort()

    def flush(self) -> None:
        self.write("")


ENDS = ("agent_end", "input_handled")


def _ended(ev: dict[str, Any]) -> dict[str, Any]:
    """How the prompt ended: its agent_end, or, for a prompt a plugin handled as a
    command (no turn), a stop of `handled` whose message is the plugin's reply (`error`
    and its reason when the command failed)."""
    if ev["type"] == "agent_end":
        return ev
    reply = ev.get("reply") or ""
    message = {"role": "assistant", "content": [{"type": "text", "text": reply}]}
    if ev.get("error"):
        error = f"{ev.get('plugin')}: /{_command_name(ev)} failed: {ev['error']}"
        return {"stop": "error", "error": error, "message": message, "plugin": ev.get("plugin")}
    return {"stop": "handled", "message": message, "plugin": ev.get("plugin")}


def _command_name(ev: dict[str, Any]) -> str:
    text = str(ev.get("text") or "").lstrip()
    return text[1:].split(maxsplit=1)[0] if text.startswith("/") and len(text) > 1 else text


def _text_of(message: dict[str, Any] | None) -> str:
    if not message:
        return ""
    return "".join(p["text"] for p in message.get("content", []) if p.get("type") == "text")


def _result(
    session: Session, cost: object, final: dict[str, Any], code: int, temporary: bool
) -> dict[str, Any]:
    message = final.get("message")
    return {
        "type": "result",
        "ok": code == 0,
        "exit_code": code,
        "stop": final.get("stop"),
        "error": final.get("error"),
        "text": _text_of(message),
        "message": message,
        # temporary: recorded with --no-session, in a store removed when eval exits
        "session": {
            "id": session.id,
            "name": session.name,
            "temporary": temporary,
        },
        "cost": cost,
    }


class _EvalFrontend:
    """eval as a UI frontend (smith.ui): the intents it shows go to its printer as the
    events they stand for; it asks nothing, and says so on stderr when it refused."""

    name = "eval"

    def __init__(self, render: Callable[[dict[str, Any]], None], ctx: Context, *,
                 json_events: bool) -> None:  # fmt: skip
        from smith.ui import OPT_IN, SHOWN, Capabilities

        self.render = render
        self.ctx = ctx
        self.json_events = json_events
        # Not the escape hatches (OPT_IN): there is no clipboard or browser to use.
        shows = [k for k in SHOWN if k not in OPT_IN and (json_events or k != "status")]
        self.capabilities = Capabilities(shows=frozenset(shows), cannot_ask=CANNOT_ASK)

    def show(self, intent: Intent) -> None:
        ev = intent.event
        if ev is None:
            return
        if intent.kind == "answer" and ev["type"] == "intent_refused":
            self.ctx.print_diagnostic(_refusal(intent.data))
        if self.json_events or intent.kind != "answer":
            self.render(ev)

    async def ask(self, intent: Intent) -> Reply:  # never called: eval asks nothing
        from smith.ui import refused

        return refused(CANNOT_ASK, self.name)


def _refusal(data: dict[str, Any]) -> Diagnostic:
    keys = ", ".join(str(c.get("key")) for c in data.get("choices") or [])
    confirm = data.get("intent") == "request_confirm"
    origin = str(data.get("origin") or "a plugin")
    return QUESTION_REFUSED(
        value=data.get("text"),
        source=Source("plugin", origin),
        origin=origin,
        text=inert(str(data.get("text", ""))),
        choices="yes or no" if confirm else f"choices: {keys}",
        reason=data.get("reason"),
    )


def _json_printer(out: _Output) -> Any:
    from smith.protocol import dumps_event

    def emit(ev: dict[str, Any]) -> None:
        out.write(dumps_event(ev) + "\n")

    return emit


class _HumanPrinter:
    """The answer on stdout as it streams; what the agent does on stderr. Both carry
    untrusted text (model output, tool output), so both are made inert: an escape
    sequence is shown, never obeyed (`--json` keeps it exact)."""

    def __init__(self, out: _Output, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.role = ""
        self.at_line_start = True

    def note(self, line: str) -> None:
        print(inert(line), file=self.err)

    def __call__(self, ev: dict[str, Any]) -> None:
        kind = ev["type"]
        if kind == "message_start":
            self.role = ev["role"]
        elif kind == "message_delta" and self.role == "assistant" and ev["channel"] == "text":
            self.out.write(inert(ev["delta"]))
            self.at_line_start = ev["delta"].endswith("\n")
        elif kind == "message_end" and self.role == "assistant" and not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True
        elif kind == "tool_start":
            args = json.dumps(ev["arguments"], ensure_ascii=False)
            self.note(f"→ {ev['name']} {args[:200]}")
        elif kind == "tool_end":
            first = ev["result"]["text"].strip().splitlines()[:1]
            mark = "✗" if ev["is_error"] else "✓"
            self.note(f"{mark} {ev['name']}: {first[0][:200] if first else ''}")
        elif kind == "retry":
            self.note(f"smith: retrying in {ev['delay']:.1f} s: {ev['error']}")
        elif kind == "error":
            d = ev["diagnostic"]
            self.note(f"smith: {d.get('what', d)}")
        elif kind == "compaction_end":
            state = "compacted the context" if ev["ok"] else f"compaction failed: {ev['error']}"
            self.note(f"smith: {state}")
        elif kind == "input_handled" and ev.get("reply"):  # a plugin's command: the answer
            self.out.write(inert(ev["reply"]).rstrip("\n") + "\n")
        elif kind == "ui" and ev["intent"] == "notify":  # a plugin's notice
            level = "" if ev["level"] == "info" else f"{ev['level']}: "
            self.note(f"smith: {level}{ev['origin']}: {ev['text']}")
        elif kind == "todo":  # the agent's todo list, as it is now (docs/plan.md)
            marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
            for item in ev["items"]:
                self.note(f"  {marks.get(item['status'], '[ ]')} {item['content']}")
