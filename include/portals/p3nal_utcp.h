/*
 * portals/p3nal_utcp.h - path of <p3nal_utcp.h> used by Cray-aware clients
 * (OrangeFS). See shared/docs/portals33-api.md section 1.
 */
#ifndef P3_PORTALS_P3NAL_UTCP_H
#define P3_PORTALS_P3NAL_UTCP_H

#include "../p3nal_utcp.h"

#endif /* P3_PORTALS_P3NAL_UTCP_H */
