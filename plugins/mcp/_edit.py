"""`smith mcp add` and `remove`: a server's block written into, or taken out of, the
user's configuration file, as text (comments and layout kept), by the file's parsed
structure (smith.config.rewrite: nodes by their spans, never by counting braces), read
back before it is kept (a result that does not read as the intended settings is never
written)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from smith.config import format_value, rewrite
from smith.diagnostics import DiagnosticKind, SmithError, Source

if TYPE_CHECKING:
    from collections.abc import Callable

    from smith.config import Block, Located

MCP_EDIT = DiagnosticKind(
    "mcp.edit",
    what="cannot {action} MCP server '{server}': {problem}",
    why="smith mcp add and remove edit your configuration file ({path}) in place",
    fix="{remedy}, then run the command again",
)
REDACTED = "[redacted]"
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


def add(path: str, name: str, fields: dict[str, object], replace: bool = False) -> str:
    """Append `name`'s block to the file at `path`; the text added. A server of that
    name the file configures already, in any layout, is refused, or with `replace`
    taken out first (all of it, as `remove` takes it)."""
    if not ALIAS.fullmatch(name):
        raise _fail(
            "add",
            name,
            path,
            "an alias is letters, digits, '_' and '-' (no '.': it would split the name)",
            "choose an alias such as files or web",
        )
    added = f"mcp {{\n    {block(name, fields)}\n}}\n"
    ours = f"mcp.server.{name}."

    def change(text: str, settings: list[Located], tree: list[Block]) -> str:
        if any(s.key.startswith(ours) for s in settings):
            if not replace:
                raise _fail(
                    "add",
                    name,
                    path,
                    "it is configured already (another block of that name would merge with it)",
                    f"`smith mcp remove {name}` first, or add --replace to replace it",
                )
            spans, _ = _cut(tree, ours[:-1])
            for start, end in sorted(spans, reverse=True):
                text = _take(text, start, end)
        separator = "" if not text or text.endswith("\n") else "\n"
        return text + separator + added

    def check(before: list[Located], after: list[Located]) -> str | None:
        old = [(k, v) for k, v in _pairs(before) if not k.startswith(ours)]
        new = _pairs(after)
        if new[: len(old)] != old:
            return "it would change settings the file has"
        if not new[len(old) :] or any(not k.startswith(ours) for k, _ in new[len(old) :]):
            return f"it would not read as server {name} alone"
        return None

    _rewrite("add", name, path, change, check)
    return f"mcp {{\n    {block(name, _shown(fields))}\n}}\n"


def _secret(key: str, value: object) -> bool:
    """Whether an environment variable's or a header's value is shown masked: when
    diagnostics would mask it (GITHUB_TOKEN=..., Authorization: Bearer ..., a token's
    known shape)."""
    from smith.diagnostics import masked

    text = str(value)
    return any(masked(t) != t for t in (f"{key}={text}", f"{key}: {text}", text))


def _shown(fields: dict[str, object]) -> dict[str, object]:
    """`fields` as they may be printed: a secret-looking value of a map replaced, a
    credential in a URL or an argument masked."""
    from smith.diagnostics import masked

    out: dict[str, object] = {}
    for key, value in fields.items():
        if isinstance(value, dict):
            out[key] = {k: REDACTED if _secret(k, v) else v for k, v in value.items()}
        elif isinstance(value, list):
            out[key] = [masked(v) if isinstance(v, str) else v for v in value]
        else:
            out[key] = masked(value) if isinstance(value, str) else value
    return out


def _pairs(settings: list[Located]) -> list[tuple[str, object]]:
    return [(s.key, s.value) for s in settings]


def _rewrite(
    action: str,
    name: str,
    path: str,
    change: Callable[[str, list[Located], list[Block]], str],
    check: Callable[[list[Located], list[Located]], str | None],
) -> tuple[str, str]:
    try:
        return rewrite(path, change, check)
    except ValueError as exc:
        raise _fail(action, name, path, str(exc), "edit the file by hand") from None


def _cut(tree: list[Block], target: str) -> tuple[list[tuple[int, int]], bool]:
    """The spans of the nodes that configure `target` (mcp.server.NAME: its named
    blocks, or nested or dotted nodes of that key), with each block around them left
    with nothing of its own; and whether nothing of `tree` is left."""
    spans: list[tuple[int, int]] = []
    kept = 0
    for b in tree:
        if b.key == target or b.key.startswith(target + "."):
            spans.append((b.start, b.end))
            continue
        if target.startswith(b.key + "."):
            inner, emptied = _cut(b.children, target)
            if inner and emptied and not b.valued:
                spans.append((b.start, b.end))
                continue
            spans.extend(inner)
        kept += 1
    return spans, kept == 0


def _take(text: str, start: int, end: int) -> str:
    """`text` without [start, end), with the spaces after it, and its line when nothing
    else stands on it."""
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip(" \t"):  # after another node on its line
        if text[end - 1] == "\n":  # keep the line's end, lose the spaces before it
            end -= 1
            while start > line_start and text[start - 1] in " \t":
                start -= 1
        else:
            while end < len(text) and text[end] in " \t":
                end += 1
        return text[:start] + text[end:]
    while end < len(text) and text[end] in " \t":
        end += 1
    if end < len(text) and text[end] == "\n":
        end += 1
    if end == len(text) or text[end - 1] == "\n":
        start = line_start
    return text[:start] + text[end:]


def remove(path: str, name: str) -> str:
    """Take `name`'s nodes out of the file at `path` (a block left empty goes too: the
    `mcp { }` around it); the text removed."""
    from smith.diagnostics import masked

    target = f"mcp.server.{name}"
    taken: list[str] = []

    def change(text: str, settings: list[Located], tree: list[Block]) -> str:
        spans, _ = _cut(tree, target)
        if not spans:
            raise _fail(
                "remove",
                name,
                path,
                "your configuration file has no server of that name",
                "`smith mcp list` shows each server and where it is configured (a project's "
                ".smith/config.kdl or .mcp.json is edited by hand)",
            )
        for start, end in sorted(spans, reverse=True):
            shown = text[start:end]
            inside = [s for s in settings if start <= s.start and s.end <= end]
            for s in sorted(inside, key=lambda s: s.start, reverse=True):
                *_, field, key = s.key.split(".")
                if field in ("env", "headers") and _secret(key, s.value):  # a secret: masked
                    shown = shown[: s.start - start] + f'"{REDACTED}"' + shown[s.end - start :]
            taken.insert(0, masked(shown.rstrip()))
            text = _take(text, start, end)
        return text

    def check(before: list[Located], after: list[Located]) -> str | None:
        kept = [(k, v) for k, v in _pairs(before) if not k.startswith(target + ".")]
        return None if _pairs(after) == kept else "it would change other settings too"

    _rewrite("remove", name, path, change, check)
    return "\n".join(taken) + "\n"
