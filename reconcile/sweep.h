#ifndef VX_RECONCILE_SWEEP_H
#define VX_RECONCILE_SWEEP_H

/*
 * Sweeps: a CustomJob document with `matrix:` is one job per combination
 * (the loader's part is in reconcile/sweep.c). A run's name is the sweep's
 * with its combination, "lr-sweep[lr=3e-4,batch=64,seed=2]" (axes in the
 * order declared), so its address is "job.lr-sweep[lr=3e-4,batch=64,seed=2]"
 * everywhere an address is used: the state's key, -target, vx log, status
 * and the plan. These helpers read such addresses; none allocates.
 */

#include <stddef.h>

struct plan;
struct stack;

/* Whether address is one of the addresses target names: target itself, a
 * run of the sweep target ("job.lr-sweep" names every "job.lr-sweep[...]"),
 * or a run of a slice ("job.lr-sweep[seed=2]" names every run of lr-sweep
 * whose combination has seed=2, whatever its other values). */
int sweep_address_matches(const char *target, const char *address);

/*
 * Every address the stack declares, one a line, for shell completion of
 * -target and -replace: each job declared alone, each sweep, each slice of
 * one axis value ("job.lr-sweep[seed=2]", in the sweep's order, once), each
 * reservation and quota preference. A sweep's runs are left out: a sweep of
 * thousands would bury the rest. 0 or VX_ENOMEM.
 */
struct vx_buf;
int sweep_stack_addresses(struct vx_buf *out, const struct stack *st);

/* Whether address names a run of a sweep ("job.NAME[...]"). */
int sweep_address_is_run(const char *address);

/*
 * The vx-job label of a job named name (Google's label values: at most 63
 * lowercase letters, digits, "_" and "-"). A job declared alone keeps its
 * name. A sweep's run, whose name a label cannot hold, gets the sweep's name
 * (cut to 48 characters), "--" and 13 hex digits of the SHA-256 of its whole
 * name: two runs differ, and the loader refuses a job declared alone whose
 * name is such a label (stack.c), so a label leads back to one address.
 */
#define SWEEP_LABEL_MAX 63
void sweep_job_label(char out[SWEEP_LABEL_MAX + 1], const char *name);

/*
 * Holds a plan's sweeps to their limits, after every kind has planned:
 * with maxParallel, only as many of a sweep's new runs are created as the
 * runs already active (or started again) leave room for, in the sweep's
 * order; the others become PLAN_WAIT with a reason. Once maxFailed runs gave
 * up (failed and not resubmitted), none of its new runs is created. Runs
 * that are active, and resubmits, replaces and reruns of runs, are left
 * alone. Fills p->sweeps with each sweep's counts. 0 or VX_ENOMEM.
 */
int sweep_plan_limit(struct plan *p, const struct stack *st);

/*
 * Keeps, in order, the entries of a state history (state/backend.h) whose
 * address target names (sweep_address_matches), freeing the others: what
 * `vx log job.lr-sweep` shows. Returns how many are kept, at the front.
 */
struct state_history_entry;
size_t sweep_history_keep(struct state_history_entry *h, size_t n, const char *target);

/*
 * At apply: records each run the plan holds back (PLAN_WAIT) in the state,
 * with its spec and run but no current run, so the runs are applied
 * declarations: a later vxapply, or vx watch (which starts only what was
 * applied), creates them as others finish. Each such record, and that of a
 * job held back with a run of its own, takes the policy applied
 * (reconcile/policy.h). Nothing with apply_options.keep_policy (vx watch
 * without -sync). 0, or the state's error.
 */
struct applier;
struct vx_err;
int sweep_apply_waits(struct applier *a, struct vx_err *err);

/*
 * The follow record of a new run of j (a job with after:): the address and
 * resource name of the succeeded current run of each job in state that
 * j's after: names, set into *out (sorted by address). 0 or VX_ENOMEM.
 */
struct state;
struct stack_job;
struct vx_label;
int sweep_follows(const struct state *state, const struct stack_job *j, struct vx_label **out,
		  size_t *nout);

#endif
