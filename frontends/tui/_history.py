"""What the user sent from the editor, per project and kept across runs, and the draft
each session was left with.

The history: $SMITH_HOME/history/<project key>.jsonl, one `{"text", "ts"}` object a line,
appended. A prompt that held long pastes is kept as typed, its chips and all, with
`"pastes": {chip: text}`, so that recalling it shows the chips again (a line without
`pastes`, as older smiths wrote, is its whole text). Up at the editor's first row and
Down at its last walk it (`_editor.Editor`), Ctrl+R searches it (`_recall`). A draft
cleared with Ctrl+C joins the walk for this run only (`remember`).

The file is kept bounded: once it holds more than twice `KEEP` lines, the app that reads
it rewrites it (atomically) with the newest `KEEP`. An entry longer than `MAX_ENTRY`
characters, pastes included (a huge paste), is kept for this run only, never written.

Drafts: $SMITH_HOME/history/drafts/<session id>.json, what the editor held when the app
ended (its text, pastes and images), written atomically then and removed when a message
is sent or the app ends with nothing to keep; the editor shows it again when the session
is opened (`smith --continue`, `--resume`). When the editor was empty, the draft last
cleared with Ctrl+C is kept instead (`"cleared": true`), and comes back first in Up's
walk rather than in the editor: quitting with Ctrl+C (clear, then twice) loses nothing."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smith.runtime import Image

KEEP = 1000  # the most recent entries read back
MAX_ENTRY = 100_000  # characters: a longer entry is not written to the file
MAX_DRAFT = 64 * 1024 * 1024  # bytes of a draft's file: a larger draft is not kept
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")  # a draft's file name


class Prompt(str):
    """An entry of the history: its text as typed (paste chips and all), with the pastes
    its chips stand for and, for a draft of this run, the images its chips show."""

    pastes: Mapping[str, str]
    images: Mapping[str, Image]

    def __new__(
        cls,
        text: str,
        pastes: Mapping[str, str] | None = None,
        images: Mapping[str, Image] | None = None,
    ) -> Prompt:
        prompt = super().__new__(cls, text)
        prompt.pastes = dict(pastes or {})
        prompt.images = dict(images or {})
        return prompt


def pastes_of(entry: str) -> Mapping[str, str]:
    return entry.pastes if isinstance(entry, Prompt) else {}


def images_of(entry: str) -> Mapping[str, Image]:
    return entry.images if isinstance(entry, Prompt) else {}


def same(a: str, b: str) -> bool:
    """Whether entries `a` and `b` would show and send the same."""
    return str(a) == str(b) and pastes_of(a) == pastes_of(b) and images_of(a) == images_of(b)


class PromptHistory:
    def __init__(self, path: Path | None, drafts: Drafts | None = None) -> None:
        """`path` None: a history of this run only (tests, replay)."""
        self.path = path
        self.drafts = drafts if drafts is not None else Drafts(None)
        self.entries: list[str] = self._load()

    @classmethod
    def for_project(cls, home: str, project: str) -> PromptHistory:
        from smith.paths import project_key

        folder = Path(home) / "history"
        return cls(folder / f"{project_key(project)}.jsonl", Drafts(folder / "drafts"))

    def _load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        if len(lines) > 2 * KEEP:
            self._trim(lines[-KEEP:])
        entries: list[str] = []
        for line in lines[-KEEP:]:
            try:
                record = json.loads(line)
                text, pastes = record.get("text"), record.get("pastes") or {}
            except (ValueError, AttributeError):
                continue  # a torn or foreign line: skipped, the rest still serve
            if isinstance(text, str) and text:
                entries.append(Prompt(text, _texts(pastes)) if pastes else text)
        return entries

    def add(self, entry: str) -> None:
        """Remember `entry` (a `Prompt` when it holds pastes; not twice in a row); a
        history that cannot be written is kept for this run only."""
        if not self.remember(entry):
            return
        pastes = pastes_of(entry)
        if self.path is None or len(entry) + sum(map(len, pastes.values())) > MAX_ENTRY:
            return
        record: dict[str, Any] = {"text": str(entry), "ts": int(time.time() * 1000)}
        if pastes:
            record["pastes"] = dict(pastes)
        line = json.dumps(record, ensure_ascii=False)
        try:
            from smith._atomic import private_dirs

            private_dirs(str(self.path.parent))  # owner-only, as everything under SMITH_HOME
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            self.path = None

    def remember(self, entry: str) -> bool:
        """Put `entry` last in this run's walk, not in the file (a draft cleared with
        Ctrl+C); False if it is empty or the last entry already."""
        if not entry or (self.entries and same(self.entries[-1], entry)):
            return False
        self.entries.append(entry)
        del self.entries[:-KEEP]
        return True

    def _trim(self, kept: list[str]) -> None:
        """Rewrite the file with only `kept`, its newest lines. Another app appending at
        the same moment may lose that one entry: history, not a record."""
        from smith._atomic import write_atomic

        assert self.path is not None
        # A read-only home: the file stays as it was, and is read as before.
        with contextlib.suppress(OSError):
            write_atomic(str(self.path), "".join(line + "\n" for line in kept), mode=0o600)


def _texts(value: object) -> dict[str, str]:
    """The `{chip: text}` pairs of a record's `pastes` (anything else in it is skipped)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


