"""`smith.Agent`: the runtime as a Python library.

    import smith

    async with smith.Agent(model="demo", cwd="path/to/project") as agent:
        message = await agent.send("list the files")
        print(smith.text_of(message))

An Agent owns one session (new in the session store unless one is given) and one
runtime over it. `send` runs a prompt to its stop and returns the final assistant
message; `events()` and `on_event()` observe everything the runtime does (docs/events.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from smith.diagnostics import Diagnostic, DiagnosticKind, Source
from smith.effects import ToolSpec
from smith.providers import Provider
from smith.runtime import Event, Limits, SecretProxy
from smith.sdk import Plugin
from smith.session import Session, SessionStore

if TYPE_CHECKING:
    from smith.config import Config
    from smith.runtime import Image

BUSY = DiagnosticKind(
    "agent.busy",
    what="this agent is still working on a prompt, so '{prompt}' was not sent",
    why="send() runs one prompt at a time and waits for it to finish",
    fix="await the first send(), or use steer()/follow_up() to add to the running prompt",
)


class AgentStopped(Exception):
    """A prompt ended on an error or an abort; `stop`, `error` and the final `message`
    (possibly partial) say how."""

    def __init__(self, stop: str, error: str | None, message: dict[str, Any] | None) -> None:
        super().__init__(f"the agent stopped ({stop})" + (f": {error}" if error else ""))
        self.stop = stop
        self.error = error
        self.message = message


def _log_warning(diagnostic: Diagnostic) -> None:
    # A library has no stderr of its own to write on: warnings go to smith's log.
    logging.getLogger("smith").warning("%s", diagnostic.render())


def builtin_tools() -> list[ToolSpec]:
    """The built-in tools (read, write, edit, bash, find, grep, ls), to extend or filter."""
    from smith.effects import builtin_tools as table

    return list(table().values())


def text_of(message: Mapping[str, Any] | None) -> str:
    """The text of a message (its text parts, joined)."""
    if not message:
        return ""
    return "".join(p["text"] for p in message.get("content", []) if p.get("type") == "text")


class Agent:
    def __init__(
        self,
        model: str | tuple[Provider, str] = "demo",
        *,
        tools: Iterable[ToolSpec] | None = None,
        session: Session | None = None,
        store: SessionStore | str | None = None,
        cwd: str | None = None,
        name: str = "library",
        system_prompt: str | None = None,
        thinking: str = "off",
        plugins: Sequence[Plugin] = (),
        limits: Limits | None = None,
        secrets: SecretProxy | None = None,
        config: Config | None = None,
    ) -> None:
        """`tools`: the tools the model may call (default: the built-in ones; pass
        `[*smith.builtin_tools(), my_tool]` to add to them). `system_prompt`: replaces
        smith's default system prompt (docs/context.md); the project's instruction
        files, prompt.append and the environment block are still sent. `store`: a SessionStore or
        its directory (default: smith's data directory). `config`: smith's configuration
        (default: resolved as the `smith` command resolves it, for `cwd`, with `store` as
        its data directory): the runtime is built by the same assembly as every mode's
        (smith.runtime.build), so secrets, credentials, file history, plugins and limits
        are the same as on the command line."""
        from smith.runtime import build

        root = os.path.realpath(cwd or os.getcwd())
        if isinstance(store, SessionStore):
            home: str | None = store.home
        else:
            home = store
        if config is None:
            from smith.config import resolve

            flags: dict[str, object] = {"home": home} if home else {}
            if isinstance(model, str):
                flags["model"] = model
            config = resolve(flags=flags, cwd=root)
            for warning in config.warnings:  # as the command says them on stderr
                _log_warning(warning)
        # The model is checked here when it is a name, as on the command line.
        self.assembly = build(
            config,
            cwd=root,
            surface="library",
            warn=_log_warning,
            plugins=plugins,
            model=isinstance(model, str),
            secrets=secrets,
        )
        if not isinstance(model, str):  # build loads templates for a model it checked
            self.assembly.load_templates()
        if session is None:
            session = (store if isinstance(store, SessionStore) else self.assembly.store()).create(
                name=name, cwd=config.project_root
            )
        self.session = session
        # How the last send() ended: end, done, handled (a plugin took it as a command),
        # limit, max_iterations, token_budget (the answer may be incomplete), or error,
        # abort, deadline (send raised).
        self.stop: str | None = None
        self.runtime = self.assembly.runtime(
            session,
            model=model,
            thinking=thinking,
            tools=builtin_tools() if tools is None else list(tools),
            system_prompt=system_prompt,
            limits=limits,
        )

    async def send(self, text: str, images: Sequence[Image | str] = ()) -> dict[str, Any]:
        """Run `text` (with `images`: `smith.Image` values or image file paths, relative
        to the agent's directory) until the agent stops; the final assistant message.
        Raises AgentStopped when it ended on an error or an abort, and a SmithError
        before anything runs for an image that is not one, too large, or sent to a model
        without image input."""
        attached = self._images(images)
        if self.runtime.busy:
            raise BUSY.error(value=text[:40], source=Source("argument", "send"), prompt=text[:40])
        ended: asyncio.Future[Event] = asyncio.get_running_loop().create_future()

        def watch(event: Event) -> None:
            if event["type"] == "agent_end" and not ended.done():
                ended.set_result(event)
            elif event["type"] == "input_handled" and not ended.done():
                # A plugin took the prompt as a command: no turn; its reply is the answer.
                reply = [{"type": "text", "text": event.get("reply") or ""}]
                ended.set_result(
                    {"stop": "handled", "message": {"role": "assistant", "content": reply}}
                )

        stop_watching = self.runtime.on_event(watch)
        try:
            self.runtime.prompt(text, attached)
            await self.runtime.wait_idle()
        finally:
            stop_watching()
        end: Event = ended.result() if ended.done() else {"stop": "error", "message": None}
        self.stop = str(end["stop"])
        message = end.get("message")
        if end["stop"] in ("error", "abort", "deadline"):
            raise AgentStopped(end["stop"], end.get("error"), message)
        return message or {"role": "assistant", "content": []}

    def _images(self, images: Sequence[Image | str]) -> tuple[Image, ...]:
        from smith.runtime import load_image

        bound = self.runtime.limits.image_bytes
        cwd = self.runtime.context.cwd
        return tuple(
            load_image(i, max_bytes=bound, cwd=cwd, surface="library") if isinstance(i, str) else i
            for i in images
        )

    def events(self) -> AsyncIterator[Event]:
        """Every event from now until the agent is closed."""
        return self.runtime.events()

    def on_event(self, callback: Callable[[Event], object]) -> Callable[[], None]:
        """Call `callback(event)` for each event (best-effort: its exceptions are logged,
        never raised into the loop); returns a function that stops the calls."""
        return self.runtime.on_event(callback)

    def steer(self, text: str) -> str:
        return self.runtime.steer(text)

    def follow_up(self, text: str) -> str:
        return self.runtime.follow_up(text)

    def abort(self) -> bool:
        return self.runtime.abort()

    async def compact(self, focus: str | None = None) -> None:
        """Summarise the older context now; `focus`: what the summary must keep."""
        self.runtime.compact(focus)
        await self.runtime.wait_idle()

    @property
    def cost(self) -> dict[str, object]:
        return self.runtime.cost.to_dict()

    async def close(self) -> None:
        await self.runtime.close()
        self.session.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
