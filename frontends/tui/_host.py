"""The app's side of the command contract (smith.sdk.CommandHost): what commands from
plugins may ask of it, and switching the session the app shows."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from smith.diagnostics import SmithError, did_you_mean
from smith.runtime import SessionTree, ops
from smith.runtime import Shown as EntryBatch
from smith.text import inert

from ._render import render_notice
from ._screens import ChoiceScreen, InfoScreen

if TYPE_CHECKING:
    from textual.app import SystemCommand
    from textual.binding import BindingType
    from textual.screen import Screen

    from smith.runtime import Runtime, Template
    from smith.sdk import Command, CommandHost, Plugin
    from smith.session import Entry, Session
    from smith.ui import Asked, Reply, Shown

    from ._layout import Layouts
    from ._models import ModelChoice
    from ._transcript import Transcript


class SessionSource(Protocol):
    """Where the app finds sessions of its project."""

    def new(self) -> Session: ...
    def latest(self) -> Session | None: ...
    def open(self, id: str) -> Session: ...
    def listing(self) -> list[tuple[str, str]]: ...  # (id, label), newest first
    def fork(self, session: Session) -> Session: ...  # at its selected leaf, opened


class CommandHostMixin:
    # Provided by SmithApp:
    runtime: Runtime | None
    session: Session
    plugins: Sequence[Plugin]
    session_source: SessionSource | None
    _switching: bool
    _held: list[tuple[str, bool]] | None = None  # notices held back during a switch
    session_info: Callable[[], dict[str, Any]]  # the session as its runtime tells
    _unwatch: Callable[[], None]
    exit: Callable[..., None]
    push_screen: Callable[..., Any]
    run_worker: Callable[..., Any]
    _factory: Callable[[Session], Runtime]
    models: Callable[[], Sequence[ModelChoice]]  # what the model picker offers
    keys: Mapping[str, str]  # action -> its keys: the plugins' keybindings, configured
    layout: Layouts  # the plugins' layouts and the one in use (_layout)
    screen_stack: list[Screen[Any]]
    ACTIONS: ClassVar[dict[str, tuple[str, str]]]  # action -> (app action, description)
    BINDINGS: ClassVar[list[BindingType]]

    if TYPE_CHECKING:

        @property
        def transcript(self) -> Transcript: ...

    # -- the commands ------------------------------------------------------------------

    template_commands: list[Command]

    @property
    def plugin_commands(self) -> list[Command]:
        """The plugins' commands, then the prompt templates not named like one."""
        return [*(c for p in self.plugins for c in p.commands), *self.template_commands]

    def commands(self) -> Sequence[Command]:
        return self.plugin_commands

    def run_command(self, name: str, arg: str) -> None:
        if self._switching or self.runtime is None:
            self.tell("switching sessions: a moment, then try again")
            return
        command = next((c for c in self.plugin_commands if c.name == name), None)
        if command is None:
            names = [c.name for c in self.plugin_commands]
            hint = did_you_mean(name, names, template="/{}", otherwise="/help lists them")
            self.tell(f"there is no command /{name}; {hint}", error=True)
            return
        origin = next((p.name for p in self.plugins if command in p.commands), "templates")
        host = cast("CommandHost", PluginHost(self, origin))
        try:
            # A CommandHost: its runtime is set (checked above) while a command runs.
            ran = command.run(host, arg)
        except SmithError as exc:
            d = exc.diagnostic
            self.tell(f"{d.what}\n  fix: {d.fix}", error=True)
        else:
            if inspect.isawaitable(ran):  # a coroutine command (it may ask): in a worker
                self.run_worker(self._finish(ran), group="commands")
        self._status()  # a command may have changed the model, thinking, session...

    async def _finish(self, ran: Awaitable[object]) -> None:
        try:
            await ran
        except SmithError as exc:
            d = exc.diagnostic
            self.tell(f"{d.what}\n  fix: {d.fix}", error=True)
        self._status()

    # -- CommandHost -------------------------------------------------------------------

    def tell(self, text: str, *, error: bool = False) -> None:
        if self._held is not None:  # said while a switch builds the runtime: after its history
            self._held.append((text, error))
            return
        key = self.transcript.unique("notice")
        style = "red" if error else "bold yellow"
        self.transcript.add(key, lambda: render_notice(text, style))

    def edit(self, text: str) -> None:
        from ._editor import Editor

        field = self.query_one("#input", Editor)  # type: ignore[attr-defined]
        field.take_back(text)  # a paste it was sent with shows as its chip again
        field.focus()

    def show(self, title: str, lines: Sequence[str]) -> None:
        self.push_screen(InfoScreen(title, lines))

    def key_help(self) -> Sequence[tuple[str, str]]:
        """(keys, what they do) of every key the app answers: the editor's, the plugins'
        keybindings as configured (tui.keys.*) for the app's actions, and its fixed
        bindings; read from where they are bound, so the list stays true."""
        from textual.binding import Binding

        from ._editor import NEWLINE_KEYS

        keys = self.keys
        steer, follow = keys.get("steer", ""), keys.get("follow-up", "")
        rows = [("enter", "send" + (" (while it works: steer)" if "enter" in steer else ""))]
        rows += [(k, "while it works: steer") for k in _split(steer) if k != "enter"]
        rows += [(",".join(_split(follow)), "while it works: queue a follow-up")] if follow else []
        rows += [(",".join(NEWLINE_KEYS), "new line"), ("up,down", "earlier prompts (at the "
                 "first or last line)")]  # fmt: skip
        rows += [(keys[name], what) for name, (_, what) in self.ACTIONS.items() if keys.get(name)]
        rows += [(keys[c.name], f"/{c.name}") for c in self.plugin_commands
                 if keys.get(c.name) and c.name not in self.ACTIONS]  # fmt: skip
        rows += [(b.key, b.description or _BINDING_HELP.get(b.action, b.action))
                 for b in self.BINDINGS if isinstance(b, Binding)]  # fmt: skip
        rows += [("/", "the commands (Tab completes, Enter runs)"), ("@", "complete a path "
                 "of the project"), ("!", "!cmd runs a shell command (!!cmd: not told to the "
                 "model)")]  # fmt: skip
        return [(key_label(key), what) for key, what in rows]

    def show_keys(self) -> None:
        """The keys overlay (the command palette's "Keys")."""
        width = max((len(k) for k, _ in self.key_help()), default=0)
        self.show("Keys", [f"{k.ljust(width)}  {what}" for k, what in self.key_help()])

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's palette commands, its "Keys" (a panel of Textual's generic editor
        keys) showing smith's keys instead."""
        from textual.app import SystemCommand

        for command in super().get_system_commands(screen):  # type: ignore[misc]
            if command.title == "Keys":
                yield SystemCommand("Keys", "smith's keys and what they do", self.show_keys)
            else:
                yield command

    def show_diff(self, title: str, summary: str, patch: str) -> bool:
        """A pager over `patch`, file by file (frontends/tui/_pager.py)."""
        from ._pager import DiffScreen

        self.push_screen(DiffScreen(title, summary, patch))
        return True

    def choose(self, title: str, options: Sequence[tuple[str, str]],
               then: Callable[[str], object]) -> None:  # fmt: skip
        self.push_screen(ChoiceScreen(title, options), self._picked(then))

    def navigate(self, what: str, then: Callable[[str], object]) -> bool:
        """The branch tree ("tree") and the model picker ("models") overlays."""
        if what == "tree":
            from ._tree import TreeScreen

            self.push_screen(TreeScreen(self._session_tree()), self._picked(then))
            return True
        if what == "models" and self.runtime is not None:
            from ._picker import ModelPicker

            screen = ModelPicker(self.models(), current=self.runtime.model)
            self.push_screen(screen, self._picked(then))
            return True
        return False

    def _picked(self, then: Callable[[str], object]) -> Callable[[str | None], None]:
        """What an overlay's result goes through: `then` for a pick, nothing on Escape."""

        def picked(key: str | None) -> None:
            if key is not None:
                try:
                    then(key)
                except SmithError as exc:
                    self.tell(f"{exc.diagnostic.what}\n  fix: {exc.diagnostic.fix}", error=True)
                self._status()

        return picked

    def layouts(self) -> Sequence[tuple[str, str]]:
        return self.layout.listing()

    def use_layout(self, name: str) -> bool:
        """Arrange the app's main screen (under any overlay) by the layout `name`."""
        return self.layout.use(name, self.screen_stack[0])

    def plugin_names(self) -> Sequence[str]:
        names = [p.name for p in self.plugins]
        if self.runtime is not None:
            names += [n for n in self.runtime.status()["plugins"] if n not in names]
        return names

    def quit(self) -> None:
        self.exit(0)

    def sessions(self) -> Sequence[tuple[str, str]]:
        if self.session_source is None:
            return []
        here = self.session_info()["id"] if self.runtime is not None else None
        return [(i, label) for i, label in self.session_source.listing() if i != here]

    def _session_tree(self) -> SessionTree:
        assert self.runtime is not None
        tree = self.runtime.submit(ops.Tree())
        assert isinstance(tree, SessionTree)
        return tree

    def branches(self) -> Sequence[tuple[str, str]]:
        if self.runtime is None:
            return []
        tree = self._session_tree()
        out = []
        for leaf in tree.leaves():
            said = next((m for m in reversed(tree.branch(leaf.id))
                         if m.kind == "message" and _role(m.content) == "user"), None)  # fmt: skip
            text = _first_text(said.content) if said is not None else "(no message)"
            mark = "● " if leaf.id == tree.leaf else "  "
            out.append((leaf.id, f"{mark}{inert(text)[:70]}"))
        return out

    def select(self, leaf: str) -> None:
        assert self.runtime is not None
        try:
            self.runtime.submit(ops.Select(leaf))  # refused while a turn runs
        except SmithError as exc:
            self.tell(f"{exc.diagnostic.what}\n  fix: {exc.diagnostic.fix}", error=True)
            return
        self._reload_transcript()

    def fork(self) -> None:
        if self.session_source is None or self.runtime is None:
            self.tell("nothing to fork yet", error=True)
            return
        info = self.runtime.submit(ops.SessionInfo())
        assert isinstance(info, dict)
        if info["leaf"] is None:
            self.tell("nothing to fork yet", error=True)
            return
        forked = self.runtime.submit(ops.Fork())
        self._switch(forked)  # type: ignore[arg-type]

    def switch_session(self, which: str) -> None:
        source = self.session_source
        if source is None:
            self.tell("sessions cannot be switched here", error=True)
            return
        if which == "new":
            self._switch(source.new())
        elif which == "latest":
            found = source.latest()
            if found is None or (
                self.runtime is not None and found.id == self.session_info()["id"]
            ):
                self.tell("this is the latest session")
                return
            self._switch(found)
        else:
            self._switch(source.open(which))

    # -- switching -----------------------------------------------------------------------

    def _switch(self, session: Session) -> None:
        """Close the current runtime and session and show `session`; one switch at a time
        (commands and input wait for it, see run_command and _submitted). The model in
        use stays, unless `session` recorded another (`_keep_model`)."""
        old_runtime, old_session = self.runtime, self.session
        model = old_runtime.model if old_runtime is not None else None
        self._switching = True
        self.session = session
        self.runtime = None

        async def swap() -> None:
            try:
                if old_runtime is not None:
                    self._unwatch()  # its last events are not about the new session
                    await old_runtime.close()
                old_session.close()
                held: list[tuple[str, bool]] = []
                self._held = held
                try:
                    self._attach_runtime()  # says what it found: damage, unknown effects
                finally:
                    self._held = None
                self._reload_transcript()  # the new session's history, from its runtime
                for text, error in held:
                    self.tell(text, error=error)
                self.tell(f"session {session.name or session.id}")
                self._keep_model(model)
            finally:
                self._switching = False

        self._swap_task = __import__("asyncio").ensure_future(swap())

    def _keep_model(self, model: str | None) -> None:
        """After a switch: the model the session last recorded (/model in it), else
        `model`, the one in use before, when the new runtime started with another."""
        from smith.runtime.ops import SetModel

        runtime = self.runtime
        if runtime is None:
            return
        found = runtime.submit(ops.Entries(kinds=("model_change",)))
        assert isinstance(found, EntryBatch)
        recorded = recorded_model(found.entries)
        wanted = recorded or model
        if wanted is None or wanted == runtime.model:
            return
        try:
            runtime.submit(SetModel(wanted))
        except SmithError as exc:
            d = exc.diagnostic
            self.tell(f"the model stays {runtime.model}: {d.what}\n  fix: {d.fix}", error=True)
            return
        self.tell(f"model: {runtime.model}" + (" (as this session recorded)" if recorded else ""))
        self._status()

    def _attach_runtime(self) -> None:
        raise NotImplementedError  # SmithApp: a runtime for self.session

    def _reload_transcript(self) -> None:
        raise NotImplementedError  # SmithApp: rebuild the transcript from the session

    def _status(self) -> None:
        raise NotImplementedError  # SmithApp: refresh the status line


