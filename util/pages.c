/*
 * pages.c - zeroed anonymous mappings (pages.h).
 */
#include "pages.h"

#include <sys/mman.h>

void *pt_pages_zalloc(size_t size)
{
    if (!size)
        return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void pt_pages_free(void *p, size_t size)
{
    if (p && size)
        munmap(p, size);
}
