"""OAuth for the MCP client's HTTP servers, through the official SDK's client auth.

`oauth_auth` gives the `httpx2.Auth` an MCP server's Streamable HTTP client sends its
requests with: the SDK's `OAuthClientProvider`, which discovers the authorization server
(protected resource metadata, then authorization server metadata), registers smith as a
client (dynamic client registration), authorizes with PKCE and refreshes the access token
when it expires. The browser step is a URL handed to `say` and a loopback redirect: a
small HTTP server on 127.0.0.1 takes the authorization response. `login` runs that step for
`smith mcp login ALIAS`; a run that is not interactive never starts it, and fails with
`mcp.login-needed` instead.

What the login yields (tokens, their expiry, the registered client and the redirect's
port, which the registration names) is kept in smith's credential store, the owner-only
auth file `$SMITH_HOME/auth.json`, under `mcp:ALIAS` (so `smith auth status` shows it and
`smith auth logout mcp:ALIAS` forgets it). A record is bound to the server's URL: tokens
stored for one URL are never sent to another. Every token is registered as a credential
the moment it is read or received, so no output, diagnostic or record shows it.

Import this module when an HTTP server is connected, not before: it imports the SDK.

    SmithError            mcp.login-needed (a login is needed, and this run may not
                          start one) or mcp.login-failed (the login did not complete)
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.providers import AuthFile, Credential
from smith.text import inert

from ._mcp_loopback import CALLBACK_PATH, Loopback, free_port

__all__ = [
    "MCP_LOGIN_FAILED",
    "MCP_LOGIN_NEEDED",
    "login",
    "login_async",
    "login_error",
    "logout",
    "oauth_auth",
    "store_key",
]

MCP_LOGIN_NEEDED = DiagnosticKind(
    "mcp.login-needed",
    what="the MCP server {alias} ({url}) needs a login",
    why="it asks for OAuth authorization, {reason}, and this run does not start a login "
    "(it would wait on a browser)",
    fix="run `smith mcp login {alias}`, then start again",
)
MCP_LOGIN_FAILED = DiagnosticKind(
    "mcp.login-failed",
    what="logging in to the MCP server {alias} ({url}) failed: {reason}",
    why="smith may call the server's tools only with the authorization this login gets",
    fix="run `smith mcp login {alias}` again; if it fails the same way, check the "
    "server's url in the mcp configuration",
)

LOGIN_TIMEOUT = 300.0  # seconds the loopback waits for the browser's answer
EXPIRY_MARGIN = 30.0  # a stored token this close to its expiry is renewed before use
# Most bytes of one answer to the login's own requests (metadata, registration, token):
# each is a few KiB, and one that streams on is cut off here, not kept in memory.
ANSWER_MAX = 1024 * 1024
# ... and of one sent compressed though the login asks for none: at gzip's worst ratio
# (about 1:1000) it decodes to at most some 16 MiB.
COMPRESSED_MAX = 16 * 1024
SAID_MAX = 300  # characters of a server's own words (error_description) shown


def _oneline(text: str, limit: int | None = SAID_MAX) -> str:
    """A server's text for the terminal: controls made visible, one line, bounded."""
    line = " ".join(inert(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


def store_key(alias: str) -> str:
    """The auth file's key for an MCP server's OAuth record."""
    return f"mcp:{alias}"


def _secret(alias: str, field: str) -> str:
    """The placeholder name a value is redacted as (as the auth file's own are named)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"smith_auth_mcp_{alias}_{field}").upper()


# -- the record in the credential store ----------------------------------------------------


class _Store:
    """The SDK's TokenStorage over the auth file's `mcp:ALIAS` record.

    The record: {"type": "oauth", "url", "access", "refresh", "expires" (epoch seconds),
    "scope", "client" (the registration, as the server answered it), "redirect-port"}.
    """

    def __init__(self, alias: str, url: str, home: str) -> None:
        self.alias = alias
        self.url = url
        self.file = AuthFile(home)
        self.key = store_key(alias)
        self.expires: float | None = None  # of the tokens get_tokens last gave
        self.had_tokens = False
        # The registration this flow uses (read or made): written again with its tokens,
        # so a record never pairs one login's client with another's tokens.
        self.client: dict[str, object] = {}

    def record(self) -> dict[str, object]:
        """This server's record; empty if there is none, or it is for another URL."""
        record = self.file.get(self.key)
        if record is None or record.get("type") != "oauth" or record.get("url") != self.url:
            return {}
        return record

    def _note(self, field: str, value: object) -> None:
        if isinstance(value, str):
            Credential(
                self.key,
                value,
                f"auth file {self.file.path}",
                kind="oauth",
                name=_secret(self.alias, field),
            )

    def _change(self, fields: dict[str, object], *, drop: tuple[str, ...] = ()) -> None:
        def change(records: dict[str, dict[str, object]]) -> bool:
            old = records.get(self.key) or {}
            keep = old if old.get("type") == "oauth" and old.get("url") == self.url else {}
            new = {k: v for k, v in keep.items() if k not in drop}
            new.update(type="oauth", url=self.url, **fields)
            records[self.key] = new
            return True

        self.file.update(change)

    def redirect_port(self) -> int | None:
        port = self.record().get("redirect-port")
        return port if isinstance(port, int) and not isinstance(port, bool) else None

    def forget_tokens(self) -> None:
        if self.record():
            self._change({}, drop=("access", "refresh", "expires", "scope"))

    def forget_client(self) -> None:
        if self.record():
            self._change({}, drop=("client", "redirect-port"))

    # TokenStorage: the SDK's calls, from its event loop

    async def get_tokens(self) -> OAuthToken | None:
        record = await anyio.to_thread.run_sync(self.record)
        access = record.get("access")
        if not isinstance(access, str) or not access:
            return None
        refresh = record.get("refresh")
        self._note("access", access)
        self._note("refresh", refresh)
        expires = record.get("expires")
        self.expires = float(expires) if isinstance(expires, int | float) else None
        self.had_tokens = True
        scope = record.get("scope")
        return OAuthToken(
            access_token=access,
            refresh_token=refresh if isinstance(refresh, str) else None,
            scope=scope if isinstance(scope, str) else None,
        )

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._note("access", tokens.access_token)
        self._note("refresh", tokens.refresh_token)
        expires = None if tokens.expires_in is None else time.time() + float(tokens.expires_in)
        fields: dict[str, object] = {
            "access": tokens.access_token,
            "refresh": tokens.refresh_token,
            "expires": expires,
            "scope": tokens.scope,
            **self.client,
        }
        await anyio.to_thread.run_sync(lambda: self._change(fields))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        record = await anyio.to_thread.run_sync(self.record)
        client = record.get("client")
        if not isinstance(client, dict):
            return None
        try:
            info = OAuthClientInformationFull.model_validate(client)
        except ValidationError:
            return None  # unreadable: registering again is the remedy
        self._note("client_secret", info.client_secret)
        self.client = {"client": client, "redirect-port": _port_of(info)}
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._note("client_secret", client_info.client_secret)
        fields: dict[str, object] = {
            "client": client_info.model_dump(mode="json", exclude_none=True),
            "redirect-port": _port_of(client_info),
        }
        self.client = fields
        await anyio.to_thread.run_sync(lambda: self._change(fields))


def _port_of(client: OAuthClientInformationFull) -> int | None:
    uris = client.redirect_uris or []
    return urlsplit(str(uris[0])).port if uris else None


# -- the provider -------------------------------------------------------------------------


def _login_needed(store: _Store) -> SmithError:
    reason = (
        "its stored authorization was refused or could not be renewed"
        if store.had_tokens
        else "no authorization is stored for it"
    )
    return MCP_LOGIN_NEEDED.error(
        source=Source("argument", store.alias), alias=store.alias, url=store.url, reason=reason
    )


class _Provider(OAuthClientProvider):
    """The SDK's provider, with two changes to its flow (methods of its own it calls):

    - it is told when stored tokens expire: its own load of them keeps no expiry, so a
      token stored by an earlier run would be sent expired, refused, and replaced by a
      new login instead of being refreshed;
    - a run that may not start a login tries the refresh token when the server refuses
      an access token that has not expired by smith's clock (revoked, expired early, or
      its expiry never told), where the SDK would go straight to a new login;
    - the answers to its own requests (metadata, registration, token) are read up to
      ANSWER_MAX bytes: past that the login fails, where the SDK would read on.
    """

    smith_store: _Store
    smith_interactive: bool
    _smith_refreshing = False

    async def _initialize(self) -> None:
        await super()._initialize()
        expires = self.smith_store.expires
        if self.context.current_tokens is not None and expires is not None:
            self.context.token_expiry_time = expires - EXPIRY_MARGIN

    async def _perform_authorization(self) -> httpx2.Request:
        tokens = self.context.current_tokens
        self._smith_refreshing = bool(
            not self.smith_interactive
            and tokens is not None
            and tokens.refresh_token
            and self.context.client_info is not None
        )  # at most once a request: a refused retry ends the SDK's flow
        if self._smith_refreshing:
            return await self._refresh_token()
        return await super()._perform_authorization()

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                own = outgoing is not request  # the flow's own: bounded before it reads
                if own:
                    outgoing.headers["Accept-Encoding"] = "identity"
                response = yield outgoing
                if own:
                    response.stream = _Bounded(response, self.smith_store)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if not self._smith_refreshing:
            await super()._handle_token_response(response)
            return
        self._smith_refreshing = False
        if not await self._handle_refresh_response(response):
            raise _login_needed(self.smith_store)


class _Bounded(httpx2.AsyncByteStream):
    """An answer's body, failing the login past ANSWER_MAX bytes."""

    def __init__(self, response: httpx2.Response, store: _Store) -> None:
        self.inner = response.stream
        self.url = str(response.request.url)
        self.store = store
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        self.most = ANSWER_MAX if encoding in ("", "identity") else COMPRESSED_MAX

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self.inner, httpx2.AsyncByteStream)
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > self.most:
                raise MCP_LOGIN_FAILED.error(
                    source=Source("argument", self.store.alias),
                    alias=self.store.alias,
                    url=self.store.url,
                    reason=f"the answer from {_oneline(self.url)} passed {self.most:,} "
                    f"bytes{' compressed' if self.most != ANSWER_MAX else ''}, where an "
                    "authorization server's metadata, registration or token is a few KiB",
                )
            yield chunk

    async def aclose(self) -> None:
        if isinstance(self.inner, httpx2.AsyncByteStream):
            await self.inner.aclose()


class _Browser:
    """The browser step: the URL handed to `say`, the answer taken at the loopback."""

    def __init__(
        self,
        store: _Store,
        say: Callable[[str], None],
        *,
        interactive: bool,
        port: int,
        loopback: Loopback | None = None,
        timeout: float = LOGIN_TIMEOUT,
    ) -> None:
        self.store = store
        self.say = say
        self.interactive = interactive
        self.port = port
        self.loopback = loopback
        self.timeout = timeout
        self.state: str | None = None  # the authorization's, never shown

    def _error(self, reason: str) -> SmithError:
        return MCP_LOGIN_FAILED.error(
            source=Source("argument", self.store.alias),
            alias=self.store.alias,
            url=self.store.url,
            reason=reason,
        )

    async def redirect(self, authorization_url: str) -> None:
        if not self.interactive:
            raise _login_needed(self.store)
        if self.loopback is None:
            try:
                self.loopback = Loopback(self.port)
            except OSError as exc:
                raise self._error(
                    f"the redirect's port {self.port} on 127.0.0.1 is taken ({exc.strerror})"
                ) from None
        state = parse_qs(urlsplit(authorization_url).query).get("state")
        self.state = state[0] if state else None
        self.loopback.state = self.state  # answers without it are not this login's
        self.loopback.start()
        self.say(
            f"To log in to the MCP server {self.store.alias}, open this URL in a browser "
            f"(it redirects back to {self.loopback.redirect_uri}):\n"
            + _oneline(authorization_url, None)
        )

    async def callback(self) -> AuthorizationCodeResult:
        loopback = self.loopback
        if loopback is None:  # the SDK calls redirect first
            raise self._error("the authorization step did not start")
        try:
            answer = await loopback.wait(self.timeout)
        finally:
            loopback.close()
            self.loopback = None
        if answer is None:
            raise self._error(f"no answer reached {loopback.redirect_uri} in {self.timeout:g}s")
        if "error" in answer:
            said = _oneline(answer.get("error_description") or "")
            raise self._error(
                f"the authorization server answered {_oneline(answer['error'], 80)}"
                + (f": {said}" if said else "")
            )
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )


