"""From a model setting to an ordered list of targets: aliases, groups, account buckets.

Resolution is pure (no network, no credentials): the same setting and configuration give
the same targets, every time.

    alias   a name for another setting:         fast -> anthropic/claude-haiku-4-5
    group   ordered fallbacks, tried in turn:    best -> [anthropic/claude-sonnet-4-5, openai/gpt-5]
    bucket  a configured provider name with its own account (credential, base URL) over a
            provider plugin: anthropic-work/claude-sonnet-4-5 uses the anthropic plugin
            with the work key

A setting is one of: an alias, a group, `provider/model` (or `provider:model`) where the
provider is a plugin or a bucket, or a bare model id that exactly one provider offers.
A name that is both an alias and a group, or a bare id several providers offer, is
ambiguous; an alias or group that reaches itself is a cycle. Both fail with a diagnostic
naming every candidate or the whole cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from smith.diagnostics import DiagnosticKind, Source, did_you_mean

ROUTE_CYCLE = DiagnosticKind(
    "model.route-cycle",
    what="the model setting '{spec}' leads back to itself: {cycle}",
    why="aliases and groups name other models, aliases or groups, and following them "
    "must end at a provider's model",
    fix="change one of {names} to name a provider/model (defined at {where})",
)
ROUTE_AMBIGUOUS = DiagnosticKind(
    "model.route-ambiguous",
    what="the model setting '{spec}' could mean {candidates}",
    why="{reason}, and smith never guesses which one is meant",
    fix="{hint}, so that the setting names exactly one model",
)
UNKNOWN_MODEL_NAME = DiagnosticKind(
    "model.unknown-name",
    what="no provider, alias or group is called '{name}' (from the model setting '{spec}')",
    why="a model is named as provider/model, an alias, a group, or a model id from the "
    "catalog; the providers are {known}",
    fix="{hint}; `smith models` lists the catalog",
)
EMPTY_GROUP = DiagnosticKind(
    "model.empty-group",
    what="the model group '{name}' has no members",
    why="a group is an ordered list of models to try in turn",
    fix="list at least one provider/model in it (at {where})",
)


@dataclass(frozen=True, slots=True)
class Target:
    provider: str  # a provider plugin's name, or a bucket's
    model: str  # the id the provider's API takes

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}" if self.model else self.provider


@dataclass(frozen=True, slots=True)
class Routes:
    """Routing configuration: each entry with the source that defined it."""

    aliases: Mapping[str, tuple[str, Source]] = field(default_factory=dict)
    groups: Mapping[str, tuple[tuple[str, ...], Source]] = field(default_factory=dict)
    # bucket name -> (provider plugin it uses, source)
    buckets: Mapping[str, tuple[str, Source]] = field(default_factory=dict)


def split_spec(spec: str, providers: Collection[str]) -> tuple[str, str] | None:
    """`openai/gpt-5` or `scripted:/a/b.json` -> (provider, model) when the part before
    the first separator names a provider; None otherwise."""
    for sep in (":", "/"):
        name, found, rest = spec.partition(sep)
        if found and name in providers:
            return name, rest
    if spec in providers:
        return spec, ""
    return None


def resolve_route(
    spec: str,
    routes: Routes,
    providers: Collection[str],
    offering: Callable[[str], list[str]] = lambda model: [],
    *,
    source: Source | None = None,
) -> list[Target]:
    """The targets a model setting stands for, in the order to try them (one unless it is
    a group). `providers` are the plugin and bucket names; `offering(id)` the providers
    whose catalog lists a bare model id."""
    origin = source or Source("argument", "--model")
    targets: list[Target] = []
    _expand(spec, spec, routes, providers, offering, origin, [], targets)
    seen: set[Target] = set()
    return [t for t in targets if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]


def _expand(
    spec: str,
    name: str,
    routes: Routes,
    providers: Collection[str],
    offering: Callable[[str], list[str]],
    origin: Source,
    path: list[str],
    out: list[Target],
) -> None:
    if name in path:
        cycle = [*path[path.index(name) :], name]
        named = sorted(set(cycle))
        raise ROUTE_CYCLE.error(
            value=spec,
            source=origin,
            spec=spec,
            cycle=" -> ".join(cycle),
            names=", ".join(named),
            where="; ".join(f"{n}: {_where(n, routes)}" for n in named),
        )
    alias = routes.aliases.get(name)
    group = routes.groups.get(name)
    if alias is not None and group is not None:
        raise ROUTE_AMBIGUOUS.error(
            value=spec,
            source=origin,
            spec=spec,
            candidates=f"the alias '{name}' (at {alias[1]}) or the group '{name}' (at {group[1]})",
            reason="one name is defined both as an alias and as a group",
            hint=f"rename one of them, or write the provider/model you mean instead of '{name}'",
        )
    if alias is not None:
        _expand(spec, alias[0], routes, providers, offering, origin, [*path, name], out)
        return
    if group is not None:
        members, where = group
        if not members:
            raise EMPTY_GROUP.error(value=name, source=where, name=name, where=str(where))
        for member in members:
            _expand(spec, member, routes, providers, offering, origin, [*path, name], out)
        return
    split = split_spec(name, providers)
    if split is not None:
        out.append(Target(*split))
        return
    offered = offering(name)
    if len(offered) == 1:
        out.append(Target(offered[0], name))
        return
    if len(offered) > 1:
        choices = [f"{p}/{name}" for p in sorted(offered)]
        raise ROUTE_AMBIGUOUS.error(
            value=spec,
            source=origin,
            spec=spec,
            candidates=" or ".join(choices),
            reason=f"the model id '{name}' is offered by {len(choices)} providers",
            hint=f"name the provider, for example {choices[0]}",
        )
    known = sorted({*providers, *routes.aliases, *routes.groups})
    raise UNKNOWN_MODEL_NAME.error(
        value=spec,
        source=origin,
        name=name.partition("/")[0] if "/" in name else name,
        spec=spec,
        known=", ".join(sorted(providers)),
        hint=did_you_mean(name.partition("/")[0], known, otherwise="check the spelling"),
    )


def _where(name: str, routes: Routes) -> str:
    if name in routes.aliases:
        return str(routes.aliases[name][1])
    if name in routes.groups:
        return str(routes.groups[name][1])
    return "the model setting"


BAD_ROUTE = DiagnosticKind(
    "config.bad-route",
    what="this model routing setting is not valid: {problem}",
    why="the models section holds aliases (one model each) and groups (models tried in "
    'turn): models {{ alias {{ NAME "provider/model"; }}; group {{ NAME "a" "b"; }}; }}',
    fix="{remedy} (in the models section of the configuration)",
)


def check_route(key: str, value: object, source: Source) -> object:
    """The check of the open `models` section (configuration calls it for each key)."""
    kind, _, name = key.partition(".")[2].partition(".")
    if kind not in ("alias", "group") or not name:
        raise BAD_ROUTE.error(
            field=key,
            source=source,
            problem=f"'{key}' is neither models.alias.NAME nor models.group.NAME",
            remedy="put aliases in an alias block and groups in a group block",
        )
    members = value if isinstance(value, list) else [value]
    if not members or not all(isinstance(m, str) and m.strip() for m in members):
        raise BAD_ROUTE.error(
            field=key,
            value=value,
            source=source,
            problem=f"{kind} '{name}' must name models as text",
            remedy=f'write it as {name} "provider/model"' + (" ..." if kind == "group" else ""),
        )
    if kind == "alias" and len(members) != 1:
        raise BAD_ROUTE.error(
            field=key,
            value=value,
            source=source,
            problem=f"alias '{name}' names {len(members)} models",
            remedy=f"an alias names one model; to try several in turn, make '{name}' a group",
        )
    return [str(m).strip() for m in members] if isinstance(value, list) else str(value).strip()
