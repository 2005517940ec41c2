"""The `smith` command: parse, dispatch, and turn every failure into a diagnostic.

No traceback reaches the user unless they ask for it with --debug (or SMITH_DEBUG=1).
"""

from __future__ import annotations

import os
import sys

from smith.cli._commands import BY_NAME, Command
from smith.diagnostics import DiagnosticKind, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

    from smith.config import Config
    from smith.diagnostics import Diagnostic

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

NOT_BUILT = DiagnosticKind(
    "cli.not-built",
    what="{what} is not built yet",
    why="this version of smith does not include {capability} yet",
    fix="run `smith --help` to see the commands that work in this version",
)
OS_ERROR = DiagnosticKind(
    "os.path-error",
    what="cannot use {path}: {reason}",
    why="the operating system refused the file operation smith needed",
    fix="check that the path exists, that you may read and write it, and that the disk has "
    "space; SMITH_HOME and SMITH_CONFIG_HOME move smith's own files elsewhere",
)
OS_FAILED = DiagnosticKind(
    "os.failed",
    what="the operating system refused an operation: {reason}",
    why="smith could not read or write what it needed (a full disk, a closed output, "
    "missing permissions)",
    fix="free space or fix permissions, check where output is going, and run the command again",
)


class Context:
    """What a command runs with: its environment, streams, and the flags it was given.

    Configuration is resolved on first use, so commands that need none pay nothing.
    """

    def __init__(
        self,
        flags: Mapping[str, object],
        env: Mapping[str, str],
        cwd: str,
        stdout: TextIO,
        stderr: TextIO,
    ) -> None:
        self.flags = dict(flags)  # setting values given as command-line flags
        self.env = env
        self.cwd = cwd
        self.stdout = stdout
        self.stderr = stderr
        self._config: Config | None = None

    def config(self, *, warn: bool = True, strict: bool = True, fresh: bool = False) -> Config:
        """Resolve configuration (once, unless `fresh`) with the checks of the sections
        smith.providers owns (catalog, models, providers); print its warnings to stderr
        unless `warn` is False. `strict=False` tolerates errors (see `resolve`)."""
        if self._config is None or fresh or (strict and self._config.errors):
            from smith.config import resolve
            from smith.providers import CONFIG_CHECKS

            self._config = resolve(
                env=self.env, flags=self.flags, cwd=self.cwd, strict=strict, checks=CONFIG_CHECKS
            )
            if warn:
                for warning in self._config.warnings:
                    self.print_diagnostic(warning)
        return self._config

    def print_diagnostic(self, diagnostic: Diagnostic) -> None:
        print(diagnostic.render(), file=self.stderr)

    def out(self, text: str = "", *, exact: bool = False) -> None:
        """A line of output. It carries names, model and tool output, file content: text
        from outside, so it is made inert (control characters shown, never obeyed by the
        terminal) unless `exact`, for data meant for programs (JSONL). JSON written with
        json.dumps's default ensure_ascii escapes every control character, so `--json`
        output passes through unchanged either way."""
        if not exact:
            from smith.text import inert, replace_surrogates

            # A name or id made of bytes that are not UTF-8 holds lone surrogates, which a
            # strict stdout cannot encode: shown as U+FFFD. (Exact output is checked by
            # what makes it: a dump refuses such an id.)
            text = inert(replace_surrogates(text)[0])
        print(text, file=self.stdout)


def _debug_requested(flags: Mapping[str, object], env: Mapping[str, str]) -> bool:
    if "debug" in flags:
        return flags["debug"] is True
    from smith.config import Boolean, Mismatch

    try:
        return Boolean().parse(env.get("SMITH_DEBUG", "0") or "0") is True
    except Mismatch:
        return False


