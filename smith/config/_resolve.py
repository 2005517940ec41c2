"""Resolving configuration: seven layers, one winner per key, every winner with its source.

Lowest to highest:

    default   the option's declared default             "defaults"
    builtin   values from built-in plugins               "plugin <name>"
    plugin    values contributed by installed plugins    "plugin <name>"
    user      $SMITH_CONFIG_HOME/config.kdl              "<path>:<line>:<col>"
    project   <project>/.smith/config.kdl, if trusted    "<path>:<line>:<col>"
    env       SMITH_<KEY>                                 "env SMITH_<KEY>"
    flag      --<key>                                     "--<key>"

Every problem in every layer is collected before failing, so one run shows them all.

The values of an open section (`catalog`, `models`, `providers`) are checked by the check
its owner contributes: `resolve(checks=smith.providers.CONFIG_CHECKS)`, as the command
line does, or later `Config.apply_checks(...)`, as the runtime's assembly does for a
Config resolved without them. Without a check an open section's values are kept as given
(`Config.checked` says which sections were checked).
"""

from __future__ import annotations

import os

from smith import paths, trust
from smith.config._options import SCHEMA
from smith.config._schema import flag_for
from smith.config._types import Mismatch, Path, Strings
from smith.diagnostics import ConfigError, DiagnosticKind, SmithError, Source, show_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from smith.config._schema import OpenCheck, Option, Schema, Section
    from smith.diagnostics import Diagnostic

LAYERS = ("default", "builtin", "plugin", "user", "project", "env", "flag")

UNKNOWN_KEY = DiagnosticKind(
    "config.unknown-key",
    what="unknown setting '{key}'",
    why="smith reads only the settings its schema declares, so a misspelt key would "
    "otherwise be silently ignored",
    fix="{hint}; `smith config show` lists every setting",
)
UNKNOWN_PLUGIN_KEY = DiagnosticKind(
    "config.unknown-plugin-key",
    severity="warning",
    what="'{key}' is not a setting smith knows yet",
    why="settings under '{section}' belong to {owner}, which checks them when it loads",
    fix="keep it if a plugin that is not loaded now declares it; otherwise remove it",
)
UNKNOWN_ENV = DiagnosticKind(
    "config.unknown-env",
    severity="warning",
    what="environment variable {name} is not a smith setting, so it has no effect",
    why="SMITH_ variables configure smith; an unrecognised one is most likely misspelt",
    fix="{hint}; `smith config show` lists the variable of every setting",
)
INVALID_VALUE = DiagnosticKind(
    "config.invalid-value",
    what="expected {expected}, got {got}",
    why="this setting takes {expected} ({doc})",
    fix="{remedy}; `smith config show` lists every setting and its source",
)
BOOTSTRAP_IN_FILE = DiagnosticKind(
    "config.bootstrap-in-file",
    what="'{key}' can only come from the environment or the command line",
    why="it decides where configuration is read from, so it must be known before any file is read",
    fix="set it in the environment ({env}) or on the command line ({flag})",
)
UNTRUSTED_PROJECT = DiagnosticKind(
    "config.untrusted-project",
    severity="warning",
    what="ignoring this project's configuration: the project is not trusted",
    why="a project's configuration can change which model is called and what runs on your "
    "machine, so smith applies it only once you approve the project",
    fix="review the file, then run `smith trust {root}` to apply it",
)
TRUST_LIST_UNREADABLE = DiagnosticKind(
    "config.trust-list-unreadable",
    severity="warning",
    what="{reason}; so no project configuration applies",
    why="without the trust list smith cannot tell which projects you approved, so it trusts none",
    fix="repair or delete the file (deleting it forgets every trusted project), then run "
    "`smith trust` again in each project",
)
PROJECT_NOT_A_DIRECTORY = DiagnosticKind(
    "config.project-not-a-directory",
    what="the project root {path} is not a directory",
    why="smith works on the files of one project directory",
    fix="point --project (or SMITH_PROJECT) at an existing directory, or unset it to use "
    "the directory you run smith in",
)

# Environment variables that start with SMITH_ but are not settings.
NOT_SETTINGS = frozenset(
    {
        "SMITH_CYTHON_TRACE",  # a build variant (setup.py)
        "SMITH_WEB_APP",  # the mark smith web gives each app it starts (frontends/web/_server.py)
    }
)


