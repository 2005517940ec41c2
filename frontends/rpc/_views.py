"""Read-only views for RPC answers: sessions of the project, a session's messages and
tree, the runtime's state, the models a client may pick. Plain JSON-ready dicts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from smith.diagnostics import SmithError
from smith.runtime import SessionTree, Shown, ops

if TYPE_CHECKING:
    from smith.config import Config
    from smith.runtime import Runtime

PREVIEW = 80  # characters of a message's first line in the tree


def session_info(runtime: Runtime) -> dict[str, Any]:
    """The runtime's session: id, name, file, entry count, selected leaf, directory."""
    found = runtime.submit(ops.SessionInfo())
    assert isinstance(found, dict)
    return found


def session_list(config: Config, current: str) -> list[dict[str, Any]]:
    """This project's sessions, newest first (read through the assembly's
    ProjectSessions); the open one is `current` (its file)."""
    from smith.runtime import ProjectSessions

    sessions = ProjectSessions(config.home, config.project_root)
    out = []
    for path in sessions.paths():
        try:
            found = sessions.read(path)
        except SmithError:
            continue
        out.append(
            {
                "id": found.id,
                "name": found.name,
                "entries": len(found),
                "modified": int(os.stat(path).st_mtime * 1000),
                "current": path == current,
            }
        )
    return out


def messages(runtime: Runtime, leaf: str | None) -> dict[str, Any]:
    """The recorded messages of a branch (the selected one unless `leaf` names another),
    oldest first: everything, compacted or not (providers see less, see docs/events.md)."""
    branch = runtime.submit(ops.Entries(leaf=leaf, kinds=("message",)))
    assert isinstance(branch, Shown)
    found = [{"entry_id": e.id, "ts": e.ts, "message": e.content} for e in branch.entries]
    return {"session": runtime.status()["session"], "leaf": branch.leaf, "messages": found}


def tree(runtime: Runtime) -> dict[str, Any]:
    """Every entry with its parent (all branches), messages with their role and first
    line; `leaves` are the tips of the branches and `leaf` the selected one."""
    shape = runtime.submit(ops.Tree())
    assert isinstance(shape, SessionTree)
    children = shape.children()
    nodes = []
    for entry in shape.all():
        node: dict[str, Any] = {
            "id": entry.id,
            "parent": entry.parent,
            "kind": entry.kind,
            "ts": entry.ts,
        }
        content = entry.content if entry.kind == "message" else None
        if isinstance(content, dict):
            node["role"] = content.get("role")
            node["preview"] = _first_line(content)
        nodes.append(node)
    leaves = [n["id"] for n in nodes if not children.get(n["id"])]
    return {"session": shape.id, "leaf": shape.leaf, "leaves": leaves, "entries": nodes}


def _first_line(message: Mapping[str, Any]) -> str:
    for part in message.get("content") or []:
        if isinstance(part, dict) and part.get("type") in ("text", "tool_call"):
            text = part.get("text") or f"{part.get('name')}(…)"
            lines = str(text).strip().splitlines()
            return lines[0][:PREVIEW] if lines else ""
    return ""


async def state(runtime: Runtime) -> dict[str, Any]:
    """What get_state answers: the runtime's status view (state, damage, context use,
    memory, working directory, images, plugins; Runtime.status), its session, and the
    version of the protocol spoken (smith.protocol, `smith rpc --schema`)."""
    from smith.protocol import VERSION

    return {**runtime.status(), "session": session_info(runtime), "protocol": VERSION}


def models(config: Config, env: Mapping[str, str], current: str) -> list[dict[str, Any]]:
    """What model.set takes: configured aliases and groups, the catalog's models (each
    `usable` when its provider has a credential, looked for without any network), and
    the offline ones."""
    from smith.cli import plugin_for
    from smith.providers import find_credential
    from smith.runtime import registry

    models = registry(config)
    out: list[dict[str, Any]] = []
    for name, (target, source) in sorted(models.routes.aliases.items()):
        out.append({"spec": name, "kind": "alias", "target": target, "from": str(source)})
    for name, (members, source) in sorted(models.routes.groups.items()):
        out.append({"spec": name, "kind": "group", "members": list(members),
                    "from": str(source)})  # fmt: skip
    keyed: dict[str, bool] = {}
    for info in sorted(models.catalog.models(), key=lambda i: (i.provider, i.id)):
        if info.provider not in keyed:
            plugin = plugin_for(info.provider)
            try:
                found = find_credential(
                    info.provider, env=env, home=config.home, config=config, plugin=plugin
                )
            except SmithError:
                found = None
            keyed[info.provider] = found is not None and not found.expired()
        out.append(
            {
                "spec": info.key,
                "kind": "model",
                "provider": info.provider,
                "id": info.id,
                "context_window": info.context_window,
                "max_output": info.max_output,
                "thinking": list(info.thinking),
                "usable": keyed[info.provider],
            }
        )
    out.append({"spec": "demo", "kind": "offline", "usable": True})
    out.append({"spec": "scripted:PATH", "kind": "offline", "usable": True})
    for item in out:
        item["current"] = item["spec"] == current
    return out
