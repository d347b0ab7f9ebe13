"""The challenge format: loading, consistency checks, and completeness of every
challenge in the repository (spec, reference, starter, tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import harness.challenge as model
from harness.build.signature import check_signature
from harness.challenge import Difficulty, Tolerance, challenge_names, load_challenge, repository_root, select_challenges, with_secret_seeds
from harness.errors import ChallengeError
from harness.testdata import compute_expected, make_inputs

REPO = Path(__file__).resolve().parents[1]
ALL = challenge_names(REPO)


def test_the_repository_has_the_headline_challenge():
    assert "ssm_selective_scan" in ALL


@pytest.mark.parametrize("name", ALL)
def test_challenge_folder_is_complete(name):
    challenge = load_challenge(name, REPO)
    assert challenge.spec_path.read_text().strip()
    assert challenge.tests_of("example") and challenge.tests_of("functional") and challenge.tests_of("performance")
    assert set(challenge.distributions) >= {t.distribution for t in challenge.tests if t.distribution}
    for kind in ("bytes",):
        assert challenge.cost_of(kind, challenge.tests_of("performance")[0].sizes) > 0
    # the starter declares exactly the signature the harness calls
    check_signature(challenge.starter_path.read_text(), challenge)


@pytest.mark.parametrize("name", ALL)
def test_the_oracle_reproduces_the_specs_worked_example(name):
    """The example's expected outputs in challenge.toml are the spec's worked
    by hand; the harness judges the example against the oracle, so the two
    must agree (to `expected_atol` where the hand-worked values are rounded)."""
    challenge = load_challenge(name, REPO)
    case = challenge.tests_of("example")[0]
    oracle = compute_expected(challenge, case, make_inputs(challenge, case))
    assert case.literal_expected and set(case.literal_expected) == set(oracle)
    for output, worked in case.literal_expected.items():
        np.testing.assert_allclose(oracle[output], np.asarray(worked, dtype=np.float64), rtol=0, atol=case.expected_atol or 0, err_msg=output)


@pytest.mark.parametrize("name", ALL)
def test_spec_states_the_signature_and_tolerance(name):
    challenge = load_challenge(name, REPO)
    spec = " ".join(challenge.spec_path.read_text().split())
    for param in challenge.params:
        assert param.name in spec
    assert "tolerance" in spec.lower()


def test_ssm_signature_is_the_leetgpu_one():
    challenge = load_challenge("ssm_selective_scan", REPO)
    assert challenge.signature() == (
        'extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, '
        "const float* C, const float* skip, float* y, int batch, int seq_len, int d_model, int d_state)"
    )
    y = next(p for p in challenge.params if p.name == "y")
    assert challenge.shape(y, {"batch": 4, "seq_len": 4096, "d_model": 512, "d_state": 16}) == (4, 4096, 512)


def copy_challenge(tmp_path: Path, edit) -> Path:
    """A copy of ssm_selective_scan with its toml edited, in a fresh root."""
    folder = tmp_path / "challenges" / "ssm_selective_scan"
    shutil.copytree(REPO / "challenges" / "ssm_selective_scan", folder)
    toml = folder / "challenge.toml"
    toml.write_text(edit(toml.read_text()))
    return tmp_path


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace('role = "output"', 'role = "result"', 1), "role must be one of"),
        (lambda t: t.replace('"d_model"]', '"d_modle"]', 1), "unknown sizes"),
        (lambda t: t.replace("[tests.performance]", "[tests.unused]"), "no performance test"),
        (lambda t: t.replace('name = "ssm_selective_scan"', 'name = "other"'), "differs from its folder"),
        (lambda t: t + "\n[[tests.functional]]\nname = 'x'\nsizes = { batch = 99, seq_len = 1, d_model = 1, d_state = 1 }\ndistribution = 'moderate'\nseed = 1\n", "outside"),
        (lambda t: t + "\n[[tests.functional]]\nname = 'y'\nsizes = { batch = 1, seq_len = 1, d_model = 1, d_state = 1 }\ndistribution = 'nonexistent'\nseed = 1\n", "unknown distribution"),
        (lambda t: t.replace("[tolerance]", "[tolerances]"), "missing key"),
        (lambda t: t.replace('constraints = [', 'constraints = ["d_state % 2 == 0", '), "violates 'd_state % 2 == 0'"),
        (lambda t: t.replace('constraints = [', 'constraints = ["all(dleta > 0)", '), "unknown names"),
    ],
)
def test_inconsistent_metadata_is_rejected_with_a_reason(tmp_path, edit, message):
    root = copy_challenge(tmp_path, edit)
    with pytest.raises(ChallengeError, match=message):
        load_challenge("ssm_selective_scan", root)


def test_unknown_challenge_lists_the_known_ones():
    with pytest.raises(ChallengeError, match="ssm_selective_scan"):
        load_challenge("no_such_challenge", REPO)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace('difficulty = "hard"', 'difficulty = "brutal"'), "difficulty must be one of"),
        (lambda t: t.replace('difficulty = "hard"\n', ""), "missing key 'difficulty'"),
        (lambda t: t.replace("topics = [", 'topics = ["Shared Memory", '), "topics must be"),
        (lambda t: t.replace("rtol = 1e-3\n", "rtol = 1e-3\n[tolerance.u]\natol = 1.0\n", 1), r"non-outputs \['u'\]"),
    ],
)
def test_practice_metadata_is_validated(tmp_path, edit, message):
    root = copy_challenge(tmp_path, edit)
    with pytest.raises(ChallengeError, match=message):
        load_challenge("ssm_selective_scan", root)


def test_a_tolerance_sub_table_overrides_one_output_only(tmp_path):
    root = copy_challenge(tmp_path, lambda t: t.replace("rtol = 1e-3\n", "rtol = 1e-3\n[tolerance.y]\natol = 0.5\n", 1))
    challenge = load_challenge("ssm_selective_scan", root)
    assert challenge.tolerance_for("y") == Tolerance(atol=0.5, rtol=1e-3)
    assert challenge.tolerance == Tolerance(atol=1e-2, rtol=1e-3)


def test_list_orders_by_difficulty_and_filters_by_difficulty_and_topic():
    challenges = [load_challenge(name, REPO) for name in ALL]
    ordered = select_challenges(challenges)
    ranks = [list(Difficulty).index(c.difficulty) for c in ordered]
    assert ranks == sorted(ranks) and len(ordered) == len(ALL)
    assert all(c.difficulty is Difficulty.HARD for c in select_challenges(challenges, Difficulty.HARD))
    scans = select_challenges(challenges, topic="scan")
    assert {c.name for c in scans} >= {"ssm_selective_scan", "mamba3_scan"}
    assert all("scan" in c.topics for c in scans)
    assert select_challenges(challenges, topic="no-such-topic") == []


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """Candidate roots, each with a challenges/ folder, and the working directory
    a practice folder inside the first: which of them repository_root picks."""
    made = {}
    for name in ("env", "checkout_above", "packaged", "source"):
        (tmp_path / name / "challenges").mkdir(parents=True)
        made[name] = tmp_path / name
    practice = made["checkout_above"] / "practice" / "deeper"
    practice.mkdir(parents=True)
    monkeypatch.chdir(practice)
    monkeypatch.delenv("HARNESS_ROOT")
    monkeypatch.setattr(model, "PACKAGED_DATA", made["packaged"])
    monkeypatch.setattr(model, "SOURCE_CHECKOUT", made["source"])
    assert not any((p / "challenges").is_dir() for p in tmp_path.parents)
    return made


def test_root_precedence_env_then_checkout_above_then_package_then_source(roots, monkeypatch):
    monkeypatch.setenv("HARNESS_ROOT", str(roots["env"]))
    assert repository_root() == roots["env"]
    monkeypatch.delenv("HARNESS_ROOT")
    assert repository_root() == roots["checkout_above"]
    shutil.rmtree(roots["checkout_above"] / "challenges")
    assert repository_root() == roots["packaged"]
    shutil.rmtree(roots["packaged"] / "challenges")
    assert repository_root() == roots["source"]
    shutil.rmtree(roots["source"] / "challenges")
    with pytest.raises(ChallengeError, match=r"no challenges/ folder at or above .*set HARNESS_ROOT"):
        repository_root()


def test_harness_root_without_challenges_is_a_clear_error(roots, monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_ROOT", str(tmp_path / "nowhere"))
    with pytest.raises(ChallengeError, match=r"HARNESS_ROOT=.*nowhere has no challenges/ folder"):
        repository_root()


def test_secret_seeds_change_every_generated_test_and_keep_the_example():
    challenge = load_challenge("ssm_selective_scan", REPO)
    hidden = with_secret_seeds(challenge, "grader secret")
    again = with_secret_seeds(challenge, "grader secret")
    other = with_secret_seeds(challenge, "another secret")
    assert hidden.hidden_seeds and not challenge.hidden_seeds
    for case, secret_case, same, different in zip(challenge.tests, hidden.tests, again.tests, other.tests):
        assert (case.name, case.sizes, case.distribution) == (secret_case.name, secret_case.sizes, secret_case.distribution)
        if case.kind == "example":
            assert secret_case == case
        else:
            assert secret_case.seed != case.seed and secret_case.seed == same.seed and secret_case.seed != different.seed
    with pytest.raises(ChallengeError, match="empty"):
        with_secret_seeds(challenge, "")


def test_an_oracle_that_loads_another_challenge_is_keyed_by_it_too(tmp_path):
    for name in ("ssm_selective_scan", "ssm_selective_scan_backward"):
        shutil.copytree(REPO / "challenges" / name, tmp_path / "challenges" / name)
    before = load_challenge("ssm_selective_scan_backward", tmp_path).content_hash
    forward = tmp_path / "challenges" / "ssm_selective_scan" / "reference.py"
    forward.write_text(forward.read_text() + "\n# a change to the forward's generators\n")
    assert load_challenge("ssm_selective_scan_backward", tmp_path).content_hash != before
    shutil.rmtree(tmp_path / "challenges" / "ssm_selective_scan")
    with pytest.raises(ChallengeError, match="oracle_depends_on names 'ssm_selective_scan'"):
        load_challenge("ssm_selective_scan_backward", tmp_path)
