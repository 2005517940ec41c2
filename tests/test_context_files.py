"""Files smith itself reads on the project's behalf follow the read tool's rules
(smith.effects.read_file; docs/context.md, "What smith reads"): instruction files,
prompt templates and prompt files are regular files, inside the project once symbolic
links are resolved, never in smith's own directories, bounded and opened without
blocking. And `smith context` / RPC `get_context` never print a credential, whatever
path it came by. Each probe is run as a cloned repository or a model would run it,
through `smith eval --json` and the scripted provider's requests log."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv

ENV_VALUE = "env-value-Zq81Lm40Px"  # in smith's environment, so in /proc/self/environ
SECRET = "outside-secret-Hd72Kw"  # a file outside the project


def _eval(
    senv: SmithEnv,
    smith_process: Callable[..., Result],
    cwd: Path,
    responses: list[dict[str, Any]],
    *,
    env: dict[str, str] | None = None,
    name: str = "run",
) -> tuple[str, Result]:
    """`smith eval --json` with a scripted model: everything it sent, and its result."""
    log = senv.root / f"{name}.jsonl"
    script = senv.root / f"{name}.json"
    script.write_text(json.dumps({"responses": responses, "requests_log": str(log)}))
    env = {"DEMO_TOKEN_VALUE": ENV_VALUE, **(env or {})}
    r = smith_process("eval", "--json", "--model", f"scripted:{script}", "hi", cwd=cwd, env=env)
    assert r.code == 0, r.err
    return log.read_text(), r


def _refused(r: Result) -> list[str]:
    """The instruction files refused, as their warnings (stderr or error events) say."""
    said = [json.loads(x) for x in r.out.splitlines() if x.startswith("{")]
    texts = [json.dumps(e) for e in said if e.get("type") == "error"] + r.err.splitlines()
    return [t for t in texts if "the instruction file" in t and "was not loaded" in t]


def _project(senv: SmithEnv) -> Path:
    project = senv.make_project()
    (project / "README.md").write_text("# demo\n")
    return project


LS = {"id": "c0", "name": "ls", "arguments": {"path": "sub"}}
LS_SUB = [{"tool_calls": [LS]}, {"text": "ok"}]


def test_agents_md_linked_to_proc_self_environ_is_refused_and_no_value_is_sent(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    (project / "AGENTS.md").symlink_to("/proc/self/environ")
    sent, r = _eval(senv, smith_process, project, [{"text": "ok"}])
    assert ENV_VALUE not in sent and "DEMO_TOKEN_VALUE" not in sent
    (said,) = _refused(r)
    assert f"{project}/AGENTS.md was not loaded" in said
    assert "/proc/" in said and "not a regular file" in said


def test_links_out_of_the_project_and_into_smiths_data_are_refused_saying_where_they_lead(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    outside = senv.root / "passwd"
    outside.write_text(f"root:{SECRET}:0:0\n")
    (project / "AGENTS.md").symlink_to(outside)
    senv.data_home.mkdir(parents=True, exist_ok=True)
    mine = senv.data_home / "notes.md"
    mine.write_text(f"smith's own {SECRET}\n")
    (project / "sub").mkdir()
    (project / "sub" / "CLAUDE.md").symlink_to(mine)
    sent, r = _eval(senv, smith_process, project, LS_SUB)
    assert SECRET not in sent and SECRET not in r.out
    root, sub = sorted(_refused(r), key=lambda said: "sub/CLAUDE.md" in said)
    assert f"leads to {outside} through a symbolic link" in root and "outside the project" in root
    assert f"{project}/sub/CLAUDE.md was not loaded" in sub
    assert f"smith's own directory {senv.data_home}" in sub


def test_a_fifo_named_agents_md_never_hangs_smith(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    os.mkfifo(project / "AGENTS.md")
    (project / "CLAUDE.md").write_text("CLAUDE-RULES\n")  # AGENTS.md is found first
    sent, r = _eval(senv, smith_process, project, [{"text": "ok"}])  # within its timeout
    (said,) = _refused(r)
    assert "is a FIFO (named pipe), not a regular file" in said
    assert "CLAUDE-RULES" not in sent


def test_a_link_a_command_planted_to_smiths_trust_file_is_refused_when_reached(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """The model's own probe: a command plants sub/AGENTS.md -> $SMITH_HOME/trust.json
    (a file the sandbox hides from it), then a tool call reaches sub/."""
    trusted = senv.make_project("trusted", config="// MARK-TRUSTED-CONFIG\n")
    assert smith_process("trust", cwd=trusted).code == 0
    trust = senv.data_home / "trust.json"
    assert "MARK-TRUSTED-CONFIG" in trust.read_text()
    project = _project(senv)
    (project / "sub").mkdir()
    plant = {"id": "c0", "name": "bash", "arguments": {"command": f"ln -s {trust} sub/AGENTS.md"}}
    responses = [{"tool_calls": [plant]}, *LS_SUB]
    sent, r = _eval(senv, smith_process, project, responses)
    assert (project / "sub" / "AGENTS.md").is_symlink()
    assert "MARK-TRUSTED-CONFIG" not in sent and "MARK-TRUSTED-CONFIG" not in r.out
    (said,) = _refused(r)
    assert f"{project}/sub/AGENTS.md was not loaded" in said and str(trust) in said


def test_a_link_inside_the_project_to_another_of_its_files_is_loaded(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project = _project(senv)
    (project / "docs").mkdir()
    (project / "docs" / "rules.md").write_text("IN-PROJECT-RULES\n")
    (project / "AGENTS.md").symlink_to("docs/rules.md")
    (project / "sub").mkdir()
    (project / "sub" / "AGENTS.md").symlink_to("../docs/rules.md")
    sent, r = _eval(senv, smith_process, project, LS_SUB)
    first, later = (json.loads(line) for line in sent.splitlines()[:2])
    assert "IN-PROJECT-RULES" in first["system"]
    assert any("IN-PROJECT-RULES" in json.dumps(m) for m in later["messages"] if m.get("context"))
    assert not _refused(r)


def test_the_users_own_files_may_lead_anywhere_but_into_smiths_data(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    """The global AGENTS.md and the user's templates are the user's: a link of theirs to a
    dotfiles repository is followed; one into smith's data directory is not."""
    project = _project(senv)
    dotfiles = senv.root / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "AGENTS.md").write_text("GLOBAL-FROM-DOTFILES\n")
    (dotfiles / "hello.md").write_text("Hello from dotfiles, $1\n")
    prompts = senv.config_home / "prompts"
    prompts.mkdir(parents=True)
    (senv.config_home / "AGENTS.md").symlink_to(dotfiles / "AGENTS.md")
    (prompts / "hello.md").symlink_to(dotfiles / "hello.md")
    senv.data_home.mkdir(parents=True, exist_ok=True)
    (senv.data_home / "auth-like.md").write_text(f"stored {SECRET}\n")
    (prompts / "leak.md").symlink_to(senv.data_home / "auth-like.md")
    log = senv.root / "t.jsonl"
    script = senv.root / "t.json"
    script.write_text(json.dumps({"responses": [{"text": "ok"}] * 2, "requests_log": str(log)}))
    model = f"scripted:{script}"
    r = smith_process("eval", "--model", model, "/hello Ada", cwd=project)
    assert r.code == 0, r.err
    r2 = smith_process("eval", "--model", model, "/leak", cwd=project)
    sent = log.read_text()
    first = json.loads(sent.splitlines()[0])
    assert "GLOBAL-FROM-DOTFILES" in first["system"]
    assert "Hello from dotfiles, Ada" in json.dumps(first["messages"])
    assert SECRET not in sent
    leak = f"the prompt template {prompts / 'leak.md'} was not loaded"
    assert leak in r2.err and f"smith's own directory {senv.data_home}" in r2.err
    # The global file linked into smith's data: refused too.
    (senv.config_home / "AGENTS.md").unlink()
    (senv.config_home / "AGENTS.md").symlink_to(senv.data_home / "auth-like.md")
    sent, r = _eval(senv, smith_process, project, [{"text": "ok"}], name="global")
    assert SECRET not in sent
    (said,) = _refused(r)
    assert f"smith's own directory {senv.data_home}" in said


