"""The shell sandbox: every process smith starts for the model or the user runs under
bubblewrap (`bwrap`), in the mode `sandbox.mode` names.

    workspace-write  the root filesystem read-only; the project root, tools.extra-roots
                     and a private /tmp writable; the project's .git and .smith
                     read-only; smith's data directory hidden (an empty directory over
                     it: auth file, sessions, file history)
    read-only        nothing writable but the private /tmp
    off              no sandbox: the command runs as the user's own process

In both sandboxed modes the command has no network (a network namespace of its own with
only loopback, unless `sandbox.network`), a PID namespace of its own (nothing it starts
outlives it, and it sees neither smith's process nor its file descriptors), only the
three standard descriptors, and no provider credential in its environment (the caller
withholds them: ToolContext.withhold).

Where bubblewrap is missing or cannot make its namespaces, `unavailable()` says why, and
`sandbox.fallback` decides: `refuse` (commands are refused, with that diagnostic) or
`off` (they run unsandboxed, with a warning at start).

`Sandbox.wrap` puts the bwrap command line in front of a command; smith.effects._procs
runs it with its reaper inside, as it runs an unsandboxed command in a PID namespace.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from smith.diagnostics import DiagnosticKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.config import Config
    from smith.diagnostics import Diagnostic, Source

MODES = ("workspace-write", "read-only", "off")
FALLBACKS = ("refuse", "off")
TMP = "/tmp"  # the sandbox's private temporary directory (a tmpfs)
# Variables naming the host's service sockets (hidden in the sandbox anyway).
HOST_SOCKETS = frozenset({"SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST"})
BASE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")  # what every mode has

SANDBOX_UNAVAILABLE = DiagnosticKind(
    "sandbox.unavailable",
    what="the shell sandbox cannot run here: {cause}",
    why="sandbox.mode is {mode}, so smith runs every command it starts under bubblewrap; "
    "sandbox.fallback is {fallback}, so {then}",
    fix="{remedy}; or set sandbox.mode off (or sandbox.fallback off) to run commands "
    "without it: `smith config set sandbox.mode off`",
    severity="warning",
)

SANDBOX_REFUSED = DiagnosticKind(
    "sandbox.refused",
    what="this command was not run: the shell sandbox cannot run here ({cause})",
    why="sandbox.mode is {mode} and sandbox.fallback is refuse: smith starts no process "
    "outside the sandbox",
    fix="{remedy}; or set sandbox.mode off (or sandbox.fallback off) to run commands without it",
)

SANDBOX_OFF = DiagnosticKind(
    "sandbox.off",
    what="the shell sandbox is off: commands run with all of your rights",
    why="sandbox.mode is off (set in {origin}), so a command the model runs can write anywhere "
    "you can and reach the network",
    fix="leave sandbox.mode at its default (workspace-write) unless a command needs more; "
    "`smith config show sandbox.mode` shows where it was set",
    severity="warning",
)


def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def unavailable() -> tuple[str, str] | None:
    """Why bubblewrap cannot sandbox a command here, and what to do about it; None when
    it can (probed once: a `true` in the namespaces a command gets)."""
    import sys

    if not sys.platform.startswith("linux"):
        return (f"bubblewrap runs only on Linux, and this is {sys.platform}",
                "run smith on Linux for the sandbox")  # fmt: skip
    bwrap = _bwrap()
    if bwrap is None:
        return ("bubblewrap (bwrap) is not installed",
                "install it: `apt-get install bubblewrap` (Debian, Ubuntu), "
                "`dnf install bubblewrap` (Fedora)")  # fmt: skip
    try:
        probe = subprocess.run(
            [bwrap, *_namespaces(network=False), *BASE, "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return (f"{bwrap} could not be run ({exc})", "check the bubblewrap installation")
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return (f"{bwrap} could not make its namespaces ({said[-1] if said else 'no reason'})",
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1;"
                " on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0), or make "
                "bwrap setuid")  # fmt: skip
    return None


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _too_wide(root: str) -> bool:
    """Whether `root` is /, or holds the user's home (or is it)."""
    real = os.path.realpath(root)
    home = os.path.realpath(os.path.expanduser("~"))
    return real == "/" or _under(home, real)


@functools.cache
def _interpreter() -> tuple[str, ...]:
    """The directories of the Python smith runs on (a virtual environment and the
    installation it is made from)."""
    import sys

    found = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return tuple(sorted(os.path.realpath(p) for p in found if p))


