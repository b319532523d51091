#ifndef VX_RECONCILE_WAIT_H
#define VX_RECONCILE_WAIT_H

/*
 * `vxapply -wait`: follows the jobs an apply created until they run (or
 * finish), listing them again every poll. This module decides; the command
 * prints, through the hooks.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_ctx;
struct live_job;
struct live_jobs;

struct wait_hooks {
	/* Lists the jobs again; *out borrows the result until the next call. */
	int (*refresh)(void *ud, const struct live_jobs **out, struct vx_err *err);
	/* A job's state changed (lj: the live job, NULL when not listed). */
	void (*changed)(void *ud, const char *name, const struct live_job *lj, const char *state,
			int64_t seconds);
	/* Between polls: how many are still pending, running and finished. */
	void (*waiting)(void *ud, size_t pending, size_t running, size_t done, int64_t seconds);
	void *ud;
};

/*
 * Waits until every job in names[0..n) is RUNNING or has ended
 * (until_done: has ended), polling every poll_ms, or until an interrupt.
 * Returns 0 when none failed, 1 when one ended FAILED, CANCELLED or
 * EXPIRED, or a negative code when listing failed (err says why).
 */
int wait_jobs(struct vx_ctx *ctx, char *const *names, size_t n, int until_done, int64_t poll_ms,
	      const struct wait_hooks *h, struct vx_err *err) VX_WUR;

#endif
