"""Which command a `/NAME` runs, alike in the app, `smith eval` and RPC: a plugin's
command wins over a prompt template of its name (the template is left out, said once
naming its file and the plugin); the first plugin declaring a command keeps it, so the
app's built-ins (the product plugin's /help) win over a plugin's (said naming it); and
a handled command shows in the text replay and the markdown transcript."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv


@pytest.fixture
def slashes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tests/slash_plugin.py joins the built-in plugins (after the product's)."""
    import smith.plugins
    from smith.sdk import builtin_manifests

    monkeypatch.setattr(smith.plugins, "BUILTIN", (*smith.plugins.BUILTIN, "tests.slash_plugin"))
    builtin_manifests.cache_clear()
    yield
    builtin_manifests.cache_clear()


def _scripted(senv: SmithEnv) -> tuple[str, Path]:
    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}] * 3, "requests_log": str(log)}))
    return f"scripted:{script}", log


def _events(r: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in r.out.splitlines() if line.strip()]


def test_eval_runs_a_plugins_command_not_the_template_of_its_name(
    slashes: None, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "tmpl.md").write_text("Expanded $ARGUMENTS\n")
    project = senv.make_project()
    model, log = _scripted(senv)
    r = smith("eval", "--json", "--model", model, "/tmpl hi", cwd=project)
    assert r.code == 0, r.err
    (handled,) = [e for e in _events(r) if e["type"] == "input_handled"]
    assert (handled["plugin"], handled["reply"]) == ("slashes", "tmpl ran: /tmpl hi")
    assert not log.exists()  # nothing was sent to the model
    said = " ".join(r.err.split())
    assert f"the prompt template /tmpl ({prompts / 'tmpl.md'}) is not used" in said
    assert "the plugin slashes has a /tmpl command" in said
    assert r.err.count("/tmpl") == said.count("/tmpl") and said.count("template.command") <= 1


def test_the_runtime_never_expands_a_template_a_plugins_command_names(
    slashes: None, senv: SmithEnv, tmp_path: Path
) -> None:
    """A runtime given such a template anyway (the library, a kit) runs the command."""
    from smith.config import resolve
    from smith.runtime import Template, build

    project = senv.make_project()
    model, log = _scripted(senv)
    config = resolve(env=senv.env, flags={"model": model}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="eval", env=senv.env)
    assembly.templates["tmpl"] = Template("tmpl", "Expanded\n", source="given")
    session = assembly.new_session("smith")
    runtime = assembly.runtime(session)

    async def main() -> None:
        runtime.prompt("/tmpl hi")
        await runtime.wait_idle()
        await runtime.close()

    asyncio.run(main())
    kinds = [e.kind for e in session.entries()]
    session.close()
    assert "input_handled" in kinds and not log.exists()


def test_the_apps_builtin_help_wins_over_a_plugins_in_eval_too(
    slashes: None, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    model, _ = _scripted(senv)
    r = smith("eval", "--json", "--model", model, "/help", cwd=project)
    assert r.code == 0, r.err
    assert not [e for e in _events(r) if e["type"] == "input_handled"]  # not the plugin's
    said = " ".join(r.err.split())
    assert "the plugin slashes's command /help is not run: product has a /help command" in said
    r = smith("eval", "--json", "--model", model, "/tmpl", cwd=project)  # its other one runs
    assert [e["reply"] for e in _events(r) if e["type"] == "input_handled"] == ["tmpl ran: /tmpl"]


def test_the_app_runs_the_plugins_command_and_the_builtin_help(
    slashes: None, senv: SmithEnv
) -> None:
    """The same in the app: /tmpl is the plugin's command (answered at once, no model
    request), /help the product's; the menu offers each name once; both are said."""
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.frontends.tui._screens import InfoScreen
    from smith.runtime import build
    from tests.test_tui import visible

    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "tmpl.md").write_text("Expanded $ARGUMENTS\n")
    project = senv.make_project()
    model, log = _scripted(senv)
    config = resolve(env=senv.env, flags={"model": model}, cwd=str(project))
    said: list[str] = []
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env,
                     warn=lambda d: said.append(d.render()))  # fmt: skip
    session = assembly.new_session("smith")

    async def main() -> None:
        app = SmithApp(assembly.runtime, session, plugins=assembly.plugin_list.active,
                       templates=assembly.templates, banner="\n".join(said))  # fmt: skip
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            names = [c.name for c in app.plugin_commands]
            assert names.count("tmpl") == 1 and names.count("help") == 1
            shown = " ".join(visible(app).split())
            assert "/tmpl" in shown and "slashes" in shown
            await pilot.press(*"/tmpl hi", "enter")
            assert app.runtime is not None
            for _ in range(100):
                await pilot.pause(0.05)
                if any(e.kind == "input_handled" for e in session.entries()):
                    break
            await pilot.press(*"/help", "enter")
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    handled = [e.content for e in session.entries() if e.kind == "input_handled"]
    assert [h["reply"] for h in handled] == ["tmpl ran: /tmpl hi"]
    assert not log.exists()


