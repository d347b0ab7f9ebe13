// The CUDA runtime API on the CPU: device memory is host memory, streams and
// events are synchronous, the device is a plausible single H200.
#pragma once
#include <chrono>
#include <stdlib.h>
#include <string.h>

#include "emu_core.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef cudaError_t cudaError;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0, cudaSharedMemBankSizeFourByte = 1, cudaSharedMemBankSizeEightByte = 2 };
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
};
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

struct CUstream_st { int unused; };
struct CUevent_st { std::chrono::steady_clock::time_point at; };
typedef struct CUevent_st* cudaEvent_t;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment, texturePitchAlignment;
  int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory, computeMode;
  int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount;
  int unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported, localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID;
  int singleToDoublePrecisionPerfRatio, pageableMemoryAccess, concurrentManagedAccess;
  int computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch;
  size_t sharedMemPerBlockOptin;
  int maxBlocksPerMultiProcessor, accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
};
struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes;
  int preferredShmemCarveout;
};

namespace harness_emu {
inline cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) g.last_error = e;
  return e;
}
// Errors of abandoned launches stay visible to the code that synchronises.
inline cudaError_t sync_status() { return g.abandoned ? cudaErrorLaunchFailure : cudaSuccess; }
inline void* device_alloc(size_t bytes) {
  // 256-byte alignment, as cudaMalloc guarantees (vectorised loads rely on it).
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return nullptr;
  return p;
}
}  // namespace harness_emu

inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
  }
}
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}
inline cudaError_t cudaGetLastError() {
  cudaError_t e = (cudaError_t)harness_emu::g.last_error;
  if (e != cudaErrorLaunchFailure) harness_emu::g.last_error = 0;  // launch failures are sticky
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return (cudaError_t)harness_emu::g.last_error; }

template <class T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
  *p = (T*)harness_emu::device_alloc(bytes);
  return harness_emu::ret(*p ? cudaSuccess : cudaErrorMemoryAllocation);
}
template <class T>
inline cudaError_t cudaMallocManaged(T** p, size_t bytes, unsigned = cudaMemAttachGlobal) { return cudaMalloc(p, bytes); }
template <class T>
inline cudaError_t cudaMallocHost(T** p, size_t bytes) { return cudaMalloc(p, bytes); }
template <class T>
inline cudaError_t cudaHostAlloc(T** p, size_t bytes, unsigned) { return cudaMalloc(p, bytes); }
template <class T>
inline cudaError_t cudaMallocAsync(T** p, size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
template <class T>
inline cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t width, size_t height) {
  *pitch = (width + 255) / 256 * 256;
  return cudaMalloc(p, *pitch * height);
}
inline cudaError_t cudaFree(void* p) { free(p); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void* p) { free(p); return cudaSuccess; }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind = cudaMemcpyDefault) {
  if (n) memmove(dst, src, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind k = cudaMemcpyDefault, cudaStream_t = 0) {
  return cudaMemcpy(dst, src, n, k);
}
inline cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                cudaMemcpyKind = cudaMemcpyDefault) {
  for (size_t r = 0; r < height; r++) memmove((char*)dst + r * dpitch, (const char*)src + r * spitch, width);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind k = cudaMemcpyDefault, cudaStream_t = 0) {
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, k);
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) { if (n) memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = 0) { return cudaMemset(p, v, n); }
template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t n, size_t offset = 0,
                                      cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset + n > sizeof(T)) return harness_emu::ret(cudaErrorInvalidValue);
  memcpy((char*)&symbol + offset, src, n);
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t n, size_t offset = 0,
                                           cudaMemcpyKind k = cudaMemcpyHostToDevice, cudaStream_t = 0) {
  return cudaMemcpyToSymbol(symbol, src, n, offset, k);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t n, size_t offset = 0,
                                        cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (offset + n > sizeof(T)) return harness_emu::ret(cudaErrorInvalidValue);
  memcpy(dst, (const char*)&symbol + offset, n);
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t n, size_t offset = 0,
                                             cudaMemcpyKind k = cudaMemcpyDeviceToHost, cudaStream_t = 0) {
  return cudaMemcpyFromSymbol(dst, symbol, n, offset, k);
}
template <class T>
inline cudaError_t cudaGetSymbolAddress(void** p, const T& symbol) { *p = (void*)&symbol; return cudaSuccess; }
template <class T>
inline cudaError_t cudaGetSymbolSize(size_t* n, const T&) { *n = sizeof(T); return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total) {
  *free_b = (size_t)140 << 30;
  *total = (size_t)141 << 30;
  return cudaSuccess;
}
inline cudaError_t cudaMemPrefetchAsync(const void*, size_t, int, cudaStream_t = 0) { return cudaSuccess; }
inline cudaError_t cudaHostRegister(void*, size_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }

