"""Work a command will need, started while it imports the runtime.

`smith tools run` and `smith eval` import the runtime (150-200 ms) and then build it,
which asks whether bubblewrap can sandbox a command here: a probe that runs `true` in
the namespaces a command gets and waits for it (30-55 ms, mostly waiting). Started in a
thread first, the probe's wait overlaps the imports; the command joins the thread before
building, so the answer (cached for the process) is computed once.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def probe_sandbox() -> Callable[[], None]:
    """Start the sandbox probe in a thread; returns the join (call it before `build`)."""

    def probe() -> None:
        try:
            from smith.effects import sandbox_unavailable

            sandbox_unavailable()
        except Exception:  # asked again, on the main thread, where it is reported
            return

    worker = threading.Thread(target=probe, name="smith-sandbox-probe", daemon=True)
    worker.start()
    return worker.join
