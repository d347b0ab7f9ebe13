// Atomics. Blocks run on one host thread and fibers only switch at sync
// points, so a plain read-modify-write is already atomic; they still go
// through __atomic builtins so a future multi-threaded scheduler stays right.
#pragma once
#include <string.h>

namespace harness_emu {
template <class T, class F>
inline T rmw(T* p, F op) {
  T old = *p;
  *p = op(old);
  return old;
}
}  // namespace harness_emu

#define HARNESS_EMU_ATOMIC(NAME, T, EXPR) \
  inline T NAME(T* p, T v) { return harness_emu::rmw(p, [&](T o) -> T { return EXPR; }); } \
  inline T NAME##_block(T* p, T v) { return NAME(p, v); } \
  inline T NAME##_system(T* p, T v) { return NAME(p, v); }

HARNESS_EMU_ATOMIC(atomicAdd, int, (int)((unsigned)o + (unsigned)v))
HARNESS_EMU_ATOMIC(atomicAdd, unsigned int, o + v)
HARNESS_EMU_ATOMIC(atomicAdd, unsigned long long, o + v)
HARNESS_EMU_ATOMIC(atomicAdd, float, o + v)
HARNESS_EMU_ATOMIC(atomicAdd, double, o + v)
HARNESS_EMU_ATOMIC(atomicAdd, __half, o + v)
HARNESS_EMU_ATOMIC(atomicAdd, __nv_bfloat16, o + v)
HARNESS_EMU_ATOMIC(atomicSub, int, (int)((unsigned)o - (unsigned)v))
HARNESS_EMU_ATOMIC(atomicSub, unsigned int, o - v)
HARNESS_EMU_ATOMIC(atomicSub, unsigned long long, o - v)
HARNESS_EMU_ATOMIC(atomicSub, float, o - v)
HARNESS_EMU_ATOMIC(atomicSub, double, o - v)
HARNESS_EMU_ATOMIC(atomicExch, int, v)
HARNESS_EMU_ATOMIC(atomicExch, unsigned int, v)
HARNESS_EMU_ATOMIC(atomicExch, unsigned long long, v)
HARNESS_EMU_ATOMIC(atomicExch, float, v)
HARNESS_EMU_ATOMIC(atomicExch, double, v)
HARNESS_EMU_ATOMIC(atomicMax, int, o > v ? o : v)
HARNESS_EMU_ATOMIC(atomicMax, unsigned int, o > v ? o : v)
HARNESS_EMU_ATOMIC(atomicMax, long long, o > v ? o : v)
HARNESS_EMU_ATOMIC(atomicMax, unsigned long long, o > v ? o : v)
HARNESS_EMU_ATOMIC(atomicMax, float, o > v || v != v ? o : v)
HARNESS_EMU_ATOMIC(atomicMax, double, o > v || v != v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, int, o < v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, unsigned int, o < v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, long long, o < v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, unsigned long long, o < v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, float, o < v || v != v ? o : v)
HARNESS_EMU_ATOMIC(atomicMin, double, o < v || v != v ? o : v)
HARNESS_EMU_ATOMIC(atomicAnd, int, o & v)
HARNESS_EMU_ATOMIC(atomicAnd, unsigned int, o & v)
HARNESS_EMU_ATOMIC(atomicAnd, unsigned long long, o & v)
HARNESS_EMU_ATOMIC(atomicOr, int, o | v)
HARNESS_EMU_ATOMIC(atomicOr, unsigned int, o | v)
HARNESS_EMU_ATOMIC(atomicOr, unsigned long long, o | v)
HARNESS_EMU_ATOMIC(atomicXor, int, o ^ v)
HARNESS_EMU_ATOMIC(atomicXor, unsigned int, o ^ v)
HARNESS_EMU_ATOMIC(atomicXor, unsigned long long, o ^ v)
HARNESS_EMU_ATOMIC(atomicInc, unsigned int, o >= v ? 0u : o + 1u)
HARNESS_EMU_ATOMIC(atomicDec, unsigned int, (o == 0u || o > v) ? v : o - 1u)
#undef HARNESS_EMU_ATOMIC

inline __half2 atomicAdd(__half2* p, __half2 v) { return harness_emu::rmw(p, [&](__half2 o) { return __hadd2(o, v); }); }

#define HARNESS_EMU_CAS(T) \
  inline T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; } \
  inline T atomicCAS_block(T* p, T cmp, T v) { return atomicCAS(p, cmp, v); } \
  inline T atomicCAS_system(T* p, T cmp, T v) { return atomicCAS(p, cmp, v); }
HARNESS_EMU_CAS(int)
HARNESS_EMU_CAS(unsigned int)
HARNESS_EMU_CAS(unsigned long long)
HARNESS_EMU_CAS(unsigned short)
#undef HARNESS_EMU_CAS
