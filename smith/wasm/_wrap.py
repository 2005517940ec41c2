"""A core WebAssembly module (a C plugin compiled against smith_plugin.h) made into a
component of smith's world, as wit-component does it, without its binary:

- the component's WAT is generated from the WIT (its types, the host instance it
  imports, the functions it exports, lifted with the module's memory, `cabi_realloc`
  and the `cabi_post_*` functions);
- host functions whose lowering needs the module's memory go through a shim module (a
  table of `call_indirect`s the main module imports) that a fixup module fills once the
  main module exists and its memory can be named, which is the order the component
  model requires;
- any WASI import (wasi-libc's, if the plugin uses stdio or the clock) is satisfied by a
  stub that traps: no ambient authority;
- `wasmtime.wat2wasm` assembles component WAT but cannot embed a module's binary, so
  the WAT holds a placeholder module with the real one's imports and exports, and the
  real module's bytes are spliced into that core-module section afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smith.wasm._abi import MAX_FLAT_RESULTS, flat, needs_memory, params_flat, wat_type
from smith.wasm._wit import Func, World

_WASI = ("wasi_snapshot_preview1", "wasi_unstable")
_MAGIC = b"\0asm"


class WrapError(ValueError):
    """The module cannot be made into a plugin component (the message says why)."""


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_leb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def splice_first_module(component: bytes, module: bytes) -> bytes:
    """`component` with its first core-module section's module replaced by `module`."""
    at = 8
    while at < len(component):
        section = component[at]
        size, payload = _read_leb(component, at + 1)
        if section == 1:
            return (
                component[:at] + b"\x01" + _leb(len(module)) + module + component[payload + size :]
            )
        at = payload + size
    raise WrapError("the generated component has no core module section")


_IDENT = re.compile(r"[A-Za-z0-9_.-]+")
# A frame of libc calling a WASI function (componentize-py's --stub-wasi stubs have no
# names of their own): stdout_get_stdout (print), fd_write, clock_time_get, ...
_LIBC_WASI = re.compile(
    r"libc\.so!((?:std(?:in|out|err)_get_|fd_|clock|random|environ|args_|poll|preopen|"
    r"filesystem|descriptor|__wasi_)\w*)"
)
_FRAME = re.compile(r"^\s*\d+:\s+0x[0-9a-f]+ - (\S+)", re.M)


def _str(name: str) -> str:
    """`name` as a WAT string (any byte escaped that would end or break it)."""
    return (
        '"'
        + "".join(
            chr(b) if 0x20 <= b < 0x7F and chr(b) not in '"\\' else f"\\{b:02x}"
            for b in name.encode()
        )
        + '"'
    )


def wasi_call(trap: str) -> str | None:
    """The WASI function a trap's backtrace shows the plugin called, if it shows one:
    a C plugin's stub is $wasi-NAME (see _wasi_stubs); a Python plugin's is nameless
    under the libc function that called it (stdout_get_stdout for print())."""
    m = re.search(r"!wasi-([\w.-]+)", trap)
    if m:
        return m.group(1)
    frames = _FRAME.findall(trap)
    if not frames or not frames[0].startswith("<unknown>"):
        return None
    named = next((f for f in frames if not f.startswith("<unknown>")), "")
    m = _LIBC_WASI.fullmatch(named)
    return f"{m.group(1)} (from libc)" if m else None


def _functype(params: Sequence[str], results: Sequence[str]) -> str:
    return "".join(f" (param {p})" for p in params) + "".join(f" (result {r})" for r in results)


def _core_sig(ty: object) -> tuple[list[str], list[str]]:
    params = getattr(ty, "params", None)
    results = getattr(ty, "results", None)
    if params is None or results is None:
        raise WrapError(
            f"an import or export of the module is a {type(ty).__name__}, not a function"
        )
    return [str(p) for p in params], [str(r) for r in results]


Imports = Sequence[tuple[str, str, object]]  # (module, name, wasmtime type)


