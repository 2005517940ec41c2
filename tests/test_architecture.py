"""The map's rules (docs/architecture.md) hold in the code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["asyncio", "textual", "httpx", "pygit2", "wasmtime", "cbor2", "kdl", "zstandard"]
# Where each heavy dependency may be imported (directories or files, relative to the root).
ALLOWED = {
    "textual": ["frontends/tui", "frontends/web"],
    "textual_serve": ["frontends/web"],
    "pygit2": ["smith/vcs"],
    "wasmtime": ["smith/wasm"],
    "httpx": ["smith/providers/_http"],
    "kdl": ["smith/config/_kdl.py"],
    "cbor2": ["smith/session", "smith/_fast"],
    "zstandard": ["smith/session", "smith/_fast"],
    "frizbee": ["frontends/tui/_fuzzy.py"],
    "pyseccomp": ["smith/effects/_seccomp.py"],
    "tree_sitter": ["plugins/_bashrules.py"],
    "tree_sitter_bash": ["plugins/_bashrules.py"],
    "orjson": ["smith/_jsonout.py"],
    "msgspec": ["smith/protocol"],
    "yaml": ["smith/frontmatter.py"],
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _python_files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in (ROOT / d).rglob("*.py")]


def test_core_never_imports_frontends_or_textual() -> None:
    for path in _python_files("smith"):
        for line, name in _imports(path):
            top = name.split(".")[0]
            assert top not in ("textual", "textual_serve"), f"{path}:{line} imports {name}"
            assert not name.startswith("smith.frontends"), f"{path}:{line} imports {name}"


def test_heavy_dependencies_are_imported_in_one_place_each() -> None:
    for path in _python_files("smith", "frontends", "plugins"):
        rel = path.relative_to(ROOT).as_posix()
        for line, name in _imports(path):
            top = name.split(".")[0]
            if top in ALLOWED:
                assert any(rel == a or rel.startswith(a + "/") for a in ALLOWED[top]), (
                    f"{rel}:{line} imports {name}; only {ALLOWED[top]} may"
                )


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag: str) -> None:
    code = f"import sys; from smith.cli import main; sys.exit(main([{flag!r}]))"
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    order = re.findall(r"\|\s+([\w.]+)\s*$", r.stderr, re.M)
    assert "smith.cli._main" in order  # the measurement saw smith itself
    heavy = sorted(m for m in order if m.split(".")[0] in HEAVY)
    assert heavy == []
    # Costly standard modules stay off smith's own path too (each is several ms here);
    # what the interpreter's site hooks imported before smith is not smith's doing.
    ours = set(order[next(i for i, m in enumerate(order) if m.startswith("smith")) :])
    assert not ours & {"typing", "dataclasses", "inspect", "json", "difflib", "pathlib"}


def test_public_names_of_smith_config_are_exactly_these() -> None:
    import smith.config

    assert sorted(smith.config.__all__) == sorted(
        [
            "LAYERS",
            "SCHEMA",
            "THINKING_LEVELS",
            "UNKNOWN_KEY",
            "Block",
            "Boolean",
            "Choice",
            "Config",
            "Contribution",
            "Integer",
            "KdlNode",
            "Located",
            "Mismatch",
            "Number",
            "Option",
            "Path",
            "Schema",
            "Section",
            "Setting",
            "String",
            "Strings",
            "ValueType",
            "add_value",
            "format_value",
            "set_value",
            "read_nodes",
            "resolve",
            "rewrite",
        ]
    )
    for name in smith.config.__all__:
        assert getattr(smith.config, name) is not None


PUBLIC_NAMES = {
    "smith.frontends.tui": ["KEY_ACTIONS", "Sessions", "play_replay", "run"],
    "smith.frontends.web": ["add_arguments", "app_command", "run"],
    "smith.frontends.mcp": ["add_arguments", "run"],
    "smith.plugins": ["BUILTIN", "MANIFESTS"],
    "smith.effects.tools": ["builtin", "list_files"],
}


@pytest.mark.parametrize("package", sorted(PUBLIC_NAMES))
def test_public_names_of_these_packages_are_exactly_these(package: str) -> None:
    import importlib

    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PUBLIC_NAMES[package])
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_provider_plugins_package_exports_the_modules_builtin_names() -> None:
    import importlib

    import smith.plugins.providers
    from smith.plugins import BUILTIN

    named = [m.rsplit(".", 1)[1] for m in BUILTIN if m.startswith("smith.plugins.providers.")]
    assert sorted(smith.plugins.providers.__all__) == sorted(named)
    for name in named:
        assert importlib.import_module(f"smith.plugins.providers.{name}").PLUGIN is not None


# -- public faces and layers --------------------------------------------------------------

PACKAGES = {"smith": "smith", "frontends": "smith.frontends", "plugins": "smith.plugins"}


def _private_owner(dotted: str) -> str | None:
    """The package owning the first `_private` segment of a dotted path (dunders are not)."""
    segments = dotted.split(".")
    for i, segment in enumerate(segments):
        if segment.startswith("_") and not segment.startswith("__"):
            return ".".join(segments[:i])
    return None


def _module_imports(root: Path) -> list[tuple[str, str, int]]:
    """(module, imported dotted path, line) for every import under `root`'s packages:
    import, from-import (relative levels resolved), importlib.import_module and __import__
    of a string or of an f-string's constant head."""
    found: list[tuple[str, str, int]] = []
    for directory, package in PACKAGES.items():
        base = root / directory
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base)
            if "tests" in rel.parts or "__pycache__" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            module = ".".join([package, *parts])
            here = module.split(".") if is_package else module.split(".")[:-1]
            for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
                targets: list[str] = []
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    up = here[: len(here) - (node.level - 1)] if node.level else []
                    head = ".".join(up + ([node.module] if node.module else []))
                    targets = [head, *(f"{head}.{a.name}" for a in node.names if a.name != "*")]
                elif isinstance(node, ast.Call) and node.args:
                    func = node.func
                    name = getattr(func, "attr", None) or getattr(func, "id", "")
                    arg = node.args[0]
                    if name not in ("import_module", "__import__"):
                        continue
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        targets = [arg.value]
                    elif isinstance(arg, ast.JoinedStr) and arg.values:
                        first = arg.values[0]
                        if isinstance(first, ast.Constant) and "." in str(first.value):
                            targets = [str(first.value).rsplit(".", 1)[0]]
                found += [(module, target, node.lineno) for target in targets]
    return found


