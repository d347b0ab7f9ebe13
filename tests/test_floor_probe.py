"""reference/ssm_selective_scan_floor.cu: the command its header and the notes
give must build (its numbers are measured on a GPU; this only keeps it buildable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.build import nvcc
from harness.errors import ToolNotFound

REPO = Path(__file__).resolve().parents[1]


def test_floor_probe_builds_without_warnings(tmp_path):
    try:
        compiler = nvcc.find_nvcc()
    except ToolNotFound as missing:
        pytest.skip(str(missing))
    source = REPO / "reference" / "ssm_selective_scan_floor.cu"
    assert "nvcc -O3 -arch=sm_90 reference/ssm_selective_scan_floor.cu" in source.read_text()
    command = [str(compiler), "-O3", "-arch=sm_90", "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "floor")]
    succeeded, log = nvcc.run_compiler(command, source)
    assert succeeded, log
    assert (tmp_path / "floor").is_file()
