/*
 * cray_spellings - the Cray spellings real clients use compile unchanged and
 * mean what libportals offers (issue 12, item 19):
 *   PTL_DEBUG_ALL, PTL_DEBUG_NI_ALL      OrangeFS's BMI Portals method
 *   PTL_IFACE_SS, PTL_BRIDGE_UK,
 *   IFACE_FROM_BRIDGE_AND_NALID(b, n)    CCI's Portals plugin, ORNL's BMI
 * Run as a job of one: the interface they name opens, and the debug masks
 * are the REF masks PtlNIDebug takes.
 */
#include <portals/portals3.h>
#include <portals/p3api/debug.h>

#include <stdio.h>

int main(void)
{
    int max_ifs;
    ptl_interface_t iface = IFACE_FROM_BRIDGE_AND_NALID(PTL_BRIDGE_UK, PTL_IFACE_SS);
    ptl_handle_ni_t ni;
    if (PtlInit(&max_ifs) != PTL_OK)
        return 1;
    int rc = PtlNIInit(iface, PTL_PID_ANY, NULL, NULL, &ni);
    if (rc != PTL_OK) {
        fprintf(stderr, "PtlNIInit(IFACE_FROM_BRIDGE_AND_NALID(PTL_BRIDGE_UK, PTL_IFACE_SS)): %s\n",
                PtlErrorStr((unsigned)rc));
        return 1;
    }
    if (PTL_DEBUG_ALL != PTL_DBG_ALL || PTL_DEBUG_NI_ALL != PTL_DBG_NI_ALL)
        return 1;
    PtlNIDebug(ni, PTL_DEBUG_ALL | PTL_DEBUG_NI_ALL);
    unsigned prev = PtlNIDebug(ni, PTL_DEBUG_NONE);
    if (prev != (PTL_DEBUG_ALL | PTL_DEBUG_NI_ALL)) {
        fprintf(stderr, "PtlNIDebug returned %#x\n", prev);
        return 1;
    }
    PtlNIFini(ni);
    PtlFini();
    printf("cray_spellings: OK\n");
    return 0;
}
