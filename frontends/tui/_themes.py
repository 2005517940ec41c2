"""Themes installed packages bring (plugin.kdl `theme "NAME" { primary "#..."; ... }`,
smith.packages.package_themes) as Textual themes the app registers, so `tui.theme NAME`
selects one as it selects a built-in theme (docs/plugins.md, "Declarative parts")."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from textual.app import App
    from textual.theme import Theme

COLOURS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
           "background", "surface", "panel", "boost")  # fmt: skip


def textual_themes(
    found: Mapping[str, Mapping[str, str]], taken: Collection[str] | None = None
) -> tuple[list[Theme], list[str]]:
    """The themes of `found` (name -> colours) Textual can use, and a warning for each
    it cannot: one without `primary`, a colour Textual does not read, a `dark` neither
    true nor false, or a name `taken` already (Textual's own themes by default: a
    package's theme never replaces one)."""
    from textual.color import Color, ColorParseError
    from textual.theme import BUILTIN_THEMES, Theme

    taken = BUILTIN_THEMES if taken is None else taken
    themes: list[Theme] = []
    warnings: list[str] = []
    for name, colours in found.items():
        if name in taken:
            warnings.append(f"the theme {name} of a plugin was not registered: smith already "
                            "has a theme of that name (rename it)")  # fmt: skip
            continue
        bad = []
        dark_given = str(colours.get("dark", "true")).lower()
        if dark_given not in ("true", "false"):
            bad.append(f"dark {colours['dark']!r} (it is true or false)")
        for key in COLOURS:
            if key in colours:
                try:
                    Color.parse(colours[key])
                except ColorParseError:
                    bad.append(f"{key} {colours[key]!r}")
        if "primary" not in colours:
            bad.append("no primary colour")
        if bad:
            warnings.append(f"the theme {name} was not registered: {', '.join(bad)}")
            continue
        get = colours.get
        dark = dark_given == "true"
        themes.append(
            Theme(
                name=name,
                primary=colours["primary"],
                secondary=get("secondary"),
                warning=get("warning"),
                error=get("error"),
                success=get("success"),
                accent=get("accent"),
                foreground=get("foreground"),
                background=get("background"),
                surface=get("surface"),
                panel=get("panel"),
                boost=get("boost"),
                dark=dark,
            )
        )
    return themes, warnings


def use_themes(app: App[Any], found: Mapping[str, Mapping[str, str]], name: str | None) -> None:
    """Register the packages' themes `found` with `app` (a warning for each it cannot
    use), then select `name` (tui.theme, or the product plugin's): one no theme has (a
    package since removed or disabled) is a warning, and the app keeps its default."""
    themes, warnings = textual_themes(found, taken=set(app.available_themes))
    for theme in themes:
        app.register_theme(theme)
    for warning in warnings:
        app.notify(warning, severity="warning")
    if not name:
        return
    if name in app.available_themes:
        app.theme = name
    else:
        app.notify(f"there is no theme {name} (tui.theme): a Textual theme's name, or one an "
                   "enabled plugin brings", severity="warning")  # fmt: skip


__all__ = ["textual_themes", "use_themes"]
