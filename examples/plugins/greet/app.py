"""/greet NAME: answers "<greeting>, NAME!" (the greeting is the plugin's setting)."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, types


class WitWorld(wit_world.WitWorld):
    greeting = "hello"

    def start(self, settings: str) -> None:
        WitWorld.greeting = json.loads(settings).get("greeting", "hello")

    def on_event(self, event: str) -> str:
        return "[]"

    def command(self, name: str, args: str) -> str:
        who = args.strip() or "world"
        host.log(types.Level.INFO, f"greeting {who}")
        return f"{WitWorld.greeting}, {who}!"

    def call_tool(self, name: str, arguments: str) -> str:
        raise Err(f"greet has no tool {name}")

    def choose(self, policy: str, items: str) -> str:
        raise Err(f"greet has no queue policy {policy}")
