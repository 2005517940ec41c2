"""Project instruction files: AGENTS.md (or CLAUDE.md) by directory (docs/context.md).

In each directory the first of `context.files` that exists is its instruction file
(default AGENTS.md, then CLAUDE.md where there is no AGENTS.md). What is loaded, in this
order, so the most specific rules come last: the file in smith's configuration
directory (the user's own, for every project), then one per directory from the project
root down to the working directory. A file larger than `context.max-bytes` is refused
whole with a warning naming it, its size and the setting, never cut.

Each is read as the read tool reads (smith.effects.read_file): a project's must be a
regular file inside the project once symbolic links are resolved, never in smith's own
directories; the user's own may lead anywhere but smith's data directory. A cloned
repository's `AGENTS.md -> /proc/self/environ`, or one a command planted pointing at
smith's credentials, is refused with a warning saying where it leads, never loaded.

Directories below the project root that the agent reaches later (a tool call's path) are
looked at once, when first touched (`Instructions.reached`); the runtime records the
files it finds there as `instructions` entries (smith.runtime._notes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from smith.diagnostics import Diagnostic
    from smith.effects import Reach

INSTRUCTIONS_TOO_BIG = DiagnosticKind(
    "context.file-too-big",
    severity="warning",
    what="the instruction file {path} is {size} bytes, over context.max-bytes ({limit}); "
    "it was not loaded",
    why="an instruction file is sent whole or not at all, never cut where the bound falls "
    "(context.max-bytes is set at {where})",
    fix="shorten {path}, or raise context.max-bytes to at least {size}",
)
INSTRUCTIONS_UNREADABLE = DiagnosticKind(
    "context.file-unreadable",
    severity="warning",
    what="the instruction file {path} cannot be read: {reason}; it was not loaded",
    why="instruction files are UTF-8 text read when a runtime starts or a directory is "
    "first reached",
    fix="make {path} a readable UTF-8 file, or remove it",
)
INSTRUCTIONS_REFUSED = DiagnosticKind(
    "context.file-refused",
    severity="warning",
    what="the instruction file {path} was not loaded: {reason}",
    why="smith reads instruction files as the read tool reads files: a project's must be a "
    "regular file inside the project once symbolic links are resolved, and none may lead "
    "into smith's own directories, so that a repository cannot send the model another file "
    "of this machine (the user's own file in {config_home} may lead anywhere else)",
    fix="{remedy}; until then its rules are not sent",
)
INSTRUCTIONS_BAD_NAME = DiagnosticKind(
    "config.context-file-name",
    what="context.files has '{name}', which is not a file name",
    why="context.files names the instruction files looked for in each directory (set at "
    "{where}), so each is a name without a directory, such as AGENTS.md",
    fix="list plain file names, e.g. AGENTS.md CLAUDE.md",
)


@dataclass(frozen=True)
class InstructionFile:
    path: str
    directory: str  # the directory its rules are for; "" for the user's global file
    text: str

    def rendered(self) -> str:
        """The file as the model is shown it: what it is for, then its text."""
        if not self.directory:
            head = f"The user's own instructions, for every project ({self.path}):"
        else:
            head = f"Instructions for {self.directory}/ and below ({self.path}):"
        return f"{head}\n\n{self.text.strip()}"


@dataclass(frozen=True)
class InstructionSettings:
    names: tuple[str, ...]
    max_bytes: int
    max_bytes_source: Source

    def check(self, names_source: Source) -> None:
        """Raise config.context-file-name for a name that has a directory in it."""
        for name in self.names:
            if not name or "/" in name or name in (".", ".."):
                raise INSTRUCTIONS_BAD_NAME.error(
                    value=name, source=names_source, name=name, where=str(names_source)
                )


class Instructions:
    """The instruction files of one project, directory by directory, each directory
    looked at once (`checked`)."""

    def __init__(
        self,
        settings: InstructionSettings,
        root: str,
        cwd: str,
        *,
        private: Sequence[str] = (),
    ) -> None:
        """`private`: smith's own directories (its data, then its configuration), which
        no instruction file may lead into (the user's global file may lie in the latter)."""
        from smith.effects import Reach

        self.settings = settings
        self.root = os.path.realpath(root)
        self.cwd = os.path.realpath(cwd)
        self.private = tuple(private)
        self.config_home = "smith's configuration directory"  # known once `initial` ran
        self.reach = Reach.project(self.root, private=self.private)
        self.checked: set[str] = set()
        self.first: frozenset[str] = frozenset()  # what `initial` looked at

    def forget_reached(self) -> None:
        """Look again at the directories reached after the start (a compaction took
        their notes out of the context: each is told again when next reached)."""
        self.checked = set(self.first)

    def initial(self, config_home: str) -> tuple[list[InstructionFile], list[Diagnostic]]:
        """The global file, then the root's down to the working directory's."""
        from smith.effects import Reach

        found: list[InstructionFile] = []
        problems: list[Diagnostic] = []
        self.config_home = home_dir = os.path.realpath(config_home)
        own = Reach.anywhere(private=[p for p in self.private if os.path.realpath(p) != home_dir])
        home = self._load(home_dir, problems, label="", reach=own)
        if home is not None:
            found.append(home)
        for directory in self._chain(self.cwd) if self._below(self.cwd) else [self.root]:
            self.checked.add(directory)
            loaded = self._load(directory, problems)
            if loaded is not None:
                found.append(loaded)
        self.first = frozenset(self.checked)
        return found, problems

    def reached(self, paths: Iterable[str]) -> tuple[list[InstructionFile], list[Diagnostic]]:
        """The files of directories below the root that `paths` (real paths a tool call
        touched) lie in and that were not looked at yet, shallowest first."""
        found: list[InstructionFile] = []
        problems: list[Diagnostic] = []
        for path in paths:
            if not self._below(path) or path == self.root:
                continue
            directory = path if os.path.isdir(path) else os.path.dirname(path)
            for step in self._chain(directory):
                if step in self.checked:
                    continue
                self.checked.add(step)
                loaded = self._load(step, problems)
                if loaded is not None:
                    found.append(loaded)
        return found, problems

    def _below(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root.rstrip("/") + "/")

    def _chain(self, directory: str) -> list[str]:
        """The root, then each directory down to `directory` (which is below it)."""
        rel = os.path.relpath(directory, self.root)
        steps = [self.root]
        if rel != ".":
            for part in rel.split(os.sep):
                steps.append(os.path.join(steps[-1], part))
        return steps

    def _load(
        self,
        directory: str,
        problems: list[Diagnostic],
        *,
        label: str | None = None,
        reach: Reach | None = None,
    ) -> InstructionFile | None:
        """The instruction file of `directory`, if it has one that can be loaded (else
        what is wrong with it, in `problems`); `label`: the directory it is for, when
        not `directory` itself ("" for the user's global file); `reach`: where it may
        lead (default: the project's files' rule)."""
        from smith.effects import FileRefused, FileTooBig, read_file

        path = find_file(directory, self.settings.names)
        if path is None:
            return None
        limit = self.settings.max_bytes
        source = Source("file", path)
        try:
            data = read_file(path, limit=limit, reach=reach or self.reach)
        except FileTooBig as exc:
            where = str(self.settings.max_bytes_source)
            problems.append(
                INSTRUCTIONS_TOO_BIG(
                    value=path, source=source, path=path, size=exc.size, limit=limit, where=where
                )
            )
            return None
        except FileRefused as exc:
            refused = INSTRUCTIONS_REFUSED(value=path, source=source, path=path,
                                           reason=exc.reason, remedy=exc.fix,
                                           config_home=self.config_home)  # fmt: skip
            problems.append(refused)
            return None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            problems.append(
                INSTRUCTIONS_UNREADABLE(value=path, source=source, path=path, reason=reason)
            )
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            reason = "it is not UTF-8 text"
            problems.append(
                INSTRUCTIONS_UNREADABLE(value=path, source=source, path=path, reason=reason)
            )
            return None
        return InstructionFile(path, directory if label is None else label, text)


def find_file(directory: str, names: Sequence[str]) -> str | None:
    """The first of `names` that exists in `directory` as anything but a directory: a
    FIFO, a device or a symlink that leads nowhere is the directory's instruction file
    too, refused with a warning when read, not passed over in silence."""
    for name in names:
        path = os.path.join(directory, name)
        if os.path.lexists(path) and not os.path.isdir(path):
            return path
    return None
