"""Compiled components, kept so a start after the first does not compile again.

    component, how, problem = load(path, cache_dir, engine, home)   # how: "cache"/"compiled"

The key is sha256 of the module's bytes, wasmtime's version and the engine's settings
(smith.wasm._engine.key), so a changed module, an upgraded wasmtime or other engine
settings compile afresh; the file is `<cache_dir>/<key>.cwasm`, written atomically (a
temporary file renamed over it). A cached file that does not load (truncated, from
another build) is compiled again and replaced. Nothing is kept in the process: each
plugin deserializes its component for its own engine (smith.wasm._engine) and frees
both when it is stopped.

A .cwasm is native code, loaded without wasmtime checking it, so a file is run only
if smith wrote it for that very key: beside it is `<key>.<id>.mac`, an HMAC-SHA256 of
the key and the file's bytes under a secret kept in smith's data directory (the
setting `home`: `wasm-cache.key`, 0600; `<id>` names the secret, so data directories
sharing one cache do not undo each other's). Whoever can write the cache directory
cannot make one that passes (a crafted file, another module's file and MAC copied
under this key): it is compiled again, never run. Without a data directory (a library
caller passing none) the secret is made for the process alone. The directory `wasm/`
itself must be a directory (not a link) of the user's own that no one else can write
(made 0700; group or other write taken off one of the user's own): otherwise, or when
it cannot be made or written (cache-home is a file, read-only), the component is
compiled in memory each time and `problem` says why, once per directory and process.
`cache-home` itself may be a link (to a directory of the user's own elsewhere).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
import tempfile
import threading

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Component

from smith.diagnostics import Diagnostic, DiagnosticKind
from smith.wasm._engine import engine
from smith.wasm._engine import key as engine_key

SECRET_FILE = "wasm-cache.key"  # in smith's data directory
WASM_CACHE = DiagnosticKind(
    "plugin.wasm-cache",
    severity="warning",
    what="compiled plugins are not kept in {path}: {reason}",
    why="a compiled plugin is native code, so it is kept only in a directory of the "
    "user's own that no one else can write; without one, each start compiles it again "
    "(seconds for a Python plugin)",
    fix="make {path} a directory of your own (mode 0700), or point cache-home "
    "(SMITH_CACHE_HOME or --cache-home) at one",
)

_lock = threading.Lock()
_secrets: dict[str, tuple[bytes, str]] = {}  # data directory ("": none) -> (secret, id)
_said: set[str] = set()  # cache directories whose problem was said


def cache_key(module: bytes) -> str:
    digest = hashlib.sha256(module)
    digest.update(b"\0" + engine_key().encode())
    return digest.hexdigest()


def load(
    path: str, cache_dir: str, eng: Engine, home: str | None = None
) -> tuple[Component, str, Diagnostic | None]:
    """The component at `path` for `eng`, taken from the cache or compiled (and kept
    there), where it came from ("cache" or "compiled") and, the first time in this
    process, why the cache could not be used (None when it could). `home`: smith's data
    directory, holding the cache's secret."""
    with open(path, "rb") as f:
        module = f.read()
    key = cache_key(module)
    secret, ident = _secret(home)
    reason = _unusable(cache_dir)
    cached = os.path.join(cache_dir, f"{key}.cwasm")
    mac = os.path.join(cache_dir, f"{key}.{ident}.mac")
    component: Component | None = None
    how = "cache"
    if reason is None:
        data = _checked(cached, mac, key, secret)
        if data is not None:
            with contextlib.suppress(WasmtimeError):
                component = Component.deserialize(eng, data)
    if component is None:
        how = "compiled"
        component = Component(eng, module)
        if reason is None:
            try:
                compiled = bytes(component.serialize())
                _write(cached, compiled)
                _write(mac, _mac(secret, key, compiled).encode())
                with contextlib.suppress(OSError):  # the digest of smith before the MACs
                    os.unlink(os.path.join(cache_dir, f"{key}.sha256"))
            except OSError as exc:
                reason = f"it cannot be written ({exc.strerror or exc})"
    return component, how, _once(cache_dir, reason)


