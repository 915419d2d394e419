/*
 * pages.c - zeroed anonymous mappings (pages.h).
 */
#include "pages.h"
#include "log.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* LeakSanitizer looks for pointers in the heap, globals, stacks and TLS, not
 * in anonymous mappings; the engine's tables hold the only pointers to the
 * NI's EQs and other objects, so a process that ends without PtlNIFini (as
 * a client may: mp_died exit) would be reported as leaking them. Where LSan
 * is linked in (ASan builds) each mapping is one of its root regions; weak,
 * so that nothing is needed elsewhere. */
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
extern void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

void *pt_pages_zalloc(size_t size)
{
    if (!size)
        return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        /* The caller fails (PtlNIInit: PTL_NO_SPACE, and says what the
         * mapping was for); the size and the kernel's reason are known only
         * here (an adversarial client under `ulimit -v` got the code alone). */
        pt_log(PT_LOG_WARN, "cannot map %zu KiB of memory (%s; the address-space limit, "
                            "ulimit -v?)", size >> 10, strerror(errno));
        return NULL;
    }
    if (__lsan_register_root_region)
        __lsan_register_root_region(p, size);
    return p;
}

void pt_pages_free(void *p, size_t size)
{
    if (!p || !size)
        return;
    if (__lsan_unregister_root_region)
        __lsan_unregister_root_region(p, size);
    munmap(p, size);
}
