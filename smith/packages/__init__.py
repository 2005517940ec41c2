"""Plugin packages: what `plugin.kdl` says (PackageManifest), where installed packages
live and how they get there (`smith plugins install`), and the declarative parts a
package bundles (docs/plugins.md)."""

from smith.packages._claude import read_claude
from smith.packages._declarative import (
    Installed,
    PackageHooks,
    PackageServer,
    expand_root,
    installed,
    package_folders,
    package_hooks,
    package_mcp_servers,
    package_templates,
    package_themes,
)
from smith.packages._manifest import CommandDecl, Grants, OptionDecl, PackageManifest, ToolDecl

__all__ = [
    "CommandDecl",
    "Grants",
    "Installed",
    "OptionDecl",
    "PackageHooks",
    "PackageManifest",
    "PackageServer",
    "ToolDecl",
    "expand_root",
    "installed",
    "package_folders",
    "package_hooks",
    "package_mcp_servers",
    "package_templates",
    "package_themes",
    "read_claude",
]
