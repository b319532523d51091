#ifndef VX_RECONCILE_FAILURE_H
#define VX_RECONCILE_FAILURE_H

/*
 * Why a run ended badly, from the job's state and error as Vertex reports
 * them. The class decides whether `resubmit.on` resubmits it.
 *
 *   stockout           FAILED, "Resources are insufficient in region: ..." (capacity)
 *   preempted          FAILED, spot VMs reclaimed
 *   wait-timeout       FAILED, FLEX_START waited past maxWaitDuration
 *   quota              FAILED, "The following quota metrics exceed quota limits: ..."
 *   user-error         FAILED, "The replica workerpool0-0 exited with a non-zero status of N"
 *   internal           FAILED for any other reason
 *   cancelled-outside  CANCELLED (or vanished) without vx having asked for it
 *
 * The texts matched are Google's own (seen in public reports of Vertex
 * failures); anything unrecognised is `internal`, never silently success.
 */

/* Returns the class name (static text), or NULL when the run did not fail
 * (succeeded, still active, or cancelled by vx). */
const char *failure_classify(const char *state, int error_code, const char *message,
			     int cancelled_by_vx);

#endif
