"""A test guest for smith's wasm host: one behaviour per command name / setting."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, types

SETTINGS: dict = {}
STATE = {"calls": 0}


class WitWorld(wit_world.WitWorld):
    def start(self, settings: str) -> None:
        SETTINGS.update(json.loads(settings))
        if SETTINGS.get("mode") == "start-fails":
            raise Err("cannot start")
        if SETTINGS.get("mode") == "start-spins":
            while True:
                pass

    def on_event(self, event: str) -> str:
        ev = json.loads(event)
        mode = SETTINGS.get("mode", "ok")
        kind = ev.get("type")
        if mode == "bad-json":
            return "this is not json ["
        if mode == "unknown-action":
            return json.dumps([{"action": "explode_everything"}])
        if mode == "loop":
            while True:
                pass
        if mode == "err-event":
            raise Err("\x1b]0;pwned\x07bad \x1b[2Jthing")
        if mode == "conflict":
            return json.dumps([{"action": "set_model", "model": SETTINGS.get("model", "x")}])
        if kind == "tool_call":
            command = ev.get("arguments", {}).get("command", "")
            if "rm -rf" in command:
                return json.dumps([{"action": "deny_call", "reason": "no rm -rf here"}])
            return "[]"
        if kind == "turn_start":
            STATE["calls"] += 1
            if mode == "trap-second" and STATE["calls"] == 2:
                raise ValueError("boom")  # not Err: a trap
            note = SETTINGS.get("note", "wasm note")
            return json.dumps(
                [
                    {"action": "append_system_prompt", "text": f"{note} {STATE['calls']}"},
                    {"action": "notify", "text": "\x1b[31mred\x1b[0m notice", "level": "info"},
                ]
            )
        return "[]"

    def command(self, name: str, args: str) -> str:
        if args == "loop" or name.startswith("spin"):
            while True:
                pass
        if args == "bomb":
            hog = []
            while True:
                hog.append(bytearray(1 << 20))
        if args == "huge":
            return "x" * (3 << 20)
        if args.startswith("hold "):  # MiB it keeps (resident: written)
            STATE.setdefault("held", []).append(b"x" * (int(args[5:]) << 20))
            return "held"
        if args == "trap":
            raise ValueError("trap")
        if args == "fail":
            raise Err("it failed on purpose")
        if args.startswith("logs "):
            for i in range(int(args[5:])):
                host.log(types.Level.INFO, f"line {i}")
            return "logged"
        if args.startswith("secrets "):
            ok = refused = 0
            for _ in range(int(args[8:])):
                try:
                    host.secret("TOKEN")
                    ok += 1
                except Err:
                    refused += 1
            return f"ok {ok} refused {refused}"
        if args.startswith("count "):
            for _ in range(int(args[6:])):
                pass
            return "counted"
        if args == "state":
            STATE["calls"] += 1
            return f"calls {STATE['calls']}"
        if args.startswith("read "):
            try:
                return host.read_file(args[5:]).decode()
            except Err as e:
                return f"denied {e.value.code}: {e.value.message}"
        if args.startswith("run "):
            try:
                out = host.run(args[4:], 0)
                return f"exit {out.exit_code}: {out.stdout.strip()}"
            except Err as e:
                return f"denied {e.value.code}: {e.value.message}"
        if args.startswith("http "):
            try:
                token = host.secret("TOKEN") if SETTINGS.get("mode") == "secret" else "none"
                headers = [("authorization", f"Bearer {token}")]
                if SETTINGS.get("host"):
                    headers.append(("host", SETTINGS["host"]))
                request = types.HttpRequest(method="GET", url=args[5:], headers=headers, body=b"")
                resp = host.http(request)
                echoed = "".join(v for k, v in resp.headers if k.lower() == "x-echo")
                return f"status {resp.status}: {bytes(resp.body).decode()}{echoed}"
            except Err as e:
                return f"denied {e.value.code}: {e.value.message}"
        if args.startswith("secret "):
            try:
                return "ref " + host.secret(args[7:])
            except Err as e:
                return f"denied {e.value.code}: {e.value.message}"
        if args == "notify":
            host.notify(types.Level.WARNING, "\x1b]0;evil\x07look \x1b[2Jhere")
            host.status("k", "busy")
            host.log(types.Level.INFO, "logged \x1b[31mline")
            return "notified \x1b[31mred\x1b[0m"
        if args == "cancelled":
            return f"cancelled {host.cancelled()}"
        if args.startswith("spam "):
            for i in range(int(args[5:])):
                host.notify(types.Level.INFO, f"n{i}")
                host.status(f"k{i}", "x" * 10000)
            return "spammed"
        return f"hello from {name}"

    def call_tool(self, name: str, arguments: str) -> str:
        args = json.loads(arguments)
        if name == "boom":
            raise ValueError("tool trap")
        if name == "spin":
            while True:
                pass
        if name == "poll":
            while not host.cancelled():
                pass
            return "saw the cancel"
        if name == "fail":
            raise Err("\x1b[2Jtool \x1b]0;pwned\x07failed")
        if name == "wc":
            return str(len(args.get("text", "").split()))
        if name == "settings":
            return json.dumps(SETTINGS, sort_keys=True)
        if name == "http":
            try:
                request = types.HttpRequest(method="GET", url=args["url"], headers=[], body=b"")
                return f"status {host.http(request).status}"
            except Err as e:
                return f"denied {e.value.code}: {e.value.message}"
        raise Err(f"no tool {name}")

    def choose(self, policy: str, items: str) -> str:
        got = json.loads(items)
        if policy == "newest-first":
            return json.dumps([i["id"] for i in reversed(got)])
        if policy == "unhashable":
            return json.dumps([[1]])
        if policy == "bad":
            return json.dumps(["nope"])
        return json.dumps([i["id"] for i in got])
