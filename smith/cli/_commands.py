"""The command table: every subcommand, its one-line summary, and where its code lives.

A command with a `module` is built: that module has `add_arguments(parser)` and
`run(args, ctx) -> int`, imported only when the command runs. A command without one
names the `capability` it waits for; running it exits 2 with a diagnostic saying so.
"""

from __future__ import annotations


class Command:
    __slots__ = ("capability", "description", "module", "name", "summary")

    def __init__(
        self,
        name: str,
        summary: str,
        *,
        module: str | None = None,
        capability: str | None = None,
        description: str = "",
    ) -> None:
        assert (module is None) != (capability is None), name
        self.name = name
        self.summary = summary
        self.module = module
        self.capability = capability
        self.description = description or summary

    @property
    def built(self) -> bool:
        return self.module is not None


TUI = "the interactive terminal interface"

COMMANDS: tuple[Command, ...] = (
    Command(
        "web",
        "Serve the interactive app to a browser",
        module="smith.frontends.web",
        description="Serve the interactive app, the same one `smith` runs in a terminal, to "
        "a browser: each tab runs its own app in this project, with these settings flags. "
        "Listens on 127.0.0.1 unless --host says otherwise; the printed URL carries a "
        "secret made at launch, without which every request is refused. Ctrl+C stops the "
        "server and every app it started.",
    ),
    Command(
        "eval",
        "Run one prompt without the TUI and print the result",
        module="smith.frontends.eval",
        description="Run one prompt through the agent without the TUI. The answer streams "
        "to stdout and tool activity to stderr; --json prints every event as a JSON line, "
        "ending in a result record. Each run is recorded in a new session (its name goes "
        "to stderr), in --session NAME, or with --no-session in a temporary store removed "
        "on a clean exit. Exit status: 0 finished, 1 stopped on an error or a limit, 2 bad "
        "usage, 130 aborted.",
    ),
    Command(
        "rpc",
        "Speak JSON-RPC 2.0 over standard input and output",
        module="smith.frontends.rpc",
        description="Drive the agent from another program: JSON-RPC 2.0 requests on stdin, "
        "responses and event notifications on stdout, one per line (LF); logs go to "
        "stderr. Runs a new session unless --session names one. Exits 0 after `shutdown`, "
        "end of input or SIGTERM. docs/rpc.md lists every method.",
    ),
    Command(
        "replay",
        "Replay a recorded session without a model",
        module="smith.frontends.replay",
        description="Play a recorded session back as the events of a live run, with no "
        "model and no credentials: at the recorded pace, --speed N times faster or "
        "--instant, all turns or --turns 3..5; a readable transcript, or --json for the "
        "event stream (the same bytes on every run). --reexecute runs the recorded file "
        "tool effects again in a scratch copy of the project restored from file history "
        "and reports every divergence (exit status 1 if there is one); shell commands are "
        "not re-run, as nothing can yet confine them to the copy.",
    ),
    Command(
        "mcp",
        "Serve smith's tools and sessions over MCP (stdio)",
        module="smith.frontends.mcp",
        description="Serve MCP over standard input and output: the built-in tools (each "
        "call recorded in a session, 'mcp' unless --session says otherwise), sessions as "
        "resources (JSON lines or markdown), and command output as progress notifications. "
        "Standard output carries only the protocol.",
    ),
    Command(
        "sessions",
        "List, inspect, dump, import, fork, repair and remove sessions",
        module="smith.cli._sessions",
    ),
    Command(
        "undo",
        "Undo the file changes of the last turn",
        module="smith.cli._vcs.undo",
        description="Undo the project's latest file change: the newest turn that changed "
        "files, whichever session ran it (the app's, an eval's; --session picks one), byte "
        "for byte, including what shell commands did. Only files that turn changed are "
        "touched; if you changed one of them since, nothing is changed unless you add "
        "--force.",
    ),
    Command(
        "redo",
        "Redo file changes that were undone",
        module="smith.cli._vcs.redo",
        description="Apply again the file changes the latest `smith undo` took back, "
        "whichever session it was in (--session picks one).",
    ),
    Command(
        "restore",
        "Restore project files to a snapshot",
        module="smith.cli._vcs.restore",
        description="Make the project's files as they were at a session entry (an id from "
        "`smith history` or `smith sessions show`); --conversation also continues the "
        "session from that entry. Can itself be undone.",
    ),
    Command(
        "diff",
        "Show file changes made in a session",
        module="smith.cli._vcs.diff",
        description="Show what changed between two session entries, from one entry to the "
        "files now, or (with no entry) what the newest turn changed.",
    ),
    Command(
        "history",
        "List file snapshots; prune old ones",
        module="smith.cli._vcs.history",
        description="List the turns that changed files (prompt, files, lines added and "
        "removed); `smith history gc` drops old snapshots to free space.",
    ),
    Command(
        "config",
        "Show, get and set configuration, with where each value comes from",
        module="smith.cli._config",
        description="Show, get and set configuration. Every value is reported with the "
        "layer and location that supplied it. `config set` is the only command that "
        "writes configuration (to the user file).",
    ),
    Command(
        "trust",
        "Trust a project so its .smith/config.kdl applies",
        module="smith.cli._trust",
        description="Trust a project so that its .smith/config.kdl is applied. Until "
        "then smith ignores the project's configuration, with a warning.",
    ),
    Command(
        "auth",
        "Manage provider credentials",
        module="smith.cli._auth",
        description="Manage provider credentials. `auth status` says, for each provider, "
        "whether a credential is available and where it comes from (configuration, "
        "environment, the auth file or a plugin), without asking any model. `auth login` "
        "stores a key read from standard input in the owner-only auth file; `auth logout` "
        "removes it.",
    ),
    Command(
        "models",
        "List models and which ones are usable",
        module="smith.cli._models",
        description="List the model catalog: limits, input, thinking levels, prices, and "
        "whether the provider has a credential. --refresh first fetches the providers' own "
        "model lists (a failure keeps the cached or bundled list); --json shows where each "
        "fact came from and where sources disagree.",
    ),
    Command(
        "context",
        "Show what the model would be told, part by part",
        module="smith.cli._context",
        description="Show what the model would be told now besides the conversation, in "
        "the order a request sends it: the system prompt's parts (identity, tool guidance, "
        "rules, reporting, prompt.system and prompt.append, instruction files), the tool "
        "definitions and the environment block, each with its source (a plugin, a file, a "
        "configuration key, the environment) and its size in estimated tokens. --session "
        "adds the notes a session recorded; --json prints the parts with their text.",
    ),
    Command("tools", "List the built-in tools or run one", module="smith.cli._tools"),
    Command(
        "plugins",
        "List, install, enable or disable plugins; write WebAssembly ones",
        module="smith.cli._plugins",
        description="List every plugin smith loads, the same list in every mode: its "
        "version, source (built in, or a path), state (enabled, or disabled by "
        "plugins.disabled) and what it contributes (providers, commands, keys, themes, "
        "prompts, queue policies, tools, settings). Install packages (skills, prompt "
        "templates, agents, MCP servers, hooks, themes and sandboxed WebAssembly code) "
        "from a directory, an archive or a git repository, after showing what each asks "
        "to do; remove, update, enable, disable and describe them (info); make, build and "
        "read the SDK of WebAssembly plugins (new, build, help).",
    ),
    Command("debug", "Inspect smith itself: build, memory", module="smith.cli._debug"),
    Command("help", "Show help for smith or for one command", module="smith.cli._help"),
)

BY_NAME = {command.name: command for command in COMMANDS}