def private_imports(root: Path) -> list[str]:
    """Imports that reach into another package's private modules, as `module:line target`."""
    offenders: dict[tuple[str, int, str], str] = {}
    for module, target, line in _module_imports(root):
        owner = _private_owner(target)
        if owner is None or not (owner == "smith" or owner.startswith("smith.")):
            continue
        if module != owner and not module.startswith(owner + "."):
            offenders.setdefault((module, line, owner), f"{module}:{line} imports {target}")
    return sorted(offenders.values())


def test_no_module_imports_another_packages_private_modules() -> None:
    offenders = private_imports(ROOT)
    assert not offenders, "import these from the package instead:\n" + "\n".join(offenders)


def test_the_private_import_scan_finds_every_form(tmp_path: Path) -> None:
    (tmp_path / "smith" / "cli").mkdir(parents=True)
    (tmp_path / "smith" / "runtime").mkdir()
    (tmp_path / "frontends" / "mcp").mkdir(parents=True)
    (tmp_path / "smith" / "runtime" / "__init__.py").write_text("from ._setup import x\n")
    (tmp_path / "smith" / "cli" / "_a.py").write_text(
        "import smith.runtime._setup\n"
        "from smith.runtime._setup import x\n"
        "from smith.session import _store\n"
        "from smith._fast import y\n"  # owned by smith, so allowed everywhere under smith/
        "import importlib\n"
        "importlib.import_module('smith.vcs._repo')\n"
        "__import__(f'smith.effects._tool.{x}')\n"
    )
    (tmp_path / "frontends" / "mcp" / "__init__.py").write_text("from ..rpc._io import z\n")
    assert private_imports(tmp_path) == [
        "smith.cli._a:1 imports smith.runtime._setup",
        "smith.cli._a:2 imports smith.runtime._setup",
        "smith.cli._a:3 imports smith.session._store",
        "smith.cli._a:6 imports smith.vcs._repo",
        "smith.cli._a:7 imports smith.effects._tool",
        "smith.frontends.mcp:1 imports smith.frontends.rpc._io",
    ]


