// The block scheduler: every CUDA thread of the running block is a fiber.
// Blocks of a grid run one after another on the calling host thread; inside a
// block, runnable fibers run (in the order the schedule mode picks) until they
// reach a sync point: a barrier, a warp collective or their end.
//  * A barrier releases when every thread that has not exited waits at the
//    same __syncthreads call site (exited threads count as arrived, as on
//    sm_70+). Threads waiting at different call sites are reported as a
//    deadlock: CUDA leaves divergent barriers undefined.
//  * A named barrier (inline PTX bar.sync / bar.arrive, ids 0..15) counts
//    warps, as the PTX ISA does: a warp has arrived once each of its
//    non-exited threads has, at any call site, and adds 32 to the count. The
//    phase completes when the count reaches the thread count given (without
//    one: when every warp has arrived or exited); its waiting threads resume
//    and the next phase starts.
//  * A warp collective with mask M completes when every non-exited lane of M
//    waits at a collective of the same kind with the same mask; lanes outside
//    the block (partial last warp) count as exited. Reading a lane that does not
//    take part yields the caller's own value (CUDA: undefined).
//  * A warpgroup collective (wgmma) completes when every non-exited thread of
//    the 4 warps 128w..128w+127 waits at one; threads beyond the block count
//    as exited and the op reports them.
//  * __activemask() resolves once no thread of the block can run: the result
//    is the set of lanes of the warp waiting at that same call site.
//  * When nothing can run and no rule applies, the launch is abandoned and the
//    first such failure is kept for harness_emu_error().
#pragma once
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "emu_fiber.h"
#include "emu_types.h"

#define HARNESS_EMU_HIDDEN __attribute__((visibility("hidden")))

// Built-in variables. Plain globals set by the scheduler before it resumes a
// fiber: context switches are opaque calls, so device code reloads them.
HARNESS_EMU_HIDDEN inline uint3 threadIdx;
HARNESS_EMU_HIDDEN inline uint3 blockIdx;
HARNESS_EMU_HIDDEN inline dim3 blockDim;
HARNESS_EMU_HIDDEN inline dim3 gridDim;
constexpr int warpSize = 32;

typedef struct CUstream_st* cudaStream_t;

namespace harness_emu {

enum class State : uint8_t { Runnable, Barrier, Named, Warp, Done };
enum class Coll : uint8_t {
  ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, All, Any, SyncWarp, ActiveMask,
  MatchAny, MatchAll, RedAdd, RedMin, RedMax, RedAnd, RedOr, RedXor, RedMinS, RedMaxS, RedAddS,
  Tensor,    // warp-synchronous tensor-core op (emu_tensor.h): result = lanes that arrived
  WarpGroup  // warpgroup-synchronous op (wgmma, emu_tensor.h): see try_complete_warpgroup
};
inline const char* coll_name(Coll c) {
  static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                "__ballot_sync", "__all_sync", "__any_sync", "__syncwarp", "__activemask",
                                "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
                                "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                                "__reduce_or_sync", "__reduce_xor_sync", "__reduce_min_sync",
                                "__reduce_max_sync", "__reduce_add_sync",
                                "a warp-synchronous tensor-core op (wmma/mma.sync/ldmatrix)",
                                "a warpgroup-synchronous tensor-core op (wgmma)"};
  return names[(int)c];
}
enum class Bar : uint8_t { Plain, Count, And, Or };

struct Thread {
  uint3 tid;
  State state;
  bool started;
  Coll coll;
  Bar bar;
  int lane;
  unsigned mask;
  int param;
  int width;
  int pred;
  uint64_t value;
  uint64_t result;
  uint16_t named_arrived;  // named barriers this thread has arrived at in their current phase
  const char* file;
  int line;
  Context ctx;
  Stack stack;
};

// One of a block's 16 named barriers, within its current phase.
struct NamedBarrier {
  int expected;  // threads the phase needs (a multiple of 32); 0 while no thread has arrived
  bool all;      // no count given: every warp of the block, exited ones counting as arrived
  int arrived;   // threads counted so far: 32 per warp that has arrived
  const char* op;  // the first arrival of the phase, for messages
  const char* file;
  int line;
  uint32_t lanes[32];  // per warp of the block: the lanes that have arrived
  uint32_t counted;    // warps that have arrived
};
constexpr int kNamedBarriers = 16;

struct Launch {
  const char* name;
  const char* file;
  int line;
  dim3 grid, block;
  size_t smem;
  void (*invoke)(void*);
  void* closure;
};

