"""The component model's canonical ABI for the types of smith's WIT: sizes, alignments,
flattening to core values, and the component-level WAT of a type. Shared by the C
bindings (_cgen) and the core-module wrapper (_wrap), so both agree on one layout."""

from __future__ import annotations

from smith.wasm._wit import Type, World

MAX_FLAT_PARAMS = 16
MAX_FLAT_RESULTS = 1

_PRIM_SIZE = {
    "bool": 1, "u8": 1, "s8": 1, "u16": 2, "s16": 2, "u32": 4, "s32": 4, "char": 4,
    "f32": 4, "u64": 8, "s64": 8, "f64": 8, "string": 8,
}  # fmt: skip
_PRIM_FLAT = {
    "u64": ["i64"],
    "s64": ["i64"],
    "f32": ["f32"],
    "f64": ["f64"],
    "string": ["i32", "i32"],
}


def _align_to(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def size_align(world: World, t: Type) -> tuple[int, int]:
    """The canonical ABI size and alignment of `t` in linear memory."""
    if t.kind == "prim":
        size = _PRIM_SIZE[t.name]
        return size, 4 if t.name == "string" else size
    if t.kind == "list":
        return 8, 4
    if t.kind == "named":
        d = world.typedef(t.name)
        if d.kind == "enum":
            return (1, 1) if len(d.cases) <= 256 else (2, 2)
        return _record(world, [ft for _, ft in d.fields])
    if t.kind == "tuple":
        return _record(world, [a for a in t.args if a is not None])
    cases = [a for a in t.args if a is not None] if t.kind == "result" else [t.args[0]]
    align = max([size_align(world, c)[1] for c in cases if c is not None] + [1])
    payload = max([size_align(world, c)[0] for c in cases if c is not None] + [0])
    return _align_to(_align_to(1, align) + payload, align), align


def _record(world: World, fields: list[Type]) -> tuple[int, int]:
    size, align = 0, 1
    for f in fields:
        fs, fa = size_align(world, f)
        size = _align_to(size, fa) + fs
        align = max(align, fa)
    return _align_to(size, align), align


def flat(world: World, t: Type | None) -> list[str]:
    """The core value types `t` flattens to."""
    if t is None:
        return []
    if t.kind == "prim":
        return list(_PRIM_FLAT.get(t.name, ["i32"]))
    if t.kind == "list":
        return ["i32", "i32"]
    if t.kind == "named":
        d = world.typedef(t.name)
        if d.kind == "enum":
            return ["i32"]
        return [v for _, ft in d.fields for v in flat(world, ft)]
    if t.kind == "tuple":
        return [v for a in t.args for v in flat(world, a)]
    cases = list(t.args) if t.kind == "result" else [None, t.args[0]]
    joined: list[str] = []
    for case in cases:
        for i, v in enumerate(flat(world, case)):
            if i == len(joined):
                joined.append(v)
            elif joined[i] != v:
                joined[i] = "i32" if {joined[i], v} == {"i32", "f32"} else "i64"
    return ["i32", *joined]


def params_flat(world: World, params: tuple[tuple[str, Type], ...]) -> list[str] | None:
    """The core parameters of a function's parameters, or None when they pass in memory."""
    values = [v for _, t in params for v in flat(world, t)]
    return values if len(values) <= MAX_FLAT_PARAMS else None


def needs_memory(world: World, t: Type | None) -> bool:
    """Whether lifting or lowering `t` reads or writes linear memory (strings, lists)."""
    if t is None:
        return False
    if t.kind == "prim":
        return t.name == "string"
    if t.kind == "list":
        return True
    if t.kind == "named":
        d = world.typedef(t.name)
        return d.kind == "record" and any(needs_memory(world, ft) for _, ft in d.fields)
    return any(needs_memory(world, a) for a in t.args)


def wat_type(t: Type | None, named: dict[str, str]) -> str:
    """`t` in component WAT; `named` maps a WIT type name to its WAT type index."""
    if t is None:
        return ""
    if t.kind == "prim":
        return t.name
    if t.kind == "named":
        return named[t.name]
    if t.kind == "list":
        return f"(list {wat_type(t.args[0], named)})"
    if t.kind == "tuple":
        return "(tuple " + " ".join(wat_type(a, named) for a in t.args) + ")"
    if t.kind == "option":
        return f"(option {wat_type(t.args[0], named)})"
    ok, err = t.args
    parts = [wat_type(ok, named)] if ok is not None else []
    if err is not None:
        parts.append(f"(error {wat_type(err, named)})")
    return "(result" + "".join(" " + p for p in parts) + ")"