DOC = ROOT / "docs" / "architecture.md"


def _between(text: str, marker: str) -> list[str]:
    """The lines of `text` between `<!-- marker... -->` and `<!-- /marker -->`."""
    found = re.search(rf"<!-- {re.escape(marker)}\b[^>]*-->\n(.*?)<!-- /{re.escape(marker)} -->",
                      text, re.S)  # fmt: skip
    assert found, f"docs/architecture.md has no <!-- {marker} --> list"
    return found.group(1).splitlines()


def read_layers(text: str) -> list[tuple[str, ...]]:
    """The numbered layer list of the doc's Layers section, top to bottom."""
    rows = [line for line in _between(text, "layers") if re.match(r"\d+\. ", line)]
    return [tuple(re.findall(r"`([\w.]+)`", row)) for row in rows]


def read_upward(text: str) -> set[tuple[str, str]]:
    """The doc's table of upward imports: (module, the layer it reaches up to)."""
    rows = [re.findall(r"`([\w.]+)`", line) for line in _between(text, "upward imports")]
    return {(row[0], row[1]) for row in rows if len(row) == 2}


def fast_imports(root: Path) -> list[str]:
    """Imports of smith._fast from outside the core (frontends/, plugins/): the private
    scan allows it anywhere under `smith.`, which is where those two install."""
    offenders: dict[tuple[str, int], str] = {}
    for module, target, line in _module_imports(root):
        outside = module.startswith(("smith.frontends", "smith.plugins"))
        if outside and (target == "smith._fast" or target.startswith("smith._fast.")):
            offenders.setdefault((module, line), f"{module}:{line} imports {target}")
    return sorted(offenders.values())


def test_smith_fast_stays_private_to_the_core() -> None:
    offenders = fast_imports(ROOT)
    assert not offenders, "only smith's core may use smith._fast:\n" + "\n".join(offenders)


def test_the_fast_import_scan_finds_every_form(tmp_path: Path) -> None:
    (tmp_path / "frontends" / "tui").mkdir(parents=True)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "smith" / "session").mkdir(parents=True)
    (tmp_path / "frontends" / "tui" / "_x.py").write_text(
        "import smith._fast._frames\nfrom smith import _fast\nfrom ..._fast import _cbor\n"
    )
    (tmp_path / "plugins" / "p.py").write_text("from smith._fast._cbor import dumps\n")
    (tmp_path / "smith" / "session" / "_s.py").write_text("from smith._fast import _cbor\n")
    assert fast_imports(tmp_path) == [
        "smith.frontends.tui._x:1 imports smith._fast._frames",
        "smith.frontends.tui._x:2 imports smith._fast",
        "smith.frontends.tui._x:3 imports smith._fast",
        "smith.plugins.p:1 imports smith._fast._cbor",
    ]


# The Layers section of docs/architecture.md, top to bottom; a module imports only from its
# own layer or below, save the exceptions that section lists (module, layer it reaches up to).
LAYERS = read_layers(DOC.read_text())
UPWARD = read_upward(DOC.read_text())


