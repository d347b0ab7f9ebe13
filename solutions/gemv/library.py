"""gemv with cuBLAS through CuPy: cupy.matmul of the (M, N) matrix and the (N,)
vector, which CuPy hands to cuBLAS as a matrix-vector product (sgemv), into y.

CuPy asks cuBLAS for TF32 tensor-core math only when the environment sets
CUPY_TF32=1; a TF32 product fails this challenge's tolerance, so the row
refuses to run under that setting rather than time TF32 as float32."""

import os

import cupy


def solve(A, x, y, M, N):
    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        raise RuntimeError("CUPY_TF32 is set: cuBLAS would multiply in TF32, not float32")
    cupy.matmul(A, x, out=y)
