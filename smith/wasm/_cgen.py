"""C bindings for a plugin, generated from the WIT: `smith_plugin.h` (the types, the host
functions, the handlers a plugin may define) and `smith_plugin.c` (the canonical ABI
glue: the lowered imports, the exports smith calls with weak default handlers, so a
plugin defines only what it needs, `cabi_realloc` and the post-return functions that
free what a handler returned).

A C struct here has the canonical ABI's memory layout on wasm32 (pointers and size_t
are 4 bytes, `bool` 1, a result is `{bool is_err; union {ok; err} val}`), so the glue
reads a host function's return area and writes an export's through the structs.
`smith plugins build` writes both files into the package's sdk/ and compiles them with
its sources; tests/test_wasm_sdk_drift.py checks they are what the WIT makes.
"""

from __future__ import annotations

from smith.wasm._abi import MAX_FLAT_RESULTS, flat, params_flat
from smith.wasm._wit import Func, Type, World

HEADER = "smith_plugin.h"
SOURCE = "smith_plugin.c"

_C_PRIM = {
    "bool": "bool", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t", "f32": "float",
    "f64": "double", "char": "uint32_t", "string": "smith_string_t",
}  # fmt: skip
_CORE_C = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}
# What an export answers when the plugin does not define its handler.
_DEFAULT_OK = {"on-event": "[]"}


# Names a C field cannot have: keywords, and the standard library's macros (a record
# field `stdout` would be rewritten by <stdio.h>): such a field gets a trailing "_".
_C_RESERVED = frozenset(
    {
        *("auto", "break", "case", "char", "const", "continue", "default", "do", "double"),
        *("else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long"),
        *("register", "restrict", "return", "short", "signed", "sizeof", "static", "struct"),
        *("switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool"),
        *("true", "false", "stdin", "stdout", "stderr", "errno", "assert", "NULL", "EOF"),
    }
)


def snake(name: str) -> str:
    return name.replace("-", "_")


def field_name(name: str) -> str:
    """A WIT field or parameter name as a C identifier."""
    c = snake(name)
    return c + "_" if c in _C_RESERVED else c


def _mangle(t: Type | None) -> str:
    if t is None:
        return "void"
    if t.kind in ("prim", "named"):
        return snake(t.name)
    if t.kind == "tuple":
        return f"tuple{len(t.args)}_" + "_".join(_mangle(a) for a in t.args)
    return t.kind + "_" + "_".join(_mangle(a) for a in t.args)


def c_type(world: World, t: Type) -> str:
    if t.kind == "prim":
        return _C_PRIM[t.name]
    return f"smith_{_mangle(t)}_t"


def _owns(world: World, t: Type | None) -> bool:
    """Whether a value of `t` holds memory to free."""
    if t is None or t.kind == "prim":
        return t is not None and t.name == "string"
    if t.kind == "list":
        return True
    if t.kind == "named":
        d = world.typedef(t.name)
        return d.kind == "record" and any(_owns(world, ft) for _, ft in d.fields)
    return any(_owns(world, a) for a in t.args)


