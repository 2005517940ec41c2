"""Prompt templates: Markdown files that become `/NAME` commands.

    ---
    description: Review the staged changes
    argument-hint: FOCUS
    ---
    Review the staged changes, above all $1. Everything asked: $ARGUMENTS

Templates come from, lowest precedence first: plugins (`Plugin.templates`; the product
plugin ships `/init`), `$SMITH_CONFIG_HOME/prompts/*.md`, and a trusted project's
`.smith/prompts/*.md`; a later one shadows an earlier one of the same name, with a
notice. Input `/NAME args` whose NAME is a template is sent as the template's body with
`$1`..`$9` (the arguments, split as a shell would), `$ARGUMENTS` and `$@` (all of them)
filled in; the recorded message notes the template and what was typed. The expansion is
the runtime's, so it is the same in `smith eval`, RPC `prompt`, the app and the library.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from smith.diagnostics import Diagnostic, DiagnosticKind, Source

MAX_BYTES = 64 * 1024  # a template is a prompt, not a document
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|@|[1-9])")
_COMMAND = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:\s+|\Z)")

SHADOWED = DiagnosticKind(
    "template.shadowed",
    severity="warning",
    what="the prompt template /{name} of {winner} hides the one of {loser}",
    why="templates are known by name, and the project's come after the user's (and the "
    "user's after the plugins')",
    fix="rename one of them to keep both",
)
UNREADABLE = DiagnosticKind(
    "template.unreadable",
    severity="warning",
    what="the prompt template {path} was not loaded: {problem}",
    why="a template is a UTF-8 Markdown file of at most 64 KB named NAME.md, NAME being "
    "letters, digits, '_', '-' or '.'",
    fix="{remedy}; until then it is not a command",
)
UNTRUSTED = DiagnosticKind(
    "template.untrusted-project",
    severity="warning",
    what="the project's prompt templates ({path}) were not loaded: the project is not trusted",
    why="templates become what the model is asked to do, and a project's files are taken "
    "as instructions only once you trust its configuration",
    fix="review them, then run `smith trust` in the project (it needs a .smith/config.kdl)",
)


@dataclass(frozen=True)
class Template:
    name: str
    body: str
    description: str = ""
    argument_hint: str = ""
    source: str = ""  # the file, or "plugin NAME"

    def expand(self, arguments: str) -> str:
        """The body with $1..$9, $ARGUMENTS and $@ filled in from `arguments`."""
        rest = arguments.strip()
        try:
            words = shlex.split(rest)
        except ValueError:  # an unbalanced quote: split at whitespace instead
            words = rest.split()

        def fill(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in ("ARGUMENTS", "@"):
                return rest
            index = int(key) - 1
            return words[index] if index < len(words) else ""

        return _PLACEHOLDER.sub(fill, self.body)


def parse(text: str, name: str, source: str) -> Template:
    """A template from its file's text: optional front matter between `---` lines
    (`description`, `argument-hint`; other keys are ignored), then the body."""
    description = hint = ""
    body = text
    lines = text.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        for end in range(1, len(lines)):
            if lines[end].strip() == "---":
                for line in lines[1:end]:
                    key, sep, value = line.partition(":")
                    value = value.strip().strip("\"'")
                    if sep and key.strip() == "description":
                        description = value
                    elif sep and key.strip() == "argument-hint":
                        hint = value
                body = "".join(lines[end + 1 :])
                break
    return Template(name, body.strip("\n") + "\n", description, hint, source)


def match(templates: Mapping[str, Template], text: str) -> tuple[Template, str] | None:
    """The template `text` invokes (`/NAME args`) and its arguments; None if it invokes
    none."""
    found = _COMMAND.match(text.lstrip())
    if found is None or found.group(1) not in templates:
        return None
    return templates[found.group(1)], text.lstrip()[found.end() :]


def _files(directory: str, warn: Callable[[Diagnostic], None]) -> Iterable[Template]:
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        warn(UNREADABLE(path=directory, problem=exc.strerror or str(exc),
                        remedy="make the directory readable"))  # fmt: skip
        return
    for filename in names:
        if not filename.endswith(".md"):
            continue
        path = os.path.join(directory, filename)
        name = filename[:-3]
        problem, remedy = "", ""
        if not NAME.match(name):
            problem, remedy = f"'{name}' is not a command name", "rename the file"
        elif not os.path.isfile(path):
            problem, remedy = "it is not a regular file", "replace it with a file"
        elif os.path.getsize(path) > MAX_BYTES:
            size = os.path.getsize(path)
            problem, remedy = f"it is {size} bytes, over 64 KB", "shorten it"
        else:
            try:
                with open(path, encoding="utf-8") as f:
                    yield parse(f.read(), name, path)
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problem, remedy = f"it cannot be read ({exc})", "save it as UTF-8 text"
        warn(UNREADABLE(value=path, source=Source("file", path), path=path,
                        problem=problem, remedy=remedy))  # fmt: skip


def load(
    plugins: Mapping[str, Mapping[str, str]],
    config_home: str,
    project_root: str,
    *,
    trusted: bool,
    warn: Callable[[Diagnostic], None],
) -> dict[str, Template]:
    """Every template, by name: the plugins' (`{plugin: {name: text}}`), the user's,
    then the trusted project's, each later one shadowing an earlier one with a notice."""
    found: dict[str, Template] = {}

    def add(template: Template) -> None:
        earlier = found.get(template.name)
        if earlier is not None:
            warn(SHADOWED(value=template.name, source=Source("file", template.source),
                          name=template.name, winner=template.source,
                          loser=earlier.source))  # fmt: skip
        found[template.name] = template

    for plugin, texts in plugins.items():
        for name, text in texts.items():
            add(parse(text, name, f"plugin {plugin}"))
    for template in _files(os.path.join(config_home, "prompts"), warn):
        add(template)
    project = os.path.join(project_root, ".smith", "prompts")
    if trusted:
        for template in _files(project, warn):
            add(template)
    elif os.path.isdir(project) and any(n.endswith(".md") for n in os.listdir(project)):
        warn(UNTRUSTED(value=project, source=Source("file", project), path=project))
    return found