// Process-wide emulator state (one solve at a time).
struct Emu {
  std::string error;             // first failure since the last reset
  int schedule = 0;              // 0 forward, 1 reverse, 2 random
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  StackPool stacks;
  Context scheduler;
  std::vector<Thread> threads;
  std::vector<int> order;
  Thread* cur = nullptr;
  const Launch* launch = nullptr;
  size_t max_dyn_smem_attr = 48 * 1024;
  int last_error = 0;            // cudaError_t of the runtime API
  bool abandoned = false;        // a launch deadlocked since the last reset
  int warp_waiting = 0;          // threads parked at a warp collective
  NamedBarrier named[kNamedBarriers];  // the running block's named barriers
  uint64_t block_serial = 0;     // counts blocks run: per-thread state of a finished block is stale
  uint64_t warpgroup_serial = 0; // counts completed warpgroup collectives
};
HARNESS_EMU_HIDDEN inline Emu g;

inline const char* base_name(const char* path) {
  if (!path) return "?";
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char* fmt, ...) {
  if (!g.error.empty()) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g.error = buf;
}

inline uint64_t next_random() {
  g.rng ^= g.rng << 13;
  g.rng ^= g.rng >> 7;
  g.rng ^= g.rng << 17;
  return g.rng;
}

// Called on the fiber: park with the state already set and let the scheduler run.
inline void yield_to_scheduler() {
  Thread* t = g.cur;
  context_switch(t->ctx, g.scheduler);
}

inline Thread* current_thread(const char* what) {
  if (!g.cur) {
    fprintf(stderr, "harness emu: %s called outside a kernel\n", what);
    abort();
  }
  return g.cur;
}

inline void fiber_main(void* arg) {
  Thread* t = (Thread*)arg;
  context_entered(g.scheduler);
  g.launch->invoke(g.launch->closure);
  t->state = State::Done;
  context_switch(t->ctx, g.scheduler, true);
  __builtin_unreachable();
}

inline bool same_site(const Thread& a, const Thread& b) {
  return a.line == b.line && (a.file == b.file || (a.file && b.file && strcmp(a.file, b.file) == 0));
}

// Source lane read by a shuffle, or -1 when the caller keeps its own value.
inline int shfl_source(const Thread& t) {
  int w = t.width, lane = t.lane, seg = lane & ~(w - 1), last = seg + w - 1, j;
  switch (t.coll) {
    case Coll::ShflIdx: return seg | (t.param & (w - 1));
    case Coll::ShflUp: j = lane - t.param; return j < seg ? -1 : j;
    case Coll::ShflDown: j = lane + t.param; return j > last ? -1 : j;
    case Coll::ShflXor: j = lane ^ t.param; return j > last ? -1 : j;
    default: return -1;
  }
}

// Completes warpgroup `wg`'s collective if every non-exited thread of it waits
// at one. Each participant gets result = bit 0: all 128 threads took part;
// bit 1: it is the lowest-numbered participant (the one to report missing
// threads); bits 8..: how many are missing; and value = the collective's serial.
inline bool try_complete_warpgroup(int wg) {
  int n = (int)g.threads.size(), base = wg * 128, end = n < base + 128 ? n : base + 128, members = 0, first = -1;
  for (int i = base; i < end; i++) {
    Thread& o = g.threads[i];
    if (o.state == State::Done) continue;
    if (o.state != State::Warp || o.coll != Coll::WarpGroup) return false;
    members++;
    if (first < 0) first = i;
  }
  if (!members) return false;
  uint64_t serial = ++g.warpgroup_serial;
  for (int i = base; i < end; i++) {
    Thread& t = g.threads[i];
    if (t.state != State::Warp) continue;
    t.result = (uint64_t)(members == 128) | (uint64_t)(i == first) << 1 | (uint64_t)(128 - members) << 8;
    t.value = serial;
    t.state = State::Runnable;
  }
  g.warp_waiting -= members;
  return true;
}

