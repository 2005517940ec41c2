"""smith: a coding agent with durable, replayable sessions and undoable file changes.

Importing `smith` is deliberately cheap: `smith --help` must start almost as fast as a
bare interpreter, so subpackages are imported only when used.
"""

from smith._version import __version__

__all__ = ["__version__"]
