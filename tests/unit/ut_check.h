/*
 * ut_check.h - the unit tests' one-line check of a Portals call: anything but
 * PTL_OK prints the call and the code on stdout and exits 1.
 */
#ifndef UT_CHECK_H
#define UT_CHECK_H

#include <portals3.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                             \
    do {                                                                                     \
        int rc_ = (x);                                                                       \
        if (rc_ != PTL_OK) {                                                                 \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, PtlErrorStr(rc_));             \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

#endif
