/*
 * The Stack's budget against a plan: workflow/budget.h.
 */
#include "workflow/budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/plan.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "workflow/report.h"
#include "workflow/workspace.h"
#include "util/banned.h"

#define DAY_MS ((int64_t)86400000)

/* The first instant (UTC) of the calendar month holding now_ms, moved by months (0 or 1). */
static int64_t month_start(int64_t now_ms, int months)
{
	time_t t = (time_t)(now_ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		return now_ms;
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mon += months;
	return (int64_t)timegm(&tm) * 1000;
}

int64_t budget_period_start(const struct stack_budget *b, int64_t now_ms)
{
	return b->days ? now_ms - b->days * DAY_MS : month_start(now_ms, 0);
}

int64_t budget_period_end(const struct stack_budget *b, int64_t now_ms)
{
	return b->days ? now_ms + b->days * DAY_MS : month_start(now_ms, 1);
}

static double round_cents(double x)
{
	return round(x * 100.0) / 100.0;
}

int budget_money(struct vx_buf *b, double usd)
{
	return capacity_money(b, "USD", usd, usd >= 100 ? 0 : 2);
}

/*
 * The most the plan adds within the period: the runs it starts (rate x
 * timeout x attempts left, the plan's max_total), the bookings it makes for
 * their whole windows, and the hourly rate of the reservations it makes or
 * grows until the period ends (held capacity is paid used or not, as vx
 * report counts it). -1 when a price is unknown.
 */
static double plan_at_most(const struct stack_budget *b, const struct capacity_report *cap, int64_t now_ms)
{
	double held_hours = (double)(budget_period_end(b, now_ms) - now_ms) / 3600000.0;

	if (!cap)
		return 0;
	if (!cap->delta_known)
		return -1;
	return round_cents(cap->max_total + cap->bookings_total +
			   (cap->reservations_per_hour > 0 ? cap->reservations_per_hour * held_hours : 0));
}

/* Whether a starts spending no reviewer approved in this plan (its kind's budget_unreviewed). */
static int unreviewed(const struct plan_action *a)
{
	return a->kind_of && a->kind_of->budget_unreviewed && a->kind_of->budget_hold &&
	       a->kind_of->budget_unreviewed(a);
}

/*
 * The most the reviewed part of plan p adds (plan_at_most without the
 * unreviewed starts); -1 when a price of it is unknown. delta_known 0 with
 * no unknown start of its own: what else the plan changes (a reservation)
 * is unknown.
 */
static double reviewed_at_most(const struct stack_budget *b, const struct plan *p, const struct capacity_report *cap,
			       int64_t now_ms)
{
	double held_hours = (double)(budget_period_end(b, now_ms) - now_ms) / 3600000.0;
	double most = cap->bookings_total + (cap->reservations_per_hour > 0 ? cap->reservations_per_hour * held_hours : 0);
	int auto_unknown = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct capacity_cost *c = capacity_cost_of(cap, p->actions[i].address);

		if (!c || !c->starts)
			continue;
		if (unreviewed(&p->actions[i]))
			auto_unknown |= !c->known;
		else if (!c->known)
			return -1;
		else
			most += c->usd_max;
	}
	return cap->delta_known || auto_unknown ? round_cents(most) : -1;
}

/* "held: budget, $0.90 left", or why it is not known. */
static char *hold_reason(double left, int spent_known, int reviewed_known)
{
	struct vx_buf b = VX_BUF_INIT;
	char *why;

	if (!spent_known)
		return vx_strdup("held: budget, the period's spend is unknown");
	if (!reviewed_known)
		return vx_strdup("held: budget, this plan's cost is unknown (a price is not in the table)");
	if (budget_money(&b, left > 0 ? round_cents(left) : 0) < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	why = vx_asprintf("held: budget, %s left", vx_buf_str(&b));
	vx_buf_release(&b);
	return why;
}

/*
 * A sweep's run the budget held rather than created: its sweep's block
 * counts it waiting and says why (the first reason), as for maxParallel.
 */
static int sweep_run_held(struct plan *p, const struct plan_action *a)
{
	for (size_t i = 0; i < p->nsweeps; i++) {
		struct plan_sweep *s = &p->sweeps[i];
		size_t n = strlen(s->address);

		if (strncmp(a->address, s->address, n) || a->address[n] != '[')
			continue;
		s->creates -= s->creates > 0;
		s->now -= s->now > 0;
		s->waiting++;
		if (!s->held && a->reason && !(s->held = vx_strdup(a->reason)))
			return VX_ENOMEM;
		return 0;
	}
	return 0;
}

int budget_hold_unreviewed(size_t *held, struct plan *p, const struct capacity_report *cap, const struct workspace *ws,
			   const struct prices *prices, int64_t now_ms)
{
	const struct stack_budget *b = &ws->st->budget;
	double spent = 0, reviewed = reviewed_at_most(b, p, cap, now_ms), left, adds = 0;
	int rc = budget_spent(&spent, ws, b, prices, now_ms), created;

	*held = 0;
	if (rc < -1)
		return rc;
	left = b->usd - spent - reviewed;
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct capacity_cost *c = capacity_cost_of(cap, a->address);

		if (!c || !c->starts || !unreviewed(a))
			continue;
		/* To the cent: a start that uses the last cent left still fits. */
		if (rc == 0 && reviewed >= 0 && c->known && round_cents(adds + c->usd_max) <= round_cents(left)) {
			adds += c->usd_max;
			continue;
		}
		created = a->op == PLAN_CREATE;
		if (a->kind_of->budget_hold(p, a, hold_reason(left - adds, rc == 0, reviewed >= 0)) < 0 ||
		    (created && sweep_run_held(p, a) < 0))
			return VX_ENOMEM;
		a->held = 1;
		(*held)++;
	}
	return 0;
}