def _handled_session() -> Any:
    from smith.session import Session

    rows = [
        {"plugin": "slashes", "mode": "prompt", "text": "/tmpl hi", "reply": "tmpl ran"},
        {"plugin": "slashes", "mode": "prompt", "text": "/tmpl fail", "reply": None,
         "error": "it broke"},
    ]  # fmt: skip
    entries, parent = [], None
    for n, content in enumerate(rows):
        eid = f"h{n}"
        entries.append({"id": eid, "parent": parent, "ts": n, "kind": "input_handled",
                        "content": content})  # fmt: skip
        parent = eid
    return Session.from_entries(entries)


def test_the_text_replay_and_the_markdown_show_handled_commands() -> None:
    from smith.frontends.replay import markdown, reconstruct
    from smith.frontends.replay._text import Transcript

    timeline = reconstruct(_handled_session())
    out = io.StringIO()
    transcript = Transcript(out)
    for item in timeline.items:
        if item.event is not None:
            transcript(item.event)
    assert out.getvalue() == (
        "> /tmpl hi  (slashes)\n  tmpl ran\n> /tmpl fail  (slashes)\n  failed: it broke\n"
    )
    md = markdown(timeline, title="t")
    assert "**Command** (handled by slashes):\n\n```\n/tmpl hi\n```\n\n```\ntmpl ran\n```" in md
    assert "```\n/tmpl fail\n```\n\n```\nfailed: it broke\n```" in md


def test_a_command_typed_while_the_agent_works_is_answered_at_once(
    slashes: None, senv: SmithEnv
) -> None:
    """The prompt operation while busy: a plugin's command is answered by its input
    hook then (its events carry the id returned), not queued behind the run; the run
    goes on, and the replay shows the command between the run's events."""
    from smith.config import resolve
    from smith.frontends.replay import reconstruct
    from smith.frontends.replay._text import Transcript
    from smith.runtime import build, ops

    project = senv.make_project()
    words = " ".join(f"w{i}" for i in range(60))
    script = senv.root / "slow.json"
    script.write_text(json.dumps({"responses": [{"text": words, "delay_ms": 20}]}))
    config = resolve(env=senv.env, flags={"model": f"scripted:{script}"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="library", env=senv.env)
    session = assembly.new_session("smith")
    runtime = assembly.runtime(session)
    seen: list[dict[str, Any]] = []
    runtime.on_event(seen.append)

    async def main() -> tuple[object, bool]:
        runtime.submit(ops.Prompt("talk slowly"))
        while not any(e["type"] == "message_delta" for e in seen):
            await asyncio.sleep(0.01)
        answered = runtime.submit(ops.Prompt("/tmpl hi"))
        while not any(e["type"] == "input_handled" for e in seen):
            await asyncio.sleep(0.01)
        busy = runtime.busy  # answered while the run goes on
        await runtime.wait_idle()
        await runtime.close()
        return answered, busy

    answered, busy = asyncio.run(asyncio.wait_for(main(), 30))
    assert busy and str(answered).startswith("p-")
    (handled,) = [e for e in seen if e["type"] == "input_handled"]
    assert handled["submission"] == answered and handled["reply"] == "tmpl ran: /tmpl hi"
    assert len([e for e in seen if e["type"] == "agent_end"]) == 1  # one run
    assert not runtime.queue.items()
    out = io.StringIO()
    transcript = Transcript(out)
    for item in reconstruct(session).items:
        if item.event is not None:
            transcript(item.event)
    session.close()
    shown = out.getvalue()
    assert "> /tmpl hi  (slashes)\n  tmpl ran: /tmpl hi\n" in shown and "w59" in shown


def test_the_app_answers_a_plugins_command_while_the_agent_works(
    slashes: None, senv: SmithEnv
) -> None:
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.runtime import build
    from tests.test_tui import visible

    project = senv.make_project()
    words = " ".join(f"w{i}" for i in range(20))  # ten pieces, a second apart
    script = senv.root / "slow.json"
    script.write_text(json.dumps({"responses": [{"text": words, "delay_ms": 1000}]}))
    config = resolve(env=senv.env, flags={"model": f"scripted:{script}"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")

    async def main() -> bool:
        app = SmithApp(assembly.runtime, session, plugins=assembly.plugin_list.active)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press(*"talk", "enter")
            while app.runtime is None or not app.runtime.busy:
                await pilot.pause(0.02)
            await pilot.press(*"/tmpl hi", "enter")
            for _ in range(100):
                await pilot.pause(0.02)
                if "tmpl ran: /tmpl hi" in visible(app):
                    break
            busy = app.runtime.busy  # shown while the answer still streams
            app.runtime.abort()  # (no need to wait for the rest of it)
            await app.runtime.wait_idle()
        return busy

    assert asyncio.run(asyncio.wait_for(main(), 60))
    handled = [e.content for e in session.entries() if e.kind == "input_handled"]
    session.close()
    assert [h["reply"] for h in handled] == ["tmpl ran: /tmpl hi"]
