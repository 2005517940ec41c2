"""Resolving configuration against its baseline: parsing the same KDL with kdl-py alone.

Uncached, smith's resolve adds positions, typing, the schema check and seven layers to
the parse; cached (the usual case: the file did not change), it skips kdl entirely.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import timeit

import kdl

from smith.config import resolve

USER_CONFIG = """\
// a typical user file
model "claude-sonnet-4" {
    temperature 0.3
    max-tokens 8192
}
thinking "medium"
agent.max-iterations 80
tools {
    bash timeout=300
    read max-lines=4000 max-bytes=0x20000
}
vcs {
    enabled true
    max-file-size 20_000_000
}
"""


class Resolve:
    def setup(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="smith-bench-")
        config_home = os.path.join(self.dir, "config")
        os.makedirs(config_home)
        with open(os.path.join(config_home, "config.kdl"), "w") as f:
            f.write(USER_CONFIG)
        self.env = {
            "HOME": self.dir,
            "SMITH_CONFIG_HOME": config_home,
            "SMITH_HOME": os.path.join(self.dir, "data"),
        }

        self.cache = os.path.join(self.env["SMITH_HOME"], "cache")
        resolve(env=self.env, cwd=self.dir)  # warm: imports; leaves a cache entry

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _uncached(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)
        resolve(env=self.env, cwd=self.dir)

    def _cached(self) -> None:
        resolve(env=self.env, cwd=self.dir)

    def _ratio(self, ours: object) -> float:
        base = min(timeit.repeat(lambda: kdl.parse(USER_CONFIG), number=50, repeat=5))
        return min(timeit.repeat(ours, number=50, repeat=5)) / base  # type: ignore[arg-type]

    def time_kdl_parse_baseline(self) -> None:
        kdl.parse(USER_CONFIG)

    def time_resolve_uncached(self) -> None:
        self._uncached()

    def time_resolve_cached(self) -> None:
        self._cached()

    def track_resolve_uncached_over_kdl_parse(self) -> float:
        return self._ratio(self._uncached)

    def track_resolve_cached_over_kdl_parse(self) -> float:
        return self._ratio(self._cached)

    track_resolve_uncached_over_kdl_parse.unit = "x kdl.parse"  # type: ignore[attr-defined]
    track_resolve_cached_over_kdl_parse.unit = "x kdl.parse"  # type: ignore[attr-defined]


def large_config(nodes: int = 10_000) -> str:
    """A configuration of `nodes` nodes, each with a value and most with a position deep
    in the file: the size at which a reader that rescans the text for every position
    (quadratic) takes minutes."""
    return "".join(
        f'catalog.m{i}.context-window {i}\nplugins {{ p{i} {{ key "v{i}" n={i}; }}; }}\n'
        for i in range(nodes // 4)
    )


class ParseLarge:
    """smith's reader (values with positions, for diagnostics and in-place edits) against
    kdl-py parsing the same 10,000-node text: the ratio stays near 1 when reading is
    linear, and grows with the file when it is not."""

    def setup(self) -> None:
        self.text = large_config()

    def time_kdl_parse_large(self) -> None:
        kdl.parse(self.text)

    def time_read_settings_large(self) -> None:
        from smith.config._kdl import read_settings

        read_settings("config.kdl", self.text)

    def track_read_settings_over_kdl_parse(self) -> float:
        return parse_ratio(self.text)

    track_read_settings_over_kdl_parse.unit = "x kdl.parse"  # type: ignore[attr-defined]


def parse_ratio(text: str) -> float:
    """smith's reader over kdl-py on `text`, best of three each, interleaved."""
    from smith.config._kdl import read_settings

    base: list[float] = []
    ours: list[float] = []
    for _ in range(3):
        base += timeit.repeat(lambda: kdl.parse(text), number=1, repeat=1)
        ours += timeit.repeat(lambda: read_settings("c", text), number=1, repeat=1)
    return min(ours) / min(base)
