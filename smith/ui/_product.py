"""What plugins select of the product's presentation: layouts and escape hatches.

A layout is the app's regions from top to bottom (`LAYOUT_REGIONS`): a plugin
contributes named layouts (`Plugin.layouts`, plugin.kdl `layout`), `tui.layout NAME`
picks one, and a region a layout leaves out is not shown. The transcript and the input
are in every layout (`REQUIRED_REGIONS`): without them there is no conversation.

An escape hatch is something only some frontends can do (`HATCHES`). Plugins never ask
which frontend is active (docs/ui.md): a plugin declares the hatches it uses in its
manifest (`Plugin.frontend`, plugin.kdl `frontend`), asks for one with the `Hatch` UI
intent, and a frontend that cannot do it drops it. A hatch its plugin did not declare is
refused with a diagnostic naming both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The app's regions, in the standard layout's order (top to bottom), each with what it
# shows (docs/ui.md's table says the same).
LAYOUT_REGIONS: Mapping[str, str] = {
    "transcript": "the conversation, with its search field and the 'new output below' line",
    "todo": "the agent's todo list, pinned",
    "queue": "the inputs queued while the agent works",
    "working": "the working indicator (what runs, for how long, the key that stops it)",
    "input": "the editor the user writes in",
    "status": "the status line (model, cost, context, plugins' status)",
}
REQUIRED_REGIONS = ("transcript", "input")
STANDARD_LAYOUT = tuple(LAYOUT_REGIONS)

# The escape hatches a manifest may declare, each with what the frontend does with the
# hatch's value.
HATCHES: Mapping[str, str] = {
    "clipboard": "copy the value to the user's clipboard",
    "open-url": "open the value, an http(s) URL, in the user's browser",
    "bell": "ring the terminal's bell (the value is ignored)",
}


def layout_problem(regions: Sequence[str]) -> str | None:
    """What is wrong with `regions` as a layout, or None: each must be one of
    LAYOUT_REGIONS, once, and the required ones must be there."""
    for region in regions:
        if region not in LAYOUT_REGIONS:
            known = ", ".join(LAYOUT_REGIONS)
            return f"names {region!r}, which is no region (the regions: {known})"
    twice = sorted({r for r in regions if list(regions).count(r) > 1})
    if twice:
        return f"names {', '.join(twice)} more than once"
    missing = [r for r in REQUIRED_REGIONS if r not in regions]
    if missing:
        return f"leaves out {' and '.join(missing)}, which every layout shows"
    return None


__all__ = ["HATCHES", "LAYOUT_REGIONS", "REQUIRED_REGIONS", "STANDARD_LAYOUT", "layout_problem"]
