"""`smith mcp add | remove | list | tools` as a user meets them (review 44): the
configuration file edited by its parsed structure, existing servers found in any layout,
secrets masked, names that would split refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from smith.diagnostics import SmithError

LAYOUT = """// my settings
model "scripted:/dev/null"   // keep
mcp {
    // first server
    server "a" command="echo" args="1"; server "b" command="echo" args="2"
    server "c" command="echo" {
        env { X "}"; }
    }
    server "d" command="echo" /* trailing } comment */
}
/* old:
server "z" command="x"
*/
"""


def _settings(path: Path) -> list[tuple[str, object]]:
    from smith.config._kdl import read_settings

    settings, problems = read_settings(str(path), path.read_text())
    assert not problems, [p.render() for p in problems]
    return [(s.key, s.value) for s in settings]


@pytest.mark.parametrize("name", ["a", "b", "c", "d"])
def test_remove_takes_out_one_server_whatever_its_layout(tmp_path: Path, name: str) -> None:
    from smith.plugins.mcp import remove_server

    path = tmp_path / "config.kdl"
    path.write_text(LAYOUT)
    before = _settings(path)
    removed = remove_server(str(path), name)
    assert removed.startswith(f'server "{name}"')
    ours = f"mcp.server.{name}."
    assert _settings(path) == [(k, v) for k, v in before if not k.startswith(ours)]
    assert "// my settings" in path.read_text() and 'server "z"' in path.read_text()


def test_remove_takes_every_layout_of_a_server_and_the_blocks_it_empties(tmp_path: Path) -> None:
    from smith.plugins.mcp import remove_server

    path = tmp_path / "config.kdl"
    path.write_text(
        'mcp.server.z.command "p"\n'
        'mcp { server { z { args "a"; }; w { command "r"; }; }; }\n'
        'mcp { server "z" url="http://h/"; }\n'
        'theme "dark"\n'
    )
    remove_server(str(path), "z")
    assert path.read_text() == 'mcp { server { w { command "r"; }; }; }\ntheme "dark"\n'
    remove_server(str(path), "w")
    assert path.read_text() == 'theme "dark"\n'


def test_an_edit_that_would_not_read_back_as_intended_is_never_written(tmp_path: Path) -> None:
    from smith.config import rewrite

    path = tmp_path / "config.kdl"
    path.write_text('theme "dark"\n')
    with pytest.raises(ValueError, match="would not read"):
        rewrite(str(path), lambda text, s, b: text + "mcp {\n", lambda old, new: None)
    with pytest.raises(ValueError, match="refused"):
        rewrite(str(path), lambda text, s, b: text + "x 1\n", lambda old, new: "refused")
    assert path.read_text() == 'theme "dark"\n'


def test_add_finds_a_server_of_that_name_in_any_layout(tmp_path: Path) -> None:
    from smith.plugins.mcp import add_server

    path = tmp_path / "config.kdl"
    for text in (
        'mcp { server "x" command="p" sandbox=false; }\n',
        'mcp.server.x.command "p"\n',
        'mcp {\n  server {\n    x { command "p"; }\n  }\n}\n',
    ):
        path.write_text(text)
        with pytest.raises(SmithError, match="configured already") as info:
            add_server(str(path), "x", {"command": "q", "args": []})
        assert "smith mcp remove x" in info.value.diagnostic.render()
        assert path.read_text() == text
    add_server(str(path), "y", {"command": "q", "args": ["1"]})
    assert ("mcp.server.y.command", "q") in _settings(path)


def test_a_server_name_with_a_dot_is_refused_not_split(tmp_path: Path) -> None:
    from smith.config._kdl import read_settings
    from smith.plugins.mcp import add_server

    path = tmp_path / "config.kdl"
    with pytest.raises(SmithError, match=r"no '\.'"):
        add_server(str(path), "my.server", {"command": "q"})
    settings, problems = read_settings("c.kdl", 'mcp { server "my.server" command="p"; }\n')
    assert not settings and len(problems) == 1
    assert "'my.server'" in problems[0].render() and "no '.'" in problems[0].render()
