/*
 * region_squat.c - a name under /dev/shm/ptl-<uid>-* that the job's uid did
 * not make safely is refused, never used and never waited on (issue 12 items
 * 12 and 13).
 *
 *   region_squat owner   (item 12; root only, else exit 77)
 *     A: uid 65534 builds a valid job region and links it, mode 0666, under
 *        root's name /ptl-0-<job>; it stays alive, so the region is "in use".
 *     B: root's own region, but mode 0660 (open to the group).
 *     A rank with PTL_JOB naming either must fail PtlNIInit with PTL_FAIL and
 *     an error naming the owner or the mode. Then C: a region root made
 *     properly (0600) works: PtlNIInit, an 8-byte and a 100000-byte put to
 *     ourselves, checked.
 *   region_squat fifo PTLRUN   (item 13)
 *     A FIFO named /ptl-<uid>-<job> (made by uid 65534 when root, else by us):
 *     `ptlrun -n 1 /bin/true` (whose start-up clean-up reads every such name)
 *     must finish within 10 s, and a rank with PTL_JOB=<job> must fail
 *     PtlNIInit within 10 s with "not a regular file".
 *
 * Everything it creates under /dev/shm is removed before it exits; a FIFO is
 * opened for writing first, so that anything blocked opening it (an older
 * ptlrun's clean-up) is released.
 */
#include "config.h"
#include "shm.h"
#include "xport.h"

#include <portals3.h>

#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534

static int g_fail;

static void bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "region_squat: FAIL: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    g_fail = 1;
}

static int become_nobody(void)
{
    return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ? -1 : 0;
}

static void job_spec(struct pt_shm_spec *s)
{
    const struct pt_config *cfg = pt_config();
    memset(s, 0, sizeof *s);
    s->nranks = 1;
    s->slot_size = pt_slot_size_for((uint32_t)cfg->eager_max);
    s->qslots = pt_queue_slots_for((uint32_t)cfg->queue_slots);
    s->pool_req = (uint32_t)cfg->pool_req;
    s->pool_rsp = (uint32_t)cfg->pool_rsp;
    s->jid = (uint32_t)getpid();
}

/* Run PtlNIInit for job `job` in a child, stderr captured into msg; the
 * child's exit status is PtlNIInit's return code (255: it did not return
 * within 10 s). With put_check, a successful NI also puts to itself. */
static int ni_init_in_child(const char *job, bool put_check, char *msg, size_t msglen)
{
    int cap = memfd_create("region_squat_stderr", MFD_CLOEXEC);
    pid_t c = fork();
    if (c == 0) {
        dup2(cap, 2);
        setenv("PTL_JOB", job, 1);
        setenv("PTL_MY_RID", "0", 1);
        setenv("PTL_NRANKS", "1", 1);
        unsetenv("PTL_JOB_FD");
        unsetenv("PTL_NIDMAP");
        unsetenv("PTL_PIDMAP");
        ptl_handle_ni_t ni;
        int maxif;
        if (PtlInit(&maxif) != PTL_OK)
            _exit(254);
        int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
        if (rc != PTL_OK || !put_check)
            _exit(rc);
        /* 8 and 100000 bytes to ourselves, through the job region */
        static uint8_t src[100000], dst[100000];
        ptl_process_id_t self;
        ptl_handle_eq_t eq;
        ptl_handle_me_t me;
        ptl_handle_md_t tmd, smd;
        if (PtlGetId(ni, &self) || PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq) ||
            PtlMEAttach(ni, 3, self, 5, 0, PTL_RETAIN, PTL_INS_AFTER, &me))
            _exit(250);
        ptl_md_t t = {dst, sizeof dst, PTL_MD_THRESH_INF, 0,
                      PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, NULL,
                      eq};
        ptl_md_t s = {src, sizeof src, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL,
                      PTL_EQ_NONE};
        if (PtlMDAttach(me, t, PTL_RETAIN, &tmd) || PtlMDBind(ni, s, PTL_RETAIN, &smd))
            _exit(250);
        static const ptl_size_t sizes[] = {8, sizeof src};
        for (int i = 0; i < 2; i++) {
            for (size_t k = 0; k < sizeof src; k++)
                src[k] = (uint8_t)(k * 7 + (size_t)i + 1);
            if (PtlPutRegion(smd, 0, sizes[i], PTL_NO_ACK_REQ, self, 3, 0, 5, 0, 0))
                _exit(251);
            ptl_event_t ev;
            do {
                if (PtlEQWait(eq, &ev) != PTL_OK)
                    _exit(252);
            } while (ev.type != PTL_EVENT_PUT_END);
            if (ev.mlength != sizes[i] || memcmp(src, dst, sizes[i]) != 0)
                _exit(253);
        }
        PtlNIFini(ni);
        PtlFini();
        _exit(0);
    }
    int st = -1;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(c, &st, WNOHANG) == c)
            break;
        st = -1;
        usleep(10000);
    }
    if (st == -1) {
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
    }
    ssize_t n = pread(cap, msg, msglen - 1, 0);
    msg[n > 0 ? n : 0] = '\0';
    close(cap);
    if (st == -1)
        return 255;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void shm_remove(const char *name)
{
    char path[160];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    int fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC); /* frees FIFO openers */
    unlink(path);
    if (fd >= 0)
        close(fd);
}

