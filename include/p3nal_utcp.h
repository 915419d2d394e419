/*
 * p3nal_utcp.h - REF's UTCP interface numbers (libportals).
 *
 * Follows shared/docs/portals33-api.md sections 1 and 3.1. REF programs
 * include this header (often as "#include P3_NAL" with
 * -DP3_NAL=<p3nal_utcp.h>) to get PTL_IFACE_DEFAULT. libportals has no TCP
 * transport: it accepts PTL_IFACE_UTCP0..3 (and PTL_IFACE_DEFAULT) as its one
 * shared-memory interface, the same as PTL_IFACE_SHM of <p3nal_shm.h>.
 *
 * REF's version emits an invalid "#warn" when PTL_IFACE_DEFAULT is already
 * defined; ours silently keeps the existing definition (the sheet's
 * recommendation), so it may be included before or after <portals3.h>.
 */
#ifndef P3_P3NAL_UTCP_H
#define P3_P3NAL_UTCP_H

#define PTL_NALTYPE_UTCP0       0xf0f0f000
#define PTL_NALTYPE_UTCP1       0xf0f0f001
#define PTL_NALTYPE_UTCP2       0xf0f0f002
#define PTL_NALTYPE_UTCP3       0xf0f0f003
#define PTL_NALTYPE_UTCP        PTL_NALTYPE_UTCP0

#define PTL_IFACE_UTCP0         PTL_NALTYPE_UTCP0
#define PTL_IFACE_UTCP1         PTL_NALTYPE_UTCP1
#define PTL_IFACE_UTCP2         PTL_NALTYPE_UTCP2
#define PTL_IFACE_UTCP3         PTL_NALTYPE_UTCP3
#define PTL_IFACE_UTCP          PTL_IFACE_UTCP0

#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT       PTL_IFACE_UTCP
#endif

#endif /* P3_P3NAL_UTCP_H */
