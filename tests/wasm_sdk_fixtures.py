"""Packages `smith plugins new` scaffolds, built once per test session by `smith plugins
build`'s function (python: componentize-py, ~6 s; c: zig cc, ~1 s; zig: ~1 s once zig's
caches are built), and a minimal
wasmtime host to call them: the host functions of the WIT as stubs that record what
they were asked, so a test can see the canonical ABI both ways without smith's host."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from smith.wasm import build_package, scaffold

NAMES = {"python": "hello-py", "c": "hello-c", "zig": "hello-zig"}


def have_toolchain(lang: str) -> bool:
    from smith.wasm._build import c_compiler

    if lang == "python":
        return importlib.util.find_spec("componentize_py") is not None
    if lang == "zig":
        return importlib.util.find_spec("ziglang") is not None
    return c_compiler() is not None


@dataclass
class Built:
    lang: str
    name: str
    root: Path
    module: Path


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Built]:
    """built(lang): the scaffold of that language, built (once per session)."""
    cache: dict[str, Built] = {}

    def get(lang: str) -> Built:
        if not have_toolchain(lang):
            pytest.skip(f"no {lang} toolchain (pip install 'smith-agent[plugins]')")
        if lang not in cache:
            root = scaffold(NAMES[lang], lang, tmp_path_factory.mktemp(f"sdk-{lang}"))
            cache[lang] = Built(lang, NAMES[lang], root, build_package(root, lambda _: None))
        return cache[lang]

    return get


@dataclass
class Host:
    """Stub host functions: what each was called with, and what they answer."""

    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    answers: dict[str, Any] = field(default_factory=dict)

    def func(self, name: str) -> Callable[..., Any]:
        def call(store: Any, *args: Any) -> Any:
            self.calls.append((name, args))
            answer = self.answers.get(name)
            if isinstance(answer, BaseException):
                raise answer
            return answer(*args) if callable(answer) else answer

        return call


class Guest:
    """One instance of a built component, with `host` behind its imports."""

    def __init__(self, module: Path, host: Host | None = None) -> None:
        import wasmtime
        import wasmtime.component as wc

        from smith.wasm import wit_world

        self.host = host or Host()
        engine = wasmtime.Engine()
        linker = wc.Linker(engine)
        world = wit_world()
        with linker.root() as root:
            for iname in world.imports:
                with root.add_instance(world.qualified(iname)) as inst:
                    for fname in world.interfaces[iname].funcs:
                        inst.add_func(fname, self.host.func(fname))
        self.store = wasmtime.Store(engine)
        self.instance = linker.instantiate(self.store, wc.Component.from_file(engine, str(module)))

    def call(self, export: str, *args: Any) -> tuple[str, Any]:
        """("ok" | "err", payload) of a `result` export."""
        f = self.instance.get_func(self.store, export)
        assert f is not None, export
        result = f(self.store, *args)
        f.post_return(self.store)
        tag = getattr(result, "tag", None)
        if tag is None:  # a result<_, E> that is ok
            return "ok", result
        return str(tag), result.payload
