"""`smith plugins help [TOPIC]` / `smith help sdk`: the SDK described from its
declarations, never written twice. The WIT (smith/wasm/wit/smith-plugin.wit) gives the
exports, the host functions and their types with their `///` docs, and which events
on-event is called for; smith.protocol gives each event's and action's description and
fields (the same as `smith rpc --schema`); smith.ui the UI intents'. docs/plugins.md's
"Reference" section is made from the same text (`python -m smith.wasm` rewrites it;
tests/test_wasm_sdk_drift.py fails when it drifts).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import Any

from smith.diagnostics import DiagnosticKind, Source
from smith.wasm._cgen import c_prototypes, c_type, snake
from smith.wasm._wit import Func, Type, World, wit_world

TOPICS = ("events", "actions", "host", "exports", "manifest")
WIDTH = 88

UNKNOWN_SDK_TOPIC = DiagnosticKind(
    "plugin.help-topic",
    what="{topic} is not a topic of the SDK's help",
    why="`smith plugins help TOPIC` describes one of: {topics}",
    fix="{hint} (`smith plugins help` shows all of them)",
)

# An event on-event may get that no protocol declaration describes (it is never emitted).
_HANDLER_ONLY_EVENTS = {
    "session_end": ("the runtime closes its session (handlers only: never emitted)", "`session`"),
}

DOCS_BEGIN = (
    "<!-- sdk reference: generated from smith/wasm/wit/smith-plugin.wit (python -m smith.wasm) -->"
)
DOCS_END = "<!-- /sdk reference -->"


def _wrap(text: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(
        " ".join(text.split()), WIDTH, initial_indent=indent, subsequent_indent=indent
    )


def _doc(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split())


def plugin_events(world: World) -> list[str]:
    """The events on-event may be called for, as the WIT's doc of on-event names them."""
    from smith.protocol import EVENTS, HOOK_EVENTS

    named = re.findall(r"`([a-z_]+)`", world.exports["on-event"].doc)
    known = {*EVENTS, *HOOK_EVENTS, *_HANDLER_ONLY_EVENTS}
    return [n for n in dict.fromkeys(named) if n in known]


def event_docs(world: World) -> dict[str, tuple[str, str]]:
    """{event type: (description, fields)} of the events a plugin can get."""
    from smith.protocol import EVENTS, HOOK_EVENTS

    out = {}
    for name in plugin_events(world):
        if name in _HANDLER_ONLY_EVENTS:
            out[name] = _HANDLER_ONLY_EVENTS[name]
            continue
        cls: Any = EVENTS.get(name) or HOOK_EVENTS[name]
        fields = getattr(cls, "fields_doc", None) or ", ".join(
            f"`{f}`" for f in cls.__struct_fields__ if f != "submission"
        )
        out[name] = (_doc(cls), fields)
    return out


def action_docs() -> dict[str, tuple[str, str, str]]:
    """{action: (where it is taken, description, fields)}: the safe-point actions, the
    hook actions and the UI intents a plugin's on-event may return."""
    from smith.protocol.actions import ACTION_TYPES, HOOK_ACTIONS
    from smith.ui import Hatch, Notify, Status

    out: dict[str, tuple[str, str, str]] = {}

    def fields(cls: Any) -> str:
        return ", ".join(f"`{f}`" for f in cls.__struct_fields__) or "none"

    for action in ACTION_TYPES:
        out[str(action.__struct_config__.tag)] = ("a safe point", _doc(action), fields(action))
    for hook, classes in HOOK_ACTIONS.items():
        for cls in classes:
            tag = str(cls.__struct_config__.tag)  # type: ignore[attr-defined]
            where = out[tag][0] + f", {hook}" if tag in out else f"the {hook} hook"
            out[tag] = (where, _doc(cls), fields(cls))
    intents = ((Notify, ("level", "text")), (Status, ("key", "text")),
               (Hatch, ("capability", "value")))  # fmt: skip
    for intent, names in intents:
        shown = ", ".join(f"`{n}`" for n in names)
        out[str(intent.kind)] = ("anywhere (a UI intent)", _doc(intent), shown)
    return out


