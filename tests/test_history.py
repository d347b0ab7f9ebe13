"""The local history: a practice session on emu shows up in `harness list`
and `harness history`; bests from timed (synthetic cuda) reports; the
migration from an older file; concurrent writers; and a corrupt, unwritable
or newer database costs a warning, never the run."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import history
from harness.cli import cli
from harness.errors import ExitCode

from report_support import CHALLENGE, REPO, synthetic_cuda_report

NAIVE = REPO / "solutions" / CHALLENGE / "naive.cu"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@needs_gxx
def test_a_practice_session_shows_up_in_list_and_history(home, tmp_path):
    mine = tmp_path / "mine.cu"
    assert invoke("init", CHALLENGE, str(mine)).exit_code == 0
    assert invoke("check", CHALLENGE, str(mine), "--backend", "emu").exit_code == ExitCode.FAILED  # the empty starter
    listed = {e["name"]: e for e in json.loads(invoke("list", "--json").output)}
    assert listed[CHALLENGE]["solved"] is False
    mine.write_text(NAIVE.read_text())
    assert invoke("check", CHALLENGE, str(mine), "--backend", "emu").exit_code == ExitCode.OK
    assert invoke("run", CHALLENGE, str(mine), "--backend", "emu").exit_code == ExitCode.OK
    assert invoke("check", CHALLENGE, str(mine), "--backend", "emu", "--no-history").exit_code == ExitCode.OK

    entries = json.loads(invoke("history", CHALLENGE, "--json").output)
    assert [(e["command"], e["passed"], e["reason"]) for e in entries] == [
        ("check", False, "unwritten_output"), ("check", True, None), ("run", True, None)
    ]
    assert {e["solution"] for e in entries} == {str(mine.resolve())}
    assert entries[0]["solution_sha256"] != entries[1]["solution_sha256"] == entries[2]["solution_sha256"]
    assert all(e["backend"] == "emu" and e["median_s"] is None and not e["best"] for e in entries)  # emu times nothing
    listed = {e["name"]: e for e in json.loads(invoke("list", "--json").output)}
    assert listed[CHALLENGE]["solved"] is True and listed[CHALLENGE]["best_median_s"] is None
    assert listed["mamba3_scan"]["solved"] is False
    table = invoke("history").output
    assert "mine.cu" in table and "unwritten_output" in table and "PASS" in table
    assert invoke("history", "no_such_challenge").exit_code == ExitCode.USAGE


def test_bests_are_the_fastest_passing_medians_with_their_speedup(home):
    first = synthetic_cuda_report({"solutions/ssm_selective_scan/a.cu": 300e-6, "solutions/ssm_selective_scan/b.cu": 150e-6})
    second = synthetic_cuda_report({"solutions/ssm_selective_scan/a.cu": 120e-6}, failing=("solutions/ssm_selective_scan/b.cu",))
    assert history.record(first, "run", REPO) == 2  # the reference is the par, not recorded
    assert history.record(second, "grade", REPO) == 2
    entries = history.read(CHALLENGE)
    assert [(e.command, e.solution.rsplit("/", 1)[1], e.passed) for e in entries] == [
        ("run", "a.cu", True), ("run", "b.cu", True), ("grade", "a.cu", True), ("grade", "b.cu", False)
    ]
    assert entries[0].gpu == "NVIDIA H200" and entries[0].samples == 20 and entries[0].challenge_hash
    best = history.bests(entries)[CHALLENGE]
    assert best.solved and best.fastest is entries[2]
    assert best.fastest.median_s == pytest.approx(120e-6, rel=0.05)
    assert best.fastest.speedup == pytest.approx(95 / 120, rel=0.1)
    assert history.best_ids(entries) == {entries[1].id, entries[2].id}  # each solution's fastest

    listed = {e["name"]: e for e in json.loads(invoke("list", "--json").output)}
    assert listed[CHALLENGE]["best_median_s"] == pytest.approx(best.fastest.median_s)
    assert listed[CHALLENGE]["best_solution"] == "solutions/ssm_selective_scan/a.cu"
    marked = [e for e in json.loads(invoke("history", "--json").output) if e["best"]]
    assert sorted(e["id"] for e in marked) == sorted(history.best_ids(entries))
    table = invoke("list").output
    assert "yes" in table and " us" in table


def make_version_1_file(path: Path) -> None:
    """A database as version 1 of the schema left it, with one result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.executescript(history.MIGRATIONS[0])
    connection.execute(
        "INSERT INTO results (recorded_at, command, challenge, solution, solution_sha256, backend, gpu, harness_version,"
        " passed, reason, median_s, cv, speedup) VALUES ('2025-01-02T03:04:05+00:00', 'run', ?, 'old.cu', 'ab', 'cuda',"
        " 'NVIDIA H100', '0.0.1', 1, NULL, 2e-4, 0.01, 0.5)",
        (CHALLENGE,),
    )
    connection.execute("PRAGMA user_version = 1")
    connection.commit()
    connection.close()


def test_an_older_database_is_migrated_and_keeps_its_results(home):
    path = history.database_path()
    make_version_1_file(path)
    history.record(synthetic_cuda_report({"solutions/ssm_selective_scan/a.cu": 300e-6}), "run", REPO)
    entries = history.read()
    assert [e.solution for e in entries] == ["old.cu", "solutions/ssm_selective_scan/a.cu"]
    old = entries[0]
    assert old.median_s == 2e-4 and old.gpu == "NVIDIA H100" and old.passed
    assert old.challenge_hash is None and old.samples is None  # columns version 2 added
    assert entries[1].challenge_hash is not None
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION == 2
    indexes = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "results_by_solution" in indexes
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_a_database_from_a_newer_harness_is_refused(home):
    path = history.database_path()
    make_version_1_file(path)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 99")
    connection.commit()
    connection.close()
    with pytest.raises(history.HistoryError, match="schema version 99, newer"):
        history.read()


def _write_many(path: str, count: int) -> None:
    report = synthetic_cuda_report({"solutions/ssm_selective_scan/a.cu": 300e-6})
    for _ in range(count):
        history.record(report, "grade", REPO, Path(path))


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite3"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_many, args=(str(path), 15)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    assert len(history.read(path=path)) == 60


@pytest.mark.parametrize("damage", ["corrupt", "unwritable"])
def test_a_broken_database_is_a_warning_and_the_run_goes_on(home, damage, tmp_path, monkeypatch):
    if damage == "corrupt":
        home.mkdir(parents=True)
        history.database_path().write_bytes(b"this is not a database" * 100)
    else:
        blocker = tmp_path / "a_file"
        blocker.write_text("")
        monkeypatch.setenv("HARNESS_HOME", str(blocker / "home"))  # a folder inside a file cannot be made
    report = synthetic_cuda_report({"solutions/ssm_selective_scan/a.cu": 300e-6})
    warnings: list[str] = []
    history.record_or_warn(report, "run", REPO, warnings.append)
    assert len(warnings) == 1 and "results not recorded in the history" in warnings[0]
    assert str(history.database_path()) in warnings[0]
    listed = invoke("list", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout)[0]["solved"] is False
    if damage == "corrupt":  # where nothing could be created there is nothing to read either
        assert "warning: history not shown" in listed.stderr


@needs_gxx
def test_a_corrupt_database_does_not_change_a_commands_outcome(home):
    home.mkdir(parents=True)
    history.database_path().write_bytes(b"\x00garbage" * 512)
    result = invoke("check", CHALLENGE, str(NAIVE), "--backend", "emu")
    assert result.exit_code == ExitCode.OK
    assert "warning: results not recorded in the history" in result.output