def _imported_types(world: World, out: list[str]) -> dict[str, str]:
    """The types interfaces, imported as wit-component does (instances of types only);
    returns {WIT type name: its WAT index in the component}."""
    named: dict[str, str] = {}
    for iname in (n for n in world.interfaces if n not in world.imports):
        iface = world.interfaces[iname]
        out.append(f'  (import "{world.qualified(iname)}" (instance $i-{iname}')
        local: dict[str, str] = {}
        for d in iface.types.values():
            if d.kind == "enum":
                body = "(enum " + " ".join(f'"{c}"' for c in d.cases) + ")"
            else:
                fields = (f'(field "{fn}" {wat_type(ft, local)})' for fn, ft in d.fields)
                body = "(record " + " ".join(fields) + ")"
            out.append(f"    (type $d-{d.name} {body})")
            out.append(f'    (export "{d.name}" (type $e-{d.name} (eq $d-{d.name})))')
            local[d.name] = f"$e-{d.name}"
        out.append("  ))")
        for d in iface.types.values():
            out.append(f'  (alias export $i-{iname} "{d.name}" (type $t-{d.name}))')
            named[d.name] = f"$t-{d.name}"
    return named


def _imported_host(world: World, named: dict[str, str], out: list[str]) -> None:
    """The host interfaces: every type and function, as the WIT declares them."""
    for iname in world.imports:
        out.append(f'  (import "{world.qualified(iname)}" (instance $i-{iname}')
        local = {}
        for tname, index in named.items():
            out.append(f"    (alias outer $C {index} (type $o-{tname}))")
            out.append(f'    (export "{tname}" (type $x-{tname} (eq $o-{tname})))')
            local[tname] = f"$x-{tname}"
        for f in world.interfaces[iname].funcs.values():
            params = "".join(f' (param "{n}" {wat_type(t, local)})' for n, t in f.params)
            result = f" (result {wat_type(f.result, local)})" if f.result else ""
            out.append(f"    (type $f-{f.name} (func{params}{result}))")
            out.append(f'    (export "{f.name}" (func (type $f-{f.name})))')
        out.append("  ))")


def _placeholder(world: World, imports: Imports, exports: dict[str, object]) -> list[str]:
    """The main module's placeholder: its imports and the exports the component uses."""
    out = ["  (core module $main"]
    for m, n, ty in imports:
        p, r = _core_sig(ty)
        out.append(f"    (import {_str(m)} {_str(n)} (func{_functype(p, r)}))")
    out.append('    (memory (export "memory") 0)')
    for name, ty in exports.items():
        if name == "cabi_realloc" or name in world.exports or name.startswith("cabi_post_"):
            p, r = _core_sig(ty)
            out.append(f'    (func (export "{name}"){_functype(p, r)} unreachable)')
    return [*out, "  )"]


def _wasi_stubs(imports: Imports) -> list[str]:
    """WASI: a stub module per WASI module imported, each function trapping, named
    $wasi-NAME so the trap's backtrace says which WASI call it was (wasi_call)."""
    out = []
    for mod in dict.fromkeys(m for m, _, _ in imports if m in _WASI):
        out.append(f"  (core module $stub-{mod}")
        for m, n, ty in imports:
            if m == mod:
                p, r = _core_sig(ty)
                ident = f" $wasi-{n}" if _IDENT.fullmatch(n) else ""
                out.append(f"    (func{ident} (export {_str(n)}){_functype(p, r)} unreachable)")
        out.append("  )")
        out.append(f"  (core instance $stubs-{mod} (instantiate $stub-{mod}))")
    return out


def _shimmed(world: World, imports: Imports) -> list[tuple[str, str, object]]:
    """The host functions the module imports whose lowering needs its memory."""
    host_mods = {world.qualified(i): i for i in world.imports}
    out = []
    for m, n, ty in imports:
        if m not in host_mods and m not in _WASI:
            raise WrapError(f"the module imports {n!r} from {m!r}, which smith does not offer")
        if m not in host_mods:
            continue
        f = world.interfaces[host_mods[m]].funcs.get(n)
        if f is None:
            raise WrapError(f"the module imports {n!r} from {m!r}, which is no host function")
        memory = any(needs_memory(world, t) for _, t in f.params) or needs_memory(world, f.result)
        # A result of more than one core value comes back through memory (a return pointer).
        memory = memory or len(flat(world, f.result)) > MAX_FLAT_RESULTS
        if memory or params_flat(world, f.params) is None:
            out.append((m, n, ty))
    return out