class PluginHost:
    """The host a plugin's command gets: the app, with what it posts and asks going
    through the runtime in the plugin's name (smith.ui intents, like a handler's)."""

    def __init__(self, app: CommandHostMixin, origin: str) -> None:
        self._app = app
        self._origin = origin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._app, name)

    def post(self, value: Shown) -> None:
        if self._app.runtime is not None:
            self._app.runtime.post(value, origin=self._origin)

    async def ask(self, question: Asked) -> Reply:
        from smith.ui import refused

        if self._app.runtime is None:
            return refused("the app is switching sessions", "tui")
        return await self._app.runtime.ask(question, origin=self._origin)


_BINDING_HELP = {"page(-1)": "scroll the transcript up", "page(1)": "scroll it down"}
_KEY_NAMES = {"escape": "Esc", "pageup": "PgUp", "pagedown": "PgDn", "up": "↑", "down": "↓"}


def _split(keys: str) -> list[str]:
    return [k.strip() for k in keys.split(",") if k.strip()]


def key_label(keys: str) -> str:
    """How keys are written for a person: `ctrl+p,f1` -> `Ctrl+P, F1`."""

    def one(part: str) -> str:
        return _KEY_NAMES.get(part, part.upper() if len(part) == 1 else part.capitalize())

    return ", ".join("+".join(one(part) for part in key.split("+")) for key in _split(keys))


