#ifndef VX_RECONCILE_KIND_JOB_H
#define VX_RECONCILE_KIND_JOB_H

/*
 * The job kind's declarations (CustomJob documents, job.NAME) as the stack
 * loader reads them, and their accessors: for the job kind's files and the
 * code that truly works on jobs (the policy, sweeps, vx logs). They live in
 * the job kind's slot of struct stack (kind_job's place in kind_table).
 *
 * The job kind's plan (DESIGN.md section 3): its input and its actions'
 * fields. For every job address, the declaration (D), the state record (S)
 * and the live jobs (L) give one action. The diff (plan_build,
 * reconcile/kind_job_diff.c) is pure: it sees the plain structs below,
 * filled by the job kind's plan entry (reconcile/kind_job.c) from the
 * stack, the state and the provider, so every rule is unit-tested without a
 * cloud.
 *
 * Runs are identified without the state by their labels (vx-stack, vx-job,
 * vx-spec, vx-run, vx-attempt). Before any create the plan looks for a live
 * job that already carries the labels of the run it would create: if one
 * exists (an apply crashed between "create" and "write state", or a reply
 * was lost), the action is `adopt`, never a second create.
 *
 * A job's action is a struct plan_action (reconcile/plan.h) whose payload is
 * a struct job_action: what the job kind plans and what the job kind's code
 * elsewhere reads of it (the watcher's and notices' job rules, the sweeps,
 * the capacity check, the plan's JSON fields of a run). The plan owns it:
 * plan_add_action makes it (kind_job.action_size) and plan_release frees it
 * (kind_job.action_release).
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/load/spec.h"
#include "reconcile/stack.h"

/*
 * One rung of a fallback ladder: resubmit.fallback[i] is rung i + 1, the
 * declared job rung 0. A rung overrides the declared job, not the rung
 * before it: its spec is the job's spec with the rung's scheduling merged
 * over spec.scheduling, its machineSpec replacing that of every worker pool
 * with accelerators, and its reservation set as those pools'
 * reservationAffinity; checked by spec_check like the job's own.
 */
struct stack_rung {
	char *region;	      /* the rung's region, or the job's when it sets none */
	struct job_spec spec; /* what is sent for an attempt on this rung */
};

struct stack_job {
	struct stack_decl d;	    /* address "job.NAME" */
	char *region;		    /* the job's or the Stack's region (always set) */
	char *display_name;	    /* displayName, default the name */
	struct stack_labels labels; /* the Stack's labels overlaid by the job's own (no vx- keys) */
	struct job_spec spec;	    /* from spec_check: canonical JSON, hash, pools, strategy... */
	int64_t run;		    /* >= 1, default 1 */
	unsigned resubmit_on;	    /* STACK_FAIL_* bits, default 0 */
	int64_t max_attempts;	    /* >= 1, default 1 (= never resubmit) */
	struct stack_rung *rungs;   /* owned: resubmit.fallback, rung i + 1 at [i]; NULL when none */
	size_t nrungs;
	enum stack_on_change on_change; /* default STACK_ON_CHANGE_REPLACE */
	int protect;			/* 1: the plan refuses to cancel this job */
	int on_remove;			/* onRemove: STATE_ON_REMOVE_* (0: unset, the default) */
	/* resubmit.delay: after a stockout, how long the next attempt waits (doubling per
	 * attempt, capped at STACK_MAX_RESUBMIT_DELAY_MS); a preempted run goes again at once. */
	int64_t resubmit_delay_ms;
	int64_t stuck_after_ms; /* stuckAfter: queued or pending this long is "stuck" */
	/* resubmit.onExitCodes: bit c of on_exit_codes[c / 64] set for exit status
	 * c (1..255): a user-error run whose replica exited with it is resubmitted. */
	uint64_t on_exit_codes[4];
	/* resubmit.on written as a map ({stockout: 6, preempted: 20}): on_budget[c]
	 * is how many resubmissions may follow a failure of class bit c; with the
	 * list form (on_budgets 0) maxAttempts alone bounds them. */
	int on_budgets;
	int64_t on_budget[STACK_FAIL_NCLASSES];
	/* resubmit.within: no new attempt after the run's first create + this; 0: none. */
	int64_t within_ms;
	/* resubmit.returnAfter: a run that left rung 0 this long ago tries rung 0
	 * again at its next capacity failure; 0: never. */
	int64_t return_after_ms;
	/* resubmit.maxQueued: a run still QUEUED or PENDING that never started
	 * this long after its create is cancelled by vx and the next attempt
	 * made (class queue-timeout); 0: never. */
	int64_t max_queued_ms;
	/* A run of a `matrix:` sweep: 1 + its index in stack_sweeps(), 0 for a job
	 * declared alone. Its name is "SWEEP[k=v,...]" (reconcile/sweep.h). */
	size_t sweep;
	char **after; /* after: the addresses it waits for ("job.train", a sweep or a slice) */
	size_t nafter;
	char *output_dir; /* spec.baseOutputDirectory.outputUriPrefix as sent, or NULL */
	/* reservation: naming a FutureReservation of the stack: its name (the job runs in
	 * its window, on the reservation Google delivers; kind_job_window.c), else NULL. */
	char *booking;
	/* maxHourlyUsd: the most one run may cost per hour at list price (a sweep's caps
	 * each run), checked by vx validate and the plan; 0: none. Where it is written. */
	double max_hourly_usd;
	unsigned max_hourly_line, max_hourly_col;
};

