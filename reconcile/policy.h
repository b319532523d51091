#ifndef VX_RECONCILE_POLICY_H
#define VX_RECONCILE_POLICY_H

/*
 * The applied policy of a job (struct state_policy, state/state.h): what
 * decides vx watch's actions for it besides its spec and run, namely its
 * resubmit policy (resubmit.on, maxAttempts, delay, the fallback ladder),
 * its after: list and, for a sweep's run, the sweep's maxParallel and
 * maxFailed. The apply records it on the job's record; the plan shows a
 * difference as an update, and the watcher acts only when the declaration
 * is what the record says was applied (docs/watch.md).
 */

#include "util/err.h"

struct stack;
struct stack_job;
struct state_policy;
struct state_record;
struct vx_buf;

/* What j (a job of st) declares. out is overwritten. 0 or VX_ENOMEM. */
int policy_of_job(struct state_policy *out, const struct stack *st, const struct stack_job *j) VX_WUR;

/* Records what j declares as r's applied policy. 0 or VX_ENOMEM. */
int policy_record(struct state_record *r, const struct stack *st, const struct stack_job *j) VX_WUR;

/*
 * The fields of declared that differ from applied, in words appended to
 * out: "resubmit.maxAttempts 2 → 10, maxParallel 1 → 6" (plan 0, as the
 * watcher tells it) or "resubmit.maxAttempts: 2 -> 10; maxParallel: 1 -> 6"
 * (plan 1, as a plan's update reason). Returns 1 when one differs, 0 when
 * none does, VX_ENOMEM.
 */
int policy_diff(struct vx_buf *out, const struct state_policy *applied, const struct state_policy *declared,
		int plan) VX_WUR;

#endif
