"""solve()'s parameters are read from the source and checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.build.signature import check_signature, parse_solve_params
from harness.challenge import load_challenge
from harness.errors import MissingSymbol, SignatureMismatch

REPO = Path(__file__).resolve().parents[1]
PARAMS = (
    "const float* u, const float* delta, const float* A, const float* B, const float* C, "
    "const float* skip, float* y, int batch, int seq_len, int d_model, int d_state"
)


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def source(params: str, extern: str = 'extern "C" ') -> str:
    return f"// solve(int x) in a comment is ignored\n{extern}void solve({params}) {{ }}\n"


def test_the_signature_itself_passes(challenge):
    check_signature(source(PARAMS), challenge)


def test_qualifiers_names_and_layout_do_not_matter(challenge):
    restricted = PARAMS.replace("const float* u", "const float * __restrict__ input").replace("float* y", "float *out")
    check_signature(source(restricted.replace(", ", ",\n    ")), challenge)
    check_signature(source(PARAMS.replace("const float* u", "float const* u")), challenge)


def test_all_solutions_in_the_repository_match(challenge):
    for path in sorted((REPO / "solutions" / "ssm_selective_scan").glob("*.cu")) + [REPO / "reference" / "ssm_selective_scan.cu"]:
        check_signature(path.read_text(), challenge)


@pytest.mark.parametrize(
    "params, message",
    [
        (PARAMS.replace(", int d_state", ""), "takes 10 parameters, the challenge signature has 11"),
        (PARAMS.replace("int seq_len", "float seq_len"), "parameter 9 is `float seq_len`"),
        (PARAMS.replace("float* y", "float y"), "parameter 7"),
        (PARAMS.replace("const float* skip", "const double* skip"), "parameter 6"),
    ],
)
def test_mismatches_are_named(challenge, params, message):
    with pytest.raises(SignatureMismatch, match=message):
        check_signature(source(params), challenge)


def test_missing_extern_c_is_a_mismatch(challenge):
    with pytest.raises(SignatureMismatch, match='extern "C"'):
        check_signature(source(PARAMS, extern=""), challenge)


def test_no_solve_at_all(challenge):
    with pytest.raises(MissingSymbol):
        check_signature('extern "C" void solver(int n) {}', challenge)


def test_parse_reads_pointer_and_base_type():
    (first, last) = parse_solve_params("void solve(const float* __restrict__ u, int n) {")
    assert (first.base, first.pointer, first.name) == ("float", True, "u")
    assert (last.base, last.pointer, last.name) == ("int", False, "n")


def test_half_is_matched_under_both_of_its_names():
    (plain,) = parse_solve_params('extern "C" void solve(const half* A) {}')
    (underscored,) = parse_solve_params('extern "C" void solve(const __half* A) {}')
    assert plain.matches("const half*") and underscored.matches("const half*")
    assert not underscored.matches("const float*")
