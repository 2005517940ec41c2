"""What building a plugin costs (smith.wasm: `smith plugins new` + `smith plugins build`):
for each toolchain (python: componentize-py; c: zig cc; zig: zig build-exe), the build
of a fresh scaffold, the build of the same unchanged package (up to date: a digest of
its sources), the component's size and how long wasmtime takes to compile it (what the
first load of a plugin pays before the host's cache has it). zig's own caches are warm
unless ZIG_GLOBAL_CACHE_DIR points at an empty directory (then the C and Zig figures are
the first build on a machine).

    python benchmarks/bench_wasm_build.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(lang: str, where: Path) -> dict[str, float]:
    import wasmtime
    import wasmtime.component as wc

    from smith.wasm import build_package, scaffold

    root = scaffold(f"bench-{lang}", lang, where)
    start = time.perf_counter()
    module = build_package(root)
    built = time.perf_counter() - start
    start = time.perf_counter()
    build_package(root)
    cached = time.perf_counter() - start
    start = time.perf_counter()
    wc.Component.from_file(wasmtime.Engine(), str(module))
    compiled = time.perf_counter() - start
    return {"build_s": built, "cached_ms": cached * 1000, "size_kb": module.stat().st_size / 1024,
            "compile_ms": compiled * 1000}  # fmt: skip


def main() -> None:
    from tests.wasm_sdk_fixtures import have_toolchain

    with tempfile.TemporaryDirectory(prefix="bench-wasm-build-") as tmp:
        for lang in ("python", "c", "zig"):
            if not have_toolchain(lang):
                print(f"{lang}: no toolchain (pip install 'smith-agent[plugins]')")
                continue
            m = measure(lang, Path(tmp))
            print(
                f"{lang:6} build {m['build_s']:6.2f} s   up to date {m['cached_ms']:6.1f} ms   "
                f"component {m['size_kb']:9.1f} KiB   compile {m['compile_ms']:8.1f} ms"
            )


if __name__ == "__main__":
    main()
