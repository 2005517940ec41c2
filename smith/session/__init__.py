"""Durable, branching sessions: the Python face of smith's Cython session core.

    from smith.session import Session, SessionStore
    store = SessionStore(config.home)
    with store.create(name="fix tests", cwd=project) as s:
        s.append("message", {"role": "user", "text": "hello"}, durable=True)

On disk a session is a file of checksummed, length-prefixed frames with canonical CBOR
bodies (smith/_fast/_frames.pyx); in memory it is an index arena (smith/_fast/_arena.pyx).
JSONL is for inspection and interchange only (`dump`, `import_jsonl`).
"""

from smith._lazy import lazy_exports
from smith.session._branch import Branch
from smith.session._codec import content_size
from smith.session._jsonl import dump, import_jsonl
from smith.session._pairing import calls_pair, pair_calls
from smith.session._session import Entry, Session, new_id, new_session_id
from smith.session._store import SessionStore

KINDS = (
    "message",  # content.role: user | assistant | tool_result
    "tool_activity",
    "model_change",
    "thinking_level",
    "compaction",
    "branch_summary",
    "secret",
    "vcs",
    "effect_intent",
    "effect_completion",
    "effect_progress",
    "label",
    "session_info",
    "input_handled",  # a user input a plugin handled as a command (never sent to the model)
    "environment",  # the environment block the model was told (docs/context.md)
    "instructions",  # an instruction file of a directory the agent reached later
    "question",  # how a plugin's question ended (smith.ui; docs/events.md)
    "shell",  # the output of the user's own `!command`, told to the model (docs/context.md)
    "plugin_state",  # a value a plugin kept for the session (RuntimeView.set_state)
    "shell_private",  # the output of the user's own `!!command`, never told to the model
)
"""Entry kinds smith writes; any other kind is kept and round-trips untouched."""

__all__ = [
    "DAMAGED",
    "KINDS",
    "UNKNOWN_ENTRY",
    "Branch",
    "Entry",
    "Session",
    "SessionStore",
    "calls_pair",
    "checked_header",
    "content_size",
    "dump",
    "import_jsonl",
    "new_id",
    "new_session_id",
    "pair_calls",
    "project_key",
    "repair",
]


TYPE_CHECKING = False
# Exported on first use (PEP 562): these modules are not imported with the package.
if TYPE_CHECKING:
    from smith.paths import project_key as project_key
    from smith.session._header import checked_header as checked_header
    from smith.session._problems import DAMAGED as DAMAGED
    from smith.session._problems import UNKNOWN_ENTRY as UNKNOWN_ENTRY
    from smith.session._repair import repair as repair


_LAZY = {
    "checked_header": "smith.session._header",
    "DAMAGED": "smith.session._problems",
    "UNKNOWN_ENTRY": "smith.session._problems",
    "project_key": "smith.paths",
    "repair": "smith.session._repair",
}

__getattr__ = lazy_exports(__name__, _LAZY)
