"""The plugin SDK's toolchains (smith.wasm: scaffold, build_package, the C bindings and
the core-module wrapper): what `smith plugins new NAME --lang python|c` writes builds
offline to a component that answers `/NAME` with "hello from NAME"; a C plugin reaches
every host function through the generated canonical ABI glue (strings, bytes, lists of
pairs, records, an enum, results both ways); a WASI call traps (no ambient authority);
each failure is a diagnostic that says what to do."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from smith.diagnostics import SmithError
from smith.wasm import build_package, scaffold, sdk_help
from tests.wasm_sdk_fixtures import Built, Guest, Host, built, have_toolchain

__all__ = ["built"]  # the session fixture

needs_c = pytest.mark.skipif(not have_toolchain("c"), reason="no C toolchain (ziglang)")


@pytest.mark.parametrize("lang", ["python", "c", "zig"])
def test_a_scaffold_builds_and_answers_hello(built, lang: str) -> None:  # type: ignore[no-untyped-def]
    b: Built = built(lang)
    assert b.module == b.root / "plugin.wasm"
    assert b.module.read_bytes()[:4] == b"\0asm"
    guest = Guest(b.module)
    assert guest.call("start", "{}")[0] == "ok"
    assert guest.call("command", b.name, "") == ("ok", f"hello from {b.name}")
    assert guest.call("on-event", '{"type": "turn_start", "turn": 1}') == ("ok", "[]")
    tag, why = guest.call("call-tool", "nope", "{}")
    assert tag == "err"
    assert "nope" in why or "call-tool" in why


@pytest.mark.parametrize("lang", ["python", "c", "zig"])
def test_the_hello_text_is_inside_the_command_handler(tmp_path: Path, lang: str) -> None:
    # The acceptance check puts an endless loop before the statement that holds it.
    root = scaffold("hi", lang, tmp_path)
    kdl = (root / "plugin.kdl").read_text()
    assert 'name "hi"' in kdl and f'build "{lang}"' in kdl and 'command "hi"' in kdl
    if lang == "python":
        tree = ast.parse((root / "app.py").read_text())
        handler = next(
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "command"
        )
        texts = [n.value for n in ast.walk(handler) if isinstance(n, ast.Constant)]
        assert any(isinstance(t, str) and t.startswith("hello from") for t in texts)
    else:
        source = (root / ("plugin.c" if lang == "c" else "plugin.zig")).read_text()
        body = source[source.index("smith_command(") :]
        assert '"hello from "' in body[: body.index("\n}")]
        assert (root / "sdk" / "smith_plugin.h").is_file()
        assert (root / "sdk" / "smith_plugin.c").is_file()


def test_scaffold_refuses_a_bad_name_language_or_a_used_directory(tmp_path: Path) -> None:
    with pytest.raises(SmithError, match="not a plugin name"):
        scaffold("../x", "python", tmp_path)
    with pytest.raises(SmithError, match="not a language"):
        scaffold("x", "rust", tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("mine")
    with pytest.raises(SmithError, match="already exists"):
        scaffold("x", "c", tmp_path)
    assert (tmp_path / "x" / "keep").read_text() == "mine"


HOST_USER = r"""
#include "smith_plugin.h"
#include <stdio.h>
#include <string.h>

static void add(smith_string_t *out, smith_string_t s) { smith_string_append(out, s); }

