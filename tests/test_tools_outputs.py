"""Long bash output saved to $SMITH_HOME/outputs: registered secrets are masked in the
file as in the result, and the folder is bounded by size, oldest files first."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

from smith.effects import prune_outputs
from tests.conftest import Result, SmithEnv

TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd"


def _eval_bash(
    senv: SmithEnv, smith: Callable[..., Result], command: str, env: dict[str, str]
) -> dict[str, object]:
    project = senv.make_project()
    script = senv.root / "script.json"
    calls = [{"name": "bash", "arguments": {"command": command}}]
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "done"}]}))
    r = smith("eval", "--json", "--model", f"scripted:{script}", "go", cwd=project, env=env)
    assert r.code == 0, r.err
    end = next(json.loads(x) for x in r.out.splitlines() if '"tool_end"' in x)
    result = end["result"]
    assert isinstance(result, dict)
    return result


def test_secrets_are_masked_in_saved_output(
    senv: SmithEnv, smith_process: Callable[..., Result]
) -> None:
    # 20,000 lines, each with the token: some straddle the reads from the pipe.
    command = 'for i in $(seq 1 20000); do echo "line $i $GH_TOKEN"; done'
    env = {"GH_TOKEN": TOKEN, "SMITH_SECRETS_ENV": "GH_TOKEN"}
    result = _eval_bash(senv, smith_process, command, env)
    details = result["details"]
    assert isinstance(details, dict)
    saved = Path(str(details["full_output"]))
    assert saved.parent == senv.data_home / "outputs"
    text = saved.read_text()
    assert TOKEN not in text and TOKEN[:8] not in text
    lines = text.splitlines()
    assert len(lines) == 20000
    assert lines[0] == "line 1 {{secret:GH_TOKEN}}"
    assert lines[-1] == "line 20000 {{secret:GH_TOKEN}}"
    assert TOKEN not in str(result["text"])


def test_the_outputs_folder_is_capped_oldest_first(
    senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    outputs = senv.data_home / "outputs"
    outputs.mkdir(parents=True)
    old = []
    for n in range(4):  # 4 x 200 KB, older the lower n
        path = outputs / f"bash-{n}.log"
        path.write_bytes(b"x" * 200_000)
        os.utime(path, (1_000_000 + n, 2_000_000_000 - 1000 + n))
        old.append(path)
    env = {"SMITH_TOOLS_BASH_OUTPUTS_MAX_BYTES": str(1024 * 1024)}
    result = _eval_bash(senv, smith, "seq 1 100000", env)
    details = result["details"]
    assert isinstance(details, dict)
    saved = Path(str(details["full_output"]))
    assert saved.exists()
    assert saved.stat().st_size == len("".join(f"{i}\n" for i in range(1, 100001)))
    total = sum(p.stat().st_size for p in outputs.iterdir())
    assert total <= 1024 * 1024
    assert [p.exists() for p in old] == [False, False, True, True]  # oldest went first


def test_a_file_over_the_cap_is_cut_to_it_and_kept(tmp_path: Path) -> None:
    from smith.effects import EffectJournal, builtin_tools, run_tool
    from tests.conftest import tool_world

    session, ctx, _ = tool_world(
        tmp_path, spill_dir=str(tmp_path / "out"), limits={"bash.outputs-max-bytes": 1 << 20}
    )
    spec = builtin_tools()["bash"]
    out = run_tool(EffectJournal(session), spec, {"command": "head -c 3000000 /dev/zero"}, ctx)  # type: ignore[arg-type]
    saved = Path(str(out.result.details["full_output"]))
    assert saved.stat().st_size == 1 << 20
    assert f"its first {1 << 20} bytes" in out.result.text


def test_prune_never_removes_the_file_just_named(tmp_path: Path) -> None:
    big = tmp_path / "new.log"
    big.write_bytes(b"y" * 5000)
    other = tmp_path / "other.log"
    other.write_bytes(b"z" * 10)
    os.utime(big, (1, 1_000_000_000))  # older, yet kept
    prune_outputs(str(tmp_path), 1000, keep=str(big))
    assert big.exists() and not other.exists()


def test_masked_file_holds_back_a_split_secret() -> None:
    from smith.effects._outputs import MaskedFile
    from smith.runtime import SecretProxy

    proxy = SecretProxy()
    proxy.register("TOK", TOKEN, source="test")
    sink = io.BytesIO()
    sink.close = lambda: None  # type: ignore[method-assign]
    f = MaskedFile(sink, proxy)  # type: ignore[arg-type]
    data = f"a {TOKEN} b é ".encode() + b"\xff"  # a non-UTF-8 byte too
    for i in range(len(data)):
        f.write(data[i : i + 1])
    f.close()
    assert sink.getvalue() == "a {{secret:TOK}} b é ".encode() + b"\xff"


def test_the_live_tail_of_a_command_masks_a_secret_its_cut_goes_through(tmp_path: Path) -> None:
    """A progress update shows the last SHOWN_TAIL characters: a secret that starts before
    them must not show its last part (it was masked after the cut, so 30 of 41 characters
    were shown)."""
    from smith.effects import ToolContext
    from smith.effects.tools.bash import SHOWN_TAIL, _Output, _shown_tail
    from smith.runtime import SecretProxy

    secret = "tok-0123456789abcdefghij0123456789ABCDE"
    proxy = SecretProxy()
    proxy.register("MODE_SECRET", secret, source="test")
    ctx = ToolContext(root=str(tmp_path), cwd=str(tmp_path))
    ctx.mask = proxy
    output = _Output(ctx)
    after = SHOWN_TAIL - 30  # the cut goes through the secret
    output.add(("x" * 500 + secret + "y" * after).encode())
    tail = _shown_tail(ctx, output)
    assert len(tail) == SHOWN_TAIL and tail.endswith("y" * after)
    assert "ABCDE" not in tail and "secret:MODE_SECRET}}" in tail
