#ifndef VX_RECONCILE_KIND_JOB_H
#define VX_RECONCILE_KIND_JOB_H

/*
 * The job kind's declarations (CustomJob documents, job.NAME) as the stack
 * loader reads them, and their accessors: for the job kind's files and the
 * code that truly works on jobs (the policy, sweeps, vx logs). They live in
 * the job kind's slot of struct stack (kind_job's place in kind_table).
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
	/* A run of a `matrix:` sweep: 1 + its index in stack_sweeps(), 0 for a job
	 * declared alone. Its name is "SWEEP[k=v,...]" (reconcile/sweep.h). */
	size_t sweep;
	char **after; /* after: the addresses it waits for ("job.train", a sweep or a slice) */
	size_t nafter;
	char *output_dir; /* spec.baseOutputDirectory.outputUriPrefix as sent, or NULL */
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
#define STACK_MAX_STUCK_AFTER_MS ((int64_t)30 * 24 * 3600 * 1000)

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

/* The job named name; NULL when not declared (a linear search in a stack built by hand). */
const struct stack_job *stack_find_job(const struct stack *st, const char *name);

#endif