inline cudaError_t cudaDeviceSynchronize() { return harness_emu::sync_status(); }
inline cudaError_t cudaThreadSynchronize() { return harness_emu::sync_status(); }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return harness_emu::ret(d == 0 ? cudaSuccess : cudaErrorInvalidDevice); }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetLimit(int, size_t) { return cudaSuccess; }
inline cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }
inline cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }

inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = new CUstream_st{}; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) { return cudaStreamCreate(s); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s != cudaStreamLegacy && s != cudaStreamPerThread) delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return harness_emu::sync_status(); }
inline cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new CUevent_st{std::chrono::steady_clock::now()}; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) { e->at = std::chrono::steady_clock::now(); return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return harness_emu::sync_status(); }
inline cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return harness_emu::ret(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  strcpy(p->name, "NVIDIA H200 (harness emu)");
  p->totalGlobalMem = (size_t)143771 << 20;
  p->sharedMemPerBlock = 49152;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->clockRate = 1980000;
  p->totalConstMem = 65536;
  p->major = 9; p->minor = 0;
  p->textureAlignment = 512; p->texturePitchAlignment = 32;
  p->deviceOverlap = 1; p->multiProcessorCount = 132; p->canMapHostMemory = 1;
  p->concurrentKernels = 1; p->ECCEnabled = 1; p->asyncEngineCount = 3; p->unifiedAddressing = 1;
  p->memoryClockRate = 2619000; p->memoryBusWidth = 6144; p->l2CacheSize = 52428800;
  p->persistingL2CacheMaxSize = 82837504;
  p->maxThreadsPerMultiProcessor = 2048; p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1; p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 233472; p->regsPerMultiprocessor = 65536; p->managedMemory = 1;
  p->singleToDoublePrecisionPerfRatio = 2; p->concurrentManagedAccess = 1; p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 1; p->sharedMemPerBlockOptin = 232448; p->maxBlocksPerMultiProcessor = 32;
  p->accessPolicyMaxWindowSize = 134213632; p->reservedSharedMemPerBlock = 1024;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = 1024; break;
    case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *v = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = p.regsPerBlock; break;
    case cudaDevAttrClockRate: *v = p.clockRate; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrMemoryClockRate: *v = p.memoryClockRate; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *v = p.regsPerMultiprocessor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = p.maxBlocksPerMultiProcessor; break;
    default: *v = 0; return harness_emu::ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

// Kernel attributes: only the dynamic shared memory opt-in has an effect (it is
// remembered for the whole solve, not per kernel).
template <class F>
inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || (size_t)value > harness_emu::kMaxDynSmem) return harness_emu::ret(cudaErrorInvalidValue);
    if ((size_t)value > harness_emu::g.max_dyn_smem_attr) harness_emu::g.max_dyn_smem_attr = (size_t)value;
  }
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaFuncSetCacheConfig(F, cudaFuncCache) { return cudaSuccess; }
template <class F>
inline cudaError_t cudaFuncSetSharedMemConfig(F, cudaSharedMemConfig) { return cudaSuccess; }
template <class F>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F) {
  memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = a->binaryVersion = 90;
  a->maxDynamicSharedSizeBytes = (int)harness_emu::g.max_dyn_smem_attr;
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F, int block_size, size_t smem) {
  if (block_size <= 0) return harness_emu::ret(cudaErrorInvalidValue);
  int by_threads = 2048 / block_size, by_smem = smem ? (int)(233472 / (smem + 1024)) : 32;
  int b = by_threads < by_smem ? by_threads : by_smem;
  *blocks = b < 32 ? b : 32;
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, F f, int block_size, size_t smem, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block_size, smem);
}
template <class F>
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, F, size_t smem = 0, int limit = 0) {
  int b = limit > 0 && limit < 1024 ? limit : 1024;
  *block_size = b;
  int per_sm = 2048 / b;
  if (smem) { int s = (int)(233472 / (smem + 1024)); per_sm = per_sm < s ? per_sm : s; }
  *min_grid = 132 * (per_sm > 0 ? per_sm : 1);
  return cudaSuccess;
}

