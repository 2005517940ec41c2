"""THE DRIFT TEST of the plugin SDK: everything said about the interface is made from
its one declaration, smith/wasm/wit/smith-plugin.wit, and fails here when it is not.

- the help (`smith plugins help`) names every host function, export, event and action,
  each with its one description;
- docs/plugins.md's Reference section is what smith.wasm generates
  (`python -m smith.wasm` rewrites it);
- the C bindings a package holds are what the WIT makes (build writes them again);
- the host's table of functions (smith.wasm.HOST_FUNCTIONS) is the WIT's host interface,
  name for name and parameter for parameter;
- the components the toolchains build have, as wasmtime reads them, the WIT's types.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from smith.wasm import sdk_help, wit_world
from smith.wasm._cgen import c_bindings, snake
from smith.wasm._help import action_docs, event_docs, with_reference
from smith.wasm._wit import Type, World
from tests.wasm_sdk_fixtures import built

__all__ = ["built"]  # the session fixture

ROOT = Path(__file__).resolve().parent.parent


def test_every_item_of_the_wit_has_one_description() -> None:
    world = wit_world()
    items: list[tuple[str, str]] = [(f"export {f.name}", f.doc) for f in world.exports.values()]
    for iface in world.interfaces.values():
        items.append((f"interface {iface.name}", iface.doc))
        items += [(f"{iface.name}.{f.name}", f.doc) for f in iface.funcs.values()]
        items += [(f"{iface.name}.{t.name}", t.doc) for t in iface.types.values()]
    assert [name for name, doc in items if not doc.strip()] == []


def test_every_event_and_action_a_plugin_meets_has_one_description() -> None:
    from smith.protocol.actions import ACTION_TYPES, HOOK_ACTIONS
    from smith.sdk import HOOKS, SAFE_POINTS

    events = event_docs(wit_world())
    # on-event's doc names every safe point and hook a plugin can subscribe to.
    assert set(events) == {*SAFE_POINTS, *HOOKS}
    assert [name for name, (doc, _) in events.items() if not doc] == []
    actions = action_docs()
    tags = {str(c.__struct_config__.tag) for c in ACTION_TYPES}
    tags |= {str(c.__struct_config__.tag) for cs in HOOK_ACTIONS.values() for c in cs}  # type: ignore[attr-defined]
    assert tags | {"notify", "status", "hatch"} == set(actions)
    assert [name for name, (_, doc, _) in actions.items() if not doc] == []


def test_the_help_is_made_from_the_declarations() -> None:
    world = wit_world()
    text = sdk_help(None)
    for f in [*world.exports.values(), *world.host.funcs.values()]:
        assert f.signature() in text
        assert " ".join(f.doc.split()[:6]) in " ".join(text.split())
    for name, (doc, _) in event_docs(world).items():
        assert f"  {name}\n" in text and " ".join(doc.split()[:5]) in " ".join(text.split())
    for name in action_docs():
        assert f"  {name}  (" in text
    topics = [sdk_help(t) for t in ("events", "actions", "host", "exports", "manifest")]
    assert "\n\n".join(t.rstrip("\n") for t in topics) in text


def test_docs_reference_section_is_generated() -> None:
    path = ROOT / "docs" / "plugins.md"
    text = path.read_text(encoding="utf-8")
    assert with_reference(text) == text, "docs/plugins.md drifted: run `python -m smith.wasm`"


def test_the_c_bindings_in_a_package_are_the_generated_ones(built: Any) -> None:
    b = built("c")
    for name, text in c_bindings(wit_world()).items():
        assert (b.root / "sdk" / name).read_text(encoding="utf-8") == text


def test_the_hosts_table_is_the_wit_host_interface() -> None:
    from smith.wasm import HOST_FUNCTIONS

    host = wit_world().host
    assert list(HOST_FUNCTIONS) == list(host.funcs)
    for name, fn in HOST_FUNCTIONS.items():
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        assert params == [snake(n) for n, _ in host.funcs[name].params], name


def _python_type(world: World, t: Type | None, *, param: bool = False) -> str:
    """The annotation a host function has for WIT type `t` (a result: its ok value; the
    failure is raised as Failure)."""
    if t is None:
        return "None"
    if t.kind == "result":
        return _python_type(world, t.args[0])
    if t.kind == "prim":
        ints = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
        return {"string": "str", "bool": "bool", **dict.fromkeys(ints, "int")}[t.name]
    if t.kind == "list" and t.args[0] == Type("prim", "u8"):
        return "bytes"
    if t.kind == "named" and world.typedef(t.name).kind == "enum":
        return "str"
    if t.kind == "named":
        return "Mapping[str, Any]" if param else "dict[str, Any]"
    raise AssertionError(f"no Python type for {t}")


def test_the_hosts_functions_take_and_give_the_wit_types() -> None:
    """Each host function's parameters and return annotation are its WIT types, and the
    results the adapter gives tagged (Variant) are those the WIT makes ambiguous: a
    host table still taking bytes for a read-file returning a string fails here."""
    from smith.wasm import HOST_FUNCTIONS
    from smith.wasm._hostfns import TAGGED

    world = wit_world()
    for name, fn in HOST_FUNCTIONS.items():
        f = world.host.funcs[name]
        sig = inspect.signature(fn)
        got = [str(p.annotation) for p in sig.parameters.values() if p.name != "self"]
        assert got == [_python_type(world, t, param=True) for _, t in f.params], name
        assert str(sig.return_annotation) == _python_type(world, f.result), name

    def record(t: Type | None) -> bool:
        return t is not None and t.kind == "named" and world.typedef(t.name).kind == "record"

    results = {n: f.result for n, f in world.host.funcs.items()}
    assert set(TAGGED) == {
        n for n, r in results.items() if r is not None and r.kind == "result" and all(
            record(a) for a in r.args)
    }  # fmt: skip


def _wit_shape(world: World, t: Type | None) -> str:
    """A WIT type written out structurally (named types by their definitions)."""
    if t is None:
        return "_"
    if t.kind == "prim":
        return t.name
    if t.kind == "named":
        d = world.typedef(t.name)
        if d.kind == "enum":
            return "enum{" + ",".join(d.cases) + "}"
        return "record{" + ",".join(f"{n}:{_wit_shape(world, ft)}" for n, ft in d.fields) + "}"
    return t.kind + "<" + ",".join(_wit_shape(world, a) for a in t.args) + ">"


def _wasmtime_shape(t: Any) -> str:
    """A type as wasmtime reads it from a component, in _wit_shape's form."""
    import wasmtime.component as wc

    if t is None:
        return "_"
    if isinstance(t, wc.ListType):
        return f"list<{_wasmtime_shape(t.element)}>"
    if isinstance(t, wc.TupleType):
        return "tuple<" + ",".join(_wasmtime_shape(e) for e in t.elements) + ">"
    if isinstance(t, wc.ResultType):
        return f"result<{_wasmtime_shape(t.ok)},{_wasmtime_shape(t.err)}>"
    if isinstance(t, wc.OptionType):
        return f"option<{_wasmtime_shape(t.payload)}>"
    if isinstance(t, wc.RecordType):
        return "record{" + ",".join(f"{n}:{_wasmtime_shape(ft)}" for n, ft in t.fields) + "}"
    if isinstance(t, wc.EnumType):
        return "enum{" + ",".join(t.names) + "}"
    return {"String": "string", "Bool": "bool"}.get(type(t).__name__, type(t).__name__.lower())


