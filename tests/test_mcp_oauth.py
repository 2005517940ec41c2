"""OAuth for MCP servers over HTTP (smith.plugins._mcp_oauth), against a loopback
authorization server and protected MCP server built on the official SDK's server side."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import socket
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import httpx2
import pytest
import uvicorn
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from smith.diagnostics import SmithError
from smith.plugins._mcp_oauth import login, login_error, logout, oauth_auth, store_key
from tests.conftest import Result, SmithEnv

SCOPE = "mcp"


@dataclass
class AuthServer(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """An OAuthAuthorizationServerProvider that approves every authorization at once (the
    user said yes), keeping everything in memory and every grant it saw."""

    resource: str = ""
    lifetime: int = 3600  # seconds an access token lives
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: list[str] = field(default_factory=list)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = f"at-{secrets.token_hex(16)}", f"rt-{secrets.token_hex(16)}"
        expires = int(time.time()) + self.lifetime
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=self.resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            expires_in=self.lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.grants.append("authorization_code")
        return self._issue(authorization_code.client_id, authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.grants.append("refresh_token")
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def expire_access_tokens(self) -> None:
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1


@dataclass
class Served:
    url: str
    auth: AuthServer


@pytest.fixture
def served() -> Iterator[Served]:
    """The authorization server and the protected MCP server (tool `echo`), one Starlette
    app on 127.0.0.1 at a free port, run by uvicorn in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = AuthServer(resource=f"{base}/mcp")
    server = MCPServer(
        "oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        return f"echo: {text}"

    app = server.streamable_http_app()
    runner = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:  # uvicorn says when it listens by this flag alone
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        thread.join(0.01)
    try:
        yield Served(f"{base}/mcp", provider)
    finally:
        runner.should_exit = True
        thread.join(30)
        sock.close()


class Browser:
    """The user's browser: `say` hands it the login's URL, which it opens (following
    the authorization server's redirect to the loopback) in a thread of its own."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.pages: list[httpx.Response] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, text: str) -> None:
        self.said.append(text)
        found = re.search(r"^(http://\S+/authorize\?\S+)$", text, re.M)
        if found:
            thread = threading.Thread(target=self._open, args=(found.group(1),))
            thread.start()
            self.threads.append(thread)

    def _open(self, url: str) -> None:
        self.pages.append(httpx.get(url, follow_redirects=True, timeout=30))

    def close(self) -> None:
        for thread in self.threads:
            thread.join(30)


def _record(home: Path, alias: str = "web") -> dict[str, object]:
    records = json.loads((home / "auth.json").read_text())["providers"]
    record: dict[str, object] = records[store_key(alias)]
    return record


async def _call_echo(auth: httpx2.Auth, url: str) -> str:
    async with (
        httpx2.AsyncClient(auth=auth) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("echo", {"text": "hi"})
    text = result.content[0]
    assert text.type == "text"
    return text.text


def _noninteractive(home: Path, url: str, said: Callable[[str], None]) -> httpx2.Auth:
    return oauth_auth("web", url, home=str(home), say=said, interactive=False)


def _login(served: Served, home: Path, browser: Browser) -> int:
    try:
        return login("web", served.url, home=str(home), say=browser, timeout=60)
    finally:
        browser.close()


def test_login_stores_tokens_owner_only_and_a_tool_call_uses_them(
    served: Served,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    assert _login(served, tmp_path, browser) == 0
    # The browser step: the URL was printed, opened, and the loopback answered it.
    assert [page.status_code for page in browser.pages] == [200]
    assert browser.pages[0].url.host == "127.0.0.1" and browser.pages[0].url.path == "/callback"
    assert "login is complete" in browser.pages[0].text
    assert "Logged in to the MCP server web (1 tools)" in browser.said[-1]
    assert served.auth.grants == ["authorization_code"]
    assert len(served.auth.clients) == 1  # dynamic client registration

    record = _record(tmp_path)
    access, refresh = record["access"], record["refresh"]
    assert isinstance(access, str) and access in served.auth.access
    assert isinstance(refresh, str) and refresh in served.auth.refresh
    assert record["url"] == served.url and isinstance(record["expires"], float)
    assert stat.S_IMODE(os.stat(tmp_path / "auth.json").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o700

    # A later run, not interactive, calls a tool with the stored token: no new login.
    said: list[str] = []
    assert (
        asyncio.run(_call_echo(_noninteractive(tmp_path, served.url, said.append), served.url))
        == "echo: hi"
    )
    assert said == [] and served.auth.grants == ["authorization_code"]

    out, err = capfd.readouterr()
    assert "/register" in caplog.text and "/token" in caplog.text  # the flow was logged
    for secret in (access, refresh):
        assert secret not in caplog.text and secret not in out + err
        assert not any(secret in text for text in browser.said)


def test_an_expired_access_token_is_refreshed(served: Served, tmp_path: Path) -> None:
    assert _login(served, tmp_path, Browser()) == 0
    old = _record(tmp_path)
    served.auth.expire_access_tokens()
    records = json.loads((tmp_path / "auth.json").read_text())
    records["providers"][store_key("web")]["expires"] = time.time() - 60
    (tmp_path / "auth.json").write_text(json.dumps(records))

    said: list[str] = []
    assert (
        asyncio.run(_call_echo(_noninteractive(tmp_path, served.url, said.append), served.url))
        == "echo: hi"
    )
    new = _record(tmp_path)
    assert served.auth.grants == ["authorization_code", "refresh_token"]
    assert new["access"] != old["access"] and new["refresh"] != old["refresh"]
    assert isinstance(new["expires"], float) and new["expires"] > time.time()
    assert new["client"] == old["client"] and said == []


def test_a_refused_token_is_refreshed_though_it_has_not_expired_by_smiths_clock(
    served: Served, tmp_path: Path
) -> None:
    assert _login(served, tmp_path, Browser()) == 0
    old = _record(tmp_path)
    served.auth.expire_access_tokens()  # the server refuses it; the record says it is good
    said: list[str] = []
    auth = _noninteractive(tmp_path, served.url, said.append)
    assert asyncio.run(_call_echo(auth, served.url)) == "echo: hi"
    assert served.auth.grants == ["authorization_code", "refresh_token"]
    assert _record(tmp_path)["access"] != old["access"] and said == []

    served.auth.expire_access_tokens()
    served.auth.refresh.clear()  # and now the refresh token is refused too
    with pytest.raises(BaseException) as caught:
        asyncio.run(_call_echo(_noninteractive(tmp_path, served.url, said.append), served.url))
    error = login_error(caught.value)
    assert error is not None and error.diagnostic.code == "mcp.login-needed"
    assert "refused or could not be renewed" in error.diagnostic.why and said == []


def test_a_run_that_is_not_interactive_never_starts_a_login(served: Served, tmp_path: Path) -> None:
    said: list[str] = []
    with pytest.raises(BaseException) as caught:
        asyncio.run(_call_echo(_noninteractive(tmp_path, served.url, said.append), served.url))
    error = login_error(caught.value)
    assert error is not None, caught.value
    d = error.diagnostic
    assert d.code == "mcp.login-needed"
    assert "`smith mcp login web`" in d.fix and "no authorization is stored" in d.why
    assert said == [] and served.auth.grants == []


def test_tokens_are_for_the_url_they_were_got_from(served: Served, tmp_path: Path) -> None:
    assert _login(served, tmp_path, Browser()) == 0
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json={})

    async def fetch(url: str) -> None:
        auth = oauth_auth("web", url, home=str(tmp_path), say=print, interactive=False)
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(answer)) as http:
            await http.post(url, json={})

    asyncio.run(fetch(served.url))
    asyncio.run(fetch("http://127.0.0.1:9/elsewhere/mcp"))
    assert sent[0].headers["authorization"] == f"Bearer {_record(tmp_path)['access']}"
    assert "authorization" not in sent[1].headers  # the alias's token stays with its URL


def test_a_session_may_log_in_when_it_is_interactive(served: Served, tmp_path: Path) -> None:
    browser = Browser()
    auth = oauth_auth("web", served.url, home=str(tmp_path), say=browser, interactive=True)
    try:
        assert asyncio.run(_call_echo(auth, served.url)) == "echo: hi"
    finally:
        browser.close()
    assert "open this URL in a browser" in browser.said[0]
    assert served.auth.grants == ["authorization_code"]
    assert _record(tmp_path)["access"] in served.auth.access


def test_a_second_login_keeps_the_registration_unless_its_port_is_taken(
    served: Served, tmp_path: Path
) -> None:
    assert _login(served, tmp_path, Browser()) == 0
    first = _record(tmp_path)
    assert _login(served, tmp_path, Browser()) == 0
    second = _record(tmp_path)
    assert served.auth.grants == ["authorization_code"] * 2
    assert second["client"] == first["client"] and second["access"] != first["access"]
    assert len(served.auth.clients) == 1

    port = first["redirect-port"]
    assert isinstance(port, int)
    with socket.socket() as taken:  # another program holds the registered redirect's port
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert _login(served, tmp_path, Browser()) == 0
    third = _record(tmp_path)
    assert len(served.auth.clients) == 2 and third["redirect-port"] != port


def test_logout_forgets_the_login(served: Served, tmp_path: Path) -> None:
    assert _login(served, tmp_path, Browser()) == 0
    said: list[str] = []
    assert logout("web", home=str(tmp_path), say=said.append) == 0
    assert store_key("web") not in json.loads((tmp_path / "auth.json").read_text())["providers"]
    assert logout("web", home=str(tmp_path), say=said.append) == 0
    assert "No login is stored" in said[-1]


def test_a_refused_authorization_fails_the_login(served: Served, tmp_path: Path) -> None:
    async def refuse(client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        return construct_redirect_uri(
            str(params.redirect_uri),
            error="access_denied",
            error_description="the user said no",
            state=params.state,
        )

    served.auth.authorize = refuse  # type: ignore[method-assign]
    with pytest.raises(SmithError) as caught:
        _login(served, tmp_path, Browser())
    d = caught.value.diagnostic
    assert d.code == "mcp.login-failed"
    assert "access_denied: the user said no" in d.what


def test_a_login_nobody_answers_ends_at_its_timeout(served: Served, tmp_path: Path) -> None:
    said: list[str] = []  # the URL is shown, and nobody opens it
    with pytest.raises(SmithError) as caught:
        login("web", served.url, home=str(tmp_path), say=said.append, timeout=0.2)
    d = caught.value.diagnostic
    assert d.code == "mcp.login-failed" and "no answer reached http://127.0.0.1:" in d.what
    assert "open this URL in a browser" in said[0] and served.auth.grants == []
    port = _record(tmp_path)["redirect-port"]
    with socket.socket() as again:  # the loopback let its port go
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))  # type: ignore[arg-type]


# -- what a reviewer tried: a hostile page, redirect, or server ---------------------------


def test_the_loopback_answers_beside_an_idle_connection_and_only_its_own_state() -> None:
    """A connection that sends nothing holds no login up (each is served in a thread),
    and an answer without the login's `state` is refused while the login waits on."""
    from smith.plugins._mcp_loopback import Loopback

    loopback = Loopback()
    loopback.state = "the-state"
    loopback.start()
    try:
        with socket.create_connection(("127.0.0.1", loopback.port)):  # idle, held open
            url = loopback.redirect_uri
            forged = httpx.get(url, params={"code": "FORGED", "state": "wrong"}, timeout=5)
            stateless = httpx.get(url, params={"error": "access_denied"}, timeout=5)
            real = httpx.get(url, params={"code": "C", "state": "the-state"}, timeout=5)
    finally:
        loopback.close()
    assert [forged.status_code, stateless.status_code, real.status_code] == [400, 400, 200]
    assert asyncio.run(loopback.wait(0)) == {"code": "C", "state": "the-state"}


def test_a_refusal_is_said_on_one_line_with_its_controls_made_visible(
    served: Served, tmp_path: Path
) -> None:
    async def refuse(client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        return construct_redirect_uri(
            str(params.redirect_uri),
            error="access_denied",
            error_description="\x1b[2J\x1b[31mYOU ARE HACKED\nfake: line" + "x" * 5000,
            state=params.state,
        )

    served.auth.authorize = refuse  # type: ignore[method-assign]
    with pytest.raises(SmithError) as caught:
        _login(served, tmp_path, Browser())
    what = caught.value.diagnostic.what
    assert "\x1b" not in what and "\n" not in what and len(what) < 600
    assert "access_denied: ␛[2J␛[31mYOU ARE HACKED fake: line" in what


def test_a_failed_login_is_one_diagnostic_no_traceback_nor_exception_group(
    served: Served, senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    from mcp.server.auth.provider import RegistrationError

    async def refuse(client_info: OAuthClientInformationFull) -> None:
        raise RegistrationError("invalid_client_metadata", "REFUSED-HERE")

    served.auth.register_client = refuse  # type: ignore[method-assign]
    senv.write_user_config(f'mcp {{\n  server "web" url="{served.url}" oauth=true\n}}\n')
    r = smith_process("mcp", "login", "web")
    assert r.code == 1
    assert "REFUSED-HERE" in r.err and "logging in to the MCP server web" in r.err
    for noise in ("Traceback", "ExceptionGroup", "OAuth flow error", "TaskGroup"):
        assert noise not in r.err + r.out, r.err


def test_an_answer_that_streams_on_fails_the_login_at_its_cap(tmp_path: Path) -> None:
    """Protected resource metadata that never ends: read up to ANSWER_MAX, not on."""
    from smith.plugins._mcp_oauth import ANSWER_MAX

    sent: list[int] = []

    class Endless(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'{"resource": "http://127.0.0.1:1/mcp", "x": "'
            for _ in range(3 * ANSWER_MAX // 65536):  # bounded here, for the test's sake
                sent.append(65536)
                yield b"A" * 65536

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/mcp":
            return httpx2.Response(401, headers={"WWW-Authenticate": "Bearer"})
        return httpx2.Response(200, stream=Endless())

    async def go() -> None:
        auth = oauth_auth("web", "http://127.0.0.1:1/mcp", home=str(tmp_path),
                          say=lambda _: None, interactive=False)  # fmt: skip
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(handle)) as http:
            await http.get("http://127.0.0.1:1/mcp")

    with pytest.raises(SmithError) as caught:
        asyncio.run(go())
    assert caught.value.diagnostic.code == "mcp.login-failed"
    assert f"passed {ANSWER_MAX:,} bytes" in caught.value.diagnostic.what
    assert sum(sent) <= ANSWER_MAX + 65536


def test_a_compressed_answer_is_bounded_before_it_is_decoded(tmp_path: Path) -> None:
    """The login asks for answers as they are; one sent gzipped anyway (a bomb: 16 MiB
    of zeros in a few KiB) fails at COMPRESSED_MAX bytes, before it is decoded."""
    import gzip

    from smith.plugins._mcp_oauth import COMPRESSED_MAX

    asked: list[str] = []
    bomb = gzip.compress(b'{"resource": "' + b"0" * (64 * 1024 * 1024))

    class Chunks(httpx2.AsyncByteStream):  # as a server sends it: streamed
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for at in range(0, len(bomb), 4096):
                yield bomb[at : at + 4096]

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/mcp":
            return httpx2.Response(401, headers={"WWW-Authenticate": "Bearer"})
        asked.append(request.headers.get("Accept-Encoding", ""))
        return httpx2.Response(200, headers={"Content-Encoding": "gzip"}, stream=Chunks())

    async def go() -> None:
        auth = oauth_auth("web", "http://127.0.0.1:1/mcp", home=str(tmp_path),
                          say=lambda _: None, interactive=False)  # fmt: skip
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(handle)) as http:
            await http.get("http://127.0.0.1:1/mcp")

    assert len(bomb) > COMPRESSED_MAX
    with pytest.raises(SmithError) as caught:
        asyncio.run(go())
    assert f"passed {COMPRESSED_MAX:,} bytes compressed" in caught.value.diagnostic.what
    assert asked and set(asked) == {"identity"}


def test_two_logins_at_once_leave_a_client_with_its_own_tokens(tmp_path: Path) -> None:
    """Login A registers, login B registers, A gets its tokens: the record holds A's
    client with A's tokens (each written with the client it was got with)."""
    from smith.plugins._mcp_oauth import _Store

    def client(name: str, port: int) -> OAuthClientInformationFull:
        return OAuthClientInformationFull(
            client_id=name,
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # type: ignore[list-item]
        )

    a, b = (
        _Store("web", "http://s/mcp", str(tmp_path)),
        _Store("web", "http://s/mcp", str(tmp_path)),
    )
    asyncio.run(a.set_client_info(client("client-a", 1111)))
    asyncio.run(b.set_client_info(client("client-b", 2222)))
    asyncio.run(a.set_tokens(OAuthToken(access_token="at-a", refresh_token="rt-a")))
    record = _record(tmp_path)
    assert record["access"] == "at-a" and record["redirect-port"] == 1111
    assert isinstance(record["client"], dict) and record["client"]["client_id"] == "client-a"
