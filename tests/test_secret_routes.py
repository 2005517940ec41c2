"""Secret routing (docs/plugins.md "Secret routing"): the plugins' `secret-route`
contributions decide where a secret's value may go. A secret no route names goes where a
plugin's grants allow and is never handed as plaintext; one that routes name goes only
to a routed host or program, and as plaintext only where a route says so. A route allows;
it never grants. The host functions are called directly (HostCalls, no guest) for the
policy, and through the runtime with the test guest for the whole path."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smith.effects import SecretRoutes, ToolContext
from smith.packages import Grants
from smith.sdk import Plugin, SecretRoute
from smith.wasm import wasm_plugin
from smith.wasm._hostfns import Call, Failure, HostCalls
from tests.runtime_kit import Fake, World
from tests.wasm_fixtures import guest, package, settings

__all__ = ["guest"]  # the session fixture, used by name

VALUE = "s3cret-routed-value"


def router(*routes: SecretRoute, name: str = "router") -> Plugin:
    """A plugin that only contributes routes (as a package's plugin.kdl does)."""
    return Plugin(name, secret_routes=routes)


def host(
    tmp_path: Path, grants: Grants, *plugins: Plugin, name: str = "user"
) -> tuple[HostCalls, ToolContext]:
    """The host side of a plugin `name` with `grants`, in a context whose routes are
    those of `plugins` (as the runtime sets them from its plugin list)."""
    calls = HostCalls(name, grants)
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    ctx.routes = SecretRoutes.of(plugins)
    calls.call = Call(ctx=ctx)
    return calls, ctx


def denied(action: Any) -> str:
    with pytest.raises(Failure) as caught:
        action()
    assert caught.value.code == "plugin.grant-denied", caught.value.message
    return caught.value.message


def request(url: str, token: str = "{{secret:TOKEN}}") -> dict[str, Any]:
    return {"method": "GET", "url": url, "headers": [("authorization", token)], "body": b""}


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", VALUE)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


# -- the policy, at the host functions ---------------------------------------------------


def test_no_route_gives_a_reference_never_the_value(tmp_path: Path) -> None:
    calls, _ = host(tmp_path, Grants(secrets=("TOKEN",)))
    assert calls.secret("TOKEN") == "{{secret:TOKEN}}"
    # A route that does not say plaintext gives the reference too.
    calls, _ = host(tmp_path, Grants(secrets=("TOKEN",)), router(SecretRoute("TOKEN", ("x.io",))))
    assert calls.secret("TOKEN") == "{{secret:TOKEN}}"
    assert not calls.handed


def test_a_plaintext_route_hands_the_value_and_it_is_masked_in_what_comes_back(
    tmp_path: Path,
) -> None:
    calls, _ = host(tmp_path, Grants(secrets=("TOKEN",)),
                    router(SecretRoute("TOKEN", plaintext=True)))  # fmt: skip
    assert calls.secret("TOKEN") == VALUE
    assert calls.handed == {"TOKEN"}
    assert calls.mask(f'{{"reply": "got {VALUE}"}}') == '{"reply": "got {{secret:TOKEN}}"}'


def test_a_route_never_grants(tmp_path: Path) -> None:
    routes = router(SecretRoute("TOKEN", ("127.0.0.1",), ("echo",), plaintext=True))
    calls, _ = host(tmp_path, Grants(hosts=("127.0.0.1",), commands=("echo",)), routes)
    assert "not granted" in denied(lambda: calls.secret("TOKEN"))
    assert "not granted" in denied(lambda: calls.http(request("http://127.0.0.1:9/x")))
    assert not calls.handed


def test_http_to_a_granted_but_unrouted_host_is_refused_naming_the_routes(
    tmp_path: Path,
) -> None:
    grants = Grants(hosts=("*.example.com", "127.0.0.1"), secrets=("TOKEN",))
    calls, _ = host(tmp_path, grants, router(SecretRoute("TOKEN", ("api.example.com",))))
    why = denied(lambda: calls.http(request("https://evil.example.com/x")))
    assert "TOKEN" in why and "evil.example.com" in why
    assert "router's: host api.example.com" in why  # the routes and who contributed them
    assert 'add `host "evil.example.com"` to a `secret-route "TOKEN"`' in why
    # Without a secret in it, the request is no business of the routes.
    calls, _ = host(tmp_path, grants, router(SecretRoute("OTHER", ("nowhere",))))
    with pytest.raises(Failure) as caught:  # it is sent: nothing listens there
        calls.http(request("http://127.0.0.1:9/x"))
    assert caught.value.code == "plugin.host-failed"


def test_run_of_an_unrouted_program_is_refused(tmp_path: Path) -> None:
    grants = Grants(commands=("echo", "gh"), secrets=("TOKEN",))
    calls, _ = host(tmp_path, grants, router(SecretRoute("TOKEN", commands=("gh",))))
    why = denied(lambda: calls.run("echo {{secret:TOKEN}}", 0))
    assert "to the command echo" in why and 'command "echo"' in why
    # The routed program passes the routes (and is refused for the sandbox, off here).
    why = denied(lambda: calls.run("gh auth {{secret:TOKEN}}", 0))
    assert "sandbox" in why and "secret-route" not in why


def test_a_route_of_one_plugin_governs_another_and_routes_add_up(tmp_path: Path) -> None:
    grants = Grants(hosts=("*",), secrets=("TOKEN",))
    one = router(SecretRoute("TOKEN", ("a.example",)), name="one")
    two = router(SecretRoute("TOKEN", ("b.example",)), name="two")
    routes = SecretRoutes.of([one, two])
    assert routes.host("TOKEN", "a.example") and routes.host("TOKEN", "B.Example")
    assert not routes.host("TOKEN", "c.example")
    assert routes.host("UNROUTED", "c.example")  # no route: grants decide
    calls, _ = host(tmp_path, grants, one, two)
    why = denied(lambda: calls.http(request("https://c.example/")))
    assert "one's: host a.example" in why and "two's: host b.example" in why


def test_a_call_without_a_context_sends_no_secret_before_the_routes_are_known(
    tmp_path: Path,
) -> None:
    grants = Grants(hosts=("*.example.com", "127.0.0.1"), secrets=("TOKEN",))
    calls = HostCalls("queue", grants)  # a queue policy's first call: Call() has no context
    why = denied(lambda: calls.http(request("https://api.example.com/")))
    assert "knows the runtime's secret routes" in why
    assert calls.secret("TOKEN") == "{{secret:TOKEN}}"  # never plaintext without them
    # Once a call with a context was seen, its routes hold for the calls without one.
    calls.call = Call(ctx=ToolContext(root=str(tmp_path), cwd=str(tmp_path)))
    assert calls.routes_now() is not None
    calls.call = Call()
    with pytest.raises(Failure) as caught:  # sent (no route names TOKEN): nothing there
        calls.http(request("http://127.0.0.1:9/x"))
    assert caught.value.code == "plugin.host-failed"


# -- through the runtime, with the test guest --------------------------------------------


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server: its URL and the authorization headers it saw."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("authorization", ""))
            self.send_response(200)
            self.send_header("content-length", "4")
            self.end_headers()
            self.wfile.write(b"pong")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/x", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def replies(w: World) -> list[str]:
    return [e["reply"] for e in w.of("input_handled")]


def web(guest: Path, cache_home: Path) -> Plugin:
    grants = Grants(hosts=("127.0.0.1",), secrets=("TOKEN",))
    pkg = package(guest, "web", grants=grants, options=settings(mode="secret"))
    return wasm_plugin(pkg, cache_home=str(cache_home))


def test_http_through_the_runtime_goes_only_where_a_route_allows(
    cache_home: Path, guest: Path, tmp_path: Path, server: tuple[str, list[str]]
) -> None:
    url, seen = server
    w = World(tmp_path / "routed")
    routed = router(SecretRoute("TOKEN", ("127.0.0.*",)))
    w.converse(Fake(), plugins=[web(guest, cache_home), routed], prompts=[f"/web http {url}"])
    assert replies(w) == ["status 200: pong"]
    assert seen == [f"Bearer {VALUE}"]
    elsewhere = router(SecretRoute("TOKEN", ("api.github.com",)), name="gh-auth")
    w = World(tmp_path / "elsewhere")
    w.converse(Fake(), plugins=[web(guest, cache_home), elsewhere], prompts=[f"/web http {url}"])
    (reply,) = replies(w)
    assert reply.startswith("denied plugin.grant-denied: plugin web: the secret TOKEN may not")
    assert "gh-auth's: host api.github.com" in reply
    assert seen == [f"Bearer {VALUE}"]  # nothing more was sent


def test_plaintext_through_the_runtime_is_journaled_without_the_value(
    cache_home: Path, guest: Path, tmp_path: Path
) -> None:
    pkg = package(guest, "plain", grants=Grants(secrets=("TOKEN",)))
    plugin = wasm_plugin(pkg, cache_home=str(cache_home))
    w = World(tmp_path)
    routes = router(SecretRoute("TOKEN", plaintext=True))
    w.converse(Fake(), plugins=[plugin, routes], prompts=["/plain secret TOKEN"])
    # The guest returns what it was given: the value, masked back on its way out.
    assert replies(w) == ["ref {{secret:TOKEN}}"]
    intents: list[Any] = [e.content for e in w.reopened().entries("effect_intent")]
    (handed,) = [i for i in intents if i["name"] == "plain.secret"]
    assert handed["input"] == {"name": "TOKEN", "plaintext": True}
    assert VALUE not in Path(w.path).read_text(errors="replace")


def test_a_disabled_plugins_routes_do_not_count(
    cache_home: Path, guest: Path, tmp_path: Path, server: tuple[str, list[str]]
) -> None:
    from smith.config import resolve
    from smith.sdk import resolve_plugins

    url, seen = server
    env = {"SMITH_HOME": str(tmp_path / "d"), "SMITH_CONFIG_HOME": str(tmp_path / "c"),
           "SMITH_PLUGINS_DISABLED": "gh-auth"}  # fmt: skip
    config = resolve(env=env, flags={}, cwd=str(tmp_path))
    elsewhere = router(SecretRoute("TOKEN", ("api.github.com",)), name="gh-auth")
    listed = resolve_plugins(config, [web(guest, cache_home), elsewhere])
    assert "gh-auth" not in [p.name for p in listed.active]
    w = World(tmp_path / "w")
    w.converse(Fake(), plugin_list=listed, prompts=[f"/web http {url}"])
    assert replies(w) == ["status 200: pong"]  # no route names TOKEN: its grants decide
    assert seen == [f"Bearer {VALUE}"]


def test_the_runtime_and_the_tool_host_gather_their_plugins_routes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An assembly's runtime and its tool host (`smith mcp`, `smith tools run`) give every
    call the routes of the active plugins, a caller's own among them."""
    import smith

    monkeypatch.setenv("SMITH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMITH_CONFIG_HOME", str(tmp_path / "config"))
    routes = router(SecretRoute("TOKEN", ("api.example.com",)), name="gh-auth")

    async def main() -> list[SecretRoutes | None]:
        async with smith.Agent((Fake(), "m"), cwd=str(tmp_path), plugins=[routes],
                               tools=[]) as agent:  # fmt: skip
            host = agent.assembly.tool_host(agent.session)
            ctx = agent.runtime.context
            return [ctx.routes, ctx.for_call().routes, host.context.for_call().routes]

    import asyncio

    for gathered in asyncio.run(main()):
        assert gathered is not None
        assert [r.plugin for r in gathered.of_secret("TOKEN")] == ["gh-auth"]
        assert not gathered.host("TOKEN", "evil.example.com")


# -- the model's own bash ----------------------------------------------------------------


def bash_results(routes: list[Plugin], *commands: str, tmp_path: Path) -> list[dict[str, Any]]:
    """What the model's bash calls of `commands` gave, with TOKEN registered (as
    `secrets.env` does) and the plugins `routes` in the runtime."""
    import os

    from smith.runtime import SecretProxy
    from tests.runtime_kit import call, say

    proxy = SecretProxy.from_environment(["TOKEN"], os.environ)
    fake = Fake(*[call(("bash", {"command": c})) for c in commands], say("done"))
    w = World(tmp_path)
    w.converse(fake, plugins=routes, secrets=proxy)
    return [e["result"] for e in w.of("tool_end")]


def test_the_models_bash_gets_a_routed_secret_only_for_a_routed_program(tmp_path: Path) -> None:
    uses = ["printenv TOKEN", "echo {{secret:TOKEN}}", "printenv TOKEN | cat"]
    # No route names TOKEN: restored for every command, as ever (masked in the results).
    plain = bash_results([], *uses, tmp_path=tmp_path / "none")
    assert [r["ok"] for r in plain] == [True, True, True]
    assert all("{{secret:TOKEN}}" in str(r["text"]) for r in plain)
    # Routed to printenv only: printenv gets it, echo does not (the call fails saying
    # why), and neither does a pipeline (more than one program).
    gated = bash_results([router(SecretRoute("TOKEN", commands=("printenv",)), name="env-auth")],
                         *uses, tmp_path=tmp_path / "routed")  # fmt: skip
    assert gated[0]["ok"] and "{{secret:TOKEN}}" in str(gated[0]["text"])
    assert not gated[1]["ok"]
    assert "the secret TOKEN may not go to the command echo" in str(gated[1]["text"])
    assert "env-auth's: command printenv" in str(gated[1]["text"])
    assert "{{secret:TOKEN}}" not in str(gated[2]["text"])  # not in its environment
    assert VALUE not in str(gated)
