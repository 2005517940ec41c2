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


# -- 6, 7: content joined in linear time, bounded; images checked -------------------------


class _Counted(str):
    """A text that counts how often its length is asked."""

    asked = 0

    def __len__(self) -> int:
        _Counted.asked += 1
        return str.__len__(self)


class _Block:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class _Boom:
    @property
    def type(self) -> str:
        raise AssertionError("a block past the bound was looked at")


def test_content_is_joined_in_linear_time_and_not_read_past_the_bound() -> None:
    from smith.plugins.mcp._adapt import joined

    _Counted.asked = 0
    blocks = [_Block(type="text", text=_Counted("x")) for _ in range(3000)]
    text, image = joined(blocks)
    assert text == "\n".join("x" * 3000) and image is None
    assert _Counted.asked <= 2 * 3000  # each length asked a bounded number of times
    many = [_Block(type="text", text="y" * 100) for _ in range(20)] + [_Boom()]
    cut, _ = joined(many, limit=1000)
    assert cut.endswith("\n[cut]") and len(cut) <= 1000 + len("\n[cut]")


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a1e3c2d80000000049454e44ae426082"
)


def test_images_are_checked_as_attached_images_are() -> None:
    import base64

    from smith.plugins.mcp._adapt import joined

    def image(data: bytes | str, mime: str) -> _Block:
        text = data if isinstance(data, str) else base64.b64encode(data).decode()
        return _Block(type="image", data=text, mime_type=mime)

    html = image(b"<script>alert(1)</script>", "text/html")
    disguised = image(PNG, "text/html")
    garbage = image("!!!!", "image/png")
    big = image(PNG + b"\0" * 4000, "image/png")
    for block in (html, disguised, garbage, big):
        text, got = joined([block], image_bytes=1000)
        assert got is None and "left out" in text, text
    text, got = joined([html, image(PNG, "image/png")], image_bytes=1000)
    assert got == ("image/png", PNG) and "[image image/png]" in text


# -- 8: bad tool definitions, too many tools -----------------------------------------------

BAD_TOOLS = """
TOOLS = [
    {"name": "ok", "inputSchema": S},
    {"name": "badschema",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}},
    {"name": "noschema"},
    {"name": 5, "inputSchema": S},
] + [{"name": "big%d" % i, "description": "D" * 5000, "inputSchema": S} for i in range(100)]
"""


def test_bad_tools_are_left_out_one_by_one_and_the_definitions_bounded(
    senv: SmithEnv, running: Start
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, BAD_TOOLS)
    r = running(senv, project, _unsandboxed("b", script, marks))
    tools = r.tools()
    assert "mcp_b__ok" in tools and "mcp_b__big0" in tools
    assert "mcp_b__badschema" not in tools and "mcp_b__noschema" not in tools
    assert "mcp_b__big99" not in tools  # past 256 KiB of definitions
    said = [d.what for d in r.manager.notices if d.code == "mcp.tool-left-out"]
    assert any("'badschema'" in w and "nonsense" in w for w in said), said
    assert any("'noschema'" in w and "inputSchema" in w for w in said), said
    assert any("'5'" in w for w in said) and any("256 KiB" in w for w in said), said
    assert all("\n" not in w and "pydantic" not in w for w in said)


# -- 10: stderr kept as a bounded tail -----------------------------------------------------

LOUD = """
for _ in range(2000):
    sys.stderr.write("noise " * 100 + "\\n")
sys.stderr.write("LAST-LINE-OF-IT\\n")
sys.stderr.flush()
sys.exit(1)
"""


def test_a_servers_stderr_is_kept_as_a_bounded_tail(senv: SmithEnv, running: Start) -> None:
    from smith.plugins.mcp._proc import TAIL

    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, LOUD)
    r = running(senv, project, _unsandboxed("l", script, marks))
    conn = r.manager.connections["l"]
    assert _wait(lambda: conn.state == "failed", 20)
    assert conn.spawn is not None and len(conn.spawn.tail) <= TAIL
    assert conn.error is not None and "LAST-LINE-OF-IT" in conn.error.diagnostic.what


# -- 12: the resource reader --------------------------------------------------------------

NO_RESOURCES = """
RESOURCES = []
"""
SOME_RESOURCES = """
RESOURCES = [{"uri": "db://t", "name": "t"}]
def on_read(m):
    answer(m, {"contents": [{"uri": "db://t", "text": "T"}]})
"""


