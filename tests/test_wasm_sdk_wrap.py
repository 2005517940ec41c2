"""The core-module wrapper (smith.wasm._wrap) makes only components that load: a module
that does not fit smith's world is refused at build with what is wrong, and a host
function whose result flattens to more than one core value is lowered with memory."""

from __future__ import annotations

import pytest

from smith.wasm import wit_world
from smith.wasm._wit import parse
from smith.wasm._wrap import WrapError, wrap

wasmtime = pytest.importorskip("wasmtime")

REALLOC = '(func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) i32.const 64)'


def _core(body: str) -> bytes:
    return bytes(wasmtime.wat2wasm(f"(module {body})"))


def _exports(sig: str) -> str:
    return " ".join(f'(func (export "{n}") {sig} unreachable)' for n in wit_world().exports)


RIGHT = {  # the core signature of each export of the world (params, result pointer)
    "start": "(param i32 i32) (result i32)",
    "on-event": "(param i32 i32) (result i32)",
    "command": "(param i32 i32 i32 i32) (result i32)",
    "call-tool": "(param i32 i32 i32 i32) (result i32)",
    "choose": "(param i32 i32 i32 i32) (result i32)",
}


def _good_exports() -> str:
    return " ".join(f'(func (export "{n}") {s} unreachable)' for n, s in RIGHT.items())


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (f'(memory (export "memory") 1) {REALLOC} {_exports("")}', "start"),
        (
            '(memory (export "memory") 1) (func (export "cabi_realloc") (param i32) '
            f"(result i32) i32.const 0) {_good_exports()}",
            "realloc",
        ),
        (
            f'(memory (export "memory") 1) {REALLOC} {_good_exports()} '
            '(func (export "cabi_post_start") (param i64))',
            "post",
        ),
        (
            f'(memory 1) (global (export "memory") i32 (i32.const 0)) {REALLOC} {_good_exports()}',
            "memory",
        ),
    ],
)
def test_a_module_that_does_not_fit_the_world_is_refused_at_wrap(body: str, said: str) -> None:
    with pytest.raises(WrapError) as caught:
        wrap(wit_world(), _core(body))
    assert "does not fit smith's plugin world" in str(caught.value)
    assert said in str(caught.value)


def test_the_right_signatures_wrap() -> None:
    import wasmtime.component

    wasmtime.component.Component(
        wasmtime.Engine(),
        wrap(wit_world(), _core(f'(memory (export "memory") 1) {REALLOC} {_good_exports()}')),
    )


PAIR_WIT = """package smith:plugin@1.0.0;
interface host {
  /// two numbers
  pair: func() -> tuple<u32, u32>;
}
world plugin {
  import host;
  /// their sum
  export hello: func() -> u32;
}
"""


def test_a_result_of_two_core_values_is_lowered_through_memory() -> None:
    import wasmtime.component

    world = parse(PAIR_WIT)
    core = _core(
        f'(import "{world.qualified("host")}" "pair" (func $pair (param i32))) '
        f'(memory (export "memory") 1) {REALLOC} '
        '(func (export "hello") (result i32) i32.const 8 call $pair '
        "i32.const 8 i32.load i32.const 12 i32.load i32.add)"
    )
    engine = wasmtime.Engine()
    component = wasmtime.component.Component(engine, wrap(world, core))
    linker = wasmtime.component.Linker(engine)
    with linker.root() as root, root.add_instance(world.qualified("host")) as host:
        host.add_func("pair", lambda store: (3, 4))
    store = wasmtime.Store(engine)
    instance = linker.instantiate(store, component)
    assert instance.get_func(store, "hello")(store) == 7


def _wasi_caller(name: str) -> bytes:
    calls = " ".join(
        f'(func (export "{n}") {s} i32.const 0 i32.const 0 i32.const 0 i32.const 0 '
        f"call $w drop unreachable)"
        for n, s in RIGHT.items()
    )
    return _core(
        f'(import "wasi_snapshot_preview1" {name} (func $w (param i32 i32 i32 i32) '
        f'(result i32))) (memory (export "memory") 1) {REALLOC} {calls}'
    )


def test_a_wasi_call_s_trap_names_the_wasi_function() -> None:
    import wasmtime.component

    from smith.wasm._wrap import wasi_call

    engine = wasmtime.Engine()
    component = wasmtime.component.Component(engine, wrap(wit_world(), _wasi_caller('"fd_write"')))
    linker = wasmtime.component.Linker(engine)
    linker.define_unknown_imports_as_traps(component)
    store = wasmtime.Store(engine)
    instance = linker.instantiate(store, component)
    with pytest.raises(wasmtime.WasmtimeError) as caught:
        instance.get_func(store, "command")(store, "a", "b")
    assert wasi_call(str(caught.value)) == "fd_write"
    # and the plugin's fault says so, rather than "it aborted, ... or at its memory limit"
    from smith.wasm._instance import Limits, _trap_reason

    reason = _trap_reason(caught.value, 2.0, 10**9, Limits(), 0.0)
    assert reason.startswith("called WASI fd_write, which smith does not offer")
    assert "host.log" in reason and "memory limit" not in reason


def test_a_python_plugin_s_print_is_named_from_its_backtrace() -> None:
    from smith.wasm._wrap import wasi_call

    # What a componentize-py (--stub-wasi) plugin's print() traps with.
    trap = """error while executing at wasm backtrace:
    0: 0xaa26ff - <unknown>!<wasm function 0>
    1: 0x1168e5e - <unknown>!<wasm function 6>
    2: 0xab75fb - libc.so!stdout_get_stdout
    3: 0xab9ffb - libc.so!stdio_get_write_stream
    4: 0xaaf052 - libc.so!write
   14: 0xd671af - libpython3.14.so!builtin_print

Caused by:
    wasm trap: wasm `unreachable` instruction executed"""
    assert wasi_call(trap) == "stdout_get_stdout (from libc)"
    # An abort of the plugin's own is no WASI call.
    assert wasi_call(trap.replace("<unknown>!<wasm function 0>", "libc.so!abort")) is None


def test_an_import_name_with_a_quote_is_wrapped_not_a_wat_error() -> None:
    import wasmtime.component

    made = wrap(wit_world(), _wasi_caller(r'"fd\22write\5c"'))
    wasmtime.component.Component(wasmtime.Engine(), made)
