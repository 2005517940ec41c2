"""Ending the processes of effects found unfinished when a session is opened again.

A command's processes end with it and with smith (smith.effects._procs); this is the
last line for any that did not: an effect reconciled as unknown whose progress records
name processes (pid and start time, `Job.identity`) has those that still run, and are
still the same processes, ended. Called by `EffectJournal.reconcile`.
"""

from __future__ import annotations

import logging

from smith.effects._procs import end_leftovers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.session import Session

PROGRESS = "effect_progress"
log = logging.getLogger("smith.effects")


def end_leftover_processes(session: Session, intents: list[dict[str, object]]) -> list[int]:
    """End the processes recorded for the unfinished effects `intents` (as `reconcile`
    returns them) that still run; returns their pids."""
    effects = {str(intent.get("effect")) for intent in intents}
    if not effects:
        return []
    identities = []
    for entry in session.entries(PROGRESS):
        if entry.pair in effects:
            content = entry.content
            processes = content.get("processes") if isinstance(content, dict) else None
            if isinstance(processes, dict):
                identities.append(processes)
    ended = end_leftovers(identities)
    for pid in ended:
        log.warning("ended process %d, left running by an effect that never finished", pid)
    return ended
