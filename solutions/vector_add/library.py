"""vector_add with CuPy's elementwise add, written into the given output."""

import cupy as cp


def solve(A, B, C, N):
    cp.add(A, B, out=C)
