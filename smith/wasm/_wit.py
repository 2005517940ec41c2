"""The plugin interface as data, read from wit/smith-plugin.wit (its one declaration).

    world = wit_world()                  # the `plugin` world of smith:plugin@1.0.0
    world.interfaces["host"].funcs       # the host functions, each with its `///` doc
    world.interfaces["types"].types      # records and enums the functions exchange
    world.exports                        # what smith calls: start, on-event, command, ...

Only the part of WIT the SDK uses is read (interfaces with records, enums, functions and
`use`; a world of imported interfaces and exported functions); anything else is an
error naming the line, so a change of the WIT that the generators do not know of fails
loudly instead of drifting. The help, docs/plugins.md's reference, the C bindings and
the host's table are all made from this (tests/test_wasm_sdk_drift.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

WIT_DIR = Path(__file__).resolve().parent / "wit"
WIT_FILE = WIT_DIR / "smith-plugin.wit"

PRIMITIVES = frozenset(
    {"bool", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f32", "f64", "char", "string"}
)


@dataclass(frozen=True, slots=True)
class Type:
    """A WIT type: `kind` is "prim" (name: string, u32, ...), "named" (a record or enum of
    an interface: name), "list", "tuple", "option" or "result" (args; a result's absent
    ok or err is None)."""

    kind: str
    name: str = ""
    args: tuple[Type | None, ...] = ()

    def __str__(self) -> str:
        if self.kind in ("prim", "named"):
            return self.name
        inner = ", ".join("_" if a is None else str(a) for a in self.args)
        if self.kind == "result":
            if self.args == (None, None):
                return "result"
            if self.args[1] is None:
                return f"result<{self.args[0]}>"
        return f"{self.kind}<{inner}>"


@dataclass(frozen=True, slots=True)
class TypeDef:
    """A record (fields) or an enum (cases) declared in an interface."""

    name: str
    kind: str  # "record" or "enum"
    doc: str
    fields: tuple[tuple[str, Type], ...] = ()
    cases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Func:
    """A function: an interface's (imported by the plugin: a host function) or one the
    world exports (the plugin implements it)."""

    name: str
    params: tuple[tuple[str, Type], ...]
    result: Type | None
    doc: str

    def signature(self) -> str:
        params = ", ".join(f"{n}: {t}" for n, t in self.params)
        return f"{self.name}: func({params})" + (f" -> {self.result}" if self.result else "")


@dataclass(frozen=True, slots=True)
class Interface:
    name: str
    doc: str
    types: dict[str, TypeDef] = field(default_factory=dict)
    funcs: dict[str, Func] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class World:
    """The package's world: its interfaces, what it imports and what it exports."""

    package: str  # "smith:plugin"
    version: str  # "1.0.0"
    name: str  # "plugin"
    doc: str
    interfaces: dict[str, Interface]
    imports: tuple[str, ...]  # interface names
    exports: dict[str, Func]

    def qualified(self, interface: str) -> str:
        """The name an interface is imported under: "smith:plugin/host@1.0.0"."""
        return f"{self.package}/{interface}@{self.version}"

    def typedef(self, name: str) -> TypeDef:
        for interface in self.interfaces.values():
            if name in interface.types:
                return interface.types[name]
        raise KeyError(name)

    @property
    def host(self) -> Interface:
        return self.interfaces["host"]


class WitError(ValueError):
    """The WIT uses something this reader does not know (the line says where)."""


