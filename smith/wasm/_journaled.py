"""One host effect of a plugin's call in the session's journal: its intent before, its
completion after (smith.wasm._hostfns's read-file, run, http and secret).

    with Journaled(host, "http", {"url": url}, False, session) as done:
        done["status"] = 200        # kept in the completion's output
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smith.wasm._hostfns import HostCalls


class Journaled:
    """One host effect's intent and completion in the session's journal (nothing where
    there is no session: a bare library runtime)."""

    def __init__(
        self, host: HostCalls, function: str, shown: dict[str, object], mutating: bool,
        session: Any,
    ) -> None:  # fmt: skip
        self.host, self.function, self.shown = host, function, shown
        self.mutating, self.session = mutating, session
        self.done: dict[str, object] = {}
        self.effect: Any = None
        self.journal: Any = None

    def __enter__(self) -> dict[str, object]:
        if self.session is not None:
            from smith.effects import EffectJournal

            self.journal = EffectJournal(self.session, generation=self.host.call.generation)
            self.effect = self.journal.begin(
                f"{self.host.plugin}.{self.function}",
                self.shown,
                kind="plugin",
                mutating=self.mutating,
                cause=self.host._cause(self.function),
            )
        return self.done

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self.effect is None:
            return
        ok = kind is None
        self.journal.finish(
            self.effect,
            outcome="ok" if ok else "error",
            mutation="applied" if ok and self.mutating else "not-applied",
            output=self.done if ok else {"error": str(exc)},
        )
