"""What a hook's answer shows (plugins/hooks.py, plugins/_hookrun.py): the question an
`ask` puts to the user shows the call, as approval's does; an answer too long to read is
said to be cut, not invalid."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, SmithEnv
from tests.rpc_kit import Rpc, script
from tests.test_hooks import DONE, _call, _config, _eval, _script
from tests.test_ui_rpc import _asked, _respond


@pytest.fixture
def project(senv: SmithEnv) -> Path:
    return senv.make_project()


def _asked_detail(senv: SmithEnv, project: Path, call: dict[str, Any]) -> dict[str, Any]:
    model = script(senv, [{"tool_calls": [call]}, DONE])
    with Rpc(senv, project, "--model", model) as rpc:
        rpc.call("prompt", {"text": "go"})
        asked = _asked(rpc)
        _respond(rpc, asked["id"], result={"choice": "no"})
        rpc.call("wait_idle")
        code, err = rpc.close()
    assert code == 0, err
    params: dict[str, Any] = asked["params"]
    assert params["text"].startswith("Hook 'ask' asks whether this")
    detail: dict[str, Any] = params["detail"]
    return detail


def test_an_ask_hooks_question_shows_the_call(senv: SmithEnv, project: Path) -> None:
    ask = _script(project, "ask.sh", """cat >/dev/null; echo '{"decision": "ask"}'\n""")
    _config(senv, f'hook "ask" on="before-tool" command="{ask}"\n')
    bash = {"name": "bash", "arguments": {"command": "rm -rf build/"}}
    assert _asked_detail(senv, project, bash) == {"kind": "command", "text": "rm -rf build/"}
    write = {"name": "write", "arguments": {"path": "new.py", "content": "a = 1\n"}}
    detail = _asked_detail(senv, project, write)
    assert detail["kind"] == "diff" and "+a = 1\n" in detail["text"]
    assert not (project / "new.py").exists()  # the user said no


def test_a_json_answer_cut_at_the_output_bound_is_said_to_be_cut(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    from smith.plugins._hookrun import OUTPUT_MAX

    big = _script(project, "big.sh", f"""cat >/dev/null
        printf '{{"additionalContext": "'
        head -c {OUTPUT_MAX + 1000} /dev/zero | tr '\\0' x
        printf '"}}'
    """)  # fmt: skip
    _config(senv, f'hook "big" on="after-tool" command="{big}"\n')
    run = _eval(senv, smith, project, [_call("ls", path="."), DONE])
    assert run.result.code == 0, run.result.err
    (error,) = run.notices("error")
    assert f"its output starts as JSON but was cut at {OUTPUT_MAX} bytes" in error
    assert "is not (" not in error


def test_a_blocked_prompt_is_said_on_evals_stderr(
    senv: SmithEnv, smith: Callable[..., Result], project: Path
) -> None:
    _config(senv, 'hook "nope" on="prompt" command="echo no secrets >&2; exit 2"\n')
    script_path = senv.root / "blocked.json"
    script_path.write_text('{"responses": [{"text": "never"}]}')
    r = smith("eval", "--model", f"scripted:{script_path}", "go", cwd=project)
    assert r.code == 0, r.err  # handled: a plugin answered it (docs/hooks.md)
    assert "hook 'nope' blocked this prompt: no secrets" in r.out
    assert "smith: warning: hooks: hook 'nope' blocked this prompt: no secrets" in r.err
