#ifndef VX_RECONCILE_KIND_JOB_INTERNAL_H
#define VX_RECONCILE_KIND_JOB_INTERNAL_H

/*
 * What the files of the job kind share, and nothing else includes:
 *
 *   kind_job.c          the row of the table, the refresh (one list per place)
 *                       and the plan entry (the stack and state as plan input);
 *   kind_job_diff.c     the three-way diff, plan_build: declared x recorded x
 *                       live, what changed and what each address's action is;
 *   kind_job_runs.c     a run's next attempt: adoption by labels, resubmission,
 *                       refused creates and their backoff; and the state's runs
 *                       refreshed from the live listing;
 *   kind_job_ladder.c   the fallback ladder: where a run stands on it, which
 *                       rung a new run goes on;
 *   kind_job_foreign.c  live jobs no declaration accounts for: untracked runs,
 *                       another state's (vx-lineage), released ones;
 *   kind_job_create.c   apply: cancels, forgets and updates, then adoptions and
 *                       creates in batches, each create's intent journaled first.
 *
 * The diff works on plain structs (reconcile/plan.h) through struct builder;
 * its helpers here are the ones more than one file calls.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/kind_job.h"
#include "reconcile/sweep.h"
#include "util/hashmap.h"

struct live_job;
struct stack_job;

/*
 * Indexes built once per plan, so every lookup is a binary search: a plan
 * over 10,000 jobs would otherwise spend seconds in nested scans.
 */
struct builder {
	struct plan *p;
	const struct plan_input *in;
	int oom;
	/* Lookups by key, a table each (no sorts; one probe a lookup, where
	 * bsearch compared about 14 strings). Values index in->live->items,
	 * in->records, in->decls. */
	struct vx_hashmap by_name;	  /* live jobs by resource name */
	struct vx_hashmap records;	  /* records by address */
	struct vx_hashmap decls;	  /* declarations by address */
	struct vx_hashmap known;	  /* every run the state knows, by name */
	const struct live_job **by_job;   /* live jobs of this stack sorted by their vx-job label */
	size_t nby_job;
	struct created *created;            /* the jobs this plan creates, sorted by vx-job label */
	size_t ncreated;
	int other_lineage;                  /* job_check_other_lineage refused: no warning repeats it */
};

/* A job this plan creates, by the vx-job label its run will carry (a sweep's
 * run is labelled with a hash of its name, reconcile/sweep.h). */
struct created {
	char label[SWEEP_LABEL_MAX + 1];
	const char *address;
};

/* The current run of the declared spec and run, failed as class cls. */
/* The booking whose window ended a run (struct kind's window_of); kind NULL: none known. */
struct job_window {
	const struct kind *kind;
	struct kind_window win;
};

struct failed {
	const struct live_job *lj;      /* as listed; NULL when not refreshing or vanished */
	const char *state, *msg, *cls;
	int code, vanished;
	int64_t at;                     /* its rung on today's ladder */
	struct job_window window;	/* the booking whose window ended it (class window-ended) */
};

/* kind_job_diff.c: the builder's indexes and the actions it adds. */
int job_replaced(const struct builder *b, const char *address);
int job_cmp_live_name(const void *a, const void *b);
int job_cmp_cstr(const void *a, const void *b);
const char *job_vx_job_of(const struct live_job *j);
int job_label_is(const struct live_job *j, const char *key, const char *want);
size_t job_by_job_lower(const struct builder *b, const char *name);
int job_is_known(const struct builder *b, const char *name);
int job_owned(const struct builder *b, const struct live_job *j);
struct plan_action *job_add_action(struct builder *b, enum plan_op kind, const char *address);
void job_set_str(struct builder *b, char **dst, const char *src);
void job_set_fmt(struct builder *b, char **dst, char *formatted);
void job_fill_decl(struct builder *b, struct plan_action *a, const struct plan_decl *d);

/* kind_job_runs.c: a run's next attempt. */
int64_t job_next_attempt(struct builder *b, const struct plan_decl *d, int64_t attempt,
			 const struct live_job **seen);
