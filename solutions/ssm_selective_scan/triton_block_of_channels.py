"""ssm_selective_scan in Triton: the seed's idea made to compile and scale.

The seed's version cannot compile: tl.arange(0, D) needs a compile-time
power of two, and it keeps a (D, N) state for all of d_model in one program.
Here a program owns one batch row and BLOCK_D channels, keeps their
(BLOCK_D, BLOCK_N) states in registers, and walks time; masks cover
d_model and d_state that are not powers of two.
"""

import torch
import triton
import triton.language as tl

ARRAYS = "torch"
BLOCK_D = 32


@triton.jit
def _scan(u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, skip_ptr, y_ptr, seq_len, d_model, d_state,
          BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    n = tl.arange(0, BLOCK_N)
    d_ok = d < d_model
    n_ok = n < d_state
    # padded states get A = 0 and B = 0: they decay by exp(0) = 1 from 0 and stay 0
    A = tl.load(A_ptr + d[:, None] * d_state + n[None, :], mask=d_ok[:, None] & n_ok[None, :], other=0.0)
    skip = tl.load(skip_ptr + d, mask=d_ok, other=0.0)
    h = tl.zeros((BLOCK_D, BLOCK_N), dtype=tl.float32)
    for t in range(seq_len):
        row = b * seq_len + t
        dt = tl.load(delta_ptr + row * d_model + d, mask=d_ok, other=0.0)
        x = tl.load(u_ptr + row * d_model + d, mask=d_ok, other=0.0)
        B_t = tl.load(B_ptr + row * d_state + n, mask=n_ok, other=0.0)
        C_t = tl.load(C_ptr + row * d_state + n, mask=n_ok, other=0.0)
        h = tl.exp(dt[:, None] * A) * h + (dt * x)[:, None] * B_t[None, :]
        y = tl.sum(h * C_t[None, :], axis=1) + skip * x
        tl.store(y_ptr + row * d_model + d, y, mask=d_ok)


def solve(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state):
    block_n = max(16, triton.next_power_of_2(d_state))
    grid = (batch, triton.cdiv(d_model, BLOCK_D))
    _scan[grid](u, delta, A, B, C, skip, y, seq_len, d_model, d_state, BLOCK_D=BLOCK_D, BLOCK_N=block_n)
