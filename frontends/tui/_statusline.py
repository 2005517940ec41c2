"""The status line: what the runtime's status says, fitted to the terminal's width.

    fields = status_fields(runtime.status(), busy=True, session="fix tests")
    fit(fields, 80)   # "claude-sonnet-4 · working · thinking high · $0.0580 · 38% of 200k"

Each field has its forms, longest first, and a priority. When the line is too wide,
the field of lowest priority takes its next shorter form, and then goes, before any
field of higher priority changes; the state (ready, working) and the model are
required: they are never dropped (the model is cut in the middle as a last resort,
the state never). `StatusLine` draws the fitted line at its own width, so a resize
fits it again without anyone asking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from smith.text import counted, inert

if TYPE_CHECKING:
    from textual.app import RenderResult

SEP = " · "

# Higher stays longer. The state and the model are required, whatever their number.
STATE, MODEL, QUEUE, CONTEXT, COST, PLUGIN, SESSION, THINKING, MEMORY = (
    100, 90, 70, 60, 50, 45, 35, 30, 10,
)  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One field of the line: its `forms`, longest first; a required field keeps its
    last form, any other is dropped after it."""

    forms: tuple[str, ...]
    priority: int
    required: bool = False


def fit(fields: Sequence[Field], width: int, sep: str = SEP) -> str:
    """The fields in their order, as long as `width` allows (see the module doc)."""
    form = [0] * len(fields)  # the index of each field's form; len(forms): dropped

    def line() -> str:
        return sep.join(f.forms[k] for f, k in zip(fields, form, strict=True) if k < len(f.forms))

    for i in sorted(range(len(fields)), key=lambda i: fields[i].priority):
        last = len(fields[i].forms) - (1 if fields[i].required else 0)
        while cell_len(line()) > width and form[i] < last:
            form[i] += 1
    text = line()
    if cell_len(text) > width:
        text = _cut_model(fields, form, width, sep)
    return text


