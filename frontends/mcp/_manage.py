"""`smith mcp list | tools ALIAS | add | remove | login ALIAS`: the MCP servers smith
connects to as a client (the mcp plugin, smith.plugins.mcp), shown and managed.

`list` connects each server briefly (--timeout, 10 s) and shows its transport, state and
tool count; `tools ALIAS` its tools as the model is offered them; `add` and `remove` edit
the user's configuration file; `login` signs in to a server configured with oauth=true
(smith.plugins._mcp_oauth's `login`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from smith.diagnostics import DiagnosticKind, Source

if TYPE_CHECKING:
    import argparse

    from smith.cli import Context
    from smith.config import Config
    from smith.effects import ToolContext

MCP_USAGE = DiagnosticKind(
    "mcp.usage",
    what="smith mcp {action}: {problem}",
    why="smith mcp {action} takes its own arguments: {why}",
    fix="write it as: {remedy}",
)


def _arguments(action: str, words: list[str]) -> argparse.Namespace:
    """The words after `smith mcp ACTION`, parsed for that action."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # a missing alias too: said, not exit 2
            _usage(action, message, f"smith mcp {action} --help")

    parser = Parser(prog=f"smith mcp {action}", exit_on_error=False)
    if action in ("tools", "add", "remove", "login"):
        parser.add_argument("alias")
    if action in ("list", "tools"):
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                            help="how long to wait for each server (default 10)")  # fmt: skip
    if action == "add":
        parser.add_argument("--url", help="the server's Streamable HTTP endpoint")
        parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--header", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--token-env", metavar="VAR", help="the variable holding its token")
        parser.add_argument("--no-sandbox", action="store_true", help="run it outside the sandbox")
        parser.add_argument("--replace", action="store_true", help="replace one of that name")
    command: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, command = words[:at], words[at + 1 :]
    try:
        args = parser.parse_args(words)
    except argparse.ArgumentError as exc:
        _usage(action, str(exc) or "the arguments are not valid", f"smith mcp {action} --help")
        raise
    args.command = command
    if command and action != "add":
        _usage(action, "takes no command after --", f"smith mcp {action} --help")
    return args


def _plugin() -> Any:
    """The mcp plugin's module (smith.plugins.mcp: probe, add_server, remove_server),
    imported by name: frontends/ and plugins/ install under smith, which mypy cannot see
    from here."""
    import importlib

    return importlib.import_module("smith.plugins.mcp")


def _usage(action: str, problem: str, remedy: str, why: str = "see `smith mcp --help`") -> int:
    from smith.diagnostics import SmithError

    raise SmithError(
        MCP_USAGE(
            source=Source("argument", f"smith mcp {action}"),
            action=action,
            problem=problem,
            why=why,
            remedy=remedy,
        )
    )


def _context(config: Config, cwd: str) -> ToolContext:
    """Where a stdio server runs: the project, in the sandbox configuration gives."""
    from smith.effects import Sandbox, ToolContext
    from smith.sdk import provider_facts

    withhold = frozenset(v for facts in provider_facts().values() for v in facts.credential_env)
    protected = config["tools.protected"]
    return ToolContext(
        root=config.project_root,
        cwd=cwd,
        sandbox=Sandbox.from_config(config),
        withhold=withhold,
        protected=tuple(str(p) for p in protected) if isinstance(protected, list) else (".git",),
    )


def manage(top: argparse.Namespace, ctx: Context) -> int:
    from smith.diagnostics import masked

    action = top.action
    args = _arguments(action, list(top.words))
    args.action = action
    if action in ("add", "remove"):
        return _edit(args, ctx)
    if action == "login":
        return _login(args, ctx)
    probe = _plugin().probe
    config = ctx.config()
    names = None
    if action == "tools":
        names = [args.alias]
    shown, problems = probe(config, _context(config, ctx.cwd), names, args.timeout)
    for s in shown:  # a URL's password or key, a command's --api-key=...: never printed
        s["target"] = masked(str(s["target"]))
        if s["error"]:
            s["error"] = masked(str(s["error"]))
    for problem in problems:
        ctx.print_diagnostic(problem)
    if action == "tools" and not shown:
        return _usage(
            "tools",
            f"there is no MCP server {args.alias!r}",
            "`smith mcp list` shows the configured servers",
        )
    if args.json:
        ctx.out(json.dumps(shown if action == "list" else shown[0], indent=2))
        return 0
    if action == "list":
        _print_list(shown, ctx)
        return 0
    return _print_tools(shown[0], ctx)


