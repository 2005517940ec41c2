"""The MCP client against servers that misbehave (review 44): a sandboxed server's reach,
a server's own -32000 answers, a changing tool list, a server that will not stop, bad
tool definitions, floods of content, images and stderr."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from smith.effects import ToolContext, ToolError, ToolSpec
from tests.conftest import SmithEnv

PY = sys.executable

# A hand-written JSON-RPC server over stdio: RULES (python) decides what it answers.
RAW = r"""
import json, os, sys, threading, time
MARKS = os.environ["MARKS"]
def mark(name):
    with open(os.path.join(MARKS, name), "a") as f:
        f.write(name + "\n")
mark("starts")
S = {"type": "object", "properties": {}}
TOOLS = [{"name": "ok", "inputSchema": S}]
RESOURCES = None
lock = threading.Lock()
def send(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def answer(m, result):
    send({"jsonrpc": "2.0", "id": m["id"], "result": result})
def text(t):
    return {"content": [{"type": "text", "text": t}]}
def on_call(m, name, args):
    answer(m, text("called " + name))
RULES
caps = {"tools": {"listChanged": True}}
if RESOURCES is not None:
    caps["resources"] = {}
for line in sys.stdin:
    m = json.loads(line)
    meth = m.get("method")
    if meth == "initialize":
        answer(m, {"protocolVersion": m["params"]["protocolVersion"], "capabilities": caps,
                   "serverInfo": {"name": "raw", "version": "1"}})
    elif meth == "tools/list":
        answer(m, {"tools": TOOLS})
    elif meth == "tools/call":
        p = m["params"]
        threading.Thread(target=on_call, args=(m, p["name"], p.get("arguments"))).start()
    elif meth == "resources/list":
        answer(m, {"resources": RESOURCES or []})
    elif meth == "resources/templates/list":
        answer(m, {"resourceTemplates": []})
    elif meth == "resources/read":
        on_read(m)
    elif "id" in m and meth is not None:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"""


def _raw(directory: Path, rules: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "raw_server.py"
    path.write_text(RAW.replace("RULES", textwrap.dedent(rules)))
    return path


class _Running:
    """The plugin's manager over a resolved configuration, outside a runtime."""

    def __init__(self, senv: SmithEnv, project: Path, kdl: str, ctx: ToolContext | None) -> None:
        from smith.config import resolve
        from smith.plugins.mcp._manager import Manager

        senv.write_user_config(kdl)
        config = resolve(env=senv.env, cwd=str(project))
        self.published: list[list[ToolSpec]] = []
        self.ctx = ctx or ToolContext(root=str(project), cwd=str(project))
        self.manager = Manager(config, self.ctx, lambda tools: self.published.append(list(tools)))
        self.manager.begin()

    def tools(self, count: int = 1, timeout: float = 30) -> dict[str, ToolSpec]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = [c for c in self.manager.connections.values() if c.state == "ready"]
            if self.published and len(ready) >= count:
                return {t.name: t for t in self.published[-1]}
            time.sleep(0.05)
        raise AssertionError(f"no tools within {timeout} s: {list(self.manager.notices)}")

    def call(self, spec: ToolSpec, args: dict[str, object]) -> Any:
        return spec.run(self.ctx.for_call(), args)


Start = Callable[..., _Running]


@pytest.fixture
def running() -> Iterator[Start]:
    made: list[_Running] = []

    def make(senv: SmithEnv, project: Path, kdl: str, ctx: ToolContext | None = None) -> _Running:
        made.append(_Running(senv, project, kdl, ctx))
        return made[-1]

    yield make
    for r in made:
        r.manager.close()


def _block(name: str, script: Path, extra: str = "") -> str:
    return f'    server "{name}" command="{PY}" args="{script}" {extra}\n'


def _unsandboxed(name: str, script: Path, marks: Path) -> str:
    return (
        "mcp {\n" + _block(name, script, f'sandbox=false {{ env {{ MARKS "{marks}"; }}; }}') + "}\n"
    )


def _wait(check: Callable[[], bool], timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


# -- 1: a sandboxed server reaches no socket of the host, and not /tmp ------------------

PROBE = r'''
import os, socket, sys
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("probe")
@mcp.tool()
def probe(path: str) -> str:
    """Connect to a unix socket; list the script's folder."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(path)
        got = "CONNECTED"
    except OSError as exc:
        got = f"refused {exc.errno}"
    try:
        seen = sorted(os.listdir(os.path.dirname(os.path.abspath(__file__))))
    except OSError:
        seen = []
    return got + " " + ",".join(seen)
mcp.run()
'''


def _sandbox_ready() -> bool:
    from smith.effects import Sandbox

    return shutil.which("bwrap") is not None and Sandbox().problem() is None


@pytest.mark.skipif(not _sandbox_ready(), reason="bubblewrap and its socket filter needed")
def test_a_sandboxed_server_gets_the_socket_filter_and_only_its_own_script(
    senv: SmithEnv, running: Start, tmp_path: Path
) -> None:
    from smith.effects import Sandbox

    project = senv.make_project()
    place = Path("/tmp") / f"smith-mcp-probe-{os.getpid()}-{tmp_path.name}"
    place.mkdir()
    try:
        script = place / "probe.py"
        script.write_text(PROBE)
        (place / "neighbour.txt").write_text("secret")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(project / "host.sock"))  # the project is seen in the sandbox
        listener.listen(1)
        hidden = (str(senv.root / "data"), str(senv.root / "config"))
        ctx = ToolContext(root=str(project), cwd=str(project), sandbox=Sandbox(hidden=hidden))
        r = running(senv, project, "mcp {\n" + _block("p", script) + "}\n", ctx)
        tools = r.tools()
        said = r.call(tools["mcp_p__probe"], {"path": str(project / "host.sock")}).text
        listener.close()
        assert said.startswith("refused"), said  # socket(AF_UNIX) itself is refused
        assert "neighbour.txt" not in said and "probe.py" in said, said
    finally:
        shutil.rmtree(place, ignore_errors=True)


def test_only_regular_files_are_bound_never_their_folder_nor_a_socket(tmp_path: Path) -> None:
    from smith.plugins.mcp._proc import readable

    place = Path("/tmp") / f"smith-mcp-bind-{os.getpid()}-{tmp_path.name}"
    place.mkdir()
    try:
        (place / "srv.py").write_text("")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(place / "s.sock"))
        wrapped = ["bwrap", "--chdir", "/x", "--", "python3"]
        argv = ["python3", str(place / "srv.py"), str(place), str(place / "s.sock")]
        out = readable(wrapped, argv, ())
        sock.close()
        binds = [out[i + 1] for i, w in enumerate(out) if w == "--ro-bind"]
        assert binds == [str(place / "srv.py")]
    finally:
        shutil.rmtree(place, ignore_errors=True)


