// Tensor-core and asynchronous-copy surface: the runtime side of the inline
// PTX the translator (ptx.py) rewrites (mma.sync, ldmatrix, cp.async, and
// Hopper's warpgroup wgmma further down), plus shared-window addresses and the
// cuda_pipeline primitives. WMMA (nvcuda::wmma) lives in emu_wmma.h and
// uses the warp exchange defined here.
//
// Warp-synchronous ops (mma.sync, ldmatrix, wmma::mma_sync) read registers of
// every lane of the warp. Each lane deposits its operands in its slot of the
// warp's exchange table and waits at a Coll::Tensor collective (the mechanism
// of __syncwarp: all 32 lanes must arrive, else the launch reports it); then
// each lane computes its own results from the table, and a second collective
// keeps the table alive until every lane has read it.
//
// Numerics (the tensor-core model): operands are exact in their type (f16 and
// bf16 as stored; tf32 takes the upper 19 bits of the 32-bit register, the low
// 13 mantissa bits are ignored as the hardware does, so feeding raw float32
// bits truncates while __float_to_tf32 / cvt.rna rounds to nearest, ties
// away); products are exact; one instruction's k products and c are summed in
// double and rounded once to float32. Hardware adds with truncated alignment,
// so the last bit of a float32 result can differ from an H200's; the input
// rounding and the float32 accumulation across instructions are reproduced.
#pragma once
#include <stdint.h>
#include <string.h>

#include <vector>

#include "emu_core.h"
#include "emu_half.h"

