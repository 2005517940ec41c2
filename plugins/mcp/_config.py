"""The MCP servers configuration names: `mcp { server "NAME" ...; }` and a trusted
project's `.mcp.json`, each value checked with a diagnostic naming it and its source.

Keys of one server (mcp.server.NAME.KEY): command, args (one string, split as a shell
would, or several values), env.VAR, cwd, sandbox (stdio); url, headers.NAME, token-env,
oauth (Streamable HTTP); allow, deny (tool name patterns), timeout, startup-timeout,
enabled. A project's `.mcp.json` is Claude Code's format: {"mcpServers": {NAME: {command,
args, env, cwd} | {type: "http", url, headers}}}, with `${VAR}` and `${VAR:-default}` in
command, args, env, url and headers taken from smith's environment as Claude Code takes
them; a server configured in KDL wins its name. A server's name has no '.' (KDL would
split it into keys; .mcp.json's are refused alike).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from smith.diagnostics import Diagnostic, DiagnosticKind, Source, did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from smith.config import Config, Setting
    from smith.packages import Grants, PackageServer

MCP_CONFIG = DiagnosticKind(
    "mcp.config",
    what="MCP server '{server}': {key} {problem}",
    why="smith connects to each configured MCP server with the values its block gives; "
    "this one cannot be used as written",
    fix="{remedy} (docs/mcp.md lists every key); the other servers connect regardless",
)
MCP_UNKNOWN_KEY = DiagnosticKind(
    "mcp.unknown-key",
    what="MCP server '{server}': unknown key {key}",
    why="a server takes command, args, env, cwd, sandbox, url, headers, token-env, oauth, "
    "allow, deny, timeout, startup-timeout and enabled",
    fix="{hint}; the key is ignored",
    severity="warning",
)
MCP_PROJECT_UNAPPROVED = DiagnosticKind(
    "mcp.project-unapproved",
    what="the project's .mcp.json is not used: {problem}",
    why="its servers are programs smith would start, so a project's .mcp.json is used only "
    "as you approved it when you trusted the project (trust follows content: a git pull "
    "that changes the file needs your approval again)",
    fix="read the file, then run `smith trust` in the project to use it as it is now",
    severity="warning",
)
MCP_PACKAGE = DiagnosticKind(
    "mcp.package",
    what="the {origin} cannot bring an MCP server: {problem}",
    why="an installed package's servers are read from its plugin.kdl `mcp` block or its "
    ".mcp.json, as configuration's are",
    fix="fix the package (and install it again); its other servers connect regardless",
    severity="warning",
)
MCP_PROJECT_FILE = DiagnosticKind(
    "mcp.project-file",
    what="the project's .mcp.json cannot be used: {problem}",
    why='smith reads a trusted project\'s .mcp.json ({{"mcpServers": {{NAME: {{command, '
    'args, env}} | {{type: "http", url, headers}}}}}}) as Claude Code does',
    fix="fix the file; its servers are not connected until then",
    severity="warning",
)

KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "sandbox",
    "url",
    "headers",
    "token-env",
    "oauth",
    "allow",
    "deny",
    "timeout",
    "startup-timeout",
    "enabled",
)
DEFAULT_TIMEOUT = 60.0  # seconds one request may wait for its answer
DEFAULT_STARTUP = 30.0  # seconds connecting (start, initialize, list) may take


@dataclass
class Server:
    """One configured server; `source` is where it was configured (its first key)."""

    name: str
    source: Source
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    sandbox: bool = True
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    token_env: str | None = None
    oauth: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP
    enabled: bool = True
    # Folders it may read in the sandbox even within smith's own (an installed package's
    # root), and whose it is ("plugin NAME"; "" for configuration's).
    readable: tuple[str, ...] = ()
    origin: str = ""

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """What it runs or where it is, for `smith mcp list` (no header or token)."""
        if self.command is not None:
            return shlex.join([self.command, *self.args])
        return self.url or ""


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(value: object, missing: list[str]) -> object:
    """`${VAR}` and `${VAR:-default}` in a text (or the texts of a list) replaced from
    smith's environment, as Claude Code expands .mcp.json; a VAR unset without a
    default is added to `missing` (and left as written)."""
    if isinstance(value, list):
        return [_expand(v, missing) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        got = os.environ.get(name)
        if got is not None and (got or default is None):
            return got
        if default is not None:  # unset or empty: the default, as a shell's :- does
            return default
        missing.append(name)
        return match.group(0)

    return _VAR.sub(one, value)


def _strings(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value > 0 else None


class _Reader:
    """Builds one Server from its keys, collecting what is wrong."""

    def __init__(self, name: str, source: Source, problems: list[Diagnostic]) -> None:
        self.server = Server(name, source)
        self.problems = problems
        self.broken = False  # a value was wrong: the server is not connected

    def bad(self, key: str, value: object, source: Source, problem: str, remedy: str) -> None:
        self.broken = True
        self.problems.append(
            MCP_CONFIG(
                value=value,
                source=source,
                server=self.server.name,
                key=key,
                problem=problem,
                remedy=remedy,
            )
        )

    def take(self, key: str, value: object, source: Source) -> None:
        s = self.server
        head, _, rest = key.partition(".")
        if head in ("env", "headers") and rest:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                self.bad(
                    key, value, source, "is no text", f'write it as {head} {{ {rest} "..."; }}'
                )
            else:
                (s.env if head == "env" else s.headers)[rest] = str(value)
            return
        if head not in KEYS or rest:
            self.problems.append(
                MCP_UNKNOWN_KEY(
                    value=key, source=source, server=s.name, key=key, hint=did_you_mean(head, KEYS)
                )
            )
            return
        if head in ("command", "cwd", "url", "token-env"):
            if not isinstance(value, str) or not value.strip():
                self.bad(key, value, source, "must be a non-empty text", f'write {key}="..."')
                return
            if head == "url" and not value.startswith(("http://", "https://")):
                self.bad(
                    key,
                    value,
                    source,
                    "is no http:// or https:// URL",
                    'give the server\'s endpoint, e.g. url="http://127.0.0.1:8931/mcp"',
                )
                return
            setattr(
                s, head.replace("-", "_"), os.path.expanduser(value) if head == "cwd" else value
            )
        elif head in ("args", "allow", "deny"):
            items = _strings(value)
            if items is None:
                self.bad(
                    key,
                    value,
                    source,
                    "must be text or several texts",
                    f'write {key}="..." or {key} "a" "b"',
                )
                return
            if head == "args" and isinstance(value, str):
                try:
                    items = shlex.split(value)
                except ValueError as exc:
                    self.bad(
                        key,
                        value,
                        source,
                        f"cannot be split into words ({exc})",
                        'quote it as a shell would, or give each argument: args "a" "b"',
                    )
                    return
            setattr(s, head, items)
        elif head in ("sandbox", "oauth", "enabled"):
            if not isinstance(value, bool):
                self.bad(
                    key, value, source, "must be true or false", f"write {key}=true or {key}=false"
                )
                return
            setattr(s, head, value)
        else:  # timeout, startup-timeout
            number = _number(value)
            if number is None:
                self.bad(
                    key, value, source, "must be a number of seconds above 0", f"write {key}=30"
                )
                return
            setattr(s, head.replace("-", "_"), number)

    def done(self) -> Server | None:
        s = self.server
        if self.broken:
            return None
        if s.command is not None and s.url is not None:
            self.bad(
                "url",
                s.url,
                s.source,
                "is given beside command",
                "a server is either a command (stdio) or a url (Streamable HTTP): keep one",
            )
            return None
        if s.command is None and s.url is None:
            self.bad(
                "command",
                None,
                s.source,
                "is missing (and so is url)",
                'give command="..." for a server smith starts, or url="..." for one running',
            )
            return None
        if s.command is None and (s.args or s.env or s.cwd):
            self.bad(
                "args",
                s.args,
                s.source,
                "are given to a url server",
                "args, env and cwd are for a server smith starts (command=...)",
            )
            return None
        return s


def servers(config: Config) -> tuple[list[Server], list[Diagnostic]]:
    """Every configured server (KDL first, then a trusted project's .mcp.json for the
    names KDL does not use), and what is wrong with the configuration."""
    problems: list[Diagnostic] = []
    readers: dict[str, _Reader] = {}
    for key, setting in config.subtree("mcp").items():
        if not key.startswith("server."):
            source = setting.source
            problems.append(
                MCP_UNKNOWN_KEY(
                    value=key,
                    source=source,
                    server="-",
                    key=f"mcp.{key}",
                    hint='servers are named blocks: mcp { server "NAME" command="..."; }',
                )
            )
            continue
        name, _, rest = key[len("server.") :].partition(".")
        if not rest:
            continue
        reader = readers.setdefault(name, _Reader(name, setting.source, problems))
        reader.take(rest, setting.value, setting.source)
    found = [s for s in (r.done() for r in readers.values()) if s is not None]
    bad_names = set(readers)
    path = os.path.join(config.project_root, ".mcp.json")
    for server in project_servers(path, problems, config):
        if server.name not in bad_names:
            found.append(server)
    taken = {s.name for s in found} | bad_names
    for server in package_servers(config, problems):
        if server.name not in taken:
            taken.add(server.name)
            found.append(server)
    return [s for s in found if s.enabled], problems


def package_servers(config: Config, problems: list[Diagnostic]) -> list[Server]:
    """The servers of the enabled installed packages (smith.packages: plugin.kdl's `mcp`
    block, a package's .mcp.json), each reading its package's folder in the sandbox;
    `${VAR}` expanded as a project's .mcp.json has them."""
    import dataclasses

    from smith.packages import package_mcp_servers

    out = []
    grants: dict[str, Grants] = {}
    for found in package_mcp_servers(config):
        root = found.package.root
        if root not in grants:
            grants[root] = _package_grants(root)
        refused = _ungranted_secret(found.fields, grants[root], config)
        if refused is not None:
            problem = (
                f"its server {found.name} reads ${{{refused}}}, a credential, and the "
                f'package does not ask for it: add grants {{ secret "{refused}"; }} to '
                "its plugin.kdl (or configure the server yourself in config.kdl)"
            )
            problems.append(_refused(found, problem))
            continue
        if "." in found.name:
            problem = f"its server {found.name!r} has a '.' in its name (KDL names have none)"
            problems.append(_refused(found, problem))
            continue
        if found.format == "json":
            server = _project_server(found.name, dict(found.fields), found.source, problems)
        else:
            server, wrong = server_of(found.name, found.fields, found.source)
            problems += wrong
        if server is None:
            continue
        host = (urlsplit(server.url).hostname or "") if server.url is not None else None
        if host is not None and not any(
            fnmatch.fnmatchcase(host.lower(), h.lower()) for h in grants[root].hosts
        ):
            problem = (
                f"its server {found.name} is reached at {host or server.url}, and the "
                f'package does not ask for that host: add grants {{ host "{host}"; }} '
                "to its plugin.kdl (or configure the server yourself in config.kdl)"
            )
            problems.append(_refused(found, problem))
            continue
        if not server.sandbox:  # a package's code runs confined; the user may say otherwise
            problem = (f"its server {found.name} asks for sandbox=false, and a package's "
                       "server runs in the sandbox (configure it in config.kdl to run it "
                       "outside)")  # fmt: skip
            problems.append(_refused(found, problem))
        out.append(dataclasses.replace(server, readable=(found.package.root,), sandbox=True,
                                       origin=found.package.origin))  # fmt: skip
    return out


def _refused(found: PackageServer, problem: str) -> Diagnostic:
    """Why a package's server `found` is left out, naming the package."""
    return MCP_PACKAGE(source=found.source, problem=problem, origin=found.package.origin)


def _package_grants(root: str) -> Grants:
    """The grants of the package at `root` (none when its manifest does not read)."""
    from smith.packages import Grants, read_package

    try:
        return read_package(root).grants
    except Exception:  # the package reader says what is wrong with it
        return Grants()


_CREDENTIAL_NAME = re.compile(r"(?:_API_KEY|_KEY|_TOKEN)$|SECRET|PASSWORD|PASSWD", re.I)


def _is_credential(name: str, config: Config) -> bool:
    """Whether the environment variable `name` holds a credential: one a provider or the
    configuration names (smith.providers.credential_variables), one named like a key or
    token (*_API_KEY, *_TOKEN, *SECRET*), or one whose value smith read as a credential."""
    from smith.diagnostics import scrub
    from smith.providers import credential_variables

    if _CREDENTIAL_NAME.search(name) or name in credential_variables(config):
        return True
    value = os.environ.get(name)
    return value is not None and value != "" and scrub(value) != value


def _variables(value: object) -> list[str]:
    """The names of the `${VAR}` in a value (texts, lists and mappings of them)."""
    if isinstance(value, str):
        return [m.group(1) for m in _VAR.finditer(value)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _variables(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _variables(v)]
    return []


def _ungranted_secret(fields: Mapping[str, object], grants: Grants, config: Config) -> str | None:
    """The first credential a package's server would read (a `${VAR}` in any of its values,
    or its token-env) that the package's grants do not name as a `secret`; None if none."""
    names = _variables(dict(fields))
    token = fields.get("token-env")
    if isinstance(token, str):
        names.append(token)
    for name in names:
        if name not in grants.secrets and _is_credential(name, config):
            return name
    return None


def server_of(
    name: str, fields: Mapping[str, object], source: Source
) -> tuple[Server | None, list[Diagnostic]]:
    """One server from a mapping of the keys a configured server takes (`env` and
    `headers` as mappings), as a skill's front matter gives them: the server (None when
    a value is wrong) and what is wrong."""
    problems: list[Diagnostic] = []
    reader = _Reader(name, source, problems)
    for key, value in fields.items():
        if key in ("env", "headers") and isinstance(value, dict):
            for k, v in value.items():
                reader.take(f"{key}.{k}", v, source)
        else:
            reader.take(str(key), value, source)
    server = reader.done()
    return (server if server is not None and server.enabled else None), problems


_EXPANDED = frozenset({"command", "args", "url"})  # env and headers: each value


def project_servers(path: str, problems: list[Diagnostic], config: Config) -> list[Server]:
    """The servers of a project's .mcp.json, as the user approved it with `smith trust`
    (smith.trust.approved_file); none when there is no such file, the project is not
    trusted (said once, as a warning) or the file changed since."""
    from smith import trust
    from smith.text import loads

    try:
        data_bytes = trust.read_bounded(path, trust.PROJECT_FILE_MAX_BYTES, follow=False)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        problems.append(MCP_PROJECT_FILE(source=Source("file", path), problem=str(exc)))
        return []
    if not trust.approved_file(config.home, config.project_root, path, data_bytes):
        problem = "the project is not trusted, or the file was added or changed since it was"
        problems.append(MCP_PROJECT_UNAPPROVED(source=Source("file", path), problem=problem))
        return []
    try:
        data = loads(data_bytes.decode("utf-8", "replace"))
    except ValueError as exc:
        problems.append(MCP_PROJECT_FILE(source=Source("file", path), problem=f"not JSON: {exc}"))
        return []
    table = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        problems.append(
            MCP_PROJECT_FILE(source=Source("file", path), problem='it has no "mcpServers" object')
        )
        return []
    out = []
    for name, entry in table.items():
        where = Source("file", f"{path}: mcpServers.{name}")
        if not isinstance(entry, dict):
            problems.append(MCP_PROJECT_FILE(source=where, problem=f"server {name} is no object"))
            continue
        if "." in str(name):
            problem = f"server {name!r} has a '.' in its name (KDL names have none either)"
            problems.append(MCP_PROJECT_FILE(source=where, problem=problem))
            continue
        server = _project_server(str(name), entry, where, problems)
        if server is not None:
            out.append(server)
    return out


def _project_server(
    name: str, entry: dict[str, object], where: Source, problems: list[Diagnostic]
) -> Server | None:
    """One server of a .mcp.json, its variables expanded; None when it cannot be used."""
    reader = _Reader(name, where, problems)
    kind = entry.get("type", "stdio")
    for key, written in entry.items():
        missing: list[str] = []
        value = _expand(written, missing) if key in _EXPANDED else written
        if isinstance(value, dict) and key in ("env", "headers"):
            value = {k: _expand(v, missing) for k, v in value.items()}
        if missing:
            reader.bad(
                key,
                written,
                where,
                f"names ${{{missing[0]}}}, which is not set in smith's environment",
                f"set {missing[0]} before smith starts, or write ${{{missing[0]}:-DEFAULT}}",
            )
            continue
        if key == "type":
            if value not in ("stdio", "http", "streamable-http", "sse"):
                reader.bad(
                    "type",
                    value,
                    where,
                    "is none of stdio, http",
                    'write "type": "http" for a url, or leave it out',
                )
            continue
        if key in ("env", "headers") and isinstance(value, dict):
            for k, v in value.items():
                reader.take(f"{key}.{k}", v, where)
        elif key in ("command", "args", "cwd", "url"):
            reader.take(key, value, where)
        # Other fields (Claude Code's own, such as "timeout" in ms) are left alone.
    if kind == "sse":
        reader.bad(
            "type",
            kind,
            where,
            "(the old HTTP+SSE transport) is not supported",
            'use the server\'s Streamable HTTP endpoint with "type": "http"',
        )
        return None
    return reader.done()


def by_name(config: Config) -> Mapping[str, Server]:
    found, _ = servers(config)
    return {s.name: s for s in found}


def first_source(settings: Mapping[str, Setting]) -> Source | None:
    for setting in settings.values():
        return setting.source
    return None