class _Gen:
    def __init__(self, world: World) -> None:
        self.world = world
        self.done: set[str] = set()
        self.typedefs: list[str] = []
        self.frees: list[str] = []  # definitions of smith_X_free
        self.free_decls: list[str] = []

    # -- types -----------------------------------------------------------------------
    def need(self, t: Type | None) -> None:
        """Declare `t` (and what it is made of) once, in dependency order."""
        if t is None or (t.kind == "prim" and t.name != "string"):
            return
        name = c_type(self.world, t)
        if name in self.done:
            return
        for a in t.args:
            self.need(a)
        if t.kind == "named":
            d = self.world.typedef(t.name)
            for _, ft in d.fields:
                self.need(ft)
        self.done.add(name)
        self.typedefs.append(self._typedef(t, name))
        if _owns(self.world, t) and name != "smith_string_t":  # its free is a helper
            self.free_decls.append(f"void {name[:-2]}_free({name} *x);")
            body = "\n".join("  " + s for s in self.free_stmts(t, "(*x)"))
            self.frees.append(f"void {name[:-2]}_free({name} *x) {{\n{body}\n}}")

    def _typedef(self, t: Type, name: str) -> str:
        w = self.world
        if t.kind == "prim":  # string
            return "typedef struct { char *ptr; size_t len; } smith_string_t;"
        if t.kind == "list":
            elem = t.args[0]
            assert elem is not None
            return f"typedef struct {{ {c_type(w, elem)} *ptr; size_t len; }} {name};"
        if t.kind == "tuple":
            fields = " ".join(f"{c_type(w, a)} f{i};" for i, a in enumerate(t.args) if a)
            return f"typedef struct {{ {fields} }} {name};"
        if t.kind == "option":
            assert t.args[0] is not None
            return f"typedef struct {{ bool is_some; {c_type(w, t.args[0])} val; }} {name};"
        if t.kind == "result":
            ok, err = t.args
            members = (f" {c_type(w, ok)} ok;" if ok else "") + (
                f" {c_type(w, err)} err;" if err else ""
            )
            val = f" union {{{members} }} val;" if members else ""
            return f"typedef struct {{ bool is_err;{val} }} {name};"
        d = w.typedef(t.name)
        doc = f"/* {d.doc} */\n" if d.doc else ""
        if d.kind == "enum":
            upper = f"SMITH_{snake(d.name).upper()}"
            cases = "\n".join(
                f"#define {upper}_{snake(c).upper()} {i}" for i, c in enumerate(d.cases)
            )
            return f"{doc}typedef uint8_t {name};\n{cases}"
        fields = "\n".join(f"  {c_type(w, ft)} {field_name(fn)};" for fn, ft in d.fields)
        return f"{doc}typedef struct {{\n{fields}\n}} {name};"

    def free_stmts(self, t: Type | None, x: str) -> list[str]:
        w = self.world
        if t is None or not _owns(w, t):
            return []
        if t.kind in ("prim", "list"):
            out = []
            elem = t.args[0] if t.kind == "list" else None
            inner = self.free_stmts(elem, f"{x}.ptr[i]")
            if inner:
                out.append(f"for (size_t i = 0; i < {x}.len; i++) {{ {' '.join(inner)} }}")
            return [*out, f"free({x}.ptr); {x}.ptr = NULL; {x}.len = 0;"]
        if t.kind == "named":
            fields = w.typedef(t.name).fields
            return [s for fn, ft in fields for s in self.free_stmts(ft, f"{x}.{field_name(fn)}")]
        if t.kind == "tuple":
            return [s for i, a in enumerate(t.args) for s in self.free_stmts(a, f"{x}.f{i}")]
        if t.kind == "option":
            some = " ".join(self.free_stmts(t.args[0], f"{x}.val"))
            return [f"if ({x}.is_some) {{ {some} }}"]
        ok = " ".join(self.free_stmts(t.args[0], f"{x}.val.ok")) or ";"
        err = " ".join(self.free_stmts(t.args[1], f"{x}.val.err")) or ";"
        return [f"if ({x}.is_err) {{ {err} }} else {{ {ok} }}"]

    # -- flattening ------------------------------------------------------------------
    def lower(self, t: Type, x: str) -> list[str]:
        """C expressions of the core values `x` (of WIT type `t`) flattens to."""
        if t.kind in ("prim", "list"):
            if t.kind == "list" or t.name == "string":
                return [f"(int32_t){x}.ptr", f"(int32_t){x}.len"]
            return [f"(int64_t){x}" if t.name in ("u64", "s64") else f"(int32_t){x}"]
        if t.kind == "named":
            d = self.world.typedef(t.name)
            if d.kind == "enum":
                return [f"(int32_t){x}"]
            return [e for fn, ft in d.fields for e in self.lower(ft, f"{x}.{field_name(fn)}")]
        if t.kind == "tuple":
            return [e for i, a in enumerate(t.args) if a for e in self.lower(a, f"{x}.f{i}")]
        raise NotImplementedError(f"passing a {t} to the host is not generated")

    def lift(self, t: Type, values: list[str]) -> str:
        """A C expression of type `t` from core values (consumed from `values`)."""
        if t.kind == "list" or (t.kind == "prim" and t.name == "string"):
            elem = "char" if t.kind == "prim" else c_type(self.world, t.args[0])  # type: ignore[arg-type]
            ptr, n = values.pop(0), values.pop(0)
            return f"({c_type(self.world, t)}){{ ({elem} *)(uintptr_t){ptr}, (size_t){n} }}"
        if t.kind == "prim" or (t.kind == "named" and self.world.typedef(t.name).kind == "enum"):
            return f"({c_type(self.world, t)}){values.pop(0)}"
        if t.kind == "named":
            d = self.world.typedef(t.name)
            parts = ", ".join(self.lift(ft, values) for _, ft in d.fields)
            return f"({c_type(self.world, t)}){{ {parts} }}"
        raise NotImplementedError(f"receiving a {t} from the host is not generated")

    # -- host functions --------------------------------------------------------------
    def host_func(self, iface: str, f: Func) -> tuple[str, str]:
        """(declaration, definition) of the C function calling host function `f`."""
        w = self.world
        for _, t in f.params:
            self.need(t)
        self.need(f.result)
        core = params_flat(w, f.params)
        if core is None:
            raise NotImplementedError(f"{f.name}: parameters passed in memory are not generated")
        cname = f"smith_{snake(iface)}_{snake(f.name)}"
        params = [f"{c_type(w, t)} {field_name(n)}" for n, t in f.params]
        args = [e for n, t in f.params for e in self.lower(t, field_name(n))]
        rflat = flat(w, f.result)
        imp = f"__smith_import_{snake(iface)}_{snake(f.name)}"
        attr = f'__attribute__((import_module("{w.qualified(iface)}"), import_name("{f.name}")))'
        retptr = len(rflat) > MAX_FLAT_RESULTS
        core_params = [_CORE_C[v] for v in core] + (["int32_t"] if retptr else [])
        core_ret = _CORE_C[rflat[0]] if rflat and not retptr else "void"
        extern = f"{attr}\nextern {core_ret} {imp}({', '.join(core_params) or 'void'});"
        r = f.result
        body: list[str] = []
        if r is None:
            ret_c = "void"
            body.append(f"{imp}({', '.join(args)});")
        elif not retptr:
            ret_c = c_type(w, r)
            body.append(
                f"return ({ret_c}){imp}({', '.join(args)}){' != 0' if ret_c == 'bool' else ''};"
            )
        else:
            body.append(f"{c_type(w, r)} r;")
            body.append(f"{imp}({', '.join([*args, '(int32_t)&r'])});")
            if r.kind == "result":
                ok, err = r.args
                ret_c = "bool"
                if ok is not None:
                    params.append(f"{c_type(w, ok)} *ret")
                    body.append("if (!r.is_err) *ret = r.val.ok;")
                if err is not None:
                    params.append(f"{c_type(w, err)} *err")
                    body.append("if (r.is_err) *err = r.val.err;")
                body.append("return !r.is_err;")
            else:
                ret_c = "void"
                params.append(f"{c_type(w, r)} *ret")
                body.append("*ret = r;")
        sig = f"{ret_c} {cname}({', '.join(params) or 'void'})"
        doc = f"/* {f.signature()}\n   {f.doc} */\n" if f.doc else ""
        body_text = "\n".join("  " + b for b in body)
        return f"{doc}{sig};", f"{extern}\n{sig} {{\n{body_text}\n}}"

    # -- exports ---------------------------------------------------------------------
    def export_func(self, f: Func) -> tuple[str, str]:
        w = self.world
        for _, t in f.params:
            self.need(t)
        self.need(f.result)
        core = params_flat(w, f.params)
        r = f.result
        if core is None or r is None or r.kind != "result":
            raise NotImplementedError(f"{f.name}: only exports returning a result are generated")
        ok, err = r.args
        cname = f"smith_{snake(f.name)}"
        params = [f"{c_type(w, t)} {field_name(n)}" for n, t in f.params]
        if ok is not None:
            params.append(f"{c_type(w, ok)} *ret")
        if err is not None:
            params.append(f"{c_type(w, err)} *err")
        sig = f"bool {cname}({', '.join(params)})"
        decl = (
            f"/* export {f.signature()}\n   {f.doc}\n   Define it to handle the call: return true "
            "with *ret set (ok), or false with *err set. */\n"
            f"{sig};"
        )
        default_ok = _DEFAULT_OK.get(f.name)
        if default_ok is not None and ok is not None:
            default = f'smith_string_set(ret, "{default_ok}");\n  return true;'
        elif ok is None:
            default = "return true;"
        else:
            default = (
                f'smith_string_set(err, "the plugin does not define {cname}, so it does not '
                f'answer {f.name}");\n  return false;'
            )
        unused = " ".join(f"(void){field_name(n)};" for n, _ in f.params)
        unused += " (void)ret;" if ok is not None else ""
        unused += " (void)err;" if err is not None else ""
        rtype = c_type(w, r)
        area = f"__smith_ret_{snake(f.name)}"
        core_params = ", ".join(f"{_CORE_C[v]} a{i}" for i, v in enumerate(core)) or "void"
        values = [f"a{i}" for i in range(len(core))]
        lifted = "\n".join(
            f"  {c_type(w, t)} {field_name(n)} = {self.lift(t, values)};" for n, t in f.params
        )
        call = ", ".join(
            [field_name(n) for n, _ in f.params]
            + (["&r->val.ok"] if ok is not None else [])
            + (["&r->val.err"] if err is not None else [])
        )
        # An argument handed back as the answer (`*ret = name`) is the answer's now: the
        # post-return frees it, so it is not freed here too.
        kept = [
            f"r->val.{case}.ptr"
            for case, t in (("ok", ok), ("err", err))
            if t is not None and (t.kind == "list" or t == Type("prim", "string"))
        ]
        frees = []
        for n, t in f.params:
            stmts = " ".join(self.free_stmts(t, field_name(n)))
            if stmts and kept and (t.kind == "list" or t == Type("prim", "string")):
                unshared = " && ".join(f"{field_name(n)}.ptr != {k}" for k in kept)
                stmts = f"if ({unshared}) {{ {stmts} }}"
            frees.append(stmts)
        frees_text = " ".join(x for x in frees if x)
        post = " ".join(self.free_stmts(r, "(*r)"))
        checks = ""
        if err == Type("prim", "string"):
            # An empty error would reach the user as nothing at all; a NULL string with a
            # length would be read from address 0: each is the plugin's error, named.
            checks = (
                f"  if (r->is_err && r->val.err.ptr == NULL) smith_string_set(&r->val.err, "
                f'"{cname} returned false without an error");\n'
            )
            if ok is not None and (ok.kind == "list" or ok == Type("prim", "string")):
                checks += (
                    f"  if (!r->is_err && r->val.ok.ptr == NULL && r->val.ok.len > 0) {{ "
                    f"r->is_err = true; smith_string_set(&r->val.err, "
                    f'"{cname} returned a NULL string with a length"); }}\n'
                )
        defn = (
            f"__attribute__((weak)) {sig} {{\n  {unused}\n  {default}\n}}\n"
            f"static {rtype} {area};\n"
            f'__attribute__((export_name("{f.name}"))) int32_t __smith_export_{snake(f.name)}'
            f"({core_params}) {{\n  __smith_init();\n{lifted}\n"
            f"  {rtype} *r = &{area};\n  memset(r, 0, sizeof *r);\n"
            f"  r->is_err = !{cname}({call});\n{checks}  {frees_text}\n"
            "  return (int32_t)(uintptr_t)r;\n}\n"
            f'__attribute__((export_name("cabi_post_{f.name}"))) void __smith_post_{snake(f.name)}'
            f"(int32_t p) {{\n  {rtype} *r = ({rtype} *)(uintptr_t)p;\n  {post or '(void)r;'}\n}}"
        )
        return decl, defn


