#ifndef VX_RECONCILE_APPLIER_H
#define VX_RECONCILE_APPLIER_H

/*
 * The apply executor's state and its shared steps, for the kinds' apply
 * functions (reconcile/kind_*.c): progress lines and the commit message of
 * the current step, failures, durable writes, the lease heartbeat and fence,
 * and the journal of intents. Written once here (apply.c); a kind calls
 * them, it never talks to a state backend or prints.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/buf.h"
#include "util/err.h"

struct vx_ctx;
struct plan;
struct stack;
struct state;
struct vx_label;
struct apply_options;
struct apply_hooks;
struct apply_result;
struct state_run;

struct applier {
	struct vx_ctx *ctx;
	const struct plan *plan;
	const struct stack *st;
	struct state *state;
	struct provider *prov;
	const struct apply_options *opts;
	const struct apply_hooks *hooks;
	struct apply_result *res;
	struct vx_buf msg;   /* commit message lines of the current step */
	int oom;
	/* hooks->fence as the provider sees it, and its first refusal. Worker
	 * threads write fenced and fence_err under fence_lock; the main thread
	 * reads them after joining the batch. */
	struct provider_fence fence;
	pthread_mutex_t fence_lock;
	int fenced;
	struct vx_err fence_err;
	/* Addresses whose change failed in this apply (reservation.pool): what
	 * depends on them is not attempted. Owned strings. */
	char **failed;
	size_t nfailed;
	/* The state changed in the current step without a line of progress (a
	 * job recorded as waiting): applier_persist writes it all the same. */
	int dirty;
};

/* A line of progress, also kept for the commit message of the current step. */
void applier_progress(struct applier *a, const char *fmt, ...) VX_PRINTF(2, 3);
/* Counts a failed action and reports it ("! ADDRESS WHAT failed: why"). */
void applier_fail(struct applier *a, const char *address, const char *what, const struct vx_err *e);
/* Writes the state with the step's lines under summary (nothing when there
 * are none and the step did not mark the state dirty). */
int applier_persist(struct applier *a, const char *summary, struct vx_err *err) VX_WUR;
/* Renews the lease when it is due. */
int applier_heartbeat(struct applier *a, struct vx_err *err) VX_WUR;
/* The fence to pass to every mutating provider call, or NULL. */
const struct provider_fence *applier_fence(const struct applier *a);
/* Whether the fence refused since the apply started. */
int applier_fenced(const struct applier *a);
/* The fence refused: stop the apply with its message. */
int applier_fence_stop(struct applier *a, struct vx_err *err) VX_WUR;
/* Remembers that address's change failed; whether it did. */
void applier_mark_failed(struct applier *a, const char *address);
int applier_has_failed(const struct applier *a, const char *address);

/*
 * Records an action on a reservation or quota preference as a new run of
 * its record (made, kind kind_name, when absent): run's action, resource,
 * region, state, value and error are the caller's (owned strings, taken
 * on success and failure alike); this fills what every action shares (the
 * project, attempt 1, the time, config commit and who) and the record's
 * declaration hash.
 */
int applier_record_action(struct applier *a, const char *address, const char *kind_name,
			  const char *decl_hash, struct state_run *run, struct vx_err *err) VX_WUR;

/* Stamps a run started now with who started it and from which pull
 * request (launchedBy, plannedBy, pullRequest). Out of memory sets a->oom. */
void applier_stamp_run(struct applier *a, struct state_run *run);

/* Journals an intent (op, labels) for address before a create is sent. */
int applier_journal(struct applier *a, const char *address, const char *op,
		    const struct vx_label *labels, size_t nlabels, struct vx_err *err) VX_WUR;

/*
 * The intent to create address (labels), journaled and saved before
 * anything is sent: a later plan adopts what an apply killed meanwhile made.
 */
int applier_intend_create(struct applier *a, const char *address, const struct vx_label *labels, size_t nlabels,
			  struct vx_err *err) VX_WUR;
/*
 * The same for a create sent with a requestId (label vx-request-id), id
 * filled: the id an earlier apply journaled for address, when one died
 * before it knew the outcome (Compute answers an insert retried with the
 * same id without making a second), else a new one.
 */
int applier_intend_create_id(struct applier *a, const char *address, char id[37], struct vx_err *err) VX_WUR;

/* The job kind's two steps (apply.c): cancels and forgets; then updates,
 * adoptions and creates in batches. */
int apply_job_removals(struct applier *a, struct vx_err *err) VX_WUR;
int apply_job_changes(struct applier *a, struct vx_err *err) VX_WUR;

#endif
