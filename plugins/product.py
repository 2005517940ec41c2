"""The built-in product plugin: smith's default system prompt, its interactive commands,
default keys and theme.

Everything here goes through the plugin contract (smith.sdk): the runtime composes the
system prompt from these `prompts` (docs/context.md: `system.NAME` parts in order, a
`tool.NAME` line for each active tool under `system.tools`), a frontend offers these
commands as `/name args` and in its command palette, binds the keys (configuration can
override them: `tui.keys.ACTION`), uses the theme (`tui.theme`) and arranges its regions by
one of these layouts (`tui.layout`, docs/ui.md "Layouts").
"""

from __future__ import annotations

from collections.abc import Callable

from smith.sdk import Command, CommandHost, Plugin
from smith.text import counted
from smith.ui import STANDARD_LAYOUT

# The commands import the runtime's operations (smith.runtime.ops) when they run: every
# mode's start resolves this plugin, and `smith tools run` runs no runtime.

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


def _help(host: CommandHost, arg: str) -> None:
    """/help: the commands and the keys, each as the plugins and configuration give them."""
    commands = [(f"/{c.name}{' ' + c.usage if c.usage else ''}", c.description)
                for c in host.commands()]  # fmt: skip
    keys = list(host.key_help())
    width = min(20, max(len(name) for name, _ in [*commands, *keys, ("", "")]))
    lines = [f"{name.ljust(width)}  {what}" for name, what in commands]
    lines += ["", "Keys", *(f"{key.ljust(width)}  {what}" for key, what in keys)]
    host.show("Commands and keys", lines)


def _quit(host: CommandHost, arg: str) -> None:
    host.quit()


def _new(host: CommandHost, arg: str) -> None:
    host.switch_session("new")


def _continue(host: CommandHost, arg: str) -> None:
    host.switch_session("latest")


def _resume(host: CommandHost, arg: str) -> None:
    if arg:
        host.switch_session(arg)
        return
    options = list(host.sessions())
    if not options:
        host.tell("this project has no other session with messages yet")
        return
    host.choose("Resume a session (newest first)", options, host.switch_session)


def _tree(host: CommandHost, arg: str) -> None:
    if host.navigate("tree", host.select):
        return
    options = list(host.branches())
    if len(options) < 2:
        host.tell("this session has one branch; /fork or editing an earlier message makes more")
        return
    host.choose("Go to a branch", options, host.select)


def _fork(host: CommandHost, arg: str) -> None:
    host.fork()


async def _context(host: CommandHost, arg: str) -> None:
    """/context: what the model is told now, part by part, as `smith context` shows it."""
    import asyncio

    from smith.runtime import context_table, ops

    # The next environment block reads git (bounded): off the app's loop.
    parts = await asyncio.to_thread(host.runtime.submit, ops.Context())
    assert isinstance(parts, list)
    host.show("What the model is told", context_table(parts))


def _compact(host: CommandHost, arg: str) -> None:
    import re

    from smith.runtime import ops

    focus = arg.strip() or None  # /compact FOCUS: what the summary must keep above all
    host.runtime.submit(ops.Compact(focus))
    # "/compact keep the approvals" says "keeping: the approvals", not "keeping keep ..."
    kept = re.sub(r"^(keep(ing)?\b:?\s*)", "", focus or "", flags=re.I).strip() or focus
    host.tell(f"compacting the context, keeping: {kept}…" if focus else "compacting the context…")


def _model(host: CommandHost, arg: str) -> None:
    from smith.runtime import ops

    if not arg:
        if not host.navigate("models", lambda spec: _model(host, spec)):
            host.tell(f"model: {host.runtime.model} (change it with /model PROVIDER/MODEL)")
        return
    host.runtime.submit(ops.SetModel(arg))
    host.tell(f"model: {host.runtime.model}")


def _thinking(host: CommandHost, arg: str) -> None:
    from smith.runtime import ops

    if arg:
        host.runtime.submit(ops.SetThinking(arg))
        host.tell(f"thinking: {arg}")
        return
    options = [(level, level) for level in THINKING_LEVELS]
    host.choose("Thinking level", options, lambda level: _thinking(host, level))


