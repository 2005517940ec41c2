"""smith's tests. Importing this package (pytest does, before conftest.py and every test
module) turns memory accounting on for the whole run, before smith's modules are
imported, so their guards are live and the allocator hooks run under every test
(SMITH_MEMORY_ACCOUNTING=0 runs the suite without them)."""

import os

from smith import memory

if os.environ.get(memory.ENV, "1").strip().lower() not in ("0", "false", "no", "off"):
    memory.install()