/*
 * A CustomJob document with `matrix:`: one job per combination, in
 * stack_jobs()[first .. first + n) in the order they are started (the
 * matrix's order, then include's new combinations).
 */
struct stack_sweep {
	char *name;    /* "lr-sweep" */
	char *address; /* "job.lr-sweep" */
	char *file;    /* where `matrix:` is written */
	unsigned line, col;
	int64_t max_parallel; /* maxParallel: most runs active at once; 0: no cap */
	int64_t max_failed;   /* maxFailed: after this many gave up, start no more; 0: no limit */
	char *output_dir;     /* the sweep's outputUriPrefix as written (its runs' parent), or NULL */
	size_t first, n;
};

/* The most runs one matrix may expand to. */
#define STACK_MAX_SWEEP_RUNS 10000

#define STACK_RESUBMIT_DELAY_DEFAULT_MS (60 * 1000)
#define STACK_MAX_RESUBMIT_DELAY_MS (15 * 60 * 1000)
#define STACK_STUCK_AFTER_DEFAULT_MS (6 * 3600 * 1000)
/* resubmit.within: from a minute to 30 days (a job runs at most 7 days a run). */
#define STACK_MIN_WITHIN_MS ((int64_t)60 * 1000)
#define STACK_MAX_WITHIN_MS ((int64_t)30 * 24 * 3600 * 1000)
#define STACK_MAX_STUCK_AFTER_MS ((int64_t)30 * 24 * 3600 * 1000)
/* resubmit.returnAfter: from a minute to 30 days. */
#define STACK_MIN_RETURN_AFTER_MS ((int64_t)60 * 1000)
#define STACK_MAX_RETURN_AFTER_MS ((int64_t)30 * 24 * 3600 * 1000)
/* resubmit.maxQueued: from a minute to 7 days. */
#define STACK_MIN_MAX_QUEUED_MS ((int64_t)60 * 1000)
#define STACK_MAX_MAX_QUEUED_MS ((int64_t)7 * 24 * 3600 * 1000)

/* The most rungs a ladder may have besides the declared job. */
#define STACK_MAX_RUNGS 16

/* What the job kind keeps of a stack besides its jobs (its slot's more). */
struct stack_job_more {
	struct stack_sweep *sweeps; /* owned, in declaration order; their runs are in the jobs */
	size_t nsweeps;
	/* The jobs sorted by name, for stack_find_job (a plan looks every record's
	 * job up); set by the loader once the stack is valid. Points into the jobs. */
	const struct stack_job **by_name;
};

/* st's jobs in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_job *stack_jobs(const struct stack *st, size_t *n);
/* st's sweeps (stack_sweep), *n of them (n may be NULL); NULL when none. Borrowed. */
const struct stack_sweep *stack_sweeps(const struct stack *st, size_t *n);
size_t stack_nsweeps(const struct stack *st);

/* The region and spec an attempt on rung (0 = the declared job; past the
 * last rung, the last) uses. Borrowed. */
const char *stack_job_rung_region(const struct stack_job *j, int64_t rung);
const struct job_spec *stack_job_rung_spec(const struct stack_job *j, int64_t rung);

/* The job kind's check_prices slot (kind_job_budget.c): maxHourlyUsd against each rung's rate. */
struct prices;
struct vx_diags;
int kind_job_check_prices(const struct stack *st, const struct prices *p, struct vx_diags *out);

