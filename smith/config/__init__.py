"""Configuration: one schema, seven layers, KDL files, provenance for every value.

    from smith.config import resolve
    config = resolve()                      # raises ConfigError listing every problem
    config["model.temperature"]             # the value
    config.origin("model.temperature")      # Setting: value, layer, source

Importing this package is cheap (the `--help` path reads the schema); kdl is imported
only when a file is read.
"""

from smith.config._options import SCHEMA
from smith.config._resolve import LAYERS, Config, Contribution, Setting, resolve
from smith.config._schema import Option, Schema, Section
from smith.config._types import Boolean, Choice, Integer, Mismatch, Number, String, ValueType

__all__ = [
    "LAYERS",
    "SCHEMA",
    "Boolean",
    "Choice",
    "Config",
    "Contribution",
    "Integer",
    "Mismatch",
    "Number",
    "Option",
    "Schema",
    "Section",
    "Setting",
    "String",
    "ValueType",
    "resolve",
]