# -- 2: a server's own -32000 answer is its error, not a lost connection -----------------

ERR32000 = """
RESOURCES = [{"uri": "db://t", "name": "t"}]
def on_call(m, name, args):
    if name == "query":
        send({"jsonrpc": "2.0", "id": m["id"],
              "error": {"code": -32000, "message": "table not found"}})
    elif name == "slow":
        time.sleep(2)
        answer(m, text("slow done"))
    else:
        answer(m, text("called " + name))
def on_read(m):
    mark("reads")
    send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32000, "message": "busy"}})
TOOLS = [{"name": n, "inputSchema": S} for n in ("query", "slow")]
"""


def test_a_servers_own_32000_answer_is_an_error_result_nothing_torn_down_or_replayed(
    senv: SmithEnv, running: Start
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, ERR32000)
    kdl = _unsandboxed("e", script, marks)
    r = running(senv, project, kdl)
    tools = r.tools()
    slow: list[str] = []
    worker = threading.Thread(target=lambda: slow.append(r.call(tools["mcp_e__slow"], {}).text))
    worker.start()
    time.sleep(0.3)
    with pytest.raises(ToolError) as failed:
        r.call(tools["mcp_e__query"], {})
    assert "table not found" in failed.value.message
    assert failed.value.details.get("diagnostic") != "mcp.lost"
    worker.join(10)
    assert slow == ["slow done"]  # the concurrent call was not killed
    with pytest.raises(ToolError) as busy:
        r.call(tools["mcp_e__read_resource"], {"uri": "db://t"})
    assert "busy" in busy.value.message
    assert (marks / "reads").read_text().count("reads") == 1  # never sent twice
    assert (marks / "starts").read_text().count("starts") == 1
    assert r.manager.connections["e"].state == "ready"


# -- 5: tools/list_changed -----------------------------------------------------------------

CHANGING = """
state = {"n": 0}
def tools():
    names = ["first", "grow"] if state["n"] == 0 else ["grow", "second"]
    return [{"name": n, "inputSchema": S} for n in names]
TOOLS = tools()
def on_call(m, name, args):
    global TOOLS
    if name == "grow":
        state["n"] = 1
        TOOLS = tools()
        answer(m, text("grown"))
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
"""


def test_tools_list_changed_lists_the_tools_again(senv: SmithEnv, running: Start) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, CHANGING)
    kdl = _unsandboxed("c", script, marks)
    r = running(senv, project, kdl)
    tools = r.tools()
    assert "mcp_c__first" in tools and "mcp_c__second" not in tools
    assert r.call(tools["mcp_c__grow"], {}).text == "grown"

    def changed() -> bool:
        return "mcp_c__second" in {t.name for t in r.published[-1]}

    assert _wait(changed, 10)
    names = {t.name for t in r.published[-1]}
    assert "mcp_c__first" not in names and "mcp_c__grow" in names


# -- 21/22: a server that ignores SIGTERM and stdin's end ----------------------------------

STUBBORN = """
import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.path.join(MARKS, "pid"), "w") as f:
    f.write(str(os.getpid()))
_real_stdin = sys.stdin
class _Forever:
    def __iter__(self):
        for line in _real_stdin:
            yield line
        while True:
            time.sleep(1)
sys.stdin = _Forever()
sys.stdout.write("this is no json-rpc\\n"); sys.stdout.flush()
"""


def test_a_server_that_ignores_sigterm_and_eof_dies_when_smith_closes_it(
    senv: SmithEnv, running: Start, capfd: pytest.CaptureFixture[str]
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, STUBBORN)
    kdl = _unsandboxed("s", script, marks)
    r = running(senv, project, kdl)
    r.tools()
    pid = int((marks / "pid").read_text())
    started = time.monotonic()
    r.manager.close()
    assert time.monotonic() - started < 8

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie (reaped later by the SDK's transport) counts as gone
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True)
        return state.stdout.strip().startswith(b"Z")

    assert _wait(gone, 5)
    err = capfd.readouterr().err
    assert "Failed to parse JSONRPC" not in err and "Traceback" not in err
