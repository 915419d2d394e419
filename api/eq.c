/* eq.c - event queues (§5.6, §6.10). Reads are lock-free (eq/eq.h). */
#include "api_int.h"
#include "log.h"

PTL_API int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_eq_handler_t eq_handler,
                       ptl_handle_eq_t *eq_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!eq_handle)
        return PTL_SEGV;
    if (count == 0) { /* REF: no queue at all */
        *eq_handle = PTL_EQ_NONE;
        return PTL_OK;
    }
    pt_eq_trash_drain(nic); /* freed rings first: their memory may serve this one */
    struct pt_eq *q = pt_eq_prepare(count, eq_handler); /* here, not in the engine */
    if (!q)
        return PTL_NO_SPACE;
    struct pt_cmd c = {.op = PT_CMD_EQ_ALLOC};
    c.u.eqa.q = q;
    struct pt_done d;
    int rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK)
        *eq_handle = d.h1;
    else
        pt_eq_discard(q);
    return pt_ptl_err(rc);
}

PTL_API int PtlEQFree(ptl_handle_eq_t eq_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(eq_handle);
    if (!nic || !pt_eqo_lookup(nic, eq_handle))
        return PTL_EQ_INVALID;
    struct pt_cmd c = {.op = PT_CMD_EQ_FREE, .h = eq_handle};
    int rc = pt_nic_call(nic, &c);
    pt_eq_trash_drain(nic); /* rings freed by earlier calls, outside the engine */
    return pt_ptl_err(rc);
}

/* Initiator stage timing: time spent waiting, attributed by what came back. */
static void tm_wait(uint64_t t0, int rc, const ptl_event_t *ev)
{
    if (!g_pt_timing_on || t0 == 0 || rc < 0 || rc == PT_EQ_EMPTY)
        return;
    int st = ev->type == PTL_EVENT_SEND_END ? PT_IS_WAIT_SEND
           : ev->type == PTL_EVENT_PUT_END ? PT_IS_WAIT_RECV : -1;
    if (st < 0)
        return;
    tls_pt_itm.ticks[st] += pt_tsc() - t0;
    tls_pt_itm.count[st]++;
}

/* The first overflow of an EQ is logged once: in offload mode the NIC thread
 * accepts messages while the application computes, so an EQ sized for the
 * events between two calls of an API-driven library overflows here. */
static void overflow_warn(struct pt_eq *q)
{
    uint32_t z = 0;
    if (LD_RELAXED(&q->overflow_warned) || !RMW_CAS(&q->overflow_warned, &z, 1))
        return;
    pt_log(PT_LOG_WARN,
           "an event queue of %llu entries overflowed (PTL_EQ_DROPPED; logged once per EQ). "
           "The NIC thread delivers events while the application is busy: size an EQ for "
           "every event that can arrive between two reads (each put or get delivers up to "
           "2 events per side with START events on; PTL_MD_EVENT_START_DISABLE halves that)",
           (unsigned long long)q->size);
}

/* The next event of any of n EQs (all on one NI), inside the call: the rings
 * stay allocated until it returns (engine/life.h). An EQ freed meanwhile, or
 * the NI finalized, gives PTL_EQ_INVALID. The EQ's handler, if any, comes
 * back in *handler: the caller runs it after leaving (it may call Portals).
 * timed: the wait counts in the initiator's stage timing. */
static int eq_take(const ptl_handle_eq_t *hs, int n, ptl_time_t timeout, ptl_event_t *event,
                   int *which_eq, ptl_eq_handler_t *handler, bool timed)
{
    PT_API_INSIDE();
    struct pt_nic *nic = NULL;
    for (int i = 0; i < n; i++) {
        struct pt_nic *ni = pt_api_nic_of(hs[i]);
        if (!ni || (nic && ni != nic))
            return PTL_EQ_INVALID; /* all EQs must be on one NI */
        nic = ni;
        /* One EQ: the wait's first look checks it, before reading it. */
        if (n > 1 && !pt_eqo_lookup(nic, hs[i]))
            return PTL_EQ_INVALID;
    }
    if (!event) /* PtlEQGet/Wait: an invalid handle is reported first */
        return pt_eqo_lookup(nic, hs[0]) ? PTL_SEGV : PTL_EQ_INVALID;
    int which = 0;
    struct pt_eq *q = NULL;
    PT_TM_BEGIN(t0);
    int rc = pt_nic_eq_wait(nic, hs, n, timeout, event, &which, &q);
    if (timed)
        tm_wait(t0, rc, event);
    if (rc < 0)
        return pt_ptl_err(rc); /* PT_E_BADEQ: PTL_EQ_INVALID; the NI failed: PTL_FAIL */
    if (rc == PT_EQ_EMPTY)
        return PTL_EQ_EMPTY;
    *which_eq = which;
    if (PT_UNLIKELY(rc == PT_EQ_DROPPED))
        overflow_warn(q);
    *handler = q->handler;
    return rc == PT_EQ_DROPPED ? PTL_EQ_DROPPED : PTL_OK;
}

