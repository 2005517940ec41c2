"""The loop's notes to the model: what it is told besides the conversation, recorded in
the session at the place it was told, so every later request (and a resumed session, and
replay) shows the same (docs/context.md).

- `environment_due`, when a prompt starts: the environment block, recorded as an
  `environment` entry just before the prompt's message when it differs from the last
  one in the context (a new session, another day, a changed git state, another model);
- `record_instructions`, after a tool batch: the instruction files of directories below
  the project root that the batch's calls reached for the first time, one
  `instructions` entry each.

Both emit an event of the same name and are sent from then on as user-role context
messages (smith.runtime._context). A runtime without a project context (a bare
`Runtime`) records neither.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from smith.runtime._events import event

if TYPE_CHECKING:
    from smith.effects import ToolSpec
    from smith.runtime._loopctx import LoopContext

log = logging.getLogger("smith.runtime")


async def environment_due(rt: LoopContext) -> dict[str, Any] | None:
    """The environment block to record as a prompt starts (as entry content, secrets
    redacted), or None when the context's last one is the same (or there is no project
    context, or an abort is pending). It reads git in a worker thread."""
    project = rt.project
    if project is None or rt.abort_reason is not None:
        return None
    try:
        env = await asyncio.to_thread(project.environment, rt.current.model)
    except Exception:  # the block is context, not the task: the prompt runs without it
        log.warning("the environment block could not be read", exc_info=True)
        return None
    content = rt.secrets.redact(env.to_dict())
    assert isinstance(content, dict)
    return None if content["text"] == _last_environment(rt) else content


def record_note(rt: LoopContext, kind: str, content: dict[str, Any]) -> None:
    """Record a note (`environment`, `instructions`) and emit its event."""
    entry = rt.session.append(kind, content)
    rt.emit(event(kind, entry_id=entry.id, **content))


def _last_environment(rt: LoopContext) -> str | None:
    for index in reversed(rt.context_cache.notes(rt.session)):
        entry = rt.session.at(index)
        if entry.kind == "environment":
            content = entry.content
            return str(content.get("text")) if isinstance(content, dict) else None
    return None


def record_instructions(
    rt: LoopContext, calls: list[dict[str, Any]], specs: list[ToolSpec | None]
) -> None:
    """After a batch: the instruction files its calls reached (see the module doc)."""
    project = rt.project
    if project is None:
        return
    paths = [p for call, spec in zip(calls, specs, strict=True) for p in _paths(rt, call, spec)]
    if not paths:
        return
    known = _recorded_directories(rt)
    found, problems = project.reached(paths)
    for problem in problems:
        rt.error(problem)
    for item in found:
        if item.directory in known:
            continue  # recorded by an earlier runtime of this session
        content = rt.secrets.redact(
            {"path": item.path, "directory": item.directory, "text": item.rendered()}
        )
        assert isinstance(content, dict)
        record_note(rt, "instructions", content)


def _paths(rt: LoopContext, call: dict[str, Any], spec: ToolSpec | None) -> list[str]:
    """The real paths a call that ran names: its `path` (as the tool's `touches` says),
    or bash's `cwd`."""
    if spec is None or "invalid" in call:
        return []
    args = call.get("arguments")
    args = args if isinstance(args, dict) else {}
    named = spec.touches(args)
    if named is None:  # may touch anything (bash): its working directory is what it names
        cwd = args.get("cwd")
        named = [cwd] if isinstance(cwd, str) else []
    try:
        return [rt.context.resolve(p) for p in named if isinstance(p, str)]
    except ValueError:  # not a usable path (a NUL): the tool refused it
        return []


def _recorded_directories(rt: LoopContext) -> set[str]:
    found = set()
    for index in rt.context_cache.notes(rt.session):
        entry = rt.session.at(index)
        content = entry.content
        if entry.kind == "instructions" and isinstance(content, dict):
            found.add(str(content.get("directory")))
    return found
