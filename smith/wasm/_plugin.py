"""A package's WebAssembly module as a smith.sdk.Plugin.

    plugin = wasm_plugin(package, cache_home=config["cache-home"])

The plugin's handlers (for the events plugin.kdl names) call the module's `on-event`
with the event as JSON and take its JSON list of actions (checked against
smith.protocol.actions: text that is not JSON, or an action smith does not know, is a
fault); its `input` handler answers `/NAME args` for each declared command by calling
`command` and returning HandleInput(reply) (HandleInput(error=...) when it failed), so
a command works alike in the app, `smith eval "/NAME"` and over RPC (the commands are
listed as sdk Commands too, for the app's / menu, each sending `/NAME args` to the
runtime as a prompt); its tools call `call-tool`, its queue policies `choose`, and its options
are plugin.kdl's. The module is loaded on the first call (compiled once, then from
smith's cache directory, `cache-home`) and `start` is called with the
plugin's settings before anything else.

A fault (a trap: fuel, deadline, memory, unreachable; malformed output; output over the
limit) is a diagnostic naming the plugin (`plugin.wasm-fault`: raised from a handler,
the runtime reports it; from a command, the command's error); the instance is
destroyed and made anew on the next call, and after Limits.faults faults the plugin is
off for the session (`plugin.wasm-disabled`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from smith import memory
from smith.diagnostics import DiagnosticKind, SmithError, Source
from smith.wasm._grants import narrowed
from smith.wasm._hostfns import Call, HostCalls, plain
from smith.wasm._instance import Busy, Cancelled, Fault, GuestError, Instance, Limits, StartFailed

if TYPE_CHECKING:
    from smith.config import Option
    from smith.effects import ToolContext, ToolResult, ToolSpec
    from smith.packages import OptionDecl, PackageManifest, ToolDecl
    from smith.sdk import CommandHost, Plugin, QueuedItem, RuntimeView

WASM_FAULT = DiagnosticKind(
    "plugin.wasm-fault",
    what="plugin '{plugin}' {reason} (in {export})",
    why="a sandboxed plugin's call must return what the interface says within its "
    "limits ({limits}); its instance was destroyed and is made anew on the next call",
    fix="fix the plugin (its source, then `smith plugins build` and install it again) or "
    "`smith plugins disable {plugin}`; after {faults} faults it is off for the session",
)
WASM_DISABLED = DiagnosticKind(
    "plugin.wasm-disabled",
    what="plugin '{plugin}' is off for the rest of this session: {reason}",
    why="a plugin that cannot start, or whose calls keep failing, would fail every call",
    fix="fix the plugin, or `smith plugins disable {plugin}`; a new session tries it again",
)
WASM_LOAD = DiagnosticKind(
    "plugin.wasm-load",
    what="plugin '{plugin}' could not be loaded from {path}: {reason}",
    why="a package's module must be a WebAssembly component of the smith:plugin world",
    fix="build it again (`smith plugins build`) and reinstall it",
)
HANDLER_DEADLINE = 60.0  # the runtime's bound on a handler: covers a first, cold compile


class PluginFault(SmithError):
    """A sandboxed plugin's fault, its diagnostic naming the plugin."""


