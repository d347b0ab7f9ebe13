"""prefix_sum with PyTorch: torch.cumsum written into the given output (torch
tensors through DLPack), the other scan a user would reach for."""

import torch

ARRAYS = "torch"


def solve(input, output, N):
    torch.cumsum(input, 0, out=output)
