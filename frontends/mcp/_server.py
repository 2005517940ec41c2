"""The MCP server: smith's built-in tools and its sessions, over the official `mcp` SDK.

It is built on the SDK's low-level `Server`, because smith's tools come with their own
JSON Schemas (the SDK's decorator API derives schemas from Python signatures).

- `tools/list`: read, write, edit, bash, find, grep, ls with their argument schemas and
  hints (read-only or not). `tools/call` runs the tool exactly as `smith tools run` does:
  `run_tool` validates the arguments, records the intent durably in the session, runs
  the tool in a worker thread and records its completion. A client's cancellation stops
  the tool (bash ends its process group) and is recorded as such. Before it runs, the
  call gets the plugins' tool_call review a turn's calls get (ToolHost.review, in the
  runtime: this module implements none of it), asked through `_Caller` (it refuses).
- `resources/list` and `resources/read`: this project's sessions, each as JSON lines
  (`smith://session/<id>.jsonl`, the `smith sessions dump` form) and as markdown
  (`smith://session/<id>.md`, the replay transcript); templates name any session by id.
- UI intents (smith.ui, docs/ui.md): each call is shown to a frontend of its own
  (`CallFrontend`), through `smith.ui.deliver` and `smith.ui.ask` like every frontend.
  A running tool's `tool_update` events and its `Progress` become progress
  notifications (progress = output bytes so far, message = the last line); its
  `Notify` becomes a log message notification (`notifications/message`, sent when the
  client asked for that level); a question it asks (`ToolContext.ui.ask`) is refused at
  once (nobody here can answer: the client drives the tools), recorded in the session
  and logged; every other intent degrades by its declared policy.
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from smith.diagnostics import SmithError, did_you_mean
from smith.ui import (
    Capabilities,
    Intent,
    Reply,
    answer_event,
    answer_record,
    deliver,
    question_intent,
    shown_intent,
)

if TYPE_CHECKING:
    from anyio.lowlevel import EventLoopToken
    from mcp.server import ServerRequestContext

    from smith.effects import Outcome, ToolSpec
    from smith.runtime import ToolHost
    from smith.ui import Asked, Shown

log = logging.getLogger("smith.mcp")

SCHEME = "smith://session/"
FORMATS = {"jsonl": "application/jsonl", "md": "text/markdown"}
STOP_GRACE = 10.0  # seconds a cancelled tool gets to stop and record how it ended
PROGRESS_WAIT = 5.0  # seconds a tool's thread waits for its progress to be sent
CANNOT_ASK = (
    "smith mcp cannot ask the user: its client calls the tools, and nobody here answers questions"
)
LEVELS = {"info": "info", "warning": "warning", "error": "error"}  # smith -> MCP


class SmithMcp:
    """The handlers, over one recording session, the tools and their context."""

    def __init__(
        self,
        *,
        host: ToolHost,
        home: str,
        project: str,
        version: str,
    ) -> None:
        self.host = host
        self.session = host.session
        self.tools = host.tools
        self.secrets = host.secrets  # results come masked from the host; so do progress
        self.home = home
        self.project = project
        self.refused: list[dict[str, Any]] = []  # intents nobody here could answer
        session = host.session
        self.server: Server[Any] = Server(
            "smith",
            version=version,
            instructions="smith's built-in coding tools, each call recorded in the smith "
            f"session '{session.name}' ({session.id}); sessions are readable as resources.",
            get_tool_input_schema=self.schema,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
        )

    # -- tools ------------------------------------------------------------------------

    def schema(self, name: str) -> dict[str, Any] | None:
        spec = self.tools.get(name)
        return None if spec is None else dict(spec.parameters)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=dict(spec.parameters),
                    annotations=types.ToolAnnotations(
                        read_only_hint=not spec.mutating,
                        destructive_hint=spec.mutating,
                        idempotent_hint=not spec.mutating,
                        open_world_hint=spec.name == "bash",
                    ),
                )
                for spec in self.tools.values()
            ]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = self.tools.get(params.name)
        if spec is None:
            hint = did_you_mean(params.name, self.tools, otherwise="")
            raise MCPError(
                types.INVALID_PARAMS,
                f"there is no tool '{params.name}'; the tools are {', '.join(self.tools)}"
                + (f" ({hint})" if hint else ""),
            )
        from smith.effects import JournalError

        try:
            outcome = await self.run(ctx, spec, dict(params.arguments or {}))
        except JournalError as exc:  # the session could not record it: say so, plainly
            text = exc.error.diagnostic.render()
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        except Exception as exc:  # a bug around the tool (the host tells a tool's own)
            log.exception("the %s call failed", spec.name)
            text = str(
                self.secrets.redact(f"the {spec.name} call failed: {type(exc).__name__}: {exc}")
            )
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        result = outcome.result  # masked by the host
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.text)]
        if result.image is not None:  # the read tool's image, as MCP image content
            media_type, data = result.image
            encoded = base64.b64encode(data).decode("ascii")
            content.append(types.ImageContent(type="image", data=encoded, mime_type=media_type))
        return types.CallToolResult(
            content=content,
            structured_content={
                "ok": result.ok,
                "outcome": outcome.outcome,
                "mutation": result.mutation,
                "details": result.details,
                "effect": outcome.effect_id,
                "session": self.session.id,
            },
            is_error=not result.ok,
        )

    async def run(self, ctx: ServerRequestContext[Any], spec: ToolSpec, args: object) -> Outcome:
        """Run one call in a worker thread on the effect boundary; a cancelled request
        stops the tool and waits (bounded) for it to record how it ended."""
        call = self.host.context.for_call()
        call_id = f"mcp-{ctx.request_id}"
        token = anyio.lowlevel.current_token()  # the review asks from threads of its own
        frontend = CallFrontend(self, ctx, self.host.origins.get(spec.name, spec.name), token)
        # The plugins' tool_call review, the one a turn's calls get (the approval plugin
        # among them); what they ask is refused here, so a call that needs it is denied.
        review = self.host.review(_Caller(self, ctx, token))

        def progress(update: dict[str, object]) -> None:  # from the tool's thread
            ev = {
                "type": "tool_update",
                "tool_call_id": call_id,
                "name": spec.name,
                "update": self.secrets.redact(update),
            }
            deliver(frontend, ev)

        call.progress = progress
        call.ui = _ToolUi(frontend)
        finished = threading.Event()

        def work() -> Outcome:
            try:
                return self.host.run(spec, args, call=call, cause={"mcp": call_id},
                                     review=review)  # fmt: skip
            finally:
                finished.set()

        try:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            call.cancelled.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait, STOP_GRACE)
            raise

    async def _show_soon(self, ctx: ServerRequestContext[Any], intent: Intent) -> None:
        """`show` for a tool's thread, which waits for it: given up after PROGRESS_WAIT
        (a client that does not read its input loses the update), so that a stalled
        client never stops a tool from checking its deadline or its cancellation."""
        with anyio.move_on_after(PROGRESS_WAIT) as waited:
            await self.show(ctx, intent)
        if waited.cancelled_caught:
            log.debug("progress not sent within %s s: dropped", PROGRESS_WAIT)

    async def show(self, ctx: ServerRequestContext[Any], intent: Intent) -> None:
        """Show one UI intent of a call in MCP's form for it (what `CallFrontend`
        declares it shows)."""
        data = intent.data
        if intent.kind == "tool_activity" and data.get("phase") == "update":
            update = data.get("update")
            update = update if isinstance(update, dict) else {}
            size = update.get("output_bytes")
            tail = str(update.get("tail", "")).strip().splitlines()
            await ctx.session.report_progress(
                float(size) if isinstance(size, int) else 0.0,
                None,
                f"{data.get('name')}: {tail[-1][:200] if tail else 'running'}",
            )
        elif intent.kind == "progress" and "label" in data:  # a tool's own Progress
            done, total = data.get("done"), data.get("total")
            await ctx.session.report_progress(
                float(done) if isinstance(done, int | float) else 0.0,
                float(total) if isinstance(total, int | float) else None,
                str(data["label"])[:200],
            )
        elif intent.kind == "notify" and "text" in data:
            level = LEVELS.get(str(data.get("level")), "info")
            await ctx.session.send_log_message(
                level,  # type: ignore[arg-type]
                {"origin": data.get("origin"), "text": data.get("text")},
                logger="smith",
            )

    def refuse(self, ctx: ServerRequestContext[Any], intent: Intent, reply: Reply,
               token: EventLoopToken | None = None) -> None:  # fmt: skip
        """A question a tool asked, refused: recorded in the session, logged on stderr
        and told to the client as a warning log message."""
        record = answer_record(intent, reply)
        self.host.record_question(record)
        self.refused.append(answer_event(record))
        log.warning("refused %s from %s: %r: %s", intent.kind, record["origin"],
                    record["text"], reply.refused)  # fmt: skip
        notice = Intent("notify", {"origin": record["origin"], "level": "warning",
                                   "text": f"refused the question {record['text']!r}: "
                                   f"{reply.refused}"})  # fmt: skip
        self._from_thread(ctx, notice, token)

    def _from_thread(self, ctx: ServerRequestContext[Any], intent: Intent,
                     token: EventLoopToken | None = None) -> None:  # fmt: skip
        try:
            anyio.from_thread.run(self._show_soon, ctx, intent, token=token)
        except Exception:  # the request ended meanwhile: what it showed is moot
            log.debug("%s not sent", intent.kind, exc_info=True)

    # -- resources --------------------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        found = await anyio.to_thread.run_sync(self.sessions)
        resources = [
            types.Resource(
                name=f"{name or sid} ({label})",
                uri=f"{SCHEME}{sid}.{ext}",
                mime_type=FORMATS[ext],
                description=f"smith session {sid}, {count} entries, as {label}",
            )
            for sid, name, count in found
            for ext, label in (("jsonl", "JSON lines"), ("md", "markdown"))
        ]
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name=f"session as {label}",
                    uri_template=f"{SCHEME}{{id}}.{ext}",
                    mime_type=FORMATS[ext],
                    description=f"any smith session, by id or unambiguous id prefix, as {label}",
                )
                for ext, label in (("jsonl", "JSON lines"), ("md", "markdown"))
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        sid, _, ext = uri.removeprefix(SCHEME).rpartition(".")
        if not uri.startswith(SCHEME) or not sid or ext not in FORMATS:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource {uri}: sessions are {SCHEME}<id>.jsonl or {SCHEME}<id>.md",
                data={"uri": uri},
            )
        try:
            text = await anyio.to_thread.run_sync(self.render, sid, ext)
        except SmithError as exc:
            raise MCPError(
                types.INVALID_PARAMS,
                exc.diagnostic.headline(),
                data={"uri": uri, "diagnostic": exc.diagnostic.to_dict()},
            ) from None
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, mime_type=FORMATS[ext], text=text)
        ]
        return types.ReadResourceResult(contents=contents)

    def sessions(self) -> list[tuple[str, str, int]]:
        """This project's sessions (the assembly's ProjectSessions): id, name, entries."""
        from smith.runtime import ProjectSessions

        project = ProjectSessions(self.home, self.project)
        found = []
        for path in project.paths():
            try:
                session = project.read(path)
            except SmithError:
                continue
            found.append((session.id, session.name, len(session)))
        return found

    def render(self, sid: str, ext: str) -> str:
        from smith.runtime import ProjectSessions

        project = ProjectSessions(self.home, self.project)
        session = project.read(project.find(sid))
        if ext == "jsonl":
            return "".join(line + "\n" for line in project.dump(session))
        # Relative: frontends/ installs as smith.frontends, which mypy cannot see.
        from ..replay import markdown, reconstruct  # noqa: TID252

        title = f"{session.name or session.id} ({session.id})"
        return markdown(reconstruct(session), title=title)


class CallFrontend:
    """The UI frontend of one tool call (smith.ui): what the call shows goes to its
    request as MCP notifications; what it asks is refused. It is also the call's
    `ToolContext.ui`, used from the tool's thread."""

    name = "mcp"
    capabilities = Capabilities(
        shows=frozenset({"tool_activity", "progress", "notify"}), cannot_ask=CANNOT_ASK
    )

    def __init__(self, server: SmithMcp, ctx: ServerRequestContext[Any], origin: str,
                 token: EventLoopToken | None = None) -> None:  # fmt: skip
        self.server = server
        self.ctx = ctx
        self.origin = origin
        self.token = token  # the server's loop, for threads anyio did not start

    def show(self, intent: Intent) -> None:  # from the tool's thread
        if intent.kind == "tool_activity" and intent.data.get("phase") != "update":
            return  # MCP's own request says when the call starts and ends
        self.server._from_thread(self.ctx, intent, self.token)

    async def ask(self, intent: Intent) -> Reply:  # never called: it asks nothing
        from smith.ui import refused

        return refused(CANNOT_ASK, self.name)

    # -- ToolContext.ui ----------------------------------------------------------------

    def show_value(self, value: Shown) -> None:
        ev = shown_intent(value, origin=self.origin).event
        assert ev is not None
        masked = self.server.secrets.redact(ev)
        deliver(self, masked if isinstance(masked, dict) else ev)

    def ask_value(self, question: Asked) -> Reply:
        import secrets

        from smith.ui import ask

        intent = question_intent(question, origin=self.origin, ask_id=secrets.token_hex(4))
        masked = self.server.secrets.redact(intent.data)
        intent = Intent(intent.kind, masked if isinstance(masked, dict) else intent.data)
        reply: Reply = anyio.from_thread.run(ask, self, intent, token=self.token)
        self.server.refuse(self.ctx, intent, reply, self.token)
        return reply


class _Caller:
    """Who makes a client's calls, to the plugins' tool_call review
    (smith.runtime.HostReview): what a handler asks is refused (recorded and told to
    the client, as a tool's question is), what it shows goes to the client."""

    def __init__(self, server: SmithMcp, ctx: ServerRequestContext[Any],
                 token: EventLoopToken) -> None:  # fmt: skip
        self.server = server
        self.ctx = ctx
        self.token = token

    def ask(self, question: Asked, *, origin: str) -> Reply:
        return CallFrontend(self.server, self.ctx, origin, self.token).ask_value(question)

    def show(self, value: Shown, *, origin: str) -> None:
        CallFrontend(self.server, self.ctx, origin, self.token).show_value(value)


class _ToolUi:
    """`ToolContext.ui` over a call's frontend."""

    def __init__(self, frontend: CallFrontend) -> None:
        self.frontend = frontend

    def show(self, value: Shown) -> None:
        self.frontend.show_value(value)

    def ask(self, question: Asked) -> Reply:
        return self.frontend.ask_value(question)
