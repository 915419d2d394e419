/* timing.c - stage names; the accumulation is inline (timing.h). */
#include "timing.h"

#if !defined(PTL_NO_TIMING)
bool g_pt_timing_on;
#endif

const char *pt_nic_stage_name(int st)
{
    static const char *n[PT_ST_NR] = {"dequeue message", "inspect header (portal, ACL)",
                                      "match list walk", "housekeeping (offset, threshold)",
                                      "copy payload", "write event", "unlink / respond / release"};
    return st >= 0 && st < PT_ST_NR ? n[st] : "?";
}

const char *pt_init_stage_name(int st)
{
    static const char *n[PT_IS_NR] = {"post receive for pong", "send ping",
                                      "wait for send completion", "wait for pong"};
    return st >= 0 && st < PT_IS_NR ? n[st] : "?";
}
