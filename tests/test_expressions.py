import numpy as np
import pytest

from harness.errors import ChallengeError
from harness.expressions import ExpressionError, evaluate, names_in


def test_arithmetic_over_sizes():
    assert evaluate("4 * (3*batch*seq_len + d_model) // 2", {"batch": 2, "seq_len": 5, "d_model": 4}) == 68


def test_constraints_over_arrays():
    names = {"delta": np.array([0.1, 2.0]), "A": np.array([-1.0, 0.0])}
    assert evaluate("all(delta > 0)", names)
    assert not evaluate("all(A < 0)", names)


@pytest.mark.parametrize("source", ["__import__('os').system('true')", "delta.all()", "x if y else z", "lambda: 1"])
def test_anything_but_arithmetic_is_refused(source):
    with pytest.raises(ExpressionError):
        evaluate(source, {"delta": np.ones(2), "x": 1, "y": 1, "z": 1})


def test_unknown_name_is_an_error_that_names_it():
    with pytest.raises(ChallengeError, match="'seqlen'"):
        evaluate("seqlen * 2", {"seq_len": 3})


def test_names_in_excludes_functions():
    assert names_in("all(delta > A)") == {"delta", "A"}