namespace harness_emu {

// ---- Shared-window addresses ----------------------------------------------
// A shared-state address (what __cvta_generic_to_shared returns and .shared
// PTX operands take) is a 32-bit offset from dyn_smem; __shared__ variables
// are statics of the same library, so every one is within +-2 GiB of it.
inline uint32_t shared_address_of(const void* p, const char* file, int line) {
  int64_t off = (int64_t)((const char*)p - (const char*)dyn_smem);
  if (off < INT32_MIN || off > INT32_MAX)
    fail("__cvta_generic_to_shared at %s:%d: %p is not a shared-memory address", base_name(file), line, p);
  return (uint32_t)(int32_t)off;
}
inline void* shared_pointer(uint64_t addr, const char* what, const char* file, int line) {
  if (addr > 0xffffffffull) {
    fail("%s at %s:%d: operand 0x%llx is not a shared-state address (a generic pointer? convert it with "
         "__cvta_generic_to_shared)", what, base_name(file), line, (unsigned long long)addr);
    return nullptr;
  }
  return (char*)dyn_smem + (int32_t)(uint32_t)addr;
}

// ---- Warp exchange -----------------------------------------------------------
struct WarpSlot {
  uint32_t reg[8];
  const void* ptr[2];
};
HARNESS_EMU_HIDDEN inline WarpSlot warp_slots[32][32];  // [warp of the block][lane]

inline int warp_of(const Thread* t) { return (int)((t - g.threads.data()) / 32); }

// Every lane of the warp must arrive; false (and the launch's error) if not.
inline bool tensor_rendezvous(const char* what, const char* file, int line) {
  Thread* t = current_thread(what);
  unsigned arrived = (unsigned)collective(Coll::Tensor, 0xffffffffu, 0, 0, 32, 1, file, line);
  if (arrived == 0xffffffffu) return true;
  if (t->lane == __builtin_ctz(arrived))
    fail("%s at %s:%d in kernel %s: needs all 32 lanes of warp %d in block (%u,%u,%u), but lanes 0x%08x exited "
         "or are outside the block", what, base_name(file), line, g.launch->name, warp_of(t), blockIdx.x,
         blockIdx.y, blockIdx.z, ~arrived);
  return false;
}
inline void tensor_release(const char* what, const char* file, int line) {
  (void)what;
  collective(Coll::Tensor, 0xffffffffu, 0, 0, 32, 1, file, line);
}
inline WarpSlot* my_warp_slots() { return warp_slots[warp_of(g.cur)]; }

// ---- Operand values ----------------------------------------------------------
inline float tf32_operand(uint32_t bits) {  // the tensor core reads the upper 19 bits
  return from_bits<float>(bits & 0xffffe000u);
}
inline float round_to_tf32(float x) {  // cvt.rna.tf32.f32: nearest, ties away from zero
  uint32_t b = to_bits(x) & 0xffffffffu;
  if ((b & 0x7f800000u) != 0x7f800000u) b += 0x1000u;
  return from_bits<float>(b & 0xffffe000u);
}
template <class T>
inline uint32_t reg_bits(const T& v) {
  static_assert(sizeof(T) == 4, "an inline PTX register operand of mma/ldmatrix/cp.async must be 32 bits");
  uint32_t b;
  memcpy(&b, &v, 4);
  return b;
}
template <class T>
inline void set_reg(T& dst, uint32_t bits) {
  static_assert(sizeof(T) == 4, "an inline PTX register operand of mma/ldmatrix must be 32 bits");
  memcpy(&dst, &bits, 4);
}
template <class T>
inline uint64_t addr_operand(const T& v) {  // "r" (32-bit) or "l" (64-bit) address operands
  if constexpr (sizeof(T) == 8) { uint64_t b; memcpy(&b, &v, 8); return b; }
  else { static_assert(sizeof(T) == 4, "an address operand must be 32 or 64 bits"); uint32_t b; memcpy(&b, &v, 4); return b; }
}

// ---- mma.sync.aligned.{m16n8k8,m16n8k16,m16n8k4}.row.col.f32.X.X.f32 ---------
enum class MmaType : uint8_t { F16, BF16, TF32 };

// Row/col of element i of lane `lane`'s A, B and C fragments (PTX ISA, "Matrix
// Fragments for mma.m16n8k*"); g = groupID, t = threadID_in_group.
inline void mma_a_coord(MmaType ty, int k, int lane, int i, int& r, int& c) {
  int g = lane >> 2, t = lane & 3;
  if (ty == MmaType::TF32) {
    if (k == 4) { r = g + 8 * i; c = t; }                         // a0, a1
    else { r = g + 8 * (i & 1); c = t + 4 * (i >> 1); }            // m16n8k8: a0..a3
  } else if (k == 8) { r = g + 8 * (i >> 1); c = 2 * t + (i & 1); }  // a0..a3
  else { r = g + 8 * ((i >> 1) & 1); c = 2 * t + (i & 1) + 8 * (i >> 2); }  // m16n8k16: a0..a7
}
inline void mma_b_coord(MmaType ty, int k, int lane, int i, int& r, int& c) {
  int g = lane >> 2, t = lane & 3;
  c = g;
  if (ty == MmaType::TF32) r = t + 4 * i;                         // b0 (k4), b0, b1 (k8)
  else if (k == 8) r = 2 * t + i;                                 // b0, b1
  else r = 2 * t + (i & 1) + 8 * (i >> 1);                        // m16n8k16: b0..b3
}
inline void mma_c_coord(int lane, int i, int& r, int& c) {
  r = (lane >> 2) + 8 * (i >> 1);
  c = 2 * (lane & 3) + (i & 1);
}
// Element i (in the low-to-high order of the PTX tables) of a lane's registers.
inline float mma_element(MmaType ty, const uint32_t* regs, int i) {
  if (ty == MmaType::TF32) return tf32_operand(regs[i]);
  uint16_t h = (uint16_t)(regs[i >> 1] >> (16 * (i & 1)));
  return ty == MmaType::F16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
}

// Where each element of A and B sits: the lane and element index whose
// fragment holds it, per (type, k), built once from the coordinate functions
// above. A lane then decodes only the 2 rows of A and 2 columns of B its own
// outputs need, not the whole warp's fragments (which took half of an emu run
// of an mma-heavy kernel).
struct MmaMap {
  uint8_t a_lane[16][16], a_elem[16][16], b_lane[16][8], b_elem[16][8];
};
inline const MmaMap& mma_map(MmaType ty, int k) {
  static MmaMap maps[3][3];
  static bool built[3][3];
  const int ti = (int)ty, ki = k == 4 ? 0 : k == 8 ? 1 : 2;
  MmaMap& m = maps[ti][ki];
  if (!built[ti][ki]) {
    const int na = 16 * k / 32, nb = 8 * k / 32;
    for (int l = 0; l < 32; l++) {
      for (int i = 0; i < na; i++) {
        int r, cc;
        mma_a_coord(ty, k, l, i, r, cc);
        m.a_lane[r][cc] = (uint8_t)l;
        m.a_elem[r][cc] = (uint8_t)i;
      }
      for (int i = 0; i < nb; i++) {
        int r, cc;
        mma_b_coord(ty, k, l, i, r, cc);
        m.b_lane[r][cc] = (uint8_t)l;
        m.b_elem[r][cc] = (uint8_t)i;
      }
    }
    built[ti][ki] = true;
  }
  return m;
}

inline void ptx_mma(MmaType ty, int k, const uint32_t* a, const uint32_t* b, const float* c, float* d,
                    const char* file, int line) {
  const char* what = "mma.sync.aligned (inline PTX)";
  int per_reg = ty == MmaType::TF32 ? 1 : 2;
  int na = 16 * k / 32, nb = 8 * k / 32;  // elements per lane
  WarpSlot* slots = my_warp_slots();
  WarpSlot& mine = slots[g.cur->lane];
  for (int i = 0; i < na / per_reg; i++) mine.reg[i] = a[i];
  for (int i = 0; i < nb / per_reg; i++) mine.reg[4 + i] = b[i];
  if (!tensor_rendezvous(what, file, line)) return;
  const MmaMap& m = mma_map(ty, k);
  for (int i = 0; i < 4; i++) {
    int r, cc;
    mma_c_coord(g.cur->lane, i, r, cc);
    double s = c[i];
    for (int kk = 0; kk < k; kk++) {
      const float av = mma_element(ty, slots[m.a_lane[r][kk]].reg, m.a_elem[r][kk]);
      const float bv = mma_element(ty, slots[m.b_lane[kk][cc]].reg + 4, m.b_elem[kk][cc]);
      s += (double)av * (double)bv;
    }
    d[i] = (float)s;
  }
  tensor_release(what, file, line);
}

// ---- ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 ----------------
// Lanes 8i..8i+7 give the row addresses of matrix i; register i of lane l gets
// row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (transposed with .trans).
inline void ptx_ldmatrix(int count, bool trans, uint64_t addr, uint32_t* out, const char* file, int line) {
  const char* what = trans ? "ldmatrix.sync.aligned.m8n8.trans (inline PTX)" : "ldmatrix.sync.aligned.m8n8 (inline PTX)";
  WarpSlot* slots = my_warp_slots();
  int lane = g.cur->lane;
  const void* row = nullptr;
  if (lane < 8 * count) {
    row = shared_pointer(addr, what, file, line);
    if (((uintptr_t)row & 15u) != 0) {
      fail("%s at %s:%d in kernel %s: lane %d's row address is not 16-byte aligned", what, base_name(file), line,
           g.launch->name, lane);
      row = nullptr;
    }
  }
  slots[lane].ptr[0] = row;
  if (!tensor_rendezvous(what, file, line)) return;
  for (int m = 0; m < count; m++) {
    uint16_t e[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
      int src_row = trans ? 2 * (lane & 3) + j : lane >> 2;
      int col = trans ? lane >> 2 : 2 * (lane & 3) + j;
      const uint16_t* p = (const uint16_t*)slots[8 * m + src_row].ptr[0];
      if (p) e[j] = p[col];
    }
    out[m] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
  }
  tensor_release(what, file, line);
}

// ---- wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}, m64nNk8.f32.tf32.tf32
// Hopper's warpgroup MMA: D (64 x N, float32) = scale-d * D + (imm-scale-a * A) x
// (imm-scale-b * B), A 64 x K from a shared-memory matrix descriptor or from
// registers, B K x N from a descriptor; K = 16 (f16, bf16) or 8 (tf32, whose
// operands are K-major only: the instruction has no transpose immediates). The 128 threads of warpgroup w
// (threads 128w..128w+127 of the block) meet at a Coll::WarpGroup collective,
// which the scheduler completes once every one of them waits there (a thread
// that exited is reported). The first thread to run afterwards decodes A and B
// into its warpgroup's table; every thread then computes its own fragment.
// The table needs no second collective: it is rewritten only when all 128
// threads have reached the next wgmma, i.e. after each has read it.
//
// Asynchrony: emu completes the MMA when it is issued, so wgmma.fence,
// wgmma.commit_group and wgmma.wait_group only check that they run inside a
// kernel. A kernel that reads its accumulators before a wait_group covering
// them (undefined on a GPU) reads the finished result on emu.
//
// Numerics: as mma.sync above: exact f16/bf16 operands, tf32 the upper 19 bits
// of each 32-bit element, exact products, the K products and D summed in double
// and rounded once to float32.
using WgmmaType = MmaType;  // the operand types are mma.sync's, and so are A's register fragments
inline int wgmma_k(WgmmaType ty) { return ty == WgmmaType::TF32 ? 8 : 16; }

struct WgmmaSlot {
  uint32_t a[4];  // A fragment when A comes from registers
  uint64_t desc_a, desc_b;
};
struct WgmmaTable {
  uint64_t serial;  // the collective whose operands these are
  bool ok;
  float A[64][16];
  float B[16][256];
};
HARNESS_EMU_HIDDEN inline WgmmaSlot wgmma_slots[1024];  // [thread of the block]
HARNESS_EMU_HIDDEN inline WgmmaTable wgmma_tables[8];   // [warpgroup of the block]

// Byte offset of element (mn, k) of a 16-bit operand in the canonical layouts of
// the PTX ISA ("Shared Memory Matrix Layout"), before swizzling. T = 8 elements
// (16 bytes); a core matrix is 8 rows of 16 bytes.
//   K-major, no swizzle:  ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
//   K-major, S-byte swizzle: ((8,m),(T,2k)) : ((S/2,SBO),(1,T)), LBO unused
//   MN-major, no swizzle: ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
//   MN-major, S-byte swizzle: ((T,S/16,m),(8,k)) : ((1,T,LBO),(S/2,SBO))
inline uint32_t wgmma_offset(bool mn_major, int swizzle_bytes, uint32_t lbo, uint32_t sbo, int mn, int k) {
  int S = swizzle_bytes;
  if (!mn_major) {
    if (!S) return (uint32_t)((mn % 8) * 16 + (k % 8) * 2) + (uint32_t)(mn / 8) * sbo + (uint32_t)(k / 8) * lbo;
    return (uint32_t)((mn % 8) * S + k * 2) + (uint32_t)(mn / 8) * sbo;
  }
  if (!S) return (uint32_t)((mn % 8) * 2 + (k % 8) * 16) + (uint32_t)(mn / 8) * sbo + (uint32_t)(k / 8) * lbo;
  int atom = S / 2;  // elements of MN in one swizzle atom
  return (uint32_t)((mn % atom) * 2 + (k % 8) * S) + (uint32_t)(mn / atom) * lbo + (uint32_t)(k / 8) * sbo;
}

// Decodes a matrix descriptor's rows x K operand (rows along M or N) into
// out[k][mn] (B) or out[mn][k] (A, `k_inner`); false after reporting a bad one.
// A K-major row of one instruction is 32 bytes in every type (16 f16 or 8 tf32
// elements), so tf32 element k lies where f16 elements 2k and 2k+1 would.
inline bool wgmma_load(uint64_t desc, bool mn_major, int rows, WgmmaType ty, const char* which, float* out,
                       bool k_inner, const char* file, int line) {
  const char* what = "wgmma.mma_async (inline PTX)";
  uint32_t start = (uint32_t)(desc & 0x3fff) << 4, lbo = (uint32_t)(desc >> 16 & 0x3fff) << 4,
           sbo = (uint32_t)(desc >> 32 & 0x3fff) << 4, base_offset = (uint32_t)(desc >> 49 & 7);
  static const int swizzles[4] = {0, 128, 64, 32};  // descriptor bits 62-63
  int S = swizzles[desc >> 62];
  if (base_offset != 0) {
    fail("%s at %s:%d in kernel %s: not supported on emu: %s's matrix descriptor has a nonzero base offset (%u)",
         what, base_name(file), line, g.launch->name, which, base_offset);
    return false;
  }
  size_t limit = g.launch->smem;
  const bool wide = ty == WgmmaType::TF32;
  const int K = wgmma_k(ty), bytes = wide ? 4 : 2;
  for (int mn = 0; mn < rows; mn++)
    for (int k = 0; k < K; k++) {
      uint32_t addr = start + wgmma_offset(mn_major, S, lbo, sbo, mn, wide ? 2 * k : k);
      if (S) addr ^= ((addr >> 7) & (uint32_t)(S / 16 - 1)) << 4;
      if ((size_t)addr + bytes > limit) {
        // The descriptor's 14-bit address field spans 256 KiB of the shared
        // window; on emu that window is the launch's dynamic shared memory.
        fail("%s at %s:%d in kernel %s: %s's matrix descriptor (0x%016llx) reaches shared address 0x%x, outside the "
             "launch's %zu bytes of dynamic shared memory (on emu, wgmma operands must be in extern __shared__ memory)",
             what, base_name(file), line, g.launch->name, which, (unsigned long long)desc, addr, limit);
        return false;
      }
      uint32_t bits = 0;  // the element in the low bytes, as element 0 of a register
      memcpy(&bits, dyn_smem + addr, bytes);
      out[k_inner ? mn * 16 + k : k * 256 + mn] = mma_element(ty, &bits, 0);
    }
  return true;
}

inline void ptx_wgmma(WgmmaType ty, int n, bool a_in_regs, const uint32_t* a, uint64_t desc_a, uint64_t desc_b,
                      bool scale_d, int scale_a, int scale_b, int trans_a, int trans_b, float* d, const char* file,
                      int line) {
  const char* what = "wgmma.mma_async (inline PTX)";
  Thread* t = current_thread(what);
  int index = (int)(t - g.threads.data()), wg = index / 128;
  WgmmaSlot& mine = wgmma_slots[index];
  for (int i = 0; i < 4; i++) mine.a[i] = a_in_regs ? a[i] : 0;
  mine.desc_a = a_in_regs ? 0 : desc_a;
  mine.desc_b = desc_b;
  uint64_t arrived = collective(Coll::WarpGroup, 0xffffffffu, 0, 0, 32, 1, file, line);
  if (!(arrived & 1)) {
    if (arrived & 2)
      fail("%s at %s:%d in kernel %s: needs all 128 threads of warpgroup %d (threads %d..%d) in block (%u,%u,%u), "
           "but %d of them exited or are outside the block", what, base_name(file), line, g.launch->name, wg,
           128 * wg, 128 * wg + 127, blockIdx.x, blockIdx.y, blockIdx.z, (int)(arrived >> 8));
    return;
  }
  WgmmaTable& tab = wgmma_tables[wg];
  if (tab.serial != t->value) {  // the first thread of this collective decodes the operands
    tab.serial = t->value;
    tab.ok = true;
    const WgmmaSlot* slots = &wgmma_slots[128 * wg];
    for (int i = 0; i < 128 && tab.ok; i++)
      if (slots[i].desc_a != mine.desc_a || slots[i].desc_b != mine.desc_b) {
        fail("%s at %s:%d in kernel %s: the threads of warpgroup %d pass different matrix descriptors (thread %d: "
             "0x%016llx, 0x%016llx; thread %d: 0x%016llx, 0x%016llx)", what, base_name(file), line, g.launch->name,
             wg, 128 * wg + i, (unsigned long long)slots[i].desc_a, (unsigned long long)slots[i].desc_b, index,
             (unsigned long long)mine.desc_a, (unsigned long long)mine.desc_b);
        tab.ok = false;
      }
    if (tab.ok && a_in_regs) {
      // A fragment: per warp w the m16n8k16 (f16, bf16) or m16n8k8 (tf32) A layout, rows 16w..16w+15
      for (int i = 0; i < 128; i++)
        for (int e = 0; e < wgmma_k(ty) / 2; e++) {
          int row, col;
          mma_a_coord(ty, wgmma_k(ty), i % 32, e, row, col);
          tab.A[16 * (i / 32) + row][col] = mma_element(ty, slots[i].a, e);
        }
    } else if (tab.ok) {
      tab.ok = wgmma_load(desc_a, trans_a != 0, 64, ty, "A", &tab.A[0][0], true, file, line);
    }
    if (tab.ok) tab.ok = wgmma_load(desc_b, trans_b != 0, n, ty, "B", &tab.B[0][0], false, file, line);
  }
  if (!tab.ok) return;
  // D fragment: thread i of warp w holds rows 16w + i/4 (+8), columns 8j + 2(i%4) (+1)
  int lane = t->lane, warp = (index % 128) / 32, K = wgmma_k(ty);
  for (int i = 0; i < n / 2; i++) {
    int row = 16 * warp + (lane >> 2) + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
    double s = scale_d ? (double)d[i] : 0.0;
    for (int k = 0; k < K; k++) s += (double)(scale_a * tab.A[row][k]) * (double)(scale_b * tab.B[k][col]);
    d[i] = (float)s;
  }
}

// wgmma.fence / commit_group / wait_group: the MMA completed at issue (above).
inline void wgmma_sync_op(const char* what) { current_thread(what); }

// ---- cp.async ----------------------------------------------------------------
// Copies are issued per thread: the source is read when the copy is issued,
// the destination written when a wait covers its group (cp.async.wait_group N
// completes all committed groups but the newest N; wait_all commits and
// completes everything). Until then shared memory keeps its old contents, so a
// kernel that reads before waiting sees stale data, as it may on a GPU.
struct AsyncCopy {
  void* dst;
  uint8_t data[16];
  int bytes;
};
struct AsyncQueue {
  uint64_t block = 0;
  std::vector<AsyncCopy> open;                 // not yet committed
  std::vector<std::vector<AsyncCopy>> groups;  // committed, oldest first
};
HARNESS_EMU_HIDDEN inline std::vector<AsyncQueue> async_queues;

inline AsyncQueue& my_async_queue() {
  size_t i = (size_t)(g.cur - g.threads.data());
  if (async_queues.size() < g.threads.size()) async_queues.resize(g.threads.size());
  AsyncQueue& q = async_queues[i];
  if (q.block != g.block_serial) {  // left over from a block that ended without waiting: dropped
    q.block = g.block_serial;
    q.open.clear();
    q.groups.clear();
  }
  return q;
}

inline void async_copy(void* dst, const void* src, int bytes, int src_bytes, const char* what, const char* file, int line) {
  current_thread(what);
  if (!dst) return;
  if (((uintptr_t)dst % (uintptr_t)bytes) != 0 || (src_bytes > 0 && ((uintptr_t)src % (uintptr_t)bytes) != 0)) {
    fail("%s at %s:%d in kernel %s: addresses %p (shared) and %p (global) must be aligned to the copy size %d",
         what, base_name(file), line, g.launch->name, dst, src, bytes);
    return;
  }
  if (src_bytes < 0 || src_bytes > bytes) {
    fail("%s at %s:%d in kernel %s: source size %d is outside [0, %d]", what, base_name(file), line, g.launch->name,
         src_bytes, bytes);
    return;
  }
  AsyncCopy c;
  c.dst = dst;
  c.bytes = bytes;
  memset(c.data, 0, sizeof c.data);  // bytes past src_bytes are zero-filled
  if (src_bytes > 0) memcpy(c.data, src, (size_t)src_bytes);
  my_async_queue().open.push_back(c);
}

inline void ptx_cp_async(bool cg, uint64_t dst_addr, uint64_t src_addr, long long bytes, long long src_bytes,
                         const char* file, int line) {
  const char* what = cg ? "cp.async.cg (inline PTX)" : "cp.async.ca (inline PTX)";
  if (cg ? bytes != 16 : (bytes != 4 && bytes != 8 && bytes != 16)) {
    fail("%s at %s:%d: copy size %lld is not %s", what, base_name(file), line, bytes, cg ? "16" : "4, 8 or 16");
    return;
  }
  async_copy(shared_pointer(dst_addr, what, file, line), (const void*)(uintptr_t)src_addr, (int)bytes,
             src_bytes < 0 || src_bytes > bytes ? -1 : (int)src_bytes, what, file, line);
}

// An L2 prefetch changes no value a program sees; what the PTX ISA requires of
// its operands is still checked (on a GPU a violation is undefined).
inline void ptx_bulk_prefetch(uint64_t src_addr, long long bytes, const char* file, int line) {
  const char* what = "cp.async.bulk.prefetch.L2 (inline PTX)";
  current_thread(what);
  if (src_addr % 16 != 0 || bytes % 16 != 0)
    fail("%s at %s:%d in kernel %s: the address %p must be 16-byte aligned and the size %lld a multiple of 16", what,
         base_name(file), line, g.launch->name, (const void*)(uintptr_t)src_addr, bytes);
}

// ld/st.global with a memory-order qualifier (.volatile, .relaxed, .acquire,
// .release): blocks and their threads take turns on emu, so each is a plain
// access; the natural alignment the PTX ISA requires of it is checked.
inline void ptx_global_access(bool store, uint64_t addr, unsigned char* bytes, int size, const char* what,
                              const char* file, int line) {
  current_thread(what);
  if (addr % (uint64_t)size != 0) {
    fail("%s at %s:%d in kernel %s: the address %p must be %d-byte aligned", what, base_name(file), line,
         g.launch->name, (const void*)(uintptr_t)addr, size);
    return;
  }
  if (store) memcpy((void*)(uintptr_t)addr, bytes, (size_t)size);
  else memcpy(bytes, (const void*)(uintptr_t)addr, (size_t)size);
}
template <int N, class T>
inline void set_operand(T& dst, const unsigned char* bytes) {
  static_assert(sizeof(T) == N, "an inline PTX ld/st register operand must be as wide as the access's type");
  memcpy(&dst, bytes, N);
}
template <int N, class T>
inline void get_operand(const T& src, unsigned char* bytes) {
  static_assert(sizeof(T) == N, "an inline PTX ld/st register operand must be as wide as the access's type");
  memcpy(bytes, &src, N);
}

inline void async_commit() {
  current_thread("cp.async.commit_group");
  AsyncQueue& q = my_async_queue();
  q.groups.push_back(std::move(q.open));
  q.open.clear();
}

inline void async_wait(long long pending_allowed, const char* what) {
  current_thread(what);
  AsyncQueue& q = my_async_queue();
  if (pending_allowed < 0) pending_allowed = 0;
  while ((long long)q.groups.size() > pending_allowed) {
    for (const AsyncCopy& c : q.groups.front()) memcpy(c.dst, c.data, (size_t)c.bytes);
    q.groups.erase(q.groups.begin());
  }
}

inline void async_wait_all() {
  async_commit();
  async_wait(0, "cp.async.wait_all");
}

}  // namespace harness_emu

