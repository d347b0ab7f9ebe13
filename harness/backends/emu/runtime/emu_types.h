// CUDA vector types (with CUDA's alignments), dim3 and the make_* helpers.
#pragma once
#include <stdint.h>

#define HARNESS_EMU_VEC2(T, N, A) \
  struct __attribute__((aligned(A))) N##2 { T x, y; }; \
  inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define HARNESS_EMU_VEC3(T, N) \
  struct N##3 { T x, y, z; }; \
  inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define HARNESS_EMU_VEC4(T, N, A) \
  struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define HARNESS_EMU_VEC1(T, N) \
  struct N##1 { T x; }; \
  inline N##1 make_##N##1(T x) { return N##1{x}; }

HARNESS_EMU_VEC1(signed char, char) HARNESS_EMU_VEC2(signed char, char, 2) HARNESS_EMU_VEC3(signed char, char) HARNESS_EMU_VEC4(signed char, char, 4)
HARNESS_EMU_VEC1(unsigned char, uchar) HARNESS_EMU_VEC2(unsigned char, uchar, 2) HARNESS_EMU_VEC3(unsigned char, uchar) HARNESS_EMU_VEC4(unsigned char, uchar, 4)
HARNESS_EMU_VEC1(short, short) HARNESS_EMU_VEC2(short, short, 4) HARNESS_EMU_VEC3(short, short) HARNESS_EMU_VEC4(short, short, 8)
HARNESS_EMU_VEC1(unsigned short, ushort) HARNESS_EMU_VEC2(unsigned short, ushort, 4) HARNESS_EMU_VEC3(unsigned short, ushort) HARNESS_EMU_VEC4(unsigned short, ushort, 8)
HARNESS_EMU_VEC1(int, int) HARNESS_EMU_VEC2(int, int, 8) HARNESS_EMU_VEC3(int, int) HARNESS_EMU_VEC4(int, int, 16)
HARNESS_EMU_VEC1(unsigned int, uint) HARNESS_EMU_VEC2(unsigned int, uint, 8) HARNESS_EMU_VEC3(unsigned int, uint) HARNESS_EMU_VEC4(unsigned int, uint, 16)
HARNESS_EMU_VEC1(long long, longlong) HARNESS_EMU_VEC2(long long, longlong, 16) HARNESS_EMU_VEC3(long long, longlong) HARNESS_EMU_VEC4(long long, longlong, 16)
HARNESS_EMU_VEC1(unsigned long long, ulonglong) HARNESS_EMU_VEC2(unsigned long long, ulonglong, 16) HARNESS_EMU_VEC3(unsigned long long, ulonglong) HARNESS_EMU_VEC4(unsigned long long, ulonglong, 16)
HARNESS_EMU_VEC1(float, float) HARNESS_EMU_VEC2(float, float, 8) HARNESS_EMU_VEC3(float, float) HARNESS_EMU_VEC4(float, float, 16)
HARNESS_EMU_VEC1(double, double) HARNESS_EMU_VEC2(double, double, 16) HARNESS_EMU_VEC3(double, double) HARNESS_EMU_VEC4(double, double, 16)

#undef HARNESS_EMU_VEC1
#undef HARNESS_EMU_VEC2
#undef HARNESS_EMU_VEC3
#undef HARNESS_EMU_VEC4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