def _quiet(record: logging.LogRecord) -> bool:
    """The SDK logs its flow's errors with a traceback; smith's own say it all."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, SmithError)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_quiet)
# Not on stderr either: with no handler of its own, Python's last resort prints the SDK's
# warnings ("Token refresh failed: 400") and tracebacks ("OAuth flow error") there, under
# smith's own diagnostic. A handler smith's --debug log adds still gets them.
logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())


def _build(
    alias: str,
    url: str,
    *,
    home: str,
    say: Callable[[str], None],
    interactive: bool,
    port: int | None,
    loopback: Loopback | None = None,
) -> tuple[_Provider, _Browser]:
    store = _Store(alias, url, home)
    if loopback is not None:
        port = loopback.port
    elif port is None:
        port = store.redirect_port() or free_port()
    browser = _Browser(store, say, interactive=interactive, port=port, loopback=loopback)
    metadata = OAuthClientMetadata(
        client_name="smith",
        redirect_uris=[AnyUrl(f"http://127.0.0.1:{port}{CALLBACK_PATH}")],
        token_endpoint_auth_method="none",  # a native app: a public client, with PKCE
    )
    provider = _Provider(
        server_url=url,
        client_metadata=metadata,
        storage=store,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )
    provider.smith_store = store
    provider.smith_interactive = interactive
    return provider, browser


def oauth_auth(
    alias: str,
    url: str,
    *,
    home: str,
    redirect_port: int | None = None,
    say: Callable[[str], None],
    interactive: bool,
) -> httpx2.Auth:
    """The auth for the MCP server `alias` at `url` (its Streamable HTTP endpoint), to
    give its `httpx2.AsyncClient`. A server that does not ask for authorization gets no
    header. `home`: SMITH_HOME, where the auth file is; `redirect_port`: the loopback
    redirect's port (default: the one the stored registration names, else any free one).
    When a login is needed and `interactive` is False, the request fails with
    `mcp.login-needed` (see `login_error`); when it is True, the login's URL goes to
    `say` and the request waits (up to LOGIN_TIMEOUT) for the browser's answer."""
    provider, _ = _build(
        alias, url, home=home, say=say, interactive=interactive, port=redirect_port
    )
    return provider


