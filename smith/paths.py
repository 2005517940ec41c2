"""Where smith keeps its files: configuration, data, and the project it works on.

    $SMITH_CONFIG_HOME  (default $XDG_CONFIG_HOME/smith, else ~/.config/smith)
        config.kdl              user configuration
    $SMITH_HOME         (default $XDG_DATA_HOME/smith, else ~/.local/share/smith)
        trust.json              projects whose .smith/config.kdl is trusted
        sessions/, vcs/         written by the session and VCS capabilities
        auth.json               stored credentials, owner-only (smith.providers._auth)
        catalog-cache.json      model lists from `smith models --refresh`
    $SMITH_CACHE_HOME   (default $XDG_CACHE_HOME/smith, else ~/.cache/smith)
        wasm/                   compiled WebAssembly plugins (smith.wasm)
    <project>/.smith/config.kdl project configuration, read only once trusted

Functions take the environment as an argument so that tests and embedders never depend on
process-global state.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import TypeVar

    T = TypeVar("T")

USER_CONFIG_NAME = "config.kdl"
PROJECT_DIR_NAME = ".smith"
PROJECT_MARKERS = (PROJECT_DIR_NAME, ".git")


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> str:
    value = env.get(var, "")
    # The XDG spec says relative paths are invalid and must be ignored.
    if value and os.path.isabs(value):
        return value
    return os.path.join(_home(env), fallback)


def default_config_home(env: Mapping[str, str]) -> str:
    return os.path.join(_xdg(env, "XDG_CONFIG_HOME", ".config"), "smith")


def default_data_home(env: Mapping[str, str]) -> str:
    return os.path.join(_xdg(env, "XDG_DATA_HOME", os.path.join(".local", "share")), "smith")


def default_cache_home(env: Mapping[str, str]) -> str:
    return os.path.join(_xdg(env, "XDG_CACHE_HOME", ".cache"), "smith")


def find_project_root(start: str, env: Mapping[str, str] | None = None) -> str:
    """The nearest directory at or above `start` holding `.smith/` or `.git`, else `start`.

    The home directory itself only counts when it holds `.smith/`: a dotfiles repository
    in ~ should not make every directory below it one project.
    """
    start = os.path.realpath(start)
    home = os.path.realpath(_home(os.environ if env is None else env))
    current = start
    while True:
        markers = (PROJECT_DIR_NAME,) if current == home else PROJECT_MARKERS
        if any(os.path.exists(os.path.join(current, marker)) for marker in markers):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


def project_config_path(root: str) -> str:
    return os.path.join(root, PROJECT_DIR_NAME, USER_CONFIG_NAME)


def project_key(cwd: str) -> str:
    """A readable, collision-resistant directory name for a project path: where its
    sessions, file history and prompt history are kept under the home."""
    import zlib

    readable = cwd.strip("/").replace("/", "-").replace(":", "-")[-60:] or "root"
    return f"{readable}-{zlib.crc32(os.fsencode(cwd)):08x}"


def distinct_places(items: Iterable[T], path: Callable[[T], str]) -> list[T]:
    """`items` in order, less each whose `path` leads (once symlinks are resolved) where
    an earlier one's does: a folder reached twice (a project at the home directory) is
    looked at once."""
    seen: set[str] = set()
    kept = []
    for item in items:
        real = os.path.realpath(path(item))
        if real not in seen:
            seen.add(real)
            kept.append(item)
    return kept
