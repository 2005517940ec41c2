"""One tool_call review (issue 28): a program's call (MCP's client, through the official
SDK client) is reviewed by the plugins exactly as a turn's call is: a rewrite runs the
call with the new arguments (validated again), a deny keeps it from running with the
same result, a plugin that is not ready denies. The user's own calls are not reviewed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from smith.effects import ToolContext, builtin_tools
from smith.runtime import SecretProxy, ToolHost
from smith.sdk import DenyCall, Plugin, RewriteArguments
from smith.session import Session
from tests.runtime_kit import Fake, World, call, say

WRITE = {"path": "a.txt", "content": "A"}


def _redirect(event: dict[str, Any], view: Any) -> list[Any]:
    return [RewriteArguments({**event["arguments"], "path": "b.txt"})]


def _deny(event: dict[str, Any], view: Any) -> list[Any]:
    return [DenyCall("writing is switched off here")]


def _host(w: World, *plugins: Plugin) -> ToolHost:
    ctx = ToolContext(root=str(w.project), cwd=str(w.project), session=w.session)
    return ToolHost(w.session, builtin_tools(), ctx, SecretProxy(), history=None,
                    warn=lambda d: None, reviewers=plugins)  # fmt: skip


def _through_mcp(w: World, *plugins: Plugin, args: dict[str, Any] = WRITE) -> Any:
    """The official client's call of `write` to a server over `w`'s session."""
    from smith.frontends.mcp._server import SmithMcp

    server = SmithMcp(host=_host(w, *plugins), home=str(w.root), project=str(w.project),
                      version="0")  # fmt: skip

    async def main() -> Any:
        with anyio.fail_after(30):
            async with Client(server.server) as client:
                return await client.call_tool("write", args)

    return anyio.run(main)


def _through_turn(w: World, *plugins: Plugin) -> dict[str, Any]:
    """The result a turn's `write` call ended with (its tool_end)."""

    async def main() -> None:
        rt = w.runtime(Fake(call(("write", WRITE)), say("done")), plugins=plugins)
        rt.prompt("go")
        await rt.wait_idle()
        await rt.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    (end,) = w.of("tool_end")
    return dict(end["result"])


def _intents(session: Session) -> list[dict[str, Any]]:
    return [dict(e.content) for e in session.entries("effect_intent")]  # type: ignore[call-overload]


def test_a_rewrite_is_honoured_through_mcp_as_in_a_turn(tmp_path: Path) -> None:
    plugin = Plugin("redirect", handlers={"tool_call": _redirect})
    turn, mcp = World(tmp_path / "turn"), World(tmp_path / "mcp")
    _through_turn(turn, plugin)
    result = _through_mcp(mcp, plugin)
    assert not result.is_error
    for w in (turn, mcp):  # the rewritten call ran, and was recorded as rewritten
        assert not (w.project / "a.txt").exists()
        assert (w.project / "b.txt").read_text() == "A"
        (intent,) = _intents(w.session)
        assert intent["input"]["path"] == "b.txt"
        assert intent["cause"]["rewritten_by"] == "redirect"


def test_a_rewrite_the_tool_does_not_take_does_not_run_through_mcp(tmp_path: Path) -> None:
    def bad(event: dict[str, Any], view: Any) -> list[Any]:
        return [RewriteArguments({"path": 5})]

    w = World(tmp_path)
    result = _through_mcp(w, Plugin("bad", handlers={"tool_call": bad}))
    assert result.is_error and not (w.project / "a.txt").exists()
    assert "rewrote its arguments to ones the tool does not accept" in result.content[0].text
    assert result.structured_content["details"]["denied"]["plugin"] == "bad"
    assert _intents(w.session) == []


def test_a_deny_through_mcp_and_a_turn_ends_the_same(tmp_path: Path) -> None:
    """The same result (text, error, not-applied, `denied`), nothing run or recorded as
    an effect on either path."""
    plugin = Plugin("guard", handlers={"tool_call": _deny})
    turn, mcp = World(tmp_path / "turn"), World(tmp_path / "mcp")
    in_turn = _through_turn(turn, plugin)
    result = _through_mcp(mcp, plugin)
    got = result.structured_content
    through = {"text": result.content[0].text, "ok": got["ok"], "outcome": got["outcome"],
               "mutation": got["mutation"], "denied": got["details"]["denied"]}  # fmt: skip
    assert through == {k: in_turn[k] for k in through}
    assert through["denied"] == {"plugin": "guard", "reason": "writing is switched off here"}
    assert through["mutation"] == "not-applied" and through["outcome"] == "error"
    for w in (turn, mcp):
        assert not (w.project / "a.txt").exists() and _intents(w.session) == []
        assert not any(e.kind == "vcs" for e in w.session.entries())
    (recorded,) = [
        e.content for e in turn.session.entries("message") if e.content["role"] == "tool_result"
    ]
    assert recorded["denied"] == through["denied"] and recorded["mutation"] == "not-applied"


def test_a_reviewer_not_ready_denies_through_mcp_too(tmp_path: Path) -> None:
    """A plugin with a start of its own is not ready outside a runtime (nothing started
    it): at tool_call it denies, as a reviewer still starting does in a turn."""
    seen: list[str] = []

    async def start(view: Any) -> None:
        await asyncio.sleep(0)

    def review(event: dict[str, Any], view: Any) -> None:
        seen.append(event["name"])

    w = World(tmp_path)
    result = _through_mcp(w, Plugin("late", start=start, handlers={"tool_call": review}))
    assert result.is_error and not (w.project / "a.txt").exists()
    assert result.structured_content["details"]["denied"]["plugin"] == "late"
    assert "not started" in result.content[0].text and seen == []


def test_the_users_own_call_is_not_reviewed(tmp_path: Path) -> None:
    """`smith tools run` (the host with review=None) runs what the user asked."""
    w = World(tmp_path)
    host = _host(w, Plugin("guard", handlers={"tool_call": _deny}))
    outcome = host.run(host.tools["write"], dict(WRITE), review=None)
    assert outcome.result.ok and (w.project / "a.txt").read_text() == "A"
