"""Secret routing: where a secret's value may go, as the plugins' `secret_routes` say
(smith.sdk.SecretRoute, plugin.kdl's `secret-route`; docs/plugins.md "Secret routing").

    routes = SecretRoutes.of(runtime.plugins)   # the runtime's resolved plugin list
    ctx.routes = routes                          # every call in the context sees them
    routes.host("TOKEN", "api.github.com")      # may its value go in a request there?

A secret no route names goes where a plugin's grants allow (a request to a granted host,
a granted program's words) and is never handed to a plugin as plaintext. A secret that
routes name goes only where one of them allows: a host matching one of their host
patterns, a program one of them names, plaintext only if one says so. A route allows; it
never grants: the plugin using the secret still needs it (and the host or the command)
in its own grants. The mechanics that enforce it are smith's (smith.wasm's host
functions); the policy is the plugins'.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Protocol

    class Route(Protocol):
        """A route as smith.sdk.SecretRoute declares it."""

        @property
        def secret(self) -> str: ...
        @property
        def hosts(self) -> tuple[str, ...]: ...
        @property
        def commands(self) -> tuple[str, ...]: ...
        @property
        def plaintext(self) -> bool: ...

    class Contributor(Protocol):
        """What of a plugin (smith.sdk.Plugin) routes are read from."""

        @property
        def name(self) -> str: ...
        @property
        def secret_routes(self) -> Sequence[Route]: ...


class Routed:
    """One route and the plugin that contributed it."""

    __slots__ = ("commands", "hosts", "plaintext", "plugin", "secret")

    def __init__(self, plugin: str, route: Route) -> None:
        self.plugin = plugin
        self.secret = route.secret
        self.hosts = tuple(route.hosts)
        self.commands = tuple(route.commands)
        self.plaintext = bool(route.plaintext)

    def __repr__(self) -> str:
        return f"<route of {self.secret} by {self.plugin}: {self.shown()}>"

    def shown(self) -> str:
        """What it allows, e.g. `host api.github.com, command gh, plaintext`."""
        parts = [*(f"host {h}" for h in self.hosts), *(f"command {c}" for c in self.commands)]
        return ", ".join([*parts, *(["plaintext"] if self.plaintext else [])]) or "nothing"


class SecretRoutes:
    """The routes of a runtime's plugins, by secret (see the module doc)."""

    __slots__ = ("_by_secret",)

    def __init__(self, routes: Iterable[Routed] = ()) -> None:
        by_secret: dict[str, list[Routed]] = {}
        for route in routes:
            by_secret.setdefault(route.secret, []).append(route)
        self._by_secret = {k: tuple(v) for k, v in by_secret.items()}

    @classmethod
    def of(cls, plugins: Iterable[Contributor]) -> SecretRoutes:
        """The routes every plugin of `plugins` contributes (a disabled plugin is not in a
        resolved list's active plugins, so its routes do not count)."""
        return cls(Routed(p.name, r) for p in plugins for r in p.secret_routes)

    def __bool__(self) -> bool:
        return bool(self._by_secret)

    def __repr__(self) -> str:
        return f"<SecretRoutes {sorted(self._by_secret)}>"

    def of_secret(self, secret: str) -> tuple[Routed, ...]:
        """The routes naming `secret` (none: it goes where grants allow)."""
        return self._by_secret.get(secret, ())

    def host(self, secret: str, hostname: str) -> bool:
        """Whether `secret`'s value may go in a request to `hostname`."""
        routes = self.of_secret(secret)
        name = hostname.lower()
        return not routes or any(fnmatchcase(name, h.lower()) for r in routes for h in r.hosts)

    def command(self, secret: str, program: str) -> bool:
        """Whether `secret`'s value may go in the words of the program `program`."""
        routes = self.of_secret(secret)
        return not routes or any(program in r.commands for r in routes)

    def plaintext(self, secret: str) -> bool:
        """Whether a plugin granted `secret` may be handed its value (only if a route says
        `plaintext true`)."""
        return any(r.plaintext for r in self.of_secret(secret))

    def refusal(self, secret: str, where: str, add: str) -> str:
        """Why `secret` may not go `where` ("to the host x"), naming its routes and the
        plugins that contributed them, and what to add (`add`: `host "x"`)."""
        routes = self.of_secret(secret)
        listed = "; ".join(f"{r.plugin}'s: {r.shown()}" for r in routes) or "none"
        return (
            f"the secret {secret} may not go {where}: its secret routes allow only what they "
            f"name (routes: {listed}); to allow it, add `{add}` to a `secret-route "
            f'"{secret}"` block of a plugin\'s plugin.kdl and reinstall it'
        )


__all__ = ["Routed", "SecretRoutes"]
