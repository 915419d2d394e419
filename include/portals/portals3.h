/*
 * portals/portals3.h - Cray-style path of <portals3.h> (libportals).
 *
 * Follows shared/docs/portals33-api.md sections 1 and 8: Cray XT clients (and
 * OrangeFS for its TCP build) include <portals/portals3.h>. The API is REF's;
 * Cray-only names are limited to the return codes PTL_IFACE_DUP,
 * PTL_EQ_IN_USE, PTL_VAL_FAILED, the PTL_NOACK_REQ spelling and the exported
 * ptl_err_str[] / ptl_event_str[] tables.
 */
#ifndef P3_PORTALS_PORTALS3_H
#define P3_PORTALS_PORTALS3_H

#include "../portals3.h"

#endif /* P3_PORTALS_PORTALS3_H */
