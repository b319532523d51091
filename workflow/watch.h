#ifndef VX_WORKFLOW_WATCH_H
#define VX_WORKFLOW_WATCH_H

/*
 * vx watch: one stack kept reconciled, a cycle at a time (docs/watch.md).
 *
 * A cycle refreshes as a plan does (through reconcile/watch_live.h, so it
 * costs what the active jobs cost) and plans without the lease. It then
 * acts only on what the applied configuration already authorises:
 *  - resubmissions by each job's `resubmit` policy and ladder, the same as
 *    vxapply would decide them, a stockout's after its resubmit.delay;
 *  - adoptions and the creates of a killed apply's intents (journal);
 *  - recording what the refresh saw (terminal states, failure classes, times);
 *  - notifications (reconcile/notify.h), each delivered once, to the
 *    targets vxapply applied (the state's notifyTargets), after the lease
 *    is given back: each delivery is recorded as it succeeds, under the
 *    lease taken for that write alone.
 * Anything whose declaration differs from what was applied (a new job, a
 * changed spec, a removal, a reservation resize, a quota change) is told
 * once per change ("declared but not applied; waiting for vxapply") and
 * left alone, unless opts.sync (then the whole plan is applied, as vxapply
 * -auto-approve would).
 *
 * Only when there is something to do does it take the state lease, with a
 * short wait; a lease another apply or watcher holds skips the cycle (told).
 * Under the lease it plans again from the state and the live jobs as they
 * are then, and applies with vxapply's fencing, journal and persistence, so
 * any number of watchers and applies can run at once without a duplicate.
 *
 * Nothing here prints or sleeps between cycles: each line for the log goes
 * to struct watch_events; the caller decides when the next cycle runs.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct ci;
struct vx_ctx;
struct watch;

struct watch_opts {
	const char *dir;            /* the stack's directory */
	int sync;                   /* apply the whole plan each cycle (Argo CD's automated sync) */
	const char *follow;         /* "origin/main": the stack as that branch holds it, fetched each
				     * cycle (no work tree touched); NULL: dir's files as they are */
	const struct ci *ci;        /* who acts, for the state's commits; required */
	int64_t lock_wait_ms;       /* how long to wait for another's lease; 0 = 5 s */
	int64_t full_every_ms;      /* how often a full list replaces the kept final jobs; 0 = 10 min */
	int64_t lease_ms;           /* the state lease; 0 = the backend's default */
	int64_t inflight_ms;        /* applying_opts.inflight_ms; 0 = the default */
	int parallelism;            /* API calls at once when applying; 0 = 8 */
	/* The command's environment, for the notify targets' urlEnv and secretEnv
	 * (library code never calls getenv). NULL: empty. */
	const char *(*getenv)(const char *name);
	int notify_loopback;        /* VX_NOTIFY_ALLOW_LOOPBACK=1: targets on this machine may be posted to */
};

/*
 * The kinds of line a cycle tells, for the log and its JSON form:
 *	act        an action carried out ("+ job.a created ..." as vxapply says it)
 *	failed     an action that failed
 *	unapplied  a declaration that differs from what was applied (once per change)
 *	wait       a resubmission waiting for its delay or after a refused create
 *	skip       the cycle did nothing because the lease is another's
 *	record     what the refresh saw, recorded in the state
 *	notify     a notification sent, or not
 *	error      the cycle failed (the next one tries again)
 *	warn       something to know that stopped nothing (a stack diagnostic)
 *	follow     -follow: the followed branch moved to a commit that loads
 */
struct watch_events {
	void (*line)(void *ud, const char *kind, const char *address, const char *msg);
	void *ud;
};

/* What one cycle did and saw, for the exit code of -once and the metrics. */
struct watch_result {
	int acted;                  /* it changed something: a job, the state */
	int skipped;                /* the lease was another's */
	size_t done, failed;        /* actions carried out, and failed */
	size_t resubmitted;         /* of them, resubmissions */
	size_t jobs_by_state[8];    /* live jobs: queued, pending, running, succeeded, failed,
				     * cancelled, other, not seen */
	size_t notified;            /* notifications delivered */
	size_t full_lists, active_lists, gets; /* the refresh's calls, this cycle */
	int idle;                   /* nothing it depends on changed: only the active jobs were listed */
};

/* "queued", "pending", ...: the names of jobs_by_state's slots. */
extern const char *const watch_job_states[8];

int watch_new(struct watch **out, struct vx_ctx *ctx, const struct watch_opts *opts,
	      const struct watch_events *ev, struct vx_err *err) VX_WUR;
/*
 * One cycle. 0 when it ran, whatever it found (res says what); a negative
 * VX_E* when it could not (the stack did not load, an API failed): the
 * caller logs it and runs the next cycle later. An interrupt
 * (ctx->interrupted) lets the apply in flight finish its requests and
 * record them, and releases the lease.
 */
int watch_cycle(struct watch *w, struct watch_result *res, struct vx_err *err) VX_WUR;
/* The requests that failed since the watcher started, per API (its provider's
 * count): up to max names and counts; how many. */
size_t watch_api_errors(struct watch *w, const char **names, uint64_t *counts, size_t max);
/* Until when (Unix ms) a server asked not to be called again (Retry-After on a
 * request given up), or 0: the next cycle waits at least that long. */
int64_t watch_retry_after(struct watch *w);
void watch_free(struct watch *w);

/*
 * A digest of the stack's files as a cycle reads them: the name, size,
 * modification time and inode of each *.yaml and *.yml of dir, in any
 * order. An idle cycle (docs/watch.md) needs it unchanged, and the stack
 * the watcher keeps from cycle to cycle is loaded again when it changes.
 * newest (may be NULL): the latest modification time among them, in
 * nanoseconds since the epoch (0: no file). VX_EIO, VX_ENOMEM.
 */
int watch_files_digest(const char *dir, uint64_t *out, int64_t *newest, struct vx_err *err) VX_WUR;

#endif
