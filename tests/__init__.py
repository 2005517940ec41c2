"""smith's tests. They run as smith runs by default: memory accounting off, no allocator
hooks. The tests that need accounting are marked `accounting` and run in a child pytest
with it on (tests/accounting.py); SMITH_MEMORY_ACCOUNTING=1 runs the whole suite with it
on, and then importing this package (pytest does, before conftest.py and every test
module) installs the hooks before smith's modules are imported, so their guards are live."""

import os

from smith import memory

if os.environ.get(memory.ENV, "").strip().lower() in ("1", "true", "yes", "on"):
    memory.install()