def _func_shape(params: list[tuple[str, str]], result: str) -> str:
    return "(" + ",".join(f"{n}:{t}" for n, t in params) + f")->{result}"


@pytest.mark.parametrize("lang", ["python", "c", "zig"])
def test_built_components_have_the_wit_types(built: Any, lang: str) -> None:
    import wasmtime
    import wasmtime.component as wc

    world = wit_world()
    engine = wasmtime.Engine()
    component = wc.Component.from_file(engine, str(built(lang).module))
    ty = component.type
    imports = ty.imports(engine)
    host = imports[world.qualified("host")].ty
    host_funcs = {
        name: _func_shape(
            [(n, _wasmtime_shape(t)) for n, t in item.ty.params], _wasmtime_shape(item.ty.result)
        )
        for name, item in host.exports(engine).items()
        if isinstance(item.ty, wc.FuncType)
    }
    assert host_funcs == {
        f.name: _func_shape(
            [(n, _wit_shape(world, t)) for n, t in f.params], _wit_shape(world, f.result)
        )
        for f in world.host.funcs.values()
    }
    exports = {
        name: _func_shape(
            [(n, _wasmtime_shape(t)) for n, t in item.ty.params], _wasmtime_shape(item.ty.result)
        )
        for name, item in ty.exports(engine).items()
        if isinstance(item.ty, wc.FuncType)
    }
    for f in world.exports.values():
        want = _func_shape(
            [(n, _wit_shape(world, t)) for n, t in f.params], _wit_shape(world, f.result)
        )
        assert exports[f.name] == want


def test_the_plugin_kdl_the_wit_teaches_is_what_smith_reads() -> None:
    """Each plugin.kdl snippet of the WIT's docs (`grants { path "..." }`, ...) is read by
    smith's manifest reader as the grant it names: the docs taught `grant { ... }`, a node
    smith does not know, so a plugin author copying it got no grant at all."""
    import re

    from smith.packages._read import read_manifest

    text = (ROOT / "smith" / "wasm" / "wit" / "smith-plugin.wit").read_text(encoding="utf-8")
    docs = " ".join(line.split("///", 1)[1] for line in text.splitlines() if "///" in line)
    docs = re.sub(r"\s+", " ", docs)
    snippets = re.findall(r"`(grants? \{[^`]*\})`", docs)
    assert {re.search(r"\{ (\w+)", s).group(1) for s in snippets} == {  # type: ignore[union-attr]
        "path", "command", "host", "secret"}  # fmt: skip
    for snippet in snippets:
        kdl = f'name "p"\nversion "1"\n{snippet.replace("...", "x").replace("NAME", "X")}\n'
        package = read_manifest("plugin.kdl", kdl, "/nonexistent", warn=lambda w: None)
        assert package.grants, snippet