// Completes the collective of `first`'s group if every non-exited lane named
// in its mask waits at the same kind of collective with the same mask.
inline bool try_complete_group(Thread* warp, int nlanes, Thread& first) {
  if (first.coll == Coll::WarpGroup) return try_complete_warpgroup((int)((&first - g.threads.data()) / 128));
  unsigned mask = first.mask, members = 0;
  for (int l = 0; l < nlanes; l++) {
    if (!(mask >> l & 1u)) continue;
    Thread& o = warp[l];
    if (o.state == State::Done) continue;
    if (o.state != State::Warp || o.mask != mask || o.coll != first.coll) return false;
    members |= 1u << l;
  }
  uint64_t ballot = 0, all = 1, any = 0;
  int64_t sum = 0;
  for (int l = 0; l < nlanes; l++) {
    if (!(members >> l & 1u)) continue;
    ballot |= (uint64_t)(warp[l].pred != 0) << l;
    all &= warp[l].pred != 0;
    any |= warp[l].pred != 0;
  }
  for (int l = 0; l < nlanes; l++) {
    if (!(members >> l & 1u)) continue;
    Thread& t = warp[l];
    switch (t.coll) {
      case Coll::ShflIdx: case Coll::ShflUp: case Coll::ShflDown: case Coll::ShflXor: {
        int j = shfl_source(t);
        t.result = (j >= 0 && j < 32 && (members >> j & 1u)) ? warp[j].value : t.value;
        break;
      }
      case Coll::Ballot: case Coll::Tensor: t.result = ballot; break;
      case Coll::All: t.result = all; break;
      case Coll::Any: t.result = any; break;
      case Coll::SyncWarp: t.result = 0; break;
      case Coll::MatchAny: case Coll::MatchAll: {
        uint64_t same = 0;
        bool every = true;
        for (int k = 0; k < nlanes; k++) {
          if (!(members >> k & 1u)) continue;
          if (warp[k].value == t.value) same |= 1ull << k; else every = false;
        }
        if (t.coll == Coll::MatchAny) t.result = same;
        else { t.result = every ? members : 0; t.pred = every; }
        break;
      }
      default: {  // reductions over 32-bit values
        uint64_t acc = 0;
        bool firstv = true;
        for (int k = 0; k < nlanes; k++) {
          if (!(members >> k & 1u)) continue;
          uint32_t v = (uint32_t)warp[k].value;
          int32_t sv = (int32_t)v, sa = (int32_t)(uint32_t)acc;
          if (firstv) { acc = v; firstv = false; continue; }
          switch (t.coll) {
            case Coll::RedAdd: case Coll::RedAddS: acc = (uint32_t)(acc + v); break;
            case Coll::RedMin: acc = v < (uint32_t)acc ? v : acc; break;
            case Coll::RedMax: acc = v > (uint32_t)acc ? v : acc; break;
            case Coll::RedMinS: acc = (uint32_t)(sv < sa ? sv : sa); break;
            case Coll::RedMaxS: acc = (uint32_t)(sv > sa ? sv : sa); break;
            case Coll::RedAnd: acc &= v; break;
            case Coll::RedOr: acc |= v; break;
            case Coll::RedXor: acc ^= v; break;
            default: break;
          }
        }
        t.result = acc;
        (void)sum;
      }
    }
  }
  for (int l = 0; l < nlanes; l++)
    if (members >> l & 1u) warp[l].state = State::Runnable;
  g.warp_waiting -= __builtin_popcount(members);
  return true;
}

inline void try_complete_warp(int warp_index) {
  int n = (int)g.threads.size(), base = warp_index * 32, nlanes = n - base < 32 ? n - base : 32;
  Thread* warp = &g.threads[base];
  for (int l = 0; l < nlanes; l++)
    if (warp[l].state == State::Warp && warp[l].coll != Coll::ActiveMask) try_complete_group(warp, nlanes, warp[l]);
}

// When no thread can run: lanes waiting at one __activemask() site get their set.
inline bool resolve_activemask() {
  int n = (int)g.threads.size();
  bool any = false;
  for (int base = 0; base < n; base += 32) {
    int nlanes = n - base < 32 ? n - base : 32;
    Thread* warp = &g.threads[base];
    for (int l = 0; l < nlanes; l++) {
      if (warp[l].state != State::Warp || warp[l].coll != Coll::ActiveMask) continue;
      unsigned set = 0;
      for (int k = 0; k < nlanes; k++)
        if (warp[k].state == State::Warp && warp[k].coll == Coll::ActiveMask && same_site(warp[k], warp[l])) set |= 1u << k;
      for (int k = 0; k < nlanes; k++)
        if (set >> k & 1u) { warp[k].result = set; warp[k].state = State::Runnable; g.warp_waiting--; }
      any = true;
    }
  }
  return any;
}

