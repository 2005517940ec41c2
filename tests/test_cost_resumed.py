"""A resumed session's cost is its whole cost (issue 27, item 2), and the status counts
the context as `/context` does: the system prompt and tool definitions too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.providers import Pricing, Usage
from smith.runtime import Runtime
from smith.session import Session
from tests.conftest import Result, SmithEnv
from tests.runtime_kit import Fake, World, say
from tests.runtime_kit import run as run_async

USAGE = {"input": 1000, "output": 100, "cache_read": 0, "cache_write": 0}
PRICING = {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}
ONE_TURN = 1000 * 3 / 1e6 + 100 * 15 / 1e6  # $0.0045


def _eval(smith_process: Callable[..., Result], senv: SmithEnv, script: Path) -> dict[str, Any]:
    project = senv.make_project()
    r = smith_process("eval", "--json", "--model", f"scripted:{script}", "--session", "work",
                      "hello", cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    result: dict[str, Any] = json.loads(r.out.splitlines()[-1])
    return result


def test_a_resumed_session_counts_its_earlier_turns(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    script = senv.root / "script.json"
    answer = {"text": "hi", "usage": USAGE}
    script.write_text(json.dumps({"responses": [answer], "pricing": PRICING}))
    first = _eval(smith_process, senv, script)
    assert first["cost"]["usd"] == pytest.approx(ONE_TURN) and first["cost"]["complete"]
    second = _eval(smith_process, senv, script)  # the same session, a second run
    assert second["session"]["id"] == first["session"]["id"]
    assert second["cost"]["usd"] == pytest.approx(2 * ONE_TURN)
    assert second["cost"]["complete"] is True
    assert second["cost"]["tokens"]["input"] == 2000


def _resumed(tmp_path: Path, fake: Fake, model: str = "m") -> tuple[Session, Runtime]:
    """A session with one priced turn recorded by `fake` as `model`, opened again by a
    runtime of model "m" (as `smith --continue` opens it)."""
    from smith.effects import ToolContext

    path = str(tmp_path / "s.smith")
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))

    async def first() -> None:
        session = Session.create(path, name="work", cwd=str(tmp_path))
        rt = Runtime(session, model=(fake, model), tools=[], context=ctx)
        rt.prompt("hi")
        await rt.wait_idle()
        assert rt.cost.usd == pytest.approx(ONE_TURN)
        await rt.close()
        session.close()

    run_async(first)
    session = Session.open(path)
    again = Fake(say("again", usage=Usage(**USAGE)), pricing=Pricing(**PRICING))
    return session, Runtime(session, model=(again, "m"), tools=[], context=ctx)


def _fake() -> Fake:
    return Fake(say("hi", usage=Usage(**USAGE)), pricing=Pricing(**PRICING))


def test_the_runtime_starts_with_what_the_session_spent(tmp_path: Path) -> None:
    session, rt = _resumed(tmp_path, _fake())
    cost = rt.status()["cost"]
    assert cost["usd"] == pytest.approx(ONE_TURN) and cost["complete"] is True
    assert "earlier" not in cost
    session.close()


def test_an_earlier_call_of_another_model_is_said_to_be_unpriced(tmp_path: Path) -> None:
    session, rt = _resumed(tmp_path, _fake(), model="older-model")
    cost = rt.status()["cost"]
    assert cost["complete"] is False  # its price is not known now: never counted as 0
    assert cost["tokens"]["input"] == 1000
    session.close()


def test_a_long_session_counts_its_earlier_turns_when_it_first_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import smith.runtime._cost as runtime_module

    monkeypatch.setattr(runtime_module, "CARRY_NOW", 0)  # every resumed session is "long"
    session, rt = _resumed(tmp_path, _fake())
    before = rt.status()["cost"]
    assert before["earlier"] == "pending" and before["usd"] == 0

    async def main() -> None:
        rt.prompt("and again")
        await rt.wait_idle()
        await rt.close()

    run_async(main)
    after = rt.status()["cost"]
    assert "earlier" not in after
    assert after["usd"] == pytest.approx(2 * ONE_TURN) and after["complete"] is True
    session.close()


def test_the_status_counts_the_system_prompt_and_tools_as_context_does(tmp_path: Path) -> None:
    from smith.effects import builtin_tools

    world = World(tmp_path)
    rt = world.runtime(Fake(), tools=list(builtin_tools().values()))
    parts = rt.context_parts(upcoming=False)
    fixed = sum(p.tokens for p in parts if p.sent in ("system", "tools"))
    context = rt.status()["context"]
    assert context["system"] == fixed > 1000  # the tool definitions alone are that much
    assert rt.status()["context"]["system"] == fixed  # (once per generation)