_HELPERS_DECL = """\
/* A borrowed view of a C string (not copied: never put one in *ret or *err). */
smith_string_t smith_str(const char *text);
/* Set *s to a copy of `text` (what a handler puts in *ret or *err must be owned: the
   glue frees it after smith read it). */
void smith_string_set(smith_string_t *s, const char *text);
/* Append `more` (a copy) to *s. */
void smith_string_append(smith_string_t *s, smith_string_t more);
void smith_string_append_cstr(smith_string_t *s, const char *more);
/* Free an owned string (one set by smith_string_set, or a host function's result). */
void smith_string_free(smith_string_t *s);"""

_HELPERS_DEF = """\
smith_string_t smith_str(const char *text) {
  return (smith_string_t){ (char *)text, strlen(text) };
}
void smith_string_free(smith_string_t *s) {
  free(s->ptr); s->ptr = NULL; s->len = 0;
}
void smith_string_append(smith_string_t *s, smith_string_t more) {
  char *p = realloc(s->ptr, s->len + more.len + 1);
  if (p == NULL) abort();
  memcpy(p + s->len, more.ptr, more.len);
  s->len += more.len;
  p[s->len] = 0;
  s->ptr = p;
}
void smith_string_append_cstr(smith_string_t *s, const char *more) {
  smith_string_append(s, smith_str(more));
}
void smith_string_set(smith_string_t *s, const char *text) {
  smith_string_free(s);
  smith_string_append_cstr(s, text);
}
__attribute__((export_name("cabi_realloc")))
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
  (void)old_size; (void)align;
  void *p = realloc(ptr, new_size ? new_size : 1);
  if (p == NULL) abort();
  return p;
}
extern void __wasm_call_ctors(void);
static bool __smith_initialized;
static void __smith_init(void) {
  if (!__smith_initialized) { __smith_initialized = true; __wasm_call_ctors(); }
}"""


