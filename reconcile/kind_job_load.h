#ifndef VX_RECONCILE_KIND_JOB_LOAD_H
#define VX_RECONCILE_KIND_JOB_LOAD_H

/*
 * What the job kind's loader files share (kind_job_load.c: the CustomJob
 * reader and the kind's load_* slots; sweep.c: matrix:, ${{ }} and after:),
 * and nothing else includes.
 */

#include <stddef.h>

#include "reconcile/kind_job.h"
#include "reconcile/stack_loader.h"

#define STACK_MAX_ATTEMPTS 100
#define STACK_MAX_DISPLAY_NAME 128

/* Reads one job document into j; -1 on an allocation failure (recorded), 0 otherwise (problems
 * reported). seen NULL: a sweep's run, whose name the sweep checked. */
int stack_kinds_read_job(struct stack_job *j, struct loader *L, const struct ynode *doc,
			 const struct stack *st, const struct spec_env *env_base, struct seen *seen,
			 size_t *nseen);
void stack_job_release(struct stack_job *j);
/* The job kind's slot of st, and its more (made the first time; NULL when out of memory). */
struct stack_kind_decls *stack_job_slot(struct stack *st);
struct stack_job_more *stack_job_more(struct stack *st);
/* sweep.c: a CustomJob document with `matrix:`, each combination read by
 * stack_kinds_read_job into the jobs (grown as needed, with room for spare more) and the sweep into
 * the sweeps. -1 on an allocation failure (recorded), 0 otherwise. */
int stack_sweep_read(struct stack *st, struct loader *L, const struct ynode *doc,
		     const struct spec_env *env, struct seen *seen, size_t *nseen, size_t spare);
/* sweep.c: whether a document holds a ${{ }} expression anywhere. */
int stack_doc_has_expr(const struct ynode *doc);
/* sweep.c: a job without a matrix whose strings use ${{ jobs.NAME.* }}, read
 * into the next of the jobs with the values of the jobs already read. */
int stack_expr_read(struct stack *st, struct loader *L, const struct ynode *doc,
		    const struct spec_env *env, struct seen *seen, size_t *nseen);
/* sweep.c: the order to read the n job documents in, so each comes after the
 * jobs its after: names (order gets n indexes). Checks every after: item's
 * shape and name and reports cycles, at the item or the after: key. */
int stack_after_order(struct loader *L, const struct ynode *const *docs, size_t n, size_t *order);
/* sweep.c: every after: slice (job.NAME[k=v]) names at least one run. */
void stack_after_check(struct loader *L, const struct stack *st, const struct ynode *const *docs, size_t n);

/*
 * kind_job_window.c: a job whose reservation: (at) names the FutureReservation f.
 * job_window_refused reports what such a job may not have (a region without
 * f's zone, FLEX_START or SPOT, a ladder): 1 when it reported one, else 0.
 * job_window_check, once j's spec is checked, reports each worker pool with
 * GPUs that is not the booked shape and more VMs than booked, and warns of a
 * timeout longer than a calendar window.
 */
struct stack_future;
int job_window_refused(struct loader *L, const struct ynode *doc, const struct ynode *spec,
		       const struct stack_future *f, const struct ynode *at, const char *region);
void job_window_check(struct loader *L, const struct stack_job *j, const struct ynode *spec,
		      const struct stack_future *f, const struct ynode *at);
/* The reservation name a job in f's window declares: projects/P/zones/Z/reservations/NAME. Caller frees. */
char *job_window_planned_name(const char *project, const struct stack_future *f);

/* kind_job_load.c: the row's loader slots (struct kind), for kind_job.c's row. */
/*
 * reconcile/kind_job_policy.c: the `kind: Policy` rules over one job (its
 * spec and each rung, read from doc), checked as it is read; over the GPUs
 * of the stack's jobs active at once, once all are read; the row's
 * check_prices (kind_job_check_prices). Nothing to do when the stack has no Policy.
 */
struct prices;
void kind_job_policy_check(struct loader *L, const struct stack *st, const struct stack_job *j,
			   const struct ynode *doc);
void kind_job_policy_active(struct loader *L, const struct stack *st);
int kind_job_policy_rates(const struct stack *st, const struct prices *prices, struct vx_diags *diags,
			  struct policy_rules *held);

int kind_job_load_alloc(struct load_pass *B, size_t n);
int kind_job_load_prepare(struct load_pass *B);
int kind_job_load_read(struct load_pass *B, const struct ynode *doc);
void kind_job_load_finish(struct load_pass *B);
int kind_job_decl_hash(struct stack *st);
int kind_job_load_index(struct stack *st);
int kind_job_decl_salt(struct stack *st, const char *salt, size_t *nsalted, struct vx_err *err);
void kind_job_decl_release(struct stack_kind_decls *slot);

#endif
