"""YAML front matter of Markdown files (skills' SKILL.md, agent definitions), read by a
YAML library, the one module that imports it.

    ---
    name: pdf-tools
    description: Work with PDF files
    ---
    # The body

`split(text)` gives the front matter as a mapping and the body after it. What it refuses,
with a `FrontMatterError` whose message says where and why: front matter that is not
YAML, is not a mapping, is larger than `MAX_BYTES`, or uses aliases (`*name`: a file
that refers to one node a million times would make every later copy of it huge).
A text with no front matter (its first line is not `---`) has an empty one.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_BYTES", "FrontMatterError", "split"]

MAX_BYTES = 64 * 1024  # front matter holds a name, a description and a few lists


class FrontMatterError(ValueError):
    """Front matter that cannot be read; the message says where and why."""


def split(text: str) -> tuple[dict[str, Any], str]:
    """The front matter of `text` (between a first line `---` and the next `---` line)
    and the body after it. Raises FrontMatterError (see the module)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise FrontMatterError("the front matter opened by `---` on line 1 is never closed")
    source = "".join(lines[1:end])
    if len(source.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise FrontMatterError(f"the front matter is larger than {MAX_BYTES // 1024} KiB")
    data = _load(source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"the front matter is a {type(data).__name__}, not a mapping")
    return {str(k): v for k, v in data.items()}, "".join(lines[end + 1 :])


def _load(source: str) -> object:
    import yaml

    # libyaml's loader where it is built (3x the pure-Python one): its events are read
    # first for an alias, which its composer would take without asking.
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for event in yaml.parse(source, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 2 if event.start_mark is not None else "?"
                raise FrontMatterError(
                    f"line {line}: the front matter uses an alias "
                    "(*name); write the value out instead"
                )
        return yaml.load(source, Loader=loader)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""  # +1 for `---`
        problem = getattr(exc, "problem", None) or str(exc)
        raise FrontMatterError(f"{where}the front matter is not YAML: {problem}") from None
    except (ValueError, OverflowError, RecursionError) as exc:
        # What YAML reads but Python cannot hold: a date 2026-02-30, a timezone past 24
        # hours, an integer of thousands of digits, nesting deeper than the stack.
        raise FrontMatterError(f"the front matter has a value smith cannot read: {exc}") from None
