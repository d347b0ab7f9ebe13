// cp.async groups (one warp): five stages of shared memory filled by
// cp.async.ca (4 and 8 bytes, an L2 hint), cp.async.cg with a source size
// (the rest zero-filled), an "n" size operand and __pipeline_memcpy_async,
// one commit_group each, completed by wait_group 3, wait_group 2, wait_all
// and __pipeline_wait_prior. Stage s of lane l reads src[s * 128 + l * 4 ...].
// out[s * 128 + l * 4 + j]: stage s after its wait. early / mid: all stages
// before any wait and after wait_group 3 (a race on a GPU: emu keeps shared
// memory unchanged until a wait covers the copy).
#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__global__ void stages(const float* src, float* out, float* early, float* mid) {
    __shared__ __align__(16) float S[5][32][4];
    int lane = threadIdx.x;
    for (int s = 0; s < 5; s++)
        for (int j = 0; j < 4; j++) S[s][lane][j] = -1.0f;
    __syncwarp();
    const float* g = src + lane * 4;
    for (int j = 0; j < 4; j++)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem(&S[0][lane][j])), "l"(g + j));
    asm volatile("cp.async.commit_group;\n" ::);
    for (int j = 0; j < 4; j += 2)
        asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 8;\n" ::"r"(smem(&S[1][lane][j])), "l"(g + 128 + j));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem(&S[2][lane][0])), "l"(g + 256), "r"(lane % 17));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.ca.shared::cta.global [%0], [%1], %2;\n" ::"r"(smem(&S[3][lane][0])), "l"(g + 384), "n"(16));
    asm volatile("cp.async.commit_group;\n" ::);
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 4; j++) early[s * 128 + lane * 4 + j] = S[s][lane][j];
    asm volatile("cp.async.wait_group %0;\n" ::"n"(3));
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 4; j++) mid[s * 128 + lane * 4 + j] = S[s][lane][j];
    for (int j = 0; j < 4; j++) out[lane * 4 + j] = S[0][lane][j];
    asm volatile("cp.async.wait_group 2;\n" ::);
    for (int j = 0; j < 4; j++) out[128 + lane * 4 + j] = S[1][lane][j];
    __pipeline_memcpy_async(&S[4][lane][0], g + 512, 16, lane % 2 ? 8 : 0);
    __pipeline_commit();
    asm volatile("cp.async.wait_all;\n" ::);
    __pipeline_wait_prior(0);
    for (int s = 2; s < 5; s++)
        for (int j = 0; j < 4; j++) out[s * 128 + lane * 4 + j] = S[s][lane][j];
}

extern "C" void solve(const float* src, float* out, float* early, float* mid) {
    stages<<<1, 32>>>(src, out, early, mid);
    cudaDeviceSynchronize();
}
