/*
 * portals3.h - the Portals 3.3 API (libportals).
 *
 * The header applications include. Follows shared/docs/portals33-api.md
 * section 1: like REF's portals3.h it pulls in the types, the function
 * prototypes, the helper calls, the NAL type numbers and the return codes.
 *
 * PTL_IFACE_DEFAULT: REF defines it only in the NAL header (<p3nal_utcp.h>);
 * we also define it here, unless already defined, so that programs that do
 * not include a NAL header still build (the sheet's recommendation). Its value
 * is REF's PTL_IFACE_UTCP, which libportals accepts as its shared-memory
 * interface, so REF programs run unchanged.
 */
#ifndef P3_PORTALS3_H
#define P3_PORTALS3_H

#include "p3api/types.h"
#include "p3api/api.h"
#include "p3api/misc.h"
#include "p3/nal_types.h"
#include "p3/errno.h"

#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT       0xf0f0f000  /* == PTL_IFACE_UTCP (<p3nal_utcp.h>) */
#endif

#endif /* P3_PORTALS3_H */
