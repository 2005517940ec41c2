"""The system prompt, composed from named parts (docs/context.md).

    parts = default_parts(plugins, tool_names)   # the plugins' `system.*` prompts
    system = compose(parts)                      # what Request.system carries

Each `Part` says where it came from (a plugin, a file, a configuration key, the
environment) and how many tokens it takes by smith's estimator, so `smith context` can
show what the model is told, part by part. The default parts are the plugins'
`Plugin.prompts` entries named `system.NAME`, in plugin order; the `system.tools` part is
a heading followed by the `tool.NAME` line of every active tool that has one, and is left
out when no active tool has one. Configuration replaces them (`prompt.system`, a file) or
adds to them (`prompt.append`, files or text), read here with the diagnostics that name
a bad value and where it was set. A prompt file is read as the read tool reads
(smith.effects.read_file): a regular file of at most PROMPT_FILE_MAX_BYTES; one a
project's configuration names stays inside the project once symbolic links are
resolved; none leads into smith's data directory (nor, a project's, its configuration).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind
from smith.runtime._context import estimate_tokens, note_message, size_tokens

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from smith.config import Config, Setting
    from smith.effects import Reach
    from smith.sdk import Plugin

PROMPT_FILE = DiagnosticKind(
    "config.prompt-file",
    what="{key} names the file {path}, which cannot be read: {reason}",
    why="the file's text is what {key} puts in the system prompt, so smith will not run "
    "without it (set at {where})",
    fix="create the file, or correct or remove {key} at {where}",
)

PROMPT_FILE_REFUSED = DiagnosticKind(
    "config.prompt-file-refused",
    what="{key} names the file {path}, which smith will not read: {reason}",
    why="a prompt file is read as the read tool reads files: a regular file of at most "
    "{limit} KB, inside the project once symbolic links are resolved when the project's "
    "configuration names it, and never in smith's own directories (set at {where})",
    fix="{remedy}; or correct or remove {key} at {where}",
)
PROMPT_FILE_MAX_BYTES = 256 * 1024  # a prompt, not a document

SENT = ("system", "tools", "message")  # where a part goes in a request


@dataclass(frozen=True)
class Part:
    """One named piece of what the model is told.

    `sent`: where it goes in a request: `system` (a paragraph of the system prompt),
    `tools` (the tool definitions) or `message` (a context message in the history, such
    as the environment block). `tokens` is smith's estimate (about four bytes a token,
    the estimate the context is counted with)."""

    name: str
    source: str  # "plugin product", a file's path, "prompt.append (env SMITH_...)", ...
    text: str
    sent: str = "system"

    @property
    def tokens(self) -> int:
        if self.sent == "message":
            return estimate_tokens(note_message(self.name, self.text))
        return size_tokens(len(self.text.encode("utf-8", "surrogatepass")))

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "source": self.source, "sent": self.sent,
                "tokens": self.tokens, "text": self.text}  # fmt: skip


def default_parts(plugins: Sequence[Plugin], tool_names: Sequence[str]) -> list[Part]:
    """The plugins' `system.*` prompt parts for these active tools (see the module doc)."""
    active = set(tool_names)
    lines: dict[str, str] = {}
    for plugin in plugins:
        for name, text in plugin.prompts.items():
            tool = name.removeprefix("tool.")
            if name.startswith("tool.") and tool in active and tool not in lines:
                lines[tool] = text
    parts: list[Part] = []
    for plugin in plugins:
        for name, text in plugin.prompts.items():
            if not name.startswith("system."):
                continue
            part = name.removeprefix("system.")
            body = text
            if part == "tools":
                guidance = list(lines.values())  # in the order the plugins give them
                if not guidance:
                    continue
                body = "\n".join([text, *guidance])
            parts.append(Part(part, f"plugin {plugin.name}", body))
    return parts


def compose(parts: Sequence[Part]) -> str:
    """The system prompt: the `system` parts' texts, in order, a blank line apart."""
    return "\n\n".join(p.text.strip("\n") for p in parts if p.sent == "system" and p.text)


# -- prompt.system and prompt.append ---------------------------------------------------


