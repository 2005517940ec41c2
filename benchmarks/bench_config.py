"""Resolving configuration against its baseline: parsing the same KDL with kdl-py alone.

smith's resolve adds positions, typing, the schema check and seven layers; the ratio says
what that costs over the bare parse.
"""

from __future__ import annotations

import os
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

        resolve(env=self.env, cwd=self.dir)  # warm: imports, first-use caches

    def time_kdl_parse_baseline(self) -> None:
        kdl.parse(USER_CONFIG)

    def time_resolve(self) -> None:
        resolve(env=self.env, cwd=self.dir)

    def track_resolve_over_kdl_parse(self) -> float:
        base = min(timeit.repeat(lambda: kdl.parse(USER_CONFIG), number=50, repeat=5))
        ours = min(timeit.repeat(lambda: resolve(env=self.env, cwd=self.dir), number=50, repeat=5))
        return ours / base

    track_resolve_over_kdl_parse.unit = "x kdl.parse"  # type: ignore[attr-defined]
