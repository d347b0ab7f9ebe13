// Force-included (g++ -include) before every translated solution: the CUDA
// surface on the CPU. Solutions' own #include <cuda_runtime.h> etc. resolve to
// the empty shims in include/.
#pragma once
#define __CUDACC__ 1
#define __HARNESS_EMU__ 1
#define CUDART_VERSION 13000
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0

#include <assert.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

// Execution-space and memory-space qualifiers. __shared__ variables become
// function-local statics: blocks run one at a time, so a static is exactly
// "one per block, shared by its threads". The translator rewrites
// `extern __shared__` and drops a `static` next to __shared__. No macro for
// __noinline__: it is also the GNU attribute spelling libstdc++ uses
// (`__attribute__((__noinline__))`), so the translator rewrites it instead.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __inline_hint__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __maxnreg__(...)

#include "emu_types.h"
#include "emu_fiber.h"
#include "emu_core.h"
#include "emu_math.h"
#include "emu_half.h"
#include "emu_atomics.h"
#include "emu_runtime_api.h"
#include "emu_tensor.h"
