"""Configuration: one schema, seven layers, KDL files, provenance for every value.

    from smith.config import resolve
    config = resolve()                      # raises ConfigError listing every problem
    config["model.temperature"]             # the value
    config.origin("model.temperature")      # Setting: value, layer, source

`smith --help` reads the schema (smith.config._options) on its startup path, so this
package imports its parts only when they are first used (PEP 562); kdl is imported only
when a file is read.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config._edit import add_value as add_value
    from smith.config._edit import rewrite as rewrite
    from smith.config._edit import set_value as set_value
    from smith.config._kdl import Block as Block
    from smith.config._kdl import KdlNode as KdlNode
    from smith.config._kdl import read_nodes as read_nodes
    from smith.config._located import Located as Located
    from smith.config._located import format_value as format_value
    from smith.config._options import SCHEMA as SCHEMA
    from smith.config._options import THINKING_LEVELS as THINKING_LEVELS
    from smith.config._resolve import LAYERS as LAYERS
    from smith.config._resolve import UNKNOWN_KEY as UNKNOWN_KEY
    from smith.config._resolve import Config as Config
    from smith.config._resolve import Contribution as Contribution
    from smith.config._resolve import Setting as Setting
    from smith.config._resolve import resolve as resolve
    from smith.config._schema import Option as Option
    from smith.config._schema import Schema as Schema
    from smith.config._schema import Section as Section
    from smith.config._types import Boolean as Boolean
    from smith.config._types import Choice as Choice
    from smith.config._types import Integer as Integer
    from smith.config._types import Mismatch as Mismatch
    from smith.config._types import Number as Number
    from smith.config._types import Path as Path
    from smith.config._types import String as String
    from smith.config._types import Strings as Strings
    from smith.config._types import ValueType as ValueType

_WHERE = {
    "SCHEMA": "_options",
    "THINKING_LEVELS": "_options",
    "UNKNOWN_KEY": "_resolve",
    "add_value": "_edit",
    "rewrite": "_edit",
    "Block": "_kdl",
    "KdlNode": "_kdl",
    "read_nodes": "_kdl",
    "Located": "_located",
    "format_value": "_located",
    "set_value": "_edit",
    "LAYERS": "_resolve",
    "Config": "_resolve",
    "Contribution": "_resolve",
    "Setting": "_resolve",
    "resolve": "_resolve",
    "Option": "_schema",
    "Schema": "_schema",
    "Section": "_schema",
    "Boolean": "_types",
    "Choice": "_types",
    "Integer": "_types",
    "Mismatch": "_types",
    "Number": "_types",
    "Path": "_types",
    "String": "_types",
    "Strings": "_types",
    "ValueType": "_types",
}

__all__ = [
    "LAYERS",
    "SCHEMA",
    "THINKING_LEVELS",
    "UNKNOWN_KEY",
    "Block",
    "Boolean",
    "Choice",
    "Config",
    "Contribution",
    "Integer",
    "KdlNode",
    "Located",
    "Mismatch",
    "Number",
    "Option",
    "Path",
    "Schema",
    "Section",
    "Setting",
    "String",
    "Strings",
    "ValueType",
    "add_value",
    "format_value",
    "read_nodes",
    "resolve",
    "rewrite",
    "set_value",
]


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'smith.config' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"smith.config.{module}"), name)
    globals()[name] = value
    return value