def _op(name: str) -> Callable[[CommandHost, str], None]:
    """undo, redo, restore ENTRY (a refusal, e.g. a conflict, is a diagnostic)."""
    done = {"undo": "undone", "redo": "redone", "restore": "restored"}[name]

    def run(host: CommandHost, arg: str) -> None:
        from smith.runtime import ops

        words = arg.split()
        force = "--force" in words
        op: ops.Operation
        if name == "restore":
            target = next((w for w in words if not w.startswith("--")), "")
            op = ops.Restore(target, conversation="--conversation" in words, force=force)
        else:
            op = ops.Undo(force=force) if name == "undo" else ops.Redo(force=force)
        result = host.runtime.submit(op)
        result = result if isinstance(result, dict) else {}
        changed = result.get("changed")
        if not changed:
            host.tell(f"{done}: the files were already like that")
        else:
            paths = ", ".join(f"{c['path']} ({c['change']})" for c in changed[:5])
            more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
            host.tell(f"{done}: {paths}{more}")
        if result.get("overwritten"):  # forced: say whose changes went, and how to get them
            host.tell(f"overwrote your changes to {', '.join(result['overwritten'])} (recorded "
                      "first: /history and /restore bring them back)")  # fmt: skip
        if result.get("left"):
            host.tell(f"left {', '.join(result['left'])} as it is: ignored there, so not in "
                      "that snapshot")  # fmt: skip

    return run


def _diff(host: CommandHost, arg: str) -> None:
    from smith.diagnostics import SmithError
    from smith.runtime import ops

    words: list[str | None] = [*arg.split()[:2]]
    try:
        result = host.runtime.submit(ops.Diff(*words))
    except SmithError as exc:
        if exc.diagnostic.code != "history.no-changes":
            raise
        host.tell("no file changes to show: no turn of this session has changed files yet "
                  "(/diff A B compares two entries, see /history)")  # fmt: skip
        return
    assert isinstance(result, dict)
    changed = result["files"]
    if not changed:
        host.tell("no file changes")
        return
    head = f"{counted(len(changed), 'file')}, +{result['insertions']} -{result['deletions']} lines"
    title, patch = f"Changes: {result['title']}", str(result["patch"])
    if not host.show_diff(title, head, patch):
        host.show(title, [head, "", *patch.splitlines()])


def _history(host: CommandHost, arg: str) -> None:
    from smith.runtime import ops

    items = host.runtime.submit(ops.History())
    assert isinstance(items, list)
    if not items:
        host.tell("no turn of this session changed files")
        return
    lines = []
    for item in items:
        mark = "  (undone)" if item["undone"] else "  (pruned)" if item["pruned"] else ""
        lines.append(
            f"{item['entry']}  {item['files']} file{'' if item['files'] == 1 else 's'}  "
            f"+{item['insertions']} "
            f"-{item['deletions']}  {item['text']}{mark}"
        )
    host.show("File history (/restore ENTRY goes back to one)", lines)


def _replay(host: CommandHost, arg: str) -> None:
    """Replay plays a session in its own app (it needs the whole screen): say how."""
    session = host.runtime.status()["session"]
    host.tell(
        f"to watch this session again, run `smith replay {session}` in a terminal "
        "(--speed N, --instant, --turns 2..4; --json for the events)"
    )


def _queue(host: CommandHost, arg: str) -> None:
    """Take a queued message back into the input to edit (or drop) it."""
    items = list(host.runtime.status()["queue"])
    if not items:
        host.tell("nothing is queued")
        return

    def take(id: str) -> None:
        from smith.runtime import ops

        item = next(i for i in items if i["id"] == id)
        if host.runtime.submit(ops.QueueRemove(id)):
            host.edit(item["text"])

    choices = [(i["id"], f"{i['mode']}: {_glimpse(i['text'])}") for i in items]
    host.choose("Edit a queued message", choices, take)


