// 32-bit extended-precision arithmetic in inline PTX (add.cc/addc, sub.cc/subc),
// as 64-bit sums and counts of comparisons are written. Thread i of n, with
// a = words[2i] | words[2i+1] << 32 and b = words[2n+2i] | words[2n+2i+1] << 32:
//   sums[2i], sums[2i+1]: the low and high words of a + b (add.cc, addc);
//   diffs[2i], diffs[2i+1]: those of a - b (sub.cc, subc);
//   flags[3i]: the carry out of a + b, flags[3i+1]: the carry out of a - b,
//     which is a + ~b + 1 (1 when nothing was borrowed), both read by an
//     addc of 0 after addc.cc/subc.cc;
//   flags[3i+2]: how many of the 4n words are greater than words[i], unsigned,
//     each compare the carry of x + ~words[i] (one add.cc and one addc each).
#include <cuda_runtime.h>

__global__ void carries(const unsigned* words, unsigned* sums, unsigned* diffs, unsigned* flags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned a0 = words[2 * i], a1 = words[2 * i + 1], b0 = words[2 * n + 2 * i], b1 = words[2 * n + 2 * i + 1];
    unsigned s0, s1, d0, d1, carry, borrow;
    asm("add.cc.u32 %0, %3, %5;\n\taddc.cc.u32 %1, %4, %6;\n\taddc.u32 %2, 0, 0;"
        : "=r"(s0), "=r"(s1), "=r"(carry) : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
    asm("{\n\tsub.cc.u32 %0, %3, %5;\n\tsubc.cc.s32 %1, %4, %6;\n\taddc.u32 %2, 0, 0;\n\t}"
        : "=r"(d0), "=r"(d1), "=r"(borrow) : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
    const unsigned not_key = ~words[i];
    unsigned greater = 0;
    for (int j = 0; j < 4 * n; ++j) {
        [[maybe_unused]] unsigned sum;  // only the carry is wanted
        asm("add.cc.u32 %0, %2, %3;\n\taddc.u32 %1, %1, 0;" : "=&r"(sum), "+r"(greater) : "r"(words[j]), "r"(not_key));
    }
    sums[2 * i] = s0, sums[2 * i + 1] = s1;
    diffs[2 * i] = d0, diffs[2 * i + 1] = d1;
    flags[3 * i] = carry, flags[3 * i + 1] = borrow, flags[3 * i + 2] = greater;
}

extern "C" void solve(const unsigned* words, unsigned* sums, unsigned* diffs, unsigned* flags, int n) {
    carries<<<(n + 63) / 64, 64>>>(words, sums, diffs, flags, n);
    cudaDeviceSynchronize();
}
