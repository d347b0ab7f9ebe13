"""The command line: help everywhere, listing and showing challenges, starters,
and clear one-line errors with the documented exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli, literal_math
from harness.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
COMMANDS = sorted(cli.commands)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_every_command_has_help(runner, command):
    result = runner.invoke(cli, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_list_shows_the_challenges_and_their_performance_size(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the content, not the wrapping of a narrow terminal
    result = runner.invoke(cli, ["list"])
    assert result.exit_code == 0
    assert "ssm_selective_scan" in result.output and "seq_len=4096" in result.output
    listed = json.loads(runner.invoke(cli, ["list", "--json"]).output)
    assert any(entry["name"] == "ssm_selective_scan" for entry in listed)


def test_show_renders_the_spec_and_json_has_the_tests(runner):
    assert runner.invoke(cli, ["show", "ssm_selective_scan"]).exit_code == 0
    document = json.loads(runner.invoke(cli, ["show", "ssm_selective_scan", "--json"]).output)
    assert document["signature"].startswith('extern "C" void solve(const float* u')
    assert document["tests"]["performance"]["sizes"] == {"batch": 4, "seq_len": 4096, "d_model": 512, "d_state": 16}
    assert len(document["tests"]["functional"]) >= 12


def test_unknown_challenge_is_a_usage_error(runner):
    result = runner.invoke(cli, ["show", "nope"])
    assert result.exit_code == ExitCode.USAGE and "no challenge named 'nope'" in result.output


def test_init_writes_the_starter_and_refuses_to_overwrite(runner, tmp_path):
    target = tmp_path / "mine.cu"
    assert runner.invoke(cli, ["init", "ssm_selective_scan", str(target)]).exit_code == 0
    assert target.read_text() == (REPO / "challenges" / "ssm_selective_scan" / "starter.cu").read_text()
    target.write_text("my work")
    refused = runner.invoke(cli, ["init", "ssm_selective_scan", str(target)])
    assert refused.exit_code == ExitCode.USAGE and "--force" in refused.output
    assert target.read_text() == "my work"
    assert runner.invoke(cli, ["init", "ssm_selective_scan", str(target), "--force"]).exit_code == 0


def test_cuda_backend_without_a_gpu_says_what_needs_one(runner, monkeypatch):
    monkeypatch.setattr("harness.backends.visible_gpus", lambda: [])
    result = runner.invoke(cli, ["run", "ssm_selective_scan", "--backend", "cuda"])
    assert result.exit_code == ExitCode.USAGE
    assert "needs a visible NVIDIA GPU" in result.output


def test_missing_solution_file_is_a_usage_error(runner):
    result = runner.invoke(cli, ["check", "ssm_selective_scan", "no/such/file.cu"])
    assert result.exit_code == ExitCode.USAGE and "no such solution file" in result.output


def test_sanitize_with_bench_is_a_usage_error(runner):
    result = runner.invoke(cli, ["bench", "ssm_selective_scan", "--sanitize", "--backend", "emu"])
    assert result.exit_code == ExitCode.USAGE
    assert "--sanitize runs the correctness tests" in result.output


def test_list_shows_difficulty_and_topics_and_filters(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    listed = json.loads(runner.invoke(cli, ["list", "--json"]).output)
    ssm = next(entry for entry in listed if entry["name"] == "ssm_selective_scan")
    assert ssm["difficulty"] == "hard" and "scan" in ssm["topics"]
    hard = json.loads(runner.invoke(cli, ["list", "--json", "--difficulty", "hard"]).output)
    assert hard and all(entry["difficulty"] == "hard" for entry in hard)
    none = json.loads(runner.invoke(cli, ["list", "--json", "--topic", "no-such-topic"]).output)
    assert none == []
    table = runner.invoke(cli, ["list", "--topic", "scan"]).output
    assert "ssm_selective_scan" in table and "hard" in table


# --- clear errors, before any work -------------------------------------------

CORPUS = REPO / "tests" / "corpus" / "ssm_selective_scan"
NAIVE = REPO / "solutions" / "ssm_selective_scan" / "naive.cu"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


def one_line_error(result, *expected: str, code: int = ExitCode.USAGE) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    for text in expected:
        assert text in result.output


def test_init_into_proc_or_under_a_file_is_one_line_and_rc_2(runner, tmp_path):
    one_line_error(runner.invoke(cli, ["init", "ssm_selective_scan", "/proc/x.cu"]), "cannot write /proc/x.cu")
    file = tmp_path / "file.cu"
    file.write_text("")
    one_line_error(runner.invoke(cli, ["init", "ssm_selective_scan", str(file / "x.cu")]), f"{file} is a file, not a folder")


@pytest.mark.parametrize("option", ["--report", "--junit"])
def test_a_report_path_under_a_file_is_refused_before_any_work(runner, tmp_path, option, monkeypatch):
    file = tmp_path / "file.cu"
    file.write_text("")
    monkeypatch.setattr("harness.cli.evaluate", lambda *a, **k: pytest.fail("work started"))
    result = runner.invoke(cli, ["grade", str(NAIVE), "--backend", "emu", option, str(file / "r.json")])
    one_line_error(result, "is a file, not a folder")
    assert runner.invoke(cli, ["merge", str(file), "-o", str(tmp_path / "no" / "such" / "m.json")]).exit_code == ExitCode.USAGE


@pytest.mark.parametrize("value", ["0", "-1"])
def test_timeout_must_be_positive(runner, value):
    one_line_error(runner.invoke(cli, ["check", "ssm_selective_scan", str(NAIVE), "--backend", "emu", "--timeout", value]), "--timeout")


def test_a_folder_given_as_a_solution_says_so(runner):
    one_line_error(runner.invoke(cli, ["check", "ssm_selective_scan", str(CORPUS), "--backend", "emu"]), "is a folder", "harness grade")


def test_an_unknown_test_name_is_a_usage_error(runner):
    one_line_error(runner.invoke(cli, ["check", "ssm_selective_scan", str(NAIVE), "--backend", "emu", "--test", "nope"]), "no test named 'nope'")


def test_a_harness_bug_exits_3_with_its_traceback_in_a_file(runner, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("harness.cli.load_challenge", broken)
    result = runner.invoke(cli, ["show", "ssm_selective_scan"])
    assert result.exit_code == ExitCode.INTERNAL_ERROR
    line = result.output.strip()
    assert "\n" not in line and "internal error" in line and "KeyError" in line
    saved = Path(line.rsplit("traceback in ", 1)[1])
    assert "Traceback" in saved.read_text() and "a bug" in saved.read_text()


def test_show_keeps_products_as_products(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert "16*8192*2048 = 2^28" in runner.invoke(cli, ["show", "ssm_selective_scan"]).output
    assert "16*8192*64*128 = 2^30" in runner.invoke(cli, ["show", "mamba3_scan"]).output
    assert literal_math("`a*b` and a*b and **bold** and *it*") == "`a*b` and a\\*b and **bold** and *it*"


def test_piped_output_follows_columns_without_trailing_spaces(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    lines = runner.invoke(cli, ["list"]).output.splitlines()
    assert lines and max(map(len, lines)) <= 60
    assert all(line == line.rstrip() for line in lines)


# --- runs on emu -------------------------------------------------------------


@needs_gxx
def test_emu_warns_about_cuda_only_options_and_progress_counts(runner):
    result = runner.invoke(cli, ["check", "ssm_selective_scan", str(NAIVE), "--backend", "emu", "--nvcc-flags", "-O2", "--gpu", "1"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "emu: --nvcc-flags, --gpu apply to the cuda backend only and are ignored" in result.output
    assert "building 1 of 1: solutions/ssm_selective_scan/naive.cu" in result.output
    assert "running 1 of 1: solutions/ssm_selective_scan/naive.cu" in result.output


@needs_gxx
def test_verbose_lists_every_test_and_one_test_runs_alone(runner):
    wrong = [str(CORPUS / "wrong_no_state.cu")]
    plain = runner.invoke(cli, ["check", "ssm_selective_scan", *wrong, "--backend", "emu"])
    assert plain.exit_code == ExitCode.FAILED and "  failed: " in plain.output
    verbose = runner.invoke(cli, ["check", "ssm_selective_scan", *wrong, "--backend", "emu", "-v"])
    assert "  PASS example" in verbose.output or "  FAIL example" in verbose.output
    assert "  FAIL " in verbose.output
    one = runner.invoke(cli, ["check", "ssm_selective_scan", str(NAIVE), "--backend", "emu", "--test", "odd_sizes", "--json"])
    assert one.exit_code == ExitCode.OK, one.output
    (result,) = json.loads(one.stdout)["results"]
    assert [t["name"] for t in result["tests"]] == ["odd_sizes"]


@needs_gxx
def test_the_solutions_own_output_is_shown_under_its_verdict(runner):
    result = runner.invoke(cli, ["check", "ssm_selective_scan", str(CORPUS / "prints_stdout.cu"), "--backend", "emu"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "on stdout" in result.output and "  | host: solve(batch=" in result.output


@needs_gxx
def test_python_solutions_on_emu_are_reported_as_skipped_and_count_unless_asked(runner, tmp_path):
    folder = tmp_path / "ssm_selective_scan"
    folder.mkdir()
    shutil.copy(NAIVE, folder / "naive.cu")
    shutil.copy(REPO / "solutions" / "ssm_selective_scan" / "cupy_warp_per_channel.py", folder / "cupy.py")
    report = tmp_path / "r.json"
    graded = runner.invoke(cli, ["grade", str(folder), "--backend", "emu", "--report", str(report)])
    assert graded.exit_code == ExitCode.FAILED, graded.output
    records = {Path(r["solution"]).name: r for r in json.loads(report.read_text())["results"]}
    assert records["cupy.py"]["reason"] == "skipped" and "--skip-python" in records["cupy.py"]["message"]
    asked = runner.invoke(cli, ["grade", str(folder), "--backend", "emu", "--skip-python", "--report", str(report)])
    assert asked.exit_code == ExitCode.OK, asked.output
    document = json.loads(report.read_text())
    assert document["passed"] and {r["reason"] for r in document["results"]} == {None, "skipped"}


@needs_gxx
def test_the_practice_flow_from_a_folder_outside_the_checkout(runner, tmp_path, monkeypatch):
    """init, check, run and grade with paths relative to where the user stands,
    shown back as typed; the untouched starter fails its tests, no traceback."""
    monkeypatch.chdir(tmp_path)
    made = runner.invoke(cli, ["init", "ssm_selective_scan", "mine.cu"])
    assert made.exit_code == 0 and "wrote mine.cu" in made.output and "harness run ssm_selective_scan mine.cu" in made.output
    checked = runner.invoke(cli, ["check", "ssm_selective_scan", "mine.cu", "--backend", "emu"])
    assert checked.exit_code == ExitCode.FAILED and "Traceback" not in checked.output and "mine.cu" in checked.output
    shutil.copy(NAIVE, tmp_path / "mine.cu")
    ran = runner.invoke(cli, ["run", "ssm_selective_scan", "mine.cu", "--backend", "emu", "--json"])
    assert ran.exit_code == ExitCode.OK, ran.output
    assert [r["solution"] for r in json.loads(ran.stdout)["results"]] == ["mine.cu"]
    (tmp_path / "ssm_selective_scan").mkdir()
    shutil.copy(NAIVE, tmp_path / "ssm_selective_scan" / "a.cu")
    graded = runner.invoke(cli, ["grade", "ssm_selective_scan", "--backend", "emu", "--report", "r.json", "--junit", "j.xml"])
    assert graded.exit_code == ExitCode.OK, graded.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert [r["solution"] for r in document["results"] if not r["baseline"]] == ["ssm_selective_scan/a.cu"]
    assert all(r["solution_sha256"] for r in document["results"])
    merged = runner.invoke(cli, ["merge", "r.json", "-o", "m.json"])
    assert merged.exit_code == ExitCode.OK and (tmp_path / "m.json").is_file()
    compared = runner.invoke(cli, ["compare", "r.json", "m.json"])
    assert compared.exit_code == ExitCode.OK