class Setting:
    """One value for one key, with the layer and the surface it came from."""

    __slots__ = ("key", "layer", "source", "value")

    def __init__(self, key: str, value: object, layer: str, source: Source) -> None:
        self.key = key
        self.value = value
        self.layer = layer
        self.source = source

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.value!r}, {self.layer!r}, {self.source!r})"


class Contribution:
    """Values a plugin contributes; `builtin` plugins sit one layer below installed ones."""

    __slots__ = ("builtin", "plugin", "values")

    def __init__(self, plugin: str, values: Mapping[str, object], *, builtin: bool) -> None:
        self.plugin = plugin
        self.values = dict(values)
        self.builtin = builtin


class Config:
    """Resolved configuration: the winning setting of every key, plus what to warn about."""

    def __init__(
        self,
        schema: Schema,
        settings: dict[str, Setting],
        warnings: list[Diagnostic],
        user_file: str,
        project_root: str,
        project_file: str,
        project_trusted: bool,
    ) -> None:
        self.schema = schema
        self._settings = settings
        self.warnings = warnings
        self.user_file = user_file
        self.project_root = project_root
        self.project_file = project_file
        self.project_trusted = project_trusted
        self.errors: list[Diagnostic] = []  # filled when resolved with strict=False
        self.open: dict[str, Setting] = {}  # keys under open sections (see subtree)
        # The values of open keys a later one replaced (a higher layer, or the same key
        # again lower in one file), in the order they were given, lowest first: a
        # section whose keys name things (hooks) can tell two definitions apart.
        self.replaced: dict[str, list[Setting]] = {}
        self.checked: frozenset[str] = frozenset()  # open sections whose values were checked

    def __getitem__(self, key: str) -> object:
        return self._settings[key].value

    def origin(self, key: str) -> Setting:
        return self._settings[key]

    def __iter__(self) -> Iterator[Setting]:
        return iter(sorted(self._settings.values(), key=lambda s: s.key))

    def subtree(self, prefix: str) -> dict[str, Setting]:
        """The settings of the open section at `prefix`, by key relative to it:
        `subtree("catalog")` -> {"openai/gpt-5.context-window": Setting(...), ...}.
        Each key holds the value of its highest layer, with that layer's source."""
        start = prefix + "."
        return {
            key[len(start) :]: setting
            for key, setting in sorted(self.open.items())
            if key.startswith(start)
        }

    def apply_checks(self, checks: Mapping[str, OpenCheck]) -> None:
        """Check the values of the open sections in `checks` that were not checked when
        this Config was resolved (keeping what each check returns), as `resolve(checks=)`
        would have; raises ConfigError listing every problem. A no-op for sections
        already checked, so callers that need checked values may always call it."""
        errors: list[Diagnostic] = []
        done = set(self.checked)
        for prefix in sorted(set(checks) - self.checked):
            check = checks[prefix]
            start = prefix + "."
            for key, setting in sorted(self.open.items()):
                if not key.startswith(start):
                    continue
                try:
                    value = check(key, setting.value, setting.source)
                except SmithError as exc:
                    errors.append(exc.diagnostic)
                    continue
                self.open[key] = Setting(key, value, setting.layer, setting.source)
            done.add(prefix)
        if errors:
            raise ConfigError(errors)
        self.checked = frozenset(done)

    @property
    def home(self) -> str:
        return str(self["home"])

    def integer(self, key: str) -> int:
        """An integer option's value (the schema guarantees the type)."""
        value = self[key]
        assert isinstance(value, int), key
        return value


def _example(option: Option) -> str:
    from smith.config._located import format_value

    if option.default is not None and not callable(option.default):
        return format_value(option.default)
    return option.type.example()


def invalid(
    option: Option, got: object, source: Source, expected: str, layer: str = ""
) -> Diagnostic:
    """The diagnostic for a value that does not fit its option, with a fix for its surface."""
    example = _example(option)
    if source.surface == "env":
        remedy = f"set {option.env} to a valid value such as {example}, or unset it"
    elif source.surface == "flag":
        remedy = f"pass a valid value, e.g. {option.flag} {example}"
    elif source.surface == "file" and layer == "user":
        remedy = (
            f"edit that line to a valid value such as {example}, or run "
            f"`smith config set {option.key} {example}`"
        )
    elif source.surface == "file":
        remedy = f"edit that line to a valid value such as {example}"
    else:
        remedy = f"use a valid value such as {example}"
    doc = option.doc.rstrip(".")
    if doc[1:2].islower():  # "Sampling temperature" -> "sampling ..."; keep "API key"
        doc = doc[:1].lower() + doc[1:]
    return INVALID_VALUE(
        field=option.key,
        value=got,
        source=source,
        secret=option.secret,
        expected=expected,
        got="[secret]" if option.secret else show_value(got),
        doc=doc,
        remedy=remedy,
    )


