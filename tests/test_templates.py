"""Prompt templates (smith/runtime/_templates.py): Markdown files in the user's and a
trusted project's prompts directories, and plugins' templates, become `/NAME` input
expanded by the runtime, so `smith eval`, RPC and the app send the same thing; what was
typed is recorded with the message."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.runtime._templates import Template, match, parse
from tests.app_kit import assembled_app
from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc

GREET = (
    "---\ndescription: Greet someone\nargument-hint: NAME\n---\nSay hello to $1 and $ARGUMENTS\n"
)


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _script(senv: SmithEnv, name: str = "s") -> tuple[str, Path]:
    log = senv.root / f"{name}.jsonl"
    script = senv.root / f"{name}.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}] * 3, "requests_log": str(log)}))
    return f"scripted:{script}", log


def _user_texts(request: dict[str, Any]) -> list[str]:
    users = [m for m in request["messages"] if m["role"] == "user" and not m.get("context")]
    return [p["text"] for m in users for p in m["content"]]  # not smith's notes (context)


def test_front_matter_is_read_and_left_out_of_the_body() -> None:
    t = parse(GREET, "greet", "x.md")
    assert (t.description, t.argument_hint) == ("Greet someone", "NAME")
    assert t.body == "Say hello to $1 and $ARGUMENTS\n"
    assert parse("no front matter: $@\n", "n", "n.md").body == "no front matter: $@\n"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("Ada Lovelace", "1=Ada 2=Lovelace 9= all=Ada Lovelace at=Ada Lovelace"),
        ('"Ada Lovelace" x', '1=Ada Lovelace 2=x 9= all="Ada Lovelace" x at="Ada Lovelace" x'),
        ("", "1= 2= 9= all= at="),
        ("it's", "1=it's 2= 9= all=it's at=it's"),  # an unbalanced quote: split at spaces
    ],
)
def test_arguments_fill_the_placeholders(arguments: str, expected: str) -> None:
    t = Template("t", "1=$1 2=$2 9=$9 all=$ARGUMENTS at=$@")
    assert t.expand(arguments) == expected


def test_only_a_known_name_at_the_start_is_a_template() -> None:
    templates = {"greet": Template("greet", "hi $1\n")}
    assert match(templates, "/greet Ada") == (templates["greet"], "Ada")
    assert match(templates, "  /greet") == (templates["greet"], "")
    assert match(templates, "/greeting Ada") is None
    assert match(templates, "say /greet") is None
    assert match(templates, "/other") is None


def test_eval_expands_a_user_template_and_records_what_was_typed(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "greet.md").write_text(GREET)
    project = senv.make_project()
    model, log = _script(senv)
    r = smith("eval", "--json", "--model", model, "/greet Ada Lovelace", cwd=project)
    assert r.code == 0, r.err
    (request,) = _requests(log)
    assert _user_texts(request) == ["Say hello to Ada and Ada Lovelace\n"]
    ended = [json.loads(line) for line in r.out.splitlines()]
    (user,) = [e["message"] for e in ended if e.get("type") == "message_end"
               and e["message"]["role"] == "user"]  # fmt: skip
    assert user["template"] == {
        "name": "greet", "source": str(prompts / "greet.md"), "typed": "/greet Ada Lovelace"
    }  # fmt: skip


def test_a_trusted_projects_template_shadows_the_users_with_a_notice(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    (senv.config_home / "prompts").mkdir(parents=True)
    (senv.config_home / "prompts" / "greet.md").write_text(GREET)
    project = senv.make_project(config="")
    (project / ".smith" / "prompts").mkdir()
    (project / ".smith" / "prompts" / "greet.md").write_text("Project hello to $1\n")
    assert smith("trust", cwd=project).code == 0
    model, log = _script(senv)
    r = smith("eval", "--model", model, "/greet Ada", cwd=project)
    assert r.code == 0, r.err
    assert _user_texts(_requests(log)[0]) == ["Project hello to Ada\n"]
    assert "warning:" in r.err and "/greet" in r.err and "hides the one of" in r.err


def test_an_untrusted_projects_templates_are_not_loaded_and_it_says_so(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project(config="")
    (project / ".smith" / "prompts").mkdir()
    (project / ".smith" / "prompts" / "greet.md").write_text("Project hello to $1\n")
    model, log = _script(senv)
    r = smith("eval", "--model", model, "/greet Ada", cwd=project)
    assert r.code == 0, r.err
    assert _user_texts(_requests(log)[0]) == ["/greet Ada"]  # sent as typed
    assert "not loaded: the project is not trusted" in r.err and "smith trust" in r.err


def test_a_bad_template_file_is_skipped_with_a_warning_naming_it(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "bad name.md").write_text("x\n")
    (prompts / "binary.md").write_bytes(b"\xff\xfe")
    (prompts / "greet.md").write_text(GREET)
    model, log = _script(senv)
    r = smith("eval", "--model", model, "/greet Ada", cwd=senv.make_project())
    assert r.code == 0, r.err
    assert f"{prompts / 'bad name.md'} was not loaded" in r.err
    assert f"{prompts / 'binary.md'} was not loaded" in r.err
    assert _user_texts(_requests(log)[0]) == ["Say hello to Ada and Ada\n"]


def test_rpc_prompt_expands_templates_and_init_ships_with_smith(senv: SmithEnv) -> None:
    project = senv.make_project()
    model, log = _script(senv)
    with Rpc(senv, project, "--model", model) as rpc:
        rpc.call("prompt", {"text": "/init stress the test commands"})
        rpc.event("agent_end")
        code, err = rpc.close()
    assert code == 0, err
    (sent,) = _user_texts(_requests(log)[0])
    assert sent.startswith("Write an AGENTS.md at the root of this project")
    assert sent.rstrip().endswith("stress the test commands") and "---" not in sent


def test_the_app_offers_templates_in_help_and_completion_and_sends_them(
    senv: SmithEnv, tmp_path: Path
) -> None:
    """The app takes the assembly's templates: /help lists them with their hint and
    description, typing `/gr` suggests `/greet`, and `/greet Ada` is expanded by the
    runtime as in eval."""
    import asyncio

    from textual.widgets import Static

    from smith.frontends.tui._screens import InfoScreen

    (senv.config_home / "prompts").mkdir(parents=True)
    (senv.config_home / "prompts" / "greet.md").write_text(GREET)
    (senv.config_home / "prompts" / "help.md").write_text("my help\n")  # the app's /help
    project = senv.make_project()
    model, log = _script(senv)
    said: list[str] = []
    make_app, session = assembled_app(senv, project, model, lambda d: said.append(d.render()))
    # said as the app opens, not silently lost: the app's /help wins (tests/test_command_names.py)
    assert any("the prompt template /help" in s for s in said)

    async def main() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press(*"/help", "enter")
            await pilot.pause()
            assert isinstance(app.screen, InfoScreen)
            body = str(app.screen.query_one("#info-body", Static).render())
            assert re.search(r"/greet NAME +Greet someone", body) and "/init" in body
            await pilot.press("escape")
            field = app.editor
            await pilot.press(*"/gr")
            await pilot.pause()
            assert field.suggestion == "eet"  # shown after the cursor: /greet
            await pilot.press("right", "space", *"Ada", "enter")
            for _ in range(200):
                await pilot.pause(0.05)
                if app.runtime is not None and app.runtime.turn and not app.runtime.busy:
                    break
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert _user_texts(_requests(log)[0]) == ["Say hello to Ada and Ada\n"]


def test_the_app_command_palette_lists_templates_and_runs_one(
    senv: SmithEnv, tmp_path: Path
) -> None:
    """The command palette (SmithCommands) finds a prompt template by name with its
    description, and choosing it sends the template for the runtime to expand."""
    import asyncio

    from textual.command import CommandList, CommandPalette

    (senv.config_home / "prompts").mkdir(parents=True)
    (senv.config_home / "prompts" / "greet.md").write_text(GREET)
    project = senv.make_project()
    model, log = _script(senv)
    make_app, session = assembled_app(senv, project, model)

    async def main() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press(*"/greet")
            await pilot.pause()
            search = [w for w in app.workers if w.group == CommandPalette._GATHER_COMMANDS_GROUP]
            await app.workers.wait_for_complete(search)  # the palette searches in a worker
            await pilot.pause()
            listing = app.screen.query_one(CommandList)
            options = [listing.get_option_at_index(i) for i in range(listing.option_count)]
            (hit,) = [str(o.prompt) for o in options if "/greet" in str(o.prompt)]
            assert "Greet someone" in hit
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, CommandPalette)
            assert app.runtime is not None
            while not app.runtime.turn:  # the prompt was submitted ...
                await pilot.pause()
            await app.runtime.wait_idle()  # ... and its turn has ended
        session.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert _user_texts(_requests(log)[0]) == ["Say hello to  and \n"]  # no arguments


def test_dollar_escapes_and_two_digit_placeholders_are_left_as_written() -> None:
    t = Template("t", "awk '{print $$1}' $10 $1 cost $$5\n")
    assert t.expand("a b") == "awk '{print $1}' $10 a cost $5\n"


def test_a_byte_order_mark_does_not_hide_the_front_matter(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "greet.md").write_bytes(b"\xef\xbb\xbf" + GREET.encode())
    model, log = _script(senv)
    assert smith("eval", "--model", model, "/greet Ada", cwd=senv.make_project()).code == 0
    assert _user_texts(_requests(log)[0]) == ["Say hello to Ada and Ada\n"]


def test_a_template_that_expands_to_nothing_is_sent_as_typed_with_a_warning(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "one.md").write_text("---\nargument-hint: WORD\n---\n$1\n")
    model, log = _script(senv)
    r = smith("eval", "--model", model, "/one", cwd=senv.make_project())
    assert r.code == 0, r.err
    assert _user_texts(_requests(log)[0]) == ["/one"]
    assert "the prompt template /one expands to nothing" in r.err


def test_a_fifo_among_the_templates_never_blocks(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    import os

    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    os.mkfifo(prompts / "pipe.md")
    (prompts / "greet.md").write_text(GREET)
    model, _ = _script(senv)
    r = smith("eval", "--model", model, "/greet Ada", cwd=senv.make_project())
    assert r.code == 0, r.err
    assert f"{prompts / 'pipe.md'} was not loaded" in r.err


def test_a_projects_templates_apply_only_as_trust_approved_them(
    senv: SmithEnv, smith: Callable[..., Result], tmp_path: Path
) -> None:
    """Trust approves the project's templates with its configuration: one added or
    changed later, or a symlink leading out of the project, is not loaded but said."""
    outside = tmp_path / "secret.txt"
    outside.write_text("the user's private notes\n")
    project = senv.make_project(config="")
    prompts = project / ".smith" / "prompts"
    prompts.mkdir()
    (prompts / "greet.md").write_text("Project hello to $1\n")
    assert smith("trust", cwd=project).code == 0
    (prompts / "late.md").write_text("Added later: $1\n")
    (prompts / "leak.md").symlink_to(outside)
    model, log = _script(senv)
    r = smith("eval", "--model", model, "/greet Ada", cwd=project)
    assert r.code == 0, r.err
    assert _user_texts(_requests(log)[0]) == ["Project hello to Ada\n"]
    assert f"{prompts / 'late.md'} was not loaded: it was added or changed" in r.err
    assert f"{prompts / 'leak.md'} was not loaded" in r.err and "symlink" in r.err
    (prompts / "greet.md").write_text("Changed: $1\n")
    model, log = _script(senv, "again")
    r = smith("eval", "--model", model, "/greet Ada", cwd=project)
    assert _user_texts(_requests(log)[0]) == ["/greet Ada"]  # changed: not applied
    assert f"{prompts / 'greet.md'} was not loaded: it was added or changed" in r.err
    assert smith("trust", cwd=project).code == 0  # approved again
    model, log = _script(senv, "third")
    r = smith("eval", "--model", model, "/late Bo", cwd=project)
    assert _user_texts(_requests(log)[0]) == ["Added later: Bo\n"]
    assert "the user's private notes" not in json.dumps(_requests(log))


def test_an_unreadable_prompts_directory_of_an_untrusted_project_is_only_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from smith.runtime._templates import load

    project = tmp_path / "p"
    (project / ".smith" / "prompts").mkdir(parents=True)
    real = os.listdir

    def listdir(path: Any) -> list[str]:
        if str(path) == str(project / ".smith" / "prompts"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    said: list[str] = []
    for approved in (None, {}):
        assert load({}, str(tmp_path / "cfg"), str(project), approved=approved,
                    warn=lambda d: said.append(d.render())) == {}  # fmt: skip
    assert len(said) == 2 and all("prompts" in s for s in said)
