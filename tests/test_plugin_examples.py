"""The example plugins of examples/plugins/ (issue 30's evidence): each built from its
source by `smith plugins build` with the PyPI toolchains (componentize-py, zig cc) once
per test session, installed in each test with `smith plugins install DIR --yes`, and
seen working where a user meets it:

- greet (a command with a setting, Python): `/greet Ada` in `smith eval`, over RPC and
  in the app, whose `/` menu lists it with its description;
- paper-theme (a theme, no code): registered by the app and selected by `tui.theme`;
- newest-first (a queue policy, Python): as `queue.steer` / `queue.follow-up` it
  delivers the newest queued message first;
- no-rm-outside (a tool_call gate, C): a recursive rm outside the project is denied
  with a reason the model reads; one inside runs;
- todo-count (a tool, Python): its count_todos, called by a scripted model, counts the
  TODO lines of the tracked files through smith's host effects (run git, read-file),
  which the session's journal records under the plugin's name."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smith.cli._main import run as smith_main
from tests.conftest import Result, SmithEnv, clean_environ
from tests.rpc_kit import Rpc
from tests.runtime_kit import Fake, Gate, call, say
from tests.wasm_sdk_fixtures import have_toolchain

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "plugins"
LANGS = {"greet": "python", "newest-first": "python", "todo-count": "python",
         "no-rm-outside": "c", "paper-theme": None}  # fmt: skip
Smith = Callable[..., Result]


@pytest.fixture(scope="session")
def examples(tmp_path_factory: pytest.TempPathFactory, cache_home: Path) -> Callable[[str], Path]:
    """examples(name): a copy of examples/plugins/NAME, built by `smith plugins build`
    (once per session; the compiled component lands in the session's cache)."""
    built: dict[str, Path] = {}
    base = tmp_path_factory.mktemp("examples")
    env = clean_environ()
    env.update(HOME=str(base / "home"), SMITH_HOME=str(base / "data"),
               SMITH_CONFIG_HOME=str(base / "config"),
               SMITH_CACHE_HOME=str(cache_home))  # fmt: skip

    def get(name: str) -> Path:
        if name in built:
            return built[name]
        lang = LANGS[name]
        if lang is not None and not have_toolchain(lang):
            pytest.skip(f"no {lang} toolchain (pip install 'smith-agent[plugins]')")
        root = base / name
        # The sources only: a module, bindings or digest built in the tree are left out.
        built_here = shutil.ignore_patterns("*.wasm", ".plugin.wasm.source", "sdk")
        shutil.copytree(EXAMPLES / name, root, ignore=built_here)
        if lang is not None:
            out, err = io.StringIO(), io.StringIO()
            code = smith_main(["plugins", "build", str(root)], env=env, stdout=out, stderr=err)
            assert code == 0, err.getvalue()
            assert (root / "plugin.wasm").read_bytes()[:4] == b"\0asm", out.getvalue()
        built[name] = root
        return root

    return get


@pytest.fixture
def install(examples: Callable[[str], Path], smith: Smith, senv: SmithEnv) -> Callable[..., None]:
    """install(*names): `smith plugins install DIR --yes` of each built example."""

    def installing(*names: str) -> None:
        for name in names:
            r = smith("plugins", "install", str(examples(name)), "--yes")
            assert r.code == 0, r.err
            assert r.out.strip().endswith(f"installed {name} 0.1.0 in "
                                          f"{senv.data_home / 'plugins' / name}")  # fmt: skip

    return installing


def test_every_example_installs_and_is_listed_enabled(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    install(*LANGS)
    r = smith("plugins", "list", "--json", cwd=senv.make_project())
    listed = {p["name"]: p for p in json.loads(r.out)["plugins"]}
    for name in LANGS:
        assert listed[name]["enabled"] is True, listed[name]
        assert listed[name]["source"] == str(senv.data_home / "plugins" / name)


# -- greet: a command, in smith eval, over RPC and in the app -------------------------------


def test_greet_answers_in_eval_with_its_setting_or_the_default(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    install("greet")
    project = senv.make_project()
    r = smith("eval", "--model", "demo", "/greet Ada", cwd=project)
    assert (r.code, r.out) == (0, "hello, Ada!\n"), r.err  # the plugin's, not the model's
    senv.write_user_config('plugins { greet { greeting "hi"; }; }\n')
    r = smith("eval", "--model", "demo", "/greet Ada", cwd=project)
    assert (r.code, r.out) == (0, "hi, Ada!\n"), r.err


def test_greets_command_wins_over_a_prompt_template_of_its_name(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    install("greet")
    (senv.config_home / "prompts").mkdir(parents=True)
    (senv.config_home / "prompts" / "greet.md").write_text("Write a poem for $1\n")
    r = smith("eval", "--model", "demo", "/greet Ada", cwd=senv.make_project())
    assert (r.code, r.out) == (0, "hello, Ada!\n"), r.err  # the command, not the template
    assert "the prompt template /greet" in r.err and "the plugin greet has a /greet" in r.err


def test_smith_debug_memory_attributes_a_plugins_instance_memory_to_it(
    install: Callable[..., None], smith_process: Smith, senv: SmithEnv
) -> None:
    """In a process of its own: `smith debug memory` turns accounting on for the rest of
    the process it runs in."""
    install("greet")
    smith = smith_process
    r = smith("debug", "memory", "--json", "--model", "demo", "/greet Ada",
              cwd=senv.make_project())  # fmt: skip
    assert r.code == 0, r.err
    records = [json.loads(line) for line in r.out.splitlines()]
    made = [rec for rec in records if rec["kind"] == "wasm-instance"]  # greet's, and any
    (greet,) = [rec for rec in made if rec["scope"] == "plugin greet"]  # earlier in-process
    assert (greet["count"], greet["blocks"]) == (1, 1)
    assert 0 < greet["live"] <= greet["ceiling"] == 256 * 1024 * 1024, greet
    r = smith("debug", "memory", "--model", "demo", "/greet Ada", cwd=senv.make_project())
    rows = [line.split() for line in r.out.splitlines() if "wasm-instance" in line]
    assert ["plugin", "greet", "wasm-instance"] in [row[:3] for row in rows]


def test_greet_answers_over_rpc(install: Callable[..., None], senv: SmithEnv) -> None:
    install("greet")
    senv.write_user_config('plugins { greet { greeting "hi"; }; }\n')
    with Rpc(senv, senv.make_project(), "--model", "demo") as rpc:
        rpc.call("prompt", {"text": "/greet Ada"})
        handled = rpc.event("input_handled")
        rpc.call("wait_idle")
        code, err = rpc.close()
    assert (handled["plugin"], handled["text"], handled["reply"]) == ("greet", "/greet Ada",
                                                                      "hi, Ada!")  # fmt: skip
    assert code == 0, err
    assert not [e for e in rpc.events if e.get("type") == "turn_start"]  # no model turn


def _app_as_launched(senv: SmithEnv, project: Path) -> tuple[Any, Any]:
    """The app as `smith` builds it (frontends/tui.run): the configured plugin list,
    templates, tui.theme and the installed packages' themes; and its session."""
    from smith.config import resolve
    from smith.frontends.tui._app import SmithApp
    from smith.packages import package_themes
    from smith.runtime import build

    config = resolve(env=senv.env, flags={"model": "demo"}, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="tui", env=senv.env)
    session = assembly.new_session("smith")
    app = SmithApp(
        assembly.runtime,
        session,
        plugins=assembly.plugin_list.active,
        theme=str(config["tui.theme"]) if config["tui.theme"] else None,
        themes=package_themes(config),
        templates=assembly.load_templates(),
    )
    return app, session


def test_greet_in_the_app_is_in_the_slash_menu_and_answers(
    install: Callable[..., None], senv: SmithEnv
) -> None:
    from tests.test_tui import visible

    install("greet")
    app, session = _app_as_launched(senv, senv.make_project())

    async def main() -> tuple[str, str]:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press(*"/gre")
            await pilot.pause()
            menu = str(app.editor.completion.list.render())
            app.editor.value = ""
            await pilot.press(*"/greet", "space", *"Ada", "enter")
            for _ in range(100):  # the reply, once the runtime has handled the input
                await pilot.pause(0.05)
                if "hello, Ada!" in visible(app):
                    break
            return menu, visible(app)

    try:
        menu, screen = asyncio.run(asyncio.wait_for(main(), 60))
        # Through the runtime, as in eval and RPC: recorded as the plugin's command.
        handled = [e.content for e in session.entries("input_handled")]
    finally:
        session.close()
    assert "/greet NAME" in menu and "Greet someone by name" in menu, menu
    assert "hello, Ada!" in screen, screen
    assert [(h["plugin"], h["text"], h["reply"]) for h in handled] == [  # type: ignore[index]
        ("greet", "/greet Ada", "hello, Ada!")
    ]


# -- paper-theme: a theme the app registers and tui.theme selects --------------------------


def test_the_paper_theme_is_registered_and_selected_in_the_app(
    install: Callable[..., None], senv: SmithEnv
) -> None:
    install("paper-theme")
    senv.write_user_config('tui { theme "paper"; }\n')
    app, session = _app_as_launched(senv, senv.make_project())

    async def main() -> tuple[str, bool, bool, str]:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            theme = app.current_theme
            return str(app.theme), "paper" in app.available_themes, theme.dark, theme.primary

    try:
        name, registered, dark, primary = asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        session.close()
    assert (name, registered, dark, primary.lower()) == ("paper", True, False, "#3b5bdb")


# -- newest-first: a queue policy ----------------------------------------------------------


def _user_texts(request: Any) -> list[str]:
    return [m["content"][0]["text"] for m in request.messages if m["role"] == "user"][1:]


@pytest.mark.parametrize("mode", ["steer", "follow-up"])
def test_newest_first_delivers_the_newest_queued_message_first(
    install: Callable[..., None], senv: SmithEnv, mode: str
) -> None:
    """queue.steer (or queue.follow-up) "newest-first": three messages queued while the
    model works come to it newest first, one at each safe point."""
    from smith.config import resolve
    from smith.runtime import build

    install("newest-first")
    senv.write_user_config(f'queue {{ {mode} "newest-first"; }}\n')
    project = senv.make_project()
    config = resolve(env=senv.env, cwd=str(project))
    assembly = build(config, cwd=str(project), surface="eval", env=senv.env)
    session = assembly.new_session("queue")
    gate = Gate()
    fake = Fake([gate, *call(("ls", {}))], say("one"), say("two"), say("three"), say("four"))

    async def main() -> None:
        rt = assembly.runtime(session, model=(fake, "m"))
        rt.prompt("start")
        await gate.reached.wait()
        queue = rt.steer if mode == "steer" else rt.follow_up
        for text in ("a", "b", "c"):
            queue(text)
        gate.opened.set()
        await rt.wait_idle()

    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        session.close()
    delivered = [_user_texts(r) for r in fake.requests]
    assert delivered[-1] == ["start", "c", "b", "a"], delivered
    assert [d[-1] for d in delivered[-3:]] == ["c", "b", "a"], delivered  # one at a time


# -- no-rm-outside: a tool_call gate in C --------------------------------------------------


def _scripted(senv: SmithEnv, *responses: dict[str, Any]) -> tuple[str, Path]:
    """A scripted model playing `responses` (then "done"), and the log of its requests."""
    log = senv.root / "requests.jsonl"
    script = senv.root / "script.json"
    done = {"text": "done", "stop": "end"}
    script.write_text(json.dumps({"responses": [*responses, done], "requests_log": str(log)}))
    return f"scripted:{script}", log


def _tool_results(log: Path) -> list[str]:
    """What the model was given back for each tool call, in the last request."""
    last = json.loads(log.read_text().splitlines()[-1])
    return [p["text"] for m in last["messages"] if m["role"] == "tool_result"
            for p in m["content"]]  # fmt: skip


def _bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}],
            "stop": "tool_use"}  # fmt: skip


def test_no_rm_outside_denies_a_recursive_rm_outside_the_project_and_allows_one_inside(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    install("no-rm-outside")
    project = senv.make_project()
    (project / "build" / "obj").mkdir(parents=True)
    (project / "build.log").write_text("")
    (project / "..data").mkdir()  # a name starting with two dots, inside the project
    (senv.root / "y").mkdir()
    outside = senv.root / "outside"
    outside.mkdir()
    model, log = _scripted(
        senv,
        _bash("rm -rf /tmp/x"),
        _bash("rm -r ../y"),
        _bash(f"rm -rf {outside}"),
        _bash('cd src && rm -fr "$HOME/x"'),
        _bash("rm -r --verbose 'build/..'"),
        _bash("rm build.log && rm -rf build ..data"),
    )
    r = smith("eval", "--model", model, "clean up", cwd=project)
    assert (r.code, r.out) == (0, "done\n"), r.err
    denied = "the bash call did not run: plugin 'no-rm-outside' denied it: no-rm-outside: "
    reason = "a recursive rm of {}, which is outside the project, is not allowed"
    assert _tool_results(log) == [
        denied + reason.format("/tmp/x"),
        denied + reason.format("../y"),
        denied + reason.format(outside),
        denied + reason.format('"$HOME/x"'),
        denied + reason.format("'build/..'"),
        "(no output)",
    ]
    assert (senv.root / "y").is_dir() and outside.is_dir()  # denied: never ran
    assert not (project / "build").exists()  # inside the project: ran
    assert not (project / "..data").exists() and not (project / "build.log").exists()


# -- todo-count: a tool whose work goes through smith's host effects -----------------------


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def test_todo_count_counts_tracked_todo_lines_through_host_effects_the_journal_records(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    from smith.session import Session

    install("todo-count")
    project = senv.root / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# p\nTODO: docs\n- TODO tests\n")
    (project / "src" / "app.py").write_text("def f():  # TODO name\n    return 1\n")
    (project / "src" / "done.py").write_text("x = 1\n")
    (senv.root / "secret.txt").write_text("TODO outside the project\n")
    (project / "leak.txt").symlink_to(senv.root / "secret.txt")  # tracked, read-file refuses it
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    (project / "notes.txt").write_text("TODO untracked: not counted\n")
    tool = {"name": "count_todos", "arguments": {}}
    under = {"name": "count_todos", "arguments": {"path": "src"}}
    model, log = _scripted(
        senv,
        {"tool_calls": [tool], "stop": "tool_use"},
        {"tool_calls": [under], "stop": "tool_use"},
    )
    r = smith("eval", "--model", model, "how many TODOs?", cwd=project)
    assert (r.code, r.out) == (0, "done\n"), r.err
    assert _tool_results(log) == ["    2 README.md\n    1 src/app.py", "    1 src/app.py"]

    (path,) = (senv.data_home / "sessions").rglob("*.smith")
    intents = [e.content for e in Session.load(str(path)).entries() if e.kind == "effect_intent"]
    by_plugin = [i for i in intents if i.get("cause", {}).get("plugin") == "todo-count"]
    assert [(i["kind"], i["name"], i["cause"]["host"], i["input"].get("command"),
             i["input"].get("path")) for i in by_plugin] == [
        ("tool", "bash", "run", "git ls-files -z -- .", None),
        ("plugin", "todo-count.read-file", "read-file", None, "README.md"),
        ("plugin", "todo-count.read-file", "read-file", None, "leak.txt"),
        ("plugin", "todo-count.read-file", "read-file", None, "src/app.py"),
        ("plugin", "todo-count.read-file", "read-file", None, "src/done.py"),
        ("tool", "bash", "run", "git ls-files -z -- 'src'", None),
        ("plugin", "todo-count.read-file", "read-file", None, "src/app.py"),
        ("plugin", "todo-count.read-file", "read-file", None, "src/done.py"),
    ]  # fmt: skip
    # Each host effect names the tool call that caused it, and its generation.
    entries = Session.load(str(path)).entries()
    calls = [e for e in entries if e.kind == "effect_intent" and e.content["name"] == "count_todos"]
    assert len(calls) == 2
    parents = [i["cause"].get("parent") for i in by_plugin]
    assert parents == [calls[0].id] * 5 + [calls[1].id] * 3
    assert {i["generation"] for i in by_plugin} == {calls[0].content["generation"]}
    assert [i["cause"]["generation"] for i in by_plugin] == [i["generation"] for i in by_plugin]
    completed = {e.content["effect"]: e.content for e in Session.load(str(path)).entries()
                 if e.kind == "effect_completion"}  # fmt: skip
    outcomes = {i["input"].get("path"): completed[i["effect"]]["outcome"] for i in by_plugin}
    assert outcomes.pop("leak.txt") != "ok" and set(outcomes.values()) == {"ok"}, outcomes


def test_a_queue_policy_no_enabled_plugin_offers_is_named_with_its_source(
    install: Callable[..., None], smith: Smith, senv: SmithEnv
) -> None:
    install("newest-first")
    config = senv.write_user_config('queue { follow-up "newest-frist"; }\n')
    r = smith("eval", "--model", "demo", "hi", cwd=senv.make_project())
    assert r.code != 0 and r.out == ""
    assert "queue.follow-up is 'newest-frist', which no enabled plugin offers" in r.err, r.err
    assert "did you mean 'newest-first'?" in r.err and str(config) in r.err