static int test_owner(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "region_squat owner: needs root to act as another uid: skipped\n");
        return 77;
    }
    char job[3][32], name[3][80], theirs[80], msg[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(job[i], sizeof job[i], "squat%c%d", 'A' + i, (int)getpid());
        pt_shm_name(name[i], sizeof name[i], job[i]);
    }
    snprintf(theirs, sizeof theirs, "/ptl-%d-%s", NOBODY, job[0]);

    /* A: uid 65534 squats root's name with a valid region, mode 0666. */
    int go[2], hold[2];
    if (pipe(go) || pipe(hold))
        return 1;
    pid_t squatter = fork();
    if (squatter == 0) {
        close(go[0]);
        close(hold[1]);
        if (become_nobody()) {
            fprintf(stderr, "region_squat: cannot become uid %d (%s): skipped\n", NOBODY,
                    strerror(errno));
            _exit(77);
        }
        struct pt_shm_spec s;
        job_spec(&s);
        struct pt_shm_region reg;
        char from[96], to[96];
        snprintf(from, sizeof from, "/dev/shm%s", theirs);
        snprintf(to, sizeof to, "/dev/shm%s", name[0]);
        if (pt_shm_create(&s, job[0], &reg) || link(from, to) || fchmod(reg.fd, 0666)) {
            fprintf(stderr, "region_squat: uid %d could not squat %s: %s\n", NOBODY, to,
                    strerror(errno));
            shm_unlink(theirs);
            _exit(1);
        }
        shm_unlink(theirs);
        (void)!write(go[1], "x", 1);
        char b;
        (void)!read(hold[0], &b, 1); /* alive (owner of an "in use" region) until told */
        _exit(0);
    }
    close(go[1]);
    close(hold[0]);
    char b;
    if (read(go[0], &b, 1) != 1) {
        int st;
        waitpid(squatter, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 77 ? 77 : 1;
    }
    int rc = ni_init_in_child(job[0], false, msg, sizeof msg);
    fputs(msg, stderr);
    if (rc == PTL_OK)
        bad("a rank attached to %s, owned by uid 65534 with mode 0666%s", name[0], "");
    else if (rc != PTL_FAIL || !strstr(msg, "owned by uid 65534"))
        bad("%s (owned by uid 65534): expected PTL_FAIL and \"owned by uid 65534\"%s", name[0],
            "");
    close(hold[1]);
    waitpid(squatter, NULL, 0);

    /* B: root's own region, open to its group. */
    struct pt_shm_spec s;
    job_spec(&s);
    struct pt_shm_region reg;
    if (pt_shm_create(&s, job[1], &reg) || fchmod(reg.fd, 0660)) {
        bad("cannot create %s%s", name[1], "");
    } else {
        rc = ni_init_in_child(job[1], false, msg, sizeof msg);
        fputs(msg, stderr);
        if (rc == PTL_OK)
            bad("a rank attached to %s, mode 0660%s", name[1], "");
        else if (rc != PTL_FAIL || !strstr(msg, "0660"))
            bad("%s (mode 0660): expected PTL_FAIL and the mode in the message%s", name[1], "");
        pt_shm_region_close(&reg, true);
    }

    /* C: made properly, it works. */
    if (pt_shm_create(&s, job[2], &reg)) {
        bad("cannot create %s%s", name[2], "");
    } else {
        rc = ni_init_in_child(job[2], true, msg, sizeof msg);
        fputs(msg, stderr);
        if (rc != 0) {
            char code[16];
            snprintf(code, sizeof code, "%d", rc);
            bad("a rank of the proper region %s failed (%s)", name[2], code);
        }
        pt_shm_region_close(&reg, true);
    }
    for (int i = 0; i < 3; i++)
        shm_remove(name[i]);
    shm_remove(theirs);
    if (!g_fail)
        printf("region_squat owner: OK\n");
    return g_fail;
}

static int test_fifo(const char *ptlrun)
{
    char job[32], name[80], path[96], msg[4096];
    snprintf(job, sizeof job, "squatF%d", (int)getpid());
    pt_shm_name(name, sizeof name, job);
    snprintf(path, sizeof path, "/dev/shm%s", name);
    pid_t c = fork();
    if (c == 0) {
        if (geteuid() == 0 && become_nobody())
            _exit(2);
        umask(0);
        _exit(mkfifo(path, 0666) ? 1 : 0);
    }
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "region_squat: cannot make the FIFO %s\n", path);
        return 1;
    }

    /* ptlrun's start-up clean-up reads every /dev/shm/ptl-<uid>-* name. */
    c = fork();
    if (c == 0) {
        execl(ptlrun, ptlrun, "-n", "1", "--", "/bin/true", (char *)NULL);
        _exit(127);
    }
    st = -1;
    for (int i = 0; i < 1000 && st == -1; i++) {
        if (waitpid(c, &st, WNOHANG) != c) {
            st = -1;
            usleep(10000);
        }
    }
    if (st == -1) {
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        bad("ptlrun hung at start-up on the FIFO %s (killed after 10 s)%s", path, "");
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        bad("ptlrun -n 1 /bin/true failed beside the FIFO %s%s", path, "");
    }

    /* A rank told to join that name. */
    int rc = ni_init_in_child(job, false, msg, sizeof msg);
    fputs(msg, stderr);
    if (rc == 255)
        bad("PtlNIInit hung on the FIFO %s%s", path, "");
    else if (rc == PTL_OK)
        bad("PtlNIInit accepted the FIFO %s as a job region%s", path, "");
    else if (!strstr(msg, "not a regular file"))
        bad("PtlNIInit on the FIFO %s: no \"not a regular file\" message%s", path, "");
    shm_remove(name);
    if (!g_fail)
        printf("region_squat fifo: OK\n");
    return g_fail;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "owner"))
        return test_owner();
    if (argc == 3 && !strcmp(argv[1], "fifo"))
        return test_fifo(argv[2]);
    fprintf(stderr, "usage: region_squat owner | region_squat fifo PTLRUN\n");
    return 2;
}
