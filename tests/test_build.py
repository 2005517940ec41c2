"""Packaging: the extensions build in every supported way, and build variants are real.

These build from a clean copy of the checkout (git ls-files), so an untracked file that
happens to sit in the work tree cannot make them pass, and the wheel is built from the
sdist, so the sdist must carry every file the build needs. They take about a minute each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _clean_copy(dest: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def _venv(path: Path) -> Path:
    """A venv that sees this environment's packages, so only smith itself is installed."""
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(path)
    return path / "bin"


def _run(argv: list[str | Path], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "SMITH_DEBUG", "SMITH_CYTHON_TRACE")
    }
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    r = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, env=env, timeout=900, **kw
    )  # type: ignore[call-overload]
    assert r.returncode == 0, f"{argv}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r  # type: ignore[no-any-return]


def _build_info(bin_dir: Path, cwd: Path) -> dict[str, object]:
    # Run from a directory without the sources, so the installed copy is what imports.
    r = _run(
        [bin_dir / "smith", "debug", "build", "--json"],
        cwd=cwd,
        env={"SMITH_HOME": str(cwd / "h"), "SMITH_CONFIG_HOME": str(cwd / "c")},
    )
    info: dict[str, object] = json.loads(r.stdout)
    return info


def test_wheel_built_from_the_sdist_installs_and_runs(tmp_path: Path) -> None:
    """`python -m build` as the README says: the sdist first, then the wheel built from
    that sdist alone, so a file the build needs but the sdist lacks fails here."""
    src = _clean_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    # --no-isolation: this environment's setuptools and Cython, so nothing is downloaded
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, src])
    [sdist] = dist.glob("smith_agent-*.tar.gz")
    [wheel] = dist.glob("smith_agent-*.whl")
    import tarfile
    import zipfile

    with tarfile.open(sdist) as tar:
        packed = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = {"setup.py", "pyproject.toml", "README.md", "smith/py.typed"}
    needed |= {"smith/providers/catalog.json"}
    needed |= {
        p.relative_to(src).as_posix()
        for pattern in ("*.pyx", "*.pxd", "*.pyi", "*.h")
        for p in (src / "smith" / "_fast").glob(pattern)
    }
    assert needed - packed == set()
    assert not [n for n in packed if n.endswith((".so", ".c"))]  # no build products

    names = zipfile.ZipFile(wheel).namelist()
    modules = sorted(p.relative_to(src).with_suffix("").as_posix() for p in src.rglob("*.pyx"))
    assert modules  # the measurement saw the sources
    compiled = [
        m for m in modules if any(n.startswith(m + ".") and n.endswith(".so") for n in names)
    ]
    assert compiled == modules
    assert "smith/frontends/__init__.py" in names and "smith/plugins/__init__.py" in names
    assert "smith/providers/catalog.json" in names and "smith/py.typed" in names
    assert not any(
        n.split("/")[0] in ("frontends", "plugins", "tests", "benchmarks") for n in names
    )  # nothing generic at the top of site-packages

    bin_dir = _venv(tmp_path / "venv")
    _run([bin_dir / "pip", "install", "--no-deps", "--no-index", "-q", wheel])
    info = _build_info(bin_dir, tmp_path)
    assert info["variant"] == "release"
    assert str(info["extension"]).startswith(str(tmp_path / "venv"))


def test_plain_pip_install_builds_the_extensions(tmp_path: Path) -> None:
    src = _clean_copy(tmp_path / "src")
    bin_dir = _venv(tmp_path / "venv")
    _run([bin_dir / "pip", "install", "--no-deps", "-q", src])
    assert _build_info(bin_dir, tmp_path)["variant"] == "release"


@pytest.mark.parametrize(
    ("env", "variant"), [({"SMITH_DEBUG": "1"}, "debug"), ({"SMITH_CYTHON_TRACE": "1"}, "trace")]
)
def test_build_variants_come_from_the_environment(
    tmp_path: Path, env: dict[str, str], variant: str
) -> None:
    src = _clean_copy(tmp_path / "src")
    _run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", tmp_path / "lib"],
        cwd=src,
        env=env,
    )
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from smith._fast import _buildinfo as b; "
        "print(json.dumps([b.__file__, b.variant(), b.c_assertions]))"
    )
    r = _run([sys.executable, "-c", probe, tmp_path / "lib"], cwd=tmp_path)
    where, got, asserts = json.loads(r.stdout)
    assert where.startswith(str(tmp_path / "lib"))
    assert got == variant
    assert asserts is (variant == "debug")
