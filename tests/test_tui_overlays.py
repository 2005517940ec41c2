"""The branch tree (/tree) and the model picker (/model) overlays (Pilot), and the
branch map under the tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.widgets import Input, OptionList, Static

from smith.frontends.tui import _branches
from smith.frontends.tui._branches import BranchMap
from smith.frontends.tui._models import (
    ModelChoice,
    catalog_choices,
    context_label,
    model_choices,
)
from smith.frontends.tui._picker import ModelPicker
from smith.frontends.tui._tree import BranchTree, TreeScreen
from smith.providers._model import ModelInfo
from smith.runtime import SessionTree
from smith.session import Session
from tests.conftest import SmithEnv
from tests.runtime_kit import Fake, say
from tests.test_tui import SIZE, _app, _project, _settle, _type, run, status, visible


def _msg(id: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {"id": id, "parent": parent, "ts": 1, "kind": "message",
            "content": {"role": role, "content": [{"type": "text", "text": text}]}}  # fmt: skip


# u1 a1 u2 a2 ─┬─ u3 a3              (branch A)
#              └─ u4 a4 u5 a5        (branch B, the selected one)
BRANCHED = [
    _msg("u1", None, "user", "first question"),
    _msg("a1", "u1", "assistant", "first answer"),
    _msg("u2", "a1", "user", "second question"),
    _msg("a2", "u2", "assistant", "second answer"),
    _msg("u3", "a2", "user", "branch A question"),
    _msg("a3", "u3", "assistant", "A answer"),
    _msg("u4", "a2", "user", "branch B question"),
    _msg("a4", "u4", "assistant", "B answer"),
    _msg("u5", "a4", "user", "B follow-up"),
    _msg("a5", "u5", "assistant", "B follow answer"),
]


def _session(tmp_path: Path, entries: list[dict[str, Any]]) -> Session:
    project = _project(tmp_path)
    return Session.from_entries(entries, info={"id": "t", "name": "tree", "cwd": str(project)})


def _lines(tree: BranchTree) -> list[str]:
    """The tree as shown: one label per line, indented by depth."""
    return ["  " * (len(line.path) - 1) + str(line.node.label) for line in tree._tree_lines]


def test_the_tree_shows_branches_marks_where_we_are_and_enter_goes_elsewhere(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path, BRANCHED)

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            assert "B follow answer" in visible(app)
            await _type(pilot, "/tree")
            await pilot.pause()
            assert isinstance(app.screen, TreeScreen)
            tree = app.screen.query_one(BranchTree)
            assert app.focused is tree
            lines = _lines(tree)
            assert lines == [
                "tree",
                "  ⎇ first question  4 entries · 2 branches",
                "    you first question",
                "    you second question",
                "    ⎇ branch A question  2 entries",
                "    ● ⎇ branch B question  4 entries",
                "      you branch B question",
                "      ● you B follow-up",
            ]
            assert tree.cursor_node is not None
            assert str(tree.cursor_node.label) == "● you B follow-up"
            await pilot.press("up", "up", "up")  # to branch A
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, TreeScreen)
            assert app.focused is app.query_one("#input")
            assert session.leaf == "a3"  # branch A's newest entry
            assert "A answer" in visible(app) and "B answer" not in visible(app)
            # A turn goes to the end of that turn.
            await _type(pilot, "/tree")
            await pilot.pause()
            tree = app.screen.query_one(BranchTree)
            assert tree.cursor_node is not None
            assert str(tree.cursor_node.label) == "● you branch A question"
            await pilot.press("up", "up", "up", "enter")  # past branch A, "you first question"
            await pilot.pause()
            assert session.leaf == "a1"
            assert "first answer" in visible(app) and "second question" not in visible(app)

    run(main())


def test_escape_closes_the_tree_without_moving_and_keys_open_and_close_branches(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path, BRANCHED)

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "/tree")
            await pilot.pause()
            tree = app.screen.query_one(BranchTree)
            await pilot.press("up", "up", "up")  # branch A, closed
            await pilot.press("right")
            await pilot.pause()
            assert "      you branch A question" in _lines(tree)
            await pilot.press("left")
            await pilot.pause()
            assert "      you branch A question" not in _lines(tree)
            await pilot.press("ctrl+f")  # the overlay owns the keys
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, TreeScreen)
            assert not app.query_one("#search").has_class("shown")
            assert session.leaf == "a5" and app.focused is app.query_one("#input")

    run(main())


def test_the_tree_of_a_100k_entry_session_decodes_and_builds_only_what_is_shown(
    tmp_path: Path,
) -> None:
    n = 100_000
    entries = [_msg(f"e{i}", f"e{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant",
                    f"message {i}") for i in range(n)]  # fmt: skip
    entries += [_msg("side", "e49999", "user", "a side branch"),
                _msg("side-a", "side", "assistant", "side answer")]  # fmt: skip
    session = _session(tmp_path, entries)
    session.select(f"e{n - 1}")

    async def main() -> None:
        app = _app(tmp_path, (Fake(), "m"), session=session)
        async with app.run_test(size=SIZE) as pilot:
            app.run_command("tree", "")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, TreeScreen)
            tree = screen.query_one(BranchTree)
            # A page of turns in each run on the way to the leaf, not 50,000 of them.
            assert screen.map.decoded <= 2 * (2 * _branches.PAGE + 4)
            assert len(tree._tree_lines) <= 2 * _branches.PAGE + 8
            assert tree.cursor_node is not None
            assert str(tree.cursor_node.label) == "● you message 99998"
            lines = _lines(tree)
            assert lines[1] == "  ⎇ message 0  50,000 entries · 2 branches"
            assert "    ⎇ a side branch  2 entries" in lines
            # Older turns come a page at a time, on request.
            older = next(i for i, line in enumerate(lines) if "older turns" in line)
            before = screen.map.decoded
            tree.move_cursor_to_line(older)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, TreeScreen)
            assert screen.map.decoded - before <= 2 * _branches.PAGE + 2
            assert tree.cursor_node is not None
            assert str(tree.cursor_node.label) == "you message 49798"
            await pilot.press("enter")
            await pilot.pause()
            assert session.leaf == "e49799"

    run(main())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_branch_map_agrees_with_a_naive_walk_of_the_tree(data: st.DataObject) -> None:
    size = data.draw(st.integers(1, 40))
    parents = [-1] + [data.draw(st.integers(-1, i - 1)) for i in range(1, size)]
    roles = [data.draw(st.sampled_from(["user", "assistant", "tool_result"])) for _ in parents]
    entries = []
    for i, (p, role) in enumerate(zip(parents, roles, strict=True)):
        entry = _msg(f"e{i}", f"e{p}" if p >= 0 else None, role, f"text {i}")
        if role == "tool_result":
            entry["pair"] = f"call{i}"
        entries.append(entry)
    session = Session.from_entries(entries, info={"id": "h", "name": "h", "cwd": "/"})
    page = data.draw(st.integers(1, 4))
    m = BranchMap(SessionTree(session))
    children = {i: [j for j, p in enumerate(parents) if p == i] for i in range(size)}

    def below(i: int) -> list[int]:
        return [i, *(k for c in children[i] for k in below(c))]

    assert m.roots == [i for i, p in enumerate(parents) if p < 0]
    for start in range(size):
        chain = [start]
        while len(children[chain[-1]]) == 1:
            chain.append(children[chain[-1]][0])
        end, length = m.end(start)
        assert (end, length) == (chain[-1], len(chain))
        assert m.newest(start) == max(below(start))
        assert m.branches(start) == (children[end] if len(children[end]) > 1 else [])
        # Pages walked back from the end give every user turn of the run, in order,
        # each ending where the next begins.
        users = [i for i in chain if roles[i] == "user"]
        got: list[int] = []
        targets: list[int] = []
        at: int | None = end
        old = _branches.PAGE
        _branches.PAGE = page
        try:
            while at is not None:
                spots, at = m.turns(start, at)
                got[:0] = [s.index for s in spots]
                targets[:0] = [s.target for s in spots]
        finally:
            _branches.PAGE = old
        assert got == users
        ends = [parents[u] for u in users[1:]] + ([end] if users else [])
        assert targets == ends


# -- the model picker ------------------------------------------------------------------


def test_the_model_picker_filters_and_sets_the_model(tmp_path: Path) -> None:
    async def main() -> None:
        app = _app(tmp_path, (Fake(say("hi")), "m"))
        async with app.run_test(size=SIZE) as pilot:
            assert "fake:m" in status(app)
            await _type(pilot, "/model")
            await pilot.pause()
            assert isinstance(app.screen, ModelPicker)
            listing = app.screen.query_one(OptionList)
            assert app.focused is app.screen.query_one(Input)
            shown = [str(listing.get_option_at_index(i).prompt)
                     for i in range(listing.option_count)]  # fmt: skip
            assert [s.split()[0] for s in shown] == ["demo", "scripted"]
            assert "/model scripted:PATH" in shown[1]
            await pilot.press("s", "c", "r")  # filter: only scripted, which cannot be picked
            await pilot.pause()
            assert listing.option_count == 1 and listing.highlighted is None
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ModelPicker)
            await pilot.press("backspace", "backspace", "backspace", "d", "e", "m")
            await pilot.pause()
            assert listing.option_count == 1
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, ModelPicker)
            assert app.focused is app.query_one("#input")
            assert app.runtime is not None and app.runtime.model == "demo"
            assert status(app).startswith("demo ·")
            assert "model: demo" in visible(app)

    run(main())


def test_the_model_picker_opens_from_the_command_palette_and_lists_given_models(
    tmp_path: Path,
) -> None:
    from textual.command import CommandPalette

    catalog = [
        ModelInfo("acme", "big-1", "openai-chat", 200_000, 8_000),
        ModelInfo("acme", "small-1", "openai-chat", 1_000_000, 8_000),
    ]

    def models() -> list[ModelChoice]:
        return model_choices(catalog, lambda info: "no ACME_API_KEY" if "big" in info.id else None)

    async def main() -> None:
        app = _app(tmp_path, models=models)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press("/", "m", "o", "d", "e", "l")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ModelPicker)
            listing = app.screen.query_one(OptionList)
            options = [listing.get_option_at_index(i) for i in range(listing.option_count)]
            assert [o.id for o in options] == ["acme/big-1", "acme/small-1", "demo", "scripted"]
            assert [o.disabled for o in options] == [True, False, False, True]
            assert "no ACME_API_KEY" in str(options[0].prompt)
            assert "1M context" in str(options[1].prompt)
            assert listing.highlighted == 2  # the model in use
            title = str(app.screen.query_one(".title", Static).render())
            assert "now demo" in title
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, ModelPicker)
            assert app.runtime is not None and app.runtime.model == "demo"

    run(main())


def test_a_model_that_fails_to_resolve_is_reported_not_fatal(tmp_path: Path) -> None:
    def models() -> list[ModelChoice]:
        return [ModelChoice("nowhere/model", 8192, True, "")]

    async def main() -> None:
        app = _app(tmp_path, models=models)
        async with app.run_test(size=SIZE) as pilot:
            await _type(pilot, "/model")
            await pilot.pause()
            await pilot.press("enter")
            await _settle(app)
            await pilot.pause()
            assert app.is_running and "no provider is called 'nowhere" in visible(app)

    run(main())


def test_smith_offers_the_catalog_usable_where_a_credential_is_found(senv: SmithEnv) -> None:
    from smith.config import resolve

    senv.write_user_config('providers { openai { api-key-env "MY_OPENAI_KEY"; }; }\n')
    config = resolve(env=senv.env, cwd=str(senv.root))
    env = {**senv.env, "ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef"}
    choices = {c.spec: c for c in catalog_choices(config, env)}
    sonnet = choices["anthropic/claude-sonnet-4-5"]
    assert sonnet.usable and sonnet.context_window == 200_000
    gemini = choices["google/gemini-2.5-pro"]
    assert not gemini.usable and gemini.note == "no API key: smith auth login google"
    gpt = choices["openai/gpt-5"]
    assert not gpt.usable and "MY_OPENAI_KEY" in gpt.note  # the configured variable is unset
    assert list(choices)[-2:] == ["demo", "scripted"]
    assert not any("sk-ant" in c.note for c in choices.values())


@pytest.mark.parametrize(
    ("tokens", "shown"),
    [
        (None, "context ?"),
        (512, "512 context"),
        (200_000, "200k context"),
        (1_000_000, "1M context"),
        (1_048_576, "1049k context"),
    ],
)
def test_context_windows_are_shown_short(tokens: int | None, shown: str) -> None:
    assert context_label(tokens) == shown
