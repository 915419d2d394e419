/*
 * pages.h - zeroed memory in anonymous mappings, off the application's heap.
 *
 * For the engine's tables that are sized by limits at PtlNIInit (object
 * tables, operations, requests, triggered operations: ~47 MB per NI with the
 * default PTL_MAX_OBJECTS) and of which a job touches a small part. A fresh
 * mapping's pages are the kernel's zero page until written, and munmap gives
 * them all back. calloc gave the same on a process's first PtlNIInit only:
 * after glibc frees a mapped chunk it raises its mmap threshold (up to
 * 32 MiB), so the next NI's tables came from the heap and calloc wrote every
 * byte (a PtlNIFini/PtlNIInit round cost ~0.3 s of memset and page faults,
 * and the heap kept them; tests/README.md, thirty-sixth session).
 */
#ifndef PT_PAGES_H
#define PT_PAGES_H
#include <stddef.h>

/* `size` bytes of zeroes (page aligned), or NULL. size 0: NULL. */
void *pt_pages_zalloc(size_t size);
/* Gives back what pt_pages_zalloc(size) returned; NULL is ignored. */
void pt_pages_free(void *p, size_t size);

#endif
