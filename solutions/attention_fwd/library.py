"""attention_fwd through PyTorch: torch.nn.functional.scaled_dot_product_attention
with is_causal=True on the harness's buffers (torch tensors through DLPack,
shape (batch, heads, seq_len, head_dim)), PyTorch choosing its backend (the
flash or cuDNN kernel on an H200). SDPA has no out= argument, so the result
is copied into O: one extra 2-byte-per-element pass, ~5% of the work's bytes
and far less of its time."""

import torch
import torch.nn.functional as F

ARRAYS = "torch"


def solve(Q, K, V, O, batch, heads, seq_len, head_dim):
    O.copy_(F.scaled_dot_product_attention(Q, K, V, is_causal=True))
