"""Names a package exports on first use (PEP 562), so importing it stays cheap.

    _LAZY = {"markdown": "smith.frontends.replay._text"}  # name -> the module defining it
    __getattr__ = lazy_exports(__name__, _LAZY)

Each name is imported from its module when first read, then kept in the package's
namespace (later reads do not come here); a name mapped to the package's submodule of
that name (`"ops": "smith.runtime.ops"`) is the submodule. Declare the names for type
checkers under `if TYPE_CHECKING:` beside the table, and list them in `__all__`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, table: Mapping[str, str], renamed: Mapping[str, str] | None = None
) -> Callable[[str], object]:
    """The module `__getattr__` of `package` exporting `table`'s names lazily;
    `renamed`: exported name -> its name in its module, where they differ."""
    renames = dict(renamed or {})
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        found = importlib.import_module(module)
        is_submodule = module == f"{package}.{name}"
        value = found if is_submodule else getattr(found, renames.get(name, name))
        namespace[name] = value
        return value

    return __getattr__
