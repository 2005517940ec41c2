"""The host functions: what smith offers a sandboxed plugin, exactly the `host`
interface of wit/smith-plugin.wit (HOST_FUNCTIONS, by their WIT names; a test holds the
two equal).

Each checks the package's grants, runs through smith's own machinery (the journal, the
bash tool's sandbox, the HTTP engine, the UI intents, the log) and answers a failure
record (`plugin.grant-denied`, `plugin.host-failed`, `plugin.cancelled`) rather than
raising: a host function never traps its caller. The effects a plugin causes (a file
read, a command, a request, a secret reference) are journaled in the session, with the
plugin's name and the runtime's generation in the record's cause, before and after.

Text a plugin gives to be shown (notices, status lines, replies, descriptions) goes
through `plain`: escape sequences are removed and other control characters made
visible, so a plugin cannot drive the terminal.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smith._inert import inert

if TYPE_CHECKING:
    from smith.effects import ToolContext
    from smith.packages import Grants
    from smith.ui import Shown

MAX_READ = 8 * 1024 * 1024  # read-file refuses files over this
MAX_LOG = 4096  # a log line is cut here
MAX_HTTP_BODY = 8 * 1024 * 1024  # the response body given back is cut here
SECRET_REF = "{{{{secret:{name}}}}}"
_SECRET_RE = re.compile(r"\{\{secret:([A-Za-z_][A-Za-z0-9_]*)\}\}")
# An escape sequence: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other ESC X, and
# the 8-bit CSI/OSC introducers.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_SHELL_OPERATORS = re.compile(r"[;&|`$<>\n\r(){}]")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}

log = logging.getLogger("smith.plugins")


def plain(text: str) -> str:
    """`text` as plain text: escape sequences removed, other control characters shown
    as visible stand-ins (tab and newline kept)."""
    return inert(_ESCAPES.sub("", text))


class Failure(Exception):
    """A host call that did not do what was asked: the WIT's `failure` record."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Call:
    """Where the call being handled runs: the tool context (project root, session,
    sandbox: None where the runtime has none), how to show a UI intent, the runtime's
    generation, the call's wall-clock end and whether it was cancelled."""

    ctx: ToolContext | None = None
    post: Callable[[Shown], None] = lambda shown: None
    generation: int = 0
    ends: float = float("inf")
    cancel: threading.Event = field(default_factory=threading.Event)

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())


