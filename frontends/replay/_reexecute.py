"""`smith replay --reexecute`: run recorded tool effects again and compare their outputs.

Each effect runs in a scratch copy of the project restored from the file-history snapshot
recorded at that point (`SnapshotSource.state_at` its intent): once per batch of calls,
so the calls of one batch see each other's changes as they did when recorded, and every
batch starts again from what was recorded, whatever an earlier divergence did. What
tools read of earlier calls (the file digests edit checks for staleness) comes from the
recorded completions, never from the re-runs. The re-runs take the runner every live
call takes (smith.runtime.ToolRunner: secrets restored for the tools that get them,
validation, the crash rule, the timeout), recorded in a throwaway in-memory journal: the
session itself is only read.

The project itself is never touched: a path argument into the project and a recorded
working directory point into the scratch copy instead, where the tools' path checks keep
them. Outputs are compared as if the re-run had been in the project: the scratch copy's
path in them reads as the project's, and the file a long output was saved to is not
part of it (each run saves to a new one), so the report is the same on every replay.

A tool that is not confined by path checks (bash: `ToolSpec.confined` is false) runs
again only in the sandbox (smith.effects.Sandbox), with the scratch copy mounted where
the project is (`Sandbox.moved`): no rewriting of a command's text could keep a shell out
of the real project (`/tmp//p/x`, `$(printf ...)`, a variable), but there every spelling
of the project's path reaches the copy, and the project itself is out of reach. Where
the sandbox is off or cannot run, its effects are `skipped` with the UNCONFINED
diagnostic, which the command prints once per tool. Everything else a command is given
is what a live run gives it (ToolContext: limits, ignores, protected paths, provider
credentials withheld), except the extra roots, which are real directories.

An effect that never completed, or was cancelled part-way, is
`unknown` and is never run again. One that cannot be re-run faithfully (no snapshot,
its recorded input was cut, a tool this smith does not have) is `skipped` with the
reason. The others are `same` or `diverged`, with the fields that differ, expected
(recorded) against actual.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from smith.diagnostics import Diagnostic, DiagnosticKind, SmithError
from smith.effects import ToolContext

if TYPE_CHECKING:
    from smith.effects import ToolSpec
    from smith.runtime import Limits, SecretProxy
    from smith.vcs import FileHistory

    from ._records import Effect

UNCONFINED = DiagnosticKind(
    "replay.unconfined-tool",
    what="{tool} effects are not re-executed (effect {effect} and any others of {tool})",
    why="a re-run must not reach the real project, and only the sandbox confines {tool} "
    "to the scratch copy (a command can name the project in ways no rewriting catches: "
    "/tmp//p/x, $(printf ...), a variable); here the sandbox is {sandbox}",
    fix="run smith where the sandbox works (sandbox.mode workspace-write; see "
    "docs/safety.md), or compare the recorded output shown by `smith replay` instead",
    severity="warning",
)
CONFINING = ("workspace-write", "read-only")  # sandbox modes that confine a command
FIELDS = ("outcome", "ok", "mutation", "text", "details")
# Never the same twice: where a run saved its output (a new file each run), its time.
VOLATILE = frozenset({"full_output", "duration"})
SAVED = "<the saved output>"  # stands for that file where the text names it
CUT = "\n[... cut: "  # the marker smith.effects._journal.bounded leaves in a cut string


class SnapshotSource(Protocol):
    """Where the project's files as of a session entry come from."""

    def state_at(self, entry_id: str) -> tuple[str, str]:
        """(snapshot id, id of the record it was taken at) of the files as they were at
        `entry_id`; raises a SmithError when there is none."""
        ...

    def export(self, snapshot: str, directory: str) -> None:
        """Write the files of `snapshot` into the empty `directory`."""
        ...


class HistorySnapshots:
    """`SnapshotSource` over smith.vcs file history (the session's project's shadow
    repository), read only."""

    def __init__(self, history: FileHistory) -> None:
        self.history = history

    def state_at(self, entry_id: str) -> tuple[str, str]:
        return self.history.state_at(entry_id)

    def export(self, snapshot: str, directory: str) -> None:
        from smith.vcs import ShadowRepo

        repo = self.history.repo(create=False)
        # The same repository with the scratch directory as its work tree: `apply` then
        # writes every file of the snapshot there, byte for byte, modes and links kept.
        scratch = ShadowRepo(repo.path, directory, repo.repo)
        scratch.apply(repo.changes(None, snapshot), snapshot)


