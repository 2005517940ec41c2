"""smith's options for the shell sandbox and approvals (docs/safety.md), registered by
smith.config._options with the rest."""

from __future__ import annotations

from smith.config._schema import Option
from smith.config._types import Boolean, Choice, Mismatch, Strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SANDBOX_MODES = ("workspace-write", "read-only", "off")  # smith.effects._sandbox.MODES
APPROVAL_POLICIES = ("never", "on-failure", "on-request", "untrusted")
# Where credentials live: hidden from sandboxed commands by default (sandbox.hide).
CREDENTIALS = [
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.oci", "~/.kube",
    "~/.docker", "~/.config/containers/auth.json", "~/.netrc", "~/.git-credentials",
    "~/.config/git/credentials", "~/.config/gh", "~/.config/hub", "~/.npmrc", "~/.pypirc",
    "~/.gem/credentials", "~/.cargo/credentials", "~/.cargo/credentials.toml",
    "~/.terraform.d/credentials.tfrc.json", "~/.vault-token", "~/.password-store",
    "~/.local/share/keyrings", "~/.pgpass", "~/.my.cnf", "~/.config/rclone", "~/.s3cfg",
]  # fmt: skip


def _located(path: str) -> bool:
    return path == "~" or path.startswith(("/", "~/"))


class HiddenPaths(Strings):
    """sandbox.hide: paths, each absolute or in the home directory (~/...)."""

    __slots__ = ()

    def expected(self) -> str:
        return "a list of paths, each absolute (/...) or in your home directory (~/...)"

    def example(self) -> str:
        return '"~/.ssh" "~/.aws"'

    def check(self, value: object) -> object:
        paths = super().check(value)
        assert isinstance(paths, list)
        if not all(_located(p) for p in paths):
            raise Mismatch(self.expected())
        return paths

    def parse(self, text: str) -> object:
        return self.check(super().parse(text))


class RevealRules(Strings):
    """sandbox.reveal: COMMAND=PATH rules (a command's first words, a hidden path)."""

    __slots__ = ()

    def expected(self) -> str:
        return ("a list of rules COMMAND=PATH: a command's first words, then = and a path "
                "of sandbox.hide (\"git push=~/.ssh\")")  # fmt: skip

    def example(self) -> str:
        return '"git push=~/.ssh"'

    def check(self, value: object) -> object:
        rules = super().check(value)
        assert isinstance(rules, list)
        for rule in rules:
            words, _, path = rule.partition("=")
            if not words.split() or not _located(path.strip()) or not words.isprintable():
                raise Mismatch(self.expected())
        return rules

    def parse(self, text: str) -> object:
        return self.check(super().parse(text))


def safety_options(add: Callable[[Option], object]) -> None:
    """The shell sandbox and approvals (docs/safety.md)."""
    add(
        Option(
            "sandbox.mode",
            Choice(SANDBOX_MODES),
            "workspace-write",
            doc="How every command smith starts is confined (bubblewrap): workspace-write "
            "(only the project, tools.extra-roots and a private /tmp writable; every git "
            "repository and .smith in them read-only; no network and no host socket), "
            "read-only (only the private /tmp writable), or off (commands run with all of "
            "your rights).",
        )
    )
    add(
        Option(
            "sandbox.network",
            Boolean(),
            False,
            doc="Let sandboxed commands reach the network (off: only their own loopback).",
        )
    )
    add(
        Option(
            "sandbox.hide",
            HiddenPaths(),
            CREDENTIALS,
            doc="Credential locations sandboxed commands never see (an empty directory or "
            "file in their place; symlinks followed): ssh and gpg keys, cloud, container, "
            "git and package-registry credentials. Absolute or ~/ paths.",
        )
    )
    add(
        Option(
            "sandbox.reveal",
            RevealRules(),
            [],
            doc="Credential locations of sandbox.hide a command may see, as COMMAND=PATH "
            "rules: a bash command starting with those words (a plain simple command, as "
            'approval.allow matches) sees PATH, read-only ("git push=~/.ssh").',
        )
    )
    add(
        Option(
            "sandbox.fallback",
            Choice(("refuse", "off")),
            "refuse",
            doc="Where the sandbox cannot run (no bubblewrap, no user namespaces): refuse "
            "commands, or run them without it (with a warning at start).",
        )
    )
    add(
        Option(
            "approval",
            Choice(APPROVAL_POLICIES),
            "on-failure",
            doc="When smith asks before a tool call: never; on-failure (a command the "
            "sandbox stopped may be retried outside it once you approve); on-request (the "
            "model may ask to run a command outside the sandbox, with a reason); "
            "untrusted (every call of a tool that is not read-only asks first: bash, write, "
            "edit, and any tool that does not declare that it only reads).",
        )
    )
    for which, what in (("allow", "run without asking"), ("deny", "refuse, whatever else")):
        add(
            Option(
                f"approval.{which}",
                Strings(),
                [],
                doc=f"Tool calls to {what}: a tool's name (write, edit, bash) or the start "
                "of a bash command, whole words (git status, rm -rf). Deny wins over allow.",
            )
        )
