/*
 * portals/portals3.h - Cray-style path of <portals3.h> (libportals).
 *
 * Follows shared/docs/portals33-api.md sections 1 and 8: Cray XT clients (and
 * OrangeFS for its TCP build) include <portals/portals3.h>. The API is REF's;
 * Cray-only names: the interface macros below, and the return codes PTL_IFACE_DUP,
 * PTL_EQ_IN_USE, PTL_VAL_FAILED, the PTL_NOACK_REQ spelling and the exported
 * ptl_err_str[] / ptl_event_str[] tables.
 */
#ifndef P3_PORTALS_PORTALS3_H
#define P3_PORTALS_PORTALS3_H

#include "../portals3.h"

/*
 * Cray XT interface naming (CCI's Portals plugin, ORNL's BMI Portals method):
 * a SeaStar NAL id on a user-space bridge, combined into an interface. The
 * library has one interface per process, so every combination names it.
 */
#ifndef PTL_BRIDGE_UK
#define PTL_BRIDGE_UK       0   /* user-level (Catamount/CNL) bridge */
#endif
#ifndef PTL_IFACE_SS
#define PTL_IFACE_SS        PTL_IFACE_DEFAULT /* SeaStar NAL */
#endif
#ifndef IFACE_FROM_BRIDGE_AND_NALID
#define IFACE_FROM_BRIDGE_AND_NALID(bridge, nal) PTL_IFACE_DEFAULT
#endif

#endif /* P3_PORTALS_PORTALS3_H */