def test_the_layers_are_read_from_the_architecture_doc() -> None:
    assert len(LAYERS) > 10 and all(LAYERS) and len(UPWARD) >= 5
    assert LAYERS[0] == ("smith.frontends",) and LAYERS[-1] == ("smith._fast",)
    for prefixes in LAYERS:  # each names a package or module that exists
        for prefix in prefixes:
            parts = prefix.split(".")[1:]
            base = ROOT / "smith"
            if parts and parts[0] in ("frontends", "plugins"):
                base, parts = ROOT / parts[0], parts[1:]
            where = base.joinpath(*parts)
            assert where.is_dir() or where.with_suffix(".py").exists(), prefix
    layers = {p for prefixes in LAYERS for p in prefixes}
    assert all(module.startswith("smith.") and up in layers for module, up in UPWARD)
    doc = "1. `smith.cli`\n2. `smith.a`, `smith.b`\n"
    assert read_layers(f"<!-- layers: top -->\n{doc}<!-- /layers -->") == [
        ("smith.cli",),
        ("smith.a", "smith.b"),
    ]


def _layer(module: str) -> int | None:
    found = None
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            found = rank
    return found


def upward_imports(root: Path) -> list[str]:
    offenders: dict[tuple[str, int], str] = {}
    for module, target, line in _module_imports(root):
        here, there = _layer(module), _layer(target)
        if here is None or there is None or there >= here:
            continue
        if (module, LAYERS[there][0]) not in UPWARD:
            offenders.setdefault((module, line), f"{module}:{line} imports {target}")
    return sorted(offenders.values())


def test_imports_follow_the_layers_of_the_architecture_doc() -> None:
    offenders = upward_imports(ROOT)
    assert not offenders, "imports up the layers not in docs/architecture.md:\n" + "\n".join(
        offenders
    )


def test_the_layer_scan_finds_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "smith" / "session").mkdir(parents=True)
    (tmp_path / "smith" / "session" / "_x.py").write_text(
        "from smith.runtime import Runtime\nfrom smith.config import Config\n"
    )
    assert upward_imports(tmp_path) == ["smith.session._x:1 imports smith.runtime"]


LOOP_MODULES = (
    "_loop",
    "_steps",
    "_batch",
    "_turn",
    "_response",
    "_compaction",
    "_hooks",
    "_notes",
)
# Steps given the services of their turn (smith.runtime._turn.Turn), not the runtime.
TURN_STEPS = ("_batch",)


def test_the_agent_loop_works_on_its_narrow_context_not_the_runtime() -> None:
    """The loop and its steps take a LoopContext (smith/runtime/_loopctx.py): they never
    name Runtime nor reach into another object's private attributes, so mypy holds them
    to the members the context declares."""
    for name in LOOP_MODULES:
        path = ROOT / "smith" / "runtime" / f"{name}.py"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                assert node.id != "Runtime", f"{path.name}:{node.lineno} names Runtime"
            if isinstance(node, ast.ImportFrom) and node.module == "smith.runtime._runtime":
                names = {a.name for a in node.names}
                assert "Runtime" not in names, f"{path.name}:{node.lineno} imports Runtime"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                assert not (node.value.id == "rt" and private), (
                    f"{path.name}:{node.lineno} reads rt.{node.attr}, a private attribute"
                )


def test_the_tool_step_takes_the_services_of_its_turn() -> None:
    """The tool batch works through a Turn and returns its results: it names neither
    the runtime nor its LoopContext, so it cannot call back into either."""
    for name in TURN_STEPS:
        path = ROOT / "smith" / "runtime" / f"{name}.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name | ast.alias):
                named = node.id if isinstance(node, ast.Name) else node.name
                assert named not in {"Runtime", "LoopContext"}, f"{path.name} names {named}"
            if isinstance(node, ast.arg):
                assert node.arg != "rt", f"{path.name}:{node.lineno} takes rt"


