"""The adversarial corpus: every known way a solution cheats or breaks, and
correct-but-unusual solutions that must pass, each judged for the right reason
on each backend as tests/corpus/<challenge>/expected.toml says.

One test per corpus file per backend. The emu cases run here on the CPU, all
of them in one evaluation (building dominates, and the hang case costs its
timeout once per evaluation); the cuda cases carry the `gpu` marker and run in
two evaluations (check-only beside the other untimed GPU tests, and timed, for
the cheats only the timer sees, with nothing else on the GPU), and one
evaluation per case under compute-sanitizer.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import computed_once, shared_cache
from harness.challenge import Challenge, load_challenge
from harness.cli import cli
from harness.errors import ExitCode
from harness.evaluation import evaluate_files
from harness.plan import Plan
from harness.results import REASONS, SolutionResult
from harness.timing.loop import Budget

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
CHALLENGE = "ssm_selective_scan"
CORPUS = REPO / "tests" / "corpus" / CHALLENGE
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((CORPUS / "expected.toml").read_text())
BACKENDS = ("cuda", "emu")
KEYS = {
    "cuda", "emu", "why", "message", "cuda_message", "emu_message", "cuda_timed", "cuda_xfail", "emu_xfail",
    "stdout_min_bytes", "stdout_tail_contains", "cuda_sanitize", "cuda_sanitize_message",
}
# Per test. The hang case costs this once per evaluation; the slowest honest
# case (stdout_flood: 40 MB through the pipe) takes about 2.5 s on 2 CPU cores.
EMU_TIMEOUT_S = 8.0
CUDA_TIMEOUT_S = 30.0
CUDA_TIMED = Plan(check=False, budget=Budget(min_samples=5, time_s=1.0), timeout_s=120)
CUDA_SANITIZED = Plan(time=False, sanitize=True, timeout_s=120)  # per tool: checkers slow kernels down 10-100x

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


def runnable(backend: str, *, timed: bool | None = None) -> list[str]:
    """Corpus files that exist as a behaviour on `backend` (optionally: only the
    ones evaluated through the timer, or only the others)."""
    return [
        name
        for name, entry in EXPECTED.items()
        if entry[backend] != "skip" and (timed is None or bool(entry.get("cuda_timed")) == timed)
    ]


def case_marks(backend: str, entry: dict[str, Any]) -> list[Any]:
    """A case's skip or known-misjudgement marks on `backend`."""
    marks = []
    if entry[backend] == "skip":
        marks.append(pytest.mark.skip(reason=entry["why"]))
    if entry.get(f"{backend}_xfail"):
        marks.append(pytest.mark.xfail(strict=True, reason="harness misjudgement: " + entry[f"{backend}_xfail"]))
    return marks


def cases(backend: str) -> list[Any]:
    return [pytest.param(name, marks=case_marks(backend, entry), id=name.removesuffix(".cu")) for name, entry in EXPECTED.items()]


