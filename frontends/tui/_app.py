"""The smith app: transcript, queue, input and status over one runtime.

The runtime runs on the app's own event loop. The app attaches to it as a UI frontend
(`_intents.AppFrontend`): its events become UI intents (smith.ui.deliver) and the app
shows them, and plugins' questions become overlays: recorded messages are read back from the
session (the transcript is the session), live output and running tools are shown as they
stream, and the status line carries model, thinking, cost, context use, session and queue.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.widgets import Input, Static, TextArea

from smith.runtime import Image, Runtime, Template, ops
from smith.runtime import Shown as EntryBatch
from smith.sdk import Plugin, resolve_plugins
from smith.text import inert
from smith.ui import Intent

from ._bulk import collector_paused
from ._editor import Editor, placeholder, submit_keys
from ._entries import SHELL_KINDS, entry_text, render_entry
from ._hangup import Leaving, restore_terminal, terminal_driver
from ._history import PromptHistory
from ._host import (
    CommandHostMixin,
    CommandSuggester,
    SessionSource,
    hidden_templates,
    template_commands,
)
from ._images import ImageInput
from ._intents import AppFrontend, show_plugin
from ._interrupt import QuitKey
from ._layout import Layouts
from ._models import ModelChoice, model_choices
from ._plan import PlanMode, TodoPanel
from ._recall import FindMixin
from ._render import (
    INTERRUPTED,
    ToolLines,
    interrupted,
    render_live,
    render_markdown,
    render_message,
    render_notice,
    settle_point,
)
from ._resume import given
from ._review import presentations
from ._screens import SmithCommands
from ._statusline import StatusLine, queued_text, size_text, status_fields
from ._subagents import with_children
from ._transcript import Transcript
from ._working import WorkingLine

if TYPE_CHECKING:
    from smith.diagnostics import Source
    from smith.session import Session

SHOWN_KINDS = ("message", "compaction", "question", "shell", "shell_private", "input_handled")
FRAME = 1 / 60  # seconds: the most often the streaming message is redrawn
SETTLE = 400  # characters a settled part of a streaming answer has at least
BIG = 10_000  # entries: a session this long freezes its objects out of the GC's way


class SmithApp(CommandHostMixin, FindMixin, PlanMode, App[int]):
    TITLE = "smith"
    COMMANDS = App.COMMANDS | {SmithCommands}
    CSS = """
    Screen { layout: vertical; }
    #below { height: auto; display: none; color: $warning; text-style: bold; }
    #below.shown { display: block; }
    #queue { height: auto; display: none; color: $text-muted; }
    #queue.shown { display: block; }
    #status { height: 1; background: $panel; color: $text; }
    #search { display: none; height: 3; }
    #search.shown { display: block; }
    .left-out { display: none !important; }
    """  # (left-out: a region the layout leaves out, _layout, whatever else it says)
    # Keys of the app's actions come from the product plugin and configuration (see
    # on_mount); these are fixed.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "copy, abort, clear the draft, quit (twice)", priority=True),
        Binding("end", "latest", "the latest output (from the transcript)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
    ]
    ACTIONS: ClassVar[dict[str, tuple[str, str]]] = {  # name -> (app action, description)
        "abort": ("abort", "abort"),
        "quit": ("eof", "quit"),
        "latest": ("latest", "latest output"),
        "palette": ("command_palette", "commands"),
        "help": ("command('help')", "help"),
        "search": ("search", "find"),
        "expand": ("expand", "show all"),
        "editor": ("external_editor", "edit in $EDITOR"),
        "history": ("history_search", "history"),
        "mode": ("cycle_mode", "plan mode on and off"),  # the plan plugin's key: _plan
    }

    def __init__(
        self,
        runtime_factory: Callable[[Session], Runtime],
        session: Session,
        *,
        banner: str | None = None,
        prompt: str | None = None,
        plugins: Sequence[Plugin] = (),
        keys: Mapping[str, str] | None = None,
        theme: str | None = None,
        themes: Mapping[str, Mapping[str, str]] | None = None,
        layout: str | None = None,  # tui.layout: a plugin's layout (_layout)
        layout_source: Source | None = None,  # where tui.layout was set
        session_source: SessionSource | None = None,
        models: Callable[[], Sequence[ModelChoice]] = model_choices,
        show_memory: bool = False,
        debug: bool = False,
        templates: Mapping[str, Template] | None = None,
        notify: bool = True,
        editor_lines: int = 8,
        history: PromptHistory | None = None,
    ) -> None:
        super().__init__()
        self.tracebacks = debug  # an internal error shows its traceback (--debug) or one line
        self._factory = runtime_factory
        self.session = session
        self.banner = banner
        self.first_prompt = prompt
        # The resolved plugin list's active plugins (smith.sdk.resolve_plugins); when none
        # are given, the defaults: the product plugin's commands, keys and theme among them.
        self.plugins = list(plugins) or list(resolve_plugins().active)
        # How each tool's calls are shown: the built-ins' and the plugins' tools'.
        self.shown = presentations(self.plugins)
        defaults = {k: v for p in self.plugins for k, v in p.keybindings.items()}
        self.keys = {**defaults, **(keys or {})}
        self.theme_name = theme or next((p.theme for p in self.plugins if p.theme), None)
        self.package_themes = dict(themes or {})  # installed packages' (tui.theme NAME)
        self.layout = Layouts(self.plugins, layout, layout_source)  # the regions' order
        # Prompt templates are commands too (/help, the palette, completion); the runtime
        # expands them, so the app sends `/NAME args` as typed.
        self.notify_away = notify  # tui.notify: tell the user when they are elsewhere
        self.editor_lines = editor_lines  # tui.editor.max-lines: the editor's most rows
        self.history = history  # what was sent, per project (None: this run's only)
        self.template_commands = template_commands(templates or {}, self.plugins)
        self._hidden = hidden_templates(templates or {}, self.plugins)
        self.session_source = session_source
        self.models = models  # the model picker's list (the catalog's, when given one)
        self.show_memory = show_memory  # live bytes in the status (memory accounting on)
        self.runtime: Runtime | None = None
        self._synced: str | None = None  # the last session entry shown
        self._live: dict[str, Any] = {}  # the assistant message streaming now
        self._live_pending = False  # a redraw of it is scheduled
        self._live_id = ""  # its message id
        self._live_keys: list[str] = []  # its settled blocks, drawn once each
        self._live_done = 0  # characters of its text in them
        self._switching = False  # a session switch is under way
        self._context_frozen = False  # see _freeze_context
        self._busy = False
        self._tools = ToolLines(lambda: self.transcript, self.shown)
        self.leaving: Leaving | None = None  # set once the app runs in a terminal
        self.quit_key = QuitKey()  # Ctrl+C when idle: clears a draft, or asks again
        self.plugin_status: dict[tuple[str, str, str], str] = {}  # plugins' Status, Progress

    def _fatal_error(self) -> None:
        """An unexpected exception ends the app. Textual would print a traceback with the
        values of local variables (which may hold a credential or the user's files); as
        every mode does, only --debug shows it, else one diagnostic line."""
        import sys

        if self.tracebacks:
            super()._fatal_error()
            return
        from smith.diagnostics import INTERNAL

        error = sys.exception()
        what = f"{type(error).__name__}: {error}" if error is not None else "unknown"
        self.bell()
        self.panic(Text(inert(INTERNAL(error=what[:500]).render())))

    def compose(self) -> ComposeResult:
        yield from self.layout.order(self._widgets())  # in the layout's order (_layout)

    def _widgets(self) -> ComposeResult:
        drawn = functools.partial(render_entry, shown=self.shown)  # a task's child under it:
        yield Transcript(with_children(drawn, lambda: self.runtime), entry_text,  # _subagents
                         id="transcript")  # fmt: skip
        yield Static("▼ new output below (End or Ctrl+L to follow)", id="below", markup=False)
        yield Static("", id="queue", markup=False)
        yield Input(placeholder="Find in transcript…  (Enter: next older match, Escape: close)",
                    id="search")  # fmt: skip
        yield TodoPanel(id="todo")  # the agent's todo list, pinned (_plan)
        self.working = WorkingLine(self.keys.get("abort", ""), id="working")
        yield self.working
        yield Editor(
            placeholder=placeholder(self.keys),
            id="input",
            suggest=CommandSuggester(self),
            submit_keys=submit_keys(self.keys),
            max_lines=self.editor_lines,
            history=self.history,
            busy=lambda: self._busy,
            images=ImageInput(lambda: self.runtime),
            notice=self.tell,
            session=lambda: self.session.id,  # whose draft the editor keeps
        )
        yield StatusLine(id="status")

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def editor(self) -> Editor:
        return self.query_one("#input", Editor)

    async def on_mount(self) -> None:
        if not self.is_headless:
            self._leave_with_the_terminal()
        commands = {c.name for c in self.plugin_commands}
        for name, key in self.keys.items():
            if name in self.ACTIONS and key:
                action, description = self.ACTIONS[name]
                self._bindings.bind(key, action, description, priority=True)
            elif key and name in commands:  # a plugin's key for a command (a package's `key`)
                self._bindings.bind(key, f"command({name!r})", f"/{name}", priority=True)
        from ._themes import use_themes

        use_themes(self, self.package_themes, self.theme_name)
        self._attach_runtime()
        self.watch(self.transcript, "unseen", self._unseen)
        if self.banner:
            self.transcript.add("banner", lambda: render_notice(self.banner or ""))
        for notice in [*self._hidden, *(d.render() for d in self.layout.problems)]:
            self.tell(notice, error=True)
        with collector_paused(self._long()):  # a long history's objects
            self._sync()
        from ._welcome import welcome

        welcome(self)  # a first launch in this project: what to try, where help is
        if len(self.transcript.blocks) > BIG:
            # A long history is hundreds of thousands of objects that live as long as the
            # app: keep the collector from walking them all on every full collection
            # (pauses of 0.3-0.5 s at 100,000 entries).
            import gc

            gc.freeze()
        self._status()
        self.editor.focus()
        if self.first_prompt:
            self._send(self.first_prompt)

    def get_driver_class(self) -> type[Driver]:
        # smith web's driver over pipes is kept; the terminal's gets _hangup's changes.
        return terminal_driver(super().get_driver_class())

    def _leave_with_the_terminal(self) -> None:
        """SIGHUP, SIGTERM or a lost terminal end the app, the ordinary way (which
        restores the terminal) or, if that hangs, within a couple of seconds anyway
        (frontends/tui/_hangup.py). Textual installs no handler for either signal."""
        loop = __import__("asyncio").get_running_loop()
        self.leaving = Leaving(
            lambda code: loop.call_soon_threadsafe(self.exit, code),
            session=lambda: self.session,
            restore=lambda: restore_terminal(self._driver),
        ).start()

    async def on_unmount(self) -> None:
        if self.runtime is not None:
            self._unwatch()  # the widgets are going: the ending turn's events are not shown
            await self.runtime.close()

    # -- input -------------------------------------------------------------------------

    @on(Editor.Submitted, "#input")
    def _submitted(self, event: Editor.Submitted) -> None:
        editor, (text, images) = event.editor, event.message()  # images: parts of their own
        if self._switching:
            editor.value = event.text  # back, with its chips
            editor.pastes.update(event.pastes)
            editor.images.update(event.images)
            self.tell("switching sessions: a moment (your text is kept)")
            return
        if text:
            editor.prompts.add(event.entry())  # as typed: Up shows its paste chips again
            self._send(text, event.mode, images)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While an overlay (or for Escape, the editor's completion list) is open it owns
        the keys: the app's own actions step aside (Escape closes it instead of aborting)."""
        overlay = len(self.screen_stack) > 1 or (action == "abort" and self.editor.completion.shown)
        blocked = ("abort", "latest", "eof", "command", "search", "expand", "history_search")
        return not (overlay and action in blocked)

    def _attach_runtime(self) -> None:
        self.runtime = self._factory(self.session)
        self._unwatch = self.runtime.attach(AppFrontend(self))

    def _reload_transcript(self) -> None:
        self._match = None
        self.transcript.clear()
        self._live_keys, self._live_done = [], 0
        self._synced = None
        self._live = {}
        self._sync()
        self._status()

    def _send(self, text: str, mode: str = "prompt", images: Sequence[Image] = ()) -> None:
        from ._send import send

        send(self, text, mode, images)

    def action_external_editor(self) -> None:
        """Ctrl+G: the input's text in $VISUAL (or $EDITOR), the terminal handed over
        until it exits; what was saved comes back into the editor."""
        from ._external import edit_externally

        text, problem = edit_externally(self, self.editor.value)
        if problem is not None:
            self.tell(problem, error=True)
        elif text is not None:
            self.editor.value = text
        self.editor.focus()

    def action_interrupt(self) -> None:
        """Ctrl+C: copy while something is selected, else abort the work, else clear
        the draft or quit on a second press (_interrupt)."""
        if self._copy_selection():
            return
        if self.runtime is not None and self.runtime.busy:
            self.runtime.abort()
        else:
            self.quit_key.press(self)

    def _copy_selection(self) -> bool:
        """Copy the selected text (of the transcript, an overlay, or the focused input)
        to the clipboard and let the selection go, so the next Ctrl+C aborts again."""
        field = self.focused
        if isinstance(field, (Input, TextArea)) and field.selected_text:
            text = field.selected_text
        else:
            text = self.screen.get_selected_text() or ""
            self.screen.clear_selection()
        if not text:
            return False
        self.copy_to_clipboard(text)
        self.notify(f"copied {len(text):,} characters", timeout=2)
        return True

    def action_eof(self) -> None:
        """Ctrl+D: quit on an empty input line, as a shell does; else delete forward in
        whichever input has focus."""
        field = self.focused
        if (isinstance(field, Input) and field.value) or (
            isinstance(field, TextArea) and field.text
        ):
            field.action_delete_right()
        elif field is self.editor or not isinstance(field, (Input, TextArea)):
            self.exit(0)

    def action_abort(self) -> None:
        search = self.query_one("#search", Input)
        if search.has_class("shown"):
            self._close_search()
        elif self.runtime is not None:
            self.runtime.abort()

    def action_expand(self) -> None:
        self.transcript.toggle_all()

    def action_command(self, name: str) -> None:
        self.run_command(name, "")

    def action_latest(self) -> None:
        self.transcript.latest()

    def action_page(self, direction: int) -> None:
        t = self.transcript
        t.scroll_to(y=t.scroll_y + direction * max(1, t.size.height - 2), animate=False)

    # -- runtime events --------------------------------------------------------------

    def _show(self, intent: Intent) -> None:
        data = intent.data
        if self.working.take(intent.kind, data):  # (every delta: no query of the DOM)
            self._status()  # started or settled: the state in the status line too
        if intent.event is not None and intent.event.get("type") == "input_handled":
            self._sync()  # a plugin's command: drawn from its record, reply or error
        elif "origin" in data and intent.kind in ("notify", "status", "progress"):
            show_plugin(self, intent)  # a plugin's, not the runtime's
        elif intent.kind == "todo":
            self.query_one(TodoPanel).take(data)
        elif intent.kind == "answer":
            self._sync()  # how a question ended: shown from its record
        elif intent.kind == "message_delta":
            self._delta(data)
        elif intent.kind == "transcript_append":
            if data.get("message_id") == self._live_id or not self._live:
                self._drop_live()
            self._sync()
        elif intent.kind == "tool_activity":
            self._tool(data)
        elif intent.kind == "status":
            if data["event"] == "turn_start" and not self._context_frozen:
                self._freeze_context()
            if data["event"] == "agent_end":
                self.signal_away(f"smith: done ({data.get('stop', 'end')})")
                if interrupted(data):  # stopped while a tool ran: one line says so,
                    self._sync()  # after what the aborted calls recorded
                    self.tell(INTERRUPTED)
            if data["event"] in ("agent_start", "settled", "turn_end", "queue_changed", "mode"):
                self._busy = data["event"] != "settled"
                if data["event"] in ("turn_end", "settled"):
                    self._sync()
                self._status()
        elif intent.kind == "notify":
            self._notify(data)
        elif intent.kind == "progress" and data["event"] == "compaction_end":
            ok = "compacted the context" if data["ok"] else f"compaction failed: {data['error']}"
            key = self.transcript.unique("compaction")
            self.transcript.add(key, lambda: render_notice(ok, "dim"))

    def signal_away(self, text: str) -> None:
        """Tell the user `text` through the terminal if it is not in front (_notify)."""
        if self.notify_away and not self.app_focus:
            from ._notify import signal

            signal(self, text)

    def _freeze_context(self) -> None:
        """The runtime has just decoded a long history for its first request (in a
        thread): a million objects that live as long as the session. Freeze them out of
        the collector's full passes too, as the transcript's own were at mount."""
        rt = self.runtime
        if rt is not None and self._long() and rt.status()["context"]["decoded"]:
            import gc

            gc.freeze()
            self._context_frozen = True

    def _delta(self, data: dict[str, Any]) -> None:
        if data.get("start"):
            if data["role"] == "assistant":
                self._drop_live()  # anything left of an earlier one
                self._live = {"role": "assistant", "content": []}
                self._live_id = data["message_id"]
            return
        if not self._live or data["message_id"] != self._live_id:
            return  # a user's message: it is shown from its record
        content = self._live["content"]
        if not content or content[-1]["type"] != data["channel"]:
            content.append({"type": data["channel"], "text": ""})
        content[-1]["text"] += data["delta"]
        # Deltas arrive faster than frames: the live block is rebuilt at most once a
        # frame, however many arrived since.
        if not self._live_pending:
            self._live_pending = True
            self.set_timer(FRAME, self._show_live)

    def _show_live(self) -> None:
        """Redraw the streaming message as Markdown, headings, emphasis and tables as they
        arrive. A long answer is cut at paragraph ends into settled blocks drawn once, so
        a frame only parses and wraps the paragraph being written (Markdown of the whole
        message on every frame would cost more as it grows)."""
        self._live_pending = False
        if not self._live:
            return
        tail = f"live-{self._live_id}"
        content = self._live["content"]
        texts = [p for p in content if p["type"] == "text"]
        if len(texts) == 1 and content[-1] is texts[0]:  # (after its thinking, if any)
            text = content[-1]["text"]
            cut = settle_point(text, self._live_done, SETTLE)
            if cut > 1:
                part = text[self._live_done : cut]
                key = f"{tail}-{len(self._live_keys)}"
                before = None if self._live_keys else [dict(p) for p in content[:-1]]
                if tail in self.transcript.index:
                    self.transcript.rekey(tail, key)
                self.transcript.add(key, lambda: _settled(part, before))  # its gap: the \n\n
                self._live_keys.append(key)
                self._live_done = cut
            if self._live_done:
                rest = text[self._live_done :]
                self.transcript.add(tail, lambda: render_live(rest))
                return
        live = dict(self._live, content=[dict(p) for p in content])
        self.transcript.add(tail, lambda: render_message(live, streaming=True, shown=self.shown))

    def _drop_live(self) -> None:
        for key in [*self._live_keys, f"live-{self._live_id}"]:
            self.transcript.drop(key)
        self._live = {}
        self._live_keys = []
        self._live_done = 0

    def _tool(self, data: dict[str, Any]) -> None:
        self._tools.show(data)  # running calls, their live output, the user's !commands

    def _notify(self, data: dict[str, Any]) -> None:
        if "diagnostic" in data:
            d = data["diagnostic"]
            text = f"error: {d.get('what', '')}\n  fix: {d.get('fix', '')}"
        else:
            text = str(data.get("text", ""))
        self.transcript.add(self.transcript.unique("notice"), lambda: render_notice(text, "red"))

    def _sync(self) -> None:
        """Show the session entries recorded since the last sync (running tools' live
        lines give way to their recorded results)."""
        if self.runtime is None:
            return
        # What was recorded since: through the runtime's operation (the whole branch, read
        # from the records in bulk, when nothing was shown yet or the branch changed).
        found = self.runtime.submit(ops.Entries(since=self._synced, kinds=SHOWN_KINDS))
        assert isinstance(found, EntryBatch)
        leaf = found.leaf
        if leaf is None or leaf == self._synced:
            return
        shown, ids, pairs = found.entries, found.ids, found.pairs
        for pair in pairs:
            if pair:  # a tool result: the running call's line gives way to it
                self._drop_tool_line(f"tool-{pair}")
        for entry in shown if self._tools.shells else ():  # a !command's record: its
            content = entry.content if entry.kind in SHELL_KINDS else None  # block while it
            if isinstance(content, dict):  # ran gives way to it
                key = f"tool-{content.get('tool_call_id')}"
                if key in self._tools.shells:
                    self._tools.shells.discard(key)
                    self._drop_tool_line(key)
        self.transcript.add_entries(shown, ids)
        self.query_one(TodoPanel).take_entries(shown)  # a todo call's list, pinned
        self._synced = leaf

    def _drop_tool_line(self, key: str) -> None:
        t = self.transcript
        if key in t.index:
            t.add(key, lambda: None)  # an empty block: its recorded result follows

    def session_info(self) -> dict[str, Any]:
        """The session's id, name, file, entry count, selected leaf and directory, as
        its runtime tells (ops.SessionInfo); the app reads nothing of it itself."""
        assert self.runtime is not None
        found = self.runtime.submit(ops.SessionInfo())
        assert isinstance(found, dict)
        return found

    def _long(self) -> bool:
        """A long history: its objects are kept out of the collector's way (BIG)."""
        return self.runtime is not None and int(self.session_info()["entries"]) > BIG

    def _status(self) -> None:
        if self.runtime is None:
            return
        status = self.runtime.status()  # the one view: nothing read from internals
        queued = len(status["queue"])
        memory = status["memory"] if self.show_memory else None  # None: accounting off
        fields = status_fields(
            status,
            busy=status["busy"] or self.working.activity.working,
            session=(info := self.session_info())["name"] or info["id"],
            given=given(info["name"]) is not None,
            memory=memory and f"{size_text(memory['session'])} (turn {size_text(memory['turn'])})",
            extra=self.plugin_status.values(),
        )
        self.query_one(StatusLine).show(fields)  # fitted to its width, now and on resize
        queue = self.query_one("#queue", Static)
        queue.update(
            "\n".join(
                f"queued ({i['mode'].replace('_', '-')}): {queued_text(i['text'])}"
                for i in status["queue"]
            )
        )
        queue.set_class(bool(queued), "shown")

    def _unseen(self, unseen: bool) -> None:
        self.query_one("#below").set_class(unseen, "shown")


def _settled(part: str, before: list[dict[str, Any]] | None) -> RenderableType:
    """A settled part of a streaming answer: whole paragraphs (and whole code blocks),
    so it is drawn as Markdown once, as the recorded answer will be. The first one
    (`before`: the parts its text follows, such as its thinking) carries the label."""
    if before is None:
        return render_markdown(part.rstrip("\n"))
    text = {"type": "text", "text": part.rstrip("\n")}
    drawn = render_message({"role": "assistant", "content": [*before, text]}, streaming=True)
    assert drawn is not None  # (an assistant's message is always drawn)
    return drawn