def _events(world: World) -> list[str]:
    out = [
        "EVENTS: what on-event is called with",
        *_wrap(
            'plugin.kdl\'s `events` names the ones a plugin gets (e.g. `events "tool_call" '
            '"turn_start"`). Each comes as a JSON object whose `type` says which, with the '
            "fields of the typed protocol (`smith rpc --schema`: $defs/Event). At a safe "
            "point a plugin returns actions; at a hook (input, tool_call, tool_result) its "
            "decision about that one thing.",
            "  ",
        ),
    ]
    for name, (doc, fields) in event_docs(world).items():
        out.append(f"  {name}")
        out += _wrap(f"{doc.rstrip('.')}. Fields: {fields}.")
    return out


def _actions(world: World) -> list[str]:
    out = [
        "ACTIONS: what on-event returns",
        *_wrap(
            'A JSON list of objects, each with `action` naming it: `[{"action": '
            '"append_system_prompt", "text": "..."}]`; `[]` for none. An action not '
            "allowed where it is returned, or not valid, is a fault naming the plugin.",
            "  ",
        ),
    ]
    for name, (where, doc, fields) in action_docs().items():
        out.append(f"  {name}  ({where}; fields: {fields})")
        out += _wrap(doc)
    return out


def _host(world: World) -> list[str]:
    iface = world.host
    protos = c_prototypes(world)
    out = ["HOST FUNCTIONS: what a plugin may ask of smith", *_wrap(iface.doc, "  ")]
    for f in iface.funcs.values():
        out.append(f"  {f.signature()}")
        out.append(f"    Python: {_py_call(world, f, 'host.')}")
        out.append(f"    C: {protos[f.name]}")
        out += _wrap(f.doc)
    out.append("  Types:")
    for iname in world.interfaces:
        for d in world.interfaces[iname].types.values():
            body = (
                ", ".join(f"{n}: {t}" for n, t in d.fields)
                if d.kind == "record"
                else " | ".join(d.cases)
            )
            out.append(f"  {d.kind} {d.name} {{ {body} }}   C: {c_type(world, _named(d.name))}")
            out += _wrap(d.doc)
    return out


def _named(name: str) -> Type:
    return Type("named", name)


_PY_PRIM = {"string": "str", "bool": "bool", "char": "str", "f32": "float", "f64": "float"}


def _py_type(t: Type | None) -> str:
    """How componentize-py's bindings show a WIT type in Python."""
    if t is None:
        return "None"
    if t.kind == "prim":
        return _PY_PRIM.get(t.name, "int")
    if t.kind == "named":
        return "types." + "".join(p.capitalize() for p in t.name.split("-"))
    if t.kind == "list":
        return "bytes" if t.args[0] == Type("prim", "u8") else f"List[{_py_type(t.args[0])}]"
    if t.kind == "tuple":
        return "Tuple[" + ", ".join(_py_type(a) for a in t.args) + "]"
    if t.kind == "option":
        return f"Optional[{_py_type(t.args[0])}]"
    return _py_type(t.args[0])  # a result: its ok value, the error raised as Err


def _py_call(world: World, f: Func, prefix: str, *, method: bool = False) -> str:
    params = ([] if not method else ["self"]) + [f"{snake(n)}: {_py_type(t)}" for n, t in f.params]
    text = f"{prefix}{snake(f.name)}({', '.join(params)}) -> {_py_type(f.result)}"
    if f.result is not None and f.result.kind == "result" and f.result.args[1] is not None:
        text += f"  (error: raises Err({_py_type(f.result.args[1])}))"
    return text


def _exports(world: World) -> list[str]:
    protos = c_prototypes(world)
    out = [
        "EXPORTS: what smith calls in a plugin",
        *_wrap(
            "Python: the methods of `class WitWorld(wit_world.WitWorld)` in app.py (raise "
            "componentize_py_types.Err(text) for the error case). C: the handlers of "
            "sdk/smith_plugin.h, `bool smith_NAME(args..., *ret, *err)`; one a plugin does "
            "not define answers with a default. Zig: the same handlers as `export fn`, with "
            "the types of sdk/smith_plugin.zig (translated from the header).",
            "  ",
        ),
    ]
    for f in world.exports.values():
        out.append(f"  {f.signature()}")
        out.append(f"    Python: def {_py_call(world, f, '', method=True)}")
        out.append(f"    C: {protos[f.name]}")
        out += _wrap(f.doc)
    return out


