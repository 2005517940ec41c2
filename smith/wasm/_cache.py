"""Compiled components, kept so a start after the first does not compile again.

    component, how = load(path, cache_dir, engine)   # how: "memory", "cache" or "compiled"

The key is sha256 of the module's bytes, wasmtime's version and the engine's settings
(smith.wasm._engine.key), so a changed module, an upgraded wasmtime or other engine
settings compile afresh; the file is `<cache_dir>/<key>.cwasm`, written atomically (a
temporary file renamed over it). A cached file that does not load (truncated, from
another build) is compiled again and replaced. Within a process a component loads once
per engine (each plugin has its own: smith.wasm._engine).

A .cwasm is native code, loaded without wasmtime checking it: the cache is trusted only
as far as smith wrote it. The directory is the user's own (0700; the sandbox hides
smith's cache directory from commands), and the sha256 of each file smith compiled is
kept beside it (`<key>.sha256`, as private and as hidden): a file whose
bytes are not those (another plugin's file copied over, a crafted one) is compiled
again, never run. What is loaded is the bytes that were checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Component

from smith.wasm._engine import engine
from smith.wasm._engine import key as engine_key

_lock = threading.Lock()
# (key, id of the engine) -> (the engine, kept alive while its component is, the component)
_loaded: dict[tuple[str, int], tuple[Engine, Component]] = {}


def cache_key(module: bytes) -> str:
    digest = hashlib.sha256(module)
    digest.update(b"\0" + engine_key().encode())
    return digest.hexdigest()


def load(path: str, cache_dir: str, eng: Engine | None = None) -> tuple[Component, str]:
    """The component at `path` for `eng` (default: the shared engine), compiled (or taken
    from the cache), and where it came from: "memory" (this process loaded it for that
    engine before), "cache" or "compiled"."""
    with open(path, "rb") as f:
        module = f.read()
    key = cache_key(module)
    eng = eng or engine()
    with _lock:
        if (key, id(eng)) in _loaded:
            return _loaded[key, id(eng)][1], "memory"
    cached = os.path.join(cache_dir, f"{key}.cwasm")
    component: Component | None = None
    how = "cache"
    digest = os.path.join(cache_dir, f"{key}.sha256")
    data = _checked(cached, digest)
    if data is not None:
        with contextlib.suppress(WasmtimeError):
            component = Component.deserialize(eng, data)
    if component is None:
        how = "compiled"
        component = Component(eng, module)
        with contextlib.suppress(OSError):  # no cache (read-only): compile each time
            compiled = bytes(component.serialize())
            _write(digest, hashlib.sha256(compiled).hexdigest().encode())
            _write(cached, compiled)
    with _lock:
        _loaded.setdefault((key, id(eng)), (eng, component))
        return _loaded[key, id(eng)][1], how


def _checked(cached: str, digest: str) -> bytes | None:
    """The bytes of `cached` if their sha256 is the one kept in `digest`, else None."""
    try:
        with open(digest, "rb") as f:
            want = f.read().decode().strip()
        with open(cached, "rb") as f:
            data = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    return data if hashlib.sha256(data).hexdigest() == want else None


def _write(path: str, data: bytes | bytearray) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with contextlib.suppress(OSError):  # made before by another: the user's own only
        os.chmod(directory, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def forget() -> None:
    """Drop the components loaded in this process (tests, benchmarks: a cold start)."""
    with _lock:
        _loaded.clear()


def precompile(path: str, *, cache_home: str) -> str:
    """Compile the component at `path` into the cache in smith's cache directory
    `cache_home` (what `smith plugins install` calls, so the first use does not compile);
    "cache" if it was there already, else "compiled"."""
    _, how = load(path, cache_dir(cache_home))
    return "cache" if how == "memory" else how


def cache_dir(cache_home: str) -> str:
    """Where compiled components are kept: `wasm/` in smith's cache directory (the
    setting `cache-home`, $SMITH_CACHE_HOME, default $XDG_CACHE_HOME/smith)."""
    return os.path.join(cache_home, "wasm")
