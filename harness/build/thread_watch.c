/* Preloaded (LD_PRELOAD) into every worker process: counts the threads that a
 * call of solve() starts and that have not finished when it returns.
 *
 * A snapshot of /proc after the return cannot settle this: a detached thread
 * that launches its kernel a few microseconds after solve() returns can exit
 * before anyone looks, and its kernel then runs outside the timer. Here every
 * pthread_create while a call is watched is counted, and the count drops only
 * when the thread's start routine has returned (or the thread has called
 * pthread_exit), so a count read after the return is exact: whatever a
 * finished thread launched, it launched before the return. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_int watching;   /* a call of solve() is in progress */
static atomic_long epoch;     /* which call: a thread of an earlier one never counts for a later one */
static atomic_long unfinished; /* threads of the current epoch whose routine has not returned */

struct start {
    void *(*routine)(void *);
    void *arg;
    long epoch;
};

static void finished(void *started_in) {
    if (*(long *)started_in == atomic_load(&epoch)) atomic_fetch_sub(&unfinished, 1);
}

static void *watched_start(void *opaque) {
    struct start start = *(struct start *)opaque;
    free(opaque);
    void *result;
    pthread_cleanup_push(finished, &start.epoch); /* also on pthread_exit and cancellation */
    result = start.routine(start.arg);
    pthread_cleanup_pop(1);
    return result;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *), void *arg) {
    static create_fn real;
    if (!real) real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    struct start *start = atomic_load(&watching) ? malloc(sizeof *start) : NULL;
    if (!start) return real(thread, attr, routine, arg);
    start->routine = routine;
    start->arg = arg;
    start->epoch = atomic_load(&epoch);
    atomic_fetch_add(&unfinished, 1);
    int status = real(thread, attr, watched_start, start);
    if (status != 0) {
        atomic_fetch_sub(&unfinished, 1);
        free(start);
    }
    return status;
}

/* Before solve(): a new epoch, nothing unfinished. */
void harness_watch_threads(void) {
    atomic_fetch_add(&epoch, 1);
    atomic_store(&unfinished, 0);
    atomic_store(&watching, 1);
}

/* Right after solve() returns: how many of the threads it started are still in their routine. */
long harness_unfinished_threads(void) {
    atomic_store(&watching, 0);
    return atomic_load(&unfinished);
}
