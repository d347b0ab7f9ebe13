"""Starter files for Python solutions, written from a challenge's signature.
(The CUDA C starter is the challenge's own starter.cu.) Each starter runs
and writes nothing, so it fails with unwritten_output until solve() is filled in."""

from __future__ import annotations

from .challenge import Challenge

LANGUAGES = ("cuda", "cupy", "triton", "torch")


def _parameter_notes(challenge: Challenge) -> str:
    lines = []
    for p in challenge.params:
        if p.role == "size":
            lines.append(f"    {p.name}: int")
        else:
            lines.append(f"    {p.name}: {p.dtype} {p.role}, shape ({', '.join(p.shape)})")
    return "\n".join(lines)


def python_starter(challenge: Challenge, language: str) -> str:
    names = ", ".join(p.name for p in challenge.params)
    notes = _parameter_notes(challenge)
    outputs = ", ".join(p.name for p in challenge.outputs)
    if language == "cupy":
        return f'''"""{challenge.title}: a CuPy solution. See `harness show {challenge.name}`.

solve() receives CuPy device arrays (row-major, contiguous) and ints, and
writes {outputs} in place. Kernels are CUDA C strings compiled by NVRTC through
cupy.RawModule (no nvcc needed); launch them on the default stream.
"""

import cupy as cp

_SOURCE = r"""
extern "C" __global__ void kernel(float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        // compute out[i] here
    }}
}}
"""
_module = cp.RawModule(code=_SOURCE)  # compiled once, on import
_kernel = _module.get_function("kernel")


def solve({names}):
    """
{notes}
    """
    # e.g.: n = {challenge.outputs[0].name}.size
    #       _kernel(((n + 255) // 256,), (256,), ({challenge.outputs[0].name}, cp.int32(n)))
'''
    if language == "triton":
        return f'''"""{challenge.title}: a Triton solution. See `harness show {challenge.name}`.

solve() receives torch tensors on the GPU (sharing memory with the harness's
buffers, no copies) and ints, and writes {outputs} in place.
"""

import torch
import triton
import triton.language as tl

ARRAYS = "torch"


@triton.jit
def kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    # compute and tl.store(out_ptr + offsets, values, mask=mask) here


def solve({names}):
    """
{notes}
    """
    # e.g.: n = {challenge.outputs[0].name}.numel()
    #       kernel[(triton.cdiv(n, 1024),)]({challenge.outputs[0].name}, n, BLOCK=1024)
'''
    if language == "torch":
        return f'''"""{challenge.title}: a PyTorch solution. See `harness show {challenge.name}`.

solve() receives torch tensors on the GPU (sharing memory with the harness's
buffers, no copies) and ints, and writes {outputs} in place (e.g. with copy_).
"""

import torch

ARRAYS = "torch"


def solve({names}):
    """
{notes}
    """
'''
    raise ValueError(f"no Python starter for {language!r}; languages: {', '.join(LANGUAGES)}")
