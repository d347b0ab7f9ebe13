"""The harness on the emu backend, CPU only: every solution in the repository
really runs against the functional tests on every commit; compile errors and
sanitizer findings point at file:line. Faulty solutions and the reason each
must get are the corpus's business (tests/test_corpus.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.challenge import challenge_names, load_challenge
from harness.discovery import discover_solutions
from harness.evaluation import evaluate_files
from harness.plan import Plan

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "corpus" / "ssm_selective_scan"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


@pytest.mark.parametrize("name", challenge_names(REPO))
def test_every_repository_solution_passes_every_functional_test_on_emu(name):
    challenge = load_challenge(name, REPO)
    solutions = [p for p in discover_solutions(challenge, REPO) if p.suffix == ".cu"]  # .py needs a GPU
    assert solutions, f"{name} has no CUDA solution to run on emu"
    results = evaluate_files(challenge, solutions, Plan(backend="emu", time=False), REPO)
    assert len(results) == len(solutions)
    for result in results:
        assert result.passed, f"{result.solution}: {result.reason}: {result.message}"
        assert len(result.tests) == len(challenge.tests_of("example", "functional"))
        assert result.timing is None  # emu never reports a time


# Valid sizes a challenge's own tests leave out and that take other code paths
# in its fast kernels.
SIZES_NOT_IN_THE_CHALLENGE_TESTS = {
    # the reference's d_state 17-32 and 33-64 instances, a block of 16 channels
    # with 3 in use, seq_len ending mid-tile, long memory
    "ssm_selective_scan": {
        "state_24_ragged_channels": ({"batch": 2, "seq_len": 70, "d_model": 19, "d_state": 24}, "moderate"),
        "state_33": ({"batch": 1, "seq_len": 100, "d_model": 3, "d_state": 33}, "mamba_init"),
        "state_48_long_memory": ({"batch": 1, "seq_len": 333, "d_model": 17, "d_state": 48}, "long_memory"),
        "state_32_fast_decay": ({"batch": 3, "seq_len": 65, "d_model": 40, "d_state": 32}, "fast_decay"),
    },
    # time in tiles of 32 or 64 steps: d_state 128 over several of them, state
    # and column counts that fill no tile, 97 columns, one row pair; d_state
    # 17-32 (16 row pairs: 16 threads per pair in the reference's running
    # rotation) with tiles of 64 and of 16 columns
    "mamba3_scan": {
        "state_24_columns_40": ({"batch": 1, "seq_len": 130, "n_heads": 2, "head_dim": 40, "d_state": 24}, "large_angles"),
        "state_32_columns_12": ({"batch": 2, "seq_len": 100, "n_heads": 1, "head_dim": 12, "d_state": 32}, "long_memory"),
        "state_128_five_chunks": ({"batch": 1, "seq_len": 300, "n_heads": 2, "head_dim": 9, "d_state": 128}, "moderate"),
        "state_100_columns_33": ({"batch": 1, "seq_len": 150, "n_heads": 1, "head_dim": 33, "d_state": 100}, "long_memory"),
        "columns_97": ({"batch": 1, "seq_len": 130, "n_heads": 1, "head_dim": 97, "d_state": 8}, "large_angles"),
        "one_pair_eleven_chunks": ({"batch": 2, "seq_len": 700, "n_heads": 1, "head_dim": 3, "d_state": 2}, "fast_decay"),
    },
    # more tiles of 256 entries than emu's grid of persistent warps (132 SMs x 8
    # blocks x 8 warps, 2,162,688 entries): about 900 of the reference's warps
    # walk a second tile, with the rows they loaded ahead for it
    "spmv_csr": {
        "persistent_warps_walk_on": ({"rows": 90001, "cols": 70001, "nnz": 2400017}, "power_law"),
    },
    # the reference's one warp per row below 2,048 logits and 256 threads from
    # there, 16-byte units when vocab % 8 == 0: units in pairs plus a tail
    "cross_entropy": {
        "narrow_widest": ({"rows": 7, "vocab": 2047}, "confident"),
        "wide_one_unit_per_thread": ({"rows": 6, "vocab": 2048}, "ignored_and_extremes"),
        "wide_odd": ({"rows": 5, "vocab": 2049}, "large_magnitude"),
        "wide_pairs_and_a_tail": ({"rows": 4, "vocab": 4104}, "confident"),
    },
    # the reference's pieces of time, quarters of the 64-step tiles: two tiles
    # (two of the four pieces empty), seven (pieces of 2, 2, 2 and 1 tiles) with
    # a second group of 16 states
    "ssm_selective_scan_backward": {
        "two_tiles_empty_pieces": ({"batch": 1, "seq_len": 100, "d_model": 5, "d_state": 3}, "long_memory"),
        "seven_tiles_state_20": ({"batch": 2, "seq_len": 420, "d_model": 17, "d_state": 20}, "fast_decay"),
    },
    "mamba3_scan_backward": {
        "state_128_columns_128": ({"batch": 1, "seq_len": 150, "n_heads": 1, "head_dim": 128, "d_state": 128}, "moderate"),
        "state_100_columns_33": ({"batch": 1, "seq_len": 150, "n_heads": 1, "head_dim": 33, "d_state": 100}, "long_memory"),
        "one_pair_eleven_chunks": ({"batch": 2, "seq_len": 700, "n_heads": 1, "head_dim": 3, "d_state": 2}, "fast_decay"),
        "chunk_boundary_65": ({"batch": 1, "seq_len": 65, "n_heads": 2, "head_dim": 8, "d_state": 16}, "lam_one"),
    },
}


@pytest.mark.parametrize("name", list(SIZES_NOT_IN_THE_CHALLENGE_TESTS))
def test_every_repository_solution_passes_sizes_the_challenge_tests_leave_out(name, tmp_path):
    # A copy of the challenge whose functional tests are these sizes: the
    # worker processes load the challenge from disk, by name.
    challenge, extra = load_challenge(name, REPO), SIZES_NOT_IN_THE_CHALLENGE_TESTS[name]
    folder = tmp_path / "challenges" / name
    for source in (challenge.root, *(challenge.root.parent / d for d in challenge.oracle_depends_on)):
        shutil.copytree(source, tmp_path / "challenges" / source.name)
    toml = (folder / "challenge.toml").read_text()
    first, performance = toml.index("[[tests.functional]]"), toml.index("[tests.performance]")
    blocks = "".join(
        f'[[tests.functional]]\nname = "{test}"\nsizes = {{ '
        + ", ".join(f"{k} = {v}" for k, v in sizes.items())
        + f' }}\ndistribution = "{distribution}"\nseed = {900 + i}\n\n'
        for i, (test, (sizes, distribution)) in enumerate(extra.items())
    )
    (folder / "challenge.toml").write_text(toml[:first] + blocks + toml[performance:])
    wider = load_challenge(name, tmp_path)
    assert [t.name for t in wider.tests_of("functional")] == list(extra)

    solutions = [p for p in discover_solutions(challenge, REPO) if p.suffix == ".cu"]
    results = evaluate_files(wider, solutions, Plan(backend="emu", time=False), tmp_path)
    assert len(results) == len(solutions)
    for result in results:
        assert result.passed, f"{result.solution}: {result.reason}: {result.message}"
        assert [t.name for t in result.tests][1:] == list(extra)  # after the example


def test_a_compile_error_is_reported_with_file_and_line(challenge, tmp_path):
    broken = tmp_path / "broken.cu"
    text = (FIXTURES / "correct_sequential.cu").read_text().replace("acc += C", "acc += undefined_thing * C")
    broken.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "undefined_thing" in l)
    (result,) = evaluate_files(challenge, [broken], Plan(backend="emu", time=False), REPO)
    assert result.reason == "compile_error"
    assert f"broken.cu:{line}:" in result.message


def test_sanitize_reports_a_write_far_past_the_guards_with_file_and_line(challenge, tmp_path):
    text = (FIXTURES / "out_of_bounds.cu").read_text().replace("d_model + 3]", "d_model + 100000]")
    far = tmp_path / "far.cu"
    far.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "100000" in l)
    (result,) = evaluate_files(challenge, [far], Plan(backend="emu", time=False, sanitize=True), REPO)
    assert result.reason == "sanitizer"
    assert f"far.cu:{line}" in result.message and "block (0,0,0)" in result.message