def _manifest(world: World) -> list[str]:
    lines = [
        ('name "NAME"', "the plugin's name (and its `/NAME` command's, by convention)"),
        ('version "0.1.0"', "its version"),
        ('description "..."', "one line shown by `smith plugins list` and `info`"),
        ('module "plugin.wasm"', "the component `smith plugins build` writes"),
        ('sdk "1"', "the SDK version it was built for"),
        ('build "python"', 'how it is built: "python" (app.py), "c" (*.c) or "zig" (plugin.zig)'),
        (
            'grants { path "docs"; command "git"; host "api.github.com"; secret "TOKEN" }',
            "what its host functions may reach; shown and asked at install",
        ),
        ('events "tool_call" "turn_start"', "the events on-event is called for"),
        ('command "NAME" description="..." usage="[ARGS]"', "a `/NAME` command (export command)"),
        (
            'tool "NAME" description="..." effect="reads" parameters="schema.json"',
            'a tool for the model (export call-tool); shown-by="ARG" and '
            'result="change|command|plain" say how frontends show its calls',
        ),
        ('queue-policy "NAME"', "a queue policy (export choose)"),
        (
            'option "KEY" type="string" default="..." description="..."',
            "a setting, plugins.NAME.KEY in config.kdl (given to start)",
        ),
        ('key "ctrl+k" command="NAME"', "a key for a command or an app action"),
        ('theme "NAME" { primary "#1e90ff"; ... }', "a theme for the app (tui.theme NAME)"),
        (
            'prompt "system.NAME" "..." | prompt "tool.NAME" file="x.md"',
            "a part of the system prompt, or a line of guidance sent while tool NAME is active",
        ),
        (
            'layout "NAME" "status" "transcript" "input"',
            "the app's regions, top to bottom (tui.layout NAME)",
        ),
        (
            'secret-route "TOKEN" { host "api.github.com"; command "gh"; plaintext true }',
            "where a granted secret's value may go (secret routing); shown and asked at install",
        ),
        (
            'frontend "clipboard" "open-url" "bell"',
            "the escape hatches it uses (host hatch); shown and asked at install",
        ),
    ]
    out = ["MANIFEST: plugin.kdl (docs/plugins.md has all of it)"]
    for node, what in lines:
        out.append(f"  {node}")
        out += _wrap(what)
    return out


_SECTIONS: dict[str, Callable[[World], list[str]]] = {
    "events": _events,
    "actions": _actions,
    "host": _host,
    "exports": _exports,
    "manifest": _manifest,
}


def sdk_help(topic: str | None = None) -> str:
    """The SDK's help: one topic of TOPICS, or (None) all of them."""
    world = wit_world()
    if topic is not None and topic not in _SECTIONS:
        from smith.diagnostics import did_you_mean

        hint = did_you_mean(topic, TOPICS, template="`smith plugins help {}`")
        raise UNKNOWN_SDK_TOPIC.error(
            value=topic,
            source=Source("argument", topic),
            topic=repr(topic),
            topics=", ".join(TOPICS),
            hint=hint,
        )
    if topic is not None:
        return "\n".join(_SECTIONS[topic](world)) + "\n"
    head = [
        f"smith plugin SDK {world.version} (world {world.package}/{world.name}): a plugin is a "
        "WebAssembly component",
        *_wrap(
            "that smith calls through its exports, with events and actions as JSON in the "
            "typed protocol's form, and that reaches out only through the host functions its "
            "grants allow. `smith plugins new NAME --lang python|c` makes one; `smith plugins "
            f"build` builds it. Topics: {', '.join(TOPICS)} (`smith plugins help TOPIC`).",
            "",
        ),
    ]
    body = ["\n".join(fn(world)) for fn in _SECTIONS.values()]
    return "\n\n".join(["\n".join(head), *body]) + "\n"


def reference_markdown() -> str:
    """docs/plugins.md's generated Reference section (between DOCS_BEGIN and DOCS_END)."""
    world = wit_world()
    parts = []
    for topic, fn in _SECTIONS.items():
        parts.append(f"### {topic.capitalize()}\n\n```text\n" + "\n".join(fn(world)) + "\n```\n")
    return "\n".join(parts)


def with_reference(text: str) -> str:
    """`text` (docs/plugins.md) with its generated reference replaced by the current one."""
    pattern = re.compile(re.escape(DOCS_BEGIN) + r"\n.*?" + re.escape(DOCS_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"docs/plugins.md has no {DOCS_BEGIN} ... {DOCS_END} section")
    return pattern.sub(lambda _: f"{DOCS_BEGIN}\n{reference_markdown()}{DOCS_END}", text, count=1)
