"""Reading configuration files: regular UTF-8 files of at most 1 MiB, never anything else.

Every file configuration reads (the user's config.kdl, a project's, and through
smith.trust the trust list) is looked at before it is opened and again once open, opened
without blocking, and read up to a bound (smith.trust.read_bounded). A project's file
must stay inside the project once symlinks are resolved: it is read on the project's
behalf, and a commit can make it a link to /dev/zero, /proc/self/environ or smith's own
files. The user's file may be a symlink anywhere (a dotfiles repository, GNU stow), but
only to a regular file.
"""

from __future__ import annotations

from smith import trust
from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from smith.diagnostics import Diagnostic

UNUSABLE_FILE = DiagnosticKind(
    "config.unusable-file",
    what="cannot read this configuration file: it {problem}",
    why="smith reads configuration only from a regular UTF-8 file of at most {bound} "
    "(a device such as /dev/zero never ends, a FIFO waits for a writer), and will not run "
    "with configuration it cannot see",
    fix="{remedy}; `smith config path` says which files smith reads",
)
PROJECT_UNUSABLE = DiagnosticKind(
    "config.project-unusable",
    severity="warning",
    what="ignoring this project's configuration: it {problem}",
    why="a project's configuration applies only as a regular UTF-8 file of at most "
    "{bound} inside the project, the text you trusted; anything else (a link to "
    "/dev/zero or out of the project, which a commit can plant) applies nothing",
    fix="{remedy}, then run `smith trust {root}` if it should apply",
)


def read(
    path: str, *, project: str | None = None, exact: bool = False
) -> tuple[str | None, Diagnostic | None]:
    """The text of the configuration file `path` (None when there is none), or what is
    wrong with it. `project`: the root of the project whose file it is (a warning, and
    the file must stay inside it); None for the user's file (an error). Newlines read as
    \\n, unless `exact` (for an edit in place)."""
    try:
        return trust.config_text(path, inside=project, exact=exact), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        problem, remedy = _problem(exc)
    source = Source("file", path)
    bound = trust.byte_size(trust.CONFIG_MAX_BYTES)
    if project is None:
        return None, UNUSABLE_FILE(source=source, problem=problem, bound=bound, remedy=remedy)
    return None, PROJECT_UNUSABLE(
        source=source, problem=problem, bound=bound, remedy=remedy, root=project
    )


def _problem(exc: OSError | ValueError) -> tuple[str, str]:
    """What is wrong, as `it ...` continues, and what to do about it."""
    if isinstance(exc, trust.NotRegular):
        return f"is {exc.kind}, not a regular file", (
            "replace it with a regular file (a symlink to one is fine for your own "
            "configuration), or remove it"
        )
    if isinstance(exc, trust.Outside):
        return f"is a symlink to {exc.target}, outside the project", (
            "replace the link with the file itself, or remove it"
        )
    if isinstance(exc, trust.TooLarge):
        size, bound = trust.byte_size(exc.size), trust.byte_size(exc.limit)
        return f"is {size}, over the {bound} smith reads of a configuration file", (
            f"shorten it to under {bound} (settings take a few kilobytes), or move it away"
        )
    if isinstance(exc, UnicodeDecodeError):
        return f"is not UTF-8 text ({exc.reason} at byte {exc.start})", "save it as UTF-8"
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot be read: {reason}", "fix the file's permissions, or move it away"