def _namespaces(*, network: bool) -> list[str]:
    # No capabilities inside: as root, a command could otherwise unmount what hides and
    # remount what is read-only.
    flags = ["--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    return [*flags, "--share-net"] if network else flags


@dataclass(frozen=True)
class Sandbox:
    """How commands are confined (from sandbox.*): `mode` (MODES), `network`, `fallback`
    (FALLBACKS), and `hidden`: smith's own directories, never shown to a command.
    `moved`: (directory, where the command sees it) pairs: a root given as the directory
    is mounted in the other's place, so a command that names that place in any spelling
    reaches the directory (replay --reexecute runs commands in a scratch copy mounted
    where the project was; the project itself is out of reach)."""

    mode: str = "workspace-write"
    network: bool = False
    fallback: str = "refuse"
    hidden: tuple[str, ...] = ()
    moved: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_config(cls, config: Config) -> Sandbox:
        """sandbox.* as configured; smith's data directory is hidden."""
        return cls(
            mode=str(config["sandbox.mode"]),
            network=bool(config["sandbox.network"]),
            fallback=str(config["sandbox.fallback"]),
            # Its data (auth file, sessions, file history) and its configuration (header
            # credentials, and what would turn this sandbox off).
            hidden=(config.home, str(config["config-home"])),
        )

    @property
    def effective(self) -> str:
        """The mode commands run in: `mode`, or "off" where the sandbox cannot run and the
        fallback is off, or "refused" where it is refuse."""
        if self.mode == "off" or unavailable() is None:
            return self.mode
        return "off" if self.fallback == "off" else "refused"

    def warnings(self, source: Source) -> list[Diagnostic]:
        """What to say at start: the sandbox is off (`source`: where sandbox.mode was
        set), or it cannot run here and what sandbox.fallback makes of that."""
        if self.mode == "off":
            return [SANDBOX_OFF(value="off", source=source, origin=source.location)]
        problem = self.problem()
        if problem is None:
            return []
        cause, remedy = problem
        then = ("every command is refused" if self.fallback == "refuse"
                else "commands run without it, with all of your rights")  # fmt: skip
        return [SANDBOX_UNAVAILABLE(cause=cause, mode=self.mode, fallback=self.fallback,
                                    then=then, remedy=remedy)]  # fmt: skip

    def problem(self) -> tuple[str, str] | None:
        """(cause, remedy) when the configured mode cannot be had here."""
        return None if self.mode == "off" else unavailable()

    def wrap(self, argv: list[str], *, roots: list[str], cwd: str,
             protected: tuple[str, ...]) -> list[str]:  # fmt: skip
        """`argv` under bubblewrap: `roots` writable in workspace-write (the project root
        first; `protected` names under it stay read-only), the rest as the module says."""
        bwrap = _bwrap()
        assert bwrap is not None and self.effective in ("workspace-write", "read-only")
        out = [bwrap, *_namespaces(network=self.network)]
        out += [*BASE, "--tmpfs", TMP]
        # What the private /tmp covers and a command needs: smith's own Python (its
        # reaper runs on it), read-only.
        for path in _interpreter():
            if _under(path, TMP):
                out += ["--ro-bind", path, path]
        # Sockets of the host's services (dbus, docker, ssh agents, systemd --user) live
        # under /run: none is reachable (only loopback inside is "the network").
        if os.path.isdir("/run"):
            out += ["--tmpfs", "/run"]
        writable = self.mode == "workspace-write"
        for root in roots:
            if os.path.isdir(root):
                # A root that holds the whole system or the user's home is never writable
                # (started in / or ~, workspace-write would be no sandbox at all).
                bind = "--bind" if writable and not _too_wide(root) else "--ro-bind"
                out += [bind, root, self.seen_at(root)]
        if writable:
            for name in protected:
                path = os.path.join(roots[0], name)
                if os.path.lexists(path):  # a symlinked .git: its target is what matters
                    real = os.path.realpath(path)
                    if os.path.exists(real):
                        out += ["--ro-bind", real, self.seen_at(real)]
        for path in self.hidden:
            if any(_under(root, os.path.realpath(path)) for root in (*roots, cwd)):
                continue  # the project is inside it: hiding it would hide the project
            if os.path.isdir(path):
                out += ["--tmpfs", path]
            elif os.path.isfile(path):
                out += ["--ro-bind", "/dev/null", path]
        return [*out, "--chdir", self.seen_at(cwd), "--", *argv]

    def seen_at(self, path: str) -> str:
        """Where a command in the sandbox sees `path` (`moved`: a moved directory's
        contents are seen in its place)."""
        for directory, place in self.moved:
            if _under(path, directory):
                return os.path.normpath(os.path.join(place, os.path.relpath(path, directory)))
        return path

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The command's environment in the sandbox: its temporary directory is the
        private one (the host's TMPDIR is read-only or hidden there)."""
        if self.effective not in ("workspace-write", "read-only"):
            return env
        kept = {k: v for k, v in env.items() if k not in HOST_SOCKETS}
        return {**kept, "TMPDIR": TMP, "TMP": TMP, "TEMP": TMP}


OFF = Sandbox(mode="off")
