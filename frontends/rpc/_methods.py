"""The methods of `smith rpc` (docs/rpc.md): each a coroutine over the server, with its
declared parameters. Runtime operations answer as soon as they are accepted; what they
cause arrives as `event` notifications."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.runtime import ops

from . import _views
from ._protocol import INVALID_PARAMS, NOT_BUILT, OPERATION_FAILED, Param, RpcError

if TYPE_CHECKING:
    from smith.runtime import Image

    from ._server import Server

Handler = Callable[..., Awaitable[object]]

RPC_EMPTY_TEXT = DiagnosticKind(
    "rpc.empty-text",
    what="{method} was sent an empty text",
    why="an empty message asks the model nothing",
    fix='send the words to say, e.g. {{"text": "what does this project do?"}}',
)
RPC_BUSY = DiagnosticKind(
    "rpc.busy",
    what="{method} cannot run while the agent is working",
    why="the running turn belongs to the open session and would be cut off",
    fix="send wait_idle (or abort) first, then {method} again",
)
RPC_NOT_BUILT = DiagnosticKind(
    "rpc.not-built",
    what="{method} is not built yet",
    why="this version of smith does not include {capability} yet",
    fix="leave {method} out for now; get_state and the other methods of docs/rpc.md work",
)


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    run: Handler
    params: tuple[Param, ...] = ()
    # Answered when what it waits for happens: later requests do not wait for it.
    concurrent: bool = False


METHODS: dict[str, Method] = {}


def method(name: str, *params: Param, concurrent: bool = False) -> Callable[[Handler], Handler]:
    def register(run: Handler) -> Handler:
        METHODS[name] = Method(name, run, params, concurrent)
        return run

    return register


def invalid(exc: SmithError) -> RpcError:
    """A value the runtime refused (an unknown model, a bad level): invalid params."""
    return RpcError(INVALID_PARAMS, exc.diagnostic)


def _text(name: str, text: str) -> str:
    if not text.strip():
        raise RpcError(INVALID_PARAMS, RPC_EMPTY_TEXT(value=text, source=Source("rpc", name),
                                                  method=name))  # fmt: skip
    return text


def _accepted(outcome: str) -> dict[str, Any]:
    """What Runtime.prompt/steer/follow_up returned: the submission id of a prompt that
    started (`p-…`) or of the queue item it became (`q-…`); its events carry it."""
    if outcome.startswith("q-"):
        return {"status": "queued", "id": outcome}
    return {"status": "started", "id": outcome}


def _submit(server: Server, op: ops.Operation) -> Any:
    """Every operation reaches the runtime through submit (smith.runtime.ops)."""
    return server.runtime.submit(op)


def _idle(server: Server, name: str) -> None:
    if server.runtime.busy:
        raise RpcError(OPERATION_FAILED, RPC_BUSY(source=Source("rpc", name), method=name))


# -- the conversation ------------------------------------------------------------------

TEXT = Param("text", "string", required=True, example='{"text": "what is this project?"}')
IMAGES = Param(
    "images", "array", example='{"images": [{"media_type": "image/png", "data": "..."}]}'
)


def _with_images(server: Server, op: type[ops.Prompt | ops.Steer | ops.FollowUp], text: str,
                 images: list[Any] | None) -> object:  # fmt: skip
    """Submit `op` with the images given as data (docs/rpc.md): a malformed, unreadable,
    too large or non-image one, and images for a model that does not take them, are
    invalid params (-32602) with the diagnostic that says which and why."""
    name = op.op
    text = _text(name, text)
    try:
        found: tuple[Image, ...] = ()
        if images:
            config = server.config
            found = ops.images_from_data(
                images, Source("rpc", f"{name}.images"),
                max_bytes=config.integer("images.max-bytes"),
                where=str(config.origin("images.max-bytes").source),
                cwd=server.runtime.status()["cwd"],
            )  # fmt: skip
        return _accepted(_submit(server, op(text, found)))
    except SmithError as exc:
        if exc.diagnostic.code.startswith("input."):
            raise invalid(exc) from None
        raise


@method("prompt", TEXT, IMAGES)
async def prompt(server: Server, text: str, images: list[Any] | None = None) -> object:
    return _with_images(server, ops.Prompt, text, images)


@method("steer", TEXT, IMAGES)
async def steer(server: Server, text: str, images: list[Any] | None = None) -> object:
    return _with_images(server, ops.Steer, text, images)


@method("follow_up", TEXT, IMAGES)
async def follow_up(server: Server, text: str, images: list[Any] | None = None) -> object:
    return _with_images(server, ops.FollowUp, text, images)


@method("shell", Param("command", "string", required=True, example='{"command": "git status"}'),
        Param("context", "boolean"))  # fmt: skip
async def shell(server: Server, command: str, context: bool = True) -> object:
    try:
        call_id = _submit(server, ops.Shell(command, context=context))
    except SmithError as exc:
        if exc.diagnostic.code == "runtime.empty-command":
            raise invalid(exc) from None
        raise
    return {"status": "started", "tool_call_id": call_id}


@method("abort")
async def abort(server: Server) -> object:
    return {"aborted": _submit(server, ops.Abort())}


@method("wait_idle", concurrent=True)
async def wait_idle(server: Server) -> object:
    runtime = server.runtime
    await runtime.wait_idle()
    return {"busy": runtime.busy, "queue": runtime.status()["queue"]}


@method("compact", Param("focus", "string"))
async def compact(server: Server, focus: str | None = None) -> object:
    busy = server.runtime.busy
    _submit(server, ops.Compact(focus))
    return {"status": "scheduled" if busy else "started"}


# -- state -------------------------------------------------------------------------------


@method("get_state")
async def get_state(server: Server) -> object:
    return await _views.state(server.runtime)


@method("get_context")
async def get_context(server: Server) -> object:
    """What the model is told now, part by part (the Context operation; it reads git for
    the next environment block, so off the loop)."""
    import asyncio

    parts = await asyncio.to_thread(_submit, server, ops.Context())
    assert isinstance(parts, list)
    return {"parts": parts, "tokens": sum(int(p["tokens"]) for p in parts)}


@method("get_messages", Param("leaf", "string"))
async def get_messages(server: Server, leaf: str | None = None) -> object:
    try:
        return _views.messages(server.runtime, leaf)
    except SmithError as exc:
        raise invalid(exc) from None


@method("get_tree")
async def get_tree(server: Server) -> object:
    return _views.tree(server.runtime)


@method("queue.list")
async def queue_list(server: Server) -> object:
    return {"queue": server.runtime.status()["queue"]}


@method("queue.remove", Param("id", "string", required=True, example='{"id": "q-1a2b3c4d"}'))
async def queue_remove(server: Server, id: str) -> object:
    # Not an error when it is gone: it may have been delivered since it was listed.
    return {"removed": _submit(server, ops.QueueRemove(id))}


@method("queue.clear")
async def queue_clear(server: Server) -> object:
    return {"removed": _submit(server, ops.QueueClear())}


# -- sessions ----------------------------------------------------------------------------


@method("session.new", Param("name", "string"))
async def session_new(server: Server, name: str | None = None) -> object:
    import time

    from smith.runtime import ProjectSessions

    _idle(server, "session.new")
    config = server.config
    sessions = ProjectSessions(config.home, config.project_root)
    await server.switch(sessions.new(name or f"rpc {time.strftime('%Y-%m-%d %H:%M')}"))
    return _views.session_info(server.runtime)


@method("session.switch", Param("session", "string", required=True,
                                example='{"session": "fix tests"}'))  # fmt: skip
async def session_switch(server: Server, session: str) -> object:
    from smith.runtime import ProjectSessions, session_path

    _idle(server, "session.switch")
    _text("session.switch", session)  # a blank name is no prefix of every session's
    try:
        path = session_path(server.config, session)
    except SmithError as exc:
        raise invalid(exc) from None
    if path != _views.session_info(server.runtime)["path"]:
        config = server.config
        await server.switch(ProjectSessions(config.home, config.project_root).open(path))
    return _views.session_info(server.runtime)


@method("session.fork", Param("entry", "string"), Param("name", "string"))
async def session_fork(server: Server, entry: str | None = None, name: str | None = None) -> object:
    _idle(server, "session.fork")
    if name is not None:
        _text("session.fork", name)  # a blank name would be no name
    current = _views.session_info(server.runtime)
    try:
        forked = _submit(server, ops.Fork(at=entry, name=name))
    except SmithError as exc:
        raise invalid(exc) from None
    await server.switch(forked)
    return {**_views.session_info(server.runtime), "forked_from": current["id"]}


@method("session.select", Param("leaf", "string", required=True,
                                example='{"leaf": "9a7e01c2"}'))  # fmt: skip
async def session_select(server: Server, leaf: str) -> object:
    _idle(server, "session.select")
    try:
        return _submit(server, ops.Select(leaf))
    except SmithError as exc:
        raise invalid(exc) from None


@method("session.list")
async def session_list(server: Server) -> object:
    current = _views.session_info(server.runtime)["path"]
    return {"sessions": _views.session_list(server.config, str(current))}


# -- model and thinking ------------------------------------------------------------------


@method("model.set", Param("model", "string", required=True,
                           example='{"model": "anthropic/claude-sonnet-4-5"}'))  # fmt: skip
async def model_set(server: Server, model: str) -> object:
    try:
        _submit(server, ops.SetModel(model))
    except SmithError as exc:
        raise invalid(exc) from None
    return {"model": server.runtime.model, "generation": server.runtime.generation}


@method("model.list")
async def model_list(server: Server) -> object:
    return {"models": _views.models(server.config, server.env, server.runtime.model)}


@method("thinking.set", Param("level", "string", required=True, example='{"level": "high"}'))
async def thinking_set(server: Server, level: str) -> object:
    try:
        _submit(server, ops.SetThinking(level))
    except SmithError as exc:
        raise invalid(exc) from None
    return {"thinking": server.runtime.thinking, "generation": server.runtime.generation}


@method("mode.set", Param("mode", "string", required=True, example='{"mode": "plan"}'),
        Param("prompt", "boolean"))  # fmt: skip
async def mode_set(server: Server, mode: str, prompt: bool = True) -> object:
    try:
        return _submit(server, ops.SetMode(mode, prompt=prompt))
    except SmithError as exc:
        raise invalid(exc) from None


# -- file history ------------------------------------------------------------------------

FORCE = Param("force", "boolean")


def _vcs(name: str) -> None:
    """Whether file history exists in this build (smith.vcs)."""
    import importlib.util

    if importlib.util.find_spec("smith.vcs") is None:
        raise RpcError(NOT_BUILT, RPC_NOT_BUILT(source=Source("rpc", name), method=name,
                                                capability="file history"))  # fmt: skip


@method("vcs.undo", FORCE)
async def vcs_undo(server: Server, force: bool = False) -> object:
    _vcs("vcs.undo")
    return _submit(server, ops.Undo(force=force))


@method("vcs.redo", FORCE)
async def vcs_redo(server: Server, force: bool = False) -> object:
    _vcs("vcs.redo")
    return _submit(server, ops.Redo(force=force))


@method("vcs.restore", Param("entry", "string", required=True, example='{"entry": "9a7e01c2"}'),
        Param("conversation", "boolean"), FORCE)  # fmt: skip
async def vcs_restore(
    server: Server, entry: str, conversation: bool = False, force: bool = False
) -> object:
    _vcs("vcs.restore")
    return _submit(server, ops.Restore(entry, conversation=conversation, force=force))


def _history(server: Server, name: str, op: ops.Operation) -> Any:
    """A file-history query, or the diagnostic saying why there is none."""
    _vcs(name)
    _idle(server, name)
    return _submit(server, op)


@method("vcs.diff", Param("a", "string"), Param("b", "string"))
async def vcs_diff(server: Server, a: str | None = None, b: str | None = None) -> object:
    return _history(server, "vcs.diff", ops.Diff(a, b))


@method("vcs.history")
async def vcs_history(server: Server) -> object:
    turns = _history(server, "vcs.history", ops.History())
    return {"session": server.runtime.status()["session"], "turns": turns}


# -- the process ---------------------------------------------------------------------------


@method("plugins.list")
async def plugins_list(server: Server) -> object:
    """The plugin list the runtime was built with: the object `smith plugins list --json`
    prints for the same configuration."""
    return _submit(server, ops.Plugins())


@method("memory.report")
async def memory_report(server: Server) -> object:
    """Every scope's allocation figures (smith.memory); `enabled` false, and no scopes,
    unless smith rpc runs with --memory-accounting / SMITH_MEMORY_ACCOUNTING=1."""
    from smith import memory

    return {"enabled": memory.enabled(), "scopes": memory.report()}


@method("shutdown")
async def shutdown(server: Server) -> object:
    session = server.runtime.status()["session"]
    await server.close()
    return {"session": session}
