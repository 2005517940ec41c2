"""Plugin packages: what `plugin.kdl` says (PackageManifest), where installed packages
live and how they get there (`smith plugins install`), and the declarative parts a
package bundles (docs/plugins.md)."""

from smith.packages._manifest import CommandDecl, Grants, OptionDecl, PackageManifest, ToolDecl

__all__ = ["CommandDecl", "Grants", "OptionDecl", "PackageManifest", "ToolDecl"]
