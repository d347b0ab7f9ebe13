// __half and __nv_bfloat16 as 16-bit storage with arithmetic done in float and
// rounded back to nearest-even (the correctly rounded result for + - * /).
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

namespace harness_emu {
inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {  // below the smallest normal half: scale to units of 2^-24
    float af;
    memcpy(&af, &ax, 4);
    return (uint16_t)(sign | (uint32_t)nearbyintf(af * 16777216.0f));
  }
  uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}
inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  float f;
  memcpy(&f, &x, 4);
  return f;
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}
}  // namespace harness_emu

#define HARNESS_EMU_16BIT_TYPE(T, TO_BITS, FROM_BITS)                                        \
  struct __attribute__((aligned(2))) T {                                                    \
    uint16_t __x;                                                                           \
    T() = default;                                                                          \
    T(float f) : __x(harness_emu::TO_BITS(f)) {}                                            \
    T(double f) : __x(harness_emu::TO_BITS((float)f)) {}                                    \
    T(int v) : __x(harness_emu::TO_BITS((float)v)) {}                                       \
    T(unsigned v) : __x(harness_emu::TO_BITS((float)v)) {}                                  \
    T(long long v) : __x(harness_emu::TO_BITS((float)v)) {}                                 \
    T(unsigned long long v) : __x(harness_emu::TO_BITS((float)v)) {}                        \
    operator float() const { return harness_emu::FROM_BITS(__x); }                          \
    T& operator=(float f) { __x = harness_emu::TO_BITS(f); return *this; }                  \
    T& operator+=(T o) { *this = T(float(*this) + float(o)); return *this; }                \
    T& operator-=(T o) { *this = T(float(*this) - float(o)); return *this; }                \
    T& operator*=(T o) { *this = T(float(*this) * float(o)); return *this; }                \
    T& operator/=(T o) { *this = T(float(*this) / float(o)); return *this; }                \
  };                                                                                        \
  inline T operator+(T a, T b) { return T(float(a) + float(b)); }                           \
  inline T operator-(T a, T b) { return T(float(a) - float(b)); }                           \
  inline T operator*(T a, T b) { return T(float(a) * float(b)); }                           \
  inline T operator/(T a, T b) { return T(float(a) / float(b)); }                           \
  inline T operator-(T a) { T r; r.__x = (uint16_t)(a.__x ^ 0x8000u); return r; }           \
  inline bool operator==(T a, T b) { return float(a) == float(b); }                         \
  inline bool operator!=(T a, T b) { return float(a) != float(b); }                         \
  inline bool operator<(T a, T b) { return float(a) < float(b); }                           \
  inline bool operator<=(T a, T b) { return float(a) <= float(b); }                        \
  inline bool operator>(T a, T b) { return float(a) > float(b); }                           \
  inline bool operator>=(T a, T b) { return float(a) >= float(b); }

HARNESS_EMU_16BIT_TYPE(__half, float_to_half_bits, half_bits_to_float)
HARNESS_EMU_16BIT_TYPE(__nv_bfloat16, float_to_bf16_bits, bf16_bits_to_float)
#undef HARNESS_EMU_16BIT_TYPE

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct __attribute__((aligned(4))) __half2 { __half x, y; };
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __half __double2half(double d) { return __half((float)d); }
inline __half __int2half_rn(int i) { return __half((float)i); }
inline int __half2int_rn(__half h) { return (int)nearbyintf(float(h)); }
inline int __half2int_rz(__half h) { return (int)float(h); }
inline __half __ushort_as_half(unsigned short b) { __half h; h.__x = b; return h; }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __short_as_half(short b) { __half h; h.__x = (uint16_t)b; return h; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) { __half r; r.__x = (uint16_t)(a.__x & 0x7fffu); return r; }
inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf(float(a), float(b), float(c))); }
inline __half __hmax(__half a, __half b) { return float(a) > float(b) ? a : b; }
inline __half __hmin(__half a, __half b) { return float(a) < float(b) ? a : b; }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hne(__half a, __half b) { return a != b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __hgt(__half a, __half b) { return a > b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline bool __hisnan(__half a) { return isnan(float(a)); }
inline bool __hisinf(__half a) { return isinf(float(a)) ? true : false; }
inline __half hexp(__half a) { return __half(expf(float(a))); }
inline __half hlog(__half a) { return __half(logf(float(a))); }
inline __half hsqrt(__half a) { return __half(sqrtf(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / sqrtf(float(a))); }
inline __half htanh(__half a) { return __half(tanhf(float(a))); }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 make_half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{a.x - b.x, a.y - b.y}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }
inline __half2 __h2div(__half2 a, __half2 b) { return __half2{a.x / b.x, a.y / b.y}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __half2 __hmax2(__half2 a, __half2 b) { return __half2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }
inline __half2 __hmin2(__half2 a, __half2 b) { return __half2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
inline __half2 operator/(__half2 a, __half2 b) { return __h2div(a, b); }

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { __nv_bfloat16 h; h.__x = b; return h; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) { return __nv_bfloat16(fmaf(float(a), float(b), float(c))); }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) > float(b) ? a : b; }
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) < float(b) ? a : b; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(a)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __nv_bfloat162{__nv_bfloat16(f.x), __nv_bfloat16(f.y)}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162{a, b}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
