"""`smith plugins build [DIR]`: a package's sources to the WebAssembly component its
plugin.kdl names (`module`, "plugin.wasm" when it names none, then written in), offline,
with toolchains from PyPI (the `plugins` extra) or Debian:

- python: componentize-py (`-d wit -w plugin componentize --stub-wasi`: every WASI
  import a trapping stub, so the plugin has no ambient authority) from `app.py`;
- c: `python -m ziglang cc --target=wasm32-wasi -mexec-model=reactor` (or Debian's clang
  with wasi-libc) over the package's `.c` files and the generated sdk/smith_plugin.c,
  then _wrap makes the core module a component;
- zig: the header translated to sdk/smith_plugin.zig (`zig translate-c`), then
  `zig build-exe plugin.zig` with sdk/smith_plugin.c and any `.c` files, then _wrap.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from smith.diagnostics import DiagnosticKind, Source
from smith.wasm._cgen import HEADER, SOURCE, c_bindings
from smith.wasm._wit import WIT_DIR, WIT_FILE, wit_world
from smith.wasm._wrap import WrapError, wrap

LANGS = ("python", "c", "zig")
ZIG_ROOT = "plugin.zig"  # the root source file of a Zig plugin
DEFAULT_MODULE = "plugin.wasm"
PYTHON_APP = "app"  # app.py: the module componentize-py builds
SDK_DIR = "sdk"  # where the C bindings are written in a package
_SKIP = {".git", "__pycache__", SDK_DIR, ".zig-cache", "zig-cache", "build"}
_TIMEOUT = 600.0
# componentize-py's command line, run by this Python (its script may not be on PATH).
_LAUNCHER = (
    "import sys; from componentize_py import script; "
    "sys.argv[0] = 'componentize-py'; sys.exit(script())"
)

BUILD_NO_MANIFEST = DiagnosticKind(
    "plugin.build-no-manifest",
    what="{where} has no plugin.kdl, so there is no package to build",
    why="`smith plugins build` builds the package whose plugin.kdl is in the directory given "
    "(or the current one)",
    fix="run it in a package directory, or make one with `smith plugins new NAME`",
)
BUILD_UNKNOWN_LANG = DiagnosticKind(
    "plugin.build-language",
    what="plugin.kdl's build is {lang}, which `smith plugins build` does not know",
    why="smith builds plugins written in {langs}",
    fix='set `build "python"`, `build "c"` or `build "zig"` in {where}',
)
BUILD_NO_SOURCE = DiagnosticKind(
    "plugin.build-no-source",
    what="{where} has no {wanted} to build",
    why="a {lang} plugin is built from {wanted}",
    fix="add it (`smith plugins new NAME --lang {lang}` shows one)",
)
TOOLCHAIN_MISSING = DiagnosticKind(
    "plugin.toolchain-missing",
    what="the {lang} toolchain ({tool}) is not installed",
    why="`smith plugins build` compiles {lang} plugins to WebAssembly with it, offline",
    fix="pip install 'smith-agent[plugins]' (or: pip install {package})",
)
BUILD_FAILED = DiagnosticKind(
    "plugin.build-failed",
    what="{tool} could not build {where}: {detail}",
    why="the plugin's source did not compile to a WebAssembly component",
    fix="fix the error above in the plugin's source and run `smith plugins build` again",
)
BUILD_MODULE_OUTSIDE = DiagnosticKind(
    "plugin.module-outside",
    what="plugin.kdl's module {module} is outside the package {where}",
    why="a package's component lives inside its directory",
    fix='name a path inside the package, such as `module "plugin.wasm"`',
)
BUILD_MODULE_CLASH = DiagnosticKind(
    "plugin.module-clash",
    what="plugin.kdl's module {module} ({where}) {problem}",
    why="`smith plugins build` writes the built component at that path, so it must be a new "
    "file of its own ending in .wasm, not the package, a directory, plugin.kdl, a source the "
    "build reads or the generated sdk/",
    fix='name a file such as `module "plugin.wasm"` in {where}',
)


def build_package(
    directory: str | os.PathLike[str],
    say: Callable[[str], None] = lambda _: None,
    *,
    cache_home: str = "",
) -> Path:
    """Build the package in `directory`; returns the path of the component written.
    `cache_home`: smith's cache directory, where zig keeps its caches (`zig/`: its C
    library, built once); "" leaves them where zig's own settings put them."""
    root = Path(directory).resolve()
    manifest = root / "plugin.kdl"
    if not manifest.is_file():
        raise BUILD_NO_MANIFEST.error(
            value=str(root), source=Source("argument", str(root)), where=str(root)
        )
    from smith.packages import read_package

    package = read_package(str(root))  # its diagnostics (ConfigError) name plugin.kdl:line
    text = manifest.read_text(encoding="utf-8")
    lang = package.build or None
    if lang is None:
        lang = (
            "python"
            if (root / f"{PYTHON_APP}.py").is_file()
            else "zig"
            if (root / ZIG_ROOT).is_file()
            else "c"
            if _c_sources(root)
            else ""
        )
    if lang not in LANGS:
        raise BUILD_UNKNOWN_LANG.error(
            value=lang,
            source=Source("file", str(manifest)),
            lang=repr(lang),
            langs=" and ".join(LANGS),
            where=str(manifest),
        )
    module = package.module or None
    out = _module_path(root, manifest, module)
    started = time.perf_counter()
    if lang != "python":
        write_c_bindings(root)  # written again even when up to date: they cannot drift
    stamp = out.with_name(f".{out.name}.source")
    digest = _source_digest(root, lang, out)
    if out.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        out.touch()  # what was built from these very sources: up to date
        say(f"{out} is up to date (its sources did not change)")
        return out
    if lang == "python":
        data = _python(root, say)
    else:
        env = zig_environment(cache_home)
        data = (_c if lang == "c" else _zig)(root, say, env)
    tmp = out.with_name(f".{out.name}.tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(data)
    os.replace(tmp, out)
    if module is None:
        sep = "" if text.endswith("\n") or not text else "\n"
        manifest.write_text(f'{text}{sep}module "{DEFAULT_MODULE}"\n', encoding="utf-8")
        digest = _source_digest(root, lang, out)
    stamp.write_text(digest, encoding="utf-8")
    say(f"built {out} ({len(data) / 1e6:.1f} MB, {time.perf_counter() - started:.1f} s)")
    return out


def _module_path(root: Path, manifest: Path, module: str | None) -> Path:
    """Where the component is written: `module` inside the package, refused when writing it
    would replace the package's own files (the manifest, a source, the sdk/ the build
    writes, a directory)."""
    out = (root / (module or DEFAULT_MODULE)).resolve()
    if not out.is_relative_to(root):
        raise BUILD_MODULE_OUTSIDE.error(
            value=module, source=Source("file", str(manifest)), module=repr(module), where=str(root)
        )
    rel = out.relative_to(root)
    problem = (
        "is the package directory itself"
        if out == root
        else "is a directory"
        if out.is_dir()
        else "is the manifest itself"
        if rel == Path("plugin.kdl")
        else f"is inside {rel.parts[0]}/, which the build writes or skips"
        if rel.parts[0] in _SKIP
        else "does not end in .wasm (it would replace a file of the package)"
        if out.suffix != ".wasm" or Path(module or DEFAULT_MODULE).suffix != ".wasm"
        else None
    )
    if problem:
        raise BUILD_MODULE_CLASH.error(
            value=module,
            source=Source("file", str(manifest)),
            module=repr(module or DEFAULT_MODULE),
            where=str(manifest),
            problem=problem,
        )
    return out


def _source_digest(root: Path, lang: str, out: Path) -> str:
    """A digest of what a build reads: the package's files (not what builds write), the
    WIT, smith's version and the toolchain's, so an unchanged package is not built again."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    from smith._version import __version__

    h = hashlib.sha256(f"{lang}\0{__version__}\0".encode())
    for dist in ("componentize-py", "ziglang", "wasmtime"):
        try:
            h.update(f"{dist}={version(dist)}\0".encode())
        except PackageNotFoundError:
            h.update(f"{dist}=none\0".encode())
    h.update(WIT_FILE.read_bytes())
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        skipped = set(rel.parts) & _SKIP or path.name.endswith((".wasm", ".tmp", ".source"))
        if path.is_file() and not skipped and path != out:
            h.update(f"{rel}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()


def _run(
    args: list[str], *, tool: str, where: Path, cwd: str, say: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> None:  # fmt: skip
    _output(args, tool=tool, where=where, cwd=cwd, say=say, env=env)


_SHOWN = 40  # lines of a tool's diagnostics shown at most


def _tool_text(text: str, root: Path, cwd: str) -> str:
    """A tool's diagnostics as the author reads them: componentize-py's own message (not
    its launcher's traceback nor its Rust backtrace), the paths of the package's files
    (componentize-py names them /0/FILE, the compilers the build's scratch copy)."""
    text = text.split("Stack backtrace:", 1)[0]
    lines = text.splitlines()
    if lines and lines[0].startswith("Traceback (most recent call last):"):
        lines = lines[1:]  # the launcher's `python -c`, not the plugin's
        while lines and lines[0].startswith('  File "<string>"'):
            lines = lines[1:]
    text = "\n".join(lines)
    for prefix in ("AssertionError: ", "Error: "):
        text = text.removeprefix(prefix)
    for scratch in (f"{cwd}/src/", f"{cwd}/", '"/0/'):
        text = text.replace(scratch, f'"{root}/' if scratch.startswith('"') else f"{root}/")
    lines = [x.rstrip() for x in text.strip().splitlines()]
    kept = [x for i, x in enumerate(lines) if x or (i and lines[i - 1])]  # no blank runs
    if len(kept) > _SHOWN:
        kept = [*kept[:_SHOWN], f"... ({len(kept) - _SHOWN} more lines)"]
    return "\n".join(kept)


def _output(
    args: list[str], *, tool: str, where: Path, cwd: str, say: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> str:  # fmt: skip
    """What `args` printed on stdout; a diagnostic naming `tool` (with the tool's own
    diagnostics) when it failed; its warnings said through `say` when it did not."""
    try:
        r = subprocess.run(
            args, check=False, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT, env=env
        )
    except subprocess.TimeoutExpired as exc:
        raise BUILD_FAILED.error(
            value=str(where),
            tool=tool,
            where=str(where),
            detail=f"it did not finish in {exc.timeout:.0f} s",
        ) from exc
    if r.returncode != 0:
        detail = _tool_text(r.stderr.strip() or r.stdout, where, cwd) or f"exit {r.returncode}"
        raise BUILD_FAILED.error(value=str(where), tool=tool, where=str(where), detail=detail)
    if say is not None and r.stderr.strip():
        say(f"{tool} warned:\n{_tool_text(r.stderr, where, cwd)}")
    return r.stdout


def _python(root: Path, say: Callable[[str], None]) -> bytes:
    if not (root / f"{PYTHON_APP}.py").is_file():
        raise BUILD_NO_SOURCE.error(
            value=str(root), where=str(root), wanted=f"{PYTHON_APP}.py", lang="python"
        )
    if importlib.util.find_spec("componentize_py") is None:
        raise TOOLCHAIN_MISSING.error(
            lang="python", tool="componentize-py", package="componentize-py"
        )
    say("building with componentize-py (a Python plugin takes a few seconds)")
    with tempfile.TemporaryDirectory(prefix="smith-build-") as tmp:
        src = Path(tmp) / "src"
        # Only the sources: componentize-py bundles what its path holds.
        shutil.copytree(root, src, ignore=lambda d, names: [
            n for n in names if n in _SKIP or n.endswith((".wasm", ".tmp"))
        ])  # fmt: skip
        out = Path(tmp) / "out.wasm"
        wit = ["-d", str(WIT_DIR), "-w", wit_world().name]
        build = ["componentize", "-p", str(src), "--stub-wasi", PYTHON_APP, "-o", str(out)]
        args = [sys.executable, "-c", _LAUNCHER, *wit, *build]
        _run(args, tool="componentize-py", where=root, cwd=tmp)
        return out.read_bytes()


def _c_sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.c") if not (set(p.relative_to(root).parts[:-1]) & _SKIP))


def write_c_bindings(root: Path) -> Path:
    """Write the generated sdk/smith_plugin.h and .c into a package; returns sdk/."""
    sdk = root / SDK_DIR
    sdk.mkdir(exist_ok=True)
    for name, text in c_bindings(wit_world()).items():
        path = sdk / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return sdk


def c_compiler() -> list[str] | None:
    """The command compiling C to wasm32-wasi: the ziglang package's clang, else Debian's
    clang with wasi-libc (/usr/share/wasi-sysroot), else None."""
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang", "cc", "--target=wasm32-wasi"]
    clang = shutil.which("clang")
    if clang and Path("/usr/share/wasi-sysroot").is_dir():
        return [clang, "--target=wasm32-wasi", "--sysroot=/usr/share/wasi-sysroot"]
    return None


def zig_environment(cache_home: str) -> dict[str, str] | None:
    """The environment zig runs in: its global cache under smith's cache directory, made
    private as smith's directories are (None: this process's, as it is)."""
    if not cache_home:
        return None
    cache = os.path.join(cache_home, "zig")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    return {**os.environ, "ZIG_GLOBAL_CACHE_DIR": cache}


def _c(root: Path, say: Callable[[str], None], env: dict[str, str] | None = None) -> bytes:
    sources = _c_sources(root)
    if not sources:
        raise BUILD_NO_SOURCE.error(value=str(root), where=str(root), wanted="a .c file", lang="c")
    cc = c_compiler()
    if cc is None:
        raise TOOLCHAIN_MISSING.error(
            lang="C", tool="zig cc, or clang with wasi-libc", package="ziglang"
        )
    sdk = write_c_bindings(root)
    say(f"compiling {len(sources)} C file(s) with {'zig cc' if 'ziglang' in cc else 'clang'}")
    with tempfile.TemporaryDirectory(prefix="smith-build-") as tmp:
        core = Path(tmp) / "core.wasm"
        args = [*cc, "-mexec-model=reactor", "-O2", "-s", "-Wall", "-I", str(sdk),
                *map(str, sources), str(sdk / SOURCE), "-o", str(core)]  # fmt: skip
        _run(args, tool="the C compiler", where=root, cwd=tmp, say=say, env=env)
        return _wrapped(root, core)


def _wrapped(root: Path, core: Path) -> bytes:
    """The component of the core module a C or Zig build wrote at `core`."""
    try:
        return wrap(wit_world(), core.read_bytes())
    except WrapError as exc:
        raise BUILD_FAILED.error(
            value=str(root), tool="smith's component wrapper", where=str(root), detail=str(exc)
        ) from exc


def _zig(root: Path, say: Callable[[str], None], env: dict[str, str] | None = None) -> bytes:
    if not (root / ZIG_ROOT).is_file():
        raise BUILD_NO_SOURCE.error(value=str(root), where=str(root), wanted=ZIG_ROOT, lang="zig")
    if importlib.util.find_spec("ziglang") is None:
        raise TOOLCHAIN_MISSING.error(lang="Zig", tool="the ziglang package", package="ziglang")
    sdk = write_c_bindings(root)
    zig = [sys.executable, "-m", "ziglang"]
    say("compiling with zig (its first run on a machine builds its caches: about a minute)")
    with tempfile.TemporaryDirectory(prefix="smith-build-") as tmp:
        translate = [*zig, "translate-c", "-target", "wasm32-wasi", "-lc", str(sdk / HEADER)]
        translated = _output(translate, tool="zig translate-c", where=root, cwd=tmp, env=env)
        binding = sdk / "smith_plugin.zig"
        if not binding.is_file() or binding.read_text(encoding="utf-8") != translated:
            binding.write_text(translated, encoding="utf-8")
        core = Path(tmp) / "core.wasm"
        args = [*zig, "build-exe", str(root / ZIG_ROOT), *map(str, _c_sources(root)),
                str(sdk / SOURCE), "-I", str(sdk), "-target", "wasm32-wasi", "-fno-entry",
                "-rdynamic", "-lc", "-O", "ReleaseSmall", "-mexec-model=reactor",
                f"-femit-bin={core}"]  # fmt: skip
        _run(args, tool="zig", where=root, cwd=tmp, say=say, env=env)
        return _wrapped(root, core)
