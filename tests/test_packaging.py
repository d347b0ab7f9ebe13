"""An installed harness works away from any checkout: the wheel built from this
checkout's sdist, installed offline into a fresh virtual environment, carries
every file of challenges/, reference/ and solutions/, and from an empty folder
`harness list`, `show`, `init` and `check` (on emu) work from that copy."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from harness.challenge import challenge_names, load_challenge
from harness.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
DATA_TREES = ("challenges", "reference", "solutions")
# What the sdist is built from: a copy, so the build's build/ and *.egg-info
# never land in the checkout and a stale build/ cannot leak into the wheel.
SOURCE_ENTRIES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "harness", *DATA_TREES)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
STEP_TIMEOUT_S = 180


def _missing_offline_tools() -> str | None:
    """What building the wheel and installing it without an index needs here:
    setuptools that builds wheels by itself (70.1) or the `wheel` package, and a
    pip that installs into another interpreter (--python, 22.3). Versions are
    read from the metadata: importing pip or setuptools here would change
    which distutils this process sees."""
    installed = {name: _installed_version(name) for name in ("setuptools", "wheel", "pip")}
    if installed["setuptools"] is None:
        return "building the wheel needs setuptools>=70.1 (pip install 'setuptools>=70.1')"
    if _version(installed["setuptools"]) < (70, 1) and installed["wheel"] is None:
        return f"setuptools {installed['setuptools']} builds wheels only with the `wheel` package installed"
    if installed["pip"] is None or _version(installed["pip"]) < (22, 3):
        return f"pip {installed['pip']} cannot install into another environment (--python needs pip>=22.3)"
    return None


def _installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


MISSING_TOOLS = _missing_offline_tools()
pytestmark = pytest.mark.skipif(MISSING_TOOLS is not None, reason=str(MISSING_TOOLS))


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)


def _checked(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = _run(cmd, cwd, env)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source, dist = work / "source", work / "dist"
    source.mkdir()
    for entry in SOURCE_ENTRIES:
        if (REPO / entry).is_dir():
            shutil.copytree(REPO / entry, source / entry, ignore=IGNORED)
        else:
            shutil.copy2(REPO / entry, source / entry)
    sdist = _checked([sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"],
                     source).strip().splitlines()[-1]
    _checked([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "--no-index",
              "-w", str(dist), str(dist / sdist)], work)
    (wheel,) = dist.glob("harness-*.whl")
    return wheel


@pytest.fixture(scope="module")
def fresh_env(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A new virtual environment with the wheel installed and nothing else; the
    dependencies (NumPy, click, rich) are this interpreter's, seen through a
    .pth file, so no index is needed. Returns its bin folder and the environment
    to run it in: no HARNESS_ROOT, no PYTHONPATH."""
    home = tmp_path_factory.mktemp("venv") / "env"
    venv.create(home, with_pip=False)  # this interpreter's pip installs into it (--python): seconds, not ensurepip's ten
    python = home / "bin" / "python"
    purelib = Path(_checked([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], home).strip())
    dependency_dirs = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (purelib / "dependencies.pth").write_text("\n".join(dependency_dirs) + "\n")
    _checked([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-deps",
              str(built_wheel)], home)
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_ROOT", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["COLUMNS"] = "200"  # rich's tables are not cut at 80 columns
    return home / "bin", env


@pytest.fixture
def empty_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "practice"
    folder.mkdir()
    assert not any((p / "challenges").is_dir() for p in (folder, *folder.parents)), "run the tests outside a checkout"
    return folder


def test_the_wheel_carries_every_challenge_reference_and_solution(built_wheel: Path) -> None:
    shipped = set(zipfile.ZipFile(built_wheel).namelist())
    for tree in DATA_TREES:
        files = [p for p in (REPO / tree).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert files
        for path in files:
            assert f"harness/_data/{path.relative_to(REPO).as_posix()}" in shipped
    assert "harness/backends/emu/runtime/emu_cuda.h" in shipped and "harness/build/shim.cu" in shipped
    assert "harness/build/thread_watch.c" in shipped
    assert not any(name.startswith(("challenges/", "reference/", "solutions/", "tests/")) for name in shipped)


def test_installed_harness_lists_and_shows_challenges_from_an_empty_folder(fresh_env, empty_folder) -> None:
    bin_dir, env = fresh_env
    where = _checked([str(bin_dir / "python"), "-c", "import harness.challenge as c; print(c.repository_root())"],
                     empty_folder, env).strip()
    assert Path(where) == Path(where).parents[1] / "harness" / "_data" and str(bin_dir.parent) in where

    listed = _checked([str(bin_dir / "harness"), "list"], empty_folder, env)
    for name in challenge_names(REPO):
        assert name in listed and load_challenge(name, REPO).difficulty.value in listed

    shown = _checked([str(bin_dir / "harness"), "show", "ssm_selective_scan"], empty_folder, env)
    assert load_challenge("ssm_selective_scan", REPO).title in shown
    assert list(empty_folder.iterdir()) == []  # reading challenges writes nothing where you stand


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")
def test_installed_harness_inits_and_checks_a_starter_on_emu(fresh_env, empty_folder) -> None:
    bin_dir, env = fresh_env
    _checked([str(bin_dir / "harness"), "init", "ssm_selective_scan", "mine.cu"], empty_folder, env)
    starter = load_challenge("ssm_selective_scan", REPO).starter_path
    assert (empty_folder / "mine.cu").read_text() == starter.read_text()

    # The starter's empty solve() writes nothing: a verdict, not a traceback.
    # The nvcc pass of an emu build checks the source, not the installed package: skipped for time.
    checked = _run([str(bin_dir / "harness"), "check", "ssm_selective_scan", str(empty_folder / "mine.cu"),
                    "--backend", "emu"], empty_folder, {**env, "HARNESS_EMU_SKIP_NVCC": "1"})
    assert checked.returncode == ExitCode.FAILED, checked.stdout + checked.stderr
    assert "unwritten_output" in checked.stdout and "Traceback" not in checked.stderr
