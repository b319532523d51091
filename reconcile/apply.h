#ifndef VX_RECONCILE_APPLY_H
#define VX_RECONCILE_APPLY_H

/*
 * Carries out a plan (DESIGN.md sections 3 and 4).
 *
 * Order, by the table of kinds (reconcile/kind.h): every kind's removals in
 * reverse phase order (jobs cancelled and forgotten, then reservations
 * deleted, then quota preferences abandoned), then every kind's changes in
 * phase order (quota preferences, reservations, then jobs). For jobs
 * (reconcile/kind_job.c): creates run in batches of at most `parallelism`;
 * before a batch the intents (address, labels) are journaled in the state
 * and persisted, after it the results. A create whose outcome is unknown
 * (VX_EUNCERTAIN) is resolved by listing the region by labels: adopted if it
 * exists, else tried once more. An interrupt (ctx->interrupted) stops new
 * work; what ran is recorded.
 *
 * The caller holds the lock and supplies the hooks; this module never
 * talks to a state backend or prints.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/err.h"

struct vx_ctx;
struct plan;
struct stack;
struct state;
struct provider;
struct live_jobs;

struct apply_hooks {
	/* Writes the state durably (a git commit with this message, or the file). */
	int (*persist)(void *ud, struct state *st, const char *message, struct vx_err *err);
	/* A line of progress for the user ("+ job.a created projects/..."). May be NULL. */
	void (*progress)(void *ud, const char *line);
	/* Renews the lock lease when it is due; called between steps, before
	 * each batch of cancels or creates and while waiting. May be NULL. */
	int (*heartbeat)(void *ud, struct vx_err *err);
	/*
	 * Whether this apply may still send a mutating call (its state lease is
	 * valid for long enough): 0, or a negative VX_E* saying why not. Passed
	 * to the provider, which asks it right before each create and cancel
	 * (every attempt) is sent; called from worker threads, so it must be
	 * thread-safe. Once it refuses, apply_run starts nothing more, records
	 * nothing more (the journaled intents stay for the next apply) and
	 * returns its error with result->fenced set. May be NULL.
	 */
	int (*fence)(void *ud, struct vx_err *err);
	void *ud;
};

struct apply_options {
	int parallelism;           /* default 8 */
	const char *project;
	const char *config_commit; /* HEAD of the stack's repository, or NULL */
	int config_dirty;          /* the stack differs from config_commit: record it on each run */
	const char *decl_hash;     /* the stack's declaration hash, recorded when config_dirty */
	const char *launched_by;   /* who applies (workflow/ci.h), recorded on every run started, or NULL */
	const char *policy_commit; /* the commit of the `kind: Policy` in force, recorded on every run, or NULL */
	const char *planned_by;    /* who made the saved plan applied, or NULL */
	int64_t pr_number;         /* the pull request planned or applied in, 0: none */
	const char *pr_url;        /* its URL, or NULL */
	/*
	 * How long a journaled create may still be in flight: an apply that died
	 * (SIGKILL, a lost runner) may have sent a create the server has not yet
	 * carried out. Before creating the same run again, apply waits until the
	 * intent is this old, listing by labels, and adopts the job if it
	 * appears. Default 65 s: the HTTP layer's 60 s per-request timeout plus
	 * a margin.
	 */
	int64_t inflight_ms;
	int64_t poll_ms;           /* how often to list while waiting; default 2 s */
	/*
	 * Leave each job record's applied policy (reconcile/policy.h) as it is,
	 * and record no held-back run: vx watch without -sync acts on what was
	 * applied, and what it writes applies nothing of the declaration. 0:
	 * the apply records the policy declared on every job record it writes
	 * (vxapply, vx watch -sync).
	 */
	int keep_policy;
};

struct apply_result {
	size_t ok;                 /* actions carried out */
	size_t failed;             /* actions that failed */
	size_t skipped;            /* actions not started (interrupted) */
	struct vx_diags failures;  /* one line per failed action, naming it */
	char **created;            /* resource names of the jobs created or adopted (for -wait) */
	char **created_regions;
	size_t ncreated;
	int interrupted;
	int fenced;                /* stopped because hooks->fence refused (apply_run's err says why) */
};

/*
 * Applies plan to the cloud through prov, updating state. Returns 0 when
 * the apply ran (check result->failed), or a negative code when it could
 * not go on (state could not be persisted): then err says why.
 */
int apply_run(struct apply_result *result, struct vx_ctx *ctx, const struct plan *plan,
	      const struct stack *st, struct state *state, struct provider *prov,
	      const struct apply_options *opts, const struct apply_hooks *hooks,
	      struct vx_err *err) VX_WUR;

/*
 * Records what the live jobs say about the runs in state (last seen state,
 * error, failure class, end time; the window of a booking kinds lists,
 * NULL: none read, for window-ended): every current run, and every earlier
 * run not yet seen ending (a replaced run is still cancelling when it is
 * moved to history). Returns the number of runs that changed, and sets
 * *summary to "job.a: running -> succeeded" lines, one per run changed
 * (caller frees; NULL when none).
 */
struct live_set;
size_t apply_refresh_state(struct state *state, const struct live_jobs *live, const struct live_set *kinds,
			   char **summary);

/*
 * The subject of a state commit: prefix, then each line of lines that
 * names an address, as "+ job.a", "~ reservation.pool (2 → 3)", "- job.old"
 * (the progress lines of an apply), "+ job.a" after "intent " when every
 * line is a journaled intent ("intent job.a create"), or "job.a running →
 * succeeded" (the lines of apply_refresh_state): joined by ", " up to about
 * 72 bytes, then "and N more". NULL when no line names an address, or out
 * of memory. The caller frees it.
 */
char *apply_subject(const char *prefix, const char *lines);

void apply_result_release(struct apply_result *r);


#endif
