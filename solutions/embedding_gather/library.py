"""embedding_gather with what a CuPy user would write: cupy.take along axis 0
straight into the given output."""

import cupy as cp


def solve(indices, table, output, num_indices, vocab, dim):
    cp.take(table, indices, axis=0, out=output)