/*
 * The most attempts attempts of j's run can cost, the first on rung (or,
 * first_moves, where a capacity failure on rung sends it: one further down,
 * or with returnAfter perhaps rung 0):
 * per attempt, the priciest rung it may still run on (rate x that rung's
 * timeout). A capacity failure listed in resubmit.on moves a run one rung
 * down, and with resubmit.returnAfter back to rung 0, so attempt i may be on
 * any rung from rung (0 with returnAfter) to rung + i. -1 when a rung's price
 * is unknown, with *why (owned, when why is not NULL and *why was NULL)
 * naming what the table lacks, or left NULL.
 */
double kind_job_attempts_most(const struct stack_job *j, int64_t rung, int first_moves, int64_t attempts,
			      const struct prices *p, char **why);

/* The job named name; NULL when not declared (a linear search in a stack built by hand). */
const struct stack_job *stack_find_job(const struct stack *st, const char *name);

#include "reconcile/plan.h"
#include "util/err.h"

struct live_jobs;
struct stack_job;
struct state_policy;

/* What removing a job's declaration does to its active run (`onRemove`);
 * the values are the state's (STATE_ON_REMOVE_*). */
enum plan_on_remove {
	PLAN_ON_REMOVE_DEFAULT = 0, /* cancel a run vx started, forget one imported without vx's labels */
	PLAN_ON_REMOVE_CANCEL,
	PLAN_ON_REMOVE_FORGET,
};

enum plan_on_change {
	PLAN_ON_CHANGE_REPLACE = 0,
	PLAN_ON_CHANGE_AFTER_FINISH,
	PLAN_ON_CHANGE_IGNORE,
};

/*
 * What a rung of a fallback ladder is, so a run is known by its rung's
 * content rather than its position: editing the ladder (removing or
 * reordering rungs) then moves no run whose rung is still on it.
 */
struct plan_rung_id {
	const char *region;
	const char *scheduling;	 /* STANDARD, SPOT, FLEX_START */
	const char *machine;	 /* the accelerator pools' machine type (else the first pool's) */
	const char *reservation; /* the reservation it uses, or NULL */
};

/* A declared job. */
struct plan_decl {
	const char *address; /* "job.NAME" */
	const char *name;
	const char *project; /* the project id runs are created in */
	const char *region;
	const char *spec_hash;		/* full lowercase hex */
	const char *spec_json;		/* redacted canonical spec, for "spec changed: <paths>"; may be NULL */
	const char *shape;		/* "a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START" */
	int64_t run;			/* >= 1 */
	const char *const *resubmit_on; /* failure class names */
	size_t nresubmit_on;
	int64_t max_attempts; /* >= 1 */
	/* The fallback ladder (docs/format.md): rung k runs in rung_regions[k]
	 * with shape rung_shapes[k]; rung 0 is the declared job (region, shape).
	 * nrungs 0 or 1: no ladder. */
	const char *const *rung_regions;
	const char *const *rung_shapes;
	size_t nrungs;
	/* What each rung is: rung_ids[k] for k < nrungs (at least [0], the
	 * declared job, when there is no ladder); NULL: unknown, runs are then
	 * matched to rungs by position. */
	const struct plan_rung_id *rung_ids;
	enum plan_on_change on_change;
	int protect;
	enum plan_on_remove on_remove;
	/* resubmit.delay: the first wait after a refused create (at least a
	 * minute), doubling per refusal in a row, at most 15 minutes. */
	int64_t retry_delay_ms;
	/* What decides the watcher's actions besides the spec and run (resubmit
	 * policy, ladder, after:, the sweep's limits), as the apply records it
	 * (reconcile/policy.h); NULL: not compared. */
	const struct state_policy *policy;
};

/*
 * The creates the server refused (permission, invalid argument, failed
 * precondition, quota) since the record's last run was made: the state
 * records each in the history, with no resource. Each counts as an attempt.
 */
struct plan_refusal {
	size_t n;	       /* refusals in a row of (spec_hash, run); 0: none */
	const char *spec_hash; /* of the last one */
	int64_t run;
	int64_t attempt;     /* the attempt the last one was */
	int64_t at_ms;	     /* when the last one was refused */
	const char *cls;     /* "refused" or "quota" */
	const char *message; /* the server's message, or NULL */
	/* Of the history's attempts of (spec_hash, run): the refusals of class
	 * cls (the last one included), and the first create (0: unknown), for
	 * resubmit.on's per-class budgets and resubmit.within. */
	int64_t of_class;
	int64_t first_ms;
};

