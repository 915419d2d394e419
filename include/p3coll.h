/*
 * p3coll.h - collective operations on libportals (issue 16, item 2).
 *
 * A group is an ordered array of Portals process ids; `member` and `root`
 * are indexes into it. Every call returns PTL_OK or a PTL_* code.
 * PtlCollGroupCreate is collective over the members (each calls it with the
 * same array, groups are created in the same order everywhere). Every
 * collective is a schedule of counting events and triggered operations
 * (<portals3_ext.h>) that the engine runs: between PtlCollI* and
 * PtlCollWait the application need not call the library. The library uses
 * portal index PTL_COLL_PT (tunable, default 60) of the NI.
 *
 * A nonblocking collective (PtlCollI*) may read sendbuf and write recvbuf
 * (or buf) until PtlCollTest says done or PtlCollWait returns: neither may
 * be changed or freed before then (as MPI's nonblocking collectives).
 *
 * sendbuf == recvbuf means in place. Every member of an allreduce gets
 * bit-identical results (floats included). Groups may overlap and run
 * concurrently; many nonblocking collectives may be in flight per group,
 * and members must start the collectives of one group in the same order.
 * A blocking collective matches only the same blocking collective of the
 * other members, a nonblocking one only the same nonblocking one (as in
 * MPI): a blocking barrier, allreduce, reduce or bcast of up to 16 bytes in a group
 * on one node runs on flag lines in the job's shared memory, not on
 * triggered operations (PTL_COLL_FLAGS; docs/coll.md "Flag path").
 *
 * Errors: PTL_HANDLE_INVALID (a freed or never created group or request),
 * PTL_PROCESS_INVALID (the caller is not in members), PTL_ARG_INVALID (root
 * out of range, an unknown type or op, a bitwise op on a float type, a
 * process listed twice in members, buffers that would span more than 2^47
 * bytes),
 * PTL_SEGV (a NULL pointer where data is needed; a member that only
 * receives in the call, such as a bcast's non-root or a reduce's, gather's
 * or scatter's receiving member, and passes no buffer still takes part
 * through scratch memory so that its peers' calls complete: it gets
 * PTL_SEGV from a blocking call once done, or PTL_OK and a request whose
 * PtlCollWait/PtlCollTest reports PTL_SEGV), PTL_NO_SPACE (tables full),
 * PTL_FAIL (an operation of the schedule failed).
 *
 * PtlCollGroupCreate is collective: when one member has no room for the
 * group (its table of groups, or its NI's MEs, counters or MDs; or a live
 * group whose 24-bit id the new one would share), every member's create
 * returns PTL_NO_SPACE, and the next create over the same members works
 * once that member has room (a new id). A member that never calls it
 * makes the others' create return PTL_FAIL after 30 s.
 */
#ifndef P3_P3COLL_H
#define P3_P3COLL_H

#include "portals3_ext.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t ptl_handle_coll_t;
typedef uint64_t ptl_handle_coll_req_t;

typedef enum {
    PTL_COLL_INT32 = 0,
    PTL_COLL_INT64 = 1,
    PTL_COLL_UINT64 = 2,
    PTL_COLL_FLOAT = 3,
    PTL_COLL_DOUBLE = 4
} ptl_coll_type_t;

typedef enum {
    PTL_COLL_SUM = 0,
    PTL_COLL_MIN = 1,
    PTL_COLL_MAX = 2,
    PTL_COLL_BAND = 3,
    PTL_COLL_BOR = 4,
    PTL_COLL_BXOR = 5
} ptl_coll_op_t;

#define PTL_COLL_INVALID_HANDLE ((ptl_handle_coll_t)0)

PTL_API int PtlCollGroupCreate(ptl_handle_ni_t ni, const ptl_process_id_t *members,
                               ptl_size_t nmembers, ptl_handle_coll_t *group);
PTL_API int PtlCollGroupFree(ptl_handle_coll_t group);
PTL_API int PtlCollBarrier(ptl_handle_coll_t group);
PTL_API int PtlCollBcast(ptl_handle_coll_t group, void *buf, ptl_size_t length, ptl_size_t root);
PTL_API int PtlCollReduce(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                          ptl_size_t count, ptl_coll_type_t type, ptl_coll_op_t op,
                          ptl_size_t root);
PTL_API int PtlCollAllreduce(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                             ptl_size_t count, ptl_coll_type_t type, ptl_coll_op_t op);
PTL_API int PtlCollGather(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                          ptl_size_t length, ptl_size_t root);
PTL_API int PtlCollScatter(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                           ptl_size_t length, ptl_size_t root);
PTL_API int PtlCollAllgather(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                             ptl_size_t length);
PTL_API int PtlCollAlltoall(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                            ptl_size_t length);

PTL_API int PtlCollIbarrier(ptl_handle_coll_t group, ptl_handle_coll_req_t *req);
PTL_API int PtlCollIbcast(ptl_handle_coll_t group, void *buf, ptl_size_t length, ptl_size_t root,
                          ptl_handle_coll_req_t *req);
PTL_API int PtlCollIreduce(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                           ptl_size_t count, ptl_coll_type_t type, ptl_coll_op_t op,
                           ptl_size_t root, ptl_handle_coll_req_t *req);
PTL_API int PtlCollIallreduce(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                              ptl_size_t count, ptl_coll_type_t type, ptl_coll_op_t op,
                              ptl_handle_coll_req_t *req);
PTL_API int PtlCollIgather(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                           ptl_size_t length, ptl_size_t root, ptl_handle_coll_req_t *req);
PTL_API int PtlCollIscatter(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                            ptl_size_t length, ptl_size_t root, ptl_handle_coll_req_t *req);
PTL_API int PtlCollIallgather(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                              ptl_size_t length, ptl_handle_coll_req_t *req);
PTL_API int PtlCollIalltoall(ptl_handle_coll_t group, const void *sendbuf, void *recvbuf,
                             ptl_size_t length, ptl_handle_coll_req_t *req);

PTL_API int PtlCollTest(ptl_handle_coll_req_t req, int *done);
PTL_API int PtlCollWait(ptl_handle_coll_req_t req);

#ifdef __cplusplus
}
#endif

#endif /* P3_P3COLL_H */