def _glimpse(text: str) -> str:
    """A queued message as one row of a list: a long one (a paste, say) by its first
    line and its length; taken back, it is shown whole (its paste as its chip)."""
    lines = text.splitlines()
    return text if len(lines) <= 5 else f"{lines[0]} … ({len(lines)} lines)"


def _layout(host: CommandHost, arg: str) -> None:
    """/layout: choose among the app's layouts, or arrange it by NAME, for this run
    (`tui.layout NAME` keeps one)."""
    layouts = list(host.layouts())
    name = arg.strip()
    if not layouts:
        host.tell("this frontend has no layouts")
    elif not name:
        host.choose("Layout for this run (tui.layout NAME keeps one)", layouts,
                    lambda chosen: _layout(host, chosen))  # fmt: skip
    elif host.use_layout(name):
        host.tell(f"layout: {name}, for this run (set tui.layout {name} to keep it)")
    else:
        known = ", ".join(n for n, _ in layouts)
        host.tell(f"there is no layout {name}: the layouts are {known}", error=True)


def _plugins(host: CommandHost, arg: str) -> None:
    host.show("Plugins", [f"{name} (built in)" for name in host.plugin_names()])


COMMANDS = (
    Command("help", "the commands and keys", _help),
    Command("new", "start a new session", _new),
    Command("resume", "open another session of this project", _resume, "[ID]"),
    Command("continue", "open this project's latest session", _continue),
    Command("tree", "go to another branch of this session", _tree),
    Command("fork", "continue from here in a new session", _fork),
    Command(
        "compact", "summarise older context to free room (FOCUS: what to keep)", _compact, "[FOCUS]"
    ),
    Command("context", "what the model is told now, part by part, with sizes", _context),
    Command("model", "show or change the model", _model, "[MODEL]"),
    Command("thinking", "show or change the thinking level", _thinking, "[LEVEL]"),
    Command("undo", "undo the file changes of the last turn", _op("undo"), "[--force]"),
    Command("redo", "redo undone file changes", _op("redo"), "[--force]"),
    Command(
        "restore",
        "restore files as they were at an entry",
        _op("restore"),
        "ENTRY [--conversation] [--force]",
    ),
    Command(
        "diff", "show the last turn's file changes (or from ENTRY [to ENTRY])", _diff, "[A] [B]"
    ),
    Command("history", "list the turns that changed files", _history),
    Command("replay", "how to watch this session again", _replay),
    Command("queue", "take a queued message back to edit it", _queue),
    Command("layout", "choose the app's layout for this run", _layout, "[NAME]"),
    Command("plugins", "the plugins in use", _plugins),
    Command("quit", "leave smith", _quit),
)

KEYBINDINGS = {
    "abort": "escape",
    "quit": "ctrl+d",
    "latest": "ctrl+l",
    "palette": "ctrl+p",
    "help": "f1",
    "search": "ctrl+f",
    "expand": "ctrl+o",
    "editor": "ctrl+g",  # the input's text in $VISUAL / $EDITOR
    "history": "ctrl+r",  # search the prompt history
    # In the editor while the agent works (idle, both send): a steer is delivered after
    # the current tool batch, a follow-up once the agent would otherwise stop. Alt+Enter
    # reaches the app only through the kitty keyboard protocol (elsewhere it is Enter), so
    # Tab queues too, in every terminal, and only while the agent works.
    "steer": "enter",
    "follow-up": "alt+enter,tab",
}

THEME = "textual-dark"

# The app's regions top to bottom (smith.ui.LAYOUT_REGIONS), by name (`tui.layout NAME`):
# "standard" shows every region; "focus" only the conversation, what runs and what is
# queued (no todo panel, no status line).
LAYOUTS = {
    "standard": STANDARD_LAYOUT,
    "focus": ("transcript", "queue", "working", "input"),
}
LAYOUT = "standard"