/* "(30 d)" or "(this month)". */
static int period_text(struct vx_buf *b, const struct stack_budget *bu)
{
	return bu->days ? vx_buf_printf(b, " (%lld d)", (long long)bu->days) : vx_buf_adds(b, " (this month)");
}

/* The line's last part, after "this plan at most": what is left, or by how much it would exceed. */
static int line_outcome(struct vx_buf *b, const struct render_budget *r)
{
	int rc;

	if (!r->spent_known || !r->at_most_known)
		return 0;
	if (r->would_exceed || r->exceed_by > 0) {
		/* A plan that adds nothing exceeds nothing: the period is over already. */
		rc = vx_buf_adds(b, r->would_exceed ? ": would exceed by " : ": the period is already over by ");
		return rc ? rc : budget_money(b, r->exceed_by);
	}
	rc = vx_buf_adds(b, ": ");
	if (rc == 0)
		rc = budget_money(b, round_cents(r->limit - r->spent - r->at_most) + 0.0); /* never "-0.00" */
	return rc ? rc : vx_buf_adds(b, " left after it");
}

/* "budget: $12,400 of $20,000 spent (30 d); this plan at most $9,100: would exceed by $1,500". */
static int line_build(struct vx_buf *b, const struct stack_budget *bu, const struct render_budget *r,
		      const char *why)
{
	int rc = vx_buf_adds(b, "budget: ");

	if (rc == 0 && r->spent_known && (rc = budget_money(b, r->spent)) == 0)
		rc = vx_buf_adds(b, " of ");
	if (rc == 0)
		rc = budget_money(b, r->limit);
	if (rc == 0 && r->spent_known)
		rc = vx_buf_adds(b, " spent");
	if (rc == 0)
		rc = period_text(b, bu);
	if (rc == 0 && !r->spent_known)
		rc = vx_buf_printf(b, ", spend unknown (%s)", why);
	if (rc == 0)
		rc = vx_buf_adds(b, "; this plan at most ");
	if (rc == 0 && r->at_most_known)
		rc = budget_money(b, r->at_most);
	else if (rc == 0)
		rc = vx_buf_adds(b, "unknown (a price is not in the table)");
	return rc ? rc : line_outcome(b, r);
}

/* The period's spend into r (spent_known 0 and *why set when the history or the prices cannot be read). */
static int spent_read(struct render_budget *r, char **why, const struct workspace *ws, const struct stack_budget *bu,
		      const struct prices *p, int64_t now_ms)
{
	struct vx_err err = VX_ERR_INIT;
	struct prices own;
	double share = 0;
	int rc = 0, r_load = 0;

	memset(&own, 0, sizeof(own));
	/* A plan that prices nothing loads no table: the history's runs still cost. */
	if (!p || !p->n) {
		r_load = prices_load_in_force(&own, ws->st, ws->ctx, &err);
		p = &own;
	}
	if (r_load == 0 &&
	    report_spend_window(ws, p, budget_period_start(bu, now_ms), now_ms, &r->spent, &share, &err) == 0) {
		r->spent_known = 1;
		r->spent = round_cents(r->spent);
	} else if (err.code == VX_ENOMEM) {
		rc = VX_ENOMEM;
	} else if (!(*why = vx_asprintf("%s: %s", r_load < 0 ? "reading the price table" : "reading the state's history",
					vx_err_msg(&err)))) {
		rc = VX_ENOMEM;
	}
	vx_err_release(&err);
	prices_release(&own);
	return rc;
}

int budget_build(struct budget *out, const struct workspace *ws, const struct prices *p,
		 const struct capacity_report *cap, int64_t now_ms)
{
	const struct stack_budget *bu = &ws->st->budget;
	struct render_budget *r = &out->r;
	struct vx_buf b = VX_BUF_INIT;
	char *why = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	r->period = stack_budget_period(bu, out->period, sizeof(out->period));
	r->limit = bu->usd;
	r->at_most = plan_at_most(bu, cap, now_ms);
	r->at_most_known = r->at_most >= 0;
	if ((rc = spent_read(r, &why, ws, bu, p, now_ms)) < 0)
		goto done;
	/* exceed_by: above 0, over the budget by it; else what is left is its negation. */
	if (r->spent_known && r->at_most_known)
		r->exceed_by = round_cents(r->spent + r->at_most - r->limit);
	r->would_exceed = r->spent_known && r->at_most_known && r->at_most > 0 && r->exceed_by > 0;
	if ((rc = line_build(&b, bu, r, why)) == 0 && !(out->line = vx_buf_detach(&b)))
		rc = VX_ENOMEM;
	r->line = out->line;
done:
	free(why);
	vx_buf_release(&b);
	return rc < 0 ? VX_ENOMEM : 0;
}

