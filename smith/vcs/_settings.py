"""What file history may do in a project, from configuration (the `vcs.*` options)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config

MIB = 1024 * 1024


class HistorySettings:
    """Limits and defaults of file history. `home` is smith's data directory (the shadow
    repositories live in its `vcs/`); `user_home` is the user's home directory, which is
    never snapshotted as a project unless `allow_home`."""

    __slots__ = (
        "allow_home",
        "enabled",
        "home",
        "keep_count",
        "keep_days",
        "max_file_size",
        "max_files",
        "max_size",
        "user_home",
        "watch",
    )

    def __init__(
        self,
        home: str,
        *,
        enabled: bool = True,
        max_file_size: int = 10 * MIB,
        max_files: int = 100_000,
        max_size: int = 2048 * MIB,
        allow_home: bool = False,
        keep_days: int = 30,
        keep_count: int = 1000,
        user_home: str | None = None,
        watch: bool = True,
    ) -> None:
        self.home = home
        self.enabled = enabled
        self.max_file_size = max_file_size
        self.max_files = max_files
        self.max_size = max_size
        self.allow_home = allow_home
        self.keep_days = keep_days
        self.keep_count = keep_count
        self.user_home = os.path.realpath(user_home or os.path.expanduser("~"))
        self.watch = watch  # whether a long-lived FileHistory may track changes (inotify)

    @classmethod
    def from_config(cls, config: Config) -> HistorySettings:
        return cls(
            config.home,
            enabled=config["vcs.enabled"] is True,
            max_file_size=config.integer("vcs.max-file-size"),
            max_files=config.integer("vcs.max-files"),
            max_size=config.integer("vcs.max-size"),
            allow_home=config["vcs.allow-home"] is True,
            keep_days=config.integer("vcs.keep-days"),
            keep_count=config.integer("vcs.keep-count"),
            watch=config["vcs.watch"] is True,
        )
