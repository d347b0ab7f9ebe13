"""What any SpMV of spmv_csr's official matrix must do, without the row
bookkeeping: stream col_idx and values, gather x at every column (32
consecutive entries per warp instruction, as reference/spmv_csr.cu does),
read row_ptr and write y. The sums are not y; they only keep the loads alive.
Timed against a device-to-device copy that moves the same bytes (read plus
written, as the harness counts copy bandwidth), in one process, the L2
flushed before every call; "gather=0" streams the same bytes without the
gathers.

    .venv/bin/python reference/spmv_csr_floor.py     (on a machine with a GPU)
"""

import statistics

import cupy as cp
import numpy as np

from harness.challenge import load_challenge
from harness.testdata import make_inputs

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) stream_and_gather(
    const int4* __restrict__ col, const float4* __restrict__ val, const float* __restrict__ x,
    const int* __restrict__ row_ptr, float* __restrict__ y, int quads, int rows, float* sink) {
  const int lane = threadIdx.x & 31, stride = gridDim.x * blockDim.x;
  float acc = 0.f;
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q - lane < quads; q += stride) {
    const int4 c4 = q < quads ? __ldcs(col + q) : make_int4(0, 0, 0, 0);
    const float4 v4 = q < quads ? __ldcs(val + q) : make_float4(0, 0, 0, 0);
    acc += (v4.x + v4.y) + (v4.z + v4.w);
#if GATHER
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // gather j of lane l: entry 32 j + l of the warp's 128
      const int from = 8 * j + (lane >> 2);
      const int a = __shfl_sync(~0u, c4.x, from), b = __shfl_sync(~0u, c4.y, from);
      const int c = __shfl_sync(~0u, c4.z, from), d = __shfl_sync(~0u, c4.w, from);
      const int k = lane & 3;
      acc += __ldg(x + (k == 0 ? a : k == 1 ? b : k == 2 ? c : d));
    }
#endif
  }
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) y[r] = (float)__ldcs(row_ptr + r);
  if (acc == 1234.5f) sink[threadIdx.x] = acc;  // never true in practice; keeps the loads
}
"""


def median_us(run, flush: cp.ndarray, calls: int = 22) -> float:
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for i in range(calls + 3):
        flush.fill(i & 255)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    return statistics.median(times[3:])


def main() -> None:
    challenge = load_challenge("spmv_csr")
    inputs = make_inputs(challenge, challenge.tests_of("performance")[0], 0)
    rows, nnz, cols = inputs["row_ptr"].size - 1, inputs["col_idx"].size, inputs["x"].size
    assert nnz % 4 == 0
    arrays = {name: cp.asarray(a) for name, a in inputs.items()}
    y, sink = cp.zeros(rows, cp.float32), cp.zeros(256, cp.float32)
    flush = cp.empty(256 << 20, cp.uint8)  # 5x the 50 MB L2
    moved = 4 * (rows + 1) + 8 * nnz + 4 * cols + 4 * rows
    src = cp.ones(moved // 8, cp.float32)
    dst = cp.empty_like(src)
    copy = median_us(lambda: dst.__setitem__(Ellipsis, src), flush)
    print(f"{moved / 1e6:.1f} MB; copy of the same bytes {copy:.1f} us")
    for gather in (0, 1):
        kernel = cp.RawModule(code=SOURCE, options=(f"-DGATHER={gather}",)).get_function("stream_and_gather")
        for blocks_per_sm in (8, 16, 32):
            grid = cp.cuda.Device().attributes["MultiProcessorCount"] * blocks_per_sm
            args = (arrays["col_idx"], arrays["values"], arrays["x"], arrays["row_ptr"], y, np.int32(nnz // 4),
                    np.int32(rows), sink)
            us = median_us(lambda: kernel((grid,), (256,), args), flush)
            print(f"gather={gather} blocks={grid}: {us:.1f} us, {us / copy:.3f}x the copy")


if __name__ == "__main__":
    main()
