#ifndef VX_WORKFLOW_PLANNING_H
#define VX_WORKFLOW_PLANNING_H

/*
 * The part of plan and apply (and of every reconcile cycle) that reads the
 * world and plans: the -target and -replace checks, the refresh, the
 * planner, and the capacity report (quota limits and prices). Nothing here
 * prints: the plan, its errors and warnings are in struct planning for the
 * caller to render.
 */

#include <stddef.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/planner.h"
#include "reconcile/out/render.h"
#include "reconcile/provider_quota.h"
#include "util/err.h"
#include "workflow/budget.h"

struct ci;
struct vx_ctx;
struct workspace;
struct workspace_events;

/* What the caller asks for. The arrays are the caller's (planning_opts_release
 * frees them, not the strings): planning only borrows them, and the plan
 * (pl->header.targets) keeps pointing at them. */
struct planning_opts {
	const char **targets;
	size_t ntargets;
	const char **replaces;
	size_t nreplaces;
	int refresh;
	int fail_on_quota;       /* -fail-on=quota: a job that does not fit is a plan error */
	int fail_on_budget;	 /* -fail-on=budget: a plan over the Stack's budget is a plan error */
	int budget_holds;	 /* vx watch: the budget applied holds what would start past it
				  * (workflow/watch.c): no budget warning or error in the plan */
	int allow_other_lineage; /* -allow-other-lineage */
	int allow_released;      /* -allow-released */
	int verbose;             /* -verbose: every run of a sweep shown */
	int64_t now_ms;          /* the time the plan shows ages against; 0: the context's clock */
};

struct planning {
	struct live_set live;    /* what planner borrows of the workspace's live store */
	struct planner planner;
	struct render_header header;
	struct live_quota_limits limits;  /* Cloud Quotas limits, read once per service */
	int limits_read;
	struct prices prices;
	struct capacity_report capacity;
	char serial_buf[24];
	char *spend_line;        /* header.spend_line's text, owned (planning_spend_line) */
	struct budget budget;	 /* the Stack's budget against the plan (header.budget), when it has one */
};

/* Whether the plan would take the Stack's budget over (vxapply refuses it without -allow-over-budget). */
int planning_over_budget(const struct planning *pl);

/*
 * The markdown plan's spend line (this stack's last 30 days from the state's
 * history, and the plan's at-most figure: workflow/report.h), set as
 * pl->header.spend_line for every markdown plan made from pl afterwards: the
 * one printed, the one a saved plan keeps for vx show, GitHub's step summary.
 * Reading the history may fail: the line then says why. now_ms is vx's clock
 * (0: the system's). 0, or VX_ENOMEM.
 */
int planning_spend_line(struct planning *pl, const struct workspace *ws, int64_t now_ms) VX_WUR;

/* Adds addr to o->targets (or o->replaces): VX_ENOMEM or 0. */
int planning_opts_add(const char ***arr, size_t *n, const char *addr) VX_WUR;
void planning_opts_release(struct planning_opts *o);

/*
 * Salts ws's stack (workspace_salt), checks o's addresses, refreshes
 * (unless o->refresh is 0) and plans ws's stack against its loaded state
 * (workspace_load_state first). pl is overwritten; it borrows from ws and o,
 * which must outlive it. A plan with errors is a success here: see
 * pl->planner.plan.errors. VX_EINVAL for an address that names nothing (the
 * message suggests the nearest), else the refresh's or the planner's error.
 * planning_release(pl) after success or failure.
 */
int planning_run(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
		 struct vx_err *err) VX_WUR;
/*
 * A plan's whole cycle up to the plan, as vxplan runs it: opens the stack in
 * dir into ws (workspace_open_ahead when o->refresh, so the state and the
 * lists are read while the stack loads), loads the state and runs
 * planning_run. ws and pl are overwritten; workspace_close(ws) and
 * planning_release(pl) after success or failure.
 */
int planning_run_dir(struct planning *pl, struct workspace *ws, struct vx_ctx *ctx, const char *dir,
		     const struct planning_opts *o, const struct workspace_events *ev,
		     struct vx_err *err) VX_WUR;
int planning_has_changes(const struct planning *pl);
/* Whether the plan holds actions back (waits), which an apply records as
 * applied even when nothing changes (applying_run, silent then). */
int planning_has_waits(const struct planning *pl);
/*
 * Writes the plan to path as a saved plan (docs/plan-json.md) that
 * `vxapply path` applies exactly: with the state's salt while it is not
 * committed, and who planned it and in which pull request (ci). VX_EIO
 * "cannot write PATH" when it cannot.
 */
int planning_save(struct planning *pl, const struct workspace *ws, const struct ci *ci, const char *path,
		  struct vx_err *err) VX_WUR;
void planning_release(struct planning *pl);

#endif
