#ifndef VX_RECONCILE_PLANNER_H
#define VX_RECONCILE_PLANNER_H

/*
 * Glue between the loaded stack, the stored state, the live jobs and the
 * pure planner (reconcile/plan.h): fills struct plan_input from them, keeps
 * the arrays it points at alive, and runs plan_build().
 */

#include <stddef.h>

#include "reconcile/plan.h"
#include "util/err.h"

struct stack;
struct stack_job;
struct state;
struct live_jobs;
struct live_set;

struct planner {
	struct plan plan;       /* the result */
	struct plan_input in;   /* what it was built from (borrowing from below) */
	struct plan_decl *decls;
	char **shapes;
	const char **resubmit;  /* storage for every decl's resubmit_on */
	struct plan_record *records;
	struct plan_run *runs;
	const char **known;     /* storage for every record's known[] */
	const char **rung_regions; /* storage for every decl's rung_regions[] */
	struct plan_rung_id *rung_ids; /* storage for every decl's rung_ids[] */
	char *state_lost_hint;  /* owned: in.state_lost_hint */
	struct state_policy *policies; /* every decl's policy, owned; npolicies entries */
	size_t npolicies;
	char **rung_shapes;     /* every decl's rung_shapes[], owned; nrung_shapes entries */
	size_t nrung_shapes;
	char lineage[13];       /* the state's vx-lineage label value */
	int refresh;
};

struct planner_options {
	const char *const *targets;
	size_t ntargets;
	const char *const *replaces;
	size_t nreplaces;
	int allow_other_lineage; /* -allow-other-lineage (plan_input) */
	int allow_released;      /* -allow-released (plan_input) */
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

/* The job kind's plan function (kind_job.c's table entry): the three-way
 * diff of reconcile/plan.h over the stack's jobs, appended to pl->plan. */
struct kind_plan_input;
int planner_plan_jobs(struct planner *pl, const struct kind_plan_input *in,
		      struct vx_err *err) VX_WUR;
void planner_release(struct planner *p);

/* What rung k of j's ladder is (0: the declared job), borrowing from j. */
void planner_rung_id(struct plan_rung_id *out, const struct stack_job *j, int64_t k);

/* A project and region whose jobs are listed. */
struct planner_place {
	const char *project;  /* borrowed */
	const char *region;   /* borrowed */
};

/*
 * The places whose jobs must be listed: every declared job's (the Stack's
 * project, the job's region) and every place of a job record's current run
 * (the project it was created in, or the Stack's for older states), so a
 * run left behind by a change of project or region is seen where it is:
 * "not looked at" must never read as "gone". Sorted, unique. Caller frees
 * the array (the strings are borrowed).
 */
int planner_places(const struct stack *st, const struct state *state,
		   struct planner_place **out, size_t *n) VX_WUR;

/*
 * Brings records written before salts to today's forms, in memory: a job
 * record whose spec_hash is its declaration's legacy hash (plain SHA-256
 * with the secrets in it, reconcile/spec.h) gets the declaration's salted
 * hash and redacted spec, and so do its runs made from that same spec. The
 * spec is the same, so the planner sees no change and replaces nothing;
 * the next state write stores the new forms. The runs' labels (vx-spec) stay
 * as they are: they are the live jobs' copy. Call it after
 * stack_apply_salt(). *migrated is the number of records changed.
 * Returns 0 or VX_ENOMEM (state then partly migrated: do not write it).
 */
int planner_migrate_legacy(struct state *state, const struct stack *st,
			   size_t *migrated) VX_WUR;

#endif
