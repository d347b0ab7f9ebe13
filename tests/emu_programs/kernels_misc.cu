// Templates, 2D/3D blocks and grids, static shared tiles, vector types and math.
#include <cuda_runtime.h>
#include <math.h>

template <typename T, int TILE>
__global__ void transpose(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
    __shared__ T tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Every thread of a 3D grid of 3D blocks writes its global linear index.
__global__ void index3d(int* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        out[(z * ny + y) * nx + x] = tid * 1000 + (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
    }
}

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

__global__ void __launch_bounds__(128) math_ops(const float4* __restrict__ in, float* out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = __ldg(&in[i]);
    float2 p = make_float2(v.x, v.y);
    out[8 * i + 0] = expf(v.x) + __expf(v.y);
    out[8 * i + 1] = rsqrtf(fabsf(v.z) + 1.0f) + sqrtf(fabsf(v.w));
    out[8 * i + 2] = __fdividef(p.x, 2.0f) + fmaf(p.y, 3.0f, 1.0f);
    out[8 * i + 3] = (float)__float2int_rn(v.x * 10.0f);
    out[8 * i + 4] = fminf(v.x, v.y) + fmaxf(v.z, v.w) + (float)min(i, 3) + (float)max(i, 5);
    out[8 * i + 5] = gelu(v.z) + logf(fabsf(v.w) + 1.0f) + __logf(2.0f) + exp2f(v.x);
    out[8 * i + 6] = __saturatef(v.y) + (float)__popc((unsigned)i) + copysignf(1.0f, v.w);
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; k++) acc += (&v.x)[k];
    out[8 * i + 7] = acc;
}

extern "C" void solve(const float* m, float* mt, int rows, int cols, int* idx, int nx, int ny, int nz,
                      const float* v, float* mo, int n4) {
    dim3 block(16, 8);
    dim3 grid((cols + 15) / 16, (rows + 15) / 16);
    transpose<float, 16><<<grid, block>>>(m, mt, rows, cols);
    dim3 b3(4, 3, 2), g3((nx + 3) / 4, (ny + 2) / 3, (nz + 1) / 2);
    index3d<<<g3, b3>>>(idx, nx, ny, nz);
    math_ops<<<(n4 + 127) / 128, 128>>>(reinterpret_cast<const float4*>(v), mo, n4);
    cudaDeviceSynchronize();
}
