"""The shell sandbox: every process smith starts for the model or the user runs under
bubblewrap (`bwrap`), in the mode `sandbox.mode` names.

    workspace-write  the root filesystem read-only; the project root, tools.extra-roots
                     and a private /tmp writable; inside them every git repository (.git,
                     at any depth) and tools.protected name (.smith) read-only
                     (smith.effects._repos), and a repository the command makes moved
                     out after it
    read-only        nothing writable but the private /tmp
    off              no sandbox: the command runs as the user's own process

In both sandboxed modes the command has no network (a network namespace of its own with
only loopback, unless `sandbox.network`) and no unix socket of its own to reach the
host's with (a seccomp filter: smith.effects._seccomp), a PID namespace of its own
(nothing it starts outlives it, and it sees neither smith's process nor its file
descriptors), only the three standard descriptors, and no provider credential in its
environment (the caller withholds them: ToolContext.withhold). Hidden from it: smith's
data and configuration directories (empty; where the project is inside one, everything
of it but the way down to the project, which is read-only) and the credential locations
of `sandbox.hide` (an empty directory over a directory, an empty file over a file), but
those `sandbox.reveal` lets through for a command starting with given words. Every path
is resolved before it is mounted (a symlinked directory is mounted where it leads).

Where bubblewrap is missing or cannot make its namespaces, `unavailable()` says why, and
`sandbox.fallback` decides: `refuse` (commands are refused, with that diagnostic) or
`off` (they run unsandboxed, with a warning at start).

`Sandbox.confinement` prepares one command: its bwrap command line, the descriptor bwrap
reads the filter from, and after it ran, the repositories it made moved out.
smith.effects._procs runs the command line with its reaper inside, as it runs an
unsandboxed command in a PID namespace.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

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
    from smith._spawn import process_env, run_child

    try:  # a helper: waited for, bwrap's own init included (smith._spawn)
        probe = run_child([bwrap, *_namespaces(network=False), *BASE, "true"], cwd="/",
                          env=process_env(secrets=True), timeout=10)  # fmt: skip
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


# Plain words only: no quoting, expansion, glob, operator or redirection.
SIMPLE = re.compile(r"[\w./:@%+,=~-]+(?:[ \t]+[\w./:@%+,=~-]+)*")
CONFIG_LINKS = 200  # most entries of smith's configuration directory looked at for symlinks


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def reveals(words: tuple[str, ...], command: str) -> bool:
    """Whether a sandbox.reveal rule's `words` start `command`: a simple command of plain
    words only (no quote, variable, glob, redirection or second command), so the rule
    covers exactly what it names, as an approval.allow rule does."""
    text = command.strip(" \t")
    return SIMPLE.fullmatch(text) is not None and tuple(text.split()[: len(words)]) == words


@dataclass(frozen=True)
class Sandbox:
    """How commands are confined (from sandbox.*): `mode` (MODES), `network`, `fallback`
    (FALLBACKS); `hidden`: smith's own directories, never shown to a command;
    `credentials`: the paths of sandbox.hide (absolute); `reveal`: sandbox.reveal's rules
    (a command's first words, a path let through for it); `shown`: the paths let through
    for this command (`for_command`); `quarantine`: where a repository a command made is
    moved. `moved`: (directory, where the command sees it) pairs: a root given as the
    directory is mounted in the other's place, so a command that names that place in
    any spelling reaches the directory (replay --reexecute runs commands in a scratch
    copy mounted where the project was; the project itself is out of reach).
    `readable`: folders a command sees read-only even where the rest hides them (a
    skill's folder in smith's configuration directory, for its own tool's command)."""

    mode: str = "workspace-write"
    network: bool = False
    fallback: str = "refuse"
    hidden: tuple[str, ...] = ()
    moved: tuple[tuple[str, str], ...] = ()
    credentials: tuple[str, ...] = ()
    reveal: tuple[tuple[tuple[str, ...], str], ...] = ()
    shown: tuple[str, ...] = ()
    quarantine: str = ""
    readable: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Config) -> Sandbox:
        """sandbox.* as configured; smith's data and configuration directories hidden."""
        rules = []
        for rule in _strings(config["sandbox.reveal"]):
            words, _, path = str(rule).partition("=")
            rules.append((tuple(words.split()), os.path.expanduser(path.strip())))
        return cls(
            mode=str(config["sandbox.mode"]),
            network=bool(config["sandbox.network"]),
            fallback=str(config["sandbox.fallback"]),
            # Its data (auth file, sessions, file history), its configuration (header
            # credentials, and what would turn this sandbox off) and its cache (compiled
            # plugins: native code smith runs).
            hidden=(config.home, str(config["config-home"]), str(config["cache-home"])),
            credentials=tuple(os.path.expanduser(p) for p in _strings(config["sandbox.hide"])),
            reveal=tuple(rules),
            quarantine=os.path.join(config.home, "quarantine"),
        )

    def for_command(self, command: str) -> Sandbox:
        """This sandbox for one bash command: the credentials sandbox.reveal lets through
        for it shown."""
        shown = tuple(path for words, path in self.reveal if reveals(words, command))
        return replace(self, shown=shown) if shown else self

    @property
    def effective(self) -> str:
        """The mode commands run in: `mode`, or "off" where the sandbox cannot run and the
        fallback is off, or "refused" where it is refuse."""
        if self.problem() is None:
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
        """(cause, remedy) when the configured mode cannot be had here: no bubblewrap, or,
        without the network, no socket filter."""
        if self.mode == "off":
            return None
        found = unavailable()
        if found is None and not self.network:
            from smith.effects._seccomp import problem

            missing = problem()
            found = None if missing is None else (missing.cause, missing.remedy)
        return found

    def writable(self, roots: Sequence[str]) -> list[str]:
        """The roots a command may write, as real paths: none in read-only; never one that
        holds the system or the user's home, nor one inside smith's own directories."""
        if self.mode != "workspace-write":
            return []
        own = [os.path.realpath(p) for p in self.hidden]
        found = [os.path.realpath(r) for r in roots if os.path.isdir(r) and not _too_wide(r)]
        return [r for r in found if not any(_under(r, o) for o in own)]

    def confinement(self, *, roots: list[str], cwd: str,
                    protected: tuple[str, ...]) -> Confinement:  # fmt: skip
        """One command's confinement (see Confinement)."""
        return Confinement(self, roots=roots, cwd=cwd, protected=protected)

    def wrap(self, argv: list[str], *, roots: list[str], cwd: str, protected: tuple[str, ...],
             seccomp: int | None = None, readonly: Iterable[str] = ()) -> list[str]:  # fmt: skip
        """`argv` under bubblewrap: `roots` writable in workspace-write (the project root
        first; `protected` names under it and the `readonly` paths stay read-only), the
        rest as the module says. `seccomp`: the descriptor bwrap reads the socket filter
        from (smith.effects._seccomp.descriptor, which the caller passes to that process
        alone); None: no filter (a caller that cannot pass one)."""
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
        writable = self.writable(roots)
        for root in dict.fromkeys(os.path.realpath(r) for r in roots):
            if os.path.isdir(root):
                # A root that holds the whole system or the user's home is never writable
                # (started in / or ~, workspace-write would be no sandbox at all).
                out += ["--bind" if root in writable else "--ro-bind", root, self.seen_at(root)]
        if writable:
            named = [os.path.join(writable[0], p) for p in protected if "/" in p.strip("/")]
            named += [os.path.join(r, p.strip("/")) for r in writable for p in protected]
            for path in dict.fromkeys([*named, *readonly]):
                real = os.path.realpath(path)  # a symlinked .git: its target is what matters
                # ... when it is writable at all: a `.git -> /` must not bind / over all.
                if os.path.lexists(path) and any(_under(real, r) for r in writable):
                    out += ["--ro-bind", real, self.seen_at(real)]
        keep = [*(os.path.realpath(r) for r in roots), os.path.realpath(cwd)]
        out += self._credentials(keep)
        for path in self.hidden:
            out += _hide_smiths(os.path.realpath(path), keep, writable)
        out += self._readable()
        if seccomp is not None:
            out += ["--seccomp", str(seccomp)]
        return [*out, "--chdir", self.seen_at(os.path.realpath(cwd)), "--", *argv]

    def _credentials(self, keep: list[str]) -> list[str]:
        """sandbox.hide's paths hidden, but those shown for this command (a path under a
        hidden directory is mounted back into it, read-only)."""
        out = []
        for path in self.credentials:
            if path not in self.shown:
                out += _hidden(os.path.realpath(path), keep)
        for path in self.shown:
            real = os.path.realpath(path)
            under = [c for c in self.credentials if c != path and _under(path, c)]
            if under and os.path.exists(real):
                out += ["--ro-bind", real, real]
        return out

    def _readable(self) -> list[str]:
        """The `readable` folders mounted read-only over what hid them (at their real
        path, and where they are named if that differs: a symlinked skill); never one
        that holds smith's own directories, nor a link into them from elsewhere."""
        own = [os.path.realpath(p) for p in self.hidden]
        out: list[str] = []
        for path in dict.fromkeys(self.readable):
            real = os.path.realpath(path)
            if not os.path.isdir(real) or any(_under(o, real) for o in own):
                continue
            named = os.path.abspath(path)
            if any(_under(real, o) and not _under(named, o) for o in own):
                continue  # a link from elsewhere into smith's own directories
            for place in dict.fromkeys((real, os.path.abspath(path))):
                out += ["--ro-bind", real, self.seen_at(place)]
            for secret in self.credentials:  # sandbox.hide's paths inside it stay hidden
                if _under(os.path.realpath(secret), real) and secret not in self.shown:
                    out += _hidden(os.path.realpath(secret), [])
        return out

    def seen_at(self, path: str) -> str:
        """Where a command in the sandbox sees `path` (`moved`: a moved directory's
        contents are seen in its place)."""
        for directory, place in self.moved:
            if _under(path, directory):
                return os.path.normpath(
                    os.path.join(os.path.realpath(place), os.path.relpath(path, directory))
                )
        return path

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The command's environment in the sandbox: its temporary directory is the
        private one (the host's TMPDIR is read-only or hidden there)."""
        if self.effective not in ("workspace-write", "read-only"):
            return env
        kept = {k: v for k, v in env.items() if k not in HOST_SOCKETS}
        return {**kept, "TMPDIR": TMP, "TMP": TMP, "TEMP": TMP}


def _hidden(real: str, keep: list[str]) -> list[str]:
    """Mounts that make `real` look empty (an empty directory, an empty file), unless it
    is missing or holds what must stay seen (the project: hiding would hide it)."""
    if any(_under(k, real) for k in keep) or not os.path.lexists(real):
        return []
    if os.path.isdir(real):
        return ["--tmpfs", real]
    # Read as empty; /dev/null bound --ro-bind would be nodev, and unreadable. (A FIFO or
    # socket needs no cover: nothing is read from one, and no socket can be made to it.)
    return ["--dev-bind", "/dev/null", real] if os.path.isfile(real) else []


def _hide_smiths(real: str, keep: list[str], writable: list[str]) -> list[str]:
    """smith's own directory `real` out of the command's reach whatever the project is:
    hidden; where the project (or cwd, a root) is inside it, read-only and everything but
    the way down to them hidden; and where its entries are symlinks into a writable root
    (dotfiles kept in a project, linked by GNU stow), their targets hidden too."""
    if not os.path.isdir(real):
        return _hidden(real, keep)
    out = []
    inside = [k for k in keep if _under(k, real)]
    if inside:
        out += ["--ro-bind", real, real]
        out += _around(real, inside)
    else:
        out += ["--tmpfs", real]
    for target in _linked(real):
        if any(_under(target, w) for w in writable):
            out += _hidden(target, keep)
    return out


def _around(directory: str, inside: list[str]) -> list[str]:
    """Everything in `directory` hidden but the way down to `inside` (paths in it)."""
    if directory in inside:
        return []  # the project itself (its own protections were mounted already)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(directory, name)
        below = [k for k in inside if _under(k, path)]
        if below and os.path.isdir(path) and not os.path.islink(path):
            out += _around(path, below)
        elif not below and not os.path.islink(path):
            out += _hidden(path, [])
    return out


def _linked(directory: str) -> list[str]:
    """Where the symbolic links in `directory` lead (the first CONFIG_LINKS entries,
    breadth first; links not followed)."""
    found, todo, seen = [], [directory], 0
    while todo and seen < CONFIG_LINKS:
        try:
            with os.scandir(todo.pop(0)) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_symlink():
                        found.append(os.path.realpath(entry.path))
                    elif entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            continue
    return found


class Confinement:
    """One command in the sandbox: `argv` (its bwrap command line, for _procs.Job), `fds`
    (what that process alone inherits: the socket filter's pipe), `started` (closes them
    in smith once the process has its own), and `settle` (after the command: the
    repositories it made are moved out of the project; what to tell about that)."""

    def __init__(self, sandbox: Sandbox, *, roots: list[str], cwd: str,
                 protected: tuple[str, ...]) -> None:  # fmt: skip
        from smith.effects import _repos, _seccomp

        self.sandbox, self.roots, self.cwd, self.protected = sandbox, roots, cwd, protected
        self.writable = sandbox.writable(roots)
        self.names = tuple(p.strip("/") for p in protected if "/" not in p.strip("/"))
        self.own = [os.path.realpath(p) for p in sandbox.hidden]
        self.before = _repos.scan(self.writable, self.names, self.own) if self.writable else {}
        self.fds: tuple[int, ...] = () if sandbox.network else (_seccomp.descriptor(),)

    def argv(self, argv: list[str]) -> list[str]:
        return self.sandbox.wrap(argv, roots=self.roots, cwd=self.cwd, protected=self.protected,
                                 seccomp=self.fds[0] if self.fds else None,
                                 readonly=list(self.before))  # fmt: skip

    def started(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = ()

    def settle(self) -> str:
        """Move the repositories the command made out of the project; the notice for its
        result ("" when there were none)."""
        from smith.effects import _repos

        self.started()
        if not self.writable:
            return ""
        made = _repos.appeared(self.before, _repos.scan(self.writable, self.names, self.own))
        if not made:
            return ""
        into = self.sandbox.quarantine
        if not into:  # a bare Sandbox (no data directory): a private one of smith's
            import tempfile

            into = tempfile.mkdtemp(prefix="smith-quarantine-")
        lines = []
        for source, target, failed in _repos.quarantine(made, into):
            lines.append(f"  {source} -> {target}" if target
                         else f"  {source} (could not be moved: {failed}; delete it)")  # fmt: skip
        return QUARANTINED.format(moves="\n".join(lines))


QUARANTINED = (
    "[smith moved the git repositories this command made out of the project:\n{moves}\n"
    "A repository made in the sandbox could run programs on the user's machine at their "
    "next git command there (its config and hooks), so none is left in the project "
    "(docs/safety.md). If one is wanted, the user can review it and move it back; a "
    "command that must make one can be run outside the sandbox with the user's approval.]"
)


OFF = Sandbox(mode="off")
