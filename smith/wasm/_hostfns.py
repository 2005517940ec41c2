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
from smith.wasm._grants import git_runs_another
from smith.wasm._grants import under as _under
from smith.wasm._journaled import Journaled
from smith.wasm._routes import Routing

if TYPE_CHECKING:
    from smith.effects import SecretRoutes, ToolContext
    from smith.packages import Grants
    from smith.ui import Shown

# Bytes cross into the guest at about 1 MB/s (wasmtime-py lowers a list<u8> item by
# item): 1 MiB fits in a 2 s call, 8 MiB took 12 s and faulted.
MAX_READ = 1024 * 1024  # read-file refuses files over this
MAX_LOG = 4096  # a log line is cut here
MAX_LOGS = 200  # log lines kept per call (one warning says the rest were dropped)
MAX_SHOWN = 100  # notices, status lines and hatches per call (one warning for the rest)
MAX_EFFECTS = 1000  # host effects (journaled) per call; past it they fail
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
# Headers the HTTP engine writes itself (from the URL and the body): a plugin's are dropped.
_HOP_BY_HOP = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
     "te", "trailer", "proxy-authorization", "proxy-connection"}
)  # fmt: skip
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
    parent: str | None = None  # the effect that caused the call (a tool call's intent)
    ends: float = float("inf")
    cancel: threading.Event = field(default_factory=threading.Event)
    logged: int = 0  # log lines this call wrote
    shown: int = 0  # UI intents this call posted
    effects: int = 0  # host effects this call caused

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())