// When no thread can run: release the barrier if all live threads wait at one site.
inline bool release_barrier() {
  Thread* first = nullptr;
  int count = 0, live = 0;
  for (Thread& t : g.threads) {
    if (t.state == State::Done) continue;
    live++;
    if (t.state != State::Barrier) return false;
    if (!first) first = &t;
    else if (!same_site(t, *first)) return false;
    count += t.pred != 0;
  }
  if (!first) return false;
  for (Thread& t : g.threads) {
    if (t.state != State::Barrier) continue;
    switch (t.bar) {
      case Bar::Plain: t.result = 0; break;
      case Bar::Count: t.result = (uint64_t)count; break;
      case Bar::And: t.result = count == live; break;
      case Bar::Or: t.result = count != 0; break;
    }
    t.state = State::Runnable;
  }
  return true;
}

// The lanes of warp `w` that exist (a partial last warp has fewer) and those that have exited.
inline uint32_t warp_lanes(int w, bool exited_only) {
  int n = (int)g.threads.size(), base = 32 * w, nlanes = n - base < 32 ? n - base : 32;
  uint32_t lanes = 0;
  for (int l = 0; l < nlanes; l++)
    if (!exited_only || g.threads[base + l].state == State::Done) lanes |= 1u << l;
  return lanes;
}

// Counts warp `w` at named barrier `id` once each of its non-exited threads has arrived.
inline void count_named_warp(int id, int w) {
  NamedBarrier& b = g.named[id];
  if (b.counted >> w & 1u || !b.lanes[w] || (b.lanes[w] | warp_lanes(w, true)) != warp_lanes(w, false)) return;
  b.counted |= 1u << w;
  b.arrived += 32;
}

// Completes named barrier `id`'s phase if its count has arrived: its waiting
// threads resume and the next phase starts empty. True when it completed.
inline bool try_complete_named(int id) {
  NamedBarrier& b = g.named[id];
  if (!b.expected) return false;
  if (b.all) {
    int warps = ((int)g.threads.size() + 31) / 32;
    for (int w = 0; w < warps; w++)
      if (!(b.counted >> w & 1u) && warp_lanes(w, true) != warp_lanes(w, false)) return false;
  } else if (b.arrived < b.expected) {
    return false;
  }
  const uint16_t bit = (uint16_t)(1u << id);
  for (Thread& t : g.threads) {
    t.named_arrived &= (uint16_t)~bit;
    if (t.state == State::Named && t.param == id) t.state = State::Runnable;
  }
  b = NamedBarrier{};
  return true;
}

inline std::string wait_site(const Thread& t) {
  char buf[512];
  if (t.state == State::Barrier)
    snprintf(buf, sizeof buf, "__syncthreads (%s:%d)", base_name(t.file), t.line);
  else if (t.state == State::Named)
    snprintf(buf, sizeof buf, "named barrier %d (%s:%d; %d of %d threads arrived)", t.param, base_name(t.file),
             t.line, g.named[t.param].arrived, g.named[t.param].expected);
  else if (t.coll == Coll::ActiveMask)
    snprintf(buf, sizeof buf, "__activemask (%s:%d)", base_name(t.file), t.line);
  else if (t.coll == Coll::WarpGroup)
    snprintf(buf, sizeof buf, "wgmma (%s:%d, warpgroup %d)", base_name(t.file), t.line, (int)((&t - g.threads.data()) / 128));
  else
    snprintf(buf, sizeof buf, "%s (%s:%d, mask 0x%08x)", coll_name(t.coll), base_name(t.file), t.line, t.mask);
  return buf;
}

inline void report_deadlock() {
  struct Group { std::string where; int count; };
  std::vector<Group> groups;
  int exited = 0, barrier = 0, warp = 0, n = (int)g.threads.size();
  for (Thread& t : g.threads) {
    if (t.state == State::Done) { exited++; continue; }
    (t.state == State::Barrier || t.state == State::Named ? barrier : warp)++;
    std::string w = wait_site(t);
    bool found = false;
    for (Group& gr : groups)
      if (gr.where == w) { gr.count++; found = true; break; }
    if (!found) groups.push_back({w, 1});
  }
  std::string msg = barrier && warp ? "deadlock" : barrier ? "barrier deadlock" : "warp collective deadlock";
  char head[512];
  snprintf(head, sizeof head, " in kernel %s, block (%u,%u,%u): ", g.launch->name, blockIdx.x, blockIdx.y, blockIdx.z);
  msg += head;
  for (size_t i = 0; i < groups.size(); i++) {
    char part[600];
    if (i == 0) snprintf(part, sizeof part, "%d of %d threads wait at %s", groups[i].count, n, groups[i].where.c_str());
    else snprintf(part, sizeof part, ", %d wait at %s", groups[i].count, groups[i].where.c_str());
    msg += part;
  }
  if (exited) msg += ", " + std::to_string(exited) + " exited";
  if (warp) msg += " (every non-exited lane named in a warp collective's mask must reach a collective of the same kind with the same mask)";
  fail("%s", msg.c_str());
}

