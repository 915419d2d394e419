/*
 * p3nal_shm.h - libportals' own interface number (shared memory, one host).
 *
 * Not in REF; modelled on REF's NAL headers (shared/docs/portals33-api.md
 * sections 1 and 3.1). PTL_IFACE_SHM names the shared-memory interface. The
 * library treats PTL_IFACE_DEFAULT, PTL_IFACE_UTCP0..3 (<p3nal_utcp.h>) and
 * PTL_IFACE_SHM as the same interface, so a process that initialises two of
 * them gets the existing NI back.
 *
 * PTL_IFACE_DEFAULT stays REF's value (PTL_IFACE_UTCP) so that REF programs
 * work whichever NAL header they include.
 */
#ifndef P3_P3NAL_SHM_H
#define P3_P3NAL_SHM_H

#define PTL_NALTYPE_SHM         0xf0f0f100
#define PTL_IFACE_SHM           PTL_NALTYPE_SHM

#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT       0xf0f0f000  /* == PTL_IFACE_UTCP (<p3nal_utcp.h>) */
#endif

#endif /* P3_P3NAL_SHM_H */
