"""`smith mcp add` and `remove`: a server's block written into, or taken out of, the
user's configuration file, as text (comments and layout kept), read back before it is
kept (the file is put back as it was when the result does not resolve)."""

from __future__ import annotations

import os
import re
import tempfile

from smith.config import format_value
from smith.diagnostics import DiagnosticKind, SmithError, Source

MCP_EDIT = DiagnosticKind(
    "mcp.edit",
    what="cannot {action} MCP server '{server}': {problem}",
    why="smith mcp add and remove edit your configuration file ({path}) in place",
    fix="{remedy}, then run the command again",
)
ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,40}")


def _fail(action: str, server: str, path: str, problem: str, remedy: str) -> SmithError:
    return SmithError(
        MCP_EDIT(
            value=server,
            source=Source("argument", f"smith mcp {action}"),
            action=action,
            server=server,
            path=path,
            problem=problem,
            remedy=remedy,
        )
    )


def _write(path: str, text: str) -> None:
    real = os.path.realpath(path)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".config.kdl.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if os.path.exists(real):
            os.chmod(temp, os.stat(real).st_mode & 0o777)
        os.replace(temp, real)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def block(name: str, fields: dict[str, object]) -> str:
    """`server "NAME" key=value ...` with list and map values as children."""
    props = []
    children = []
    for key, value in fields.items():
        if isinstance(value, dict):
            if value:
                inner = "; ".join(f"{format_value(k)} {format_value(v)}" for k, v in value.items())
                children.append(f"{key} {{ {inner}; }}")
        elif isinstance(value, list):
            if value:
                children.append(f"{key} " + " ".join(format_value(v) for v in value))
        else:
            props.append(f"{key}={format_value(value)}")
    head = " ".join([f"server {format_value(name)}", *props])
    if not children:
        return head
    body = "".join(f"        {c}\n" for c in children)
    return f"{head} {{\n{body}    }}"


def add(path: str, name: str, fields: dict[str, object], check: object = None) -> str:
    """Append `name`'s block to the file at `path`; the text added."""
    if not ALIAS.fullmatch(name):
        raise _fail(
            "add",
            name,
            path,
            "an alias is letters, digits, '_' and '-'",
            "choose an alias such as files or web",
        )
    old = _read(path)
    if _find(old, name) is not None:
        raise _fail(
            "add",
            name,
            path,
            "it is configured already",
            f"`smith mcp remove {name}` first, or choose another alias",
        )
    added = f"mcp {{\n    {block(name, fields)}\n}}\n"
    separator = "" if not old or old.endswith("\n") else "\n"
    _write(path, old + separator + added)
    return added


def _find(text: str, name: str) -> tuple[int, int] | None:
    """Where `server "NAME" ...` stands (its whole node, children included)."""
    pattern = re.compile(r'(?m)^[ \t]*server[ \t]+"' + re.escape(name) + r'"[^\n]*')
    match = pattern.search(text)
    if match is None:
        return None
    start, end = match.start(), match.end()
    line = match.group(0)
    if line.rstrip().endswith("{"):
        depth, i = 1, end
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        end = i
    if end < len(text) and text[end] == "\n":
        end += 1
    return start, end


def remove(path: str, name: str) -> str:
    """Take `name`'s block out of the file at `path` (an `mcp { }` left empty goes too);
    the text removed."""
    old = _read(path)
    found = _find(old, name)
    if found is None:
        raise _fail(
            "remove",
            name,
            path,
            "your configuration file has no server of that name",
            "`smith mcp list` shows each server and where it is configured (a project's "
            ".smith/config.kdl or .mcp.json is edited by hand)",
        )
    start, end = found
    new = old[:start] + old[end:]
    new = re.sub(r"(?m)^[ \t]*mcp[ \t]*\{[ \t]*\n?[ \t]*\}[ \t]*\n?", "", new)
    _write(path, new)
    return old[start:end]
