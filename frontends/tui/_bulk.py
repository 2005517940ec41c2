"""A long history shown at once (the app's first frame over a resumed session, a switch
to another branch): its entries come from the runtime in bulk (ops.Entries reads the
shown kinds from the session's records and makes only their entries), and are made with
no collector pass walking the objects while they are made.
"""

from __future__ import annotations

import contextlib
import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused(when: bool) -> Iterator[None]:
    """No collector pass while the body makes a long history's objects (hundreds of them
    would walk the growing heap); what it made is then frozen out of later full passes,
    as objects that live as long as the app. Nothing changes unless `when`, or while
    the collector is off already."""
    if not (when and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