_TOKEN = re.compile(
    r"(?P<doc>///[^\n]*)|(?P<comment>//[^\n]*)|(?P<space>\s+)"
    r"|(?P<arrow>->)|(?P<word>%?[A-Za-z_][A-Za-z0-9_-]*)|(?P<number>[0-9][0-9.]*)"
    r"|(?P<punct>[{}();:,<>.=@/*])"
)


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, line)
        pos, line = 0, 1
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise WitError(f"line {line}: unexpected {text[pos]!r}")
            kind = m.lastgroup or ""
            if kind == "doc":
                self.tokens.append(("doc", m.group()[3:].strip(), line))
            elif kind not in ("comment", "space"):
                self.tokens.append((kind, m.group().lstrip("%"), line))
            line += m.group().count("\n")
            pos = m.end()
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def take(self, want: str | None = None) -> str:
        if self.at >= len(self.tokens):
            raise WitError(f"the WIT ends where {want or 'more'} was expected")
        kind, text, line = self.tokens[self.at]
        if kind == "doc" or (want is not None and text != want):
            raise WitError(f"line {line}: expected {want or 'a name'}, found {text!r}")
        self.at += 1
        return text

    def docs(self) -> str:
        lines = []
        while self.at < len(self.tokens) and self.tokens[self.at][0] == "doc":
            lines.append(self.tokens[self.at][1])
            self.at += 1
        return " ".join(x for x in lines if x)

    def line(self) -> int:
        return self.tokens[min(self.at, len(self.tokens) - 1)][2]

    def type(self) -> Type:
        name = self.take()
        if name in ("list", "option", "tuple", "result") and self.peek() == "<":
            self.take("<")
            args: list[Type | None] = []
            while True:
                if self.peek() == "_":
                    self.take()
                    args.append(None)
                else:
                    args.append(self.type())
                if self.peek() == ">":
                    self.take()
                    break
                self.take(",")
            if name == "result" and len(args) == 1:
                args.append(None)
            return Type(name, args=tuple(args))
        if name == "result":
            return Type("result", args=(None, None))
        return Type("prim" if name in PRIMITIVES else "named", name)

    def func(self, name: str, doc: str) -> Func:
        self.take("func")
        self.take("(")
        params = []
        while self.peek() != ")":
            pname = self.take()
            self.take(":")
            params.append((pname, self.type()))
            if self.peek() == ",":
                self.take()
        self.take(")")
        result = None
        if self.peek() == "->":
            self.take()
            result = self.type()
        self.take(";")
        return Func(name, tuple(params), result, doc)


def parse(text: str) -> World:
    """The world of a WIT text (one package, one world)."""
    r = _Reader(text)
    r.docs()
    r.take("package")
    package = r.take() + r.take(":") + r.take()
    r.take("@")
    version = ""
    while r.peek() != ";":
        version += r.take()
    r.take(";")
    interfaces: dict[str, Interface] = {}
    world: World | None = None
    while r.at < len(r.tokens):
        doc = r.docs()
        if r.at >= len(r.tokens):
            break
        kind, name = r.take(), r.take()
        r.take("{")
        if kind == "interface":
            interfaces[name] = _interface(r, name, doc)
        elif kind == "world":
            imports, exports = _world(r)
            world = World(package, version, name, doc, interfaces, imports, exports)
        else:
            raise WitError(f"line {r.line()}: `{kind}` is not read by smith's WIT reader")
    if world is None:
        raise WitError("the WIT declares no world")
    return world


def _interface(r: _Reader, name: str, doc: str) -> Interface:
    iface = Interface(name, doc)
    while r.peek() != "}":
        item_doc = r.docs()
        word = r.take()
        if word == "use":
            while r.take() != ";":  # `use types.{a, b};`: the names are looked up by name
                pass
        elif word == "record":
            tname = r.take()
            r.take("{")
            fields = []
            while r.peek() != "}":
                r.docs()
                fname = r.take()
                r.take(":")
                fields.append((fname, r.type()))
                if r.peek() == ",":
                    r.take()
            r.take("}")
            iface.types[tname] = TypeDef(tname, "record", item_doc, fields=tuple(fields))
        elif word == "enum":
            tname = r.take()
            r.take("{")
            cases = []
            while r.peek() != "}":
                r.docs()
                cases.append(r.take())
                if r.peek() == ",":
                    r.take()
            r.take("}")
            iface.types[tname] = TypeDef(tname, "enum", item_doc, cases=tuple(cases))
        elif r.peek() == ":":
            r.take(":")
            iface.funcs[word] = r.func(word, item_doc)
        else:
            raise WitError(f"line {r.line()}: `{word}` is not read by smith's WIT reader")
    r.take("}")
    return iface


def _world(r: _Reader) -> tuple[tuple[str, ...], dict[str, Func]]:
    imports: list[str] = []
    exports: dict[str, Func] = {}
    while r.peek() != "}":
        doc = r.docs()
        word = r.take()
        name = r.take()
        if word == "import" and r.peek() == ";":
            r.take(";")
            imports.append(name)
        elif word == "export" and r.peek() == ":":
            r.take(":")
            exports[name] = r.func(name, doc)
        else:
            raise WitError(f"line {r.line()}: `{word} {name}` is not read by smith's WIT reader")
    r.take("}")
    return tuple(imports), exports


@functools.cache
def wit_world() -> World:
    """The plugin world of smith's WIT (read once)."""
    return parse(WIT_FILE.read_text(encoding="utf-8"))