class WasmPlugin:
    """The host side of one package's module: its instance, faults and usage."""

    def __init__(
        self, package: PackageManifest, cache_home: str, limits: Limits | None = None,
        home: str | None = None,
    ) -> None:  # fmt: skip
        self.package = package
        self.name = package.name
        self.cache_home = cache_home
        self.home = home  # smith's data directory: the compiled cache's secret (_cache)
        self.cache_problem: Any = None  # why compiled code is not kept: said on a call
        self.limits = limits or Limits()
        from smith.packages import Grants

        self.host = HostCalls(package.name, package.grants, package.frontend)
        self.host.grants = Grants()  # none until its settings are known (configure)
        self.instance: Instance | None = None
        self.faults = 0
        self.disabled: str | None = None  # why, once off for the session
        self.calls = 0
        self.load_how = ""  # "memory", "cache" or "compiled"
        self.load_seconds = 0.0
        self._settings: Mapping[str, object] = {}
        self._lock = threading.Lock()

    # -- loading ------------------------------------------------------------------------

    def load(self) -> Instance:
        with self._lock:
            if self.instance is None or self.instance.closed:  # closed: stopped, used again
                from smith.wasm._cache import cache_dir, load
                from smith.wasm._engine import new_engine

                path = os.path.join(self.package.root, self.package.module)
                began = time.perf_counter()
                try:
                    engine = new_engine()  # its own: a cancelled call stops alone
                    component, self.load_how, self.cache_problem = load(
                        path, cache_dir(self.cache_home), engine, self.home
                    )
                except Exception as exc:
                    self.disabled = f"it could not be loaded: {exc}"
                    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise PluginFault(
                        WASM_LOAD(
                            value=self.name,
                            source=self.source(),
                            plugin=self.name,
                            path=path,
                            reason=reason,
                        )
                    ) from exc
                self.load_seconds = time.perf_counter() - began
                self.instance = Instance(
                    component, self.host, self.limits, self._start_settings, engine
                )
            return self.instance

    def source(self) -> Source:
        return Source("plugin", self.name)

    # -- calls --------------------------------------------------------------------------

    def call(
        self, export: str, *args: str, call: Call, seconds: float | None = None,
        fuel: int | None = None,
    ) -> str:  # fmt: skip
        """The export's ok text; GuestError for its error case; PluginFault for a fault
        (counted) or a plugin that is off."""
        if self.disabled is not None:
            raise PluginFault(self._disabled_diagnostic())
        seconds = self.limits.seconds if seconds is None else seconds
        inst = self.load()
        if self.cache_problem is not None:  # once: compiled in memory, and why
            from smith.ui import Notify

            problem, self.cache_problem = self.cache_problem, None
            call.post(Notify(problem.render().removeprefix("warning: "), "warning"))
        with memory.scope("kernel", f"plugin {self.name}"):
            self.calls += 1
            try:
                # What it was handed as plaintext (secret routing) never comes back.
                return self.host.mask(inst.call(export, *args, call=call, seconds=seconds,
                                                fuel=fuel))  # fmt: skip
            except StartFailed as exc:
                self.faults += 1
                self.disabled = f"its start failed: {plain(str(exc))}"
                raise PluginFault(self._disabled_diagnostic()) from exc
            except Fault as fault:
                raise self.fault(export, fault.reason) from fault
            except GuestError as exc:  # its error case: masked as well
                if type(exc) is not GuestError or not self.host.handed:
                    raise
                raise GuestError(self.host.mask(str(exc))) from None

    def _start_settings(self) -> str:
        return json.dumps(self._settings, default=str)

    def fault(self, export: str, reason: str) -> PluginFault:
        """Count a fault and give its diagnostic (the one saying the plugin is off, once
        it is the last it may have)."""
        self.faults += 1
        if self.faults >= self.limits.faults and self.disabled is None:
            self.disabled = f"{self.faults} faults, the last: it {reason} (in {export})"
            return PluginFault(self._disabled_diagnostic())
        lim = self.limits
        limits = (
            f"{lim.seconds:g} s and {lim.fuel:,} fuel a call, "
            f"{lim.memory // (1024 * 1024)} MiB of memory, {lim.output:,} characters of output"
        )
        return PluginFault(
            WASM_FAULT(
                value=self.name,
                source=self.source(),
                plugin=self.name,
                reason=reason,
                export=export,
                limits=limits,
                faults=lim.faults,
            )
        )

    def _disabled_diagnostic(self) -> Any:
        return WASM_DISABLED(
            value=self.name, source=self.source(), plugin=self.name, reason=self.disabled or ""
        )

    def usage(self) -> dict[str, object]:
        """What the plugin used: for memory accounting and `smith plugins info`."""
        inst = self.instance
        return {
            "plugin": self.name,
            "calls": self.calls,
            "faults": self.faults,
            "disabled": self.disabled is not None,
            "instances": inst.instantiated if inst else 0,
            "fuel": inst.fuel_used if inst else 0,
            "memory": inst.resident() if inst else 0,  # bytes resident now (None: unknown)
            "memory_limit": self.limits.memory,
            "host_effects": self.host.effects,
            "load": self.load_how,
            "load_seconds": round(self.load_seconds, 4),
        }

    # -- the Plugin's parts -------------------------------------------------------------

    def configure(self, settings: Mapping[str, object]) -> None:
        """Its settings (plugins.NAME.*, plugin.kdl's defaults filled in), handed when a
        runtime or tool host is built (Plugin.configure): what `start` is called with,
        and the grants configuration narrows, for every call, a tool call's too."""
        self._settings = dict(settings)
        self.host.grants = narrowed(self.package.grants, self._settings.get(GRANTS))
        self.host.configured = True

    def view_call(self, view: RuntimeView) -> Call:
        self.configure(view.settings)
        post = getattr(view, "post", None)
        return Call(
            ctx=view.context,
            post=post if post is not None else (lambda shown: None),
            generation=view.generation,
        )

    def on_event(self, event: dict[str, Any], view: RuntimeView) -> list[Any]:
        try:
            text = self.call("on-event", json.dumps(event, default=str), call=self.view_call(view))
        except (Cancelled, Busy):
            raise
        except GuestError as exc:  # the WIT: an error from on-event counts as a fault
            raise self.fault("on-event", f"returned an error: {plain(str(exc))}") from exc
        return self.actions(text, "on-event")

    def actions(self, text: str, export: str) -> list[Any]:
        """The actions of the JSON text `text` (a fault for anything else)."""
        from smith.protocol.actions import from_data
        from smith.text import loads
        from smith.ui import Hatch, Notify, Status

        try:
            items = loads(text)
        except ValueError as exc:
            raise self.fault(export, f"returned text that is not JSON: {exc}") from exc
        if not isinstance(items, list):
            raise self.fault(export, f"returned {type(items).__name__}, not a JSON list of actions")
        out: list[Any] = []
        for item in items:
            kind = item.get("action") if isinstance(item, dict) else None
            try:
                if kind == "notify":
                    level = str(item.get("level", "info"))
                    level = level if level in ("warning", "error") else "info"
                    out.append(Notify(plain(str(item["text"])), level))  # type: ignore[arg-type]
                elif kind == "status":
                    out.append(Status(plain(str(item["text"])), plain(str(item.get("key", "")))))
                elif kind == "hatch":  # refused by the runtime unless plugin.kdl declares it
                    out.append(Hatch(str(item["capability"]), str(item.get("value", ""))))
                else:
                    out.append(from_data(item))
            except (ValueError, KeyError, TypeError) as exc:
                shown = json.dumps(item)[:200]
                raise self.fault(
                    export, f"returned an action smith does not take, {shown}: {exc}"
                ) from exc
        return out

    def commands_by_name(self) -> dict[str, str]:
        return {c.name: c.name for c in self.package.commands}

    def on_input(self, event: dict[str, Any], view: RuntimeView) -> list[Any] | None:
        from smith.sdk import HandleInput

        name, args = _command_of(str(event.get("text", "")), self.package)
        if name is None:  # not its command: its input handler's, unless it is off
            if "input" in self.package.events and self.disabled is None:
                return self.on_event(event, view)
            return None
        try:
            reply = self.call("command", name, args, call=self.view_call(view))
        except GuestError as exc:  # the command's own error: it failed, and says why
            return [HandleInput(error=plain(str(exc)) or "it gave no reason")]
        except PluginFault as fault:  # the input was the plugin's command: said, not sent on
            return [HandleInput(error=plain(fault.diagnostic.what))]
        return [HandleInput(plain(reply))]

    def run_tool(self, decl: ToolDecl, ctx: ToolContext, args: dict[str, object]) -> ToolResult:
        from smith.effects import ToolCancelled, ToolError, ToolResult

        post = getattr(ctx.ui, "show", None)
        call = Call(
            ctx=ctx,
            post=post or (lambda shown: None),
            cancel=ctx.cancelled,
            generation=ctx.generation,
            parent=ctx.intent,
        )  # as the tool call's effect
        try:
            text = self.call(
                "call-tool",
                decl.name,
                json.dumps(args),
                call=call,
                seconds=self.limits.tool_seconds,
                fuel=self.limits.tool_fuel,
            )
        except Cancelled as exc:  # the call's own cancellation: not the plugin's fault
            raise ToolCancelled(f"{decl.name} was cancelled") from exc
        except GuestError as exc:
            raise ToolError(plain(str(exc))) from exc
        except PluginFault as fault:
            raise ToolError(fault.diagnostic.headline()) from fault
        return ToolResult(text)

    def choose(self, policy: str, items: Sequence[QueuedItem]) -> Sequence[QueuedItem]:
        """The queue policy `policy`: the items the module chose, in its order (all of
        them, in queue order, when it faults: nothing queued is lost)."""
        by_id = {i.id: i for i in items}
        listed = json.dumps([{"id": i.id, "mode": i.mode, "text": i.text} for i in items])
        try:
            text = self.call("choose", policy, listed, call=Call())
            ids = json.loads(text)
            if not isinstance(ids, list) or any(
                not isinstance(i, str) or i not in by_id for i in ids
            ):
                raise self.fault("choose", f"chose ids that are not queued: {plain(text[:200])}")
        except (GuestError, PluginFault, ValueError):
            return list(items)
        return [by_id[i] for i in dict.fromkeys(ids)]

    async def stop(self) -> None:
        with self._lock:
            if self.instance is not None:  # its engine and component are freed with it
                self.instance.close()


