"""`smith auth`: status, login, logout. No model is asked anything: status only looks
for credentials, and never shows more of one than a masked hint (`sk-…cdef`)."""

from __future__ import annotations

import sys

from smith.diagnostics import DiagnosticKind, Source, did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from smith.cli._main import Context
    from smith.config import Config

AUTH_PROVIDER = DiagnosticKind(
    "cli.auth-provider",
    what="'{name}' is not a provider smith can keep a credential for",
    why="credentials belong to the providers {known}, or to one configured under providers.NAME",
    fix="{hint}; `smith auth status` lists them",
)
AUTH_EMPTY_KEY = DiagnosticKind(
    "cli.auth-key",
    what="no usable key was given for {provider}: {problem}",
    why="`smith auth login` stores the key it reads from standard input (typed without "
    "echo at a terminal), one line, without spaces",
    fix='run it again and paste the key, or pipe it in: printf %s "$KEY" | smith auth '
    "login {provider}",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    status = actions.add_parser(
        "status", help="which providers have a credential, and where it comes from (default)"
    )
    status.add_argument("--json", action="store_true", help="print the same as JSON")
    login = actions.add_parser(
        "login", help="store a provider's API key in the auth file (read from standard input)"
    )
    login.add_argument("provider", metavar="PROVIDER")
    logout = actions.add_parser("logout", help="remove a provider's stored credential")
    logout.add_argument("provider", metavar="PROVIDER")


def _providers(config: Config, stored: list[str]) -> list[str]:
    """The built-in providers that take a credential (every one but the offline ones),
    configured ones, and any the auth file holds."""
    from smith.sdk import provider_facts

    online = {name for name, facts in provider_facts().items() if not facts.offline}
    configured = {rest.partition(".")[0] for rest in config.subtree("providers")}
    return sorted(online | configured | set(stored))


def plugin_for(provider: str) -> object:
    """The credential hooks of the built-in plugin offering `provider` (importing that
    plugin alone); None if none offers it."""
    from smith.sdk import provider_spec

    spec = provider_spec(provider)
    return None if spec is None else spec.hooks


def _status_of(provider: str, ctx: Context, config: Config) -> dict[str, object]:
    import time

    from smith.diagnostics import SmithError
    from smith.providers import configured_env, declared_env, find_credential

    plugin = plugin_for(provider)
    named = configured_env(config, provider)
    looked = [named[0]] if named else list(declared_env(provider))
    record: dict[str, object] = {"provider": provider, "env": looked}
    try:
        found = find_credential(
            provider, env=ctx.env, home=config.home, config=config, plugin=plugin
        )
    except SmithError as exc:
        return {**record, "available": False, "problem": exc.diagnostic.to_dict()}
    if found is None:
        return {**record, "available": False}
    expires = None
    if found.expires is not None:
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.expires))
    return {
        **record,
        "available": True,
        "source": found.source,
        "type": found.kind,
        "hint": found.hint,
        "expires": expires,
        "expired": found.expired(),
    }


def _status(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from smith.diagnostics import SmithError
    from smith.providers import AuthFile

    config = ctx.config(warn=not getattr(args, "json", False))
    store = AuthFile(config.home)
    try:
        stored = list(store.read())
    except SmithError as exc:  # status still reports what the other sources hold
        stored = []
        ctx.print_diagnostic(exc.diagnostic)
    rows = [_status_of(name, ctx, config) for name in _providers(config, stored)]
    if getattr(args, "json", False):
        ctx.out(json.dumps({"auth_file": store.path, "providers": rows}, indent=2))
        return 0
    width = max(len(str(row["provider"])) for row in rows)
    for row in rows:
        name = f"{row['provider']:<{width}}"
        if row["available"]:
            state = f"{row['source']}  {row['hint']}"
            if row["expires"]:
                state += f"  ({'expired' if row['expired'] else 'expires'} {row['expires']})"
        elif "problem" in row:
            state = "error: " + str(row["problem"]["what"])  # type: ignore[index]
        else:
            env = " or ".join(row["env"]) if row["env"] else ""  # type: ignore[arg-type]
            where = f"set {env}, or " if env else ""
            state = f"none ({where}run `smith auth login {row['provider']}`)"
        ctx.out(f"{name}  {state}")
    return 0


def _known(config: Config, store_names: list[str], name: str) -> None:
    known = _providers(config, store_names)
    if name not in known:
        raise AUTH_PROVIDER.error(
            value=name,
            source=Source("argument", name),
            name=name,
            known=", ".join(known),
            hint=did_you_mean(name, known, otherwise="check the provider's name"),
        )


def _read_key(provider: str) -> str:
    stdin = sys.stdin
    if stdin is not None and stdin.isatty():
        import getpass

        text = getpass.getpass(f"API key for {provider} (not shown): ")
    else:
        text = stdin.read() if stdin is not None else ""
    key = text.strip()
    if not key:
        problem = "the input was empty"
    elif any(c.isspace() for c in key) or not key.isprintable():
        problem = "it holds spaces, line breaks or control characters"
    else:
        return key
    raise AUTH_EMPTY_KEY.error(
        source=Source("argument", provider), provider=provider, problem=problem
    )


def _login(args: argparse.Namespace, ctx: Context) -> int:
    from smith.diagnostics import SmithError
    from smith.providers import AuthFile, Credential, find_credential

    config = ctx.config()
    store = AuthFile(config.home)
    _known(config, list(store.read()), args.provider)
    key = _read_key(args.provider)
    store.store(args.provider, {"type": "api-key", "key": key})
    stored = Credential(args.provider, key, f"auth file {store.path}")
    ctx.out(f"stored the key for {args.provider} ({stored.hint}) in {store.path}")
    try:
        used = find_credential(
            args.provider,
            env=ctx.env,
            home=config.home,
            config=config,
            plugin=plugin_for(args.provider),
        )
    except SmithError:
        used = None
    if used is not None and used.source != stored.source:
        ctx.out(f"note: {used.source} is used before the auth file, so it stays in effect")
    return 0


def _logout(args: argparse.Namespace, ctx: Context) -> int:
    from smith.providers import AuthFile

    config = ctx.config()
    store = AuthFile(config.home)
    names = list(store.read())
    if args.provider not in names:
        _known(config, names, args.provider)
        ctx.out(f"no stored credential for {args.provider}")
        return 0
    store.remove(args.provider)
    ctx.out(f"removed the stored credential for {args.provider} from {store.path}")
    return 0


def run(args: argparse.Namespace, ctx: Context) -> int:
    action = args.action or "status"
    handler = {"status": _status, "login": _login, "logout": _logout}[action]
    return handler(args, ctx)
