/*
 * mp_pexit - a common threading pattern: the main thread opens Portals,
 * hands the rest to a worker and calls pthread_exit; the worker finalizes
 * (PtlNIFini, PtlFini) and returns. The process must then exit (status 0),
 * as it does outside ptlrun: the library keeps no thread of its own past the
 * last NI's close. The launcher watch (transport/launcher.c) used to, and
 * such a rank lived on until ptlrun's --timeout (an adversarial session's
 * finding, 2026-12-04). The driver's --within fails a rank that stays.
 */
#include <portals3.h>
#include <p3api/misc.h>
#include <p3rt/p3rt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static ptl_handle_ni_t ni;

static void *worker(void *arg)
{
    (void)arg;
    usleep(100000);
    int rc = PtlNIFini(ni);
    PtlFini();
    if (rc != PTL_OK) {
        fprintf(stderr, "mp_pexit: PtlNIFini: %s\n", PtlErrorStr((unsigned)rc));
        exit(1);
    }
    printf("mp_pexit: worker finalized\n");
    fflush(stdout);
    return NULL; /* the last thread of the process: it exits with status 0 */
}

int main(void)
{
    int maxif;
    if (PtlInit(&maxif) != PTL_OK ||
        PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK) {
        fprintf(stderr, "mp_pexit: init failed\n");
        return 3;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) {
        perror("mp_pexit: pthread_create");
        return 3;
    }
    pthread_exit(NULL);
}
