"""What the secret-routing policy (smith.effects.SecretRoutes: the plugins' `secret-route`
contributions, docs/plugins.md "Secret routing") allows a sandboxed plugin: the part of
the host functions (smith.wasm._hostfns.HostCalls) that asks it.

The routes are those of the call's runtime, read from its tool context (`ctx.routes`,
set by the runtime and the tool host from their resolved plugin lists); a call without a
context (a queue policy's) goes by the last the plugin saw, and sends no secret before it
has seen one. A secret no route names goes where the plugin's grants allow; one that
routes name goes only where they allow, and is handed as plaintext only where one says
`plaintext true`. What a plugin was handed is masked back to its reference in all it
logs, shows and returns (`mask`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from smith.effects import SecretRoutes
    from smith.wasm._hostfns import Call

MIN_VALUE = 4  # shorter values are not handed out (nor masked: they would be everywhere)


class Routing:
    """HostCalls' side of secret routing: the routes of its calls, what they refuse, and
    the plaintext they allow (see the module doc)."""

    plugin: str
    call: Call
    routes: SecretRoutes | None
    handed: set[str]  # the secrets handed to the plugin as plaintext

    def routes_now(self) -> SecretRoutes | None:
        """The secret routes of the call's runtime (none in a bare context: empty), or
        the last seen; None before any call with a context."""
        ctx = self.call.ctx
        if ctx is not None:
            from smith.effects import SecretRoutes

            self.routes = ctx.routes if ctx.routes is not None else SecretRoutes()
        return self.routes

    def unrouted(
        self, names: Iterable[str], *, host: str | None = None, program: str | None = None
    ) -> str | None:
        """Why a secret of `names` may not go to the HTTP `host` (or in the words of the
        command `program`), naming its routes and what to add; None: all may."""
        routes = self.routes_now()
        if routes is None:
            if self.call.ctx is None and names:  # unknown yet (a queue policy's first call)
                return (f"plugin {self.plugin}: the secret {min(names)} is sent only from a "
                        "call that knows the runtime's secret routes (a command, event or "
                        "tool call runs first)")  # fmt: skip
            return None
        for name in sorted(names):
            if host is not None and not routes.host(name, host):
                why = routes.refusal(name, f"to the host {host}", f'host "{host}"')
            elif program is not None and not routes.command(name, program):
                why = routes.refusal(name, f"to the command {program}", f'command "{program}"')
            else:
                continue
            return f"plugin {self.plugin}: {why}"
        return None

    def plaintext(self, name: str) -> str | None:
        """The value of the granted secret `name` if a route allows plaintext ("" if it
        is not set); None: the plugin gets its reference."""
        routes = self.routes_now()
        if routes is None or not routes.plaintext(name):
            return None
        value = os.environ.get(name, "")
        return value if len(value.strip()) >= MIN_VALUE else ""

    def hand(self, name: str, value: str) -> str:
        """`value`, handed to the plugin as the secret `name`'s plaintext: no diagnostic
        shows it from now on, and `mask` hides it in what the plugin gives back."""
        from smith.diagnostics import register_secret

        register_secret(value)
        self.handed.add(name)
        return value

    def mask(self, text: str) -> str:
        """`text` with the value of every secret handed to the plugin (in each spelling:
        as it is, JSON's, repr's) replaced by its reference `{{secret:NAME}}`."""
        if not self.handed:
            return text
        from smith.diagnostics import spellings

        forms = {
            form: f"{{{{secret:{name}}}}}"
            for name in sorted(self.handed)
            if len(value := os.environ.get(name, "")) >= MIN_VALUE
            for form in spellings(value)
        }
        for form in sorted(forms, key=len, reverse=True):  # a value inside another: whole
            text = text.replace(form, forms[form])
        return text