class _Resolver:
    def __init__(
        self, schema: Schema, cwd: str, home_dir: str, checks: Mapping[str, OpenCheck]
    ) -> None:
        self.schema = schema
        self.checks = checks  # open section prefix -> the check its owner contributed
        self.cwd = cwd
        self.home_dir = home_dir  # the user's home, for ~ in paths
        self.settings: dict[str, Setting] = {}
        self.open: dict[str, Setting] = {}  # keys under open sections
        self.replaced: dict[str, list[Setting]] = {}  # what a later value replaced there
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []

    def report(self, diagnostic: Diagnostic) -> None:
        (self.errors if diagnostic.severity == "error" else self.warnings).append(diagnostic)

    def put(
        self,
        key: str,
        value: object,
        layer: str,
        source: Source,
        *,
        text: bool,
        key_source: Source | None = None,
    ) -> None:
        option = self.schema.get(key)
        if option is None:
            section = self.schema.section_for(key)
            if section.unknown == "open":
                self.put_open(section, key, value, layer, source)
            else:
                self.unknown(key, key_source or source)
            return
        if option.bootstrap and layer not in ("default", "env", "flag"):
            self.report(
                BOOTSTRAP_IN_FILE(
                    field=key, source=source, key=key, env=option.env, flag=option.flag
                )
            )
            return
        if isinstance(value, list) and not isinstance(option.type, Strings):
            from smith.config._located import KDL_SHAPE

            problem = f"has {len(value)} values; it takes one"
            self.report(KDL_SHAPE(field=key, source=source, key=key, problem=problem))
            return
        try:
            checked = (
                option.parse(value) if text and isinstance(value, str) else option.check(value)
            )
        except Mismatch as exc:
            self.report(invalid(option, value, source, exc.expected, layer))
            return
        if isinstance(option.type, Path) and isinstance(checked, str):
            checked = option.type.normalize(checked, self.cwd, self.home_dir)
        self.settings[key] = Setting(key, checked, layer, source)

    def put_open(
        self, section: Section, key: str, value: object, layer: str, source: Source
    ) -> None:
        """A key under an open section: kept as given once the section's check accepts it."""
        check = self.checks.get(section.prefix, section.check)
        if check is not None:
            try:
                value = check(key, value, source)
            except SmithError as exc:
                self.report(exc.diagnostic)
                return
        if key in self.open:
            self.replaced.setdefault(key, []).append(self.open[key])
        self.open[key] = Setting(key, value, layer, source)

    def unknown(self, key: str, source: Source) -> None:
        section = self.schema.section_for(key)
        if section.unknown == "warn":
            self.report(
                UNKNOWN_PLUGIN_KEY(
                    field=key,
                    source=source,
                    key=key,
                    section=section.prefix,
                    owner=section.owner if section.owner != "smith" else "plugins",
                )
            )
            return
        self.report(UNKNOWN_KEY(field=key, source=source, key=key, hint=self.schema.hint(key)))

    def file(self, path: str, layer: str, home: str, text: str | None = None) -> None:
        """Apply the settings of the file at `path` (its `text`, when already read)."""
        from smith.config import _cache

        if text is None:
            from smith.config._files import read

            text, problem = read(path)
            if problem is not None:
                self.report(problem)
            if text is None:
                return
        located = _cache.load(home, path, text)
        if located is None:
            from smith.config._kdl import read_settings

            located, problems = read_settings(path, text)
            for problem in problems:
                self.report(problem)
            if not problems:
                _cache.store(home, path, text, located)
        for item in located:
            self.put(
                item.key, item.value, layer, item.source, text=False, key_source=item.key_source
            )

    def project(self, path: str, root: str, home: str) -> bool:
        """Apply the project's file if the user trusted it as it is now (trust follows
        content); otherwise say why not, and what changed since it was trusted."""
        from smith.config._trusted import changed_since

        try:
            approved = trust.approval(home, root)
        except SmithError as exc:
            diagnostic = exc.diagnostic
            self.report(TRUST_LIST_UNREADABLE(source=diagnostic.source, reason=diagnostic.what))
            return False
        if approved is None:
            self.report(UNTRUSTED_PROJECT(source=Source("file", path), root=root))
            return False
        from smith.config._files import read

        text, problem = read(path, project=root)
        if problem is not None:
            self.report(problem)
        if text is None:
            return False
        if approved.get("sha256") != trust.digest(text):
            self.report(changed_since(approved, text, path, root))
            return False
        self.file(path, "project", home, text)  # the very text that was checked
        return True

    def environment(self, env: Mapping[str, str], *, bootstrap: bool) -> None:
        """Apply SMITH_ variables: the bootstrap ones first (they locate the files), the
        rest after the files."""
        by_env = self.schema.by_env()
        for name in sorted(env):
            if not name.startswith("SMITH_") or name in NOT_SETTINGS:
                continue
            option = by_env.get(name)
            if option is None:
                if not bootstrap:
                    hint = self.schema.hint(name, env=True)
                    self.report(UNKNOWN_ENV(source=Source("env", name), name=name, hint=hint))
            elif env[name] != "" and option.bootstrap == bootstrap:  # empty counts as unset
                self.put(option.key, env[name], "env", Source("env", name), text=True)

    def flags(self, flags: Mapping[str, object], *, bootstrap: bool) -> None:
        for key, value in flags.items():
            option = self.schema.get(key)
            if option is None or option.bootstrap == bootstrap:
                self.put(key, value, "flag", Source("flag", flag_for(key)), text=True)