def _shim(shimmed: list[tuple[str, str, object]]) -> list[str]:
    """A table of call_indirects the main module imports (filled by the fixup)."""
    n = len(shimmed)
    out = ["  (core module $shim"]
    for i, (_, _, ty) in enumerate(shimmed):
        out.append(f"    (type $s{i} (func{_functype(*_core_sig(ty))}))")
    out.append(f'    (table (export "$imports") {n} {n} funcref)')
    for i, (_, _, ty) in enumerate(shimmed):
        gets = " ".join(f"local.get {k}" for k in range(len(_core_sig(ty)[0])))
        call = f"i32.const {i} call_indirect (type $s{i})"
        out.append(f'    (func (export "{i}") (type $s{i}) {gets} {call})')
    return [*out, "  )", "  (core instance $shim (instantiate $shim))"]


def _fixup(world: World, shimmed: list[tuple[str, str, object]]) -> list[str]:
    """The lowered host functions (with the main module's memory) put in the shim's table."""
    host_mods = {world.qualified(i): i for i in world.imports}
    n = len(shimmed)
    out = ["  (core module $fixup"]
    for i, (_, _, ty) in enumerate(shimmed):
        out.append(f'    (import "" "{i}" (func{_functype(*_core_sig(ty))}))')
    out.append(f'    (import "" "$imports" (table {n} {n} funcref))')
    out.append("    (elem (i32.const 0) func " + " ".join(map(str, range(n))) + ")")
    out.append("  )")
    lowered = []
    for i, (m, name, _) in enumerate(shimmed):
        out.append(
            f'  (core func $fix{i} (canon lower (func $i-{host_mods[m]} "{name}") (memory $mem) '
            f"(realloc $realloc) string-encoding=utf8))"
        )
        lowered.append(f'(export "{i}" (func $fix{i}))')
    out.append('  (alias core export $shim "$imports" (core table $shim-table))')
    args = " ".join([*lowered, '(export "$imports" (table $shim-table))'])
    out.append(f'  (core instance (instantiate $fixup (with "" (instance {args}))))')
    return out


def _lifted(world: World, named: dict[str, str], exports: dict[str, object]) -> list[str]:
    """The exports smith calls, lifted with the module's memory and realloc."""
    out = []
    for f in world.exports.values():
        if f.name not in exports:
            raise WrapError(
                f"the module does not export {f.name!r} (was smith_plugin.c compiled in?)"
            )
        params = "".join(f' (param "{n}" {wat_type(t, named)})' for n, t in f.params)
        result = f" (result {wat_type(f.result, named)})" if f.result else ""
        post = f"cabi_post_{f.name}"
        post_opt = f' (post-return (core func $main "{post}"))' if post in exports else ""
        out.append(f"  (type $x-{f.name} (func{params}{result}))")
        out.append(
            f'  (func $x-{f.name} (type $x-{f.name}) (canon lift (core func $main "{f.name}") '
            f"(memory $mem) (realloc $realloc) string-encoding=utf8{post_opt}))"
        )
        out.append(f'  (export "{f.name}" (func $x-{f.name}))')
    return out


def component_wat(world: World, imports: Imports, exports: dict[str, object]) -> str:
    """The component WAT wrapping a main module whose imports are `imports` and exports
    `exports` (name -> wasmtime type)."""
    out = ["(component $C"]
    named = _imported_types(world, out)
    _imported_host(world, named, out)
    out += _placeholder(world, imports, exports)
    out += _wasi_stubs(imports)
    shimmed = _shimmed(world, imports)
    if shimmed:
        out += _shim(shimmed)
    withs = []
    for iname in world.imports:
        mod = world.qualified(iname)
        args = []
        for m, n, _ in imports:
            if m != mod:
                continue
            k = next((i for i, s in enumerate(shimmed) if s[:2] == (m, n)), None)
            if k is None:  # needs no memory: lowered at once
                out.append(f'  (core func $low-{iname}-{n} (canon lower (func $i-{iname} "{n}")))')
                args.append(f'(export "{n}" (func $low-{iname}-{n}))')
            else:
                args.append(f'(export "{n}" (func $shim "{k}"))')
        if args:
            out.append(f"  (core instance $args-{iname} " + " ".join(args) + ")")
            withs.append(f'(with "{mod}" (instance $args-{iname}))')
    for mod in dict.fromkeys(m for m, _, _ in imports if m in _WASI):
        withs.append(f'(with "{mod}" (instance $stubs-{mod}))')
    out.append("  (core instance $main (instantiate $main " + " ".join(withs) + "))")
    out.append('  (alias core export $main "memory" (core memory $mem))')
    out.append('  (alias core export $main "cabi_realloc" (core func $realloc))')
    if shimmed:
        out += _fixup(world, shimmed)
    out += _lifted(world, named, exports)
    out.append(")")
    return "\n".join(out) + "\n"