// ---- Extended launches: cudaLaunchKernelEx and its attributes ---------------
// Programmatic dependent launch (the attribute that lets a kernel start before
// the one before it has finished, with cudaGridDependencySynchronize or
// griddepcontrol.wait in the kernel before it reads that one's results) needs
// nothing more on emu: launches run one after another, so the kernel before
// has always finished and its writes are visible. Cooperative launches and
// thread block clusters are refused, as elsewhere on emu.
enum cudaLaunchAttributeID {
  cudaLaunchAttributeIgnore = 0,
  cudaLaunchAttributeAccessPolicyWindow = 1,
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeSynchronizationPolicy = 3,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeClusterSchedulingPolicyPreference = 5,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6,
  cudaLaunchAttributeProgrammaticEvent = 7,
  cudaLaunchAttributePriority = 8,
};
union cudaLaunchAttributeValue {
  char pad[64];
  int cooperative;
  int programmaticStreamSerializationAllowed;
  int priority;
  struct { unsigned int x, y, z; } clusterDim;
};
typedef struct cudaLaunchAttribute_st {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
} cudaLaunchAttribute;
typedef struct cudaLaunchConfig_st {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
} cudaLaunchConfig_t;

namespace harness_emu {
// The kernel's name in `kernel, arg, ...` (cudaLaunchKernelEx's arguments as written): up to the
// first comma outside <> and ().
inline std::string launched_kernel_name(const char* written) {
  std::string name;
  int depth = 0;
  for (const char* p = written; *p && !(*p == ',' && depth == 0); ++p) {
    depth += (*p == '<' || *p == '(') - (*p == '>' || *p == ')');
    name += *p;
  }
  return name;
}
template <class... P, class... A>
inline cudaError_t launch_ex(const char* file, int line, const char* written, const cudaLaunchConfig_t* config,
                             void (*kernel)(P...), A&&... args) {
  if (!config || (config->numAttrs && !config->attrs)) return ret(cudaErrorInvalidValue);
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeCooperative && a.val.cooperative)
      fail("not supported on emu: cooperative kernel launch (cudaLaunchAttributeCooperative) at %s:%d", file, line);
    if (a.id == cudaLaunchAttributeClusterDimension && a.val.clusterDim.x * a.val.clusterDim.y * a.val.clusterDim.z > 1)
      fail("not supported on emu: thread block clusters (cudaLaunchAttributeClusterDimension) at %s:%d", file, line);
  }
  const std::string name = launched_kernel_name(written);
  Launcher(file, line, name.c_str(), config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream)(
      [&](auto&&... a) { kernel(a...); }, std::forward<A>(args)...);
  return cudaSuccess;
}
}  // namespace harness_emu
#define cudaLaunchKernelEx(config, ...) ::harness_emu::launch_ex(__FILE__, __LINE__, #__VA_ARGS__, config, __VA_ARGS__)
