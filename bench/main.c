#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "engine/core/cpu.h"

#define MAX_BENCHES 64

static struct {
    const char *name, *summary;
    pg_bench_fn fn;
} benches[MAX_BENCHES];
static int nbenches;

void pg_bench_register(const char *name, const char *summary, pg_bench_fn fn)
{
    if (nbenches < MAX_BENCHES) {
        benches[nbenches].name = name;
        benches[nbenches].summary = summary;
        benches[nbenches].fn = fn;
        nbenches++;
    }
}

double pg_bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const char *pg_bench_opt(int argc, char **argv, const char *key, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], key) == 0) return argv[i + 1];
    return dflt;
}

int pg_bench_has(int argc, char **argv, const char *key)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], key) == 0) return 1;
    return 0;
}

int pg_bench_contend_start(int argc, char **argv)
{
    if (!pg_bench_has(argc, argv, "--contend")) return 0;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    return (int)pid;
}

void pg_bench_contend_stop(int pid)
{
    if (pid <= 0) return;
    kill((pid_t)pid, SIGKILL);
    waitpid((pid_t)pid, NULL, 0);
}

struct pg_cpu_budget *pg_bench_budget(int argc, char **argv, int threads)
{
    if (!pg_bench_has(argc, argv, "--budget")) return NULL;
    pg_cpu_budget *b = NULL;
    if (pg_cpu_budget_create(threads, &b, NULL)) return NULL;
    pg_cpu_budget_follow_load(b, true);
    /* The first estimate of the foreign load needs an interval: take it now
     * (a contender, if any, is already running), not in the timed runs. */
    pg_cpu_share s;
    pg_cpu_join(b, false, &s);
    pg_cpu_acquire(&s, 0);
    pg_cpu_release(&s);
    usleep(300 * 1000);
    pg_cpu_acquire(&s, 0);
    pg_cpu_leave(&s);
    return b;
}

/* As privgend does (see daemon/privgend.c): libgomp reads its wait policy
 * once at load, so a passive policy with a short bounded spin
 * (GOMP_SPINCOUNT 20 000) is set here and the program re-executed once. An
 * explicit OMP_WAIT_POLICY or GOMP_SPINCOUNT (e.g. active, to measure the
 * difference) is kept. */
static void ensure_bounded_omp_waits(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv("GOMP_SPINCOUNT", "20000", 1)) return;
    execv("/proc/self/exe", argv);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: privgen-bench <benchmark> [options]\n\nbenchmarks:\n");
    for (int i = 0; i < nbenches; i++)
        fprintf(f, "  %-12s %s\n", benches[i].name, benches[i].summary);
}

int main(int argc, char **argv)
{
    ensure_bounded_omp_waits(argv);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < nbenches; i++)
        if (strcmp(argv[1], benches[i].name) == 0) return benches[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "privgen-bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
