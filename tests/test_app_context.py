"""What the app and RPC tell the model and the user beyond eval: `/compact FOCUS` in the
app reaches the summary request, and a project template that shadows the user's is
said in the app (a real terminal) and by RPC, as eval says it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app_kit import assembled_app
from tests.conftest import SmithEnv, smith_executable
from tests.rpc_kit import Rpc
from tests.test_tui_terminal import Tmux, terminal, terminal_env


def _script(senv: SmithEnv, responses: list[dict[str, Any]]) -> tuple[str, Path]:
    log = senv.root / "requests.jsonl"
    script = senv.root / "s.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    return f"scripted:{script}", log


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_apps_compact_passes_its_focus_to_the_summary_request(senv: SmithEnv) -> None:
    """`/compact the parser bug` typed in the app (the product plugin's command) asks the
    summary to keep that above all; the request the provider receives says so."""

    project = senv.make_project()
    model, log = _script(senv, [{"text": "a " * 40}, {"text": "b " * 40}, {"text": "SUMMARY"}])
    make_app, session = assembled_app(senv, project, model)

    async def main() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            runtime = app.runtime
            assert runtime is not None
            for n, text in enumerate(("one", "two", "/compact the parser bug"), 1):
                await pilot.press(*text, "enter")
                while not log.exists() or len(_requests(log)) < n:  # its request is made
                    await pilot.pause()
                await runtime.wait_idle()
            await pilot.pause()
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    requests = _requests(log)
    assert len(requests) == 3
    asked = requests[2]["messages"][0]["content"][0]["text"]
    assert asked.startswith(
        "Summarise this conversation so far, keeping above all everything about: the parser bug:"
    ), asked
    summarised = json.dumps(requests[2]["messages"])
    assert "one" in summarised and "a a a" in summarised  # the older context


def _shadowing_project(senv: SmithEnv, smith_env: dict[str, str]) -> Path:
    """A user template /greet and a trusted project's /greet that hides it."""
    import subprocess

    (senv.config_home / "prompts").mkdir(parents=True, exist_ok=True)
    (senv.config_home / "prompts" / "greet.md").write_text("User hello to $1\n")
    project = senv.make_project(config="")
    (project / ".smith" / "prompts").mkdir()
    (project / ".smith" / "prompts" / "greet.md").write_text("Project hello to $1\n")
    trusted = subprocess.run([smith_executable(), "trust"], cwd=project, env=smith_env,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr
    return project


def test_rpc_says_a_project_template_shadows_the_users(senv: SmithEnv) -> None:
    project = _shadowing_project(senv, senv.env)
    model, log = _script(senv, [{"text": "ok"}])
    with Rpc(senv, project, "--model", model) as rpc:
        rpc.call("prompt", {"text": "/greet Ada"})
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    users = [m for m in _requests(log)[0]["messages"] if m["role"] == "user"
             and not m.get("context")]  # fmt: skip
    assert [p["text"] for m in users for p in m["content"]] == ["Project hello to Ada\n"]
    notice = f"the prompt template /greet of {project / '.smith' / 'prompts' / 'greet.md'}"
    assert "warning:" in err and notice in err and "hides the one of" in err, err


@pytest.fixture
def shadowed(senv: SmithEnv) -> Iterator[Tmux]:
    env = terminal_env(senv)
    with terminal(_shadowing_project(senv, env), env, (200, 40)) as t:
        yield t


def test_the_app_shows_that_a_project_template_shadows_the_users(shadowed: Tmux) -> None:
    """The notice the assembly gives while the app starts is shown when it opens."""
    shadowed("send-keys", "-t", "s", "smith --model demo", "Enter")

    def opened() -> bool:
        return shadowed.flag("alternate_on") == "1" and "hides the one of" in shadowed.screen()

    assert shadowed.wait(opened), f"no shadowing notice; the pane shows:\n{shadowed.screen()}"
    screen = " ".join(shadowed.screen().split())
    assert "the prompt template /greet of" in screen, screen
    shadowed("send-keys", "-t", "s", "C-d")
    assert shadowed.wait(lambda: not shadowed.smith_pids(), 15), "smith did not exit"
