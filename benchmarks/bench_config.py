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