class Reexecutor:
    """Called with each effect of the timeline in order (`play(effect=...)`); returns the
    report of a selected tool effect."""

    def __init__(
        self,
        tools: dict[str, ToolSpec],
        *,
        project: str,
        snapshots: SnapshotSource | None,
        unavailable: str = "",
        like: ToolContext | None = None,
        limits: Limits | None = None,
        secrets: SecretProxy | None = None,
    ) -> None:
        from smith.effects import EffectJournal
        from smith.runtime import Limits, ProjectSessions, SecretProxy, ToolRunner

        self.tools = tools
        self.project = project
        self.snapshots = snapshots
        self.unavailable = unavailable  # why there are no snapshots
        # What a live call in the project is given (the assembly's), for each re-run.
        self.like = like if like is not None else ToolContext(root=project, cwd=project)
        self.sandbox = self.like.sandbox  # commands run in it, the scratch copy moved in
        self.base = tempfile.mkdtemp(prefix="smith-replay-")
        self.work = os.path.join(self.base, "work")
        self.spill = os.path.join(self.base, "output")
        os.makedirs(self.spill)
        self.at: str | None = None  # the snapshot (tree) the scratch copy was restored from
        self.seen = ProjectSessions.in_memory({})  # recorded completions so far
        self.journal = EffectJournal(ProjectSessions.in_memory({}))
        # The runner every live call takes (smith.runtime._runner): secrets restored for
        # the tools that get them, validation, the journal, the crash rule, the timeout.
        self.runner = ToolRunner(self.journal, secrets or SecretProxy(), limits or Limits())
        self.counts = {"same": 0, "diverged": 0, "unknown": 0, "skipped": 0}
        # One warning per tool that was refused for not being confined (UNCONFINED).
        self.refused: dict[str, Diagnostic] = {}

    def __call__(self, effect: Effect, selected: bool) -> dict[str, Any] | None:
        report = self.check(effect) if selected and effect.kind == "tool" else None
        if report is not None:
            self.counts[report["status"]] += 1
        if effect.completion is not None:
            self.seen.append("effect_completion", effect.completion, pair=effect.id)
        return report

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- one effect -----------------------------------------------------------------------

    def check(self, effect: Effect) -> dict[str, Any]:
        report: dict[str, Any] = {
            "type": "reexecute",
            "effect": effect.id,
            "tool": effect.name,
            "tool_call_id": effect.call,
            "entry_id": effect.entry,
        }
        completion = effect.completion
        if completion is None or not effect.complete:
            how = (
                "it was cancelled part-way"
                if completion is not None and completion.get("outcome") == "cancelled"
                else "no completion was recorded (the process running it stopped)"
            )
            reason = f"{how}, so what it did is unknown"
            return {**report, "status": "unknown", "reason": reason}
        spec = self.tools.get(effect.name)
        skip = None
        if spec is None:
            skip = f"this smith has no tool '{effect.name}'"
        elif _was_cut(effect.input):
            skip = "its recorded input was cut to fit the record, so it cannot be run as it was"
        elif not spec.confined and self.sandbox.effective not in CONFINING:
            mode = self.sandbox.effective
            how = "off" if mode == "off" else "unable to run here"
            diagnostic = UNCONFINED(tool=effect.name, effect=effect.id, sandbox=how)
            self.refused.setdefault(effect.name, diagnostic)
            skip = f"{diagnostic.what}: {diagnostic.why}"
            return {**report, "status": "skipped", "reason": skip, "code": diagnostic.code}
        elif self.snapshots is None:
            skip = f"no file snapshots to restore: {self.unavailable}"
        if skip is None:
            try:
                root = self.workspace(effect.entry)
            except SmithError as exc:
                skip = f"no file snapshot to restore: {exc.diagnostic.what}"
        if skip is not None:
            return {**report, "status": "skipped", "reason": skip}
        assert spec is not None
        output = completion.get("output")
        recorded = {
            **(output if isinstance(output, dict) else {}),
            "outcome": completion["outcome"],
        }
        expected = _comparable(recorded)
        actual = _comparable(self.unmoved(self.run(spec, effect, root, recorded), root))
        differs = [f for f in FIELDS if expected.get(f) != actual.get(f)]
        if not differs:
            return {**report, "status": "same"}
        return {
            **report,
            "status": "diverged",
            "differs": differs,
            "expected": {f: expected.get(f) for f in differs},
            "actual": {f: actual.get(f) for f in differs},
        }

    def workspace(self, entry_id: str) -> str:
        """The scratch copy as the files were at `entry_id`, restored only when the
        recorded state changed since the last effect: the calls of one batch share the
        snapshot before it, and each sees what the ones before it did, as live."""
        assert self.snapshots is not None
        snapshot, _ = self.snapshots.state_at(entry_id)
        if snapshot != self.at:
            shutil.rmtree(self.work, ignore_errors=True)
            os.makedirs(self.work)
            self.snapshots.export(snapshot, self.work)
            self.at = snapshot
        return self.work

    def run(
        self, spec: ToolSpec, effect: Effect, root: str, expected: dict[str, Any]
    ) -> dict[str, Any]:
        from smith.effects import bounded

        details = expected.get("details")
        shown = details.get("cwd") if isinstance(details, dict) else None
        cwd = os.path.normpath(os.path.join(root, shown)) if isinstance(shown, str) else root
        if not _within(cwd, root) or not os.path.isdir(cwd):  # recorded outside the project
            cwd = root
        like = self.like
        ctx = ToolContext(
            root=root,
            cwd=cwd,
            session=self.seen,
            limits=like.limits,
            spill_dir=self.spill,
            ignore=like.ignore,
            protected=like.protected,
            withhold=like.withhold,
            # The copy where the project is: every spelling of its path reaches the copy.
            sandbox=replace(self.sandbox, moved=((root, self.project),)),
        )
        args = self.moved(effect.input, root)
        # Not finished (masked and cut): compared with the journal's record, which holds
        # the tool's whole output as it returned it.
        ran = self.runner.run_sync(spec, args, ctx, cause={"replay": effect.id})
        actual = bounded(ran.result)
        assert isinstance(actual, dict)
        return actual

    def moved(self, args: dict[str, Any], root: str) -> dict[str, Any]:
        """Arguments with absolute paths into the recorded project moved into the
        scratch copy: `path` and `cwd` (the tool's path checks then keep it there)."""
        out = dict(args)
        for key in ("path", "cwd"):
            value = out.get(key)
            if isinstance(value, str) and os.path.isabs(value):
                rel = os.path.relpath(value, self.project)
                if rel != ".." and not rel.startswith("../"):
                    out[key] = os.path.normpath(os.path.join(root, rel))
        return out

    def unmoved(self, result: dict[str, Any], root: str) -> dict[str, Any]:
        """The re-run's result as if it had run in the project: the scratch copy's path
        in its strings reads as the project's, and `output_bytes` counts the output so."""
        names = sorted({root, os.path.realpath(root)}, key=len, reverse=True)
        out: dict[str, Any] = _replace_in(result, names, self.project)
        details = out.get("details")
        size = details.get("output_bytes") if isinstance(details, dict) else None
        if isinstance(details, dict) and isinstance(size, int):
            saved = details.get("full_output")  # a long output's whole text, if saved
            raw = str(result.get("text", ""))
            if isinstance(saved, str):
                try:
                    with open(saved, "rb") as f:
                        raw = f.read().decode("utf-8", "replace")
                except OSError:
                    pass
            moved_back = _replace_dir(raw, names, self.project)
            details["output_bytes"] = size + len(moved_back.encode()) - len(raw.encode())
        return out


