#ifndef VX_RECONCILE_PLANNER_H
#define VX_RECONCILE_PLANNER_H

/*
 * Runs every kind's plan (reconcile/kind.h) over the loaded stack, the
 * stored state and the live set, into one plan, and keeps alive, per kind,
 * what that kind's plan allocated for the plan's actions to borrow.
 */

#include <stddef.h>

#include "reconcile/kind.h"
#include "reconcile/plan.h"
#include "util/err.h"

struct stack;
struct state;
struct live_set;

struct planner {
	struct plan plan;       /* the result */
	/* Each kind's scratch, in kind_table order: what its plan left for the
	 * plan to borrow (kind_plan_input.scratch), freed by its plan_release. */
	void *scratch[KIND_MAX];
	char lineage[13];       /* the state's vx-lineage label value */
	int refresh;
};

struct planner_options {
	const char *const *targets;
	size_t ntargets;
	const char *const *replaces;
	size_t nreplaces;
	int allow_other_lineage; /* -allow-other-lineage (kind_plan_input) */
	int allow_released;      /* -allow-released (kind_plan_input) */
	int64_t now_ms;          /* the time ages are shown against (a pending quota
				  * request's wait) and a refused create's backoff runs
				  * from; 0: none shown, no backoff */
};

/*
 * Plans stack against state and live (NULL = refresh off: plan from the
 * state alone). The stack, state and live must outlive the planner.
 */
int planner_run(struct planner *out, const struct stack *st, const struct state *state,
		const struct live_set *live, const struct planner_options *opts,
		struct vx_err *err) VX_WUR;

void planner_release(struct planner *p);

/*
 * Brings records written by an older vx to today's forms, in memory: each
 * kind's migrate (the job kind: a record whose spec_hash is its
 * declaration's legacy hash, plain SHA-256 with the secrets in it,
 * reconcile/load/spec.h, gets the salted hash and redacted spec). Nothing the
 * planner would act on changes; the next state write stores the new forms.
 * Call it after stack_apply_salt(). *migrated is the number of records
 * changed. Returns 0 or VX_ENOMEM (state then partly migrated: do not write
 * it).
 */
int planner_migrate_legacy(struct state *state, const struct stack *st,
			   size_t *migrated) VX_WUR;

#endif
