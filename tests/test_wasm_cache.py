"""The compiled-component cache and the engines of smith's WebAssembly host
(smith/wasm/_cache.py, _engine.py): only code smith compiled for that very key runs (an
HMAC under a secret in smith's data directory, in a directory of the user's own), a
cache that cannot be used is said once and the plugin still loads, a relative
cache-home is refused, a stopped plugin frees its engine and component, and stopping a
cancelled call never reaches the next call's deadline."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import shutil
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolContext
from smith.wasm import wasm_plugin
from smith.wasm._plugin import host_of
from tests.wasm_fixtures import guest, package

__all__ = ["guest"]


class View:
    """The little of a RuntimeView the wasm plugin reads; what it posts is kept."""

    def __init__(self, root: Path) -> None:
        self.settings: dict[str, object] = {}
        self.context = ToolContext(root=str(root), cwd=str(root))
        self.generation = 1
        self.posted: list[Any] = []

    def post(self, shown: Any) -> None:
        self.posted.append(shown)


def command(plugin: Any, view: View, text: str) -> Any:
    (handled,) = plugin.handlers["input"]({"type": "input", "text": text, "mode": "prompt"}, view)
    return handled


def stop(plugin: Any) -> None:
    asyncio.run(plugin.stop())


def module(tmp_path: Path, name: str, wat: str) -> Path:
    """A tiny component (compiled in milliseconds) at tmp_path/name."""
    import wasmtime

    path = tmp_path / name
    path.write_bytes(wasmtime.wat2wasm(wat))
    return path


EMPTY = "(component)"
OTHER = "(component (core module))"


def test_the_compiled_component_is_kept_and_only_smiths_own_is_run(tmp_path: Path) -> None:
    from smith.wasm import _cache

    mod = module(tmp_path, "a.wasm", EMPTY)
    home, data = tmp_path / "cache", tmp_path / "data"
    key = _cache.cache_key(mod.read_bytes())
    cached = home / "wasm" / f"{key}.cwasm"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"not a compiled component")  # a damaged file: compiled, replaced
    pre = _cache.precompile
    assert pre(str(mod), cache_home=str(home), home=str(data)) == "compiled"
    assert pre(str(mod), cache_home=str(home), home=str(data)) == "cache"
    (mac,) = [p for p in cached.parent.iterdir() if p.suffix == ".mac"]
    assert sorted(p.name for p in cached.parent.iterdir()) == sorted([cached.name, mac.name])
    assert (cached.parent.stat().st_mode & 0o777) == 0o700
    secret = data / _cache.SECRET_FILE  # in the data directory, owner-only
    assert (secret.stat().st_mode & 0o777) == 0o600 and len(secret.read_text()) == 64
    from smith.wasm._engine import key as engine_key

    assert "wasmtime 51" in engine_key()  # the key names the version
    # Another component's valid code over it, with the digest that used to vouch for it:
    import wasmtime
    from wasmtime.component import Component

    from smith.wasm._engine import engine

    other = bytes(Component(engine(), wasmtime.wat2wasm(OTHER)).serialize())
    cached.write_bytes(other)
    (cached.parent / f"{key}.sha256").write_text(hashlib.sha256(other).hexdigest())
    assert pre(str(mod), cache_home=str(home), home=str(data)) == "compiled"
    assert pre(str(mod), cache_home=str(home), home=str(data)) == "cache"
    # Another data directory (its own secret) compiles once, and leaves this one's alone.
    assert pre(str(mod), cache_home=str(home), home=str(tmp_path / "d2")) == "compiled"
    assert pre(str(mod), cache_home=str(home), home=str(data)) == "cache"


def test_a_planted_module_with_its_digest_under_another_key_is_not_run(
    guest: Path, tmp_path: Path
) -> None:
    """Whoever can write the cache directory copies another module's compiled file and
    its MAC (and a sha256 beside them) under the plugin's key: the plugin's own code runs."""
    from smith.wasm import _cache

    home, data = tmp_path / "cache", tmp_path / "data"
    other = module(tmp_path, "other.wasm", EMPTY)
    _cache.precompile(str(other), cache_home=str(home), home=str(data))
    wasm = home / "wasm"
    k_other, k_guest = (_cache.cache_key(p.read_bytes()) for p in (other, guest))
    for path in list(wasm.iterdir()):
        shutil.copy(path, wasm / path.name.replace(k_other, k_guest))
    planted = (wasm / f"{k_guest}.cwasm").read_bytes()
    (wasm / f"{k_guest}.sha256").write_text(hashlib.sha256(planted).hexdigest())
    plugin = wasm_plugin(package(guest, "planted"), cache_home=str(home), home=str(data))
    handled = command(plugin, View(tmp_path), "/planted")
    assert (handled.reply, handled.error) == ("hello from planted", None)
    loaded = host_of("planted")
    assert loaded is not None and loaded.load_how == "compiled"
    assert (wasm / f"{k_guest}.cwasm").read_bytes() != planted  # replaced by its own
    stop(plugin)


def test_a_cache_that_cannot_be_used_is_said_once_and_the_plugin_loads(
    guest: Path, tmp_path: Path
) -> None:
    from smith.ui import Notify

    afile = tmp_path / "cache-home"
    afile.write_text("a file where the cache home should be")
    plugin = wasm_plugin(package(guest, "nocache"), cache_home=str(afile))
    view = View(tmp_path)
    assert command(plugin, view, "/nocache").reply == "hello from nocache"
    assert command(plugin, view, "/nocache").error is None
    (notice,) = [p for p in view.posted if isinstance(p, Notify)]
    assert notice.level == "warning"
    assert f"compiled plugins are not kept in {afile}/wasm: it cannot be made" in notice.text
    assert "SMITH_CACHE_HOME" in notice.text  # the fix names where it is set
    stop(plugin)


def test_a_link_or_anothers_directory_is_not_used(tmp_path: Path) -> None:
    from smith.wasm import _cache

    mod = module(tmp_path, "a.wasm", EMPTY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "wasm").symlink_to(elsewhere)
    with pytest.raises(Exception, match=r"not kept in .*: it is a link"):
        _cache.precompile(str(mod), cache_home=str(linked))
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    # The cache home itself may be a link to a directory of the user's own.
    (tmp_path / "home-link").symlink_to(elsewhere)
    assert _cache.precompile(str(mod), cache_home=str(tmp_path / "home-link")) == "compiled"
    # Once said (per directory and process), the same load just compiles.
    _, how, problem = _cache.load(str(mod), str(linked / "wasm"), _engine_of())
    assert (how, problem) == ("compiled", None)
    if os.geteuid() == 0:  # a directory of another user's (as root, the test can make one)
        theirs = tmp_path / "theirs"
        (theirs / "wasm").mkdir(parents=True, mode=0o700)
        os.chown(theirs / "wasm", 65534, 65534)
        with pytest.raises(Exception, match="belongs to another user"):
            _cache.precompile(str(mod), cache_home=str(theirs))
        assert list((theirs / "wasm").iterdir()) == []


def _engine_of() -> Any:
    from smith.wasm._engine import engine

    return engine()


def test_a_relative_cache_home_is_refused_naming_where_it_was_set(tmp_path: Path) -> None:
    from smith.config import resolve

    env = {"HOME": str(tmp_path), "SMITH_HOME": str(tmp_path / "d"),
           "SMITH_CONFIG_HOME": str(tmp_path / "c"), "SMITH_CACHE_HOME": "rel/cache"}  # fmt: skip
    config = resolve(env=env, cwd=str(tmp_path), strict=False)
    (error,) = [e for e in config.errors if e.field == "cache-home"]
    assert "expected an absolute path" in error.what and '"rel/cache"' in error.what
    assert "SMITH_CACHE_HOME" in error.headline() + error.fix
    assert not str(config["cache-home"]).startswith(str(tmp_path / "rel"))
    home = {**env, "SMITH_CACHE_HOME": "~/c"}  # ~ is the user's home: taken
    assert resolve(env=home, cwd=str(tmp_path), strict=False)["cache-home"] == f"{tmp_path}/c"


def test_stopped_plugins_free_their_engines_and_components(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    from smith.wasm import _engine

    view = View(tmp_path)
    warm = wasm_plugin(package(guest, "lk"), cache_home=str(cache_home))
    assert command(warm, view, "/lk").reply == "hello from lk"  # compiled into the cache
    stop(warm)
    gc.collect()
    before = _engine.advanced()
    held: list[weakref.ref[Any]] = []
    for _ in range(3):
        plugin = wasm_plugin(package(guest, "lk"), cache_home=str(cache_home))
        assert command(plugin, view, "/lk").reply == "hello from lk"
        inst = host_of("lk").instance  # type: ignore[union-attr]
        assert inst is not None and inst.engine in _engine._Shared.engines  # advanced
        held += [weakref.ref(inst.engine), weakref.ref(inst.component)]
        stop(plugin)
        del inst, plugin
        gc.collect()
        assert _engine.advanced() <= before  # the ticker no longer advances it
    assert [r() for r in held] == [None] * 6  # every engine and component freed


def test_stopping_a_cancelled_call_never_reaches_the_next_calls_deadline() -> None:
    """The ticker moves a cancelled call's engine past its deadline (deadline + 1 epochs);
    the call ends after the first few of them and the next call sets its deadline at
    once: it is set only after the last of them, so none lands on it."""
    from smith.wasm import _engine

    class Engine:  # an engine whose epoch is counted; the cancelled call ends at the 3rd
        def __init__(self) -> None:
            self.epoch = 0
            self.set_at: list[int] = []
            self.next_call: threading.Thread | None = None

        def increment_epoch(self) -> None:
            self.epoch += 1
            if self.epoch == 3:
                run.__exit__(None, None, None)  # the cancelled call trapped and ended
                self.next_call = threading.Thread(target=self.set_deadline)
                self.next_call.start()
                time.sleep(0.05)  # time enough for it to set its deadline, if it may

        def set_deadline(self) -> None:  # as Instance._call does
            with _engine.deadline_lock(self):
                self.set_at.append(self.epoch)

    eng = Engine()
    cancel = threading.Event()
    cancel.set()
    run = _engine.running(cancel, eng, 50)  # type: ignore[arg-type]
    run.__enter__()
    ends = time.monotonic() + 5
    while eng.next_call is None and time.monotonic() < ends:
        time.sleep(0.01)
    assert eng.next_call is not None, "the ticker never stopped the cancelled call"
    eng.next_call.join(5)
    assert eng.epoch == 51 and eng.set_at == [51]  # after every move, never amid them
    time.sleep(_engine.GRACE + 0.1)
    assert eng.epoch == 51  # once the call ended, nothing more is moved


def test_a_stop_does_not_touch_a_call_that_already_ended() -> None:
    from smith.wasm import _engine

    class Engine:
        epoch = 0

        def increment_epoch(self) -> None:
            self.epoch += 1

    eng, cancel = Engine(), threading.Event()
    cancel.set()
    run = _engine.running(cancel, eng, 50)  # type: ignore[arg-type]
    run.__enter__()
    run.__exit__(None, None, None)  # ended before the ticker stopped it
    _engine._stop(run, eng, 50)  # type: ignore[arg-type]
    assert eng.epoch == 0
