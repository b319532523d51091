#ifndef VX_WORKFLOW_REPORT_H
#define VX_WORKFLOW_REPORT_H

/*
 * vx report's workflow: finds the stack in DIR, or every stack under it,
 * reads each one's state history (no lease, no write, no Google API but
 * the state's storage), loads the price table in force and builds the
 * report (reconcile/out/report.h). The report borrows from the histories kept
 * here: release it with report_session_release().
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/capacity.h"
#include "reconcile/out/report.h"
#include "state/backend.h"
#include "util/err.h"

struct vx_ctx;
struct workspace_events;
struct state_history_entry;

struct report_stack {
	char *name;
	char *dir;
	struct state_history_entry *h;
	size_t n;
	struct state_history_skips skips; /* the versions its history left out, to warn of */
};

struct budget;

struct report_session {
	struct report_stack *stacks;
	size_t nstacks;
	/* The stacks' budgets, of those that set one (workflow/budget.h); report.budgets borrows rbudgets. */
	struct budget *budgets;
	struct report_budget *rbudgets;
	size_t nbudgets;
	struct report_input in;
	struct prices prices;
	struct report report;
};

struct report_opts {
	const char *dir;          /* a stack directory, or a directory holding stacks */
	const char *since;        /* -since (NULL: 30d) */
	const char *until;        /* -until (NULL: now) */
	int64_t now_ms;           /* vx's clock (VX_NOW honoured by the caller) */
	const char *prices_file;  /* VX_PRICES, or NULL */
};

/*
 * Builds s->report. VX_EINVAL for a bad -since/-until (until not after
 * since) or a stack that does not load (its diagnostics to ev); VX_ENOTFOUND
 * when DIR holds no stack; the state backend's errors.
 */
int report_session_run(struct report_session *s, struct vx_ctx *ctx, const struct report_opts *o,
		       const struct workspace_events *ev, struct vx_err *err) VX_WUR;
void report_session_release(struct report_session *s);

/*
 * This stack's spend over the 30 days before now_ms: *usd, and
 * *preempted_share (0..1 of it on runs that were preempted). Borrows the
 * workspace's open backend and stack name.
 */
struct workspace;
struct capacity_report;
int report_recent_spend(const struct workspace *ws, const struct prices *p, int64_t now_ms, double *usd,
			double *preempted_share, struct vx_err *err) VX_WUR;
/* The same over [since_ms, now_ms): what a budget's period has spent (workflow/budget.h). */
int report_spend_window(const struct workspace *ws, const struct prices *p, int64_t since_ms, int64_t now_ms,
			double *usd, double *preempted_share, struct vx_err *err) VX_WUR;

/*
 * The markdown plan's line (owned, into *out): "last 30 days: $1,240 (18% on
 * preempted runs) · this plan: at most $312". Reading the history never fails
 * the plan: the line then says the spend is unknown and why. cap is the
 * plan's cost (NULL: the stack has no GPU job or reservation). VX_ENOMEM only.
 */
int report_spend_line(char **out, const struct workspace *ws, const struct prices *p,
		      const struct capacity_report *cap, int64_t now_ms) VX_WUR;

#endif
