/*
 * p3/nal_types.h - network abstraction layer (NAL) type numbers (libportals).
 *
 * Follows shared/docs/portals33-api.md sections 1 and 3.1. In REF an interface
 * number (ptl_interface_t) names a NAL type; each NAL header (<p3nal_utcp.h>,
 * <p3nal_shm.h>) defines its own PTL_NALTYPE_* / PTL_IFACE_* values. libportals
 * has one transport, shared memory between processes of one host, and accepts
 * the UTCP numbers as aliases of it. REF's IB NAL (0xf0f0f050) is not provided.
 * Included by <portals3.h>.
 */
#ifndef P3_P3_NAL_TYPES_H
#define P3_P3_NAL_TYPES_H

/* No NAL (REF value). */
#define PTL_NALTYPE_NONE        0

#endif /* P3_P3_NAL_TYPES_H */
