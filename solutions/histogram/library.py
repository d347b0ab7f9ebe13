"""histogram with CuPy's bincount (its result is int64 and sized by the largest
key, so it is copied into the given int32 output: what a user would write)."""

import cupy as cp


def solve(input, histogram, N, num_bins):
    histogram[...] = cp.bincount(input, minlength=num_bins)
