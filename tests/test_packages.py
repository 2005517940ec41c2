"""plugin.kdl read into a PackageManifest (smith.packages.read_package): every key of the
format, and each bad value an error naming plugin.kdl's line and the key (the CLI's side:
tests/test_cli_plugins.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smith.diagnostics import ConfigError, Diagnostic
from smith.packages import (
    CommandDecl,
    Grants,
    OptionDecl,
    RouteDecl,
    ToolDecl,
    content_hash,
    read_package,
    split_ref,
)

FULL = """\
name "hello1"
version "0.1.0"
description "Says hello"
module "plugin.wasm"
sdk 1
build "python"
grants { path "docs"; command "git"; host "api.github.com"; secret "GITHUB_TOKEN"; }
events "tool_call" "turn_start"
command "hello1" description="Say hello" usage="[NAME]"
tool "wordcount" description="Count words" effect="reads" parameters="schemas/wc.json" \\
    shown-by="text" result="command"
queue-policy "newest-first"
option "greeting" type="string" default="hello" description="How to greet"
option "times" type="integer" default=3
key "ctrl+k" command="hello1"
theme "paper" { primary "#1e90ff"; background "#fdf6e3"; }
mcp { server "x" command="true"; }
statusbar "wide"
prompt "system.review" "Review every change before you finish."
prompt "tool.wordcount" file="prompts/wordcount.txt"
layout "status-top" "status" "transcript" "input"
secret-route "GITHUB_TOKEN" { host "api.github.com"; command "gh"; plaintext true; }
frontend "clipboard" "open-url"
"""


def _write(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "plugin.kdl").write_text(text)
    return root


def test_every_key_of_plugin_kdl_is_read(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", FULL)
    (root / "schemas").mkdir()
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    (root / "schemas" / "wc.json").write_text(json.dumps(schema))
    (root / "prompts").mkdir()
    (root / "prompts" / "wordcount.txt").write_text("Count words with it.\n")
    warnings: list[Diagnostic] = []
    p = read_package(str(root), warnings.append)
    assert (p.name, p.version, p.description, p.root) == ("hello1", "0.1.0", "Says hello",
                                                          str(root))  # fmt: skip
    assert (p.module, p.sdk, p.build, p.kind, p.has_code) == ("plugin.wasm", "1", "python",
                                                              "smith", True)  # fmt: skip
    assert p.grants == Grants(("docs",), ("git",), ("api.github.com",), ("GITHUB_TOKEN",))
    assert p.events == ("tool_call", "turn_start")
    assert p.commands == (CommandDecl("hello1", "Say hello", "[NAME]"),)
    assert p.tools == (ToolDecl("wordcount", "Count words", schema, "reads", "text", "command"),)
    assert p.queue_policies == ("newest-first",)
    assert p.options == (OptionDecl("greeting", "string", "hello", "How to greet"),
                         OptionDecl("times", "integer", 3, ""))  # fmt: skip
    assert p.keybindings == {"ctrl+k": "hello1"}
    assert p.themes == {"paper": {"primary": "#1e90ff", "background": "#fdf6e3"}}
    assert p.prompts == {"system.review": "Review every change before you finish.",
                         "tool.wordcount": "Count words with it."}  # fmt: skip
    assert p.layouts == {"status-top": ("status", "transcript", "input")}
    assert p.secret_routes == (RouteDecl("GITHUB_TOKEN", ("api.github.com",), ("gh",), True),)
    assert p.frontend == ("clipboard", "open-url")
    assert p.asks()[4:] == [
        "send the secret GITHUB_TOKEN to api.github.com over HTTP",
        "give the secret GITHUB_TOKEN to the command gh",
        "give plugins granted GITHUB_TOKEN its value",
        "use the escape hatch clipboard: copy the value to the user's clipboard",
        "use the escape hatch open-url: open the value, an http(s) URL, in the user's browser",
    ]
    # `statusbar` is no key of this smith: a warning naming where, and a note install shows
    assert [w.code for w in warnings] == ["package.unknown-key"]
    assert warnings[0].source is not None and warnings[0].source.location.endswith(":18:1")
    assert p.notes == ("'statusbar' is not something smith reads in plugin.kdl; it is ignored",)


def test_name_and_version_alone_make_a_package(tmp_path: Path) -> None:
    p = read_package(str(_write(tmp_path / "p", 'name "tiny"\nversion "1"\n')))
    assert (p.name, p.version, p.has_code, p.grants, p.commands) == ("tiny", "1", False,
                                                                     Grants(), ())  # fmt: skip
    assert not p.grants and p.grants.lines() == []


@pytest.mark.parametrize(
    ("line", "where", "says"),
    [
        ('build "rust"', "3:7: build", "is 'rust', which smith cannot build"),
        ('module "../x.wasm"', "3:8: module", "is '../x.wasm', which is not a path"),
        ('module "/abs.wasm"', "3:8: module", "is '/abs.wasm'"),
        ('events "turn_start" "nope"', "3:1: events", "names 'nope', which is no event"),
        ('grants { network "all"; }', "3:10: grants.network", "is no kind of grant"),
        ("grants { path 3; }", "3:15: grants.path", "is the number 3, not a string"),
        ('command "a b"', "3:1: command", "is named 'a b', which is not a name"),
        ('command "x" colour="red"', "3:20: command.colour", "is no property"),
        (
            'tool "t" description="d" effect="deletes"',
            "3:1: tool.effect",
            "of t is 'deletes', no effect class",
        ),
        ('tool "t"', "3:1: tool.description", "of t is missing"),
        (
            'tool "t" description="d" parameters="nope.json"',
            "3:1: tool.parameters",
            "of t cannot be read",
        ),
        (
            'tool "t" description="d" parameters="[1]"',
            "3:1: tool.parameters",
            "of t is not a JSON schema of an object",
        ),
        (
            'option "n" type="integer" default="x"',
            "3:1: option.default",
            "of n is 'x', not a integer",
        ),
        ('option "n" type="colour"', "3:1: option.type", "of n is 'colour'"),
        (
            'tool "t" description="d" result="diff"',
            "3:1: tool.result",
            "of t is 'diff': one of change, command, plain",
        ),
        (
            'tool "t" description="d" shown-by="path"',
            "3:1: tool.shown-by",
            "of t is 'path', none of its parameters",
        ),
        ('key "ctrl+k"', "3:1: key", "'ctrl+k' says no command="),
        ('name "again"', "3:1: name", "is given twice"),
        ('description "a" "b"', "3:1: description", "has 2 values"),
        ('prompt "greeting" "hi"', "3:1: prompt", "is named 'greeting': system.NAME or tool.NAME"),
        ('prompt "system.x"', "3:1: prompt", "'system.x' has no text"),
        ('prompt "system.tools" "T"', "3:1: prompt", "system.tools is the product's heading"),
        ('prompt "system.x" file="../x.md"', "3:1: prompt.file", "of system.x is '../x.md'"),
        ('prompt "system.x" file="gone.md"', "3:1: prompt.file", "of system.x cannot be read"),
        ('prompt "system.x" "\u001b[2J"', "3:1: prompt", "'system.x' holds control characters"),
        ('layout "a" "input" "sidebar"', "3:1: layout", "names 'sidebar', which is no region"),
        ('layout "a" "status" "input"', "3:1: layout", "leaves out transcript, which every"),
        ('layout "a" "input" "transcript" "input"', "3:1: layout", "names input more than once"),
        ('secret-route "T" { host "h"; }', "3:1: secret-route", "routes 'T', which its grants"),
        ('secret-route "T"', "3:1: secret-route", "'T' routes nowhere"),
        ('secret-route "T" { plaintext "yes"; }', "3:20: secret-route.plaintext", "takes true"),
        ('secret-route "T" { port "1"; }', "3:20: secret-route.port", "is none of host"),
        ('frontend "clipboard" "beep"', "3:1: frontend", "names 'beep', which is no escape"),
    ],
)
def test_a_bad_value_names_the_line_and_the_key(
    tmp_path: Path, line: str, where: str, says: str
) -> None:
    root = _write(tmp_path / "p", f'name "ok"\nversion "1"\n{line}\n')
    with pytest.raises(ConfigError) as caught:
        read_package(str(root))
    shown = [d.render() for d in caught.value.diagnostics]
    key = where.split(": ")[1]
    said = f"error: {root / 'plugin.kdl'}:{where}: plugin.kdl's {key} {says}"
    assert any(said in text for text in shown), shown


def test_every_problem_is_said_at_once(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", 'name 1\nbuild "x"\nevents "y"\n')
    with pytest.raises(ConfigError) as caught:
        read_package(str(root))
    assert [d.field for d in caught.value.diagnostics] == ["name", "build", "events", "version"]


def test_kdl_that_does_not_parse_names_its_position(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", 'name "x"\nversion {\n')
    with pytest.raises(ConfigError) as caught:
        read_package(str(root))
    assert caught.value.diagnostics[0].code == "config.kdl-syntax"
    assert str(caught.value.diagnostics[0].source).startswith(f"{root / 'plugin.kdl'}:")


def test_the_events_a_package_may_ask_for_are_the_sdks() -> None:
    from smith.packages._read import EVENTS
    from smith.sdk import HOOKS, SAFE_POINTS

    assert (*SAFE_POINTS, *HOOKS) == EVENTS


def test_a_pinned_ref_splits_off_a_source() -> None:
    assert split_ref("https://h/r.git@v1", None) == ("https://h/r.git", "v1")
    assert split_ref("https://h/r.git@v1", "main") == ("https://h/r.git@v1", "main")
    assert split_ref("git@github.com:o/r.git", None) == ("git@github.com:o/r.git", "")
    assert split_ref("file:///tmp/p@abc123", None) == ("file:///tmp/p", "abc123")
    assert split_ref("./pkg", None) == ("./pkg", "")


def test_the_content_hash_is_the_files_not_where_they_are(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", 'name "x"\nversion "1"\n')
    b = _write(tmp_path / "b", 'name "x"\nversion "1"\n')
    (b / ".git").mkdir()
    (b / ".git" / "HEAD").write_text("ref")
    assert content_hash(str(a)) == content_hash(str(b))
    (b / "plugin.kdl").chmod(0o755)
    assert content_hash(str(a)) != content_hash(str(b))