// Runs one block to completion; false when it deadlocked (block abandoned).
inline bool run_block() {
  int n = (int)g.threads.size(), done = 0;
  for (;;) {
    bool ran = false;
    if (g.schedule == 2)
      for (int i = n - 1; i > 0; i--) std::swap(g.order[i], g.order[next_random() % (uint64_t)(i + 1)]);
    for (int k = 0; k < n; k++) {
      Thread& t = g.threads[g.order[k]];
      if (t.state != State::Runnable) continue;
      ran = true;
      if (!t.started) {
        t.started = true;
        t.stack = g.stacks.take();
        context_init(t.ctx, t.stack, &fiber_main, &t);
      }
      g.cur = &t;
      threadIdx = t.tid;
      context_switch(g.scheduler, t.ctx);
      g.cur = nullptr;
      if (t.state == State::Done) {
        done++;
        g.stacks.give(t.stack);
        for (int id = 0; id < kNamedBarriers; id++) {  // an exit can complete its warp's arrival, or a phase
          if (!g.named[id].expected) continue;
          count_named_warp(id, g.order[k] / 32);
          try_complete_named(id);
        }
        if (g.warp_waiting) {  // an exit can complete a group or its warpgroup's collective
          try_complete_warp(g.order[k] / 32);
          try_complete_warpgroup(g.order[k] / 128);
        }
      } else if (t.state == State::Warp && t.coll != Coll::ActiveMask) {
        // Only this lane's group can have become complete.
        int base = g.order[k] & ~31, nlanes = n - base < 32 ? n - base : 32;
        try_complete_group(&g.threads[base], nlanes, t);
      }
    }
    if (done == n) return true;
    if (ran) continue;
    if (resolve_activemask() || release_barrier()) continue;
    report_deadlock();
    return false;
  }
}

// Stack overflow of a fiber lands in a guard page: say so before dying.
inline void on_segv(int sig, siginfo_t* info, void*);
HARNESS_EMU_HIDDEN inline struct sigaction g_old_segv;
inline void on_segv(int sig, siginfo_t* info, void*) {
  if (info && g.stacks.contains_guard(info->si_addr)) {
    static const char msg[] = "harness emu: fiber stack overflow (set HARNESS_EMU_STACK_KB higher)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
  }
  sigaction(SIGSEGV, &g_old_segv, nullptr);  // re-fault into the previous handler
  (void)sig;
}

// The handler must not run on the overflowed fiber stack.
inline void ensure_alt_stack() {
  static bool done = false;
  if (done) return;
  done = true;
  stack_t cur;
  if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return;  // someone has one
  static char* mem = (char*)malloc(1 << 16);
  stack_t ss;
  ss.ss_sp = mem;
  ss.ss_size = 1 << 16;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
}

#ifdef HARNESS_EMU_ASAN
// Appended to an ASan report: which CUDA thread made the bad access.
inline void asan_report_context(const char*) {
  if (!g.launch) return;
  if (g.cur)
    fprintf(stderr, "harness emu: in kernel %s (launched at %s:%d), block (%u,%u,%u), thread (%u,%u,%u)\n",
            g.launch->name, base_name(g.launch->file), g.launch->line, blockIdx.x, blockIdx.y, blockIdx.z,
            g.cur->tid.x, g.cur->tid.y, g.cur->tid.z);
}
#endif

// Dynamic shared memory: one buffer, large enough for an H200 block (227 KiB).
constexpr size_t kMaxDynSmem = 232448;
// 1024-aligned: wgmma's 128-byte swizzle works on address bits 4..9, so the low
// 10 bits of an emu shared address must be those of the GPU's.
alignas(1024) HARNESS_EMU_HIDDEN inline unsigned char dyn_smem[kMaxDynSmem];

