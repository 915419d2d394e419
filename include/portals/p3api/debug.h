/*
 * portals/p3api/debug.h - path of <p3api/debug.h> used by Cray-aware clients
 * (OrangeFS). See shared/docs/portals33-api.md section 1.
 */
#ifndef P3_PORTALS_P3API_DEBUG_H
#define P3_PORTALS_P3API_DEBUG_H

#include "../../p3api/debug.h"

#endif /* P3_PORTALS_P3API_DEBUG_H */
