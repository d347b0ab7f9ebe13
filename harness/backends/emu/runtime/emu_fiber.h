// Fibers for the CUDA CPU emulator: one per CUDA thread of the running block.
// A switch saves only the callee-saved integer registers (device code never
// changes the FP control state, so MXCSR and the x87 control word are shared),
// so it costs a few nanoseconds; the ucontext fallback is for
// non-x86-64 hosts or when HARNESS_EMU_UCONTEXT is defined.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#if !defined(__x86_64__) && !defined(HARNESS_EMU_UCONTEXT)
#define HARNESS_EMU_UCONTEXT 1
#endif
#ifdef HARNESS_EMU_UCONTEXT
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_EMU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#ifndef HARNESS_EMU_STACK_KB
#ifdef HARNESS_EMU_ASAN
#define HARNESS_EMU_STACK_KB 512  // ASan red zones make frames several times larger
#else
#define HARNESS_EMU_STACK_KB 64
#endif
#endif

#ifndef HARNESS_EMU_UCONTEXT
// harness_emu_switch(save, to): store this context's stack pointer in *save and
// continue the context whose stack pointer is `to`.
// harness_emu_trampoline: first code a fiber runs; r12 = argument, r13 = entry.
asm(R"(
    .text
    .p2align 4
    .type harness_emu_switch,@function
harness_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size harness_emu_switch, .-harness_emu_switch
    .p2align 4
    .type harness_emu_trampoline,@function
harness_emu_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size harness_emu_trampoline, .-harness_emu_trampoline
)");
extern "C" void harness_emu_switch(void** save, void* to);
extern "C" void harness_emu_trampoline();
#endif

namespace harness_emu {

// One fiber stack, with an inaccessible guard page below it so that an
// overflow faults instead of silently corrupting a neighbour's stack.
struct Stack {
  char* base = nullptr;  // lowest usable byte
  size_t size = 0;
};

inline size_t stack_bytes() {
  static size_t bytes = [] {
    size_t kb = HARNESS_EMU_STACK_KB;
    if (const char* env = getenv("HARNESS_EMU_STACK_KB")) {
      long v = atol(env);
      if (v >= 16) kb = (size_t)v;
    }
    return kb * 1024;
  }();
  return bytes;
}

inline size_t page_bytes() {
  static size_t p = (size_t)sysconf(_SC_PAGESIZE);
  return p;
}

// Stacks are kept for the life of the process: a kernel that never syncs
// reuses one stack for all its threads, which keeps it hot in cache.
struct StackPool {
  std::vector<Stack> free_list;
  std::vector<Stack> all;

  Stack take() {
    if (!free_list.empty()) {
      Stack s = free_list.back();
      free_list.pop_back();
      return s;
    }
    size_t size = stack_bytes(), guard = page_bytes();
    void* mem = mmap(nullptr, size + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
      fprintf(stderr, "harness emu: cannot allocate a %zu KiB fiber stack\n", size / 1024);
      abort();
    }
    mprotect(mem, guard, PROT_NONE);
    Stack s{(char*)mem + guard, size};
    all.push_back(s);
    return s;
  }
  void give(Stack s) { free_list.push_back(s); }
  // After an abandoned launch: every stack is free again; under ASan their
  // shadow still holds the red zones of frames that never returned.
  void reclaim_all() {
    free_list = all;
#ifdef HARNESS_EMU_ASAN
    for (Stack& s : all) __asan_unpoison_memory_region(s.base, s.size);
#endif
  }
  bool contains_guard(const void* addr) const {
    for (const Stack& s : all) {
      const char* a = (const char*)addr;
      if (a >= s.base - page_bytes() && a < s.base) return true;
    }
    return false;
  }
};

// Execution context of a fiber or of the scheduler.
struct Context {
#ifdef HARNESS_EMU_UCONTEXT
  ucontext_t uc;
#else
  void* sp = nullptr;
#endif
  const void* stack_bottom = nullptr;  // for ASan's fiber annotations
  size_t stack_size = 0;
  void (*entry)(void*) = nullptr;
  void* arg = nullptr;
};

// Prepares `ctx` to call entry(arg) on `stack` when first switched to.
inline void context_init(Context& ctx, Stack stack, void (*entry)(void*), void* arg) {
  ctx.stack_bottom = stack.base;
  ctx.stack_size = stack.size;
  ctx.entry = entry;
  ctx.arg = arg;
#ifdef HARNESS_EMU_UCONTEXT
  getcontext(&ctx.uc);
  ctx.uc.uc_stack.ss_sp = stack.base;
  ctx.uc.uc_stack.ss_size = stack.size;
  ctx.uc.uc_link = nullptr;
  // makecontext passes int arguments: split the pointer in two halves.
  uintptr_t p = (uintptr_t)&ctx;
  makecontext(&ctx.uc, (void (*)())+[](unsigned lo, unsigned hi) {
    Context* c = (Context*)(((uintptr_t)hi << 32) | lo);
    c->entry(c->arg);
  }, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
#else
  uintptr_t top = ((uintptr_t)(stack.base + stack.size)) & ~(uintptr_t)15;
  uint64_t* sp = (uint64_t*)(top - 16);  // after `ret` pops the trampoline, rsp is 16-aligned
  sp[0] = 0;
  sp[-1] = (uint64_t)(uintptr_t)&harness_emu_trampoline;  // return address
  sp[-2] = 0;                                             // rbp
  sp[-3] = 0;                                             // rbx
  sp[-4] = (uint64_t)(uintptr_t)arg;                      // r12
  sp[-5] = (uint64_t)(uintptr_t)entry;                    // r13
  sp[-6] = 0;                                             // r14
  sp[-7] = 0;                                             // r15
  ctx.sp = &sp[-7];
#endif
}

// `final` marks the last switch away from a finished fiber.
inline void context_switch(Context& from, Context& to, bool final = false) {
#ifdef HARNESS_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(final ? nullptr : &fake, to.stack_bottom, to.stack_size);
#else
  (void)final;
#endif
  // The memory clobbers make the compiler write back and reload everything
  // (shared arrays are function-local statics it could otherwise keep in registers).
  asm volatile("" ::: "memory");
#ifdef HARNESS_EMU_UCONTEXT
  swapcontext(&from.uc, &to.uc);
#else
  harness_emu_switch(&from.sp, to.sp);
#endif
  asm volatile("" ::: "memory");
#ifdef HARNESS_EMU_ASAN
  // We were resumed by `to`'s side of a switch; learn the bounds of the
  // stack that switched to us (how the scheduler's own stack gets known).
  __sanitizer_finish_switch_fiber(fake, &to.stack_bottom, &to.stack_size);
#endif
}

// First thing a fiber's entry function does (the trampoline skips the tail
// of context_switch).
inline void context_entered(Context& scheduler) {
#ifdef HARNESS_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &scheduler.stack_bottom, &scheduler.stack_size);
#else
  (void)scheduler;
#endif
}

}  // namespace harness_emu