inline void run_launch(const Launch& L) {
  if (g.abandoned) return;  // after a deadlock the rest of the solve is skipped, like a sticky CUDA error
  unsigned long long nthreads = (unsigned long long)L.block.x * L.block.y * L.block.z;
  const char* bad = nullptr;
  if (nthreads == 0 || L.grid.x == 0 || L.grid.y == 0 || L.grid.z == 0) bad = "a zero grid or block dimension";
  else if (nthreads > 1024 || L.block.z > 64) bad = "more than 1024 threads per block (or block.z > 64)";
  else if (L.grid.y > 65535 || L.grid.z > 65535) bad = "grid.y or grid.z above 65535";
  else if (L.smem > kMaxDynSmem) bad = "more dynamic shared memory than a block can have (227 KiB)";
  else if (L.smem > g.max_dyn_smem_attr)
    bad = "more than 48 KiB of dynamic shared memory without cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)";
  if (bad) {
    g.last_error = 9;  // cudaErrorInvalidConfiguration
    fail("launch of kernel %s (%s:%d) with grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of shared memory failed: %s",
         L.name, base_name(L.file), L.line, L.grid.x, L.grid.y, L.grid.z, L.block.x, L.block.y, L.block.z, L.smem, bad);
    return;
  }
#ifdef HARNESS_EMU_ASAN
  __asan_set_error_report_callback(&asan_report_context);
  __asan_unpoison_memory_region(dyn_smem, L.smem);
  __asan_poison_memory_region(dyn_smem + L.smem, kMaxDynSmem - L.smem);
#else
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = &on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  ensure_alt_stack();
  sigaction(SIGSEGV, &sa, &old);
  g_old_segv = old;
#endif
  g.launch = &L;
  gridDim = L.grid;
  blockDim = L.block;
  int n = (int)nthreads;
  g.threads.assign(n, Thread{});
  g.order.resize(n);
  for (int i = 0; i < n; i++) {
    Thread& t = g.threads[i];
    t.tid = uint3{i % L.block.x, (i / L.block.x) % L.block.y, i / (L.block.x * L.block.y)};
    t.lane = i % 32;
    g.order[i] = g.schedule == 1 ? n - 1 - i : i;
  }
  bool ok = true;
  for (unsigned bz = 0; bz < L.grid.z && ok; bz++)
    for (unsigned by = 0; by < L.grid.y && ok; by++)
      for (unsigned bx = 0; bx < L.grid.x && ok; bx++) {
        blockIdx = uint3{bx, by, bz};
        for (Thread& t : g.threads) { t.state = State::Runnable; t.started = false; t.named_arrived = 0; }
        g.warp_waiting = 0;
        for (NamedBarrier& b : g.named) b = NamedBarrier{};
        g.block_serial++;
        ok = run_block();
      }
  if (!ok) {
    g.abandoned = true;
    g.stacks.reclaim_all();
    g.last_error = 719;  // cudaErrorLaunchFailure
  }
#ifndef HARNESS_EMU_ASAN
  sigaction(SIGSEGV, &old, nullptr);
#endif
  g.launch = nullptr;
  fflush(stdout);  // device printf output appears at synchronisation, as on a GPU
}

// Kernel launch as the translator writes it:
//   Launcher(__FILE__, __LINE__, "name", grid, block[, smem[, stream]])(call, args...)
// Arguments are evaluated once on the host; every thread gets its own copies.
struct Launcher {
  Launch L;
  Launcher(const char* file, int line, const char* name, dim3 grid, dim3 block, size_t smem = 0,
           cudaStream_t stream = nullptr) {
    (void)stream;
    L = Launch{name, file, line, grid, block, smem, nullptr, nullptr};
  }
  template <class F, class... A>
  void operator()(F call, A&&... args) {
    auto packed = std::make_tuple(args...);
    struct Closure { F* f; decltype(packed)* a; } c{&call, &packed};
    L.invoke = [](void* p) {
      Closure* c = (Closure*)p;
      std::apply([&](auto&... a) { (*c->f)(a...); }, *c->a);
    };
    L.closure = &c;
    run_launch(L);
  }
};

}  // namespace harness_emu

