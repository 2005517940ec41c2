"""Queue policy `newest-first`: of the queued messages, deliver the newest one now.

Select it with `queue { steer "newest-first"; }` (or follow-up) in config.kdl."""

import json

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def start(self, settings: str) -> None:
        return None

    def on_event(self, event: str) -> str:
        return "[]"

    def command(self, name: str, args: str) -> str:
        raise Err(f"newest-first has no command {name}")

    def call_tool(self, name: str, arguments: str) -> str:
        raise Err(f"newest-first has no tool {name}")

    def choose(self, policy: str, items: str) -> str:
        queued = json.loads(items)
        return json.dumps([queued[-1]["id"]] if queued else [])
