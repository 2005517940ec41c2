"""A small JSON-RPC client over a real `smith rpc` process, for the RPC tests.

Every stdout line is parsed as it arrives (a line that is not JSON fails the test);
responses are matched by id, notifications kept in order in `events`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import SmithEnv, smith_executable

TIMEOUT = 20.0


class Rpc:
    def __init__(self, senv: SmithEnv, cwd: Path, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [smith_executable(), "rpc", *args],
            cwd=cwd,
            env={**senv.env, **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.records: list[Any] = []  # everything on stdout, in order
        self.events: list[dict[str, Any]] = []  # the params of `event` notifications
        self._answers: dict[object, Any] = {}
        self._lines: queue.Queue[Any] = queue.Queue()
        self._next = 0
        self._err: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._err_reader = threading.Thread(
            target=lambda: self._err.extend(self.proc.stderr or ()), daemon=True
        )
        self._err_reader.start()

    def __enter__(self) -> Rpc:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.release()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            assert raw.endswith(b"\n")
            self._lines.put(json.loads(raw))  # not JSON: the test fails in pump()
        self._lines.put(None)

    def pump(self, until: Any, timeout: float = TIMEOUT) -> Any:
        """Read records until `until(record)` holds; that record."""
        end = time.monotonic() + timeout
        while True:
            try:
                record = self._lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no such record within {timeout} s") from None
            if record is None:
                raise AssertionError("smith rpc closed its output")
            self.records.append(record)
            if isinstance(record, dict) and record.get("method") == "event":
                self.events.append(record["params"])
            elif isinstance(record, dict) and "id" in record:
                self._answers[record["id"]] = record
            if until(record):
                return record

    def send_raw(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() if isinstance(line, str) else line)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(json.dumps(message) + "\n")
        return self._next

    def answer(self, id: object, timeout: float = TIMEOUT) -> Any:
        if id not in self._answers:
            self.pump(lambda r: isinstance(r, dict) and r.get("id") == id, timeout)
        return self._answers.pop(id)

    def call(self, method: str, params: Any = None) -> Any:
        """The result of a request; fails on an error response."""
        answer = self.answer(self.request(method, params))
        assert "error" not in answer, answer
        return answer["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        answer = self.answer(self.request(method, params))
        assert "result" not in answer, answer
        error: dict[str, Any] = answer["error"]
        return error

    def event(self, type: str, **fields: Any) -> dict[str, Any]:
        """The first event of `type` (with those fields) seen so far or from now on."""

        def match(ev: dict[str, Any]) -> bool:
            return ev.get("type") == type and all(ev.get(k) == v for k, v in fields.items())

        for ev in self.events:
            if match(ev):
                return ev
        found = self.pump(lambda r: r.get("method") == "event" and match(r["params"]))
        params: dict[str, Any] = found["params"]
        return params

    def close(self) -> tuple[int, str]:
        """Shut down (if still running); the exit status and stderr."""
        if self.proc.poll() is None:
            with contextlib.suppress(AssertionError, BrokenPipeError):
                self.call("shutdown")
        try:
            code = self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("smith rpc did not exit") from None
        finally:
            self.release()
        return code, self.stderr()

    def release(self) -> None:
        """Close our ends of the pipes (the readers end with the process)."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()

    def stderr(self) -> str:
        """What smith wrote to stderr (all of it, once the process has exited)."""
        if self.proc.poll() is not None:
            self._err_reader.join(TIMEOUT)
        return b"".join(self._err).decode()


def texts_of(message: dict[str, Any], channel: str = "text") -> str:
    kind = "thinking" if channel == "thinking" else "text"
    return "".join(p.get("text", "") for p in message["content"] if p.get("type") == kind)


def script(senv: SmithEnv, responses: list[dict[str, Any]], **top: Any) -> str:
    path = senv.root / f"script-{len(list(senv.root.glob('script-*')))}.json"
    path.write_text(json.dumps({"responses": responses, **top}))
    return f"scripted:{path}"
