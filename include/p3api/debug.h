/*
 * p3api/debug.h - Portals 3.3 debugging helpers (libportals).
 *
 * Follows shared/docs/portals33-api.md section 5.10 (REF p3api/debug.h): the
 * PtlNIDebug mask bits and the table/ME/EQ dump calls that REF's test programs
 * use. Not part of the spec; include it explicitly.
 */
#ifndef P3_P3API_DEBUG_H
#define P3_P3API_DEBUG_H

#include "../portals3.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Library debug classes (low 16 bits) */
#define PTL_DBG_NONE        0x00000000
#define PTL_DBG_API         (1 << 0)
#define PTL_DBG_PARSE       (1 << 1)
#define PTL_DBG_MOVE        (1 << 2)
#define PTL_DBG_REQUEST     (1 << 3)
#define PTL_DBG_DELIVERY    (1 << 4)
#define PTL_DBG_MATCH       (1 << 5)
#define PTL_DBG_DROP        (1 << 6)
#define PTL_DBG_ACCEPT      (1 << 7)
#define PTL_DBG_REJECT      (1 << 8)
#define PTL_DBG_BOUNDS      (1 << 9)
#define PTL_DBG_ME          (1 << 10)
#define PTL_DBG_MD          (1 << 11)
#define PTL_DBG_EQ          (1 << 12)
#define PTL_DBG_SHUTDOWN    (1 << 13)
#define PTL_DBG_ALL         0x0000ffff

/* Transport (REF: NAL) debug classes (high 16 bits) */
#define PTL_DBG_NI_00       0x00010000
#define PTL_DBG_NI_01       0x00020000
#define PTL_DBG_NI_02       0x00040000
#define PTL_DBG_NI_03       0x00080000
#define PTL_DBG_NI_04       0x00100000
#define PTL_DBG_NI_05       0x00200000
#define PTL_DBG_NI_06       0x00400000
#define PTL_DBG_NI_07       0x00800000
#define PTL_DBG_NI_08       0x01000000
#define PTL_DBG_NI_09       0x02000000
#define PTL_DBG_NI_10       0x04000000
#define PTL_DBG_NI_11       0x08000000
#define PTL_DBG_NI_12       0x10000000
#define PTL_DBG_NI_13       0x20000000
#define PTL_DBG_NI_14       0x40000000
#define PTL_DBG_NI_15       0x80000000
#define PTL_DBG_NI_ALL      0xffff0000

/* Cray spellings of the same masks (OrangeFS's BMI Portals method). */
#define PTL_DEBUG_NONE      PTL_DBG_NONE
#define PTL_DEBUG_ALL       PTL_DBG_ALL
#define PTL_DEBUG_NI_ALL    PTL_DBG_NI_ALL

/*
 * Sets the debug mask (PTL_DBG_* bits) of ni and returns the previous mask.
 * May be called with PTL_INVALID_HANDLE, also before PtlNIInit.
 */
PTL_API unsigned int PtlNIDebug(ptl_handle_ni_t ni, unsigned int mask);

/* Print the match list of portal pt_index of ni. */
PTL_API int PtlTblDump(ptl_handle_ni_t ni, int pt_index);

/* Print one match entry and its MD. */
PTL_API int PtlMEDump(ptl_handle_me_t me);

/* Print the event queues of ni. */
PTL_API int PtlNIEqDump(ptl_handle_ni_t ni);

#ifdef __cplusplus
}
#endif

#endif /* P3_P3API_DEBUG_H */
