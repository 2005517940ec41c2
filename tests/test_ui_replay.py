"""`smith replay`'s policy for UI intents (docs/ui.md): a session in which the test
plugin (tests/ui_plugin.py) asked twice, once answered and once refused, replays with
each question and its outcome, at the point it ended (the transcript says what was
asked and how it ended; `--json` gives the recorded `intent_answered` and
`intent_refused` events, the same bytes every time). Plugins' notices are not recorded,
so none is replayed; and replay itself asks nothing: a question given to it is refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from smith.effects import ToolContext, builtin_tools
from smith.frontends.replay import NOTHING_ASKED, ReplayFrontend
from smith.runtime import Runtime
from smith.session import SessionStore
from smith.ui import Intent, Reply, ask
from tests.conftest import Result, SmithEnv
from tests.runtime_kit import Fake, call, say
from tests.test_ui import Recorder
from tests.ui_plugin import PLUGIN


def _recorded(senv: SmithEnv) -> tuple[Path, str]:
    """A session of the project: the plugin's question answered "left" in the app; then
    the tool's confirmation refused, as a frontend that cannot ask refuses it."""
    project = senv.make_project()
    store = SessionStore(str(senv.data_home))
    session = store.create(name="asked", cwd=str(project))
    fake = Fake(say("Done."), call(("ask_user", {"question": "Delete it?"})), say("Kept."))

    async def main() -> None:
        for frontend in (Recorder("left", name="tui"), Recorder(asks=(), name="eval")):
            ctx = ToolContext(root=str(project), cwd=str(project), session=session)
            rt = Runtime(session, model=(fake, "m"), tools=list(builtin_tools().values()),
                         context=ctx, plugins=[PLUGIN])  # fmt: skip
            rt.attach(frontend)
            rt.prompt("go")
            await rt.wait_idle()
            await rt.close()

    with session:
        asyncio.run(main())
    return project, session.id


def test_replay_shows_how_each_recorded_question_ended_and_no_notices(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project, sid = _recorded(senv)
    text = smith("replay", "--instant", sid, cwd=project)
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert '? asker asked "Which way?": Go left (answered in tui)' in lines
    assert '? asker asked "Delete it?": refused by eval: not here' in lines
    assert "confirmed=False refused=not here" in text.out  # the tool's result, as recorded
    # Said where it happened: after the answer that ended the first turn, in turn 2 after
    # the call that asked.
    assert (
        lines.index('? asker asked "Which way?": Go left (answered in tui)')
        < lines.index("── turn 2 " + "─" * 40)
        < lines.index('? asker asked "Delete it?": refused by eval: not here')
    )
    assert "starting" not in text.out and "chose left" not in text.out

    first = smith("replay", "--instant", "--json", sid, cwd=project)
    again = smith("replay", "--instant", "--json", sid, cwd=project)
    assert first.code == 0 and first.out == again.out
    events = [json.loads(line) for line in first.out.splitlines()]
    types = [e["type"] for e in events]
    assert "ui" not in types  # notices, status and progress are not recorded
    (answered,) = [e for e in events if e["type"] == "intent_answered"]
    assert answered["text"] == "Which way?"
    assert (answered["choice"], answered["frontend"]) == ("left", "tui")
    refusals = [e for e in events if e["type"] == "intent_refused"]
    assert [(e["intent"], e["text"], e["reason"]) for e in refusals] == [
        ("request_confirm", "Delete it?", "not here"),
        ("request_choice", "Which way?", "not here"),
    ]
    assert types.index("intent_answered") < types.index("agent_end")


def test_replay_refuses_a_question_given_to_it() -> None:
    shown: list[object] = []
    choices = [{"key": "a", "label": "A"}]
    question = Intent("request_choice", {"text": "Pick", "choices": choices, "timeout": None})
    reply = asyncio.run(ask(ReplayFrontend(shown.append), question))
    assert reply == Reply(None, NOTHING_ASKED, "replay") and shown == []
