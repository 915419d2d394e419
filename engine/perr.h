/*
 * perr.h - the engine's one error convention. Internal functions return 0 or a
 * negative pt_err; the API layer maps them to PTL_* exactly once (api_err.c).
 */
#ifndef PT_PERR_H
#define PT_PERR_H

enum pt_err {
    PT_OK = 0,
    PT_E_NOINIT = -1,     /* library not initialised                 */
    PT_E_BADNI = -2,      /* NI handle invalid                       */
    PT_E_BADME = -3,      /* ME handle invalid                       */
    PT_E_BADMD = -4,      /* MD handle invalid                       */
    PT_E_BADEQ = -5,      /* EQ handle invalid                       */
    PT_E_BADPT = -6,      /* portal index out of range               */
    PT_E_BADAC = -7,      /* ACL index out of range                  */
    PT_E_BADSR = -8,      /* status register index invalid           */
    PT_E_NOSPACE = -9,    /* object limit or memory                  */
    PT_E_MEINUSE = -10,   /* ME already has an MD / ME's MD busy     */
    PT_E_MDINUSE = -11,   /* MD has operations in flight             */
    PT_E_NOUPDATE = -12,  /* PtlMDUpdate refused: test EQ not empty  */
    PT_E_LISTLONG = -13,  /* match list at max_me_list               */
    PT_E_PTFULL = -14,    /* no unused portal index                  */
    PT_E_ILLEGAL = -15,   /* MD description or region illegal        */
    PT_E_PROCESS = -16,   /* target process not reachable            */
    PT_E_SEGV = -17,      /* NULL pointer argument                   */
    PT_E_IFACE = -18,     /* unknown interface                       */
    PT_E_PID = -19,       /* requested pid unavailable               */
    PT_E_FAIL = -20,      /* internal failure                        */
    PT_E_AGAIN = -21,     /* engine-internal: resources busy, retry  */
    PT_E_HANDLE = -22,    /* handle of no known kind                 */
    PT_E_BADCT = -23,     /* CT handle invalid (portals3_ext.h)      */
    PT_E_ARG = -24,       /* argument out of its domain (op/type)    */
};

#endif