def _within(path: str, root: str) -> bool:
    rel = os.path.relpath(path, root)
    return rel != ".." and not rel.startswith("../") and not os.path.isabs(rel)


def _dir_pattern(name: str) -> re.Pattern[str]:
    """`name` as a whole directory: not the start of a longer name (`/p` in `/p2`)."""
    return re.compile(re.escape(name) + r"(?![\w.-])")


def _replace_dir(text: str, names: list[str], to: str) -> str:
    for name in names:
        text = _dir_pattern(name).sub(lambda _: to, text)
    return text


def _replace_in(value: Any, names: list[str], to: str) -> Any:
    if isinstance(value, str):
        return _replace_dir(value, names, to)
    if isinstance(value, dict):
        return {k: _replace_in(v, names, to) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_in(v, names, to) for v in value]
    return value


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    """The fields compared (and reported): without what differs on every run, the file
    the whole output was saved to, which the text names when it is long."""
    out = {f: result.get(f) for f in FIELDS}
    details = result.get("details")
    if isinstance(details, dict):
        saved = details.get("full_output")
        if isinstance(saved, str) and saved and isinstance(out["text"], str):
            out["text"] = out["text"].replace(saved, SAVED)
        out["details"] = {k: v for k, v in details.items() if k not in VOLATILE}
    return out


def _was_cut(value: object) -> bool:
    if isinstance(value, str):
        return CUT in value
    if isinstance(value, dict):
        return any(_was_cut(v) for v in value.values())
    if isinstance(value, list):
        return any(_was_cut(v) for v in value)
    return False
