"""Prompt templates: Markdown files that become `/NAME` commands.

    ---
    description: Review the staged changes
    argument-hint: FOCUS
    ---
    Review the staged changes, above all $1. Everything asked: $ARGUMENTS

Templates come from, lowest precedence first: plugins (`Plugin.templates`; the product
plugin ships `/init`), `$SMITH_CONFIG_HOME/prompts/*.md`, and a trusted project's
`.smith/prompts/*.md` (only as `smith trust` approved them); a later one shadows an
earlier one of the same name, with a notice. Input `/NAME args` whose NAME is a template
is sent as the template's body with `$1`..`$9` (the arguments, split as a shell would),
`$ARGUMENTS` and `$@` (all of them) filled in (`$$` is a `$`; `$10` is left as
written); the recorded message notes the template and what was typed. The expansion is
the runtime's, so it is the same in `smith eval`, RPC `prompt`, the app and the library.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from smith.diagnostics import Diagnostic, DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.effects import Reach

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
# $$ is a literal $ (so `$$1` is `$1` as written, and a shell's `$@` can be kept).
_PLACEHOLDER = re.compile(r"\$(\$|ARGUMENTS|@|[1-9](?![0-9]))")
_COMMAND = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:\s+|\Z)")

EMPTY = DiagnosticKind(
    "template.empty",
    severity="warning",
    what="the prompt template /{name} expands to nothing with '{arguments}', so what you "
    "typed was sent as it is",
    why="a model is never sent an empty message; the template's text is blank or only "
    "placeholders that were not given",
    fix="give the arguments its hint asks for ({hint}), or edit {file}",
)
SHADOWED = DiagnosticKind(
    "template.shadowed",
    severity="warning",
    what="the prompt template /{name} of {winner} hides the one of {loser}",
    why="templates are known by name, and the project's come after the user's (and the "
    "user's after the plugins'; among plugins, the first of a name is kept)",
    fix="rename one of them to keep both",
)
COMMAND_NAMED = DiagnosticKind(
    "template.command-named",
    severity="warning",
    what="the prompt template /{name} ({file}) is not used: the plugin {plugin} has a "
    "/{name} command",
    why="a command and a prompt template cannot share a name, and the plugin's command "
    "wins, in the app, `smith eval` and RPC alike",
    fix="rename {file} to use the template",
)
UNREADABLE = DiagnosticKind(
    "template.unreadable",
    severity="warning",
    what="the prompt template {path} was not loaded: {problem}",
    why="a template is a regular UTF-8 Markdown file of at most 64 KB named NAME.md, NAME "
    "being letters, digits, '_', '-' or '.'; a project's is no symlink, and none leads "
    "into smith's own directories or /proc",
    fix="{remedy}; until then it is not a command",
)
UNREADABLE_DIRECTORY = DiagnosticKind(
    "template.unreadable-directory",
    severity="warning",
    what="the prompt templates in {path} were not loaded: {problem}",
    why="templates are read from the directory's NAME.md files",
    fix="make the directory readable, or remove it",
)
CHANGED = DiagnosticKind(
    "template.not-approved",
    severity="warning",
    what="the project's prompt template {path} was not loaded: it was added or changed "
    "since you trusted the project",
    why="a project's templates become what the model is asked to do, so they apply only "
    "as you approved them (as its configuration does)",
    fix="review it, then run `smith trust` in the project again",
)
UNTRUSTED = DiagnosticKind(
    "template.untrusted-project",
    severity="warning",
    what="the project's prompt templates ({path}) were not loaded: the project is not trusted",
    why="templates become what the model is asked to do, and a project's files are taken "
    "as instructions only once you trust its configuration",
    fix="review them, then run `smith trust` in the project",
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
            if key == "$":
                return "$"
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


def _files(
    directory: str, warn: Callable[[Diagnostic], None], reach: Reach
) -> Iterable[tuple[Template, str]]:
    """Each template file of `directory` with its SHA-256, read as `reach` allows
    (smith.effects.read_file: a project's are regular files inside it, no symlinks)."""
    import hashlib

    from smith.effects import FileRefused, FileTooBig, read_file
    from smith.trust import TEMPLATE_MAX_BYTES

    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        warn(UNREADABLE_DIRECTORY(value=directory, source=Source("file", directory),
                                  path=directory, problem=exc.strerror or str(exc)))  # fmt: skip
        return
    for filename in names:
        if not filename.endswith(".md") or filename.startswith("."):
            continue  # editor backups, lock files and hidden notes are no commands
        path = os.path.join(directory, filename)
        name = filename[:-3]
        problem, remedy = "", ""
        if not NAME.match(name):
            problem, remedy = f"'{name}' is not a command name", "rename the file"
        else:
            try:
                data = read_file(path, limit=TEMPLATE_MAX_BYTES, reach=reach)
                text = data.decode("utf-8-sig")  # a BOM is not part of the front matter
                yield parse(text, name, path), hashlib.sha256(data).hexdigest()
                continue
            except UnicodeDecodeError:
                problem, remedy = "it is not UTF-8 text", "save it as UTF-8 text"
            except FileTooBig as exc:
                problem, remedy = f"it is over {exc.limit // 1024} KB", "shorten it"
            except FileRefused as exc:
                problem, remedy = exc.reason, exc.fix
            except OSError as exc:
                problem, remedy = exc.strerror or str(exc), "make it a readable regular file"
        warn(UNREADABLE(value=path, source=Source("file", path), path=path,
                        problem=problem, remedy=remedy))  # fmt: skip


def load(
    plugins: Mapping[str, Mapping[str, str]],
    config_home: str,
    project_root: str,
    *,
    approved: Mapping[str, str] | None,
    warn: Callable[[Diagnostic], None],
    private: Sequence[str] = (),
) -> dict[str, Template]:
    """Every template, by name: the plugins' (`{plugin: {name: text}}`, the first plugin
    of a name kept, as for skills and agents), the user's, then the project's, each
    later one shadowing an earlier one with a notice. A
    project's templates load only as `smith trust` approved them (`approved`: name ->
    SHA-256, None when the project is not trusted); one added or changed since is said.
    `private`: smith's own directories (data, configuration), which no template file
    leads into (the user's own may lie in the configuration directory)."""
    from smith.effects import Reach

    home = os.path.realpath(config_home)
    users = Reach.anywhere(private=[p for p in private if os.path.realpath(p) != home])
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
            template = parse(text, name, f"plugin {plugin}")
            earlier = found.get(name)
            if earlier is None:
                add(template)
            else:  # among plugins the first of a name wins, as for skills and agents
                warn(SHADOWED(value=name, source=Source("file", template.source), name=name,
                              winner=earlier.source, loser=template.source))  # fmt: skip
    for template, _ in _files(os.path.join(config_home, "prompts"), warn, users):
        add(template)
    project = os.path.join(project_root, ".smith", "prompts")
    if not os.path.isdir(project):
        return found
    inside = os.path.realpath(project).startswith(os.path.realpath(project_root) + os.sep)
    if approved is None or not inside:
        try:
            waiting = any(n.endswith(".md") for n in os.listdir(project))
        except OSError:
            waiting = True
        if waiting:
            warn(UNTRUSTED(value=project, source=Source("file", project), path=project))
        return found
    reach = Reach.project(project_root, private=private, links=False)
    for template, sha in _files(project, warn, reach):
        if approved.get(template.name) == sha:
            add(template)
        else:
            warn(CHANGED(value=template.source, source=Source("file", template.source),
                         path=template.source))  # fmt: skip
    return found


def without_commands(
    templates: Mapping[str, Template],
    commands: Mapping[str, str],
    warn: Callable[[Diagnostic], None],
) -> dict[str, Template]:
    """`templates` less those named as a plugin's command (`commands`: name -> plugin),
    each left out said once through `warn`: the command wins."""
    kept: dict[str, Template] = {}
    for name, template in templates.items():
        plugin = commands.get(name)
        if plugin is None:
            kept[name] = template
            continue
        warn(COMMAND_NAMED(value=template.source, source=Source("file", template.source),
                           name=name, file=template.source, plugin=plugin))  # fmt: skip
    return kept