def _command_of(text: str, package: PackageManifest) -> tuple[str | None, str]:
    if not text.startswith("/"):
        return None, ""
    head, _, args = text[1:].partition(" ")
    head = head.strip()
    if any(c.name == head for c in package.commands):
        return head, args.strip()
    return None, ""


def wasm_plugin(
    package: PackageManifest, *, cache_home: str, limits: Limits | None = None,
    home: str | None = None,
) -> Plugin:  # fmt: skip
    """The Plugin of `package`'s module (see the module's docstring). Nothing is loaded
    until the first call. `home`: smith's data directory (the setting `home`), where
    the secret that vouches for compiled code in `cache_home` is kept (smith.wasm._cache;
    None: one for this process only)."""
    from functools import partial

    from smith.effects import Presentation, ToolSpec
    from smith.sdk import Command, Plugin

    host = WasmPlugin(package, cache_home, limits, home)
    handlers: dict[str, Any] = {e: host.on_event for e in package.events if e != "input"}
    if package.commands or "input" in package.events:
        handlers["input"] = host.on_input
    tools: list[ToolSpec] = [
        ToolSpec(
            decl.name,
            plain(decl.description),
            dict(decl.parameters),
            partial(_tool_runner, host, decl),
            effect=decl.effect,  # type: ignore[arg-type]
            confined=decl.effect == "reads",
            presentation=Presentation(decl.shown_by or None, decl.result),
        )
        for decl in package.tools
    ]
    commands = [
        Command(
            c.name,
            plain(c.description),
            partial(_command_runner, c.name),
            usage=plain(c.usage),
        )
        for c in package.commands
    ]
    options = [*(_option(o) for o in package.options if o.key != GRANTS), _grants_option(package)]
    plugin = Plugin(
        package.name,
        handlers=handlers,
        queue_policies={p: partial(host.choose, p) for p in package.queue_policies},
        tools=tools,
        commands=commands,
        options=options,
        version=package.version,
        grants=tuple(package.asks()),
        frontend=package.frontend,
        stop=host.stop,
        handler_deadline=HANDLER_DEADLINE,
        wants=lambda kind, view: host.disabled is None or kind == "input",
        configure=host.configure,
    )
    _hosts[package.name] = host
    return plugin


