"""The demo provider: an offline, rule-based stand-in for a model (`--model demo`).

For a newcomer without an API key: smith works end to end, with real tool calls through
the tools the request offers, while every answer says plainly that no model is behind it.
The rules look at the latest user message (case-insensitive):

    list files / what is here / ls [DIR]       -> ls
    read PATH / show PATH / open PATH           -> read
    search PATTERN / grep PATTERN [in DIR]      -> grep (find for a glob: find *.py)
    write PATH: CONTENT / create PATH           -> write
    run COMMAND / a `backticked command`        -> bash
    help, or anything else                      -> what the demo can do, with examples

When the request ends with tool results (the tool ran), the answer is a short summary of
them and the turn ends. Everything is deterministic: the same request gets the same
answer, streamed in several deltas. No model reads or writes a token and nothing is
paid, so each answer reports a usage of 0 tokens at a price of 0: its cost is $0.0000
before the first answer and after every one (a usage left unknown would turn the
status line's "$0.0000" into "unknown" at the first answer).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from smith.providers import (
    End,
    Pricing,
    Request,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    content_parts,
)
from smith.sdk import Plugin, ProviderSpec, provider_facts

INTRO = (
    "I am smith's offline demo model: I follow a few fixed rules instead of thinking, so "
    "I need no API key and no network, and I only understand simple requests. To work "
    "with a real model, set one with --model or `smith config set model ...` and the "
    "provider's API key."
)
TAG = "(demo) "  # every later answer is marked too: nobody should mistake it for a model
EXAMPLES = (
    ("list files", "ls"),
    ("read README.md", "read"),
    ("search TODO", "grep"),
    ("find *.py", "find"),
    ("write notes.txt: remember the milk", "write"),
    ("run `git status`", "bash"),
)
PREVIEW_LINES = 5
# Words people put around the argument that are not part of it ("show me the file x").
FILLER = frozenset(
    {"a", "an", "the", "me", "my", "this", "that", "file", "files", "contents", "content"}
    | {"of", "at", "in", "for", "named", "called", "all", "everything", "here", "there"}
    | {"directory", "folder", "dir", "current", "new", "empty", "what", "is"}
)
LISTING = re.compile(
    r"(?<![\w./-])(?:list|ls|files|directory|folder)(?![\w./-])|what(?:'s| is) (?:in )?here",
    re.I,
)
POLITE = re.compile(
    r"^(?:(?:please|pls|kindly|now|then|ok|okay|can you|could you|would you|will you)"
    r"[\s,]+)+",
    re.I,
)
QUOTES = "\"'`"

FREE = Pricing(0.0, 0.0, 0.0, 0.0)
NO_TOKENS = Usage(0, 0, 0, 0)  # no model read or wrote any

Plan = tuple[str, dict[str, object], str]  # tool name, arguments, what the demo says


class DemoProvider:
    """Answers by the module's rules; holds no state, so answers depend on the request."""

    name = "demo"

    def pricing(self, model: str) -> Pricing | None:
        return FREE

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        for event in answer(request):
            yield event


def create(model: str) -> DemoProvider:
    """The demo provider; `model` is ignored (there is only one demo)."""
    return DemoProvider()


def answer(request: Request) -> list[StreamEvent]:
    """The demo's whole response to `request`, as stream events."""
    # What the runtime told the model besides the user's words (the environment block,
    # instruction files: messages marked `context`) is not something to answer.
    messages = [m for m in request.messages if not m.get("context")]
    first = not any(m.get("role") == "assistant" for m in messages)
    results: list[dict[str, object]] = []
    for message in reversed(messages):
        if message.get("role") != "tool_result":
            break
        results.insert(0, message)
    if results:
        text = TAG + "\n\n".join(_summary(r, _call_arguments(messages, r)) for r in results)
        return [*_deltas(text), NO_TOKENS, End("success")]
    tools = [str(t.get("name")) for t in request.tools]
    plan = plan_for(_latest_user_text(messages))
    if plan is None:
        return [*_deltas(f"{INTRO}\n\n{_help(tools)}"), NO_TOKENS, End("success")]
    tool, arguments, say = plan
    lead = f"{INTRO}\n\n" if first else TAG
    if tool not in tools:
        offered = ", ".join(tools) or "none"
        text = f"I would use the {tool} tool for that, but this session does not offer it "
        return [*_deltas(f"{lead}{text}(tools here: {offered})."), NO_TOKENS, End("success")]
    calls = sum(
        1
        for m in messages
        if m.get("role") == "assistant"
        for block in content_parts(m)
        if block.get("type") == "tool_call"
    )
    call = ToolCall(f"demo_call_{calls + 1}", tool, arguments)
    return [*_deltas(lead + say), NO_TOKENS, call, End("tool_use")]