def login_error(exc: BaseException) -> SmithError | None:
    """The SmithError of this module (login needed, login failed) that `exc` carries: it
    is, it caused it, or an exception group holds it. None if there is none."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SmithError) and current.diagnostic.code in (
            MCP_LOGIN_NEEDED.code,
            MCP_LOGIN_FAILED.code,
        ):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


async def login_async(
    alias: str,
    url: str,
    *,
    home: str,
    say: Callable[[str], None],
    redirect_port: int | None = None,
    timeout: float = LOGIN_TIMEOUT,
) -> int:
    """`login`, in the caller's event loop."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    store = _Store(alias, url, home)
    await anyio.to_thread.run_sync(store.forget_tokens)  # a login authorizes afresh
    port = redirect_port if redirect_port is not None else store.redirect_port()
    try:
        loopback = Loopback(port or 0)
    except OSError:
        if redirect_port is not None:
            raise MCP_LOGIN_FAILED.error(
                source=Source("argument", alias),
                alias=alias,
                url=url,
                reason=f"the redirect's port {redirect_port} on 127.0.0.1 is taken",
            ) from None
        # The registration names a port another program holds now: register anew.
        await anyio.to_thread.run_sync(store.forget_client)
        loopback = Loopback()
    provider, browser = _build(
        alias, url, home=home, say=say, interactive=True, port=None, loopback=loopback
    )
    browser.timeout = timeout
    try:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0)) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            tools = await client.list_tools()
    except Exception as exc:
        found = login_error(exc)
        if found is not None:
            raise found from None
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]  # anyio's task groups wrap what failed
        if isinstance(cause, OAuthFlowError | OAuthRegistrationError | OAuthTokenError):
            reason = str(cause)
        else:
            reason = f"{type(cause).__name__}: {cause}"
        if browser.state:  # the SDK's "State parameter mismatch" names it
            reason = reason.replace(browser.state, "(this login's state)")
        reason = _oneline(reason, 1000)
        raise MCP_LOGIN_FAILED.error(
            source=Source("argument", alias), alias=alias, url=url, reason=reason
        ) from None
    finally:
        loopback.close()
    if not store.record().get("access"):
        say(f"The MCP server {alias} did not ask for a login: its tools are reachable as is.")
        return 0
    say(f"Logged in to the MCP server {alias} ({len(tools.tools)} tools).")
    return 0


def login(
    alias: str,
    url: str,
    *,
    home: str,
    say: Callable[[str], None],
    redirect_port: int | None = None,
    timeout: float = LOGIN_TIMEOUT,
) -> int:
    """`smith mcp login ALIAS`: authorize smith at the server `alias` (at `url`) afresh,
    the browser step's URL handed to `say`, and keep the tokens; 0 when done. Raises
    SmithError (mcp.login-failed) when the login does not complete."""
    import asyncio

    return asyncio.run(
        login_async(alias, url, home=home, say=say, redirect_port=redirect_port, timeout=timeout)
    )


def logout(alias: str, *, home: str, say: Callable[[str], None]) -> int:
    """Forget what a login to `alias` stored (its tokens and its registration)."""
    file = AuthFile(home)
    if file.remove(store_key(alias)):
        say(f"Removed the stored login for the MCP server {alias} from {file.path}.")
    else:
        say(f"No login is stored for the MCP server {alias}.")
    return 0