def _forced_prompt(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """(the arguments to parse, the prompt `--` forces): `smith [settings] -- WORDS`
    sends WORDS to the app as they are, even when they begin with a command's name. A
    `--` after a command's name is that command's (`smith tools run bash -- ls`)."""
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def _interactive(
    ns: object,
    flags: dict[str, object],
    env: Mapping[str, str],
    stdout: TextIO,
    stderr: TextIO,
    prompt: str | None,
) -> int:
    import importlib

    # The CLI names frontends by module, as the command table does: the core never
    # imports them (tests/test_architecture.py).
    tui = importlib.import_module("smith.frontends.tui")
    ctx = Context(flags, env, os.getcwd(), stdout, stderr)
    options = {
        "continue": getattr(ns, "continue_", False),
        "resume": getattr(ns, "resume", None),
        "session": getattr(ns, "session", None),
    }
    code: int = tui.run(ctx, prompt=prompt, options=options)
    return code


def _dispatch(
    argv: list[str],
    flags: dict[str, object],
    env: Mapping[str, str],
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run the command; `flags` collects setting values given as flags, as they are parsed."""
    from smith.cli import _parser

    top = _parser.top_parser()
    head, forced = _forced_prompt(argv)
    ns = top.parse_args(head)
    if forced is not None and ns.command is not None:
        ns, forced = top.parse_args(argv), None  # the `--` follows a command's name
    flags.update(_parser.flag_values(ns))
    if ns.version:
        from smith import __version__

        print(f"smith {__version__}", file=stdout)
        return EXIT_OK
    if ns.help or ns.help_all:
        top.show_all = ns.help_all
        top.print_help(stdout)
        return EXIT_OK
    if forced is not None:
        return _interactive(ns, flags, env, stdout, stderr, " ".join(forced) or None)
    command: Command | None = BY_NAME.get(ns.command) if ns.command else None
    if command is None:
        if ns.command:
            from smith.cli import _mistyped

            _mistyped.check([ns.command, *ns.args])
        prompt = " ".join([ns.command, *ns.args]) if ns.command else None
        return _interactive(ns, flags, env, stdout, stderr, prompt)

    parser = _parser.command_parser(command)
    module = None
    if command.module is not None:
        import importlib

        module = importlib.import_module(command.module)
        module.add_arguments(parser)
        _parser.add_settings_to_subcommands(parser)
    else:
        import argparse

        parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    if any(not word.startswith("-") for word in ns.args):
        parser.words = [command.name, *ns.args]
    saved, sys.stdout = sys.stdout, stdout  # argparse prints a command's --help there
    try:
        sub = parser.parse_args(ns.args)
    finally:
        sys.stdout = saved
    flags.update(_parser.flag_values(sub))
    ctx = Context(flags, env, os.getcwd(), stdout, stderr)
    if module is None:
        raise NOT_BUILT.error(
            what=f"`smith {command.name}`", capability=command.capability or command.name
        )
    result: int = module.run(sub, ctx)
    return result


def _exit_code(exc: BaseException) -> int:
    from smith.diagnostics import ConfigError, SmithError

    if isinstance(exc, ConfigError):
        return EXIT_USAGE
    if isinstance(exc, SmithError):
        # Bad words on the command line or in configuration (a model that names no
        # provider, a script that cannot be played, a provider with no credential) are
        # usage errors.
        usage = exc.diagnostic.code.startswith(
            ("cli.", "config.", "model.", "scripted.", "auth.missing", "auth.env-unset")
        )
        return EXIT_USAGE if usage else EXIT_FAILURE
    return EXIT_FAILURE


def _memory_accounting(argv: list[str], env: Mapping[str, str]) -> None:
    """Memory accounting starts before anything else allocates much (smith.memory)."""
    from smith import memory

    if memory.requested(argv, env):
        memory.install()


def run(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    env = os.environ if env is None else env
    if "SMITH_MEMORY_ACCOUNTING" in env or any("memory" in a for a in argv):
        _memory_accounting(argv, env)
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    flags: dict[str, object] = {}
    try:
        return _dispatch(argv, flags, env, stdout, stderr)
    except SystemExit as exc:  # argparse's own --help inside a command
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        print("smith: interrupted", file=stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`smith config show | head`); nothing left to say.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:
        from smith.diagnostics import INTERNAL, ConfigError, SmithError

        debug = _debug_requested(flags, env)
        if isinstance(exc, ConfigError):
            for diagnostic in exc.diagnostics:
                print(diagnostic.render(), file=stderr)
        elif isinstance(exc, SmithError):
            print(exc.diagnostic.render(), file=stderr)
        elif isinstance(exc, OSError) and exc.filename is not None:
            # An environment problem (permissions, full disk), not a bug in smith.
            path = os.fsdecode(exc.filename)
            print(
                OS_ERROR(
                    value=path,
                    source=Source("file", path),
                    path=path,
                    reason=exc.strerror or str(exc),
                ).render(),
                file=stderr,
            )
        elif isinstance(exc, OSError):
            print(OS_FAILED(reason=exc.strerror or str(exc)).render(), file=stderr)
        else:
            print(INTERNAL(error=f"{type(exc).__name__}: {exc}").render(), file=stderr)
        if debug:  # masked: a frame's line or an exception's text may quote a secret
            import traceback

            from smith.diagnostics import masked

            stderr.write(masked("".join(traceback.format_exception(exc))))
        return _exit_code(exc)