def _cut_model(fields: Sequence[Field], form: list[int], width: int, sep: str) -> str:
    """Only required fields are left and still too wide: the model's name is cut in
    the middle (its provider and its version are the parts that tell models apart)."""
    shown = [(f, f.forms[k]) for f, k in zip(fields, form, strict=True) if k < len(f.forms)]
    over = cell_len(sep.join(text for _, text in shown)) - width
    out = []
    for f, text in shown:
        if f.priority == MODEL and over > 0:
            keep = max(1, cell_len(text) - over - 1)
            out.append(cells(text, (keep + 1) // 2) + "…" + cells(text, keep // 2, end=True))
        else:
            out.append(text)
    return sep.join(out)


def cells(text: str, width: int, *, end: bool = False) -> str:
    """The start (or the `end`) of `text` that fits in `width` terminal cells: a wide
    character (CJK, most emoji) takes two, so width is counted in cells, never in
    characters."""
    out: list[str] = []
    used = 0
    for char in reversed(text) if end else text:
        used += cell_len(char)
        if used > width:
            break
        out.append(char)
    return "".join(reversed(out) if end else out)


def tokens(n: int) -> str:
    """12, 950, 12k, 200k, 1.2M: a context size as people say it."""
    if n < 1000:
        return str(n)
    if 10_000 <= n < 1_000_000:
        return f"{n / 1000:.0f}k"
    value, unit = (n / 1000, "k") if n < 1_000_000 else (n / 1_000_000, "M")
    return f"{value:.1f}".rstrip("0").rstrip(".") + unit


def context_field(context: Mapping[str, Any]) -> Field:
    """Use of the context: a share of the window when it is known ("38% of 200k"),
    else an estimate of its size ("~12k tokens"). Counted as `/context` counts it: the
    conversation and notes (`tokens`) plus the system prompt and tool definitions
    (`system`)."""
    used = int(context.get("tokens") or 0) + int(context.get("system") or 0)
    limit = context.get("limit")
    if isinstance(limit, int) and limit > 0:
        share = f"{used * 100 // limit}% of {tokens(limit)}"
        return Field((f"context {share}", share, f"{used * 100 // limit}%"), CONTEXT)
    return Field((f"context ~{tokens(used)} tokens", f"~{tokens(used)} tokens"), CONTEXT)


def cost_text(cost: Mapping[str, Any]) -> tuple[str, ...]:
    """What the cost is known to be, and what is not, calmly: "$0.0580", "$0.0580 +
    unknown cache" (a provider that does not report cache use), "$0.0580 + unpriced
    tokens", "$0.0580 + earlier turns" (a long resumed session's, counted when it
    first runs), "unknown" (nothing priced is known); longest form first, the shortest
    "≥$0.0580"."""
    usd = cost.get("usd")
    later = cost.get("earlier") == "pending"  # a long resumed session's, not counted yet
    if not isinstance(usd, int | float):
        return ("cost unknown", "$?")
    known = f"${usd:.4f}"
    if cost.get("complete") is True and not later:
        return (f"cost {known}", known)
    missing = [k for k, n in (cost.get("unknown") or {}).items() if n]
    if later:
        what = "earlier turns"
    elif not missing:
        what = "unpriced tokens"  # every count was reported; some had no price
    elif all(k.startswith("cache") for k in missing):
        what = "unknown cache"
    else:
        what = "unknown " + "/".join(k.replace("_", " ") for k in missing)
    return (f"cost {known} + {what}", f"{known} + {what}", f"≥{known}")


def status_fields(
    status: Mapping[str, Any],
    *,
    busy: bool,
    session: str,
    given: bool = True,
    memory: str | None = None,
    extra: Iterable[str] = (),
) -> list[Field]:
    """The status line's fields from `Runtime.status()`: model, state, thinking, cost,
    context, session (`given`: a name the user gave, which may be shortened), plan mode
    (while the runtime is in it: never dropped, so it never goes unnoticed), queue
    (when something is queued), memory (when accounting is on) and plugins' statuses."""
    thinking = str(status["thinking"])
    queued = len(status["queue"])
    fields = [
        Field((inert(str(status["model"])),), MODEL, required=True),
        Field(("working" if busy else "ready",), STATE, required=True),
        *(
            [Field(("plan mode", "plan"), STATE, required=True)]
            if status.get("mode") == "plan"
            else []
        ),
        Field((f"thinking {thinking}", f"think {thinking}"), THINKING),
        Field(cost_text(status["cost"]), COST),
        context_field(status["context"]),
        Field(_session_forms(inert(session), given), SESSION),
    ]
    if queued:
        fields.append(Field((f"queue {queued}", f"q{queued}"), QUEUE))
    if memory is not None:
        fields.append(Field((f"mem {memory}",), MEMORY))
    fields += [Field((text,), PLUGIN) for text in extra]
    return fields


def _session_forms(name: str, given: bool) -> tuple[str, ...]:
    """A name the user gave, shortened before it goes; one smith made up (its date and
    time: "smith 2026-12-07 10:59:18") whole or not at all, as a cut one says nothing."""
    if not given:
        return (f"session {name}",)
    short = name if cell_len(name) <= 16 else cells(name, 15) + "…"
    return (f"session {name}", short) if short != name else (f"session {name}", name)


def queued_text(text: str) -> str:
    """A queued message on one line: its first line, and how many there are (a 50-line
    paste is not 50 lines above the editor)."""
    lines = text.splitlines() or [""]
    more = f"  (+{counted(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    return inert(lines[0]) + more


def size_text(n: int) -> str:
    if abs(n) < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if abs(size) < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"


class StatusLine(Static):
    """The fitted line, drawn at whatever width the widget has now (a resize fits it
    again); setting the same fields again draws nothing."""

    DEFAULT_CSS = "StatusLine { height: 1; }"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.fields: list[Field] = []

    def show(self, fields: list[Field]) -> None:
        if fields != self.fields:
            self.fields = fields
            self.refresh()

    def render(self) -> RenderResult:
        if not self.fields:  # a line set whole (the replay's), or nothing yet
            return super().render()
        return Text(fit(self.fields, self.content_region.width or 80), no_wrap=True)


__all__ = ["Field", "StatusLine", "context_field", "cost_text", "fit", "status_fields", "tokens"]