def c_prototypes(world: World) -> dict[str, str]:
    """{WIT function name: its C prototype}: the host functions' and the handlers'."""
    g = _Gen(world)
    out = {}
    for name in world.imports:
        for f in world.interfaces[name].funcs.values():
            out[f.name] = g.host_func(name, f)[0].splitlines()[-1]
    for f in world.exports.values():
        out[f.name] = g.export_func(f)[0].splitlines()[-1]
    return out


def c_bindings(world: World) -> dict[str, str]:
    """{file name: text} of the C bindings of `world`."""
    g = _Gen(world)
    g.need(Type("prim", "string"))
    host = [
        g.host_func(name, f)
        for name in world.imports
        for f in world.interfaces[name].funcs.values()
    ]
    exports = [g.export_func(f) for f in world.exports.values()]
    stamp = (
        f"/* Generated by smith from wit/smith-plugin.wit ({world.package}@{world.version}, "
        f"world {world.name}): do not edit; `smith plugins build` writes it again. */"
    )
    header = "\n\n".join(
        [
            stamp,
            "#ifndef SMITH_PLUGIN_H\n#define SMITH_PLUGIN_H\n"
            "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>",
            *g.typedefs,
            "\n".join(g.free_decls),
            _HELPERS_DECL,
            "/* -- host functions (smith's side; each needs its grant in plugin.kdl) -- */",
            *(d for d, _ in host),
            "/* -- handlers smith calls (define those the plugin needs) -- */",
            *(d for d, _ in exports),
            "#endif",
        ]
    )
    source = "\n\n".join(
        [
            stamp,
            f'#include <stdlib.h>\n#include <string.h>\n#include "{HEADER}"',
            _HELPERS_DEF,
            *g.frees,
            *(d for _, d in host),
            *(d for _, d in exports),
        ]
    )
    return {HEADER: header + "\n", SOURCE: source + "\n"}
