"""The loop's notes to the model: what it is told besides the conversation, recorded in
the session at the place it was told, so every later request (and a resumed session, and
replay) shows the same (docs/context.md).

- `record_environment`, when a prompt starts: the environment block, as an
  `environment` entry, when it differs from the last one in the context (a new session,
  another day, a changed git state, another model);
- `record_instructions`, after a tool batch: the instruction files of directories below
  the project root that the batch's calls reached for the first time, one
  `instructions` entry each.

Both emit an event of the same name and are sent from then on as user-role context
messages (smith.runtime._context). A runtime without a project context (a bare
`Runtime`) records neither.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from smith.runtime._events import event

if TYPE_CHECKING:
    from smith.effects import ToolSpec
    from smith.runtime._loopctx import LoopContext


async def record_environment(rt: LoopContext) -> None:
    project = rt.project
    if project is None:
        return
    env = await asyncio.to_thread(project.environment, rt.current.model)
    content = rt.secrets.redact(env.to_dict())
    assert isinstance(content, dict)
    if content["text"] == _last_environment(rt):
        return
    entry = rt.session.append("environment", content)
    rt.emit(event("environment", entry_id=entry.id, **content))


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
        entry = rt.session.append("instructions", content)
        rt.emit(event("instructions", entry_id=entry.id, **content))


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