class HostCalls(Routing):
    """The host side of one plugin: its name and grants, and the call in progress (and,
    from Routing, what the secret routes allow it)."""

    def __init__(self, plugin: str, grants: Grants, frontend: tuple[str, ...] = ()) -> None:
        self.plugin = plugin
        self.grants = grants
        self.frontend = frontend  # the escape hatches its plugin.kdl declares
        self.installed = grants  # as installed (grants: narrowed by configuration)
        self.configured = False  # whether its settings were handed (then grants are theirs)
        self.call = Call()
        self.effects = 0  # host effects run (journaled or not), for the plugin's usage
        self.routes: SecretRoutes | None = None  # the secret routes its last context had
        self.handed: set[str] = set()  # the secrets it was handed as plaintext (Routing)

    # -- the WIT's host functions, in its order --------------------------------------

    def log(self, level: str, message: str) -> None:
        self.call.logged += 1
        if self.call.logged > MAX_LOGS:
            if self.call.logged == MAX_LOGS + 1:
                log.warning("plugin %s: over %d log lines in one call: the rest dropped",
                            self.plugin, MAX_LOGS)  # fmt: skip
            return
        text = inert(self.mask(message[:MAX_LOG]))
        log.log(_LEVELS.get(level, logging.ERROR), "plugin %s: %s", self.plugin, text)

    def cancelled(self) -> bool:
        return self.call.cancel.is_set() or self.call.remaining() <= 0

    def read_file(self, path: str) -> bytes:
        lexical, top = self._granted_path(path)
        with self._journal("read-file", {"path": path}, mutating=False) as done:
            data = self._read_within(path, lexical, top)
            done["bytes"] = len(data)
            return data

    def _read_within(self, path: str, lexical: str, top: str) -> bytes:
        """The file at `lexical`, opened once (never blocking: a FIFO or device is
        refused, not waited on) and read only if what was opened really lies within the
        grant `top` and outside smith's own directories: what is read is what was
        checked, whatever is swapped in its place meanwhile."""
        import stat

        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NOCTTY", 0)
        try:
            fd = os.open(lexical, flags)
        except OSError as exc:
            raise Failure("plugin.host-failed", f"cannot read {path}: {exc.strerror}") from exc
        try:
            info = os.fstat(fd)
            real = _opened(fd, lexical)
            if not _under(real, top) or self._forbidden(real):
                raise self._denied(path)
            if not stat.S_ISREG(info.st_mode):
                raise Failure("plugin.host-failed", f"{path} is not a regular file")
            if info.st_size > MAX_READ:
                raise Failure(
                    "plugin.host-failed",
                    f"{path} is {info.st_size} bytes, over the {MAX_READ}-byte limit of read-file",
                )
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_READ:
                chunk = os.read(fd, min(1 << 20, MAX_READ + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > MAX_READ:
                raise Failure("plugin.host-failed", f"{path} grew over the {MAX_READ}-byte limit")
            return b"".join(chunks)
        except OSError as exc:
            raise Failure("plugin.host-failed", f"cannot read {path}: {exc.strerror}") from exc
        finally:
            os.close(fd)

    def run(self, command: str, timeout_ms: int) -> dict[str, Any]:
        program = self._granted_command(command)
        if why := self.unrouted(_SECRET_RE.findall(command), program=program):
            raise Failure("plugin.grant-denied", why)
        ctx = self.call.ctx
        if ctx is None:
            raise Failure("plugin.host-failed", "no project to run commands in here")
        mode = ctx.sandbox.effective
        if mode not in ("workspace-write", "read-only"):
            raise Failure(
                "plugin.grant-denied",
                f"plugin {self.plugin} may run {program} only inside smith's sandbox, and "
                f"commands here run {'without it' if mode == 'off' else 'nowhere'} "
                f"(sandbox {mode}): set sandbox.mode to workspace-write or read-only "
                "where the sandbox can run",
            )
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
        # Neither a granted secret's variable nor a credential smith withholds from bash
        # is in the command's environment: a secret reaches a command only as a
        # reference in its words, and its value is masked in all it prints.
        secrets = frozenset(self.installed.secrets) | frozenset(self.grants.secrets)
        own = ToolContext(
            root=ctx.root,
            cwd=ctx.root,
            session=ctx.session,
            limits=dict(ctx.limits),
            withhold=ctx.withhold | secrets,
            sandbox=ctx.sandbox,
            approval="never",  # a plugin's command never leaves the sandbox
        )
        own.cancelled = self.call.cancel
        own.mask = ctx.mask
        restored = self._values(secrets)  # value -> its reference, masked in the output

        def prepare(args: dict[str, object]) -> dict[str, object]:
            import shlex

            def one(match: re.Match[str]) -> str:  # a word of its own, quoted
                value = self._restore(match.group(0))
                restored[value] = match.group(0)
                return shlex.quote(value)

            return {**args, "command": _SECRET_RE.sub(one, str(args["command"]))}

        if ctx.session is None:
            raise Failure("plugin.host-failed", "no session to journal the command in")
        self._effect()
        journal = EffectJournal(ctx.session, generation=self.call.generation)
        bash = builtin_tools()["bash"]

        def masked(ctx: ToolContext, args: dict[str, object]) -> ToolResult:
            result = bash.run(ctx, args)  # what is journaled holds references, not values
            result.text = _mask(result.text, restored)
            for key, item in (result.details or {}).items():
                if isinstance(item, str):
                    result.details[key] = _mask(item, restored)
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
        if not _matches(hostname, self.grants.hosts):
            raise Failure(
                "plugin.grant-denied",
                f"the host {hostname} is not granted to plugin {self.plugin} "
                f"(its grants name {_listed(self.grants.hosts)}): "
                + self._remedy("host", hostname, _matches(hostname, self.installed.hosts)),
            )
        given = [(str(k), str(v)) for k, v in request["headers"]]
        refs = {m.group(1) for _, v in given for m in _SECRET_RE.finditer(v)}
        if refs and parts.scheme != "https" and not _loopback(hostname):
            raise Failure(
                "plugin.grant-denied",
                f"plugin {self.plugin} sends a secret reference to {url} over plain http: "
                "secrets are filled in only over https (or to this machine, loopback)",
            )
        if why := self.unrouted(refs, host=hostname):
            raise Failure("plugin.grant-denied", why)
        # Host and the framing/hop-by-hop headers are the HTTP engine's, from the URL.
        headers = {k: self._restore(v) for k, v in given if k.lower() not in _HOP_BY_HOP}
        method = str(request["method"]).upper() or "GET"
        shown: dict[str, object] = {"method": method, "url": url, "headers": sorted(headers)}
        values = self._values(frozenset(self.installed.secrets) | frozenset(self.grants.secrets))
        with self._journal("http", shown, mutating=method not in ("GET", "HEAD")) as done:
            status, back, body = _request(method, url, headers, bytes(request["body"]), self.call)
            done["status"] = status
            if values:  # a server that echoes the secret does not hand it to the plugin
                back = [(k, _mask(v, values)) for k, v in back]
                for value in sorted(values, key=len, reverse=True):
                    body = body.replace(value.encode(), values[value].encode())
            return {"status": status, "headers": back, "body": body}

    def secret(self, name: str) -> str:
        if name not in self.grants.secrets:
            raise Failure(
                "plugin.grant-denied",
                f"the secret {name} is not granted to plugin {self.plugin} (its grants name "
                f"{_listed(self.grants.secrets)}): "
                + self._remedy("secret", name, name in self.installed.secrets),
            )
        value = self.plaintext(name)  # a route says `plaintext true`: the value, else None
        if value == "":
            raise Failure("plugin.host-failed", f"the secret {name} is not set")
        shown: dict[str, object] = {"name": name, **({} if value is None else {"plaintext": True})}
        with self._journal("secret", shown, mutating=False):
            return SECRET_REF.format(name=name) if value is None else self.hand(name, value)

    def notify(self, level: str, text: str) -> None:
        from smith.ui import Notify

        shown = level if level in ("warning", "error") else "info"
        self._post(Notify(plain(self.mask(text)), shown))  # type: ignore[arg-type]

    def status(self, key: str, text: str) -> None:
        from smith.ui import Status

        self._post(Status(plain(self.mask(text)), plain(key)))

    def hatch(self, capability: str, value: str) -> None:
        from smith.ui import Hatch

        if capability not in self.frontend:
            raise Failure("plugin.grant-denied", f"the escape hatch {capability!r} is not "
                          f"declared by plugin {self.plugin} (its plugin.kdl declares "
                          f'{_listed(self.frontend)}): add `frontend "{capability}"`')  # fmt: skip
        try:
            shown = Hatch(capability, value)
        except ValueError as exc:
            raise Failure("plugin.hatch-refused", f"{capability}: {exc}") from None
        self._post(shown)

    def _post(self, shown: Shown) -> None:
        """Show a UI intent of the call: past MAX_SHOWN in one call, dropped (a loop of
        notices would flood the frontend), said once in the log."""
        self.call.shown += 1
        if self.call.shown <= MAX_SHOWN:
            self.call.post(shown)
        elif self.call.shown == MAX_SHOWN + 1:
            log.warning("plugin %s: over %d notices, status lines and hatches in one call: "
                        "the rest dropped", self.plugin, MAX_SHOWN)  # fmt: skip

    # -- grants, journal --------------------------------------------------------------

    def _granted_path(self, path: str) -> tuple[str, str]:
        """(`path` as an absolute lexical path, the grant root it lies in). A grant root
        is a directory of the project (or, given absolute at install, itself) whose real
        path is its own: a root replaced by a link (to / or anywhere) grants nothing.
        What the file really is is checked again once it is open (_read_within)."""
        root = os.path.realpath(self.call.ctx.root if self.call.ctx is not None else os.getcwd())
        lexical = os.path.normpath(os.path.join(root, os.path.expanduser(path)))
        for grant in self.grants.paths:
            top = os.path.normpath(os.path.join(root, os.path.expanduser(grant)))
            if not os.path.isabs(grant) and not _under(top, root):
                continue  # "../x": out of the project
            if os.path.realpath(top) != top or self._forbidden(top):
                continue
            if _under(lexical, top):
                return lexical, top
        raise self._denied(path)

    def _remedy(self, kind: str, value: str, installed: bool) -> str:
        """How `kind value` would be granted: installed with it, or (installed so)
        configuration narrowing it away, or settings not handed yet (no grants then)."""
        if not installed:
            return f'add `{kind} "{value}"` to its plugin.kdl grants and reinstall'
        if not self.configured:
            return "its settings were not handed to it yet (Plugin.configure), so it has no grants"
        return (
            f"its installed grants allow it, but configuration narrows them: add "
            f'"{kind} {value}" to plugins.{self.plugin}.grants'
        )

    def _denied(self, path: str) -> Failure:
        return Failure(
            "plugin.grant-denied",
            f"{path} is outside the paths granted to plugin {self.plugin} "
            f"({_listed(self.grants.paths)}), or reaches out of them through a link: add "
            "a `path` grant to its plugin.kdl and reinstall",
        )

    def _forbidden(self, real: str) -> bool:
        """Whether `real` is in smith's own directories (data, configuration, cache) or
        one sandbox.hide names: never readable by a plugin, whatever it was granted."""
        return any(_under(real, d) for d in self._own_dirs())

    def _own_dirs(self) -> list[str]:
        from smith import paths

        env = os.environ
        dirs = [
            env.get("SMITH_HOME") or paths.default_data_home(env),
            env.get("SMITH_CONFIG_HOME") or paths.default_config_home(env),
            env.get("SMITH_CACHE_HOME") or paths.default_cache_home(env),
        ]
        ctx = self.call.ctx
        if ctx is not None:
            dirs += [*ctx.sandbox.hidden, *ctx.sandbox.credentials]
        return [os.path.realpath(os.path.expanduser(d)) for d in dirs if d]

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
        program = words[0] if words else ""
        if program not in self.grants.commands:
            raise Failure(
                "plugin.grant-denied",
                f"the command {program or command!r} is not granted to plugin {self.plugin} "
                f"(its grants name {_listed(self.grants.commands)}): "
                + self._remedy("command", program, program in self.installed.commands),
            )
        why = git_runs_another(words[1:]) if program == "git" else None
        if why is not None:
            raise Failure(
                "plugin.grant-denied",
                f"{command!r} gives git {why!r}, which makes git run another program: a git "
                "grant runs git itself (no -c, --config-env, --upload-pack, --receive-pack, "
                "--exec, --template, ext:: remotes)",
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

    def _values(self, names: frozenset[str]) -> dict[str, str]:
        """The values of the secrets `names` that are set, each to its reference."""
        values = {os.environ.get(n, ""): SECRET_REF.format(name=n) for n in sorted(names)}
        return {v: ref for v, ref in values.items() if len(v) >= 4}

    def _cause(self, function: str) -> dict[str, object]:
        cause = {"plugin": self.plugin, "generation": self.call.generation, "host": function}
        return cause if self.call.parent is None else {**cause, "parent": self.call.parent}

    def _effect(self) -> None:
        """Count a host effect of the call: past MAX_EFFECTS in one call, refused (a loop
        of reads or secrets would flood the session's journal)."""
        self.call.effects += 1
        if self.call.effects > MAX_EFFECTS:
            if self.call.effects == MAX_EFFECTS + 1:
                log.warning("plugin %s: over %d host effects in one call: the rest refused",
                            self.plugin, MAX_EFFECTS)  # fmt: skip
            raise Failure(
                "plugin.host-failed",
                f"over {MAX_EFFECTS} host effects (reads, commands, requests, secrets) in one call",
            )

    def _journal(self, function: str, shown: dict[str, object], *, mutating: bool) -> Journaled:
        self._effect()
        self.effects += 1
        ctx = self.call.ctx
        session = ctx.session if ctx is not None else None
        return Journaled(self, function, shown, mutating, session)


def _mask(text: str, values: Mapping[str, str]) -> str:
    """`text` with each secret value of `values` replaced by its reference (longest first:
    a value inside another is not left half shown)."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, values[value])
    return text


def _loopback(hostname: str) -> bool:
    import ipaddress

    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False


def _opened(fd: int, lexical: str) -> str:
    """The real path of the file open as `fd` (Linux: /proc/self/fd; elsewhere the real
    path of `lexical`, checked to be the same file)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(lexical)
        same = os.path.samestat(os.fstat(fd), os.stat(real))
        return real if same else "/"


def _matches(hostname: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(hostname, h.lower()) for h in patterns)


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(items) if items else "nothing"


def _request(
    method: str, url: str, headers: dict[str, str], body: bytes, call: Call
) -> tuple[int, list[tuple[str, str]], bytes]:
    from smith.wasm._fetch import Stopped, fetch

    try:
        return fetch(method, url, headers, body, cancel=call.cancel, remaining=call.remaining)
    except Stopped as exc:
        raise Failure("plugin.cancelled", str(exc)) from exc
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
    "hatch": HostCalls.hatch,
}


def _tagged() -> frozenset[str]:
    """The host functions whose result is a `result` of two records (given tagged, as a
    Variant, since wasmtime cannot tell the cases apart), read from the WIT."""
    from smith.wasm._wit import wit_world

    world = wit_world()

    def record(t: Any) -> bool:
        return t is not None and t.kind == "named" and world.typedef(t.name).kind == "record"

    return frozenset(
        name
        for name, f in world.host.funcs.items()
        if f.result is not None and f.result.kind == "result" and all(map(record, f.result.args))
    )


TAGGED = _tagged()