def plan_for(prompt: str) -> Plan | None:
    """The tool call a prompt asks for, or None when the demo can only explain itself."""
    text = POLITE.sub("", prompt.strip())
    match = re.match(r"(\w+)\s*(.*)", text, re.S)
    verb, rest = (match[1].lower(), match[2].strip()) if match else ("", "")
    if verb in ("run", "execute", "exec") and rest and (command := _command(rest)):
        return ("bash", {"command": command}, f"Running `{command}` with the bash tool.")
    if verb in ("read", "show", "open", "cat", "view") and rest:
        path = _argument(rest)
        if LISTING.search(rest) or path.endswith("/"):  # "show me the files in src"
            return _list(path)
        if path:
            return ("read", {"path": path}, f"Reading `{path}` with the read tool.")
    if verb in ("search", "grep", "find") and rest:
        return _search(verb, rest)
    if verb in ("write", "create") and rest:
        head, _, content = rest.partition(":")
        path = _argument(head)
        if path:
            body = _unquote(content.strip())
            body += "\n" if body and not body.endswith("\n") else ""  # files end with one
            say = f"Writing {len(body)} characters to `{path}` with the write tool."
            if not body:
                say = f"Creating `{path}` as an empty file with the write tool."
            return ("write", {"path": path, "content": body}, say)
    if verb in ("list", "ls"):
        return _list(_argument(rest))
    # A backticked command outranks listing words that may be part of it (`ls -la`).
    fenced = re.search(r"```(?:[\w-]*\n)?(.+?)```|`([^`\n]+)`", text, re.S)
    if fenced:
        command = (fenced[1] or fenced[2]).strip()
        return ("bash", {"command": command}, f"Running `{command}` with the bash tool.")
    return _list(".") if LISTING.search(text) else None


def _list(path: str) -> Plan:
    path = path or "."
    return ("ls", {"path": path}, f"Listing `{path}` with the ls tool.")


def _search(verb: str, rest: str) -> Plan:
    """grep for a pattern (optionally `in DIR`), or find for a glob such as *.py."""
    rest = re.sub(r"^(?:for|files? (?:named|called|matching)|the (?:word|text))\s+", "", rest)
    path = ""
    if rest[:1] in QUOTES and (quoted := re.match(r"([\"'`])(.+?)\1(.*)", rest, re.S)):
        pattern, tail = quoted[2], quoted[3]
        if where := re.match(r"\s+in\s+(\S+)\s*$", tail):
            path = _clean(where[1])
    else:
        if where := re.match(r"(.+?)\s+in\s+(\S+)\s*$", rest, re.S):
            rest, path = where[1], _clean(where[2])
        # A pattern keeps its brackets and dots; only a sentence's final mark goes.
        pattern = rest.strip().rstrip("?!,;")
        pattern = pattern[:-1] if re.search(r"\w\.$", pattern) else pattern
    where_text = f" in `{path}`" if path else ""
    extra: dict[str, object] = {"path": path} if path else {}
    if verb == "find" and "*" in pattern and " " not in pattern:
        say = f"Looking for files matching `{pattern}`{where_text} with the find tool."
        return ("find", {"pattern": pattern, **extra}, say)
    try:
        re.compile(pattern)
    except re.error:  # plain text typed by a person, not a regular expression
        extra["literal"] = True
    say = f"Searching for `{pattern}`{where_text} with the grep tool."
    return ("grep", {"pattern": pattern, **extra}, say)


def _argument(rest: str) -> str:
    """The path a request names: a quoted string, or the first word that is not filler."""
    rest = rest.strip()
    if rest[:1] in QUOTES and (quoted := re.match(r"([\"'`])(.+?)\1", rest)):
        return quoted[2]
    for word in rest.split():
        if word.lower().strip(".,;:!?") in FILLER or word.startswith("-"):
            continue  # "-la" of "ls -la" is an option, not a path
        if cleaned := _clean(word):
            return cleaned
    return ""


def _clean(word: str) -> str:
    """`word` without the quotes and punctuation of the sentence around it."""
    word = word.lstrip("\"'`([<")
    while True:  # "`a.py`." loses its full stop, then its backtick
        cut = word.rstrip("\"'`)]>,;:!?")
        # "read setup.py." ends a sentence; "..", "src/." and "." are paths.
        if len(cut) > 1 and cut.endswith(".") and cut[-2] not in "./":
            cut = cut[:-1]
        if cut == word:
            return word
        word = cut


def _command(rest: str) -> str:
    """The command of `run ...`: unfenced and unquoted, a sentence's final mark dropped."""
    command = rest.strip()
    if fenced := re.fullmatch(r"```(?:[\w-]*\n)?(.+?)```", command, re.S):
        return fenced[1].strip()
    if len(command) > 2 and command[-1] in ".!?" and command[-2] in QUOTES:
        command = command[:-1]  # run `make test`.
    if (unquoted := _unquote(command)) != command:
        return unquoted.strip()  # quoted: exactly as written
    if re.search(r"[\w)]\.$", command) and "." not in command.split()[-1][:-1]:
        command = command[:-1]  # "run make test." but not "ls src/." or "cat a.txt"
    return command.rstrip("!?,;") or command


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in QUOTES:
        return text[1:-1]
    return text