bool smith_command(smith_string_t name, smith_string_t args, smith_string_t *ret,
                   smith_string_t *err) {
  smith_failure_t f = {0};
  if (args.len == 5 && memcmp(args.ptr, "stdio", 5) == 0) { printf("hi\n"); fflush(stdout); }
  smith_host_log(SMITH_LEVEL_WARNING, name);
  smith_list_u8_t data = {0};
  if (!smith_host_read_file(smith_str("a.txt"), &data, &f)) { *err = f.message; return false; }
  add(ret, (smith_string_t){ (char *)data.ptr, data.len });
  smith_list_u8_free(&data);
  if (smith_host_read_file(smith_str("secret.txt"), &data, &f)) { return false; }
  smith_string_append_cstr(ret, "|");
  add(ret, f.code);
  smith_failure_free(&f);
  smith_run_output_t out = {0};
  if (!smith_host_run(smith_str("git status"), 250, &out, &f)) { return false; }
  char line[64];
  snprintf(line, sizeof line, "|%d:%d:", (int)out.exit_code, (int)out.truncated);
  smith_string_append_cstr(ret, line);
  add(ret, out.stdout_);
  smith_run_output_free(&out);
  smith_tuple2_string_string_t headers[2] = {
    { smith_str("accept"), smith_str("text/plain") }, { smith_str("x-n"), smith_str("2") } };
  smith_http_request_t req = { smith_str("POST"), smith_str("https://example.com/"),
    { headers, 2 }, { (uint8_t *)"body", 4 } };
  smith_http_response_t resp = {0};
  if (!smith_host_http(req, &resp, &f)) { return false; }
  snprintf(line, sizeof line, "|%u:", (unsigned)resp.status);
  smith_string_append_cstr(ret, line);
  add(ret, resp.headers.ptr[1].f1);
  smith_string_append_cstr(ret, ":");
  add(ret, (smith_string_t){ (char *)resp.body.ptr, resp.body.len });
  smith_http_response_free(&resp);
  smith_string_t ref = {0};
  if (smith_host_secret(smith_str("TOKEN"), &ref, &f)) {
    smith_string_append_cstr(ret, "|");
    add(ret, ref);
  }
  smith_string_free(&ref);
  smith_host_notify(SMITH_LEVEL_ERROR, smith_str("careful"));
  smith_host_status(smith_str("k"), smith_str("busy"));
  if (smith_host_cancelled()) smith_string_append_cstr(ret, "|cancelled");
  return true;
}
"""


@pytest.fixture(scope="module")
def host_user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not have_toolchain("c"):
        pytest.skip("no C toolchain (ziglang)")
    root = scaffold("hosty", "c", tmp_path_factory.mktemp("hosty"))
    (root / "plugin.c").write_text(HOST_USER)
    (root / "alloc.c").write_text(CHECKED_ALLOC)  # every free must be of live memory
    return build_package(root)


def _record(**fields: object) -> object:
    import wasmtime.component as wc

    r = wc.Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)  # by the WIT's names (exit-code)
    return r


@needs_c
def test_host_results_and_records_cross_both_ways(host_user: Path) -> None:
    import wasmtime.component as wc

    # wasmtime-py takes a result's case by the value's class, and as a Variant only where
    # both cases are records (run, http).
    ok = lambda value: wc.Variant("ok", value)  # noqa: E731
    run = _record(exit_code=3, stdout="ran", stderr="", truncated=True)

    def read(path: str) -> object:
        if path == "secret.txt":
            return _record(code="plugin.grant-denied", message="no")
        return b"A-TEXT"

    def http(req: object) -> object:
        echo = " ".join(
            [req.method, req.url, repr(req.headers), repr(bytes(req.body))]  # type: ignore[attr-defined]
        )
        return ok(_record(status=201, headers=[("a", "b"), ("echo", echo)], body=b"OK"))

    host = Host()
    host.answers.update(
        {
            "read-file": read,
            "run": lambda cmd, ms: ok(run) if (cmd, ms) == ("git status", 250) else None,
            "http": http,
            "secret": lambda name: f"{{{{secret:{name}}}}}",
            "cancelled": True,
        }
    )
    guest = Guest(host_user, host)
    tag, text = guest.call("command", "hosty", "")
    assert tag == "ok", text
    parts = text.split("|")
    assert parts[0] == "A-TEXT"
    assert parts[1] == "plugin.grant-denied"
    assert parts[2] == "3:1:ran"
    status, rest = parts[3].split(":", 1)
    echo, body = rest.rsplit(":", 1)
    assert status == "201" and body == "OK"
    assert "POST https://example.com/" in echo and "('x-n', '2')" in echo and "b'body'" in echo
    assert parts[4] == "{{secret:TOKEN}}" and parts[5] == "cancelled"
    called = [name for name, _ in host.calls]
    assert called[0] == "log" and host.calls[0][1] == ("warning", "hosty")
    assert ("notify", ("error", "careful")) in host.calls and (
        "status",
        ("k", "busy"),
    ) in host.calls
    # Many calls: what the host allocated in the guest is freed (no growth to a trap).
    for _ in range(300):
        assert guest.call("command", "hosty", "")[0] == "ok"


@needs_c
def test_a_wasi_call_traps_there_is_no_ambient_authority(host_user: Path) -> None:
    import wasmtime

    guest = Guest(host_user)
    with pytest.raises(wasmtime.WasmtimeError):
        guest.call("command", "hosty", "stdio")  # printf: a WASI fd_write, a stub that traps


@needs_c
def test_build_says_what_failed(tmp_path: Path) -> None:
    root = scaffold("broken", "c", tmp_path)
    (root / "plugin.c").write_text('#include "smith_plugin.h"\nint f(void) { return nope; }\n')
    with pytest.raises(SmithError) as caught:
        build_package(root)
    text = caught.value.diagnostic.render()
    assert "nope" in text and "could not build" in text and str(root) in text


def test_build_without_a_package_or_toolchain_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smith.wasm._build as b

    with pytest.raises(SmithError, match=r"has no plugin\.kdl"):
        build_package(tmp_path)
    root = scaffold("c1", "c", tmp_path)
    monkeypatch.setattr(b, "c_compiler", lambda: None)
    with pytest.raises(SmithError) as caught:
        build_package(root)
    assert "pip install 'smith-agent[plugins]'" in caught.value.diagnostic.render()
    (root / "plugin.kdl").write_text(
        (root / "plugin.kdl").read_text().replace('build "c"', 'build "rust"')
    )
    with pytest.raises(SmithError, match="cannot build"):  # plugin.kdl:line names it
        build_package(root)
    py = scaffold("p1", "python", tmp_path)
    real = b.importlib.util.find_spec
    monkeypatch.setattr(
        b.importlib.util, "find_spec", lambda n, *a: None if n == "componentize_py" else real(n, *a)
    )
    with pytest.raises(SmithError, match="componentize-py"):
        build_package(py)


@needs_c
def test_build_names_the_module_in_plugin_kdl_when_it_names_none(tmp_path: Path) -> None:
    root = scaffold("nomod", "c", tmp_path)
    kdl = root / "plugin.kdl"
    kdl.write_text(re.sub(r'module "[^"]*"\n', "", kdl.read_text()))
    out = build_package(root)
    assert out == root / "plugin.wasm" and 'module "plugin.wasm"' in kdl.read_text()
    # The bindings in sdk/ are written again, so an edited copy cannot drift.
    (root / "sdk" / "smith_plugin.h").write_text("/* edited */")
    build_package(root)
    assert "edited" not in (root / "sdk" / "smith_plugin.h").read_text()


def test_sdk_help_describes_events_actions_and_host_functions() -> None:
    text = sdk_help(None)
    lines = [x for x in text.splitlines() if x.strip()]
    assert len(lines) >= 20
    for word in ("EVENTS", "ACTIONS", "HOST FUNCTIONS", "EXPORTS", "tool_call", "read-file"):
        assert word in text
    assert "deny_call" in sdk_help("actions") and "tool_call" in sdk_help("events")
    with pytest.raises(SmithError) as caught:
        sdk_help("event")
    assert "did you mean `smith plugins help events`" in caught.value.diagnostic.render()


def test_smith_help_sdk_is_the_sdk_help() -> None:
    import io

    from smith.cli._main import run

    out, err = io.StringIO(), io.StringIO()
    assert run(["help", "sdk"], stdout=out, stderr=err) == 0
    assert out.getvalue() == sdk_help(None)


def _core(body: str) -> bytes:
    import wasmtime

    return bytes(wasmtime.wat2wasm(f"(module {body})"))


def test_the_wrapper_refuses_what_is_no_plugin_module() -> None:
    from smith.wasm import wit_world
    from smith.wasm._wrap import WrapError, wrap

    world = wit_world()
    base = (
        '(memory (export "memory") 1) '
        '(func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) i32.const 0)'
    )
    with pytest.raises(WrapError, match="not a core WebAssembly module"):
        wrap(world, b"\0asm\x0d\0\x01\0")
    with pytest.raises(WrapError, match="exports no memory"):
        wrap(world, _core(""))
    with pytest.raises(WrapError, match="'env'"):
        wrap(world, _core(f'(import "env" "getpid" (func)) {base}'))
    with pytest.raises(WrapError, match="no host function"):
        wrap(world, _core(f'(import "{world.qualified("host")}" "shell" (func)) {base}'))
    with pytest.raises(WrapError, match="does not export 'start'"):
        wrap(world, _core(base))


@needs_c
def test_an_unchanged_package_is_not_built_again(tmp_path: Path) -> None:
    root = scaffold("again", "c", tmp_path)
    said: list[str] = []
    out = build_package(root, said.append)
    first = out.stat().st_mtime_ns
    build_package(root, said.append)
    assert "up to date" in said[-1] and out.stat().st_mtime_ns >= first
    (root / "plugin.c").write_text((root / "plugin.c").read_text().replace("hello from", "hi from"))
    build_package(root, said.append)
    assert "built" in said[-1]
    assert Guest(out).call("command", "again", "") == ("ok", "hi from again")


# A plugin's own allocator (it replaces wasi-libc's): free of what is not live traps, so
# a double free or a free of memory the plugin does not own shows as a trap.
CHECKED_ALLOC = r"""
#include <stddef.h>
#include <string.h>
static unsigned char arena[1 << 20];
static size_t top;
static void *live[4096];
static size_t sizes[4096];
void *malloc(size_t n) {
  size_t at = (top + 15) & ~(size_t)15;
  if (at + n > sizeof arena) __builtin_trap();
  top = at + n;
  for (int i = 0; i < 4096; i++)
    if (!live[i]) { live[i] = arena + at; sizes[i] = n; return arena + at; }
  __builtin_trap();
}
void free(void *p) {
  if (!p) return;
  for (int i = 0; i < 4096; i++) if (live[i] == p) { live[i] = 0; return; }
  __builtin_trap();
}
void *calloc(size_t a, size_t b) { void *p = malloc(a * b); memset(p, 0, a * b); return p; }
void *realloc(void *p, size_t n) {
  void *q = malloc(n);
  if (p) {
    for (int i = 0; i < 4096; i++)
      if (live[i] == p) { memcpy(q, p, sizes[i] < n ? sizes[i] : n); break; }
    free(p);
  }
  return q;
}
"""


@needs_c
def test_an_argument_handed_back_as_the_answer_is_freed_once(tmp_path: Path) -> None:
    root = scaffold("echo", "c", tmp_path)
    (root / "alloc.c").write_text(CHECKED_ALLOC)
    (root / "plugin.c").write_text(
        '#include "smith_plugin.h"\n'
        "bool smith_command(smith_string_t name, smith_string_t args, smith_string_t *ret,\n"
        "                   smith_string_t *err) {\n"
        "  (void)err;\n"
        '  if (name.len == 4) *ret = args; else smith_string_set(ret, "copied");\n'
        "  return true;\n"
        "}\n"
    )
    guest = Guest(build_package(root))
    for i in range(50):
        assert guest.call("command", "echo", f"words {i}") == ("ok", f"words {i}")
        assert guest.call("command", "other", "x") == ("ok", "copied")
