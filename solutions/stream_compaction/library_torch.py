"""stream_compaction with PyTorch's boolean indexing (input[input > 0], order
kept; its size is read back to the host), copied into the given output, the
rest zeroed."""

import torch

ARRAYS = "torch"


def solve(input, output, count, N):
    kept = input[input > 0]
    n = kept.numel()
    output[:n] = kept
    output[n:] = 0
    count[0] = n