def test_a_trusted_projects_prompt_file_stays_in_the_project(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    outside = senv.root / "elsewhere.md"
    outside.write_text(f"outside {SECRET}\n")
    project = senv.make_project(config=f'prompt {{ append "{outside}"; }}\n')
    assert smith_process("trust", cwd=project).code == 0
    script = senv.root / "p.json"
    script.write_text('{"responses": [{"text": "ok"}]}')
    r = smith_process("eval", "--model", f"scripted:{script}", "hi", cwd=project)
    assert r.code == 2 and SECRET not in r.out + r.err
    assert f"prompt.append names the file {outside}, which smith will not read" in r.err
    assert f"outside the project {project}" in r.err
    # The user's own prompt file may be elsewhere, but no FIFO hangs smith.
    os.mkfifo(senv.root / "pipe.md")
    env = {"SMITH_PROMPT_SYSTEM": str(senv.root / "pipe.md")}
    r = smith_process("eval", "--model", f"scripted:{script}", "hi", cwd=senv.make_project("p2"),
                      env=env)  # fmt: skip
    assert r.code == 2 and "is a FIFO (named pipe), not a regular file" in r.err


# -- what is shown: smith context and get_context mask every credential -------------------

LOGIN_KEY = "sk-local-login-Qw3Er5Ty7U"
ENV_KEY = "sk-ant-env-Vb8Hn3Jd5K2m"
REGISTERED = "registered-Hx4Pq9Zt"


def _keys_world(senv: SmithEnv) -> tuple[Path, dict[str, str]]:
    """A project whose own AGENTS.md holds every key as text (no link: only masking can
    keep them from being shown), one key logged in with `smith auth login`."""
    from tests.conftest import smith_executable

    project = _project(senv)
    login = subprocess.run(
        [smith_executable(), "auth", "login", "openai-compatible"], cwd=project, env=senv.env,
        input=LOGIN_KEY + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert login.returncode == 0, login.stderr
    (project / "AGENTS.md").write_text(f"Keys: {LOGIN_KEY} {ENV_KEY} {REGISTERED}. KEEP-ME\n")
    env = {"ANTHROPIC_API_KEY": ENV_KEY, "DEMO_SECRET": REGISTERED}
    env["SMITH_SECRETS_ENV"] = "DEMO_SECRET"
    return project, env


def test_smith_context_masks_logged_in_environment_and_registered_keys(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    project, env = _keys_world(senv)
    for args in (("context", "--json"), ("context",)):
        r = smith_process(*args, cwd=project, env=env)
        assert r.code == 0, r.err
        for key in (LOGIN_KEY, ENV_KEY, REGISTERED):
            assert key not in r.out + r.err, (args, key)
    parts = json.loads(smith_process("context", "--json", cwd=project, env=env).out)["parts"]
    (rules,) = [p["text"] for p in parts if p["name"] == "instructions"]
    # As a request carries them: placeholders, and the rest of the file as it is.
    assert "{{secret:ANTHROPIC_API_KEY}}" in rules and "{{secret:DEMO_SECRET}}" in rules
    assert "{{secret:SMITH_AUTH_OPENAI_COMPATIBLE_KEY}}" in rules and "KEEP-ME" in rules


def test_rpc_get_context_masks_them_too(senv: SmithEnv) -> None:
    from tests.rpc_kit import Rpc, script

    project, env = _keys_world(senv)
    with Rpc(senv, project, "--model", script(senv, [{"text": "hi"}]), env=env) as rpc:
        answer = rpc.call("get_context")
        code, err = rpc.close()
    assert code == 0, err
    shown = json.dumps(answer)
    assert "KEEP-ME" in shown
    for key in (LOGIN_KEY, ENV_KEY, REGISTERED):
        assert key not in shown


# -- smith.effects.read_file -----------------------------------------------------------------


def _reach(root: Path, *private: Path) -> Any:
    from smith.effects import Reach

    return Reach.project(str(root), private=[str(p) for p in private])


def test_read_file_takes_regular_files_inside_and_refuses_the_rest(tmp_path: Path) -> None:
    from smith.effects import FileRefused, FileTooBig, Reach, read_file

    root = tmp_path / "p"
    (root / "d").mkdir(parents=True)
    (root / "ok.md").write_text("fine\n")
    (root / "in.md").symlink_to("ok.md")
    (root / "zero").symlink_to("/dev/zero")
    (root / "env").symlink_to("/proc/self/environ")
    (root / "d" / "up").symlink_to(tmp_path)  # a directory link out of the project
    (tmp_path / "out.md").write_text("outside\n")
    os.mkfifo(root / "fifo")
    reach = _reach(root)
    assert read_file(str(root / "in.md"), limit=100, reach=reach) == b"fine\n"
    with pytest.raises(FileRefused, match="a character device"):
        read_file(str(root / "zero"), limit=100, reach=Reach.anywhere())
    refused = {
        "zero": "outside the project",
        "env": "/proc",
        "fifo": "a FIFO",
        "d/up/out.md": "outside the project",
    }
    for name, why in refused.items():
        with pytest.raises(FileRefused) as caught:
            read_file(str(root / name), limit=100, reach=reach)
        assert why in caught.value.reason, name
    with pytest.raises(FileTooBig) as big:
        read_file(str(root / "ok.md"), limit=3, reach=reach)
    assert (big.value.size, big.value.limit) == (5, 3)
    with pytest.raises(FileRefused, match="symlink"):
        read_file(str(root / "in.md"), limit=100, reach=Reach((str(root),), (), links=False))
    with pytest.raises(FileNotFoundError):
        read_file(str(root / "missing.md"), limit=100, reach=reach)
    # Anywhere, for the user's own choices: but still only regular files.
    assert read_file(str(tmp_path / "out.md"), limit=100, reach=Reach.anywhere()) == b"outside\n"
    with pytest.raises(FileRefused, match="kernel"):
        read_file("/proc/self/environ", limit=1 << 20, reach=Reach.anywhere())


def test_smiths_own_directories_are_refused_unless_the_project_is_in_one(tmp_path: Path) -> None:
    from smith.effects import FileRefused, read_file

    data = tmp_path / "data"
    (data / "project").mkdir(parents=True)
    (data / "auth.json").write_text("{}")
    (data / "project" / "AGENTS.md").write_text("mine\n")
    with pytest.raises(FileRefused, match="smith's own directory"):
        read_file(str(data / "auth.json"), limit=100, reach=_reach(tmp_path, data))
    inside = _reach(data / "project", data)  # the user's choice, as for the read tool
    assert read_file(str(data / "project" / "AGENTS.md"), limit=100, reach=inside) == b"mine\n"
