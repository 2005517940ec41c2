"""smith's own options: the product-defaults layer of configuration.

Keys are kebab-case and dotted by section; each becomes `--key-with-dashes` and
`SMITH_KEY_WITH_UNDERSCORES`. Capabilities declare their options here so that one
`smith --help` and one `smith config show` list everything.
"""

from __future__ import annotations

from smith import paths
from smith.config._safety import safety_options
from smith.config._schema import Option, Schema, Section
from smith.config._tooloptions import MIB, context_options, tool_options
from smith.config._types import Boolean, Choice, Integer, Number, Path, String, Strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
PROVIDERS = "smith.providers"  # the owner of the open sections catalog, providers, models


def _open_sections(schema: Schema) -> None:
    """The open sections: the keys below them are names the user chooses."""
    schema.add_section(
        Section(
            "plugins",
            "open",
            "settings of plugins, one block per plugin: plugins { NAME { KEY VALUE; }; }, "
            "checked against the options the plugin declares when the plugin list is "
            "resolved (`smith plugins list` shows them)",
        )
    )
    # Open sections: the keys below them are names the user chooses (docs/providers.md).
    # smith.providers owns them and contributes the checks of their values
    # (smith.providers.CONFIG_CHECKS, passed to resolve): configuration imports no provider.
    schema.add_section(
        Section(
            "catalog",
            "open",
            'model catalog overrides, one block per model: catalog { "provider/model" { '
            "context-window 32768; }; }",
            PROVIDERS,
        )
    )
    schema.add_section(
        Section(
            "providers",
            "open",
            "one block per provider or account: providers { NAME { base-url ...; "
            "api-key-env ...; }; }",
            PROVIDERS,
        )
    )
    schema.add_section(
        Section(
            "models",
            "open",
            "model aliases and groups (ordered fallbacks): models { alias { fast "
            '"anthropic/claude-haiku-4-5"; }; group { best "anthropic/claude-sonnet-4-5" '
            '"openai/gpt-5"; }; }',
            PROVIDERS,
        )
    )
    # Open sections of the agent library's plugins, which read them (RuntimeView.config)
    # and say what is wrong with a value when they start.
    schema.add_section(
        Section(
            "mcp",
            "open",
            'MCP servers smith connects to, one named block each: mcp { server "files" '
            'command="python3" args="srv.py"; server "web" url="http://127.0.0.1:8931/mcp"; '
            "} (docs/mcp.md)",
            "smith.plugins.mcp",
        )
    )
    schema.add_section(
        Section(
            "hooks",
            "open",
            'commands run at the runtime\'s events, one named block each: hooks { hook "lint" '
            'on="after-tool" match="edit|write" command="ruff check ."; } (docs/hooks.md)',
            "smith.plugins.hooks",
        )
    )