/* A run vx knows about, from the state. */
struct plan_run {
	const char *name;    /* resource name */
	const char *project; /* the project id it was created in; NULL: unknown (older states) */
	const char *region;
	const char *state; /* last seen JobState name */
	int error_code;
	const char *error_message;
	int64_t attempt;
	int64_t rung; /* the ladder rung it ran on (0 without one) */
	/* What that rung was (its region is .region above); scheduling NULL
	 * when not recorded (a state from before, or a job without a ladder):
	 * the rung is then known by position alone. */
	struct plan_rung_id rung_id;
	int64_t created_ms; /* when vx created it, 0 = unknown */
	int64_t started_ms; /* its startTime as last seen, 0 = never seen started */
	/* When it ended as Google says (the live job's endTime) when the plan
	 * lists it, else as last seen; 0: not ended. The cycle that first sees
	 * the end counts resubmit.delay from it and announces it. */
	int64_t end_ms;
	int cancelled_by_vx;
	/* Its failure class as the state last recorded it, or NULL: a run
	 * classed window-ended stays so after its booking is gone. */
	const char *failure;
	/* The scheduling.timeout it was created with (its rung's), 0: not
	 * recorded (the record's spec then says it). */
	int64_t timeout_ms;
};

/* A state record. */
struct plan_record {
	const char *address;
	const char *spec_hash;
	const char *spec_json; /* redacted spec of the current run; may be NULL */
	int64_t run;
	int protect;
	enum plan_on_remove on_remove; /* as the declaration said at the last apply */
	/* The current run was imported (vx import) and carries no vx labels:
	 * a job made by hand, which vx did not start. */
	int unlabelled_import;
	const struct plan_run *current; /* NULL: no current run */
	const char *const *known;	/* resource names of every earlier run (history) */
	size_t nknown;
	struct plan_refusal refusal;
	/* Of the record's earlier runs (history) of its spec and run: how many
	 * ended with each failure class (index: the bit of enum stack_fail), for
	 * resubmit.on's per-class budgets; and when the first run of that spec
	 * and run, those or the current one, was created (0: unknown), for
	 * resubmit.within. */
	int64_t fails[STACK_FAIL_NCLASSES];
	int64_t first_create_ms;
	/* When the run of that spec and run left rung 0: the create time of its
	 * first attempt on a rung >= 1 after its last attempt on rung 0 (0: it
	 * has not left rung 0, or the time is unknown), for resubmit.returnAfter. */
	int64_t left_rung0_ms;
	/* The policy the apply that wrote the record applied (plan_decl.policy);
	 * NULL: none recorded (a record from an older vx). */
	const struct state_policy *applied;
	const void *user;
};

struct plan_input {
	const char *stack;
	/* The short identity of this stack's state (plan_lineage_label): a live
	 * job is this stack's only when its vx-lineage label says so, or when
	 * the state knows it by name. */
	const char *lineage;
	const struct plan_decl *decls;
	size_t ndecls;
	const struct plan_record *records;
	size_t nrecords;
	/* Every live job labelled vx-stack=<stack> in the places in use (each
	 * declared job's project and region, and each current run's); NULL
	 * when refresh is off (then the state's last seen states are used). */
	const struct live_jobs *live;
	const char *const *targets; /* only these addresses, when ntargets > 0 */
	size_t ntargets;
	const char *const *replaces; /* force a new run of these */
	size_t nreplaces;
	/* No state was loaded (serial 0): a live job of this stack that belongs
	 * to another state and carries an address this plan would create is
	 * then most likely this stack's own, behind a state that was not found. */
	int state_is_new;
	/* Why a state may not have been found and how to get it back, in words
	 * (the backend's): part of that plan error. NULL: a generic sentence. */
	const char *state_lost_hint;
	/* -allow-other-lineage: create even beside such live jobs (a warning). */
	int allow_other_lineage;
	/* The listed jobs `vx state rm` released (not in live); NULL: none. A
	 * create of a job beside an active one of the same address is a plan
	 * error, or with allow_released (-allow-released) a warning. */
	const struct live_jobs *released;
	/* What the refresh read of every kind (NULL: refresh off): the
	 * bookings whose windows end runs (struct kind's window_of). */
	const struct live_set *kinds;
	int allow_released;
	/* Now, for the backoff after a refused create; 0: unknown (no backoff). */
	int64_t now_ms;
};