def wrap(world: World, module: bytes) -> bytes:
    """The component of `world` made from the core `module` (see the module docstring)."""
    import wasmtime

    if module[:4] != _MAGIC or module[4:8] != b"\x01\0\0\0":
        raise WrapError("the compiler's output is not a core WebAssembly module")
    try:
        core = wasmtime.Module(wasmtime.Engine(), module)
    except wasmtime.WasmtimeError as exc:
        raise WrapError(f"the module does not validate: {exc}") from exc
    imports: list[tuple[str, str, object]] = [
        (i.module, i.name or "", i.type) for i in core.imports
    ]
    exports: dict[str, object] = {e.name: e.type for e in core.exports}
    if "memory" not in exports or "cabi_realloc" not in exports:
        raise WrapError(
            "the module exports no memory or no cabi_realloc (was smith_plugin.c compiled in?)"
        )
    _check_signatures(world, imports, exports)
    wat = component_wat(world, imports, exports)
    try:
        component = wasmtime.wat2wasm(wat)
    except wasmtime.WasmtimeError as exc:
        raise WrapError(f"the generated component does not assemble: {exc}") from exc
    made = splice_first_module(bytes(component), module)
    _check(made)
    return made


def _sig(params: Sequence[str], results: Sequence[str]) -> str:
    return f"({' '.join(params)}) -> ({' '.join(results)})"


def _flat_params(world: World, f: Func) -> list[str]:
    values = params_flat(world, f.params)
    return ["i32"] if values is None else values  # in memory: a pointer


def _check_signatures(world: World, imports: Imports, exports: dict[str, object]) -> None:
    """Each export and host import has the core signature the canonical ABI gives it."""
    problems = []
    if type(exports["memory"]).__name__ != "MemoryType":
        problems.append("its export 'memory' is no memory")
    want: dict[str, tuple[list[str], list[str]]] = {"cabi_realloc": (["i32"] * 4, ["i32"])}
    for f in world.exports.values():
        params = _flat_params(world, f)
        result = flat(world, f.result)
        result = result if len(result) <= MAX_FLAT_RESULTS else ["i32"]
        want[f.name] = (params, result)
        want[f"cabi_post_{f.name}"] = (result, [])
    host = {world.qualified(i): world.interfaces[i] for i in world.imports}
    found = [(f"export {n!r}", n, ty) for n, ty in exports.items() if n in want]
    for m, n, ty in imports:
        fn = host[m].funcs[n] if m in host and n in host[m].funcs else None
        if fn is not None:
            result = flat(world, fn.result)
            params = _flat_params(world, fn)
            want[f"{m}#{n}"] = (
                (params, result) if len(result) <= MAX_FLAT_RESULTS else ([*params, "i32"], [])
            )
            found.append((f"import {n!r}", f"{m}#{n}", ty))
    for what, key, ty in found:
        got = _core_sig(ty)
        if got != want[key]:
            problems.append(f"{what} is {_sig(*got)}, not {_sig(*want[key])}")
    if problems:
        raise WrapError(
            "the module does not fit smith's plugin world (was it built against an older "
            "smith_plugin.h?): " + "; ".join(problems)
        )


def _check(component: bytes) -> None:
    """Compile the component as smith will load it, so a module that does not fit the
    world (an export, import, cabi_realloc or cabi_post_* of the wrong signature, a
    global exported as memory) fails at build, saying what is wrong, not at load."""
    import wasmtime
    import wasmtime.component

    try:
        wasmtime.component.Component(wasmtime.Engine(), component)
    except wasmtime.WasmtimeError as exc:
        cause = " ".join(str(exc).split())  # the whole chain: "... Caused by: ..."
        raise WrapError(f"the module does not fit smith's plugin world: {cause}") from exc