# The default system prompt, part by part (docs/context.md). Every word is sent with every
# request, so each line says something a capable model would not do unprompted.
PROMPTS = {
    "system.identity": (
        "You are smith, a coding agent. You work in the user's project through tools: you "
        "read and search its files, change them and run commands. Work in small, verifiable "
        "steps: understand the code before you change it, make the change the task needs "
        "and no more, in the project's own style, then check it. Keep going until the task "
        "is done or you need the user."
    ),
    # The heading of the tool guidance; the `tool.NAME` lines of the active tools follow.
    "system.tools": "Tools:",
    "tool.read": "- read: read files (not cat, head or sed in bash), and always a file you "
    "are about to edit. A long file comes in windows: continue at the offset it gives.",
    "tool.edit": "- edit: change part of a file. old_text must match exactly one place: copy "
    "it from what read showed, with enough lines around it to be unique.",
    "tool.write": "- write: new files and whole rewrites only; change existing files with edit.",
    "tool.grep": "- grep: search file contents; use it rather than grep or rg in bash.",
    "tool.find": "- find: find files by name or glob; use it rather than find in bash.",
    "tool.ls": "- ls: list a directory; use it rather than ls in bash.",
    "tool.bash": "- bash: builds, tests, linters, git and other commands; not for reading, "
    "searching or listing files. After a change, run the project's tests (or the nearest "
    "check it has) to verify it.",
    "system.rules": (
        "The user's work:\n"
        "- The working tree may hold changes you did not make. Never revert, overwrite or "
        "reformat them; if they are in your way, ask.\n"
        "- No destructive commands (git reset --hard, git checkout or restore of files, "
        "git clean, rm -rf, force pushes), and no commits, branches or pushes unless the "
        "user asks for them.\n"
        "- Stay inside the project and add no dependencies unless the task needs it; say "
        "so when you do.\n"
        "- When a request is ambiguous, or a step is risky or cannot be undone, ask rather "
        "than guess.\n"
        "- Instruction files (AGENTS.md) hold rules for their directory and below: a deeper "
        "file wins over a shallower one, and the user's request over both."
    ),
    "system.reporting": (
        "Reporting:\n"
        "- Be concise: lead with the outcome, then what the user needs to know; no filler, "
        "no restating the request.\n"
        "- Point at code as path:line (src/app.py:42).\n"
        "- Say what you verified and how (which tests or commands, and their result), and "
        "what you did not or could not verify.\n"
        "- Do not cat or echo what you wrote or changed to show it; summarise it in the "
        "answer."
    ),
}

# Prompt templates that ship with smith (users and projects may replace them by name).
INIT = """---
description: write an AGENTS.md for this project
argument-hint: [WHAT TO STRESS]
---
Write an AGENTS.md at the root of this project: the instructions a coding agent needs
to work here as the project's own developers do. Look before you write: read the README,
the build and test configuration (pyproject.toml, package.json, Makefile, CI files and
the like), and a few representative source files; run the test command to check it.

Cover, in this order and briefly (at most about 60 lines in all):
- what the project is and how it is laid out (the directories that matter);
- how to set it up, build it, and run the tests (exact commands, and how to run one test);
- the conventions the code follows (style, naming, error handling, type checking and
  linting commands) that a newcomer would get wrong;
- what not to touch or commit (generated files, secrets, vendored code).

If an AGENTS.md exists already, improve it rather than start again, and keep what is
still true. State only what you checked; leave out generic advice. $ARGUMENTS
"""
TEMPLATES = {"init": INIT}

PLUGIN = Plugin(
    "product",
    prompts=PROMPTS,
    commands=COMMANDS,
    keybindings=KEYBINDINGS,
    theme=THEME,
    layouts=LAYOUTS,
    templates=TEMPLATES,
    # What configuration overrides of these defaults are read from (tui.keys.*, tui.theme,
    # tui.layout).
    settings={
        **{f"tui.keys.{action}": key for action, key in KEYBINDINGS.items()},
        "tui.theme": THEME,
        "tui.layout": LAYOUT,
    },
)
