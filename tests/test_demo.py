"""The demo provider: rule-based, offline, really calls tools, and says it is a demo."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from smith.effects import EffectJournal, builtin_tools, run_tool, validate
from smith.plugins.providers.demo import DemoProvider, create
from smith.providers import (
    End,
    Pricing,
    Request,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    resolve_model,
)
from tests.conftest import tool_world

TOOLS = builtin_tools()
DEFINITIONS = [spec.definition() for spec in TOOLS.values()]


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def play(
    messages: list[dict[str, object]], tools: list[dict[str, object]] | None = None
) -> list[StreamEvent]:
    request = Request(
        model="demo", messages=messages, tools=DEFINITIONS if tools is None else tools
    )

    async def collect() -> list[StreamEvent]:
        return [event async for event in create("ignored").stream(request)]

    return asyncio.run(collect())


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[StreamEvent]) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


@pytest.mark.parametrize(
    ("prompt", "tool", "arguments"),
    [
        ("list files", "ls", {"path": "."}),
        ("What is here?", "ls", {"path": "."}),
        ("ls", "ls", {"path": "."}),
        ("show me the files in src", "ls", {"path": "src"}),
        ("read README.md", "read", {"path": "README.md"}),
        ("Please SHOW setup.py.", "read", {"path": "setup.py"}),
        ("open the file `src/app.py`.", "read", {"path": "src/app.py"}),
        ("read 'my notes.txt'", "read", {"path": "my notes.txt"}),
        ("search TODO", "grep", {"pattern": "TODO"}),
        ("grep for 'def main' in src", "grep", {"pattern": "def main", "path": "src"}),
        ("Find foo(", "grep", {"pattern": "foo(", "literal": True}),
        ("find *.py", "find", {"pattern": "*.py"}),
        (
            "write notes.txt: remember the milk",
            "write",
            {"path": "notes.txt", "content": "remember the milk\n"},
        ),
        ("create empty.txt", "write", {"path": "empty.txt", "content": ""}),
        ("run git status", "bash", {"command": "git status"}),
        ("Run `make test`.", "bash", {"command": "make test"}),
        ("run echo hi!", "bash", {"command": "echo hi"}),
        ("could you try `ls -la` for me", "bash", {"command": "ls -la"}),
    ],
)
def test_each_rule_calls_its_tool(prompt: str, tool: str, arguments: dict[str, object]) -> None:
    events = play([user(prompt)])
    (call,) = calls_of(events)
    assert (call.name, call.arguments, call.error) == (tool, arguments, None)
    assert validate(TOOLS[tool], call.arguments) == []  # the real schema accepts them
    assert call.id == "demo_call_1"
    assert events[-1] == End("tool_use")
    assert [type(e) for e in events[-2:]] == [ToolCall, End]


def test_first_answer_says_it_is_a_demo_and_how_to_get_a_model() -> None:
    text = text_of(play([user("list files")]))
    assert text.startswith("I am smith's offline demo model")
    assert "--model" in text and "smith config set model" in text and "API key" in text


def test_later_answers_are_marked_and_ids_count_up() -> None:
    history: list[dict[str, object]] = [
        user("list files"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "demo_call_1", "name": "ls", "arguments": {"path": "."}}
            ],
        },
        {
            "role": "tool_result",
            "tool_call_id": "demo_call_1",
            "tool_name": "ls",
            "content": [{"type": "text", "text": "a.txt"}],
            "is_error": False,
        },
        {"role": "assistant", "content": [{"type": "text", "text": "..."}]},
        user("read a.txt"),
    ]
    events = play(history)
    assert text_of(events).startswith("(demo) Reading `a.txt`")
    assert calls_of(events)[0].id == "demo_call_2"


def test_unknown_prompts_get_help() -> None:
    for prompt in ("help", "tell me a joke", ""):
        events = play([user(prompt)])
        text = text_of(events)
        assert "offline demo model" in text
        for example in ("list files", "read README.md", "search TODO", "run `git status`"):
            assert example in text
        assert not calls_of(events) and events[-1] == End("success")


def test_a_tool_the_request_lacks_is_not_called() -> None:
    events = play([user("run ls")], tools=[d for d in DEFINITIONS if d["name"] != "bash"])
    assert not calls_of(events) and events[-1] == End("success")
    assert "does not offer it" in text_of(events)
    help_text = text_of(play([user("help")], tools=[]))
    assert "not offered in this session" in help_text


def test_streams_several_deltas_free_of_cost_deterministically() -> None:
    events = play([user("hello")])
    assert sum(isinstance(e, TextDelta) for e in events) > 3
    assert [e for e in events if isinstance(e, Usage)] == [Usage(0, 0, 0, 0)]  # no tokens
    assert events == play([user("hello")])
    assert create("x").pricing("demo") == Pricing(0.0, 0.0, 0.0, 0.0)  # $0, not unknown
    provider, model = resolve_model("demo")
    assert isinstance(provider, DemoProvider) and provider.name == "demo" and model == "demo"


def result(
    name: str, args: dict[str, object], text: str, is_error: bool = False
) -> list[dict[str, object]]:
    return [
        user("go"),
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c1", "name": name, "arguments": args}],
        },
        {
            "role": "tool_result",
            "tool_call_id": "c1",
            "tool_name": name,
            "content": [{"type": "text", "text": text}],
            "is_error": is_error,
        },
    ]


@pytest.mark.parametrize(
    ("name", "args", "text", "is_error", "expected"),
    [
        (
            "ls",
            {"path": "."},
            "a.txt\nb.txt\nsrc/\n[2 ignored entries hidden]",
            False,
            ["`.` has 3 entries (1 directory, 2 files)", "src/", "[2 ignored entries hidden]"],
        ),
        ("ls", {"path": "e"}, "(empty)", False, ["`e` has 0 entries"]),
        (
            "read",
            {"path": "a.txt"},
            "".join(f"line {i}\n" for i in range(9)),
            False,
            ["`a.txt`: 9 lines shown", "line 4", "and 4 more lines"],
        ),
        (
            "grep",
            {"pattern": "x"},
            "a.py:1:x\na.py:3:x\nb.py:2:x",
            False,
            ["3 matching lines in 2 files", "b.py:2:x"],
        ),
        ("grep", {"pattern": "zz"}, "no matches for zz", False, ["No line matches `zz`"]),
        ("find", {"pattern": "*.py"}, "a.py\nsrc/b.py", False, ["2 matching files", "src/b.py"]),
        (
            "write",
            {"path": "n.txt", "content": "x"},
            "created n.txt (1 bytes)",
            False,
            ["created n.txt (1 bytes)"],
        ),
        (
            "bash",
            {"command": "false"},
            "oops\n[exit status 1]",
            True,
            ["exited with status 1", "1 line", "oops"],
        ),
        ("bash", {"command": "true"}, "(no output)", False, ["The command succeeded", "no output"]),
        (
            "bash",
            {"command": "exit 2"},
            "[exit status 2]",
            True,
            ["status 2. It printed no output."],
        ),
        (
            "read",
            {"path": "nope"},
            "nope does not exist",
            True,
            ["The read tool reported an error: nope does not exist"],
        ),
    ],
)
def test_after_a_tool_result_it_summarizes_and_ends(
    name: str, args: dict[str, object], text: str, is_error: bool, expected: list[str]
) -> None:
    events = play(result(name, args, text, is_error))
    summary = text_of(events)
    assert summary.startswith("(demo) ")
    for part in expected:
        assert part in summary
    assert not calls_of(events) and events[-1] == End("success")


def test_a_whole_round_with_real_tools(tmp_path: Path) -> None:
    """Prompt -> the demo's call -> the real tool -> the demo's summary."""
    session, ctx, project = tool_world(tmp_path)
    (project / "notes.txt").write_text("first\nsecond\n")
    journal = EffectJournal(session)  # type: ignore[arg-type]
    for prompt, expected in [
        ("list files", "1 entry (0 directories, 1 file)"),
        ("read notes.txt", "2 lines shown"),
        ("write hello.txt: hi there", "created hello.txt"),
        ("run `echo demo`", "The command succeeded"),
    ]:
        messages = [user(prompt)]
        (call,) = calls_of(play(messages))
        outcome = run_tool(journal, TOOLS[call.name], call.arguments, ctx)  # type: ignore[arg-type]
        messages += [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_call",
                        "id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                ],
            },
            {
                "role": "tool_result",
                "tool_call_id": call.id,
                "tool_name": call.name,
                "content": [{"type": "text", "text": outcome.result.text}],
                "is_error": not outcome.result.ok,
            },
        ]
        assert expected in text_of(play(messages)), prompt
    assert (project / "hello.txt").read_text() == "hi there\n"
