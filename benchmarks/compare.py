"""Quick comparison without asv: each figure against its baseline, measured now.

python benchmarks/compare.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_config
from benchmarks._measure import startup_ratio


def main() -> int:
    for args in (["--help"], ["--version"]):
        ms, bare, ratio = startup_ratio(args, repeat=21)
        print(f"smith {args[0]:<10} {ms:6.1f} ms   bare python {bare:5.1f} ms   {ratio:.2f}x")
    bench = bench_config.Resolve()
    bench.setup()
    uncached = bench.track_resolve_uncached_over_kdl_parse()
    cached = bench.track_resolve_cached_over_kdl_parse()
    bench.teardown()
    print(
        f"config resolve   {uncached:.2f}x kdl.parse of the same file uncached, "
        f"{cached:.2f}x cached"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
