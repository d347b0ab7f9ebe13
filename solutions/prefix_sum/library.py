"""prefix_sum with CuPy's cumsum (a CUB device scan), written into the given output."""

import cupy as cp


def solve(input, output, N):
    cp.cumsum(input, out=output)