struct job_action {
	char *old_hash;	     /* spec hash of the current run, or NULL */
	char *new_hash;	     /* spec hash declared, or NULL */
	char *failure_class; /* of the previous run, or NULL */
	char *cancel_name;   /* the live job to cancel (cancel, replace) */
	char *adopt_name;    /* the live job to adopt (adopt) */
	char *live_state;    /* current run's state, or NULL */
	int64_t run;	     /* of the run created/adopted */
	int64_t attempt;     /* of the run created/adopted */
	int64_t rung;	     /* the ladder rung of the run created/adopted (0: the declared job) */
	int64_t max_attempts;
	const struct plan_decl *decl;	  /* borrowed from the input; NULL when not declared */
	const struct plan_record *record; /* borrowed from the input; NULL when not in state;
					   * NULL too for a cancel of an untracked job, which
					   * must never touch any record */
	int error_code;			  /* the failed run's error code (google.rpc.Code), 0 if none */
	char *error_message;		  /* the failed run's error message, or NULL */
	int64_t adopt_create_ms;	  /* adopt: the live job's createTime, 0 if unknown */
	int64_t not_before_ms;		  /* a noop waiting for a refused create's backoff: when it ends; else 0 */
	int refused;			  /* a noop for a refused create that no apply asks again without
				* -replace (not in resubmit.on, or the budget spent) */
	int after_rerun;		  /* a rerun because a dependency (after:) has a new run: the applied
				* declaration asks for it (reconcile/sweep_plan.c) */
	/* A create of a job in a booking's window (stack_job.booking): the full name of the
	 * reservation Google delivered, which it runs on (reconcile/kind_job_window.c); else NULL. */
	char *window_reservation;
	/* resubmit.within: when it closes for the run this action resubmits, or
	 * closed for the failed run it gives up on (Unix ms); 0: no window. The
	 * JSON plan's after.deadline. */
	int64_t deadline_ms;
	/* resubmit.on's per-class budgets (its map form), for the JSON plan's
	 * budgets: budget_allowed[c] the resubmissions a failure of class bit c
	 * may have, -1 for a class without one (all -1 without the map form:
	 * has_budgets 0); budget_used[c] how many of them the run has had, the
	 * one this action makes included (a new run starts with none). */
	int has_budgets;
	int64_t budget_allowed[STACK_FAIL_NCLASSES];
	int64_t budget_used[STACK_FAIL_NCLASSES];
	/* resubmit.maxQueued: how long the run this action cancels (failure_class
	 * queue-timeout) was queued or pending without starting; 0 otherwise.
	 * The JSON plan's before.queued_seconds. */
	int64_t queued_ms;
};

/*
 * The job fields of a: its payload when it has one (an action of kind_job),
 * else all zero (an action of another kind has none of a job's fields).
 */
const struct job_action *job_action_of(const struct plan_action *a);
/* The stack's job (struct stack_job) a is of when a is a job's action with a declaration, else
 * NULL (an action of another kind, whose kdecl is its own kind's). */
const struct stack_job *job_action_job(const struct plan_action *a);
/* The job fields of a, to write: a must be an action of kind_job (its payload made); NULL
 * when a is NULL (an action that could not be added). */
struct job_action *job_action_mut(struct plan_action *a);
/*
 * Holds a job's action a back: it becomes a wait with reason why (owned),
 * and a replace held back cancels nothing. VX_ENOMEM (a unchanged) when why
 * is NULL.
 */
int job_action_hold(struct plan *p, struct plan_action *a, char *why) VX_WUR;

/* Builds the plan. Returns 0 (check out->errors.n for plan errors) or VX_ENOMEM. */
int plan_build(struct plan *out, const struct plan_input *in, struct vx_err *err) VX_WUR;
/*
 * The rung the attempt after a failure of class cls on rung runs on, for a
 * ladder of nrungs rungs (the declared job included): one rung down after a
 * class that means no capacity (stockout, wait-timeout, preempted), the same
 * rung after any other, and never past the last.
 */
int64_t plan_next_rung(int64_t rung, const char *cls, size_t nrungs);
/* Fills a's budgets (job_action.budget_*) from d's per-class budgets and rec's failures. */
void job_note_budgets(struct plan_action *a, const struct plan_decl *d, const struct plan_record *rec);

/* The kind's row of kind_table (reconcile/kind.h). */
extern const struct kind kind_job;
/* The jobs the job kind's refresh listed into ls, but those `vx state rm` let go of (vx watch's
 * counts, apply -wait); empty when none were listed. */
const struct live_jobs *kind_job_listed(const struct live_store *ls);

#endif
