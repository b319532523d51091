#ifndef VX_UTIL_POOL_H
#define VX_UTIL_POOL_H

/*
 * The one worker pool: runs n independent items on a few threads and
 * returns when all are done. The calling thread is one of the workers, so
 * when no thread can be created every item still runs (on the caller, one
 * after another): a pool never fails. Items are taken in order, each by
 * one worker; fn must be safe to run on several threads at once (the
 * providers are, provider.h).
 */

#include <stddef.h>

/* Runs fn(ud, i) for every i in [0, n), on up to nthreads threads (the caller included). */
void vx_pool_run(size_t n, size_t nthreads, void (*fn)(void *ud, size_t i), void *ud);

#endif