def recorded_model(changes: Sequence[Entry]) -> str | None:
    """The model setting the last of a branch's model changes recorded, if any."""
    for entry in reversed(changes):
        content = entry.content
        if isinstance(content, dict) and isinstance(content.get("setting"), str):
            return str(content["setting"])
    return None


def _role(content: object) -> object:
    return content.get("role") if isinstance(content, dict) else None


def _first_text(content: object) -> str:
    if not isinstance(content, dict):
        return ""
    for part in content.get("content", []):
        if isinstance(part, dict) and part.get("type") == "text":
            return str(part.get("text", "")).splitlines()[0] if part.get("text") else ""
    return ""


def hidden_templates(templates: Mapping[str, Template], plugins: Sequence[Plugin]) -> list[str]:
    """What to say of each template the app cannot offer: a plugin's command has its name
    (the command wins in eval and RPC too; smith.runtime.build leaves such a template out
    and says so, so this speaks only for templates given to the app directly)."""
    taken = {c.name for p in plugins for c in p.commands}
    return [
        f"the prompt template /{t.name} ({t.source}) is not used: the /{t.name} "
        "command has that name; rename the file to use it"
        for t in templates.values()
        if t.name in taken
    ]


def template_commands(
    templates: Mapping[str, Template], plugins: Sequence[Plugin]
) -> list[Command]:
    """A command for each prompt template whose name no plugin's command takes: it sends
    `/NAME args` as typed, for the runtime to expand (as `smith eval` and RPC do)."""
    from smith.runtime import ops
    from smith.sdk import Command

    taken = {c.name for p in plugins for c in p.commands}

    def sender(name: str) -> Callable[[CommandHost, str], object]:
        def send(host: CommandHost, arg: str) -> object:
            return host.runtime.submit(ops.Prompt(f"/{name} {arg}".rstrip()))

        return send

    return [
        Command(
            t.name,
            t.description or f"prompt template ({t.source})",
            sender(t.name),
            t.argument_hint,
        )
        for t in templates.values()
        if t.name not in taken
    ]


class CommandSuggester:
    """Completes `/na` to the first command (or template) whose name starts so, shown
    in the editor as a suggestion (Right arrow takes it); a bare `/` suggests nothing (the
    menu lists them all, and the editor would seem to hold the first)."""

    def __init__(self, app: CommandHostMixin) -> None:
        self.app = app

    def __call__(self, value: str) -> str | None:
        if not value.startswith("/") or " " in value or value.startswith("//") or value == "/":
            return None
        typed = value[1:]
        for command in self.app.plugin_commands:
            if command.name.startswith(typed) and command.name != typed:
                return f"/{command.name}"
        return None
