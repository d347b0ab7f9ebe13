"""emu: run CUDA C solutions on the CPU, following CUDA semantics, for
correctness only (never timing).

`build_emu_library(source, cache_dir, sanitize=False)` translates a .cu file
(translate.py) and compiles it with g++ against the runtime headers in
runtime/ into a shared library exporting the solution's `solve` plus:

* `const char* harness_emu_error(void)`: NULL, or the first runtime failure of
  the calls since the last reset (barrier deadlock with block index and where
  the threads wait, warp collective misuse, invalid launch configuration).
  After a failure the launch is abandoned and later launches are skipped.
* `void harness_emu_reset(void)`: clears that state.
* `void harness_emu_set_schedule(int mode, unsigned seed)`: the order in which
  the runnable threads of a block run between sync points: 0 forward,
  1 reverse, 2 random (seeded). Results that differ between schedules mean a
  race (e.g. a missing __syncthreads).

Execution model. Blocks run one after another on the calling thread (in
blockIdx order, x fastest). Each CUDA thread is a fiber with its own stack
(64 KiB, 512 KiB under ASan; HARNESS_EMU_STACK_KB overrides) and switches
only at __syncthreads* and warp collectives, so code between sync points runs
without interruption and atomics are trivially atomic.

Semantics chosen where CUDA leaves room:
* Threads that exited count as arrived at __syncthreads (as on sm_70+), so
  `if (i >= n) return;` before a barrier works. Threads that wait at
  *different* __syncthreads call sites are reported as a barrier deadlock
  (CUDA: undefined; a GPU may hang or silently mis-synchronise).
* A warp collective with mask M completes when every non-exited lane in M
  waits at a collective of the same kind with the same mask; lanes past the
  end of a partial warp count as exited. A lane in M that waits elsewhere (a
  barrier, another mask) is reported as a deadlock. Reading a lane that does
  not take part returns the caller's own value (CUDA: undefined).
* __activemask() returns the lanes of the warp that reach the same call site
  before the block can make no other progress (an approximation of the
  converged set).
* Spin-waiting on another thread of the same block, or on a later block,
  never ends (no preemption): the caller must apply a timeout.

Math: device math functions and their fast variants (__expf, and inline PTX
of one special-function instruction such as ex2.approx.ftz.f32) use the
accurate host functions, so approximation errors a GPU would add are not
reproduced.

Not detected: host code that dereferences a device pointer works on emu
(device memory is host memory; NumPy arrays are passed directly), while it
would crash on a GPU. Shared memory is not cleared between blocks, and reads
of shared memory nobody wrote are not reported.

Tensor cores (emu_tensor.h, emu_wmma.h, ptx.py): wmma::mma_sync, mma.sync
and ldmatrix are warp-synchronous (all 32 lanes of the warp must reach them,
else the launch fails naming the lanes). Operands are exact in their type
(tf32: the upper 19 bits of the register, as the tensor core reads them),
products exact, one instruction's sum rounded once to float32; hardware
alignment truncation inside an instruction is not reproduced (last-bit
differences). cp.async reads its source when issued and writes shared memory
when a wait_group/wait_all covers its group. WMMA's element-to-lane mapping
(unspecified by CUDA) is emu's own: see emu_wmma.h.

Sanitizer: `sanitize=True` builds with -fsanitize=address; the process that
loads the library needs `sanitizer_env()` (LD_PRELOAD of libasan and
ASAN_OPTIONS) in its environment before it starts. Out-of-bounds accesses are
then reported with the .cu file:line (the translation carries #line).
"""

from __future__ import annotations

from .build import build_emu_library, find_nvcc, sanitizer_env
from .translate import translate

__all__ = ["build_emu_library", "find_nvcc", "sanitizer_env", "translate"]