// ---- Barriers --------------------------------------------------------------
namespace harness_emu {
inline int barrier(Bar kind, int pred, const char* file, int line) {
  Thread* t = current_thread("__syncthreads");
  t->state = State::Barrier;
  t->bar = kind;
  t->pred = pred;
  t->file = file;
  t->line = line;
  yield_to_scheduler();
  return (int)t->result;
}

// Inline PTX bar.sync / bar.arrive (and their barrier[.cta] spellings): thread
// arrival at named barrier `id`; `count` threads (32 per warp) complete a
// phase, -1: every warp of the block. `wait`: bar.sync, which parks the thread
// until then.
inline void named_barrier(bool wait, int id, int count, const char* op, const char* file, int line) {
  Thread* t = current_thread(op);
  const int n = (int)g.threads.size();
  const int index = (int)(t - g.threads.data());
  if (id < 0 || id >= kNamedBarriers) {
    fail("%s at %s:%d in kernel %s: barrier %d is not one of a block's 16 (0..15)", op, base_name(file), line,
         g.launch->name, id);
    return;
  }
  if (count != -1 && (count <= 0 || count % 32 || count > (n + 31) / 32 * 32)) {
    fail("%s at %s:%d in kernel %s: the thread count %d of barrier %d must be a positive multiple of 32 and at most "
         "the block's %d threads", op, base_name(file), line, g.launch->name, count, id, (n + 31) / 32 * 32);
    return;
  }
  NamedBarrier& b = g.named[id];
  const int expected = count == -1 ? (n + 31) / 32 * 32 : count;
  if (!b.expected) {
    b = NamedBarrier{expected, count == -1, 0, op, file, line, {}, 0};
  } else if (b.expected != expected || b.all != (count == -1)) {
    fail("%s at %s:%d in kernel %s: thread %d gives barrier %d a count of %s, but this phase began at %s:%d with "
         "%s (%s)", op, base_name(file), line, g.launch->name, index, id,
         count == -1 ? "every thread" : std::to_string(count).c_str(), base_name(b.file), b.line,
         b.all ? "every thread" : std::to_string(b.expected).c_str(), b.op);
    return;
  }
  if (t->named_arrived >> id & 1u) {
    fail("%s at %s:%d in kernel %s: thread %d of block (%u,%u,%u) arrives at barrier %d twice in one phase (the "
         "phase began at %s:%d; %d of %d threads have arrived)", op, base_name(file), line, g.launch->name, index,
         blockIdx.x, blockIdx.y, blockIdx.z, id, base_name(b.file), b.line, b.arrived, b.expected);
    return;
  }
  t->named_arrived |= (uint16_t)(1u << id);
  b.lanes[index / 32] |= 1u << (index % 32);
  count_named_warp(id, index / 32);
  if (try_complete_named(id) || !wait) return;
  t->state = State::Named;
  t->param = id;
  t->file = file;
  t->line = line;
  yield_to_scheduler();
}
}  // namespace harness_emu

inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  harness_emu::barrier(harness_emu::Bar::Plain, 1, file, line);
}
inline int __syncthreads_count(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return harness_emu::barrier(harness_emu::Bar::Count, pred, file, line);
}
inline int __syncthreads_and(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return harness_emu::barrier(harness_emu::Bar::And, pred, file, line);
}
inline int __syncthreads_or(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return harness_emu::barrier(harness_emu::Bar::Or, pred, file, line);
}

