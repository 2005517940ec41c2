"""Quick comparison without asv: each figure against its baseline, measured now.

python benchmarks/compare.py
SMITH_BENCH_BASE=HEAD~1 python benchmarks/compare.py   # protocol figures against HEAD~1
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import (
    bench_cbor,
    bench_complete,
    bench_config,
    bench_editor,
    bench_memory,
    bench_packages,
    bench_protocol,
    bench_resume,
    bench_runtime,
    bench_sandbox,
    bench_session,
    bench_sessions_show,
    bench_skills,
    bench_sse,
    bench_startup,
    bench_tools,
    bench_tui,
    bench_tui_idle,
    bench_vcs,
    bench_vcs_latest,
)
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
    large = bench_config.large_config()
    print(
        f"config parse     {bench_config.parse_ratio(large):.2f}x kdl.parse for 10,000 nodes "
        "(values with positions)"
    )
    ours, cbor2 = bench_cbor.encode_times()
    print(
        f"cbor encode      {ours * 1e3:.2f} ms per 1,000 entries: "
        f"{cbor2 / ours:.1f}x faster than cbor2 canonical ({cbor2 * 1e3:.1f} ms)"
    )
    f = bench_session.figures()
    print(
        f"session load     {f['load_ms']:.0f} ms for 100k entries: {f['orjson_over_load']:.1f}x "
        f"faster than orjson over JSONL, {f['load_over_read']:.2f}x a bare read(), arena "
        f"{f['arena_over_payload']:.2f}x the decompressed payload"
    )
    print(
        f"session fork     {f['fork_ms'] * 1e3:.1f} us in memory at the last of 100k entries; "
        f"its file's bytes {f['fork_file_ms']:.1f} ms"
    )
    print(bench_resume.line(bench_resume.figures()))
    print(bench_sessions_show.line(bench_sessions_show.figures()))
    print(bench_startup.command_line(bench_startup.command_figures()))
    t = bench_tools.figures()
    print(
        f"tools search     grep {t['grep_over_rg']:.2f}x (a common pattern "
        f"{t['grep_common_over_rg']:.2f}x) and find {t['find_over_rg']:.2f}x rg run directly "
        "on a copy of the standard library"
    )
    r = bench_runtime.figures()
    print(
        f"runtime turn     {r['turn_ms']:.2f} ms per tool-using turn, "
        f"{r['events_per_s']:,.0f} events/s; the bare scripted stream takes "
        f"{r['stream_turn_ms'] * 1e3:.0f} us ({r['over_stream']:.0f}x)"
    )
    e = bench_sse.figures()
    print(
        f"sse parse        {e['ms_16k']:.2f} ms for 2,000 events in 16 KiB chunks: "
        f"{e['speedup_16k']:.1f}x the naive parser (1 KiB chunks {e['speedup_1k']:.1f}x, "
        f"an event per chunk {e['speedup_per_event']:.1f}x)"
    )
    print(bench_protocol.line(bench_protocol.figures()))
    print(bench_tui.line(bench_tui.figures()))
    print(bench_tui_idle.line(bench_tui_idle.figures()))
    print(bench_editor.line(bench_editor.figures()))
    print(bench_complete.line(bench_complete.figures()))
    print(bench_vcs.line(bench_vcs.figures()))
    print(bench_vcs_latest.line(bench_vcs_latest.figures()))
    print(bench_memory.line(bench_memory.figures()))
    print(bench_sandbox.line(bench_sandbox.figures()))
    print(bench_skills.line(bench_skills.figures()))
    print(bench_packages.line(bench_packages.figures()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
