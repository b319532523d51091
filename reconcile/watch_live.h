#ifndef VX_RECONCILE_WATCH_LIVE_H
#define VX_RECONCILE_WATCH_LIVE_H

/*
 * What vx watch knows of the stack's jobs between cycles, so a cycle costs
 * what the jobs that can still change cost, not the stack's history.
 *
 * Vertex keeps finished jobs until someone deletes them, so a busy stack
 * lists thousands of them, and its list filter takes a job's state but not
 * its update time. A job in a final state (SUCCEEDED, FAILED, CANCELLED,
 * EXPIRED) never changes again, so the watcher keeps the final jobs of its
 * last full list and, each cycle, lists only the jobs that are not final
 * (the provider's job list_active), then reads one by one (job get) the
 * jobs the state holds as active that this list no longer shows: they just
 * ended, and join the kept ones. A full list runs at the first cycle and then every
 * full_every_ms, which also forgets final jobs deleted since.
 *
 * It is a struct provider (reconcile/provider.h) that the refresh reads
 * through, a decorator of the real provider (struct provider's inner): the job list
 * answers from the above; every other operation is the real provider's.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "util/err.h"

struct vx_ctx;
struct watch_live;

/* Counts for the log line and the metrics. */
struct watch_live_stats {
	size_t full_lists;    /* jobs->list calls (the whole stack in a place) */
	size_t active_lists;  /* jobs->list_active calls */
	size_t gets;	      /* jobs->get calls for jobs that left the active list */
	size_t kept;          /* final jobs held between cycles, all places */
};

/*
 * A reader over real (borrowed: outlives it). full_every_ms: how often a
 * full list replaces the kept jobs (<= 0: every cycle, as the plan does).
 */
int watch_live_new(struct watch_live **out, struct provider *real, const struct vx_ctx *ctx,
		   int64_t full_every_ms, struct vx_err *err) VX_WUR;
void watch_live_free(struct watch_live *w);

/* The real provider from now on (a watcher's provider may be made anew each
 * cycle): borrowed, with the same operations as the first. */
void watch_live_set_real(struct watch_live *w, struct provider *real);

/* The provider to refresh through. Borrowed from w. */
struct provider *watch_live_provider(struct watch_live *w);

/*
 * Before a cycle's refresh: the resource names of the runs the state holds
 * as not final (the current run of each record whose last seen state is not
 * final), copied. A run that leaves the active list is read by name only
 * when it is among them. Replaces the previous cycle's. VX_ENOMEM.
 */
int watch_live_expect(struct watch_live *w, const char *const *names, size_t n) VX_WUR;

/* Makes the next cycle list everything (after an apply of this watcher, a state
 * another writer moved, or an error). */
void watch_live_invalidate(struct watch_live *w);

void watch_live_stats(const struct watch_live *w, struct watch_live_stats *out);

/*
 * The idle check of a cycle, before any refresh: lists the active jobs of
 * every place the last cycle listed and sets *same to 1 when each list is
 * what that cycle's was (watch_live_digest) and shows every run of
 * watch_live_expect: nothing a refresh reads has changed. 0 (with *same 0)
 * whenever that cannot be told: a place not listed in full since the last
 * invalidate, or whose last full list is due again, or none listed yet. The
 * lists made are the cycle's: a refresh that follows in the same cycle uses
 * them instead of listing again. An error of a list invalidates.
 */
int watch_live_idle(struct watch_live *w, int *same, struct vx_err *err) VX_WUR;

/* At the end of a cycle: drops the lists watch_live_idle made that no refresh took. */
void watch_live_cycle_end(struct watch_live *w);

/*
 * A digest of what a list says of each job (name, region, display name,
 * state, labels, times, error), the same whatever the order of the jobs.
 */
uint64_t watch_live_digest(const struct live_jobs *js);

#endif
