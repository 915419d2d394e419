/*
 * ofi_fabric.h - libfabric, opened when the ofi transport first needs it.
 *
 * libportals does not link libfabric. Debian 12's libfabric.so.1 links the
 * psm and psm2 providers' libraries, whose load-time constructors each pin
 * the loading thread to cpu 0 and sleep about 100 ms to time the cpu: linked
 * in, they held every process of every job (ptlrun, each rank, ptl_info) for
 * 0.21 s before main, over shared memory too (`LD_PRELOAD=libfabric.so.1
 * /bin/true`: 0.21 s; a two-rank ptlrun job of /bin/true: 0.22 s). Now only
 * a process that uses the ofi transport (PTL_TRANSPORT=ofi or mix, a PMIx
 * job, ptl_info's provider list) opens it, once, with dlopen.
 *
 * Of libfabric's calls only these five are functions of the library; the
 * rest (fi_domain, fi_send, fi_close, ...) are inline wrappers in its headers
 * that call through the objects these return. Each is bound at the symbol
 * version the build's libfabric made default, which is the one the linker
 * would have bound (CMake reads them: PTL_FI_SONAME, PTL_FI_VER_*).
 *
 * Threads: pt_fi_load() may be called by any thread, any number of times
 * (pthread_once); the pointers are written once before it returns and only
 * read afterwards.
 */
#ifndef PT_OFI_FABRIC_H
#define PT_OFI_FABRIC_H
#include <rdma/fabric.h>

/* Open libfabric and bind its five functions: 0, or -ENOENT (the library or
 * one of the functions is missing; logged once with the loader's reason). */
int pt_fi_load(void);

/* The five, after pt_fi_load() returned 0. */
int pt_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                  const struct fi_info *hints, struct fi_info **info);
void pt_fi_freeinfo(struct fi_info *info);
struct fi_info *pt_fi_dupinfo(const struct fi_info *info); /* NULL: fi_allocinfo() */
int pt_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* Any time: libfabric's text for a libfabric error once it is loaded, else
 * strerror's (the codes below FI_ERRNO_OFFSET are errno values). */
const char *pt_fi_strerror(int errnum);

#endif