def _print_list(shown: list[dict[str, Any]], ctx: Context) -> None:
    from smith.text import inert

    if not shown:
        ctx.out(
            "no MCP server is configured: `smith mcp add NAME -- COMMAND ARGS...` adds one "
            "(docs/mcp.md)"
        )
        return
    for s in shown:
        state = s["state"] if s["state"] != "ready" else f"ready, {len(s['tools'])} tools"
        if s["error"]:
            state += f": {s['error']}"
        extra = "" if s["sandbox"] in (None, True) else " (outside the sandbox)"
        ctx.out(inert(f"{s['name']}  {s['transport']}  {state}{extra}"))
        ctx.out(inert(f"    {s['target']}  ({s['source']})"))


def _print_tools(s: dict[str, Any], ctx: Context) -> int:
    from smith.text import inert

    if s["state"] != "ready":
        ctx.out(inert(f"{s['name']}: {s['state']}" + (f": {s['error']}" if s["error"] else "")))
        return 1
    for tool in s["tools"]:
        mark = "" if tool["chosen"] else "  (left out by allow/deny)"
        ctx.out(inert(f"{tool['name']}  as {tool['offered_as']}{mark}"))
        if tool["description"]:
            ctx.out(inert(f"    {tool['description']}"))
    if s["resources"]:
        ctx.out(f"{s['resources']} resource(s), read with mcp_{s['name']}__read_resource")
    for prompt in s["prompts"]:
        ctx.out(inert(f"prompt {prompt}  (/{_plugin().prompt_command(s['name'], prompt)})"))
    return 0


def _pairs(action: str, items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _usage(action, f"{what} {item!r} is no NAME=VALUE", f"write --{what} NAME=VALUE")
        out[key] = value
    return out


def _edit(args: argparse.Namespace, ctx: Context) -> int:
    add_server, remove_server = _plugin().add_server, _plugin().remove_server
    from smith.text import inert

    config = ctx.config(warn=False)
    path = config.user_file
    name = args.alias
    if args.action == "remove":
        removed = remove_server(path, name)
        ctx.out(inert(f"removed MCP server {name} from {path}:\n{removed.rstrip()}"))
        return 0
    command = args.command
    if bool(command) == bool(args.url):
        return _usage(
            "add",
            "give either a command (after --) or --url",
            "smith mcp add files -- python3 srv.py, or smith mcp add web --url "
            "http://127.0.0.1:8931/mcp",
        )
    dropped = [f"--{w}" for w, given in (("env", args.env), ("no-sandbox", args.no_sandbox))
               if given and not command]  # fmt: skip
    dropped += [f"--{w}" for w, given in (("header", args.header), ("token-env", args.token_env))
                if given and command]  # fmt: skip
    if dropped:
        kind = "an HTTP server (--url)" if not command else "a stdio server (a command)"
        return _usage(
            "add",
            f"{' and '.join(dropped)} does not apply to {kind}",
            "--env and --no-sandbox are for a command; --header and --token-env for --url",
        )
    fields: dict[str, object] = {}
    if command:
        fields["command"] = command[0]
        fields["args"] = command[1:]
        fields["env"] = _pairs("add", args.env, "env")
        if args.no_sandbox:
            fields["sandbox"] = False
    else:
        fields["url"] = args.url
        fields["headers"] = _pairs("add", args.header, "header")
        if args.token_env:
            fields["token-env"] = args.token_env
    added = add_server(path, name, fields, args.replace)
    ctx.out(inert(f"added MCP server {name} to {path}:\n{added.rstrip()}"))
    return 0


def _login(args: argparse.Namespace, ctx: Context) -> int:
    """`smith mcp login ALIAS`: the OAuth sign-in (the mcp plugin's `login`)."""
    from smith.text import inert

    def say(text: str) -> None:
        print(inert(text), file=ctx.stderr, flush=True)

    return int(_plugin().login(args.alias, ctx.config(), say))
