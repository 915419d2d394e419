/*
 * shm_fbcode.h - the fast boxes' header code, pure functions (no shared
 * memory, no state): which 32-bit words of a 128-byte wire header differ
 * from the lane's base (the sender sends only those, shm.c fb_send), and how
 * many there are. Table-tested in tests/unit/test_fbcode.c against the
 * plain-C definitions below, which are also the build for targets without
 * SSE2.
 *
 * The mask: bit j set when header word j differs from base word j, for
 * j = 1 .. 30 only (word 0 is xseq and word 31 xord: the order stamp travels
 * beside, neither is ever sent from the header).
 */
#ifndef PT_SHM_FBCODE_H
#define PT_SHM_FBCODE_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define PT_FB_WORD_MASK 0x7ffffffeu /* words 1 .. 30 */

/* Bits set in v (the library is built for any x86-64: no popcnt). */
static inline uint32_t pt_fb_pop(uint32_t v)
{
    v = v - ((v >> 1) & 0x55555555u);
    v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
    return (((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* The definition: word by word (the reference for the test, and the build
 * without SSE2). w and b: 128 bytes each, any alignment. */
static inline uint32_t pt_fb_diff_c(const void *w, const void *b)
{
    uint32_t mask = 0;
    for (uint32_t j = 0; j < 32; j++) {
        uint32_t x, y;
        memcpy(&x, (const unsigned char *)w + 4 * j, 4);
        memcpy(&y, (const unsigned char *)b + 4 * j, 4);
        mask |= (uint32_t)(x != y) << j;
    }
    return mask & PT_FB_WORD_MASK;
}

#if defined(__SSE2__)
/* Eight 16-byte compares; the four lanes of each compare are narrowed twice
 * (signed saturation keeps 0 and -1) so one byte move mask gives 16 words
 * in order: about 30 instructions against 180 for a 64-bit loop. */
static inline uint32_t pt_fb_diff(const void *w, const void *b)
{
    const __m128i *p = (const __m128i *)w, *q = (const __m128i *)b;
    uint32_t same = 0;
    for (uint32_t h = 0; h < 2; h++) {
        __m128i e0 = _mm_cmpeq_epi32(_mm_loadu_si128(p + 4 * h), _mm_loadu_si128(q + 4 * h));
        __m128i e1 = _mm_cmpeq_epi32(_mm_loadu_si128(p + 4 * h + 1), _mm_loadu_si128(q + 4 * h + 1));
        __m128i e2 = _mm_cmpeq_epi32(_mm_loadu_si128(p + 4 * h + 2), _mm_loadu_si128(q + 4 * h + 2));
        __m128i e3 = _mm_cmpeq_epi32(_mm_loadu_si128(p + 4 * h + 3), _mm_loadu_si128(q + 4 * h + 3));
        __m128i n = _mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3));
        same |= (uint32_t)_mm_movemask_epi8(n) << (16 * h);
    }
    return ~same & PT_FB_WORD_MASK;
}
#else
#define pt_fb_diff pt_fb_diff_c
#endif

#endif /* PT_SHM_FBCODE_H */