void job_note_seen(struct builder *b, struct plan_action *a, const struct live_job *seen);
int job_maybe_adopt(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		    int64_t attempt, int64_t rung, const char *why, const char *cancel_name);
const char *job_run_failure(const struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    struct failed *f);
/*
 * failure_classify with the window of the booking whose reservation the
 * run's spec (spec_json, NULL: not the run's) targets, as kinds says (NULL:
 * not read): in->window_end_ms is set from it and *w filled (w->kind NULL
 * when none). A run prev (its recorded class) says was window-ended stays so.
 */
struct failure_input;
const char *job_classify(struct failure_input *in, const struct live_set *kinds, const char *spec_json,
			 const char *prev, struct job_window *w);
int job_refusal_gate(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		     int64_t *attempt, char **why);
struct plan_action *job_plan_failed(struct builder *b, const struct plan_decl *d,
				    const struct plan_record *rec, const struct failed *f);
/*
 * resubmit.maxQueued: when the current run f (active, not failed) is still
 * queued or pending, never started, maxQueued after its create, plans its
 * cancel and the next attempt (a resubmit of class queue-timeout that
 * cancels it), or a noop saying why it is left queued. Returns 1 when it
 * planned an action (or ran out of memory), 0 when the run is not stuck.
 */
int job_plan_queued(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		    const struct failed *f);
/* The live job named name in idx (sorted by job_cmp_live_name), or NULL. */
const struct live_job *job_live_lookup(const struct live_job **idx, size_t n, const char *name);

/* kind_job_ladder.c: the fallback ladder. */
const char *job_rung_region(const struct plan_decl *d, int64_t k);
void job_set_rung(struct builder *b, struct plan_action *a, const struct plan_decl *d, int64_t k);
int job_run_rung(const struct plan_run *cur, const struct plan_decl *d, int64_t *at);
char *job_rung_words(const struct plan_run *cur);
int job_run_moved(const struct plan_run *cur, const struct plan_decl *d);
/* What rung k of j's ladder is (0: the declared job), borrowing from j. */
void job_rung_id(struct plan_rung_id *out, const struct stack_job *j, int64_t k);

/*
 * kind_job_window.c: jobs in a booking's window. job_window_gate is the row's
 * plan_after: a create of such a job waits (PLAN_WAIT, with the reason)
 * until the booking's capacity is delivered and open to Vertex AI, else it
 * gets the delivered reservation's name (job_action.window_reservation).
 * job_window_blocked: 1 when the create must not be sent (recorded as a
 * failure of the apply), else 0. job_window_spec: into *out (owned) the
 * spec to send when the delivered reservation is not the declared name,
 * else NULL; 0 or VX_ENOMEM.
 */
struct planner;
struct kind_plan_input;
struct applier;
int job_window_gate(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err);
int job_window_blocked(struct applier *a, const struct plan_action *pa);
/* The row's watch_relies: the booking's address when vx watch held back the
 * update that opens its reservation, which a's create relies on; else NULL. */
const char *job_window_relies(const struct plan *p, const struct plan_action *a);
int job_window_spec(char **out, const struct stack *st, const struct stack_job *j, const struct job_action *ja) VX_WUR;

/* kind_job_foreign.c: live jobs no declaration accounts for. */
void job_check_other_lineage(struct builder *b);
void job_check_released(struct builder *b);
void job_plan_untracked(struct builder *b);

/*
 * The job kind's slot of a live store (struct live_store, kind_live_slot):
 * the jobs listed, and apart from them those `vx state rm` let go of
 * (state->released), which the planner only warns of.
 */
struct job_live {
	struct live_jobs listed;
	struct live_jobs released;
};

/* The job kind's slots written in files of their own, for kind_job's row; each has the
 * contract its slot's comment in reconcile/kind.h states. */
struct import_outcome;
struct import_request;
struct provider;
struct stack;
struct stack_decl;
struct state;
struct status_input;
struct status_report;

/* The import slot: a Vertex AI CustomJob (reconcile/kind_job_import.c). */
int kind_job_import(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err) VX_WUR;
/* The decl_at slot: the stack's jobs in declaration order (reconcile/kind_job_import.c). */
const struct stack_decl *kind_job_decl_at(const struct stack *st, size_t i);

/* The status_rows slot: declared, recorded and untracked jobs (reconcile/kind_job_status.c). */
int kind_job_status_rows(struct status_report *out, const struct status_input *in);

#endif
