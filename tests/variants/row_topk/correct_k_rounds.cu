// expect: pass
// Independent design: one warp per row finds the answer one rank at a time, k rounds over the row, each taking the largest (key, -column) order key below the previous round's pick (a warp max of 64-bit keys); k reads of the row, no sort, no shared memory.
#include <cuda_runtime.h>

// Order key of one element: larger means earlier in the answer.
__device__ __forceinline__ unsigned long long order_key(int key, int col) {
    return ((unsigned long long)((unsigned)key ^ 0x80000000u) << 32) | (0xFFFFFFFFu - (unsigned)col);
}

__global__ void k_rounds(const int* input, int* values, int* indices, int rows, int cols, int k) {
    const int lane = threadIdx.x & 31;
    const long long r = (long long)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
    if (r >= rows) return;
    const int* row = input + r * cols;
    const int scanned = cols;
    unsigned long long previous = 0;  // after round 0, every pick is the largest order key below the previous pick
    for (int j = 0; j < k; ++j) {
        unsigned long long best = 0;
        int best_col = -1;
        for (int c = lane; c < scanned; c += 32) {
            unsigned long long o = order_key(row[c], c);
            if ((j == 0 || o < previous) && (best_col < 0 || o > best)) {
                best = o;
                best_col = c;
            }
        }
        for (int off = 16; off > 0; off >>= 1) {
            unsigned long long other = __shfl_xor_sync(0xffffffffu, best, off);
            int other_col = __shfl_xor_sync(0xffffffffu, best_col, off);
            if (other_col >= 0 && (best_col < 0 || other > best)) {
                best = other;
                best_col = other_col;
            }
        }
        if (lane == 0) {
            values[r * k + j] = best_col >= 0 ? row[best_col] : 0;
            indices[r * k + j] = best_col;
        }
        previous = best;
    }
}

extern "C" void solve(const int* input, int* values, int* indices, int rows, int cols, int k) {
    k_rounds<<<(rows + 7) / 8, 256>>>(input, values, indices, rows, cols, k);
}