int budget_build_report(struct budget *out, const struct workspace *ws, const struct prices *p, int64_t now_ms)
{
	const struct stack_budget *bu = &ws->st->budget;
	struct render_budget *r = &out->r;
	struct vx_buf b = VX_BUF_INIT;
	char *why = NULL;
	double left;
	int rc;

	memset(out, 0, sizeof(*out));
	r->period = stack_budget_period(bu, out->period, sizeof(out->period));
	r->limit = bu->usd;
	if ((rc = spent_read(r, &why, ws, bu, p, now_ms)) < 0)
		goto done;
	left = round_cents(r->limit - r->spent) + 0.0;
	rc = vx_buf_adds(&b, "budget: ");
	if (rc == 0 && r->spent_known && (rc = budget_money(&b, r->spent)) == 0)
		rc = vx_buf_adds(&b, " of ");
	if (rc == 0 && (rc = budget_money(&b, r->limit)) == 0)
		rc = vx_buf_adds(&b, r->spent_known ? " spent" : "");
	if (rc == 0)
		rc = period_text(&b, bu);
	if (rc == 0 && !r->spent_known)
		rc = vx_buf_printf(&b, ", spend unknown (%s)", why);
	else if (rc == 0 && (rc = vx_buf_adds(&b, left < 0 ? ": over by " : ": ")) == 0 &&
		 (rc = budget_money(&b, left < 0 ? -left : left)) == 0 && left >= 0)
		rc = vx_buf_adds(&b, " left");
	if (rc == 0 && !(out->line = vx_buf_detach(&b)))
		rc = VX_ENOMEM;
	r->line = out->line;
done:
	free(why);
	vx_buf_release(&b);
	return rc < 0 ? VX_ENOMEM : 0;
}

int budget_spent(double *out, const struct workspace *ws, const struct stack_budget *b, const struct prices *p,
		 int64_t now_ms)
{
	struct render_budget r;
	char *why = NULL;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = spent_read(&r, &why, ws, b, p, now_ms);
	free(why);
	*out = r.spent;
	return rc < 0 ? rc : r.spent_known ? 0
					   : -1;
}

size_t budget_warnings(struct budget_warning out[BUDGET_MAX_WARN], const struct workspace *ws, const struct prices *p,
		       int64_t now_ms)
{
	const struct state *s = &ws->state;
	struct stack_budget b = { .set = 1 };
	struct vx_buf text = VX_BUF_INIT;
	int64_t span = s->budget_days * DAY_MS, until;
	char period[16];
	double spent;
	size_t n = 0;
	time_t start;
	struct tm tm;

	if (s->budget_cents <= 0 || !s->nbudget_warn_at)
		return 0;
	b.usd = (double)s->budget_cents / 100.0;
	b.days = s->budget_days;
	start = (time_t)(budget_period_start(&b, now_ms) / 1000);
	if (budget_spent(&spent, ws, &b, p, now_ms) != 0 || !gmtime_r(&start, &tm))
		return 0;
	if (b.days) {
		snprintf(period, sizeof(period), "%lld", (long long)(now_ms / span) % 1000000000LL);
		until = (now_ms / span + 1) * span;
	} else {
		snprintf(period, sizeof(period), "%04u-%02u", (unsigned)(tm.tm_year + 1900) % 10000u,
			 (unsigned)(tm.tm_mon + 1) % 100u);
		until = month_start(now_ms, 1);
	}
	for (size_t i = 0; i < s->nbudget_warn_at && n < BUDGET_MAX_WARN; i++) {
		if (spent * 100.0 < (double)s->budget_warn_at[i] * b.usd)
			continue;
		vx_buf_reset(&text);
		if (vx_buf_printf(&text, "spent %d%% of the budget: ", (int)floor(spent * 100.0 / b.usd)) < 0 ||
		    budget_money(&text, spent) < 0 || vx_buf_adds(&text, " of ") < 0 || budget_money(&text, b.usd) < 0)
			break;
		snprintf(out[n].state, sizeof(out[n].state), "%s", vx_buf_str(&text));
		snprintf(out[n].key, sizeof(out[n].key), "%u:%.15s", (unsigned)s->budget_warn_at[i] % 1000u, period);
		out[n++].until_ms = until;
	}
	vx_buf_release(&text);
	return n;
}

void budget_exhausted_key(char key[24], int64_t cents, int64_t attempt)
{
	snprintf(key, 24, "%lld:%lld", (long long)(cents % 1000000000000LL), (long long)(attempt % 1000000LL));
}

void budget_release(struct budget *b)
{
	free(b->line);
	memset(b, 0, sizeof(*b));
}
