// Wall-clock shift for LD_PRELOAD, used by tests/e2e/sc_idle.py to give the real Claude Code (and
// every hook, MCP server and `leanctx` process it starts, which inherit LD_PRELOAD) a clock hours
// behind, so that a later run sees a long idle gap without anyone waiting for it.
// Source: written for leanctx's withdrawal study of Claude Code 2.1.328 (docs/DELIVERY.md §8, the
// idle-cut fixtures in tests/fixtures/payloads/withdrawal/claude/), copied here unchanged below
// this header; licence: the repository's (MIT OR Apache-2.0).
// Build: cc -shared -fPIC -O2 -o timeshift.so timeshift.c -ldl (sc_idle.py does it at test time).
//
// Minimal wall-clock shift for LD_PRELOAD (withdrawal study).  Adds an offset in seconds (may be
// negative) to CLOCK_REALTIME readings: clock_gettime, gettimeofday, time.  Monotonic clocks are
// untouched.  The offset is TIMESHIFT_SECONDS, or, when TIMESHIFT_FILE is set, the number in that
// file, re-read at most every 200 ms of real time (so a running process can be "moved" forward).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/time.h>
static int (*real_cgt)(clockid_t, struct timespec *) = 0;
static long shift_now(void) {
    static long s = 0; static int init = 0; static struct timespec last = {0, 0};
    const char *file = getenv("TIMESHIFT_FILE");
    if (!init) { const char *e = getenv("TIMESHIFT_SECONDS"); s = e ? atol(e) : 0; init = 1; }
    if (file) {
        struct timespec now; real_cgt(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000;
        if (last.tv_sec == 0 || ms >= 200) {
            FILE *f = fopen(file, "r");
            if (f) { long v; if (fscanf(f, "%ld", &v) == 1) s = v; fclose(f); }
            last = now;
        }
    }
    return s;
}
int clock_gettime(clockid_t clk, struct timespec *ts) {
    if (!real_cgt) real_cgt = dlsym(RTLD_NEXT, "clock_gettime");
    int r = real_cgt(clk, ts);
    if (r == 0 && ts && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) ts->tv_sec += shift_now();
    return r;
}
int gettimeofday(struct timeval *tv, void *tz) {
    static int (*real)(struct timeval *, void *) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "gettimeofday");
    if (!real_cgt) real_cgt = dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(tv, tz);
    if (r == 0 && tv) tv->tv_sec += shift_now();
    return r;
}
time_t time(time_t *t) {
    struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