@dataclass(frozen=True)
class PromptConfig:
    """What configuration says about the system prompt: a replacement of the default
    parts (`prompt.system`), and what goes after them (`prompt.append`), read."""

    system: Part | None = None
    append: tuple[Part, ...] = ()

    @staticmethod
    def from_config(config: Config, cwd: str) -> PromptConfig:
        """Read the files configuration names; raises config.prompt-file (naming the
        value and where it was set) for one that is missing or unreadable."""
        system = None
        setting = config.origin("prompt.system")
        if setting.value is not None:
            path = _resolve(str(setting.value), setting, config, cwd)
            text = _read(path, str(setting.value), setting, _reach(setting, config))
            system = Part("prompt.system", path, text)
        appended = []
        setting = config.origin("prompt.append")
        for item in setting.value if isinstance(setting.value, list) else []:
            value = str(item)
            if is_path(value):
                path = _resolve(value, setting, config, cwd)
                text = _read(path, value, setting, _reach(setting, config))
                appended.append(Part("prompt.append", path, text))
            else:
                appended.append(Part("prompt.append", _described(setting), value))
        return PromptConfig(system, tuple(appended))


def is_path(value: str) -> bool:
    """Whether a `prompt.append` value names a file rather than being the text itself:
    it starts with /, ~/, ./ or ../, or it is one word (no white space) that has a /
    in it or ends in .md or .txt."""
    if value.startswith(("/", "~/", "./", "../")):
        return True
    return not any(c.isspace() for c in value) and ("/" in value or value.endswith((".md", ".txt")))


def _described(setting: Setting) -> str:
    return f"{setting.key} ({setting.source})"


def _resolve(value: str, setting: Setting, config: Config, cwd: str) -> str:
    """A relative path from the user file is relative to its directory, from the
    project's file to the project root, from the environment or a flag to the working
    directory."""
    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return os.path.normpath(path)
    base = cwd
    if setting.layer == "user":
        base = os.path.dirname(config.user_file)
    elif setting.layer == "project":
        base = config.project_root
    return os.path.normpath(os.path.join(base, path))


def _reach(setting: Setting, config: Config) -> Reach:
    """Where a prompt file may lie: a project's configuration's, inside the project and
    out of smith's directories; the user's own (their file, the environment, a flag),
    anywhere but smith's data directory."""
    from smith.effects import Reach

    if setting.layer == "project":
        private = (config.home, str(config["config-home"]))
        return Reach.project(config.project_root, private=private)
    return Reach.anywhere(private=(config.home,))


def _read(path: str, value: str, setting: Setting, reach: Reach) -> str:
    from smith.effects import FileRefused, read_file

    where = str(setting.source)
    try:
        return read_file(path, limit=PROMPT_FILE_MAX_BYTES, reach=reach).decode("utf-8")
    except FileRefused as exc:
        raise PROMPT_FILE_REFUSED.error(
            value=value, source=setting.source, key=setting.key, path=path, reason=exc.reason,
            remedy=exc.fix, limit=PROMPT_FILE_MAX_BYTES // 1024, where=where,
        ) from None  # fmt: skip
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, UnicodeDecodeError):
            reason = "it is not UTF-8 text"
        raise PROMPT_FILE.error(
            value=value,
            source=setting.source,
            key=setting.key,
            path=path,
            reason=reason,
            where=where,
        ) from None


_SENT = {"system": "system prompt", "tools": "tool definitions", "message": "message"}


def context_table(parts: Sequence[Mapping[str, object]]) -> list[str]:
    """The table `smith context` prints and the app's /context shows: each part (as
    `Part.to_dict()` gives it), how it is sent, its estimated tokens and, last (the
    column that may be long), where it comes from; then the total."""
    total = sum(int(str(p["tokens"])) for p in parts)
    rows = [("PART", "SENT AS", "TOKENS", "SOURCE")]
    for p in parts:
        sent = str(p["sent"])
        tokens = f"{int(str(p['tokens'])):,}"
        rows.append((str(p["name"]), _SENT.get(sent, sent), tokens, str(p["source"])))
    rows.append(("total", "", f"{total:,}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [
        f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}".rstrip()
        for row in rows
    ]
