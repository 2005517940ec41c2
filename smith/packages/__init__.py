"""Plugin packages: what `plugin.kdl` says (PackageManifest, read_package), where installed
packages live and how they get there (Store, fetch: `smith plugins install`), and the
declarative parts a package bundles (docs/plugins.md)."""

from smith.packages._claude import read_claude
from smith.packages._declarative import (
    Installed,
    PackageHooks,
    PackageServer,
    expand_root,
    installed,
    package_folders,
    package_hooks,
    package_keybindings,
    package_mcp_servers,
    package_templates,
    package_themes,
)
from smith.packages._manifest import (
    CommandDecl,
    Grants,
    OptionDecl,
    PackageManifest,
    RouteDecl,
    ToolDecl,
)
from smith.packages._read import MANIFEST, bundled, manifest_path, read_package, valid_name
from smith.packages._sources import Fetched, fetch, split_ref
from smith.packages._store import Store, content_hash

__all__ = [
    "MANIFEST",
    "CommandDecl",
    "Fetched",
    "Grants",
    "Installed",
    "OptionDecl",
    "PackageHooks",
    "PackageManifest",
    "PackageServer",
    "RouteDecl",
    "Store",
    "ToolDecl",
    "bundled",
    "content_hash",
    "expand_root",
    "fetch",
    "installed",
    "manifest_path",
    "package_folders",
    "package_hooks",
    "package_keybindings",
    "package_mcp_servers",
    "package_templates",
    "package_themes",
    "read_claude",
    "read_package",
    "split_ref",
    "valid_name",
]