/* An event already in one of n EQs, taken without the wait's layers: PTL_OK
 * or PTL_EQ_DROPPED with the event (*which_eq: the first EQ in the array
 * that had one, as eq_ready looks), else PTL_EQ_EMPTY (none there, or
 * handles eq_take must judge). With START events on, a client's read of an
 * END finds it there, posted in the same engine pass as its START: eq_take's
 * way cost ~330 instructions per event, this one ~170 (callgrind, 8 B
 * ping-pong, host). Inlined, as eq_next and the ring's read (eq.h): the
 * three calls of a PtlEQWait that finds its event were about 85 of them. */
PT_HOT_INLINE int eq_first(const ptl_handle_eq_t *hs, int n, ptl_time_t timeout,
                           ptl_event_t *event, int *which_eq, ptl_eq_handler_t *handler)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(hs[0]);
    if (!nic)
        return PTL_EQ_EMPTY;
    for (int i = 1; i < n; i++) /* all on one NI, every handle live: else eq_take says */
        if (pt_api_nic_of(hs[i]) != nic || !pt_eqo_lookup(nic, hs[i]))
            return PTL_EQ_EMPTY;
    for (int i = 0; i < n; i++) {
        struct pt_eqo *e = pt_eqo_lookup(nic, hs[i]);
        if (!e)
            return PTL_EQ_EMPTY;
        struct pt_eq *q = e->q;
        enum pt_eq_rc rc = pt_eq_take(q, event);
        if (rc == PT_EQ_EMPTY)
            continue;
        if (timeout == 0)
            pt_wait_polled_empty(nic, false); /* as pt_nic_eq_wait's first look */
        *which_eq = i;
        *handler = q->handler;
        if (PT_UNLIKELY(rc == PT_EQ_DROPPED)) {
            overflow_warn(q);
            return PTL_EQ_DROPPED;
        }
        return PTL_OK;
    }
    return PTL_EQ_EMPTY;
}

PTL_API int PtlEQPoll(ptl_handle_eq_t *eq_handles, int size, ptl_time_t timeout,
                      ptl_event_t *event, int *which_eq)
{
    PT_CHECK_INIT();
    if (!eq_handles || !event || !which_eq)
        return PTL_SEGV;
    if (size <= 0 || size > 1024)
        return PTL_EQ_INVALID;
    ptl_eq_handler_t handler = NULL;
    int rc = g_pt_timing_on ? PTL_EQ_EMPTY
                            : eq_first(eq_handles, size, timeout, event, which_eq, &handler);
    if (rc == PTL_EQ_EMPTY)
        rc = eq_take(eq_handles, size, timeout, event, which_eq, &handler, true);
    if (handler)
        handler(event); /* REF: after dequeue, in the caller's thread */
    return rc;
}

/* PtlEQGet (timeout 0) and PtlEQWait (forever): the next event of one EQ.
 * Only a blocking wait counts in the initiator's stage timing (eq_take). */
PT_HOT_INLINE int eq_next(ptl_handle_eq_t eq_handle, ptl_event_t *event, ptl_time_t timeout)
{
    PT_CHECK_INIT();
    ptl_eq_handler_t handler = NULL;
    int rc = PTL_EQ_EMPTY, which;
    if (PT_LIKELY(event != NULL) && !g_pt_timing_on)
        rc = eq_first(&eq_handle, 1, timeout, event, &which, &handler);
    if (rc == PTL_EQ_EMPTY)
        rc = eq_take(&eq_handle, 1, timeout, event, &which, &handler, timeout != 0);
    if (handler)
        handler(event); /* REF: after dequeue, in the caller's thread */
    return rc;
}

PTL_API int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    return eq_next(eq_handle, event, 0);
}

PTL_API int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    return eq_next(eq_handle, event, PTL_TIME_FOREVER);
}

PTL_API int PtlEQPeek(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(eq_handle);
    struct pt_eqo *e = nic ? pt_eqo_lookup(nic, eq_handle) : NULL;
    if (!e)
        return PTL_EQ_INVALID;
    if (!event)
        return PTL_SEGV;
    pt_nic_progress(nic);
    enum pt_eq_rc rc = pt_eq_peek(e->q, event);
    return rc == PT_EQ_EMPTY ? PTL_EQ_EMPTY : rc == PT_EQ_DROPPED ? PTL_EQ_DROPPED : PTL_OK;
}
