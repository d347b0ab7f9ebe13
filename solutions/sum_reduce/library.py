"""sum_reduce with CuPy's sum (a CUB device reduction), written into the given output."""

import cupy as cp


def solve(input, output, N):
    cp.sum(input, keepdims=True, out=output)
