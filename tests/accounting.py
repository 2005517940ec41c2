"""Memory accounting for the tests that need it, and only them (a pytest plugin that
tests/conftest.py loads).

The suite runs as smith runs by default: accounting off, no allocator hooks. Hooks, once
installed, stay for the life of the process, so a test that needs them is marked
`@pytest.mark.accounting` and, when the hooks are off in the pytest process, runs in a
child pytest with SMITH_MEMORY_ACCOUNTING=1 (tests/__init__.py installs them there
before smith is imported). One child runs every marked test of the session, at the
first one; each reports its own outcome from it, failures with the child's traceback.
With SMITH_MEMORY_ACCOUNTING=1 for the whole run the marked tests run in place.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from smith import memory

MARK = "accounting"
REPORT = "SMITH_TEST_ACCOUNTING_REPORT"  # where a child writes its outcomes (JSON)
OUTCOMES = pytest.StashKey[dict[str, tuple[str, str]]]()
TIMEOUT = 600.0


_CHILD: dict[str, tuple[str, str]] = {}  # in a child: outcome and report of each test


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARK}: needs memory accounting on (runs in a child pytest unless it is)"
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In a child: each test's outcome; a failure in any phase wins over a pass."""
    if not os.environ.get(REPORT):
        return
    known = _CHILD.get(report.nodeid, ("passed", ""))[0]
    if report.failed or (report.skipped and known == "passed"):
        _CHILD[report.nodeid] = (report.outcome, report.longreprtext)
    elif report.when == "call" and report.nodeid not in _CHILD:
        _CHILD[report.nodeid] = ("passed", "")


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(REPORT)
    if target:
        Path(target).write_text(json.dumps(_CHILD))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A marked test, hooks off here: its outcome in the child stands for it."""
    if pyfuncitem.get_closest_marker(MARK) is None or memory.enabled():
        return None
    outcome, text = _child_outcomes(pyfuncitem.session).get(
        pyfuncitem.nodeid, ("failed", "the child pytest reported nothing for this test")
    )
    if outcome == "skipped":
        pytest.skip(f"skipped with accounting on: {text}")
    if outcome != "passed":
        pytest.fail(f"failed with memory accounting on (in a child pytest):\n{text}", False)
    return True


def _child_outcomes(session: pytest.Session) -> dict[str, tuple[str, str]]:
    found = session.stash.get(OUTCOMES, None)
    if found is not None:
        return found
    marked = [item.nodeid for item in session.items if item.get_closest_marker(MARK)]
    with tempfile.TemporaryDirectory(prefix="smith-accounting-") as scratch:
        report = os.path.join(scratch, "outcomes.json")
        env = {**os.environ, memory.ENV: "1", REPORT: report}
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *marked],
            cwd=session.config.rootpath,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        if os.path.exists(report):
            raw = json.loads(Path(report).read_text())
            found = {k: (str(v[0]), str(v[1])) for k, v in raw.items()}
        else:
            tail = (child.stdout + child.stderr)[-3000:]
            reason = f"the child pytest exited {child.returncode} without a report:\n{tail}"
            found = {nodeid: ("failed", reason) for nodeid in marked}
    session.stash[OUTCOMES] = found
    return found
