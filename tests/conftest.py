"""Shared fixtures: an isolated smith environment and two ways to run the CLI.

`smith(...)` runs the CLI in-process (fast, same code path as the console script after
argument parsing); `smith_process(...)` runs the installed `smith` executable, the surface
a user touches. Both use a temporary SMITH_HOME / SMITH_CONFIG_HOME / HOME, never the
developer's own.

Memory accounting (smith.memory) is off, as by default: the tests that need it are
marked `accounting` and run in a child pytest with it on (tests/accounting.py).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from smith.cli._main import run

pytest_plugins = ["tests.accounting"]


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class SmithEnv:
    root: Path
    env: dict[str, str]

    @property
    def config_home(self) -> Path:
        return Path(self.env["SMITH_CONFIG_HOME"])

    @property
    def data_home(self) -> Path:
        return Path(self.env["SMITH_HOME"])

    @property
    def user_config(self) -> Path:
        return self.config_home / "config.kdl"

    def write_user_config(self, text: str) -> Path:
        self.config_home.mkdir(parents=True, exist_ok=True)
        self.user_config.write_text(text, encoding="utf-8")
        return self.user_config

    def make_project(self, name: str = "project", config: str | None = None) -> Path:
        project = self.root / name
        (project / ".git").mkdir(parents=True, exist_ok=True)
        if config is not None:
            (project / ".smith").mkdir(exist_ok=True)
            (project / ".smith" / "config.kdl").write_text(config, encoding="utf-8")
        return project


def clean_environ() -> dict[str, str]:
    """The process environment less anything that configures smith or holds a key."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SMITH_")
        and not k.endswith(("_API_KEY", "_TOKEN"))
        and not k.startswith("XDG_")
    }


@pytest.fixture(autouse=True)
def _forget_credentials() -> Iterator[None]:
    """smith.providers keeps every credential read in the process, and each runtime
    redacts them (streamed text is held back while a secret could be forming): each test
    starts without those of the tests before it."""
    yield
    from smith.providers._auth import forget_credentials

    forget_credentials()


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One smith cache directory for the whole test session: compiled WebAssembly
    components (18 MB for a Python plugin, ~6 s to compile) are kept there, as a user's
    are across runs, so each is compiled once per session, not once per test."""
    return tmp_path_factory.mktemp("smith-cache")


@pytest.fixture
def senv(tmp_path: Path, cache_home: Path) -> SmithEnv:
    root = tmp_path / "world"
    home = root / "home"
    home.mkdir(parents=True)
    env = clean_environ()
    env.update(
        HOME=str(home),
        SMITH_HOME=str(root / "data"),
        SMITH_CONFIG_HOME=str(root / "config"),
        SMITH_CACHE_HOME=str(cache_home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    # The secret vouching for compiled plugins (smith.wasm._cache), the same in every
    # test's data directory: the session's cache is compiled into once, not per test.
    (root / "data").mkdir(mode=0o700)
    secret = root / "data" / "wasm-cache.key"
    secret.write_text(_WASM_CACHE_SECRET)
    secret.chmod(0o600)
    return SmithEnv(root, env)


_WASM_CACHE_SECRET = os.urandom(32).hex()


@pytest.fixture
def smith(senv: SmithEnv, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    def invoke(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
        monkeypatch.chdir(cwd or senv.root)
        out, err = io.StringIO(), io.StringIO()
        code = run(list(args), env={**senv.env, **(env or {})}, stdout=out, stderr=err)
        return Result(code, out.getvalue(), err.getvalue())

    return invoke


def smith_executable() -> str:
    found = shutil.which("smith", path=os.path.dirname(sys.executable)) or shutil.which("smith")
    if found is None:
        pytest.fail("the `smith` console script is not installed; run pip install -e '.[dev]'")
    return found


@pytest.fixture
def smith_process(senv: SmithEnv) -> Iterator[Callable[..., Result]]:
    def invoke(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
        proc = subprocess.run(
            [smith_executable(), *args],
            cwd=cwd or senv.root,
            env={**senv.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    yield invoke


def tool_world(tmp_path: Path, **context: object) -> tuple[object, object, Path]:
    """A project directory, a session for it, and a ToolContext over both (extra keyword
    arguments go to ToolContext: limits, spill_dir, ignore, ...)."""
    from smith.effects import ToolContext
    from smith.session import Session

    project = tmp_path / "project"
    project.mkdir()
    session = Session.create(str(tmp_path / "s.smith"), cwd=str(project))
    ctx = ToolContext(root=str(project), cwd=str(project), session=session, **context)  # type: ignore[arg-type]
    return session, ctx, project
