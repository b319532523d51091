#ifndef VX_WORKFLOW_BUDGET_H
#define VX_WORKFLOW_BUDGET_H

/*
 * The Stack's budget against a plan (docs/budgets.md): what the budget's
 * period has spent, from the state's history exactly as vx report computes
 * it, and the most the plan can add (the runs it starts, the bookings it
 * makes for their windows, the reservations it makes or grows for the rest
 * of the period), in one line and in the JSON plan's figures.
 */

#include <stdint.h>

#include "reconcile/out/render.h"
#include "util/err.h"

struct capacity_report;
struct prices;
struct stack_budget;
struct workspace;

struct budget {
	struct render_budget r; /* r.line and r.period point into this struct */
	char period[16];
	char *line;
};

/* When the budget's period that holds now_ms began: now - N days, or the calendar month's first instant (UTC). */
int64_t budget_period_start(const struct stack_budget *b, int64_t now_ms);
/* When it ends for what starts now: now + N days, or the next month's first instant (UTC). */
int64_t budget_period_end(const struct stack_budget *b, int64_t now_ms);

/*
 * out's figures and line for ws's Stack budget (which must be set) against
 * the plan's cost cap (NULL: it prices nothing), with prices p (what the
 * history is priced with; NULL or empty: the table in force is loaded).
 * Reading the history never fails the plan: the line says the spend is
 * unknown and why. 0, or VX_ENOMEM.
 */
int budget_build(struct budget *out, const struct workspace *ws, const struct prices *p,
		 const struct capacity_report *cap, int64_t now_ms) VX_WUR;
void budget_release(struct budget *b);

/*
 * vx report's form, without a plan: "budget: $3.00 of $20.00 spent (30 d):
 * $17.00 left" (or "over by $X", or the spend unknown and why), over the
 * budget's period ending at now_ms. 0, or VX_ENOMEM.
 */
int budget_build_report(struct budget *out, const struct workspace *ws, const struct prices *p,
			int64_t now_ms) VX_WUR;

/*
 * What budget b's period ending at now_ms spent, from ws's state history
 * priced with p (NULL or empty: the table in force), into *out: 0; -1 when
 * the history or the prices cannot be read (unknown); VX_ENOMEM.
 */
int budget_spent(double *out, const struct workspace *ws, const struct stack_budget *b, const struct prices *p,
		 int64_t now_ms) VX_WUR;

/*
 * vxplan's and vxapply's holds (docs/budgets.md): in plan p, whose costs
 * are cap, each start no reviewer approved in it (a resubmission, a sweep
 * run that waited, an after: dependent: its kind's budget_unreviewed) that
 * would take the spend of ws's Stack budget (set) past it is made a wait,
 * "held: budget, $0.90 left", in plan order. What the reviewed part of the
 * plan adds counts first: the plan's budget line and vxapply's refusal
 * govern it. A spend or a cost that cannot be known holds too. *held: how
 * many. 0, or VX_ENOMEM.
 */
struct plan;
int budget_hold_unreviewed(size_t *held, struct plan *p, const struct capacity_report *cap, const struct workspace *ws,
			   const struct prices *prices, int64_t now_ms) VX_WUR;

/* A warnAt threshold the period's spend reached: a `budget` event. */
struct budget_warning {
	char state[96];	  /* "spent 40% of the budget: $0.60 of $1.50" */
	char key[24];	  /* the threshold and the period: "50:2026-01", "25:2043" */
	int64_t until_ms; /* the period's end: its delivery is remembered until then */
};

#define BUDGET_MAX_WARN 8

/*
 * The warnAt thresholds of the budget applied in ws's state that its
 * period's spend (priced with p, as budget_spent) has reached at now_ms,
 * into out: how many. Each is told once per period: the calendar month, or
 * the N-day span since the epoch that holds now_ms. 0 when none applies or
 * the spend is unknown.
 */
size_t budget_warnings(struct budget_warning out[BUDGET_MAX_WARN], const struct workspace *ws, const struct prices *p,
		       int64_t now_ms);

/* The key of one budget-exhausted episode: the budget's cents and the held run's attempt. */
void budget_exhausted_key(char key[24], int64_t cents, int64_t attempt);

/* "$12,400" ($100 and up in whole dollars, cents below, as the plan's spend line) into b. */
struct vx_buf;
int budget_money(struct vx_buf *b, double usd) VX_WUR;

#endif