def _help(tools: list[str]) -> str:
    lines = ["I can answer prompts like these, each by really calling one of smith's tools:"]
    for prompt, tool in EXAMPLES:
        missing = "" if tool in tools else " (not offered in this session)"
        lines.append(f"- `{prompt}` uses the {tool} tool{missing}")
    lines.append("After a tool runs I summarize its result. Anything else gets this help.")
    return "\n".join(lines)


def _deltas(text: str) -> list[StreamEvent]:
    """`text` as deltas of three words each (with their spacing), so it streams."""
    pieces = [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]
    return [TextDelta("".join(pieces[i : i + 3])) for i in range(0, len(pieces), 3)]


def _text(message: dict[str, object]) -> str:
    return "\n".join(
        str(b.get("text", "")) for b in content_parts(message) if b.get("type") == "text"
    )


def _latest_user_text(messages: list[dict[str, object]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message)
    return ""


def _call_arguments(
    messages: list[dict[str, object]], result: dict[str, object]
) -> dict[str, object]:
    """The arguments of the call `result` answers (to name its path or pattern)."""
    for message in reversed(messages):
        for block in content_parts(message) if message.get("role") == "assistant" else []:
            if block.get("type") == "tool_call" and block.get("id") == result.get("tool_call_id"):
                arguments = block.get("arguments")
                return arguments if isinstance(arguments, dict) else {}
    return {}


def _summary(result: dict[str, object], arguments: dict[str, object]) -> str:
    """A few sentences about one tool result: counts and the first lines."""
    name = str(result.get("tool_name") or "unnamed")
    text = _text(result)
    lines = text.splitlines()
    # The tools' own notes ("[showing lines 1-2000 of 5000 ...]") are kept apart; a
    # line of a file like "[tool.mypy]" has no space, so it stays content.
    notes = [x for x in lines if re.fullmatch(r"\[[^\]]* [^\]]*\]", x)]
    body = [x for x in lines if x not in notes]
    path = str(arguments.get("path", "."))
    status = None
    if name == "bash":
        status = re.search(r"^\[(?:exit status (\d+)|killed by signal (\d+))\]$", text, re.M)
        head = f"The command {'failed' if result.get('is_error') else 'succeeded'}."
        if status is not None:
            head = f"The command exited with status {status[1]}."
            head = head if status[1] else f"The command was killed by signal {status[2]}."
        quiet = body in ([], ["(no output)"])  # [] when only "[exit status N]" came back
        count = "no output" if quiet else _count(len(body), "line")
        out = f"{head} It printed {count}" + ("." if quiet else ":")
    elif result.get("is_error"):
        return f"The {name} tool reported an error: {lines[0] if lines else '(no message)'}"
    elif name == "ls":
        entries = [] if body == ["(empty)"] else body
        dirs = sum(1 for e in entries if e.endswith("/"))
        out = f"`{path}` has {_count(len(entries), 'entry')} ({_count(dirs, 'directory')}, "
        out += f"{_count(len(entries) - dirs, 'file')})" + (":" if entries else ".")
        body = entries
    elif name == "read":
        out = f"`{path}`: {_count(len(body), 'line')} shown" + ("; it begins:" if body else ".")
    elif name == "grep":
        hits = [m for x in body if (m := re.match(r"(.+?):\d+:", x))]
        files = _count(len({m[1] for m in hits}), "file")
        out = f"{_count(len(hits), 'matching line')} in {files}:"
        if not hits:
            out, body = f"No line matches `{arguments.get('pattern', '?')}`.", []
    elif name == "find":
        body = [x for x in body if not x.startswith("no files match")]
        out = f"{_count(len(body), 'matching file')}" + (":" if body else ".")
    elif len(body) == 1:  # write's "created notes.txt (6 bytes)" and the like
        out, body = f"The {name} tool said: {body[0]}", []
    else:
        out = f"The {name} tool said:" if body else f"The {name} tool returned nothing."
    if body and out.endswith(":"):
        shown = [x[:120] for x in body[:PREVIEW_LINES]]
        more = (
            f"\n… and {len(body) - PREVIEW_LINES} more lines" if len(body) > PREVIEW_LINES else ""
        )
        out += "\n```\n" + "\n".join(shown) + "\n```" + more
    return out + "".join(f"\n{n}" for n in notes if status is None or n != status[0])


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


# What this module contributes: the provider, for the model registry.
PLUGIN = Plugin(
    "demo",
    providers={"demo": ProviderSpec(create, **provider_facts()["demo"].spec_fields())},
)
