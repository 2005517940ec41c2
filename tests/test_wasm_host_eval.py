"""A WebAssembly plugin's command in `smith eval` (the installed package found by the
package loader, its module run by smith.wasm): the reply on stdout; a handler that
loops forever stopped with a diagnostic naming the plugin on stderr, and smith working
after it (acceptance 24-plugins, part d)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, SmithEnv
from tests.wasm_fixtures import guest

__all__ = ["guest"]


def install(senv: SmithEnv, guest: Path, name: str) -> None:
    root = senv.data_home / "plugins" / name
    root.mkdir(parents=True)
    shutil.copy(guest, root / "plugin.wasm")
    (root / "plugin.kdl").write_text(
        f'name "{name}"\nversion "0.1.0"\nmodule "plugin.wasm"\nsdk "1"\n'
        f'command "{name}" description="Say hello"\n'
    )


def test_eval_answers_a_command_and_names_a_plugin_that_loops(
    guest: Path, senv: SmithEnv, smith: Callable[..., Result]
) -> None:
    project = senv.make_project()
    install(senv, guest, "hey")
    install(senv, guest, "spin3")  # the guest loops forever in any spin* command
    r = smith("eval", "--model", "demo", "/hey", cwd=project)
    assert r.code == 0 and r.out == "hello from hey\n", r.err
    r = smith("eval", "--model", "demo", "/spin3", cwd=project)
    said = [line for line in r.err.splitlines() if "spin3" in line and "session" not in line]
    assert said and "plugin 'spin3' ran out of fuel" in said[0], r.err
    assert r.out == ""  # the command was the plugin's: handled, no model turn
    r = smith("eval", "--model", "demo", "hi", cwd=project)
    assert r.code == 0 and r.out.strip(), r.err