def product_schema() -> Schema:
    schema = Schema()
    schema.add_section(Section("", "error", "smith's own settings"))
    _open_sections(schema)
    add = schema.add

    # Where things are. Bootstrap options: environment or command line only.
    add(
        Option(
            "config-home",
            Path(),
            paths.default_config_home,
            bootstrap=True,
            doc="Directory of the user configuration file config.kdl "
            "(default: $XDG_CONFIG_HOME/smith).",
        )
    )
    add(
        Option(
            "home",
            Path(),
            paths.default_data_home,
            bootstrap=True,
            doc="Directory for sessions, file history, credentials and the trust list "
            "(default: $XDG_DATA_HOME/smith).",
        )
    )
    add(
        Option(
            "cache-home",
            Path(absolute=True),  # relative: compiled code in the project (refused)
            paths.default_cache_home,
            bootstrap=True,
            doc="Directory for what smith can make again: compiled WebAssembly plugins "
            "(default: $XDG_CACHE_HOME/smith).",
        )
    )
    add(
        Option(
            "project",
            Path(),
            None,
            bootstrap=True,
            doc="Project root (default: the nearest directory above the working "
            "directory holding .smith/ or .git, else the working directory).",
        )
    )

    # The model and how it is asked.
    add(
        Option(
            "model",
            String(),
            None,
            doc="Model to use: a catalog id, an alias, or provider/model. Unset: the first "
            "provider with credentials, else the offline demo model.",
        )
    )
    add(
        Option(
            "base-url",
            String(),
            None,
            doc="Endpoint of the model setting's provider, e.g. http://127.0.0.1:8080/v1 "
            "for a llama.cpp, Ollama or vLLM server (openai-compatible/NAME); overrides "
            "providers.NAME.base-url.",
        )
    )
    add(
        Option(
            "model.temperature",
            Number(0, 2),
            None,
            doc="Sampling temperature; unset uses the provider's default.",
        )
    )
    add(
        Option(
            "model.max-tokens",
            Integer(1, 1_000_000),
            None,
            doc="Most output tokens per response; unset uses the model's catalog limit.",
        )
    )
    add(
        Option(
            "thinking",
            Choice(THINKING_LEVELS),
            "off",
            doc="Reasoning effort for models that think before answering.",
        )
    )

    # The agent loop and its tools.
    add(
        Option(
            "agent.max-iterations",
            Integer(1, 10_000),
            50,
            doc="Most provider rounds for one prompt before the loop stops.",
        )
    )
    add(
        Option(
            "agent.deadline",
            Integer(1, 7 * 86_400, "seconds"),
            None,
            doc="Most wall time for one prompt before the loop stops; unset: no limit.",
        )
    )
    add(
        Option(
            "agent.token-budget",
            Integer(1, 1_000_000_000, "tokens"),
            None,
            doc="Most input and output tokens (as providers report them) for one prompt; "
            "unset: no limit.",
        )
    )
    add(
        Option(
            "queue.steer",
            String(),
            "one-at-a-time",
            doc="How queued steering messages are delivered at a safe point: a queue "
            "policy, `one-at-a-time` (the oldest one), `all` (all of them together) or one "
            "an enabled plugin brings (plugin.kdl `queue-policy`).",
        )
    )
    add(
        Option(
            "queue.follow-up",
            String(),
            "one-at-a-time",
            doc="How queued follow-up messages are delivered when the agent would stop: a "
            "queue policy, as queue.steer.",
        )
    )
    add(
        Option(
            "context.window",
            String(),
            "full",
            doc="What the model is shown of the history since the last compaction: `full`, "
            "or a rolling window such as `40 messages`, `60000 chars` or `30000 tokens` "
            "(estimated), which never separates a tool result from its call.",
        )
    )
    add(
        Option(
            "context.limit",
            Integer(1000, 10_000_000, "tokens"),
            None,
            doc="Estimated context size at which the history is compacted automatically "
            "(at 80 %); unset: the model's context window from the catalog, and when that "
            "is unknown only `compact` compacts.",
        )
    )
    tool_options(add)
    context_options(add)
    safety_options(add)

    add(
        Option(
            "secrets.env",
            Strings(),
            [],
            doc="Environment variables whose values are secrets: the model and the session "
            "see a placeholder such as {{secret:NAME}}, and only bash commands get the value.",
        )
    )

    add(
        Option(
            "plugins.disabled",
            Strings(),
            [],
            doc="Built-in plugins to turn off, by name (`smith plugins list` lists them): "
            "their providers, commands, keys and theme are then not offered. The queue "
            "plugin and the last provider plugin cannot be turned off.",
        )
    )

    # The interactive app. Keys and theme default to the product plugin's.
    add(
        Option(
            "tui.theme",
            String(),
            None,
            doc="Theme of the interactive app (a Textual theme such as textual-dark, "
            "textual-light, nord, gruvbox); unset: the product plugin's.",
        )
    )
    add(
        Option(
            "tui.layout",
            String(),
            "standard",
            doc="Layout of the interactive app: the order of its regions, and which it "
            "shows (standard, focus, or one an enabled plugin brings; docs/ui.md).",
        )
    )
    add(
        Option(
            "tui.color",
            Choice(("auto", "none", "standard", "256", "truecolor")),
            "auto",
            doc="Colours of the interactive app: auto detects them from the terminal "
            "(TERM, COLORTERM, NO_COLOR); the others force a palette.",
        )
    )
    add(
        Option(
            "tui.mouse",
            Boolean(),
            True,
            doc="Let the app use the mouse (scrolling, clicking to expand); off leaves "
            "the terminal's own selection alone.",
        )
    )
    add(
        Option(
            "tui.hyperlinks",
            Boolean(),
            False,
            doc="Make links in answers clickable (OSC 8); off by default, since terminals "
            "that do not know them may show stray characters.",
        )
    )
    add(
        Option(
            "tui.notify",
            Boolean(),
            True,
            doc="When a turn ends or smith needs an answer while the terminal is not in "
            "front, ask it for a desktop notification (OSC 9 or OSC 777, else the bell).",
        )
    )
    add(
        Option(
            "tui.editor.max-lines",
            Integer(1, 1000, "lines"),
            8,
            doc="Rows the app's editor grows to with its text; longer text scrolls in it.",
        )
    )
    for action, what in (
        ("abort", "abort the running prompt"),
        ("quit", "quit (on an empty input line)"),
        ("latest", "return to the latest output"),
        ("palette", "open the command palette"),
        ("help", "show the commands and keys"),
        ("search", "find text in the transcript"),
        ("expand", "show thinking and tool output in full (or fold them again)"),
        ("editor", "edit the input's text in $VISUAL or $EDITOR"),
        ("history", "search the prompt history (type to filter, Enter takes one back)"),
        (
            "steer",
            "send from the editor; while the agent works, steer it (delivered after "
            "its current tool batch)",
        ),
        (
            "follow-up",
            "send from the editor; while the agent works, queue a follow-up "
            "(delivered once it would otherwise stop). The default is Alt+Enter where "
            "the terminal reports it (the kitty keyboard protocol: elsewhere, and in "
            "tmux, it arrives as Enter) and Tab in every terminal; Tab sends only "
            "while the agent works",
        ),
    ):
        add(
            Option(
                f"tui.keys.{action}",
                String(),
                None,
                doc=f"Key to {what}, e.g. ctrl+k (several: comma-separated); unset: the "
                "product plugin's.",
            )
        )

    # The HTTP engine every provider runs on (smith.providers._http).
    add(
        Option(
            "http.max-request",
            Integer(1024, 1024 * MIB, "bytes"),
            16 * MIB,
            doc="Largest request body sent to a provider; larger requests fail before "
            "anything is sent.",
        )
    )
    add(
        Option(
            "http.max-response",
            Integer(1024, 4096 * MIB, "bytes"),
            64 * MIB,
            doc="Largest response body read from a provider; a longer one is cut off and "
            "reported as incomplete.",
        )
    )
    add(
        Option(
            "http.head-timeout",
            Integer(1, 86_400, "seconds"),
            120,
            doc="Longest wait for a provider's response to begin after the request was sent.",
        )
    )
    add(
        Option(
            "http.chunk-gap",
            Integer(1, 86_400, "seconds"),
            300,
            doc="Longest silence in the middle of a provider's response before it is given "
            "up as stalled.",
        )
    )

    # File history.
    add(
        Option(
            "vcs.enabled",
            Boolean(),
            True,
            doc="Snapshot project files around turns that change them.",
        )
    )
    add(
        Option(
            "vcs.max-file-size",
            Integer(0, 4096 * MIB, "bytes"),
            10 * MIB,
            doc="Untracked files larger than this are left out of snapshots (and reported).",
        )
    )
    add(
        Option(
            "vcs.max-files",
            Integer(1, 100_000_000, "files"),
            100_000,
            doc="Projects with more files than this are not snapshotted (a warning says "
            "so); raise it to opt in for a huge tree.",
        )
    )
    add(
        Option(
            "vcs.max-size",
            Integer(MIB, 1024 * 1024 * MIB, "bytes"),
            2048 * MIB,
            doc="Disk space one project's file history may use: a warning from 80 %, and "
            "no new snapshots once reached (`smith history gc` frees space).",
        )
    )
    add(
        Option(
            "vcs.allow-home",
            Boolean(),
            False,
            doc="Snapshot a project whose root is the home directory or the filesystem root.",
        )
    )
    add(
        Option(
            "vcs.keep-days",
            Integer(0, 36_500, "days"),
            30,
            doc="`smith history gc` drops snapshots older than this (the newest is kept).",
        )
    )
    add(
        Option(
            "vcs.keep-count",
            Integer(1, 10_000_000),
            1000,
            doc="`smith history gc` keeps at most this many snapshots of a project.",
        )
    )
    add(
        Option(
            "vcs.watch",
            Boolean(),
            True,
            doc="Track file changes with inotify (Linux) so a turn that changed nothing "
            "costs no scan of the project; off where files change in ways inotify does "
            "not see (writes through a shared memory mapping or a hard link from outside).",
        )
    )

    # Memory accounting (smith.memory, docs/memory.md).
    add(
        Option(
            "memory-accounting",
            Boolean(),
            False,
            bootstrap=True,
            doc="Account every allocation to its lifetime scope (process, session, turn, "
            "kernel, frame, io), from the start of the process; `smith debug memory` "
            "shows the figures.",
        )
    )
    for kind in ("process", "session", "turn", "kernel", "frame", "io"):
        add(
            Option(
                f"memory.ceiling.{kind}",
                Integer(1, None, "bytes"),
                None,
                doc=f"Live bytes one {kind} scope is expected to stay under; crossing it is "
                "counted and warned about (with memory accounting on), never enforced.",
            )
        )

    add(
        Option(
            "plan",
            Boolean(),
            False,
            doc="Start in plan mode: only read-only tools run and the model is told it is "
            "planning; leaving it (Shift+Tab in the app) sends the plan (docs/plan.md).",
        )
    )
    # Diagnostics.
    add(
        Option(
            "debug",
            Boolean(),
            False,
            doc="Show tracebacks and internal detail along with diagnostics.",
        )
    )
    return schema


SCHEMA = product_schema()
