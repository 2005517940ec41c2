"""What changed in a project's configuration since the user trusted it.

Trust follows content (smith.trust): a `.smith/config.kdl` that differs from the text the
user approved is not applied, and the warning lists each setting added, changed or
removed, with its new value, so that the user can see what `smith trust` would approve.
"""

from __future__ import annotations

from smith.diagnostics import Diagnostic, DiagnosticKind, Source

CHANGED_PROJECT = DiagnosticKind(
    "config.changed-project",
    severity="warning",
    what="ignoring this project's configuration: it changed since you trusted it "
    "({when}): {changes}",
    why="trust covers the file as you approved it; a changed file (a `git pull`, a "
    "model's edit) could send your API key to another server or run other commands, so "
    "smith applies none of it until you approve it again",
    fix="review the file, then run `smith trust {root}` to apply it as it is now",
)
MAX_SHOWN = 8  # changes listed in the warning; the rest are counted


def settings_of(text: str, path: str) -> dict[str, str] | None:
    """Each setting of a configuration text as key -> value in KDL form; None when the
    text does not parse."""
    from smith.config._kdl import read_settings
    from smith.config._located import format_value

    located, problems = read_settings(path, text)
    if problems and not located:
        return None
    return {item.key: format_value(item.value) for item in located}


SHOWN_CHARS = 80  # of a value in the warning: a file can hold a value of a megabyte


def _cut(literal: str) -> str:
    if len(literal) <= SHOWN_CHARS:
        return literal
    return f"{literal[: SHOWN_CHARS - 20]}… ({len(literal):,} characters)"


def changes(old: str | None, new: str, path: str) -> list[str]:
    """The settings added, changed or removed from `old` to `new`, e.g.
    `tools.bash.timeout 77 -> 88`; `old` None: the file was not there when trusted."""
    before = {} if old is None else settings_of(old, path)
    after = settings_of(new, path)
    if before is None or after is None:
        return ["the file's text changed (it does not parse as configuration now or then)"]
    found = []
    for key in sorted(before.keys() | after.keys()):
        if key not in before:
            found.append(f"{key} {_cut(after[key])} (new)")
        elif key not in after:
            found.append(f"{key} removed (was {_cut(before[key])})")
        elif before[key] != after[key]:
            found.append(f"{key} {_cut(before[key])} -> {_cut(after[key])}")
    return found or ["the file's text changed, but not its settings"]


def changed_since(approved: dict[str, object], text: str, path: str, root: str) -> Diagnostic:
    """The warning for a project file that differs from what was trusted."""
    old = approved.get("content")
    if "sha256" not in approved:
        listed = changes(None, text, path)
        when = "trust then approved the project, not a file; now it has"
    else:
        listed = changes(old if isinstance(old, str) else None, text, path)
        when = f"on {approved.get('trusted_at', 'an earlier date')}"
    if not isinstance(old, str) and "sha256" in approved:
        when += ", when it had no configuration file"
    shown = "; ".join(listed[:MAX_SHOWN])
    if len(listed) > MAX_SHOWN:
        shown += f"; and {len(listed) - MAX_SHOWN} more"
    return CHANGED_PROJECT(source=Source("file", path), when=when, changes=shown, root=root)
