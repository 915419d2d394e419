/*
 * mpiincast.c - Open MPI's (or MPICH's) side of mp_scale's incast (issue 13):
 * every rank but 0 sends COUNT 8-byte messages and then one 4 KiB message to
 * rank 0, which receives them all and checks each one; the rate is rank 0's
 * messages per second from the barrier before the first send to the last
 * receive, as mp_scale incast prints it.
 *
 * Build: mpicc -O2 -o mpiincast mpiincast.c
 * Usage: mpirun -np N [--oversubscribe] mpiincast [COUNT]
 *   COUNT   8-byte messages per sender (default 5000)
 *   rank 0 receives with MPI_Recv(MPI_ANY_SOURCE), one at a time, as a
 *   Portals receiver reads its EQ one event at a time; senders use MPI_Send
 *   (eager at 8 B: it returns once the message is in the receiver's queue).
 * Output: one line, "mpiincast: N-1 senders x COUNT+1 messages: R messages/s".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_SMALL 1
#define TAG_BIG   2
#define BIG       4096

static void die(const char *what)
{
    fprintf(stderr, "mpiincast: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    unsigned long count = argc > 1 ? strtoul(argv[1], NULL, 0) : 5000;
    if (n < 2 || !count)
        die("needs at least 2 ranks and COUNT > 0");
    unsigned char big[BIG];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (me) {
        for (unsigned long i = 0; i < count; i++) {
            uint64_t w = ((uint64_t)me << 32) | (i + 1);
            MPI_Send(&w, 8, MPI_BYTE, 0, TAG_SMALL, MPI_COMM_WORLD);
        }
        for (int k = 0; k < BIG; k++)
            big[k] = (unsigned char)(me * 31 + k);
        MPI_Send(big, BIG, MPI_BYTE, 0, TAG_BIG, MPI_COMM_WORLD);
    } else {
        unsigned long *next = calloc((size_t)n, sizeof *next); /* per sender: messages seen */
        if (!next)
            die("out of memory");
        const uint64_t want = (uint64_t)(n - 1) * (count + 1);
        for (uint64_t got = 0; got < want; got++) {
            MPI_Status st;
            MPI_Recv(big, BIG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int p = st.MPI_SOURCE, len;
            MPI_Get_count(&st, MPI_BYTE, &len);
            if (p <= 0 || p >= n)
                die("a message from no sender");
            if (st.MPI_TAG == TAG_SMALL) {
                uint64_t w;
                memcpy(&w, big, 8);
                if (len != 8 || next[p] >= count || w != (((uint64_t)p << 32) | (next[p] + 1)))
                    die("an 8-byte message wrong or out of order");
                next[p]++;
            } else {
                if (len != BIG || next[p] != count)
                    die("the 4 KiB message early or of the wrong size");
                for (int k = 0; k < BIG; k++)
                    if (big[k] != (unsigned char)(p * 31 + k))
                        die("the 4 KiB message wrong");
                next[p]++;
            }
        }
        double s = MPI_Wtime() - t0;
        printf("mpiincast: %d senders x %lu messages: all delivered and checked, %.0f messages/s\n",
               n - 1, count + 1, (double)want / (s > 0 ? s : 1e-6));
        free(next);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
