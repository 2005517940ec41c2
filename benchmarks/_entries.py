"""Representative session entries as plain dicts, the same for every run and every benchmark.

A mix shaped like a coding session: assistant text of 200-2,000 characters (some non-ASCII),
tool calls with JSON-like arguments, tool results of 100 B-20 KB (log-uniform, so most are
small and a few are large), user prompts, and small metadata entries (model and thinking
changes, labels, session info). Every entry has `id`, `parent`, `ts` (ms), `kind` and
`content`.
"""

from __future__ import annotations

import random
from typing import Any

WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "that",
    "for",
    "it",
    "this",
    "with",
    "on",
    "be",
    "as",
    "test",
    "file",
    "function",
    "value",
    "config",
    "session",
    "entry",
    "branch",
    "parser",
    "error",
    "return",
    "import",
    "module",
    "class",
    "call",
    "result",
    "should",
    "will",
    "can",
    "we",
    "now",
    "then",
    "first",
    "check",
    "update",
    "change",
    "add",
    "remove",
    "fix",
    "run",
    "build",
    "because",
    "instead",
    "so",
    "if",
    "when",
    "which",
    "each",
    "every",
    "new",
    "old",
    "line",
    "path",
    "name",
    "type",
    "index",
]
NON_ASCII = ["naïve", "café", "→", "—", "“quoted”", "日本語", "✓", "Ünïcode", "😀"]
CODE = [
    "def {n}(self, value: int) -> int:",
    "    return self._{n}[value]",
    "import {n}",
    "class {N}:",
    "    if {n} is None:",
    "        raise ValueError(f'bad {n}: {{value!r}}')",
    "for i, {n} in enumerate(items):",
    "{n} = {{'key': {n}, 'count': 3}}",
    "# {n}: keep the order stable",
    "assert {n} == expected, {n}",
]
TOOLS = ("read", "bash", "edit", "grep", "write")
MODELS = ("claude-sonnet-4", "gpt-5", "gemini-2.5-pro", "qwen3-coder")
START_MS = 1_760_000_000_000


def _prose(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(NON_ASCII) if rng.random() < 0.01 else rng.choice(WORDS)
        if rng.random() < 0.08:
            word += "." if rng.random() < 0.7 else ","
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


def _code(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    length = 0
    while length < size:
        name = rng.choice(WORDS) + "_" + rng.choice(WORDS)
        line = rng.choice(CODE).format(n=name, N=name.title().replace("_", ""))
        lines.append(f"{len(lines) + 1:>5}\t{line}")
        length += len(lines[-1]) + 1
    return "\n".join(lines)[:size]


class _Texts:
    """Slices of one prose and one code corpus: each text is a new str, quickly made."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.prose = _prose(rng, 40_000)
        self.code = _code(rng, 80_000)

    def prose_of(self, size: int) -> str:
        start = self.rng.randrange(len(self.prose) - size)
        return self.prose[start : start + size]

    def code_of(self, size: int) -> str:
        start = self.rng.randrange(len(self.code) - size)
        return self.code[start : start + size]


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{rng.choice(WORDS)}.py"


def _arguments(rng: random.Random, texts: _Texts, tool: str) -> dict[str, Any]:
    if tool == "read":
        return {"path": _path(rng), "offset": rng.randrange(1, 400), "limit": 200}
    if tool == "bash":
        cmd = f"python -m pytest -q tests/test_{rng.choice(WORDS)}.py -k {rng.choice(WORDS)}"
        return {"command": cmd, "timeout": 120}
    if tool == "edit":
        old = texts.code_of(rng.randrange(40, 400))
        return {"path": _path(rng), "old_text": old, "new_text": old.replace("value", "item")}
    if tool == "grep":
        return {"pattern": f"def {rng.choice(WORDS)}", "path": "src", "ignore_case": False}
    return {"path": _path(rng), "content": texts.code_of(rng.randrange(100, 1500))}


def _content(texts: _Texts, kind: str, call: dict[str, Any]) -> dict[str, Any]:
    rng = texts.rng
    if kind == "assistant":
        usage = {"input": rng.randrange(1000, 90000), "output": rng.randrange(50, 2000)}
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": texts.prose_of(rng.randrange(200, 2001))}],
            "model": rng.choice(MODELS),
            "usage": usage,
            "stop_reason": "end_turn",
        }
    if kind == "tool_call":
        tool = rng.choice(TOOLS)
        call_id = f"call_{rng.getrandbits(64):016x}"
        call.update(id=call_id, tool=tool)
        part = {
            "type": "tool_call",
            "id": call_id,
            "name": tool,
            "arguments": _arguments(rng, texts, tool),
        }
        return {"role": "assistant", "content": [part], "stop_reason": "tool_use"}
    if kind == "tool_result":
        size = int(100 * 200 ** rng.random())  # log-uniform over 100 B-20 KB
        return {
            "role": "tool_result",
            "tool_call_id": call.get("id", "call_0"),
            "tool_name": call.get("tool", "read"),
            "content": [{"type": "text", "text": texts.code_of(size)}],
            "is_error": rng.random() < 0.05,
        }
    if kind == "user":
        return {"role": "user", "content": [{"type": "text", "text": texts.prose_of(120)}]}
    if kind == "model_change":
        return {"provider": "anthropic", "model": rng.choice(MODELS)}
    if kind == "thinking_level":
        return {"level": rng.choice(("off", "low", "medium", "high"))}
    if kind == "label":
        return {"label": rng.choice(WORDS), "target": f"{rng.getrandbits(48):012x}"}
    return {"name": f"fix {rng.choice(WORDS)}", "cwd": "/home/dev/project", "tags": ["dev"]}


# Each step of a turn: (entry kind, message kind) with its weight.
MIX = (
    (("message", "assistant"), 24),
    (("message", "tool_call"), 28),
    (("message", "tool_result"), 28),
    (("message", "user"), 8),
    (("model_change", "model_change"), 3),
    (("thinking_level", "thinking_level"), 3),
    (("label", "label"), 4),
    (("session_info", "session_info"), 2),
)


def representative_entries(n: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """n entries of a linear session; a seed always gives the same entries (and a longer
    list starts with the shorter one)."""
    rng = random.Random(seed)
    texts = _Texts(rng)
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    ts = START_MS
    call: dict[str, Any] = {}
    for _ in range(n):
        kind, what = rng.choices(kinds, weights)[0]
        entry_id = f"{rng.getrandbits(48):012x}"
        ts += rng.randrange(5, 30_000)
        entries.append(
            {
                "id": entry_id,
                "parent": parent,
                "ts": ts,
                "kind": kind,
                "content": _content(texts, what, call),
            }
        )
        parent = entry_id
    return entries
