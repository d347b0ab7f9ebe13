"""The measuring programs in reference/ (ssm_selective_scan_floor.cu and the
phase probes *_phases.cu): the command each header and the notes give must
build (their numbers are measured on a GPU; this only keeps them buildable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.build import nvcc
from harness.errors import ToolNotFound

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "name",
    ["ssm_selective_scan_floor.cu", "prefix_sum_phases.cu", "stream_compaction_phases.cu", "linear_recurrence_phases.cu"],
)
def test_probe_builds_without_warnings(tmp_path, name):
    try:
        compiler = nvcc.find_nvcc()
    except ToolNotFound as missing:
        pytest.skip(str(missing))
    source = REPO / "reference" / name
    assert f"nvcc -O3 -arch=sm_90 reference/{name}" in source.read_text()
    command = [str(compiler), "-O3", "-arch=sm_90", "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "probe")]
    succeeded, log = nvcc.run_compiler(command, source)
    assert succeeded, log
    assert (tmp_path / "probe").is_file()
