"""`smith models`: the catalog, which models have a credential, and with --refresh the
providers' own model lists first. --json adds where every fact came from."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.config import Config
    from smith.providers import Catalog, ModelInfo
    from smith.providers import RefreshOutcome as Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print every model with the source of each fact, and the conflicts",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="first fetch the model lists of the providers that have a key (and of "
        "configured endpoints); a failure keeps the cached or bundled list",
    )


def _keys(ctx: Context, config: Config, names: list[str]) -> dict[str, str | None]:
    """Each provider's key for listing its models; None where there is none (or it
    cannot be used): a listing never fails for want of one."""
    import asyncio

    from smith.cli._auth import plugin_for
    from smith.diagnostics import SmithError
    from smith.providers import resolve_credential

    async def one(name: str) -> str | None:
        try:
            found = await resolve_credential(
                name, env=ctx.env, home=config.home, config=config, plugin=plugin_for(name)
            )
        except SmithError:
            return None
        return None if found is None else found.value

    async def every() -> list[str | None]:
        return [await one(name) for name in names]

    return dict(zip(names, asyncio.run(every()), strict=True))


def _refresh(ctx: Context, config: Config) -> tuple[Catalog, list[Outcome]]:
    import asyncio

    from smith.providers import CatalogStore, limits_from, shared_engine, targets_from
    from smith.sdk import provider_facts

    configured = {rest.partition(".")[0] for rest in config.subtree("providers")}
    online = {name for name, facts in provider_facts().items() if not facts.offline}
    names = sorted(online | configured)
    targets = targets_from(config, _keys(ctx, config, names))
    store = CatalogStore(config)
    engine = shared_engine(limits_from(config))
    outcomes = asyncio.run(store.refresh(engine, targets))  # Ctrl+C cancels every fetch
    return store.snapshot, outcomes


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    return f"{n / 1000:.3g}k" if n >= 1000 else str(n)


def _price(value: float | None) -> str:
    return "?" if value is None else f"${value:g}"


def _thinking(levels: tuple[str, ...]) -> str:
    if not levels:
        return "-"
    return levels[0] if len(levels) == 1 else f"{levels[0]}..{levels[-1]}"


def _row(info: ModelInfo, keyed: bool) -> tuple[str, ...]:
    pricing = info.pricing
    price = "unknown" if pricing is None else f"{_price(pricing.input)} / {_price(pricing.output)}"
    return (
        info.key,
        _tokens(info.context_window),
        _tokens(info.max_output),
        ",".join(info.input) + ("" if info.tools else " (no tools)"),
        _thinking(info.thinking),
        price,
        "yes" if keyed else "no",
    )


def _credentials(ctx: Context, config: Config, providers: set[str]) -> dict[str, bool]:
    from smith.cli._auth import plugin_for
    from smith.diagnostics import SmithError
    from smith.providers import find_credential

    found: dict[str, bool] = {}
    for name in sorted(providers):
        try:
            credential = find_credential(
                name, env=ctx.env, home=config.home, config=config, plugin=plugin_for(name)
            )
        except SmithError:
            credential = None
        found[name] = credential is not None and not credential.expired()
    return found


def run(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from smith.providers import describe, load_catalog

    config = ctx.config(warn=not args.json)
    outcomes: list[Outcome] = []
    if args.refresh:
        catalog, outcomes = _refresh(ctx, config)
    else:
        catalog = load_catalog(config)
    models = catalog.models()
    keyed = _credentials(ctx, config, {m.provider for m in models})
    if args.json:
        data = {
            "models": [
                {
                    **describe(m),
                    "snapshots": catalog.snapshots_of(m.provider, m.id),
                    "credential": keyed[m.provider],
                }
                for m in models
            ],
            "conflicts": [c.to_dict() for c in catalog.conflicts],
            "refreshed": {
                name: {"at": r.at, "models": len(r.models)}
                for name, r in sorted(catalog.refreshed.items())
            },
            "listed_without_facts": {p: sorted(ids) for p, ids in sorted(catalog.listed.items())},
            "refresh": [o.to_dict() for o in outcomes],
        }
        ctx.out(json.dumps(data, indent=2))
        return 0
    for outcome in outcomes:
        if outcome.ok:
            stale = " (a newer refresh had stored its list already)" if outcome.stale else ""
            print(f"refreshed {outcome.name}: {outcome.models} models{stale}", file=ctx.stderr)
        else:
            print(
                f"could not refresh {outcome.name}: {outcome.error} "
                "(the cached or bundled list stays in use)",
                file=ctx.stderr,
            )
    rows: list[tuple[str, ...]] = [
        ("MODEL", "CONTEXT", "OUTPUT", "INPUT", "THINKING", "PRICE IN / OUT", "KEY")
    ]
    rows += [_row(m, keyed[m.provider]) for m in models]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        ctx.out("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    ctx.out()
    ctx.out(
        "Prices are US dollars per million tokens. Any other model id works on "
        "openai-compatible endpoints, assumed to take text and tools with 32k context "
        "and 4k output unless a catalog block in config.kdl says otherwise."
    )
    for conflict in catalog.conflicts:
        ctx.out(
            f"conflict: {conflict.model} {conflict.fact}: {conflict.other_from} says "
            f"{conflict.other!r}; kept {conflict.kept!r} from {conflict.kept_from}"
        )
    return 0
