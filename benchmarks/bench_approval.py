"""The cost of approval rules: deciding 1,000 typical bash calls (30 shapes, each a
different command) under `untrusted` with 8 deny and 8 allow rules, against the same
calls with no rule (the baseline, same run). Every command is parsed afresh (the parse
cache is cleared before each pass); a call parses its command once whatever the number
of rules (tests/test_approval_rules.py holds that)."""

from __future__ import annotations

import statistics
import time

from smith.plugins._bashrules import analyse
from smith.plugins.approval import decide

SHAPES = [
    "git status --short", "git diff HEAD~{n} -- src/mod{n}.py", "git log --oneline -n {n}",
    "ls -la src/pkg{n}", "cat src/mod{n}.py | head -{n}", "grep -rn 'def f{n}' src/",
    "pytest tests/test_m{n}.py -q -x", "python -m pytest -k case{n} -q 2>&1 | tail -20",
    "cd build && make -j{n} && make install", "rm -rf build/tmp{n}", "mkdir -p out/d{n}",
    "find . -name '*.py' -newer f{n} | xargs wc -l", "sed -n '{n},+5p' file{n}.txt",
    "for f in src/*.py; do echo $f; done", 'echo "value: $HOME/{n}"', "npm test -- --grep t{n}",
    "cargo build --release 2>&1 | grep -c warning", "uv run ruff check src/m{n}.py",
    "if [ -f x{n} ]; then cat x{n}; fi", "export PATH=$PWD/bin:$PATH && tool{n} --help",
    "git add src/m{n}.py && git commit -m 'fix {n}'", "docker ps -a --format '{{{{.Names}}}}'",
    "awk '{{print $1}}' log{n}.txt | sort | uniq -c", "timeout 30 ./run{n}.sh",
    "curl -s http://localhost:80{n}/health", "wc -l $(git ls-files '*.py')",
    "tar -czf out{n}.tgz src", "env FOO={n} python3 script{n}.py",
    "head -c {n}00 /dev/urandom | base64", "diff -u a{n}.txt b{n}.txt || true",
]  # fmt: skip
DENY = ["rm -rf", "git push --force", "sudo", "curl", "dd", "chmod -R", "mkfs", "shutdown"]
ALLOW = ["git status", "git diff", "git log", "ls", "cat", "pytest", "make", "npm test"]


def commands(count: int = 1000) -> list[str]:
    return [SHAPES[i % len(SHAPES)].format(n=i) for i in range(count)]


def _pass(settings: dict[str, object], calls: list[str]) -> float:
    analyse.cache_clear()
    start = time.perf_counter()
    for command in calls:
        decide(settings, "bench", "bash", {"command": command})
    return time.perf_counter() - start


def figures(runs: int = 7) -> dict[str, float]:
    """Medians of `runs` interleaved passes over 1,000 calls, in ms per 1,000 calls."""
    calls = commands()
    ruled = {"approval": "untrusted", "approval.deny": DENY, "approval.allow": ALLOW}
    bare = {"approval": "untrusted", "approval.deny": [], "approval.allow": []}
    times: dict[str, list[float]] = {"rules": [], "none": []}
    _pass(ruled, calls)  # warm: the parser's first load
    for _ in range(runs):
        times["rules"].append(_pass(ruled, calls))
        times["none"].append(_pass(bare, calls))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return {"rules_ms": med["rules"], "none_ms": med["none"], "cost_ms": med["rules"] - med["none"]}


class Rules:
    timeout = 120
    number = 1
    repeat = (3, 9, 30.0)

    def setup(self) -> None:
        self.calls = commands()
        self.ruled = {"approval": "untrusted", "approval.deny": DENY, "approval.allow": ALLOW}

    def time_decide_1000_calls(self) -> None:
        _pass(self.ruled, self.calls)


def line(f: dict[str, float]) -> str:
    return (f"approval         1,000 bash calls {f['rules_ms']:.1f} ms with 16 rules, "
            f"{f['none_ms']:.1f} ms with none: {f['cost_ms']:+.1f} ms")  # fmt: skip


if __name__ == "__main__":
    print(line(figures()))
