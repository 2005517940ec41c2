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
