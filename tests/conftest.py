"""Shared fixtures. GPU tests carry the `gpu` marker (deselected by default;
`make test-gpu` selects them) and skip with a reason where no GPU is usable."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

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


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds, test data and the history go to per-session folders, never the user's."""
    monkeypatch.setenv("HARNESS_CACHE", str(shared_cache(tmp_path_factory)))
    monkeypatch.setenv("HARNESS_ROOT", str(REPO))
    monkeypatch.setenv("COLUMNS", "200")  # tables as a wide terminal shows them, whatever runs the tests
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path_factory.getbasetemp() / "home"))  # the history too