def test_configuration_never_imports_the_providers(tmp_path: Path) -> None:
    """Configuration declares the open sections smith.providers owns (catalog, models,
    providers); their checks come from above (`resolve(checks=CONFIG_CHECKS)`), so no
    module of smith.config names smith.providers, and resolving imports none of it."""
    offenders = [
        f"{module}:{line} imports {target}"
        for module, target, line in _module_imports(ROOT)
        if module.startswith("smith.config") and target.split(".")[:2] == ["smith", "providers"]
    ]
    assert offenders == []
    (tmp_path / "config.kdl").write_text(
        'providers { local { base-url "http://127.0.0.1:1/v1"; }; }\n'
        'models { alias { fast "demo"; }; }\ncatalog { "openai/gpt-5" { max-output 9; }; }\n'
    )
    code = (
        "import sys\n"
        "from smith.config import resolve\n"
        f"env = {{'SMITH_CONFIG_HOME': {str(tmp_path)!r}, 'SMITH_HOME': {str(tmp_path)!r}}}\n"
        f"config = resolve(env=env, cwd={str(tmp_path)!r})\n"
        "assert config.subtree('models')['alias.fast'].value == 'demo'\n"
        "print(sorted(m for m in sys.modules if m.startswith('smith.providers')))\n"
        "from smith.providers import CONFIG_CHECKS\n"
        f"empty = {{**env, 'SMITH_CONFIG_HOME': {str(tmp_path / 'none')!r}}}\n"
        f"resolve(env=empty, cwd={str(tmp_path)!r}, checks=CONFIG_CHECKS)\n"  # no open keys
        "print(sorted(m for m in sys.modules if m.startswith('smith.providers')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    unchecked, contributed = r.stdout.splitlines()
    assert unchecked == "[]"
    # Contributing the checks costs their one small module, not the provider machinery.
    assert contributed == "['smith.providers', 'smith.providers._checks']"


# -- what frontends read of a runtime --------------------------------------------------------

# The Runtime attributes a frontend may read (docs/architecture.md, "What frontends read of
# a runtime"); everything else it needs is a field of status() or an operation's answer.
RUNTIME_FACE = {
    # operations: submit takes any (smith.runtime.ops); these methods are the same ones
    "submit": "every operation, typed or as data",
    "prompt": "the Prompt operation",
    "steer": "the Steer operation",
    "follow_up": "the FollowUp operation",
    "abort": "the Abort operation (also a signal handler, which takes no argument)",
    # events out, and the UI intents that go with them
    "attach": "the one way a frontend consumes the events and questions (smith.ui)",
    "on_event": "eval watches for the end of its prompt",
    "post": "the app's plugin commands show a notice the runtime emits",
    "ask": "the app's plugin commands ask a question the runtime records",
    "announce_mode": "a frontend that listens late (eval, RPC start and switch) hears the mode",
    # the one view
    "status": "the one status view (smith/runtime/_view.py)",
    # read-only properties of the published generation (RuntimeView's names), where the
    # whole view would be waste: a key press, the model picker, a session switch
    "busy": "whether the agent works",
    "model": "the model setting in use",
    "thinking": "the thinking level in use",
    "generation": "the published generation's number",
    # the lifecycle
    "wait_idle": "wait until nothing runs",
    "close": "end the runtime",
}


def _annotated_runtime(annotation: ast.expr | None) -> bool:
    """An annotation naming Runtime (`Runtime`, `Runtime | None`, `"Runtime"`)."""
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Runtime":
            return True
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and re.fullmatch(r"Runtime( \| None)?", text):
            return True
    return False


def _is_runtime(node: ast.expr, names: set[str]) -> bool:
    """A runtime: one of `names`, or any `X.runtime` but `smith.runtime` (the package)."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute) and node.attr == "runtime":
        return not (isinstance(node.value, ast.Name) and node.value.id == "smith")
    return False


def runtime_reads(root: Path) -> list[str]:
    """Every attribute a module under `root`/frontends reads of a runtime, outside
    RUNTIME_FACE, as `path:line runtime.NAME`. A runtime is a name `runtime` or `rt`, any
    `X.runtime` (but `smith.runtime`, the package), a name bound to one of those, a name
    annotated Runtime; `getattr(runtime, "NAME")` is a read too."""
    offenders = []
    for path in sorted((root / "frontends").rglob("*.py")):
        tree = ast.parse(path.read_bytes(), str(path))
        names = {"runtime", "rt"}
        for _ in range(2):  # a name bound to a name bound to a runtime
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and _is_runtime(node.value, names):
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    if _annotated_runtime(node.annotation) or (
                        node.value is not None and _is_runtime(node.value, names)
                    ):
                        names.add(node.target.id)
                elif isinstance(node, ast.arg) and _annotated_runtime(node.annotation):
                    names.add(node.arg)
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            read = None
            if isinstance(node, ast.Attribute) and _is_runtime(node.value, names):
                read = node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and _is_runtime(node.args[0], names)
            ):
                arg = node.args[1]
                read = arg.value if isinstance(arg, ast.Constant) else "<computed>"
            if read is not None and read not in RUNTIME_FACE:
                offenders.append(f"{rel}:{node.lineno} runtime.{read}")
    return sorted(set(offenders))


def test_frontends_read_only_the_runtimes_public_face() -> None:
    offenders = runtime_reads(ROOT)
    assert not offenders, (
        "frontends read these Runtime internals; use status(), an operation, or declare "
        "the read in RUNTIME_FACE and docs/architecture.md:\n" + "\n".join(offenders)
    )


def test_the_runtime_read_scan_finds_every_form(tmp_path: Path) -> None:
    (tmp_path / "frontends" / "tui").mkdir(parents=True)
    (tmp_path / "frontends" / "tui" / "_x.py").write_text(
        "import smith.runtime\n"
        "def f(runtime, server, other: 'Runtime | None', app):\n"
        "    runtime.submit(op); runtime.status()\n"  # the face: allowed
        "    runtime.limits.image_bytes\n"
        "    server.runtime.context.cwd\n"
        "    old = app.runtime\n"
        "    old.plugins\n"
        "    other.cost\n"
        "    getattr(app.runtime, 'session', None)\n"
        "    self._app.runtime.state()\n"
        "    smith.runtime.ops\n"  # the package, not a runtime
        "    server.session.id\n"  # not a runtime
    )
    assert runtime_reads(tmp_path) == [
        "frontends/tui/_x.py:10 runtime.state",
        "frontends/tui/_x.py:4 runtime.limits",
        "frontends/tui/_x.py:5 runtime.context",
        "frontends/tui/_x.py:7 runtime.plugins",
        "frontends/tui/_x.py:8 runtime.cost",
        "frontends/tui/_x.py:9 runtime.session",
    ]


# -- what frontends reach of the session ----------------------------------------------------


def session_imports(root: Path) -> list[str]:
    """Every import of smith.session (or a module of it) under `root`/frontends that runs
    at run time, as `path:line`: imports under `if TYPE_CHECKING:` (or `if TYPE_CHECKING
    and ...`) are for types only and exempt, at any depth."""
    offenders = []
    for path in sorted((root / "frontends").rglob("*.py")):
        tree = ast.parse(path.read_bytes(), str(path))
        typing_only: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only |= {id(n) for sub in node.body for n in ast.walk(sub)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.level == 0 and node.module == "smith":
                    names = [f"smith.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "smith.session" or n.startswith("smith.session.") for n in names):
                offenders.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return offenders


def test_frontends_reach_the_session_only_through_the_runtime_and_assembly() -> None:
    offenders = session_imports(ROOT)
    assert not offenders, (
        "frontends import smith.session at run time; read the session through the "
        "runtime's operations (session_info, entries, tree, select, fork) and its entry "
        "events, and open sessions through the assembly (smith.runtime.ProjectSessions):\n"
        + "\n".join(offenders)
    )


def test_the_session_import_scan_finds_every_form(tmp_path: Path) -> None:
    (tmp_path / "frontends").mkdir()
    (tmp_path / "frontends" / "_x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from smith.session import Session\n"  # types only: exempt
        "import smith.session\n"
        "from smith.session._store import SessionStore\n"
        "from smith import session\n"
        "def f():\n"
        "    from smith.session import Entry\n"
        "    from smith.sessions import x\n"  # another name
    )
    assert session_imports(tmp_path) == [
        "frontends/_x.py:4",
        "frontends/_x.py:5",
        "frontends/_x.py:6",
        "frontends/_x.py:8",
    ]
