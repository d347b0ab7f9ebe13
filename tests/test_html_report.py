"""The HTML report: one self-contained file from a real emu grading (with
--html) and from a timed cuda report (`harness report`), checked as text and
as rendered by headless Chromium (Debian's `chromium`; .ci/run installs it):
the DOM it builds has every plot with its axes and labels, and a screenshot
shows them drawn."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness import html_report
from harness.cli import cli
from harness.errors import ExitCode

from report_support import CHALLENGE, REPO, synthetic_cuda_report

NAIVE = REPO / "solutions" / CHALLENGE / "naive.cu"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium; .ci/run does)")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")
CUDA_SOLUTIONS = {
    "solutions/ssm_selective_scan/chunked.cu": 125e-6,
    "solutions/ssm_selective_scan/lane_split.cu": 171e-6,
    "solutions/ssm_selective_scan/thread_per_channel.cu": 5.88e-3,
}
PLOTS = ("medians", "samples", "bandwidth")


@pytest.fixture(scope="module")
def cuda_page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cuda")
    (folder / "report.json").write_text(json.dumps(synthetic_cuda_report(CUDA_SOLUTIONS, failing=("solutions/ssm_selective_scan/wrong.cu",))))
    result = CliRunner().invoke(cli, ["report", str(folder / "report.json"), "--html", str(folder / "report.html")])
    assert result.exit_code == 0, result.output
    return folder / "report.html"


@pytest.fixture(scope="module")
def emu_page(tmp_path_factory) -> tuple[Path, dict]:
    """A real grading on emu with a passing, a wrong and a broken solution."""
    if shutil.which("g++") is None:
        pytest.skip("the emu backend needs g++")
    folder = tmp_path_factory.mktemp("emu")
    solutions = folder / CHALLENGE
    solutions.mkdir()
    shutil.copy(NAIVE, solutions / "good.cu")
    (solutions / "wrong.cu").write_text(NAIVE.read_text().replace("+skip[d]*u", "+2*skip[d]*u"))
    (solutions / "broken.cu").write_text(NAIVE.read_text().replace("float yt=0;", "float yt=0"))
    result = CliRunner().invoke(cli, [
        "grade", str(solutions), "--backend", "emu", "--no-history",
        "--report", str(folder / "r.json"), "--html", str(folder / "r.html"),
    ])
    assert result.exit_code == ExitCode.FAILED, result.output
    return folder / "r.html", json.loads((folder / "r.json").read_text())


def test_a_timed_report_has_the_leaderboard_every_plot_and_the_environment(cuda_page):
    page = cuda_page.read_text()
    assert html_report.external_references(page) == []
    for label in [*CUDA_SOLUTIONS, "reference/ssm_selective_scan.cu", "solutions/ssm_selective_scan/wrong.cu"]:
        assert label in page
    for plot in PLOTS:
        assert f"id='plot-{CHALLENGE}-{plot}'" in page
    assert "id='plot-roofline'" in page
    assert page.count("<svg") == len(PLOTS) + 1
    assert "wrong_output" in page and "NVIDIA H200" in page and "13.0 -O3" in page
    assert "memory floor 25.1 us" in page  # 102.8 MB over the 4.1 TB/s copy bandwidth of the synthetic report


def test_emu_grading_writes_verdicts_and_says_there_are_no_timings(emu_page):
    page_path, report = emu_page
    page = page_path.read_text()
    assert html_report.external_references(page) == []
    assert "<svg" not in page and "No timings in this report" in page
    assert "compile_error" in page and "wrong_output" in page
    tests = report["challenges"][CHALLENGE]["tests"]
    good = page.split("good.cu</td>")[-1].split("</tr>")[0]  # its row of the verdict grid
    assert good.count("class='pass'") == len([t for t in tests if t["kind"] != "performance"])


def test_html_needs_a_report_of_the_known_schema(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "x.json"), "--html", str(tmp_path / "x.html")])
    assert result.exit_code == ExitCode.USAGE and "is not a harness report" in result.output


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-extensions",
         "--enable-logging=stderr", "--v=0", *args],
        capture_output=True, text=True, timeout=120,
    )


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@needs_chromium
def test_chromium_builds_every_plot_with_its_axes_and_labels(cuda_page):
    done = chromium("--dump-dom", cuda_page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_errors(done.stderr) == []
    dom = done.stdout
    figures = re.findall(r'<figure class="plot" id="plot-([^"]+)">(.*?)</figure>', dom, re.S)
    assert [name for name, _ in figures] == [f"{CHALLENGE}-{p}" for p in PLOTS] + ["roofline"]
    for name, content in figures:
        assert content.count("<svg") == 1, name
        assert len(re.findall(r"<path", content)) > 20, name  # axes, ticks, markers, bars
        assert 'id="axes_1"' in content, name
    texts = {name: " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", content)) for name, content in figures}
    assert "GPU time per call" in texts[f"{CHALLENGE}-medians"] and "memory floor" in texts[f"{CHALLENGE}-medians"]
    assert "reference median" in texts[f"{CHALLENGE}-medians"]
    assert "thread_per_channel.cu (" in texts[f"{CHALLENGE}-samples"]  # labels carry the sample count
    assert "copy bandwidth" in texts[f"{CHALLENGE}-bandwidth"]
    assert "arithmetic intensity" in texts["roofline"]


@needs_chromium
def test_chromium_draws_the_plots(cuda_page, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "page.png"
    done = chromium("--window-size=1200,4000", f"--screenshot={shot}", cuda_page.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    assert console_errors(done.stderr) == []
    pixels = imread(str(shot))[..., :3]

    def share_near(colour: str) -> float:
        rgb = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
        return float((np.abs(pixels - rgb).max(axis=-1) < 0.08).mean())

    # Of 4.8 M pixels, thousands in each plot colour (measured: about 6,400 blue, 1,800 red, 4,600 green).
    assert share_near(html_report.PALETTE[0]) > 0.0008  # the solutions' markers and bars
    assert share_near(html_report.FLOOR_COLOUR) > 0.0002  # floor lines and the memory roof
    assert share_near(html_report.REFERENCE_COLOUR) > 0.0005  # the reference's marker and bar