@contextmanager
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """conftest's isolated cache, for module-scoped fixtures (set up before it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE", str(shared_cache(tmp_path_factory)))
        patch.setenv("HARNESS_ROOT", str(REPO))
        yield


def by_file(results: list[SolutionResult]) -> dict[str, SolutionResult]:
    found = {Path(r.solution).name: r for r in results}
    assert len(found) == len(results), "two results for one file"
    return found


def assert_judged(result: SolutionResult, name: str, backend: str, challenge: Challenge, mode: str | None = None) -> None:
    """`mode` is a column of its own for the same backend (cuda_sanitize)."""
    column = mode or backend
    entry, expected = EXPECTED[name], EXPECTED[name][column]
    context = f"{name} on {column}: reason {result.reason!r}: {result.message}"
    if expected == "pass":
        assert result.passed and result.reason is None, context
        if not entry.get("cuda_timed") or backend != "cuda":
            assert len(result.tests) == len(challenge.tests_of("example", "functional")), context
        assert all(t.passed for t in result.tests), context
    else:
        assert not result.passed and result.reason == expected, context
    for key in (f"{mode}_message",) if mode else ("message", f"{backend}_message"):
        if key in entry:
            assert entry[key] in result.message, context
    if "stdout_min_bytes" in entry:
        assert result.stdout_bytes >= entry["stdout_min_bytes"], context
    if "stdout_tail_contains" in entry:
        assert entry["stdout_tail_contains"] in result.stdout_tail, context


@pytest.fixture(scope="module")
def challenge() -> Challenge:
    return load_challenge(CHALLENGE, REPO)


# --- the table itself ---------------------------------------------------------


def test_the_table_names_every_corpus_file_with_a_known_verdict():
    assert sorted(EXPECTED) == sorted(p.name for p in CORPUS.glob("*.cu"))
    for name, entry in EXPECTED.items():
        assert set(entry) <= KEYS, f"{name}: unknown keys {set(entry) - KEYS}"
        for backend in BACKENDS:
            assert entry[backend] in {*REASONS, "pass", "skip"} - {"not_run"}, f"{name}: {entry[backend]}"
        if entry["cuda"] != entry["emu"] or "skip" in (entry["cuda"], entry["emu"]):
            assert entry.get("why"), f"{name}: the backends differ, say why"
        if entry.get("cuda_timed"):
            assert entry["cuda"] in ("timing_escape", "host_work_escape", "pass"), f"{name}: only the timer's verdicts need timing"
        if "cuda_sanitize" in entry:
            assert entry["cuda_sanitize"] in {*REASONS, "pass"} - {"not_run"}, f"{name}: {entry['cuda_sanitize']}"
        header = (CORPUS / name).read_text().splitlines()[:2]
        assert all(line.startswith("//") for line in header), f"{name}: says what it does and must be judged as"


# --- emu, on the CPU ----------------------------------------------------------


@pytest.fixture(scope="module")
def emu_results(challenge, tmp_path_factory) -> dict[str, SolutionResult]:
    names = runnable("emu")
    plan = Plan(backend="emu", time=False, timeout_s=EMU_TIMEOUT_S)
    with session_cache(tmp_path_factory):
        evaluate = lambda: evaluate_files(challenge, [CORPUS / n for n in names], plan, REPO)  # noqa: E731
        return by_file(computed_once(tmp_path_factory, "corpus-emu-results", evaluate))


@needs_gxx
@pytest.mark.parametrize("name", cases("emu"))
def test_emu_judges_the_corpus_case(name, emu_results, challenge):
    result = emu_results[name]
    assert_judged(result, name, "emu", challenge)
    assert result.timing is None  # emu never reports a time


@needs_gxx
def test_the_whole_corpus_in_one_cli_check_loses_no_result():
    """`harness check` on every file at once, as a user would: one result per file
    however the others ended (crash, exit, hang, compile error), and exit status 1."""
    files = sorted(CORPUS.glob("*.cu"))
    args = ["check", CHALLENGE, *map(str, files), "--backend", "emu", "--json", "--timeout", str(EMU_TIMEOUT_S)]
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == ExitCode.FAILED, run.output
    results = json.loads(run.stdout)["results"]
    assert sorted(Path(r["solution"]).name for r in results) == [f.name for f in files]
    for r in results:
        expected = EXPECTED[Path(r["solution"]).name]["emu"]
        if expected != "skip":
            assert r["passed"] == (expected == "pass"), f"{r['solution']}: {r['reason']}: {r['message']}"


# --- cuda, on a GPU -----------------------------------------------------------


CHECKED_CHUNKS = 3  # the check-only cuda cases, in this many evaluations on as many xdist workers


def checked_chunk(name: str) -> int:
    return sorted(runnable("cuda", timed=False)).index(name) % CHECKED_CHUNKS


def cuda_cases(timed: bool) -> list[Any]:
    """The cuda cases of one kind; a check-only one is grouped with the rest of
    its chunk, so that one xdist worker evaluates the chunk once."""
    chosen = []
    for name, entry in EXPECTED.items():
        if bool(entry.get("cuda_timed")) != timed:
            continue
        marks = case_marks("cuda", entry)
        if not timed and entry["cuda"] != "skip":
            marks.append(pytest.mark.xdist_group(f"corpus-checked-{checked_chunk(name)}"))
        chosen.append(pytest.param(name, marks=marks, id=name.removesuffix(".cu")))
    return chosen


@pytest.fixture(scope="module")
def cuda_checked_results(challenge, tmp_path_factory) -> Callable[[int], dict[str, SolutionResult]]:
    """The results of one chunk of check-only cases, evaluated together on first use."""
    done: dict[int, dict[str, SolutionResult]] = {}

    def results(chunk: int) -> dict[str, SolutionResult]:
        if chunk not in done:
            files = [CORPUS / n for n in runnable("cuda", timed=False) if checked_chunk(n) == chunk]
            with session_cache(tmp_path_factory):
                done[chunk] = by_file(evaluate_files(challenge, files, Plan(time=False, timeout_s=CUDA_TIMEOUT_S), REPO))
        return done[chunk]

    return results


@pytest.fixture(scope="module")
def cuda_timed_results(challenge, tmp_path_factory) -> dict[str, SolutionResult]:
    with session_cache(tmp_path_factory):
        return by_file(evaluate_files(challenge, [CORPUS / n for n in runnable("cuda", timed=True)], CUDA_TIMED, REPO))


@pytest.mark.gpu
@pytest.mark.parametrize("name", cuda_cases(timed=False))
def test_cuda_judges_the_corpus_case(name, cuda_checked_results, challenge):
    assert_judged(cuda_checked_results(checked_chunk(name))[name], name, "cuda", challenge)


@pytest.mark.gpu
@pytest.mark.timed  # the cheats only the timer sees: one evaluation, nothing else on the GPU
@pytest.mark.parametrize("name", cuda_cases(timed=True))
def test_cuda_timer_judges_the_corpus_case(name, cuda_timed_results, challenge):
    result = cuda_timed_results[name]
    assert_judged(result, name, "cuda", challenge)
    if EXPECTED[name]["cuda"] == "host_work_escape":
        assert result.timing is None  # caught at the first timed call's return: nothing is timed
    else:
        # the verdict comes from the cross-check of host wall time against the events
        assert result.timing is not None and len(result.timing.gpu_time_s) >= CUDA_TIMED.budget.min_samples
        assert result.timing.escaped == (EXPECTED[name]["cuda"] == "timing_escape")


@pytest.mark.gpu
@pytest.mark.parametrize("chunk", [pytest.param(c, marks=pytest.mark.xdist_group(f"corpus-checked-{c}")) for c in range(CHECKED_CHUNKS)])
def test_cuda_checked_evaluation_loses_no_result(chunk, cuda_checked_results):
    """However its cases end (crash, exit, hang, sticky CUDA error), an evaluation returns one result per file."""
    assert sorted(cuda_checked_results(chunk)) == sorted(n for n in runnable("cuda", timed=False) if checked_chunk(n) == chunk)


@pytest.mark.gpu
@pytest.mark.timed
def test_cuda_timed_evaluation_loses_no_result(cuda_timed_results):
    assert sorted(cuda_timed_results) == sorted(runnable("cuda", timed=True))


# --- cuda under compute-sanitizer --------------------------------------------

SANITIZED = [name for name, entry in EXPECTED.items() if "cuda_sanitize" in entry]


@pytest.mark.gpu
@pytest.mark.parametrize("name", [pytest.param(n, id=n.removesuffix(".cu")) for n in SANITIZED])
def test_cuda_sanitize_judges_the_corpus_case(name, challenge, tmp_path_factory):
    """Findings name the tool and the .cu line; correct solutions raise none
    (no false alarms from the harness's own allocations or calls). One
    evaluation per case, so that xdist spreads the slow checkers over workers."""
    with session_cache(tmp_path_factory):
        [result] = evaluate_files(challenge, [CORPUS / name], CUDA_SANITIZED, REPO)
    assert_judged(result, name, "cuda", challenge, mode="cuda_sanitize")
    assert result.timing is None
    if EXPECTED[name]["cuda_sanitize"] == "pass":
        assert result.message == "compute-sanitizer memcheck, racecheck, initcheck: no findings"
    if result.reason == "sanitizer":
        assert f"{name}:" in result.message, "a finding points at the solution's file:line"
