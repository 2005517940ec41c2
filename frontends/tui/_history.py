"""What the user sent from the editor, per project and kept across runs:
$SMITH_HOME/history/<project key>.jsonl, one `{"text", "ts"}` object a line, appended.
Up at the editor's first row and Down at its last walk it (`_editor.Editor`), Ctrl+R
searches it (`_recall`).

The file is kept bounded: once it holds more than twice `KEEP` lines, the app that reads
it rewrites it (atomically) with the newest `KEEP`. An entry longer than `MAX_ENTRY`
characters (a huge paste) is kept for this run only, never written."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

KEEP = 1000  # the most recent entries read back
MAX_ENTRY = 100_000  # characters: a longer entry is not written to the file


class PromptHistory:
    def __init__(self, path: Path | None) -> None:
        """`path` None: a history of this run only (tests, replay)."""
        self.path = path
        self.entries: list[str] = self._load()

    @classmethod
    def for_project(cls, home: str, project: str) -> PromptHistory:
        from smith.session import project_key

        return cls(Path(home) / "history" / f"{project_key(project)}.jsonl")

    def _load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        if len(lines) > 2 * KEEP:
            self._trim(lines[-KEEP:])
        entries = []
        for line in lines[-KEEP:]:
            try:
                text = json.loads(line).get("text")
            except (ValueError, AttributeError):
                continue  # a torn or foreign line: skipped, the rest still serve
            if isinstance(text, str) and text:
                entries.append(text)
        return entries

    def add(self, text: str) -> None:
        """Remember `text` (not twice in a row); a history that cannot be written is kept
        for this run only."""
        if not text or (self.entries and self.entries[-1] == text):
            return
        self.entries.append(text)
        del self.entries[:-KEEP]
        if self.path is None or len(text) > MAX_ENTRY:
            return
        line = json.dumps({"text": text, "ts": int(time.time() * 1000)}, ensure_ascii=False)
        try:
            from smith._atomic import private_dirs

            private_dirs(str(self.path.parent))  # owner-only, as everything under SMITH_HOME
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            self.path = None

    def _trim(self, kept: list[str]) -> None:
        """Rewrite the file with only `kept`, its newest lines. Another app appending at
        the same moment may lose that one entry: history, not a record."""
        import contextlib

        from smith._atomic import write_atomic

        assert self.path is not None
        # A read-only home: the file stays as it was, and is read as before.
        with contextlib.suppress(OSError):
            write_atomic(str(self.path), "".join(line + "\n" for line in kept), mode=0o600)