def test_the_resource_reader_is_offered_for_resources_and_as_filters_say(
    senv: SmithEnv, running: Start
) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    none, some = _raw(marks / "a", NO_RESOURCES), _raw(marks / "b", SOME_RESOURCES)
    env = f'{{ env {{ MARKS "{marks}"; }}; }}'
    kdl = (
        "mcp {\n"
        + _block("none", none, f"sandbox=false {env}")
        + _block("some", some, f'sandbox=false deny="read_*" {env}')
        + _block("all", some, f"sandbox=false {env}")
        + "}\n"
    )
    r = running(senv, project, kdl)
    tools = r.tools(count=3)
    assert "mcp_none__ok" in tools and "mcp_none__read_resource" not in tools
    assert "mcp_some__ok" in tools and "mcp_some__read_resource" not in tools
    assert r.call(tools["mcp_all__read_resource"], {"uri": "db://t"}).text == "T"


# -- 13: a name another plugin's tool has --------------------------------------------------


def test_a_tool_whose_name_another_plugin_has_is_the_only_one_left_out(
    senv: SmithEnv, tmp_path: Path
) -> None:
    from smith.config import resolve
    from smith.effects import ToolResult
    from smith.plugins.mcp._manager import Manager
    from smith.runtime._toolsets import ToolSets

    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, 'TOOLS = [{"name": n, "inputSchema": S} for n in ("ok", "two")]')
    senv.write_user_config(_unsandboxed("c", script, marks))
    sets = ToolSets(builtin=["read"])
    taken = ToolSpec("mcp_c__ok", "another plugin's", {"type": "object"},
                     lambda _ctx, _args: ToolResult("x"))  # fmt: skip
    sets.set("other", [taken])
    config = resolve(env=senv.env, cwd=str(project))
    ctx = ToolContext(root=str(project), cwd=str(project))
    manager = Manager(config, ctx, lambda tools: sets.set("mcp", tools))
    manager.begin()
    try:
        assert _wait(lambda: bool(sets.of("mcp")), 20), list(manager.notices)
        assert [t.name for t in sets.of("mcp")] == ["mcp_c__two"]
        said = [d.what for d in manager.notices if d.code == "mcp.name-collision"]
        assert said == [
            "MCP tool 'ok' of server 'c' is not offered: its name mcp_c__ok is taken by a "
            "tool of the other plugin"
        ], said
    finally:
        manager.close()


def test_a_server_still_running_when_smith_exits_dies_with_it(senv: SmithEnv) -> None:
    project = senv.make_project()
    marks = senv.root / "srv"
    script = _raw(marks, STUBBORN)
    senv.write_user_config(_unsandboxed("s", script, marks))
    program = textwrap.dedent(f"""
        import os, time
        from smith.config import resolve
        from smith.effects import ToolContext
        from smith.plugins.mcp._manager import Manager
        config = resolve(env=os.environ, cwd={str(project)!r})
        ctx = ToolContext(root={str(project)!r}, cwd={str(project)!r})
        manager = Manager(config, ctx, lambda tools: None)
        manager.begin()
        for _ in range(300):
            if manager.connections["s"].state == "ready":
                break
            time.sleep(0.05)
        print(manager.connections["s"].state, flush=True)
        os.kill(os.getpid(), 0)  # leaves without closing anything
    """)
    out = subprocess.run([PY, "-c", program], env=senv.env, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.stdout.strip() == "ready", out.stderr
    pid = int((marks / "pid").read_text())

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    alive = not _wait(gone, 5)
    if alive:
        os.kill(pid, 9)
    assert not alive


def test_an_http_server_that_dies_mid_call_is_a_lost_connection(
    senv: SmithEnv, running: Start
) -> None:
    from tests import mcp_client_kit as kit

    project = senv.make_project()
    marks = senv.root / "srv"
    script = kit.write_server(marks)
    proc, url = kit.start_http(script, {**senv.env, "MARKS": str(marks)})
    try:
        r = running(senv, project, f'mcp {{\n    server "h" url="{url}"\n}}\n')
        tools = r.tools()
        with pytest.raises(ToolError) as lost:
            r.call(tools["mcp_h__crash"], {})
        assert lost.value.details.get("diagnostic") == "mcp.lost", lost.value.message
        assert (marks / "crashes").read_text().count("crash") == 1  # never sent again
    finally:
        proc.kill()
        proc.wait()