GRANTS = "grants"  # the option that narrows the installed grants (plugins.NAME.grants)


def _option(decl: OptionDecl) -> Option:
    from smith.config import Boolean, Integer, Number, Option, String, Strings

    kinds: dict[str, Any] = {
        "string": String(non_empty=False),
        "integer": Integer(),
        "number": Number(),
        "boolean": Boolean(),
        "list": Strings(),
    }
    kind = kinds.get(decl.type, String(non_empty=False))
    return Option(decl.key, kind, decl.default, doc=plain(decl.description), nullable=True)


def _grants_option(package: PackageManifest) -> Option:
    from smith.config import Option, Strings

    return Option(
        GRANTS,
        Strings(),
        None,
        doc="Narrow the grants the plugin was installed with: the ones it keeps, each as "
        '"path DIR", "command NAME", "host NAME" or "secret NAME" within an installed '
        "grant (one that is not is ignored); unset, it keeps them all: "
        + ("; ".join(package.grants.lines()) or "none"),
        nullable=True,
    )


def _tool_runner(
    host: WasmPlugin, decl: ToolDecl, ctx: ToolContext, args: dict[str, object]
) -> ToolResult:
    return host.run_tool(decl, ctx, args)


def _command_runner(name: str, cmd_host: CommandHost, args: str) -> object:
    """A command from the app's / menu: sent to the runtime as the prompt `/NAME args`,
    which the plugin's input hook answers as in `smith eval` and RPC (with the session's
    project, journal and record: an `input_handled` entry the app draws)."""
    from smith.runtime import ops

    return cmd_host.runtime.submit(ops.Prompt(f"/{name} {args}".rstrip()))


_hosts: dict[str, WasmPlugin] = {}


def usage() -> list[dict[str, object]]:
    """What each WebAssembly plugin made in this process used (the last made of each
    name): calls, faults, instances made, fuel, its memory limit, host effects, and how
    its module was loaded. smith.memory cannot see an instance's linear memory (wasmtime
    maps it outside Python's allocators): it is bounded by the limit named here, and the
    host-side allocations of its calls are charged to the kernel scope `plugin NAME`."""
    return [host.usage() for host in _hosts.values()]


def host_of(name: str) -> WasmPlugin | None:
    """The host side of the plugin `name` wasm_plugin made last (tests, benchmarks)."""
    return _hosts.get(name)
