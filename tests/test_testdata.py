"""Test data: generated inputs respect the challenge, are deterministic, the
cached data equals a fresh computation, and reference.py gets exact inputs and
owns its exceptions."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.challenge import challenge_names, load_challenge
from harness.errors import ChallengeError
from harness.testdata import case_data_path, compute_expected, load_case_data, make_inputs

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", challenge_names(REPO))
def test_every_generated_case_has_valid_inputs(name):
    challenge = load_challenge(name, REPO)
    for case in challenge.tests_of("example", "functional"):
        inputs = make_inputs(challenge, case)  # raises if a constraint or shape is violated
        for param in challenge.inputs:
            assert inputs[param.name].shape == challenge.shape(param, case.sizes)
            assert inputs[param.name].dtype == np.dtype(param.dtype)
            assert np.isfinite(inputs[param.name]).all()
        for zeroed in case.zero:
            assert not inputs[zeroed].any()


def test_inputs_are_deterministic_and_variants_differ():
    challenge = load_challenge("ssm_selective_scan", REPO)
    case = max(challenge.tests_of("functional"), key=lambda c: c.sizes["batch"] * c.sizes["seq_len"])
    first, again, other = make_inputs(challenge, case), make_inputs(challenge, case), make_inputs(challenge, case, variant=1)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert all(not np.array_equal(first[k], other[k]) for k in first)


def test_cached_case_data_round_trips():
    challenge = load_challenge("ssm_selective_scan", REPO)
    case = challenge.tests_of("example")[0]
    path = case_data_path(challenge, case)
    assert path == case_data_path(challenge, case)  # second call finds the cache
    data = load_case_data(path)
    inputs = make_inputs(challenge, case)
    expected = compute_expected(challenge, case, inputs)
    assert all(np.array_equal(data.inputs[k], inputs[k]) for k in inputs)
    assert all(np.array_equal(data.expected[k], expected[k]) for k in expected)
    assert data.expected["y"].dtype == np.float64


def test_an_exception_in_reference_py_is_the_challenges_error_with_its_line(tmp_path):
    folder = tmp_path / "challenges" / "vector_add"
    shutil.copytree(REPO / "challenges" / "vector_add", folder)
    source = (folder / "reference.py").read_text()
    # a bug of the challenge, not of the harness: exit 2 with the line, not INTERNAL_ERROR
    folder.joinpath("reference.py").write_text(source + "\n\ndef reference(inputs, sizes):\n    return [][0]\n")
    challenge = load_challenge("vector_add", tmp_path)
    case = challenge.tests_of("example")[0]
    line = len(folder.joinpath("reference.py").read_text().splitlines())
    with pytest.raises(ChallengeError, match=rf"reference\(\) raised IndexError on test {case.name}: .*reference\.py:{line}\)"):
        compute_expected(challenge, case, make_inputs(challenge, case))


def test_the_reference_receives_floats_as_float64_and_integers_as_int64(tmp_path):
    folder = tmp_path / "challenges" / "embedding_gather"
    shutil.copytree(REPO / "challenges" / "embedding_gather", folder)
    source = (folder / "reference.py").read_text()
    folder.joinpath("reference.py").write_text(
        source + "\n\n_exact = reference\n\n\ndef reference(inputs, sizes):\n"
        '    assert (inputs["indices"].dtype, inputs["table"].dtype) == (np.int64, np.float64)\n'
        "    return _exact(inputs, sizes)\n"
    )
    challenge = load_challenge("embedding_gather", tmp_path)
    case = challenge.tests_of("example")[0]
    expected = compute_expected(challenge, case, make_inputs(challenge, case))  # raises ChallengeError otherwise
    assert expected["output"].dtype == np.float64
