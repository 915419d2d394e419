/*
 * p3-config.h - stand-in for REF's build configuration header (libportals).
 *
 * REF's test programs include <p3-config.h> (its autoconf output). They need
 * nothing from it when built against libportals, so this header is empty on
 * purpose. See shared/docs/portals33-clients.md section A.
 */
#ifndef P3_P3_CONFIG_H
#define P3_P3_CONFIG_H

#endif /* P3_P3_CONFIG_H */
