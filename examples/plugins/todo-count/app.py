"""Tool count_todos: lists the tracked files with `git ls-files` (host `run`, granted
the command git) and reads each (host `read-file`, granted the project root), so every
effect it has goes through smith's sandbox and journal."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import host


class WitWorld(wit_world.WitWorld):
    def start(self, settings: str) -> None:
        return None

    def on_event(self, event: str) -> str:
        return "[]"

    def command(self, name: str, args: str) -> str:
        raise Err(f"todo-count has no command {name}")

    def call_tool(self, name: str, arguments: str) -> str:
        under = json.loads(arguments).get("path", "")
        listed = host.run("git ls-files -z -- " + (_quoted(under) if under else "."), 0)
        if listed.exit_code != 0:
            raise Err("git ls-files failed: " + listed.stderr.strip())
        counts = []
        for path in filter(None, listed.stdout.split("\0")):
            if host.cancelled():
                raise Err("cancelled")
            try:
                text = bytes(host.read_file(path)).decode("utf-8", "replace")
            except Err:
                continue  # not readable (too big, outside the grant): skip it
            n = sum("TODO" in line for line in text.splitlines())
            if n:
                counts.append(f"{n:5d} {path}")
        return "\n".join(counts) or "no TODO lines"

    def choose(self, policy: str, items: str) -> str:
        raise Err(f"todo-count has no queue policy {policy}")


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"