// ---- Warp collectives ------------------------------------------------------
namespace harness_emu {
inline uint64_t collective(Coll kind, unsigned mask, uint64_t value, int param, int width, int pred,
                           const char* file, int line) {
  Thread* t = current_thread(coll_name(kind));
  if (kind != Coll::ActiveMask && !(mask >> t->lane & 1u))
    fail("%s at %s:%d in kernel %s: lane %d of warp %d in block (%u,%u,%u) is not in its own mask 0x%08x",
         coll_name(kind), base_name(file), line, g.launch->name, t->lane,
         (int)((t - g.threads.data()) / 32), blockIdx.x, blockIdx.y, blockIdx.z, mask);
  if (width <= 0 || width > 32 || (width & (width - 1))) {
    fail("%s at %s:%d in kernel %s: width %d is not a power of two in [1, 32]", coll_name(kind),
         base_name(file), line, g.launch->name, width);
    width = 32;
  }
  t->state = State::Warp;
  g.warp_waiting++;
  t->coll = kind;
  t->mask = mask | (1u << t->lane);
  t->value = value;
  t->param = param;
  t->width = width;
  t->pred = pred;
  t->file = file;
  t->line = line;
  yield_to_scheduler();
  return t->result;
}
template <class T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace harness_emu

#define HARNESS_EMU_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  return from_bits<T>(collective(Coll::ShflIdx, mask, to_bits(var), src, width, 0, file, line));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  return from_bits<T>(collective(Coll::ShflUp, mask, to_bits(var), (int)delta, width, 0, file, line));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  return from_bits<T>(collective(Coll::ShflDown, mask, to_bits(var), (int)delta, width, 0, file, line));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  return from_bits<T>(collective(Coll::ShflXor, mask, to_bits(var), lane_mask, width, 0, file, line));
}
inline unsigned __ballot_sync(unsigned mask, int pred, HARNESS_EMU_SITE) {
  return (unsigned)harness_emu::collective(harness_emu::Coll::Ballot, mask, 0, 0, 32, pred, file, line);
}
inline int __all_sync(unsigned mask, int pred, HARNESS_EMU_SITE) {
  return (int)harness_emu::collective(harness_emu::Coll::All, mask, 0, 0, 32, pred, file, line);
}
inline int __any_sync(unsigned mask, int pred, HARNESS_EMU_SITE) {
  return (int)harness_emu::collective(harness_emu::Coll::Any, mask, 0, 0, 32, pred, file, line);
}
inline int __uni_sync(unsigned mask, int pred, HARNESS_EMU_SITE) {
  int all = __all_sync(mask, pred, file, line);
  return all || !__any_sync(mask, pred, file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, HARNESS_EMU_SITE) {
  harness_emu::collective(harness_emu::Coll::SyncWarp, mask, 0, 0, 32, 0, file, line);
}
inline unsigned __activemask(HARNESS_EMU_SITE) {
  return (unsigned)harness_emu::collective(harness_emu::Coll::ActiveMask, 0, 0, 0, 32, 0, file, line);
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  return (unsigned)collective(Coll::MatchAny, mask, to_bits(value), 0, 32, 0, file, line);
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, HARNESS_EMU_SITE) {
  using namespace harness_emu;
  unsigned r = (unsigned)collective(Coll::MatchAll, mask, to_bits(value), 0, 32, 0, file, line);
  *pred = g.cur ? g.cur->pred : 0;
  return r;
}
#define HARNESS_EMU_REDUCE(NAME, T, KIND) \
  inline T NAME(unsigned mask, T value, HARNESS_EMU_SITE) { \
    return (T)(uint32_t)harness_emu::collective(harness_emu::Coll::KIND, mask, (uint32_t)value, 0, 32, 0, file, line); \
  }
HARNESS_EMU_REDUCE(__reduce_add_sync, unsigned, RedAdd)
HARNESS_EMU_REDUCE(__reduce_add_sync, int, RedAddS)
HARNESS_EMU_REDUCE(__reduce_min_sync, unsigned, RedMin)
HARNESS_EMU_REDUCE(__reduce_min_sync, int, RedMinS)
HARNESS_EMU_REDUCE(__reduce_max_sync, unsigned, RedMax)
HARNESS_EMU_REDUCE(__reduce_max_sync, int, RedMaxS)
HARNESS_EMU_REDUCE(__reduce_and_sync, unsigned, RedAnd)
HARNESS_EMU_REDUCE(__reduce_or_sync, unsigned, RedOr)
HARNESS_EMU_REDUCE(__reduce_xor_sync, unsigned, RedXor)
#undef HARNESS_EMU_REDUCE
inline unsigned __lanemask_lt() { return harness_emu::g.cur ? (1u << harness_emu::g.cur->lane) - 1u : 0u; }
inline unsigned __lanemask_le() { return harness_emu::g.cur ? (2u << harness_emu::g.cur->lane) - 1u : 0u; }
inline unsigned __lanemask_eq() { return harness_emu::g.cur ? 1u << harness_emu::g.cur->lane : 0u; }
inline unsigned __lanemask_gt() { return ~__lanemask_le(); }
inline unsigned __lanemask_ge() { return ~__lanemask_lt(); }

// Legacy non-_sync shuffles were removed in CUDA 9 for sm_70+: not provided.

// ---- Exported control API --------------------------------------------------
extern "C" __attribute__((visibility("default"))) const char* harness_emu_error(void) {
  return harness_emu::g.error.empty() ? nullptr : harness_emu::g.error.c_str();
}
extern "C" __attribute__((visibility("default"))) void harness_emu_reset(void) {
  harness_emu::g.error.clear();
  harness_emu::g.last_error = 0;
  harness_emu::g.abandoned = false;
  harness_emu::g.max_dyn_smem_attr = 48 * 1024;
}
extern "C" __attribute__((visibility("default"))) void harness_emu_set_schedule(int mode, unsigned seed) {
  harness_emu::g.schedule = mode < 0 || mode > 2 ? 0 : mode;
  harness_emu::g.rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed * 0xbf58476d1ce4e5b9ull);
  if (!harness_emu::g.rng) harness_emu::g.rng = 1;
}