class HostCalls:
    """The host side of one plugin: its name and grants, and the call in progress."""

    def __init__(self, plugin: str, grants: Grants) -> None:
        self.plugin = plugin
        self.grants = grants
        self.call = Call()
        self.effects = 0  # host effects run (journaled or not), for the plugin's usage

    # -- the WIT's host functions, in its order --------------------------------------

    def log(self, level: str, message: str) -> None:
        text = inert(message[:MAX_LOG])
        log.log(_LEVELS.get(level, logging.ERROR), "plugin %s: %s", self.plugin, text)

    def cancelled(self) -> bool:
        return self.call.cancel.is_set() or self.call.remaining() <= 0

    def read_file(self, path: str) -> bytes:
        real = self._granted_path(path)
        with self._journal("read-file", {"path": path}, mutating=False) as done:
            try:
                size = os.path.getsize(real)
                if size > MAX_READ:
                    raise Failure(
                        "plugin.host-failed",
                        f"{path} is {size} bytes, over the {MAX_READ}-byte limit of read-file",
                    )
                with open(real, "rb") as f:
                    data = f.read(MAX_READ + 1)
            except OSError as exc:
                raise Failure("plugin.host-failed", f"cannot read {path}: {exc.strerror}") from exc
            done["bytes"] = len(data)
            return data

    def run(self, command: str, timeout_ms: int) -> dict[str, Any]:
        program = self._granted_command(command)
        ctx = self.call.ctx
        if ctx is None:
            raise Failure("plugin.host-failed", "no project to run commands in here")
        from smith.effects import (
            EffectJournal,
            ToolContext,
            ToolResult,
            ToolSpec,
            builtin_tools,
            run_tool,
        )

        seconds = self.call.remaining()
        if timeout_ms:
            seconds = min(seconds, timeout_ms / 1000)
        if seconds <= 0:
            raise Failure("plugin.cancelled", "the call's deadline has passed")
        own = ToolContext(
            root=ctx.root,
            cwd=ctx.root,
            session=ctx.session,
            limits=dict(ctx.limits),
            withhold=ctx.withhold,
            sandbox=ctx.sandbox,
            approval="never",  # a plugin's command never leaves the sandbox
        )
        own.cancelled = self.call.cancel
        own.mask = ctx.mask
        restored: dict[str, str] = {}  # value -> its reference, masked in the output

        def prepare(args: dict[str, object]) -> dict[str, object]:
            import shlex

            def one(match: re.Match[str]) -> str:  # a word of its own, quoted
                value = self._restore(match.group(0))
                restored[value] = match.group(0)
                return shlex.quote(value)

            return {**args, "command": _SECRET_RE.sub(one, str(args["command"]))}

        if ctx.session is None:
            raise Failure("plugin.host-failed", "no session to journal the command in")
        journal = EffectJournal(ctx.session, generation=self.call.generation)
        bash = builtin_tools()["bash"]

        def masked(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
            result = bash.run(ctx, args)  # what is journaled holds references, not values
            for value, ref in restored.items():
                result.text = result.text.replace(value, ref)
                for key, item in (result.details or {}).items():
                    if isinstance(item, str):
                        result.details[key] = item.replace(value, ref)
            return result

        spec = ToolSpec(
            bash.name, bash.description, bash.parameters, masked, effect=bash.effect,
            mutating=bash.mutating, command_argument=bash.command_argument,
        )  # fmt: skip
        outcome = run_tool(
            journal,
            spec,
            {"command": command, "timeout": max(1, int(seconds))},
            own,
            cause=self._cause("run"),
            prepare=prepare,
        )
        self.effects += 1
        text = outcome.result.text
        details = outcome.result.details or {}
        status = details.get("exit_status")
        code = status if isinstance(status, int) and not details.get("timed_out") else -1
        log.debug("plugin %s ran %s: exit %s", self.plugin, program, code)
        return {
            "exit-code": code,
            "stdout": text,
            "stderr": "",
            "truncated": bool(details.get("full_output")),
        }

    def http(self, request: Mapping[str, Any]) -> dict[str, Any]:
        from urllib.parse import urlsplit

        url = str(request["url"])
        parts = urlsplit(url)
        hostname = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not hostname:
            raise Failure("plugin.host-failed", f"{url!r} is not an http(s) URL with a host")
        if not any(fnmatch.fnmatchcase(hostname, h.lower()) for h in self.grants.hosts):
            raise Failure(
                "plugin.grant-denied",
                f"the host {hostname} is not granted to plugin {self.plugin} "
                f'(its grants name {_listed(self.grants.hosts)}): add `host "{hostname}"` '
                "to its plugin.kdl grants and reinstall",
            )
        headers = {str(k): self._restore(str(v)) for k, v in request["headers"]}
        method = str(request["method"]).upper() or "GET"
        shown: dict[str, object] = {"method": method, "url": url, "headers": sorted(headers)}
        with self._journal("http", shown, mutating=method not in ("GET", "HEAD")) as done:
            status, back, body = _fetch(method, url, headers, bytes(request["body"]), self.call)
            done["status"] = status
            return {"status": status, "headers": back, "body": body}

    def secret(self, name: str) -> str:
        if name not in self.grants.secrets:
            raise Failure(
                "plugin.grant-denied",
                f"the secret {name} is not granted to plugin {self.plugin} (its grants name "
                f"{_listed(self.grants.secrets)})",
            )
        with self._journal("secret", {"name": name}, mutating=False):
            return SECRET_REF.format(name=name)

    def notify(self, level: str, text: str) -> None:
        from smith.ui import Notify

        shown = level if level in ("warning", "error") else "info"
        self.call.post(Notify(plain(text), shown))  # type: ignore[arg-type]

    def status(self, key: str, text: str) -> None:
        from smith.ui import Status

        self.call.post(Status(plain(text), plain(key)))

    # -- grants, journal --------------------------------------------------------------

    def _granted_path(self, path: str) -> str:
        root = self.call.ctx.root if self.call.ctx is not None else os.getcwd()
        real = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
        for grant in self.grants.paths:
            top = os.path.realpath(os.path.join(root, os.path.expanduser(grant)))
            if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
                return real
        raise Failure(
            "plugin.grant-denied",
            f"{path} (really {real}) is outside the paths granted to plugin {self.plugin} "
            f"({_listed(self.grants.paths)}): add a `path` grant to its plugin.kdl and "
            "reinstall",
        )

    def _granted_command(self, command: str) -> str:
        import shlex

        if _SHELL_OPERATORS.search(_SECRET_RE.sub("secret", command)):
            raise Failure(
                "plugin.grant-denied",
                f"{command!r} uses shell operators: a plugin runs one granted program "
                "with arguments",
            )
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise Failure("plugin.host-failed", f"cannot read {command!r}: {exc}") from exc
        program = os.path.basename(words[0]) if words else ""
        if program not in self.grants.commands:
            raise Failure(
                "plugin.grant-denied",
                f"the command {program or command!r} is not granted to plugin {self.plugin} "
                f"(its grants name {_listed(self.grants.commands)})",
            )
        return program

    def _restore(self, value: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.grants.secrets:
                raise Failure("plugin.grant-denied", f"the secret {name} is not granted")
            if name not in os.environ:
                raise Failure("plugin.host-failed", f"the secret {name} is not set")
            return os.environ[name]

        return _SECRET_RE.sub(one, value)

    def _cause(self, function: str) -> dict[str, object]:
        return {"plugin": self.plugin, "generation": self.call.generation, "host": function}

    def _journal(self, function: str, shown: dict[str, object], *, mutating: bool) -> _Journaled:
        self.effects += 1
        ctx = self.call.ctx
        session = ctx.session if ctx is not None else None
        return _Journaled(self, function, shown, mutating, session)


class _Journaled:
    """One host effect's intent and completion in the session's journal (nothing where
    there is no session: a bare library runtime)."""

    def __init__(
        self, host: HostCalls, function: str, shown: dict[str, object], mutating: bool,
        session: Any,
    ) -> None:  # fmt: skip
        self.host, self.function, self.shown = host, function, shown
        self.mutating, self.session = mutating, session
        self.done: dict[str, object] = {}
        self.effect: Any = None
        self.journal: Any = None

    def __enter__(self) -> dict[str, object]:
        if self.session is not None:
            from smith.effects import EffectJournal

            self.journal = EffectJournal(self.session, generation=self.host.call.generation)
            self.effect = self.journal.begin(
                f"{self.host.plugin}.{self.function}",
                self.shown,
                kind="plugin",
                mutating=self.mutating,
                cause=self.host._cause(self.function),
            )
        return self.done

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self.effect is None:
            return
        ok = kind is None
        self.journal.finish(
            self.effect,
            outcome="ok" if ok else "error",
            mutation="applied" if ok and self.mutating else "not-applied",
            output=self.done if ok else {"error": str(exc)},
        )


def narrowed(installed: Grants, configured: object) -> Grants:
    """The grants a plugin keeps: `installed`, or, where configuration lists some
    (`plugins.NAME.grants "path docs/api" "host api.github.com"`), those of them that lie
    within an installed grant; configuration never widens them."""
    from smith.packages import Grants

    if not isinstance(configured, list | tuple):
        return installed
    kept: dict[str, list[str]] = {"path": [], "command": [], "host": [], "secret": []}
    for item in configured:
        kind, _, value = str(item).strip().partition(" ")
        value = value.strip()
        if kind not in kept or not value:
            log.warning("plugins grants: %r is not KIND VALUE (path, command, host, secret)", item)
        elif _within(installed, kind, value):
            kept[kind].append(value)
        else:
            log.warning("plugins grants: %r is not within the installed grants: ignored", item)
    return Grants(
        paths=tuple(kept["path"]),
        commands=tuple(kept["command"]),
        hosts=tuple(kept["host"]),
        secrets=tuple(kept["secret"]),
    )


def _within(installed: Grants, kind: str, value: str) -> bool:
    if kind == "command":
        return value in installed.commands
    if kind == "secret":
        return value in installed.secrets
    if kind == "host":
        return any(fnmatch.fnmatchcase(value.lower(), h.lower()) for h in installed.hosts)
    norm = os.path.normpath(value)
    tops = [os.path.normpath(top) for top in installed.paths]
    return any(norm == top or norm.startswith(top.rstrip(os.sep) + os.sep) for top in tops)


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(items) if items else "nothing"


def _fetch(
    method: str, url: str, headers: dict[str, str], body: bytes, call: Call
) -> tuple[int, list[tuple[str, str]], bytes]:
    import asyncio

    from smith.providers import shared_engine

    async def go() -> tuple[int, list[tuple[str, str]], bytes]:
        async with shared_engine().request(method, url, headers=headers, content=body) as r:
            data = await r.read(MAX_HTTP_BODY)
            return r.status, [(str(k), str(v)) for k, v in r.headers.items()], data

    async def bounded() -> tuple[int, list[tuple[str, str]], bytes]:
        return await asyncio.wait_for(go(), max(0.1, call.remaining()))

    try:
        return asyncio.run(bounded())
    except TimeoutError as exc:
        raise Failure("plugin.cancelled", f"no response from {url} within the call") from exc
    except Exception as exc:  # HttpError and the like: said, not raised into the guest
        raise Failure("plugin.host-failed", f"{method} {url}: {exc}") from exc


# The host interface by its WIT names: what the linker offers every instance.
HOST_FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "log": HostCalls.log,
    "cancelled": HostCalls.cancelled,
    "read-file": HostCalls.read_file,
    "run": HostCalls.run,
    "http": HostCalls.http,
    "secret": HostCalls.secret,
    "notify": HostCalls.notify,
    "status": HostCalls.status,
}
# Those whose result is a `result<record, failure>` (both cases records: given tagged).
TAGGED = frozenset({"run", "http"})
