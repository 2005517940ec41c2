"""The sandbox probe started early (smith.cli._early) runs once, and its answer is the
one the command then gets."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

import smith._spawn
from smith.cli._early import probe_sandbox
from smith.effects import _sandbox


def test_the_early_probe_is_the_only_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real = smith._spawn.run_child

    def counting(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
        calls.append(argv)
        return real(argv, **kw)

    monkeypatch.setattr(smith._spawn, "run_child", counting)
    monkeypatch.setattr(_sandbox, "_bwrap", lambda: "/bin/sh")  # any program: `sh ... true`
    _sandbox.unavailable.cache_clear()
    try:
        probe_sandbox()()
        assert len(calls) == 1
        first = _sandbox.unavailable()
        assert _sandbox.unavailable() == first and len(calls) == 1
    finally:
        _sandbox.unavailable.cache_clear()


def test_a_failing_probe_is_reported_on_the_main_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
        raise OSError("no such program")

    monkeypatch.setattr(smith._spawn, "run_child", broken)
    monkeypatch.setattr(_sandbox, "_bwrap", lambda: "/nonexistent/bwrap")
    _sandbox.unavailable.cache_clear()
    try:
        probe_sandbox()()  # no exception escapes the thread
        why = _sandbox.unavailable()
        assert why is not None and "could not be run (no such program)" in why[0]
    finally:
        _sandbox.unavailable.cache_clear()
