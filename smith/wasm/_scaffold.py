"""`smith plugins new NAME [--lang python|c|zig]`: a package directory that builds
(`smith plugins build`) and installs as it is, whose `/NAME` command answers
"hello from NAME": plugin.kdl, the source (app.py; or plugin.c / plugin.zig with the
generated sdk/smith_plugin.h and .c), a README."""

from __future__ import annotations

import os
import re
from pathlib import Path

from smith.diagnostics import DiagnosticKind, Source
from smith.wasm._build import DEFAULT_MODULE, LANGS, PYTHON_APP, ZIG_ROOT, write_c_bindings

NEW_BAD_NAME = DiagnosticKind(
    "plugin.new-name",
    what="{name} is not a plugin name",
    why="a plugin's name is its `/command` and its directory: letters, digits, '-' and '_', "
    "starting with a letter or digit",
    fix="choose a name such as `hello` or `git-helper`",
)
NEW_BAD_LANG = DiagnosticKind(
    "plugin.new-language",
    what="{lang} is not a language `smith plugins new` scaffolds",
    why="smith builds plugins written in {langs}",
    fix="use --lang python, --lang c or --lang zig",
)
NEW_EXISTS = DiagnosticKind(
    "plugin.new-exists",
    what="{where} already exists and is not empty",
    why="`smith plugins new` writes a new package and never overwrites files",
    fix="choose another name or directory (--dir), or remove {where}",
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")

_MANIFEST = """\
name "{name}"
version "0.1.0"
description "Says hello"
module "{module}"
sdk "1"
build "{lang}"
command "{name}" description="Say hello" usage="[TEXT]"
"""

_PYTHON = '''\
"""The {name} plugin. smith calls the methods of WitWorld (`smith plugins help exports`);
the host functions are in wit_world.imports.host (`smith plugins help host`)."""

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def start(self, settings: str) -> None:
        """Called once, with the plugin's settings as a JSON object."""

    def on_event(self, event: str) -> str:
        """An event plugin.kdl's `events` names, as JSON; returns a JSON list of actions."""
        return "[]"

    def command(self, name: str, args: str) -> str:
        """The user typed `/{name} args`: returns the reply shown to them."""
        if name != "{name}":
            raise Err(f"{{name}} is not a command of this plugin")
        return f"hello from {{name}}"

    def call_tool(self, name: str, arguments: str) -> str:
        raise Err(f"this plugin has no tool {{name}}")

    def choose(self, policy: str, items: str) -> str:
        raise Err(f"this plugin has no queue policy {{policy}}")
'''

_C = """\
/* The {name} plugin. smith calls the smith_* handlers defined here (`smith plugins help
   exports`); the others answer with a default. sdk/smith_plugin.h, written again by
   `smith plugins build` from smith's WIT, declares them and the host functions. */
#include "smith_plugin.h"

/* The user typed `/{name} args`: *ret is the reply shown to them. */
bool smith_command(smith_string_t name, smith_string_t args, smith_string_t *ret,
                   smith_string_t *err) {{
  (void)args;
  (void)err;
  smith_string_set(ret, "hello from ");
  smith_string_append(ret, name);
  return true;
}}
"""

_ZIG = """\
//! The {name} plugin. smith calls the smith_* handlers exported here (`smith plugins
//! help exports`); the others answer with a default. sdk/smith_plugin.zig is translated
//! by `smith plugins build` from sdk/smith_plugin.h, generated from smith's WIT.
const smith = @import("sdk/smith_plugin.zig");

/// The user typed `/{name} args`: ret.* is the reply shown to them.
export fn smith_command(
    name: smith.smith_string_t,
    args: smith.smith_string_t,
    ret: *smith.smith_string_t,
    err: *smith.smith_string_t,
) bool {{
    _ = args;
    _ = err;
    smith.smith_string_set(ret, "hello from ");
    smith.smith_string_append(ret, name);
    return true;
}}
"""

_README = """\
# {name}

A smith plugin ({lang}). Build it, install it and try it:

    smith plugins build {name}
    smith plugins install {name}
    smith eval "/{name}"

`smith plugins help` describes the events, actions and host functions it can use;
plugin.kdl says what it contributes and which grants it asks for (docs/plugins.md).
"""


def scaffold(name: str, lang: str = "python", dest_dir: str | os.PathLike[str] = ".") -> Path:
    """Write a new package `dest_dir`/`name`; returns its directory."""
    if not _NAME.fullmatch(name):
        raise NEW_BAD_NAME.error(value=name, source=Source("argument", name), name=repr(name))
    if lang not in LANGS:
        raise NEW_BAD_LANG.error(
            value=lang, source=Source("flag", "--lang"), lang=repr(lang), langs=" and ".join(LANGS)
        )
    root = Path(dest_dir) / name
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise NEW_EXISTS.error(value=str(root), source=Source("argument", name), where=str(root))
    root.mkdir(parents=True, exist_ok=True)
    files = {
        "plugin.kdl": _MANIFEST.format(name=name, module=DEFAULT_MODULE, lang=lang),
        "README.md": _README.format(
            name=name, lang={"python": "Python", "c": "C"}.get(lang, "Zig")
        ),
    }
    if lang == "python":
        files[f"{PYTHON_APP}.py"] = _PYTHON.format(name=name)
    elif lang == "zig":
        files[ZIG_ROOT] = _ZIG.format(name=name)
    else:
        files["plugin.c"] = _C.format(name=name)
    for file, text in files.items():
        (root / file).write_text(text, encoding="utf-8")
    if lang != "python":
        write_c_bindings(root)
    return root
