"""`smith eval`'s policy for UI intents (docs/ui.md), as a user runs it (the installed
executable, a scripted model) with the test plugin (tests/ui_plugin.py) among its
plugins: a plugin's notice goes to stderr (`--json`: the `ui` event on stdout), and
every question is refused at once with a warning on stderr that names what was asked;
the asker goes on with the refusal and eval ends as it would have."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from smith.session import Session, SessionStore
from tests.conftest import Result, SmithEnv
from tests.test_eval import _project, _script
from tests.ui_plugin import with_plugin

REASON = "smith eval runs without anyone to answer"


def _eval(senv: SmithEnv, smith_process: Callable[..., Result], responses: list[dict[str, Any]],
          *flags: str) -> Result:  # fmt: skip
    project = _project(senv)
    model = _script(senv, responses)
    r = smith_process("eval", *flags, "--model", model, "go", cwd=project,
                      env=with_plugin(senv.env))  # fmt: skip
    assert r.code == 0, r.err
    return r


def _questions(senv: SmithEnv) -> list[dict[str, Any]]:
    (path,) = SessionStore(str(senv.data_home)).paths_for_project(str(senv.root / "project"))
    return [e.content for e in Session.load(path).entries("question")]  # type: ignore[misc]


def test_a_notice_goes_to_stderr_and_a_question_is_refused_with_a_warning(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    r = _eval(senv, smith_process, [{"text": "Done."}])
    assert r.out == "Done.\n"  # stdout keeps only the answer
    assert "smith: asker: starting\n" in r.err
    assert (
        f'warning: asker: asked "Which way?" (choices: left, right); smith eval refused it '
        f"({REASON})\n  why: eval runs one prompt without anyone to answer"
    ) in r.err
    assert "fix: run it in the app (smith), or drive smith over smith rpc" in r.err
    # The plugin got the refusal and said so; status and progress are not shown.
    assert f"smith: warning: asker: refused by eval: {REASON}\n" in r.err
    assert "warming up" not in r.err and "listening" not in r.err
    (record,) = _questions(senv)
    assert (record["text"], record["refused"], record["frontend"]) == ("Which way?", REASON,
                                                                       "eval")  # fmt: skip


def test_json_prints_the_ui_events_and_the_refusal_and_still_warns_on_stderr(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    r = _eval(senv, smith_process, [{"text": "Done."}], "--json")
    lines = [json.loads(line) for line in r.out.splitlines()]
    ui = [x for x in lines if x["type"] == "ui"]
    assert [(x["intent"], x["origin"]) for x in ui] == [
        ("notify", "asker"), ("status", "asker"), ("progress", "asker"), ("notify", "asker"),
    ]  # fmt: skip
    assert ui[0]["text"] == "starting" and ui[-1]["text"] == f"refused by eval: {REASON}"
    (refused,) = [x for x in lines if x["type"] == "intent_refused"]
    assert refused["intent"] == "request_choice" and refused["text"] == "Which way?"
    assert refused["reason"] == REASON and refused["frontend"] == "eval"
    assert [x["type"] for x in lines[-3:]] == ["agent_end", "settled", "result"]
    assert lines[-1]["ok"] is True
    assert 'warning: asker: asked "Which way?"' in r.err


def test_a_tools_confirmation_is_refused_and_the_tool_goes_on(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    asks = {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Delete it?"}}]}
    r = _eval(senv, smith_process, [asks, {"text": "Kept it."}], "--json")
    lines = [json.loads(line) for line in r.out.splitlines()]
    (end,) = [x for x in lines if x["type"] == "tool_end"]
    assert end["result"]["text"] == f"confirmed=False refused={REASON}"
    refusals = [x for x in lines if x["type"] == "intent_refused"]
    assert [x["intent"] for x in refusals] == ["request_confirm", "request_choice"]
    assert 'warning: asker: asked "Delete it?" (yes or no); smith eval refused it' in r.err
