"""Shared fixtures. GPU tests carry the `gpu` marker (deselected by default;
`make test-gpu` selects them) and skip with a reason where no GPU is usable."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pickle
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from harness.backends import visible_gpus

REPO = Path(__file__).resolve().parents[1]


def gpu_skip_reason() -> str | None:
    if not visible_gpus():
        return "no NVIDIA GPU visible (nvidia-smi lists none)"
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install cupy-cuda13x)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_skip_reason()
    if reason:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's build and test-data cache. Under pytest-xdist (`make test`
    runs one worker per core) the workers share one, so nothing is built twice."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cache"


T = TypeVar("T")


def computed_once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """compute() once per session however many xdist workers ask for it (a
    module fixture is set up once per worker): the first computes it under a
    file lock and keeps it pickled in the shared cache, the others wait and load it."""
    folder = shared_cache(tmp_path_factory)
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        value = compute()
        kept.write_bytes(pickle.dumps(value))
        return value


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds, test data and the history go to per-session folders, never the user's."""
    monkeypatch.setenv("HARNESS_CACHE", str(shared_cache(tmp_path_factory)))
    monkeypatch.setenv("HARNESS_ROOT", str(REPO))
    monkeypatch.setenv("COLUMNS", "200")  # tables as a wide terminal shows them, whatever runs the tests
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path_factory.getbasetemp() / "home"))  # the history too