class Drafts:
    """The draft each session was left with, a file each in `folder` (None: kept
    nowhere). A draft that cannot be read is no draft; one that cannot be written is
    lost with a reason (`save`)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.problem: str | None = None  # why the last draft was not kept, if it was not

    def _path(self, session_id: str) -> Path | None:
        if self.folder is None or not SESSION_ID.fullmatch(session_id):
            return None
        return self.folder / f"{session_id}.json"

    def load(self, session_id: str) -> tuple[Prompt, bool] | None:
        """The draft left in session `session_id`, if there is one, and whether it was
        cleared (with Ctrl+C) rather than left in the editor."""
        from smith.runtime import Image

        path = self._path(session_id)
        try:
            if path is None or path.stat().st_size > MAX_DRAFT:
                return None
            record = json.loads(path.read_text(encoding="utf-8"))
            text = record["text"]
            images = {
                chip: Image(base64.b64decode(i["data"]), str(i["media_type"]), str(i["name"]))
                for chip, i in (record.get("images") or {}).items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # none, or torn, or not smith's: nothing to show
        if not isinstance(text, str) or not text:
            return None
        return Prompt(text, _texts(record.get("pastes")), images), record.get("cleared") is True

    def save(self, session_id: str, draft: Prompt, *, cleared: bool = False) -> str | None:
        """Keep `draft` for session `session_id` (an empty one removes it), `cleared` if
        it was cleared rather than left in the editor; None when done, else why it was
        not kept."""
        path = self._path(session_id)
        if path is None:
            return None if self.folder is None else f"no draft file for session {session_id!r}"
        if not draft:
            self.drop(session_id)
            return None
        images = {
            chip: {"name": image.name, "media_type": image.media_type,
                   "data": base64.b64encode(image.data).decode("ascii")}
            for chip, image in draft.images.items()
        }  # fmt: skip
        record = {"text": str(draft), "pastes": dict(draft.pastes), "images": images,
                  "cleared": cleared, "ts": int(time.time() * 1000)}  # fmt: skip
        text = json.dumps(record, ensure_ascii=False)
        if len(text) > MAX_DRAFT:
            return f"the draft is too large to keep ({len(text):,} characters)"
        try:
            from smith._atomic import private_dirs, write_atomic

            private_dirs(str(path.parent))
            write_atomic(str(path), text, mode=0o600)
        except OSError as exc:
            return f"the draft could not be written to {path}: {exc.strerror or exc}"
        return None

    def drop(self, session_id: str) -> None:
        path = self._path(session_id)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    def kept(self, session_id: str) -> bool:
        path = self._path(session_id)
        return path is not None and path.is_file()


__all__ = ["KEEP", "MAX_ENTRY", "Drafts", "Prompt", "PromptHistory", "images_of", "pastes_of"]
