"""plugin.kdl's presentation and policy contributions, read into a PackageManifest:
`prompt` (system-prompt parts), `layout`, `secret-route` and `frontend` (escape hatches).
smith.packages._read's reader takes these methods; docs/plugins.md describes each key."""

from __future__ import annotations

import os
import re

from smith.packages._manifest import RouteDecl

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import KdlNode

MAX_PROMPT = 16 * 1024  # characters of one system-prompt part (all of them: MAX_PROMPTS)
MAX_PROMPTS = 64 * 1024
PROMPT_NAME = re.compile(r"system\.[a-z0-9][a-z0-9_-]{0,63}|tool\.[A-Za-z0-9_-]{1,64}")
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # a layout's name (a package's name rule)


class ContributionParts:
    """The reader's part for these keys (what they hold, and the reader's own methods
    they use)."""

    root: str
    prompts: dict[str, str]
    layouts: dict[str, tuple[str, ...]]
    routes: list[RouteDecl]
    routed: list[KdlNode]
    frontend: list[str]

    if TYPE_CHECKING:

        def bad(self, node: KdlNode, key: str, problem: str, value: object = None,
                line: int | None = None, column: int | None = None) -> None: ...  # fmt: skip

        def strings(self, node: KdlNode, key: str, least: int = 1,
                    most: int = 1_000) -> list[str]: ...  # fmt: skip

    def prompt(self, node: KdlNode) -> None:
        if node.children or set(node.props) - {"file"}:
            self.bad(node, "prompt", "takes a name and its text (or file=...), not a block")
            return
        given = node.props.get("file")
        values = self.strings(node, "prompt", 1, 1 if given is not None else 2)
        if not values:
            return
        name = values[0]
        if not PROMPT_NAME.fullmatch(name):
            self.bad(node, "prompt", f"is named {name!r}: system.NAME or tool.NAME", name)
            return
        if name == "system.tools":  # the product's heading of the tool lines
            self.bad(node, "prompt", "system.tools is the product's heading: give a tool's "
                     "guidance as tool.NAME", name)  # fmt: skip
            return
        if name in self.prompts:
            self.bad(node, "prompt", f"{name!r} is given twice", name)
            return
        if given is not None:
            text = self.prompt_file(node, name, given.value)
        elif len(values) == 2:
            text = values[1]
        else:
            self.bad(node, "prompt", f"{name!r} has no text (give it, or file=...)", name)
            return
        if text is None:
            return
        text = text.strip()
        if not text or len(text) > MAX_PROMPT:
            self.bad(node, "prompt", f"{name!r} is {len(text)} characters: 1 to {MAX_PROMPT}",
                     name)  # fmt: skip
        elif any(not (c.isprintable() or c in "\n\t") for c in text):
            self.bad(node, "prompt", f"{name!r} holds control characters", name)
        elif sum(map(len, self.prompts.values())) + len(text) > MAX_PROMPTS:
            self.bad(node, "prompt", f"parts come to over {MAX_PROMPTS} characters", name)
        else:
            self.prompts[name] = text

    def prompt_file(self, node: KdlNode, name: str, given: object) -> str | None:
        file = inside(self.root, given) if isinstance(given, str) else None
        if file is None:
            self.bad(node, "prompt.file", f"of {name} is {given!r}, not a path inside the package",
                     given)  # fmt: skip
            return None
        try:
            with open(file, encoding="utf-8") as f:
                return f.read(MAX_PROMPT + 1)
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.bad(node, "prompt.file", f"of {name} cannot be read: {reason}", given)
            return None

    def layout(self, node: KdlNode) -> None:
        from smith.ui import layout_problem

        if node.props or node.children:
            self.bad(node, "layout", "takes a name and regions, not properties or a block")
            return
        values = self.strings(node, "layout", 3)
        if not values:
            return
        name, regions = values[0], tuple(values[1:])
        problem = (
            f"is named {name!r}, which is not a name"
            if not NAME.fullmatch(name)
            else (f"{name!r} is given twice" if name in self.layouts else layout_problem(regions))
        )
        if problem:
            self.bad(node, "layout", problem, name)
        else:
            self.layouts[name] = regions

    def route(self, node: KdlNode) -> None:
        values = self.strings(node, "secret-route", 1, 1)
        if not values:
            return
        secret = values[0]
        if node.props or not SECRET_NAME.fullmatch(secret):
            self.bad(node, "secret-route", f"is {secret!r}: a secret's name, then a block", secret)
            return
        if secret in [r.secret for r in self.routes]:
            self.bad(node, "secret-route", f"{secret!r} is routed twice", secret)
            return
        where: dict[str, list[str]] = {"host": [], "command": []}
        plaintext = False
        for child in node.children:
            key = f"secret-route.{child.name}"
            if child.name == "plaintext":
                if len(child.args) != 1 or not isinstance(child.args[0].value, bool):
                    self.bad(child, key, "takes true or false")
                    return
                plaintext = child.args[0].value
            elif child.name in where:
                for value in self.strings(child, key, least=1):
                    if not value.strip() or any(c.isspace() or not c.isprintable() for c in value):
                        self.bad(child, key, "is empty or holds spaces or control characters",
                                 value)  # fmt: skip
                        return
                    where[child.name].append(value)
            else:
                self.bad(child, key, "is none of host, command, plaintext")
                return
        if not (where["host"] or where["command"] or plaintext):
            self.bad(node, "secret-route", f"{secret!r} routes nowhere: add host, command or "
                     "plaintext true", secret)  # fmt: skip
            return
        self.routes.append(RouteDecl(secret, tuple(where["host"]), tuple(where["command"]),
                                     plaintext))  # fmt: skip
        self.routed.append(node)

    def hatches(self, node: KdlNode) -> None:
        from smith.ui import HATCHES

        if node.props or node.children:
            self.bad(node, "frontend", "takes the names of escape hatches, not a block")
            return
        for name in self.strings(node, "frontend", least=1):
            if name in HATCHES:
                self.frontend.append(name)
            else:
                self.bad(node, "frontend", f"names {name!r}, which is no escape hatch", name)


def inside(root: str, relative: str) -> str | None:
    """`relative` joined to `root`, or None if it is absolute or leaves the package."""
    if not relative or os.path.isabs(relative) or relative.startswith("~"):
        return None
    parts = relative.replace("\\", "/").split("/")
    if ".." in parts:
        return None
    return os.path.join(root, *parts)
