/*
 * pt_atomic.h - the project's memory-ordering vocabulary. Nothing else in the
 * tree may use volatile for synchronisation, __sync_* or inline-asm fences.
 *
 * The five words:
 *   LD_RELAXED / ST_RELAXED  single-copy atomic access, no ordering
 *   LD_ACQUIRE               later accesses stay after it; pairs with a ST_RELEASE
 *   ST_RELEASE               earlier accesses stay before it; pairs with a LD_ACQUIRE
 *   FENCE_FULL               store->load ordering (Dekker-style sleep/wake checks)
 * plus CPU_RELAX for spin loops, RMW_* (sequentially consistent read-modify-
 * write, which also acts as FENCE_FULL) for counters, tokens and claims, and
 * COMPILER_BARRIER, the hot half of an asymmetric pair whose other half is
 * membarrier(2) (util/membar.h): it orders nothing on the hardware.
 *
 * Every use site names its partner in a comment: "R1 pairs with A1".
 * Word copies (COPY_*_RELAXED) move shared memory that a seqlock protects, so
 * the race between a writer and an optimistic reader is defined behaviour and
 * invisible to TSan.
 */
#ifndef PT_ATOMIC_H
#define PT_ATOMIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define LD_RELAXED(p)     atomic_load_explicit((p), memory_order_relaxed)
#define ST_RELAXED(p, v)  atomic_store_explicit((p), (v), memory_order_relaxed)
#define LD_ACQUIRE(p)     atomic_load_explicit((p), memory_order_acquire)
#define ST_RELEASE(p, v)  atomic_store_explicit((p), (v), memory_order_release)
#if defined(__SANITIZE_THREAD__)
/* GCC's ThreadSanitizer cannot model standalone fences (-Wtsan). Under TSan
 * only, each fence is a read-modify-write on one process-wide word: at least
 * as strong on the hardware, and TSan sees the ordering it provides. */
extern _Atomic uint32_t g_pt_tsan_fence;
#define FENCE_FULL()    ((void)atomic_fetch_add_explicit(&g_pt_tsan_fence, 0, memory_order_seq_cst))
#define FENCE_ACQUIRE() ((void)atomic_fetch_add_explicit(&g_pt_tsan_fence, 0, memory_order_acq_rel))
#define FENCE_RELEASE() ((void)atomic_fetch_add_explicit(&g_pt_tsan_fence, 0, memory_order_acq_rel))
#else
#define FENCE_FULL()      atomic_thread_fence(memory_order_seq_cst)
#define FENCE_ACQUIRE()   atomic_thread_fence(memory_order_acquire)
#define FENCE_RELEASE()   atomic_thread_fence(memory_order_release)
#endif

/* Keeps the compiler from moving accesses across it; no instruction. */
#define COMPILER_BARRIER() atomic_signal_fence(memory_order_seq_cst)

#define RMW_ADD(p, v)     atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define RMW_SUB(p, v)     atomic_fetch_sub_explicit((p), (v), memory_order_seq_cst)
#define RMW_XCHG(p, v)    atomic_exchange_explicit((p), (v), memory_order_seq_cst)
#define RMW_OR(p, v)      atomic_fetch_or_explicit((p), (v), memory_order_seq_cst)
#define RMW_AND(p, v)     atomic_fetch_and_explicit((p), (v), memory_order_seq_cst)
#define RMW_CAS(p, expp, v) \
    atomic_compare_exchange_strong_explicit((p), (expp), (v), \
                                            memory_order_seq_cst, memory_order_relaxed)

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")
#else
#define CPU_RELAX() ((void)0)
#endif

/* PREFETCH_W: fetch a line for writing (exclusive), ahead of the stores.
 * gcc emits prefetcht0 for __builtin_prefetch(p, 1) unless built for PRFCHW;
 * the instruction itself exists on every x86-64 that matters (a NOP on the
 * few that lack it), so it is spelled out. A hint: no ordering. */
#if defined(__x86_64__)
#define PREFETCH_W(p) __asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)(p)))
#else
#define PREFETCH_W(p) __builtin_prefetch((p), 1)
#endif

#define PT_CACHELINE 64
#define PT_ALIGNED   _Alignas(PT_CACHELINE)

#define PT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define PT_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* PT_HOT_INLINE: a static helper of a hot path inlined into each caller even
 * where gcc's size heuristics would keep one shared copy (a call there costs
 * its argument moves, prologue and epilogue: a put's 14 arguments spilled to
 * the stack, about 40 instructions). Only for helpers with a few callers. */
#define PT_HOT_INLINE static inline __attribute__((always_inline))

/* Copy n 8-byte words, each a relaxed atomic access (seqlock payloads). */
static inline void copy_words_relaxed(uint64_t *dst, const uint64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        __atomic_store_n(&dst[i], __atomic_load_n(&src[i], __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
}

#endif