def _mac(secret: bytes, key: str, data: bytes) -> str:
    digest = hmac.new(secret, key.encode() + b"\0", hashlib.sha256)
    digest.update(data)
    return digest.hexdigest()


def _checked(cached: str, mac: str, key: str, secret: bytes) -> bytes | None:
    """The bytes of `cached` if `mac` holds their MAC for `key`, else None."""
    try:
        with open(mac, "rb") as f:
            want = f.read().decode().strip()
        with open(cached, "rb") as f:
            data = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    return data if hmac.compare_digest(_mac(secret, key, data), want) else None


def _unusable(cache_dir: str) -> str | None:
    """Why `cache_dir` may not hold compiled code (None: it may): made 0700 when
    missing; a link, another's directory, or one others can write is refused."""
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        st = os.lstat(cache_dir)
    except OSError as exc:  # a file where a directory must be, no permission
        return f"it cannot be made ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return "it is a link or not a directory"
    if st.st_uid != os.geteuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:  # the user's own: made private (as smith makes it)
        with contextlib.suppress(OSError):
            os.chmod(cache_dir, 0o700)
        with contextlib.suppress(OSError):
            st = os.lstat(cache_dir)
        if st.st_mode & 0o022:
            return f"others can write it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _once(cache_dir: str, reason: str | None) -> Diagnostic | None:
    with _lock:
        if reason is None or cache_dir in _said:
            return None
        _said.add(cache_dir)
    return WASM_CACHE(value=cache_dir, path=cache_dir, reason=reason)


def _secret(home: str | None) -> tuple[bytes, str]:
    """The secret the cache's MACs are made with, and its id: kept in smith's data
    directory `home` (made there once), or made for this process without one (or when
    it cannot be kept)."""
    where = os.path.abspath(home) if home else ""
    with _lock:
        known = _secrets.get(where)
    if known is not None:
        return known
    secret = (_kept_secret(where) if where else None) or os.urandom(32)
    ident = hashlib.sha256(b"smith wasm cache\0" + secret).hexdigest()[:16]
    with _lock:
        return _secrets.setdefault(where, (secret, ident))


def _kept_secret(home: str) -> bytes | None:
    from smith._atomic import private_home

    path = os.path.join(home, SECRET_FILE)
    for _ in range(2):
        with contextlib.suppress(OSError, ValueError):
            with open(path, "rb") as f:
                secret = bytes.fromhex(f.read().decode().strip())
            if len(secret) >= 32:
                return secret
        try:  # made once, never replaced: a smith using it meanwhile keeps its MACs good
            private_home(home)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=home)  # 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(os.urandom(32).hex().encode())
                    f.flush()
                    os.fsync(f.fileno())
                with contextlib.suppress(FileExistsError):  # another made it first
                    os.link(tmp, path)
            finally:
                os.unlink(tmp)
        except OSError:
            return None
    return None


def _write(path: str, data: bytes | bytearray) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(path))
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


def precompile(path: str, *, cache_home: str, home: str | None = None) -> str:
    """Compile the component at `path` into the cache in smith's cache directory
    `cache_home` (what `smith plugins install` calls, so the first use does not compile),
    with the secret of smith's data directory `home`; "cache" if it was there already,
    else "compiled". A cache that cannot be used raises its diagnostic (SmithError)."""
    from smith.diagnostics import SmithError

    _, how, problem = load(path, cache_dir(cache_home), engine(), home)
    if problem is not None:
        raise SmithError(problem)
    return how


def cache_dir(cache_home: str) -> str:
    """Where compiled components are kept: `wasm/` in smith's cache directory (the
    setting `cache-home`, $SMITH_CACHE_HOME, default $XDG_CACHE_HOME/smith)."""
    return os.path.join(cache_home, "wasm")