def resolve(
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
    cwd: str | None = None,
    contributions: Iterable[Contribution] = (),
    schema: Schema = SCHEMA,
    strict: bool = True,
    checks: Mapping[str, OpenCheck] | None = None,
) -> Config:
    """Resolve every option. With `strict` (the default) any error raises `ConfigError`
    listing every problem found; otherwise invalid values are left out (the layer below
    wins) and the problems are in `Config.errors`, so that commands which repair
    configuration (`config set`, `trust`) can still run.

    `flags` maps option keys to command-line values (text, or bool for switches).
    `checks` maps the prefix of an open section to the check of its values, contributed
    by the section's owner (smith.providers.CONFIG_CHECKS); a section with neither such
    a check nor its own keeps its values unchecked (see `Config.checked`).
    """
    env = os.environ if env is None else env
    flags = {} if flags is None else flags
    cwd = os.getcwd() if cwd is None else cwd
    checks = {} if checks is None else checks
    open_sections = {s.prefix: s for s in schema.sections() if s.unknown == "open"}
    for prefix in checks:
        if prefix not in open_sections:
            raise ValueError(f"a check was given for {prefix!r}, which is not an open section")
    r = _Resolver(schema, cwd, env.get("HOME") or os.path.expanduser("~"), checks)

    for option in schema:
        default = option.default_value(env)
        r.settings[option.key] = Setting(
            option.key, default, "default", Source("default", f"defaults of {option.owner}")
        )
    for builtin in (True, False):
        for c in contributions:
            if c.builtin == builtin:
                for key, value in c.values.items():
                    layer = "builtin" if builtin else "plugin"
                    r.put(key, value, layer, Source("plugin", f"plugin {c.plugin}"), text=False)

    # Bootstrap settings locate the files, so their env and flag layers apply first.
    r.environment(env, bootstrap=True)
    r.flags(flags, bootstrap=True)
    config_home = str(r.settings["config-home"].value)
    home = str(r.settings["home"].value)
    project = r.settings["project"]
    if project.value is not None and not os.path.isdir(str(project.value)):
        r.report(
            PROJECT_NOT_A_DIRECTORY(
                field="project", value=project.value, source=project.source, path=project.value
            )
        )
    if project.value is None or not os.path.isdir(str(project.value)):
        root = paths.find_project_root(cwd, env)
        r.settings["project"] = Setting(
            "project", root, "default", Source("default", "found from the working directory")
        )
    else:
        root = str(project.value)
    user_file = os.path.join(config_home, paths.USER_CONFIG_NAME)
    project_file = paths.project_config_path(root)

    r.file(user_file, "user", home)
    trusted = False
    if os.path.exists(project_file):
        trusted = r.project(project_file, root, home)
    r.environment(env, bootstrap=False)
    r.flags(flags, bootstrap=False)

    if r.errors and strict:
        raise ConfigError(r.errors + r.warnings)
    config = Config(schema, r.settings, r.warnings, user_file, root, project_file, trusted)
    config.errors = r.errors
    config.open = r.open
    config.replaced = r.replaced
    config.checked = frozenset(
        prefix
        for prefix, section in open_sections.items()
        if prefix in checks or section.check is not None
    )
    return config