// ---- CUDA C surface ----------------------------------------------------------
inline size_t __cvta_generic_to_shared(const void* p, HARNESS_EMU_SITE) {
  return harness_emu::shared_address_of(p, file, line);
}
inline void* __cvta_shared_to_generic(size_t a, HARNESS_EMU_SITE) {
  return harness_emu::shared_pointer(a, "__cvta_shared_to_generic", file, line);
}

// cuda_pipeline_primitives.h (dst is a generic pointer to shared memory).
inline void __pipeline_memcpy_async(void* dst_shared, const void* src_global, size_t size_and_align,
                                    size_t zfill = 0, HARNESS_EMU_SITE) {
  if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16) {
    harness_emu::fail("__pipeline_memcpy_async at %s:%d: size %zu is not 4, 8 or 16", harness_emu::base_name(file),
                      line, size_and_align);
    return;
  }
  if (zfill > size_and_align) zfill = size_and_align;
  harness_emu::async_copy(dst_shared, src_global, (int)size_and_align, (int)(size_and_align - zfill),
                          "__pipeline_memcpy_async", file, line);
}
inline void __pipeline_commit() { harness_emu::async_commit(); }
inline void __pipeline_wait_prior(size_t prior) { harness_emu::async_wait((long long)prior, "__pipeline_wait_prior"); }
