#include "reconcile/out/render.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcile/capacity.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/policy_rules.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/banned.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_GREEN "\033[32m"
#define C_RED "\033[31m"
#define C_YELLOW "\033[33m"
#define C_CYAN "\033[36m"

static const char *kind_color(enum plan_op k)
{
	switch (k) {
	case PLAN_CREATE: return C_GREEN;
	case PLAN_CANCEL: case PLAN_FORGET: return C_RED;
	case PLAN_REPLACE: return C_YELLOW;
	default: return C_CYAN;
	}
}

/* The action's symbol padded to three columns: printf pads bytes, and "↻"
 * is three bytes but one column, so count UTF-8 lead bytes instead. */
static int add_symbol(struct vx_buf *b, enum plan_op k)
{
	const char *sym = plan_op_symbol(k);
	size_t cols = vx_utf8_count(sym);
	int rc;

	rc = vx_buf_adds(b, sym);
	for (; rc == 0 && cols < 3; cols++)
		rc = vx_buf_addc(b, ' ');
	return rc;
}

static int is_change(const struct plan_action *a)
{
	return a->op != PLAN_NOOP;
}

/* "3 to create, 1 to replace" etc., in a fixed order. */
static int summary(struct vx_buf *b, const struct plan *p)
{
	/* A table laid out by hand: clang-format would put one entry a line. */
	/* clang-format off */
	static const struct { enum plan_op k; const char *word; } order[] = {
		{ PLAN_CREATE, "to create" }, { PLAN_ADOPT, "to adopt" },
		{ PLAN_REPLACE, "to replace" }, { PLAN_RERUN, "to rerun" },
		{ PLAN_RESUBMIT, "to resubmit" }, { PLAN_CANCEL, "to cancel" },
		{ PLAN_DELETE, "to delete" }, { PLAN_FORGET, "to forget" },
		{ PLAN_ABANDON, "to abandon" }, { PLAN_UPDATE, "to update" },
		{ PLAN_WAIT, "waiting" },
	};
	/* clang-format on */
	int rc = 0, first = 1;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && rc == 0; i++) {
		if (!p->counts[order[i].k])
			continue;
		rc = vx_buf_printf(b, "%s%zu %s", first ? "" : ", ", p->counts[order[i].k], order[i].word);
		first = 0;
	}
	if (rc == 0 && first)
		rc = vx_buf_adds(b, "no changes");
	return rc;
}

/* The most addresses the summary's refused count names. */
#define RENDER_REFUSED_NAMED 3

/*
 * Ends the summary line: " N refused: fix the cause, then vxapply -replace
 * ADDR" when creates the server refused wait for a person (they are no
 * change, so "no changes" alone would hide them), " N changed outside vx."
 * when something drifted.
 */
static size_t refused_count(const struct plan *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++)
		n += job_action_of(&p->actions[i])->refused;
	return n;
}

/* ". N unchanged.": the noops but the refused creates, which drift_count counts. */
static int unchanged_count(struct vx_buf *b, const struct plan *p)
{
	return vx_buf_printf(b, ". %zu unchanged.", p->counts[PLAN_NOOP] - refused_count(p));
}

static int drift_count(struct vx_buf *b, const struct plan *p)
{
	size_t refused = refused_count(p);
	int rc = 0;

	if (refused)
		rc = vx_buf_printf(b, " %zu refused: fix the cause, then vxapply", refused);
	for (size_t i = 0, k = 0; rc == 0 && refused && i < p->n; i++) {
		if (!job_action_of(&p->actions[i])->refused || k++ >= RENDER_REFUSED_NAMED)
			continue;
		rc = vx_buf_printf(b, " -replace %s", p->actions[i].address);
	}
	if (rc == 0 && refused > RENDER_REFUSED_NAMED)
		rc = vx_buf_printf(b, " ... (%zu more)", refused - RENDER_REFUSED_NAMED);
	if (rc == 0 && refused)
		rc = vx_buf_addc(b, '.');
	if (rc == 0 && p->drifts)
		return vx_buf_printf(b, " %zu changed outside vx.\n", p->drifts);
	return rc ? rc : vx_buf_addc(b, '\n');
}

static int has_error(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	return ja->error_code != 0 || (ja->error_message && *ja->error_message);
}

/* The reason, then " (code N: MESSAGE)" when the action is about a failed run. */
static int reason_text(struct vx_buf *b, const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);
	int rc = vx_buf_adds(b, a->reason ? a->reason : "unchanged");

	if (rc == 0 && has_error(a))
		rc = vx_buf_adds(b, " (");
	if (rc == 0 && has_error(a))
		rc = render_error(b, ja->error_code, ja->error_message);
	if (rc == 0 && has_error(a))
		rc = vx_buf_addc(b, ')');
	return rc;
}

/* pre, then "ml-platform (.vx/policy.yaml): 7 rules held: accelerators, ...", then post. */
static int policy_line(struct vx_buf *b, const struct policy_rules *p, const char *pre, const char *post)
{
	int rc = vx_buf_adds(b, pre);

	if (rc == 0)
		rc = policy_rules_summary(b, p);
	return rc ? rc : vx_buf_adds(b, post);
}

static int header_human(struct vx_buf *b, const struct render_header *h)
{
	int rc;
	char shortc[13] = "";

	if (h->state_commit)
		snprintf(shortc, sizeof(shortc), "%.12s", h->state_commit);
	rc = vx_buf_printf(b, "Stack %s, project %s\n", h->stack, h->project ? h->project : "?");
	if (rc == 0)
		rc = vx_buf_printf(b, "State: %s %s%s%s (serial %" PRIu64 ")\n", h->backend ? h->backend : "?",
				   h->state_ref ? h->state_ref : "?", *shortc ? " @ " : "", shortc,
				   h->state_serial);
	if (rc == 0 && h->config_dirty)
		rc = vx_buf_printf(b, "Config: %s%.12s with uncommitted changes (declaration %.12s)\n",
				   h->config_commit ? "commit " : "no commit yet,",
				   h->config_commit ? h->config_commit : "",
				   h->decl_hash ? h->decl_hash : "?");
	else if (rc == 0 && h->config_commit)
		rc = vx_buf_printf(b, "Config: commit %.12s\n", h->config_commit);
	if (rc == 0 && h->policy)
		rc = policy_line(b, h->policy, "Policy: ", "\n");
	if (rc == 0 && !h->refresh)
		rc = vx_buf_adds(b, "Refresh: OFF (-refresh=false): planned from the state alone; "
				    "jobs that ended or changed since the last apply are not seen\n");
	else if (rc == 0) {
		rc = vx_buf_printf(b, "Refresh: live jobs read in %zu region%s", h->nregions,
				   h->nregions == 1 ? "" : "s");
		for (size_t i = 0; rc == 0 && i < h->nregions; i++)
			rc = vx_buf_printf(b, "%s%s", i ? ", " : " (", h->regions[i]);
		if (rc == 0)
			rc = vx_buf_adds(b, h->nregions ? ")\n" : "\n");
		for (size_t i = 0; rc == 0 && i < h->nalso; i++)
			rc = vx_buf_printf(b, "%s%s%s", i ? ", " : "Refresh: also read ", h->also[i],
					   i + 1 == h->nalso ? "\n" : "");
	}
	return rc;
}

/* "16 granted, 32 requested, pending" / "8 in force, 32 requested, pending" (nothing
 * granted yet: the limit in force is no grant) / the limit / "unknown": a quota row's limit column. */
static int limit_text(struct vx_buf *b, const struct capacity_row *r)
{
	int rc;

	if (r->has_request && r->pending && r->has_granted)
		return vx_buf_printf(b, "%lld granted, %lld requested, pending", (long long)r->granted,
				     (long long)r->requested);
	if (r->has_request && r->pending && r->has_limit)
		return vx_buf_printf(b, "%lld in force, %lld requested, pending", (long long)r->limit,
				     (long long)r->requested);
	if (!r->has_limit)
		rc = vx_buf_adds(b, "unknown");
	else if (r->limit < 0)
		rc = vx_buf_adds(b, "unlimited");
	else
		rc = vx_buf_printf(b, "%lld", (long long)r->limit);
	if (rc == 0 && r->has_request && r->pending)
		rc = vx_buf_printf(b, " (%lld requested, pending)", (long long)r->requested);
	return rc;
}

/* "2026-01-08 09:00 UTC for 5d" (or "for 36h"): a booking's window. */
static int window_text(struct vx_buf *b, int64_t start_ms, int64_t end_ms)
{
	char w[VX_WINDOW_MAX];

	vx_time_window(w, sizeof(w), start_ms, end_ms);
	return vx_buf_adds(b, w);
}

static int free_text(struct vx_buf *b, const struct capacity_row *r)
{
	int rc;

	if (!r->has_limit)
		return vx_buf_adds(b, "unknown");
	if (r->limit < 0)
		return vx_buf_adds(b, "unlimited");
	rc = vx_buf_printf(b, "%lld%s", (long long)(r->limit - r->in_use - r->adds),
			   r->unknown ? " (fit unknown)" : r->fits ? ""
								   : " (does not fit)");
	/* A booking holds its VMs only in its window: none before it opens or after it closes. */
	if (rc == 0 && r->window_end_ms)
		rc = vx_buf_adds(b, " (held only ");
	if (rc == 0 && r->window_end_ms)
		rc = window_text(b, r->window_start_ms, r->window_end_ms);
	if (rc == 0 && r->window_end_ms)
		rc = vx_buf_addc(b, ')');
	return rc;
}

static const char *row_class(const struct capacity_row *r)
{
	return r->cls == CAPACITY_RESERVATION ? r->reservation : capacity_class_name(r->cls);
}

/* "7-day", "12h", "90m", "45s": a timeout in its largest whole unit. */
static int timeout_text(struct vx_buf *b, int64_t s)
{
	if (s > 0 && s % 86400 == 0)
		return vx_buf_printf(b, "%lld-day", (long long)(s / 86400));
	if (s > 0 && s % 3600 == 0)
		return vx_buf_printf(b, "%lldh", (long long)(s / 3600));
	if (s > 0 && s % 60 == 0)
		return vx_buf_printf(b, "%lldm", (long long)(s / 60));
	return vx_buf_printf(b, "%llds", (long long)s);
}

/* How the resource at k's address costs: its kind's rule (struct kind's cost slot). */
static enum kind_cost cost_rule(const struct capacity_cost *k)
{
	const struct kind *kd = kind_of_address(k->address);

	return kd ? kd->cost : KIND_COST_NONE;
}

/* What stands in for a booking's price (docs/future-reservations.md, "Money"). */
#define CAPACITY_BOOKING_NOTE \
	"the on-demand rate stands in: Google has not published calendar-mode prices in what we read"

/* What a cost line is of: a run that starts, a booking, or what runs or is held. */
static const char *cost_label(const struct capacity_cost *k)
{
	if (k->starts)
		return "starts";
	return k->window_end_ms ? "booked" : "running";
}

/* " at 2 VMs ($0.85-$3.41/h at 1-4 with autoscaling)": the range what is held costs. */
static int held_range_text(struct vx_buf *b, const struct capacity_report *c, const struct capacity_cost *k)
{
	int rc = vx_buf_printf(b, " at %lld VM%s (", (long long)k->vms, k->vms == 1 ? "" : "s");

	if (rc == 0)
		rc = capacity_money(b, c->currency, k->usd_min, 2);
	if (rc == 0)
		rc = vx_buf_adds(b, "\u2013");
	if (rc == 0)
		rc = capacity_money(b, c->currency, k->usd_max_per_hour, 2);
	if (rc == 0)
		rc = vx_buf_printf(b, "/h at %lld\u2013%lld with autoscaling)", (long long)k->vms_min,
				   (long long)k->vms_max);
	return rc;
}

/*
 * "2 VMs, 2 L4, 2026-01-08 09:00 UTC for 5d: $204.87 for the window, used or
 * not (120h × $1.71/h) (est.: ...)": a booking, paid for its whole window.
 */
static int booking_text(struct vx_buf *b, const struct capacity_report *c, const struct capacity_cost *k)
{
	int rc = vx_buf_printf(b, "%lld VM%s", (long long)k->vms, k->vms == 1 ? "" : "s");

	if (rc == 0 && k->gpus && k->gpu)
		rc = vx_buf_printf(b, ", %lld %s", (long long)k->gpus, k->gpu);
	if (rc == 0)
		rc = vx_buf_adds(b, ", ");
	if (rc == 0)
		rc = window_text(b, k->window_start_ms, k->window_end_ms);
	if (rc == 0)
		rc = vx_buf_adds(b, ": ");
	if (rc == 0 && !k->known)
		return vx_buf_adds(b, k->why ? k->why : "price unknown");
	if (rc == 0)
		rc = capacity_money(b, c->currency, k->usd_window, 2);
	if (rc == 0)
		rc = vx_buf_printf(b, " for the window, used or not (%gh \u00d7 ", k->window_hours);
	if (rc == 0)
		rc = capacity_money(b, c->currency, k->usd_per_hour, 2);
	if (rc == 0)
		rc = vx_buf_adds(b, "/h) (est.: " CAPACITY_BOOKING_NOTE ")");
	if (rc == 0 && k->note)
		rc = vx_buf_printf(b, "; %s", k->note);
	return rc;
}

/*
 * "$88.49/h, at most $14,866.32 (7-day default timeout × 3 attempts left)"
 * for one action, or "unknown price": at most is the rate for the whole
 * timeout of every attempt left, the one that starts or runs included.
 */
static int cost_text(struct vx_buf *b, const struct capacity_report *c, const struct capacity_cost *k)
{
	enum kind_cost rule = cost_rule(k);
	int rc;

	if (k->window_end_ms)
		return booking_text(b, c, k);
	if (!k->known)
		return vx_buf_adds(b, k->why ? k->why : "price unknown");
	rc = capacity_money(b, c->currency, k->usd_per_hour, 2);
	if (rc == 0)
		rc = vx_buf_adds(b, "/h");
	if (rc == 0 && rule == KIND_COST_RUN) {
		rc = vx_buf_adds(b, ", at most ");
		if (rc == 0)
			rc = capacity_money(b, c->currency, k->usd_max, 2);
		if (rc == 0 && k->timeout_s > 0)
			rc = vx_buf_adds(b, " (");
		if (rc == 0 && k->timeout_s > 0)
			rc = timeout_text(b, k->timeout_s);
		if (rc == 0 && k->timeout_s > 0)
			rc = vx_buf_printf(b, "%s timeout × %lld attempt%s left%s)", k->default_timeout ? " default" : "",
					   (long long)k->attempts_left, k->attempts_left == 1 ? "" : "s",
					   k->ladder ? ", each at the priciest rung it may fall back to" : "");
	}
	/* With autoscaling, what is held costs a range as its VMs move. */
	if (rc == 0 && k->has_range)
		rc = held_range_text(b, c, k);
	/* What is held (a reservation) has no timeout: it bills by the hour, used or not, until deleted. */
	if (rc == 0 && rule == KIND_COST_HELD)
		rc = vx_buf_adds(b, " while it exists (used or not, until deleted)");
	if (rc == 0 && k->upper_bound)
		rc = vx_buf_adds(b, " (upper bound: on-demand rate)");
	if (rc == 0 && k->estimate)
		rc = vx_buf_adds(b, " (est.)");
	if (rc == 0 && k->note)
		rc = vx_buf_printf(b, "; %s", k->note);
	return rc;
}

/* The figures of these machine types are Compute Engine's: Vertex AI adds a
 * training management fee Google does not publish the size of. */
#define CAPACITY_FEE_NOTE \
	"A2/A3/A4/G2/G4 figures exclude Vertex AI's training management fee (its size is not published)"

/* Cloud Quotas reports limits, not usage (QuotaInfo has no usage field): say
 * what "in use" leaves out rather than let a reviewer read it as the project's. */
#define CAPACITY_USAGE_NOTE \
	"in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks " \
	"in the project are not counted"

/* "+ $98.32/h while running, at most $16,517 for this apply". */
static int cost_summary(struct vx_buf *b, const struct capacity_report *c)
{
	int rc;

	if (!c->delta_known)
		return vx_buf_adds(b, "+ unknown/h while running (a price is not in the table)");
	/* capacity_money prints a negative figure as unknown: the sign goes first. */
	rc = vx_buf_adds(b, c->delta_per_hour < 0 ? "- " : "+ ");
	if (rc == 0)
		rc = capacity_money(b, c->currency, fabs(c->delta_per_hour), 2);
	if (rc == 0)
		rc = vx_buf_adds(b, "/h while running");
	if (rc == 0 && (c->stopped_per_hour > 0 || c->reservations_per_hour != 0)) {
		rc = vx_buf_adds(b, " (runs started + ");
		if (rc == 0)
			rc = capacity_money(b, c->currency, c->started_per_hour, 2);
		if (rc == 0 && c->stopped_per_hour > 0)
			rc = vx_buf_adds(b, ", runs stopped - ");
		if (rc == 0 && c->stopped_per_hour > 0)
			rc = capacity_money(b, c->currency, c->stopped_per_hour, 2);
		if (rc == 0 && c->reservations_per_hour != 0)
			rc = vx_buf_adds(b, c->reservations_per_hour < 0 ? ", reservations - " : ", reservations + ");
		if (rc == 0 && c->reservations_per_hour != 0)
			rc = capacity_money(b, c->currency, fabs(c->reservations_per_hour), 2);
		if (rc == 0)
			rc = vx_buf_addc(b, ')');
	}
	if (rc == 0)
		rc = vx_buf_adds(b, ", at most ");
	/* Whole units read better for large sums; cents keep a small one from showing as 0. */
	if (rc == 0)
		rc = capacity_money(b, c->currency, c->max_total, c->max_total < 1000 ? 2 : 0);
	if (rc == 0)
		rc = vx_buf_adds(b, c->reservations_per_hour > 0 ? " for this apply's runs" : " for this apply");
	if (rc == 0 && c->delta_upper_bound)
		rc = vx_buf_adds(b, " (upper bound)");
	/* "At most" bounds the runs by their timeouts; what reservations add has no end. */
	if (rc == 0 && c->reservations_per_hour > 0)
		rc = vx_buf_adds(b, ", plus ");
	if (rc == 0 && c->reservations_per_hour > 0)
		rc = capacity_money(b, c->currency, c->reservations_per_hour, 2);
	if (rc == 0 && c->reservations_per_hour > 0)
		rc = vx_buf_adds(b, "/h for the reservations while they exist (paid per hour, used or not, "
				    "until deleted)");
	/* A booking is paid for its whole window, from its start, used or not. */
	if (rc == 0 && c->bookings_total > 0)
		rc = vx_buf_adds(b, ", plus ");
	if (rc == 0 && c->bookings_total > 0)
		rc = capacity_money(b, c->currency, c->bookings_total, c->bookings_total < 1000 ? 2 : 0);
	if (rc == 0 && c->bookings_total > 0)
		rc = vx_buf_adds(b, " for the bookings' windows (est.; paid used or not)");
	/* A booking cancelled before its window opens is not paid (est. as above). */
	if (rc == 0 && c->bookings_saved > 0)
		rc = vx_buf_adds(b, "; the bookings cancelled before their windows save ");
	if (rc == 0 && c->bookings_saved > 0)
		rc = capacity_money(b, c->currency, c->bookings_saved, c->bookings_saved < 1000 ? 2 : 0);
	if (rc == 0 && c->bookings_saved > 0)
		rc = vx_buf_adds(b, " (est.)");
	return rc;
}

/* Each distinct reason a row's fit is unknown, once, between pre and post. */
static int unknown_notes(struct vx_buf *b, const struct capacity_report *c, const char *pre, const char *post)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < c->nrows; i++) {
		size_t k;

		if (!c->rows[i].unknown)
			continue;
		for (k = 0; k < i && !(c->rows[k].unknown && !strcmp(c->rows[k].unknown, c->rows[i].unknown)); k++)
			;
		if (k == i)
			rc = vx_buf_printf(b, "%s%s%s", pre, c->rows[i].unknown, post);
	}
	return rc;
}

/*
 * More runs that stay as they are than this, and the human plan sums them on
 * one line rather than one line each (-verbose lists them): a plan of 10,000
 * unchanged jobs was a megabyte of lines that said nothing had changed.
 */
#define RENDER_STAYING_LISTED 20

/* A run that keeps running as it is, priced plainly: what the summary line sums. */
static int is_staying_run(const struct capacity_cost *k)
{
	return k->running && !k->starts && k->known && !k->held && !k->has_range && !k->window_end_ms &&
	       !k->note && cost_rule(k) == KIND_COST_RUN;
}

/*
 * "running    9998 jobs that stay as they are: $7,102.10/h, at most
 * $3,551,050 (each to its timeout × its attempts left; -verbose lists them)".
 */
static int staying_summary(struct vx_buf *b, const struct capacity_report *c, size_t n)
{
	double hour = 0, max = 0;
	int estimate = 0, upper = 0;
	int rc;

	for (size_t i = 0; i < c->ncosts; i++) {
		const struct capacity_cost *k = &c->costs[i];

		if (!is_staying_run(k))
			continue;
		hour += k->usd_per_hour;
		max += k->usd_max;
		estimate |= k->estimate;
		upper |= k->upper_bound;
	}
	rc = vx_buf_printf(b, "  %-10s %zu jobs that stay as they are: ", "running", n);
	if (rc == 0)
		rc = capacity_money(b, c->currency, hour, 2);
	if (rc == 0)
		rc = vx_buf_adds(b, "/h, at most ");
	if (rc == 0)
		rc = capacity_money(b, c->currency, max, max < 1000 ? 2 : 0);
	if (rc == 0)
		rc = vx_buf_adds(b, " (each to its timeout × its attempts left; -verbose lists them)");
	if (rc == 0 && upper)
		rc = vx_buf_adds(b, " (upper bound: some at the on-demand rate)");
	if (rc == 0 && estimate)
		rc = vx_buf_adds(b, " (est.)");
	return rc ? rc : vx_buf_addc(b, '\n');
}

/* Each cost line in order; the runs that stay as one line where the first was, when many. */
static int cost_rows_human(struct vx_buf *b, const struct capacity_report *c, int verbose)
{
	size_t staying = 0;
	int summed = 0, rc = 0;

	for (size_t i = 0; !verbose && i < c->ncosts; i++)
		staying += (size_t)is_staying_run(&c->costs[i]);
	for (size_t i = 0; rc == 0 && i < c->ncosts; i++) {
		const struct capacity_cost *k = &c->costs[i];

		if (staying > RENDER_STAYING_LISTED && is_staying_run(k)) {
			if (!summed++)
				rc = staying_summary(b, c, staying);
			continue;
		}
		rc = vx_buf_printf(b, "  %-10s %s: ", cost_label(k), k->address);
		if (rc == 0)
			rc = cost_text(b, c, k);
		if (rc == 0)
			rc = vx_buf_addc(b, '\n');
	}
	return rc;
}

static int capacity_human(struct vx_buf *b, const struct capacity_report *c, int verbose)
{
	const char *region = NULL;
	int rc = vx_buf_adds(b, "\nQuota (GPUs; in use: this stack's active runs that stay):\n");

	for (size_t i = 0; rc == 0 && i < c->nrows; i++) {
		const struct capacity_row *r = &c->rows[i];
		struct vx_buf lim = VX_BUF_INIT, fr = VX_BUF_INIT;

		if (!region || strcmp(region, r->region) != 0) {
			region = r->region;
			rc = vx_buf_printf(b, "  %s\n    %-12s %-24s %6s %6s  %-8s %s\n", region, "GPU", "class",
					   "in use", "adds", "limit", "free after");
		}
		if (rc == 0)
			rc = limit_text(&lim, r);
		if (rc == 0)
			rc = free_text(&fr, r);
		if (rc == 0)
			rc = vx_buf_printf(b, "    %-12s %-24s %6lld %6lld  %-8s %s\n", r->display, row_class(r),
					   (long long)r->in_use, (long long)r->adds, vx_buf_str(&lim), vx_buf_str(&fr));
		vx_buf_release(&lim);
		vx_buf_release(&fr);
	}
	if (rc == 0 && c->nrows)
		rc = unknown_notes(b, c, "  (unknown: ", ")\n");
	if (rc == 0 && c->nrows)
		rc = vx_buf_adds(b, "  (" CAPACITY_USAGE_NOTE ")\n");
	else if (rc == 0)
		rc = vx_buf_adds(b, "  no GPUs of this stack run or start\n");
	if (rc == 0 && c->ncosts)
		rc = vx_buf_printf(b, "\nCost (%s list prices as of %s; docs/prices.md):\n",
				   c->currency ? c->currency : "USD", c->price_date ? c->price_date : "?");
	if (rc == 0 && c->ncosts && c->price_source)
		rc = vx_buf_printf(b, "  prices: %s\n", c->price_source);
	if (rc == 0)
		rc = cost_rows_human(b, c, verbose);
	if (rc == 0 && c->ncosts && c->fee_excluded)
		rc = vx_buf_adds(b, "  (" CAPACITY_FEE_NOTE ")\n");
	return rc;
}

static int capacity_markdown(struct vx_buf *b, const struct capacity_report *c)
{
	int rc = vx_buf_adds(b, "**Quota** (GPUs; in use: this stack's active runs that stay)\n\n"
			     "| region | GPU | class | in use | this plan adds | limit | free after |\n"
			     "|---|---|---|---|---|---|---|\n");

	for (size_t i = 0; rc == 0 && i < c->nrows; i++) {
		const struct capacity_row *r = &c->rows[i];
		struct vx_buf lim = VX_BUF_INIT, fr = VX_BUF_INIT;

		rc = limit_text(&lim, r);
		if (rc == 0)
			rc = free_text(&fr, r);
		if (rc == 0)
			rc = vx_buf_printf(b, "| %s | %s | %s | %lld | %lld | %s | %s%s%s |\n", r->region, r->display,
					   row_class(r), (long long)r->in_use, (long long)r->adds, vx_buf_str(&lim),
					   r->fits ? "" : "**", vx_buf_str(&fr), r->fits ? "" : "**");
		vx_buf_release(&lim);
		vx_buf_release(&fr);
	}
	if (rc == 0)
		rc = unknown_notes(b, c, "\n_unknown: ", "_\n");
	if (rc == 0)
		rc = vx_buf_adds(b, "\n_" CAPACITY_USAGE_NOTE "._\n");
	if (rc == 0)
		rc = vx_buf_printf(b, "\n**Cost** (%s list prices as of %s): ", c->currency ? c->currency : "USD",
				   c->price_date ? c->price_date : "?");
	if (rc == 0)
		rc = cost_summary(b, c);
	if (rc == 0 && c->price_source)
		rc = vx_buf_printf(b, "\n\n_Prices: %s._", c->price_source);
	if (rc == 0)
		rc = vx_buf_adds(b, "\n\n");
	for (size_t i = 0; rc == 0 && i < c->ncosts; i++) {
		rc = vx_buf_printf(b, "- `%s` (%s): ", c->costs[i].address, cost_label(&c->costs[i]));
		if (rc == 0)
			rc = cost_text(b, c, &c->costs[i]);
		if (rc == 0)
			rc = vx_buf_addc(b, '\n');
	}
	if (rc == 0 && c->ncosts && c->fee_excluded)
		rc = vx_buf_adds(b, "\n_" CAPACITY_FEE_NOTE "._\n");
	if (rc == 0 && c->ncosts)
		rc = vx_buf_addc(b, '\n');
	return rc;
}

/* The sweep whose run address is, or NULL. */
static const struct plan_sweep *sweep_of(const struct plan *p, const char *address)
{
	for (size_t i = 0; i < p->nsweeps; i++) {
		size_t n = strlen(p->sweeps[i].address);

		if (!strncmp(address, p->sweeps[i].address, n) && address[n] == '[')
			return &p->sweeps[i];
	}
	return NULL;
}

/*
 * "cost: $2.83/h at the cap, at most $1,425 for every run": the runs of the
 * sweep that start or stay running are priced (capacity.c); a waiting run is
 * taken at their mean figure, so the whole sweep's at most is shown before
 * it starts. Nothing when no run of it is priced.
 */
static int sweep_cost(struct vx_buf *b, const struct plan_sweep *s, const struct capacity_report *c)
{
	size_t n = strlen(s->address), priced = 0;
	double hour = 0, max = 0;
	int rc;

	for (size_t i = 0; c && i < c->ncosts; i++) {
		const struct capacity_cost *k = &c->costs[i];

		if (strncmp(k->address, s->address, n) || k->address[n] != '[')
			continue;
		if (!k->known)
			return vx_buf_printf(b, "        cost: unknown (%s)\n", k->why ? k->why : "price unknown");
		hour += k->usd_per_hour;
		max += k->usd_max;
		priced++;
	}
	if (!priced)
		return 0;
	max += max / (double)priced * (double)s->waiting;
	rc = vx_buf_adds(b, "        cost: ");
	if (rc == 0)
		rc = capacity_money(b, c->currency, hour, 2);
	if (rc == 0)
		rc = vx_buf_printf(b, "/h at the cap (%zu run%s), at most ", s->now, s->now == 1 ? "" : "s");
	if (rc == 0)
		rc = capacity_money(b, c->currency, max, max < 1000 ? 2 : 0);
	if (rc == 0)
		rc = vx_buf_printf(b, " for every run left (%zu)\n", s->now + s->waiting);
	return rc;
}

/* A sweep's creates and waits as one block (-verbose lists the runs instead). */
static int sweep_block(struct vx_buf *b, const struct plan_sweep *s, const struct capacity_report *c,
		       int color)
{
	int rc = vx_buf_printf(b, "  %s%s", color ? kind_color(s->creates ? PLAN_CREATE : PLAN_WAIT) : "",
			       color ? C_BOLD : "");

	if (rc == 0)
		rc = add_symbol(b, s->creates ? PLAN_CREATE : PLAN_WAIT);
	if (rc == 0)
		rc = vx_buf_printf(b, " %s%s sweep: %zu of %zu now, %zu waiting\n", s->address,
				   color ? C_RESET : "", s->now, s->runs, s->waiting);
	if (rc == 0)
		rc = vx_buf_printf(b, "        %zu to create, %zu waiting, %zu running, %zu finished, "
				   "%zu failed\n", s->creates, s->waiting, s->running, s->finished, s->failed);
	if (rc == 0 && s->held)
		rc = vx_buf_printf(b, "        %s\n", s->held);
	else if (rc == 0 && s->waiting)
		rc = vx_buf_printf(b, "        maxParallel %lld: the rest start as runs finish "
				   "(vxapply or vx watch)\n", (long long)s->max_parallel);
	if (rc == 0)
		rc = sweep_cost(b, s, c);
	return rc;
}

/* One change: its symbol and address, then its shape, reason, and the job it cancels or adopts. */
static int action_human(struct vx_buf *b, const struct plan_action *a, int color)
{
	const struct job_action *ja = job_action_of(a);
	int rc = vx_buf_printf(b, "  %s%s", color ? kind_color(a->op) : "", color ? C_BOLD : "");

	if (rc == 0)
		rc = add_symbol(b, a->op);
	if (rc == 0)
		rc = vx_buf_printf(b, " %s%s %s\n", a->address, color ? C_RESET : "", plan_op_name(a->op));
	if (rc == 0 && a->shape)
		rc = vx_buf_printf(b, "        %s%s%s\n", a->shape, a->region ? " in " : "", a->region ? a->region : "");
	if (rc == 0 && a->reason) {
		rc = vx_buf_adds(b, "        ");
		if (rc == 0)
			rc = reason_text(b, a);
		if (rc == 0)
			rc = vx_buf_addc(b, '\n');
	}
	if (rc == 0 && ja->cancel_name)
		rc = vx_buf_printf(b, "        cancels %s\n", ja->cancel_name);
	if (rc == 0 && ja->adopt_name)
		rc = vx_buf_printf(b, "        adopts %s\n", ja->adopt_name);
	return rc;
}

/* The changes, in address order; a sweep's creates and waits as one block where its first run is. */
static int changes_human(struct vx_buf *b, const struct plan *p, const struct render_header *h, int color)
{
	unsigned char *shown = p->nsweeps ? calloc(p->nsweeps, 1) : NULL;
	int rc = 0;

	if (p->nsweeps && !shown)
		return VX_ENOMEM;
	for (size_t i = 0; rc == 0 && i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct plan_sweep *s;

		if (!is_change(a))
			continue;
		if (!h->verbose && (a->op == PLAN_CREATE || a->op == PLAN_WAIT) &&
		    (s = sweep_of(p, a->address)) != NULL) {
			/* s is one of p->sweeps, so nsweeps > 0 and shown was allocated.
			 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
			if (!shown[s - p->sweeps])
				rc = sweep_block(b, s, h->capacity, color);
			shown[s - p->sweeps] = 1;
			continue;
		}
		rc = action_human(b, a, color);
	}
	free(shown);
	return rc;
}

/* "No change:" and why, for the unchanged addresses that have a reason or drifted. */
static int unchanged_human(struct vx_buf *b, const struct plan *p)
{
	size_t notes = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];

		if (is_change(a) || (!a->reason && !a->drift))
			continue;
		if (notes++ == 0)
			rc = vx_buf_adds(b, "\nNo change:\n");
		if (rc == 0)
			rc = vx_buf_printf(b, "      %s: ", a->address);
		if (rc == 0)
			rc = reason_text(b, a);
		if (rc == 0)
			rc = vx_buf_addc(b, '\n');
	}
	return rc;
}

/* What a reviewer must read besides the changes: drift, warnings, and the errors that stop an apply. */
static int notices_human(struct vx_buf *b, const struct plan *p, int color)
{
	int rc = 0;

	if (p->notes.n) {
		rc = vx_buf_adds(b, "\nNotes:\n");
		for (size_t i = 0; rc == 0 && i < p->notes.n; i++)
			rc = vx_buf_printf(b, "  %s\n", p->notes.items[i].msg);
	}
	if (rc == 0 && p->drifts) {
		rc = vx_buf_printf(b, "\n%sDrift%s (changed outside vx):\n", color ? C_YELLOW : "",
				   color ? C_RESET : "");
		for (size_t i = 0; rc == 0 && i < p->n; i++)
			if (p->actions[i].drift)
				rc = vx_buf_printf(b, "  ! %s: %s -> %s\n", p->actions[i].address,
						   p->actions[i].drift, plan_op_name(p->actions[i].op));
	}
	if (rc == 0 && p->warnings.n) {
		rc = vx_buf_printf(b, "\n%sWarnings%s:\n", color ? C_YELLOW : "", color ? C_RESET : "");
		for (size_t i = 0; rc == 0 && i < p->warnings.n; i++)
			rc = vx_buf_printf(b, "  %s\n", p->warnings.items[i].msg);
	}
	if (rc == 0 && p->errors.n) {
		rc = vx_buf_printf(b, "\n%sErrors%s (the plan cannot be applied):\n", color ? C_RED : "",
				   color ? C_RESET : "");
		for (size_t i = 0; rc == 0 && i < p->errors.n; i++)
			rc = vx_buf_printf(b, "  %s\n", p->errors.items[i].msg);
	}
	return rc;
}

/* "Plan: 1 to create, ... Cost: + $1.10/h while running, ...": the last line. */
static int totals_human(struct vx_buf *b, const struct plan *p, const struct render_header *h, int color)
{
	int rc = vx_buf_printf(b, "\n%sPlan:%s ", color ? C_BOLD : "", color ? C_RESET : "");

	if (rc == 0)
		rc = summary(b, p);
	if (rc == 0)
		rc = unchanged_count(b, p);
	if (rc == 0)
		rc = drift_count(b, p);
	if (rc == 0 && h->capacity)
		rc = vx_buf_adds(b, "Cost: ");
	if (rc == 0 && h->capacity)
		rc = cost_summary(b, h->capacity);
	if (rc == 0 && h->capacity)
		rc = vx_buf_adds(b, ".\n");
	return rc;
}

int render_plan_human(struct vx_buf *b, const struct plan *p, const struct render_header *h, int color)
{
	int rc = header_human(b, h);

	if (rc == 0 && h->budget)
		rc = vx_buf_printf(b, "%s\n", h->budget->line);
	if (rc == 0 && (plan_has_changes(p) || p->counts[PLAN_WAIT]))
		rc = vx_buf_addc(b, '\n');
	if (rc == 0)
		rc = changes_human(b, p, h, color);
	if (rc == 0)
		rc = unchanged_human(b, p);
	if (rc == 0 && h->capacity)
		rc = capacity_human(b, h->capacity, h->verbose);
	if (rc == 0)
		rc = notices_human(b, p, color);
	if (rc == 0)
		rc = totals_human(b, p, h, color);
	return rc;
}

/* More changes than this are collapsed in <details> in the markdown plan (with quota and cost first). */
#define RENDER_MD_COLLAPSE 20

/* Markdown table cells must not contain '|' or newlines. */
static int md_cell(struct vx_buf *b, const char *s)
{
	int rc = 0;

	for (; s && *s && rc == 0; s++) {
		if (*s == '|')
			rc = vx_buf_adds(b, "\\|");
		else if (*s == '\n')
			rc = vx_buf_addc(b, ' ');
		else
			rc = vx_buf_addc(b, *s);
	}
	return rc;
}

int render_plan_markdown(struct vx_buf *b, const struct plan *p, const struct render_header *h)
{
	int rc = vx_buf_printf(b, "### vx plan: stack `%s` (project `%s`)\n\n", h->stack,
			       h->project ? h->project : "?");

	if (rc == 0 && h->spend_line)
		rc = vx_buf_printf(b, "%s\n\n", h->spend_line);
	if (rc == 0 && h->policy)
		rc = policy_line(b, h->policy, "**Policy**: ", "\n\n");
	if (rc == 0 && h->budget)
		rc = vx_buf_printf(b, "%s\n\n", h->budget->line);
	if (rc == 0 && !h->refresh)
		rc = vx_buf_adds(b, "> **Refresh off**: planned from the state alone.\n\n");
	if (rc == 0 && h->config_dirty)
		rc = vx_buf_printf(b, "> **Uncommitted changes**: configuration %s%.12s%s with uncommitted "
				   "changes (declaration `%.12s`).\n\n",
				   h->config_commit ? "`" : "(no commit yet)",
				   h->config_commit ? h->config_commit : "", h->config_commit ? "`" : "",
				   h->decl_hash ? h->decl_hash : "?");
	if (rc == 0 && h->capacity)
		rc = capacity_markdown(b, h->capacity);
	/* Long change lists are collapsed (a pull-request comment stays readable). */
	if (rc == 0 && h->capacity && p->n - p->counts[PLAN_NOOP] > RENDER_MD_COLLAPSE)
		rc = vx_buf_printf(b, "<details><summary>%zu changes</summary>\n\n",
				   p->n - p->counts[PLAN_NOOP]);
	if (rc == 0)
		rc = vx_buf_adds(b, "| | address | action | shape | reason |\n|---|---|---|---|---|\n");
	for (size_t i = 0; rc == 0 && i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];

		if (!is_change(a))
			continue;
		rc = vx_buf_printf(b, "| `%s` | `%s` | %s | ", plan_op_symbol(a->op), a->address,
				   plan_op_name(a->op));
		if (rc == 0)
			rc = md_cell(b, a->shape);
		if (rc == 0)
			rc = vx_buf_adds(b, " | ");
		if (rc == 0 && a->reason) {
			struct vx_buf r = VX_BUF_INIT;

			rc = reason_text(&r, a);
			if (rc == 0)
				rc = md_cell(b, vx_buf_str(&r));
			vx_buf_release(&r);
		}
		if (rc == 0)
			rc = vx_buf_adds(b, " |\n");
	}
	if (rc == 0 && h->capacity && p->n - p->counts[PLAN_NOOP] > RENDER_MD_COLLAPSE)
		rc = vx_buf_adds(b, "\n</details>\n");
	for (size_t i = 0; rc == 0 && i < p->n; i++)
		if (p->actions[i].drift)
			rc = vx_buf_printf(b, "\n- **drift** `%s`: %s", p->actions[i].address,
					   p->actions[i].drift);
	for (size_t i = 0; rc == 0 && i < p->notes.n; i++)
		rc = vx_buf_printf(b, "\n- **note**: %s", p->notes.items[i].msg);
	for (size_t i = 0; rc == 0 && i < p->warnings.n; i++)
		rc = vx_buf_printf(b, "\n- **warning**: %s", p->warnings.items[i].msg);
	for (size_t i = 0; rc == 0 && i < p->errors.n; i++)
		rc = vx_buf_printf(b, "\n- **error**: %s", p->errors.items[i].msg);
	if (rc == 0)
		rc = vx_buf_adds(b, "\n\n**Plan:** ");
	if (rc == 0)
		rc = summary(b, p);
	if (rc == 0)
		rc = unchanged_count(b, p);
	if (rc == 0)
		rc = drift_count(b, p);
	return rc;
}

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int add(cJSON *obj, const char *key, cJSON *v)
{
	if (!v)
		return VX_ENOMEM;
	if (!cJSON_AddItemToObject(obj, key, v)) {
		cJSON_Delete(v);
		return VX_ENOMEM;
	}
	return 0;
}

/* {"code": N, "message": "MESSAGE"} for an action about a failed run, else null. */
static cJSON *error_json(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);
	struct vx_buf m = VX_BUF_INIT;
	cJSON *o;
	int exit_code;

	if (!has_error(a))
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	/* The replica's exit status, from Google's sentence: only when it gives one. */
	exit_code = failure_exit_code(ja->error_message);
	if (o && (add(o, "code", cJSON_CreateNumber(ja->error_code)) < 0 ||
		  render_error_message(&m, ja->error_message) < 0 ||
		  add(o, "message", cJSON_CreateString(vx_buf_str(&m))) < 0 ||
		  (exit_code && add(o, "exit_code", cJSON_CreateNumber(exit_code)) < 0))) {
		cJSON_Delete(o);
		o = NULL;
	}
	vx_buf_release(&m);
	return o;
}

static cJSON *cost_json(const struct capacity_cost *k)
{
	cJSON *o = cJSON_CreateObject();
	int rc = 0, bounded;

	if (!o)
		return NULL;
	rc |= add(o, "usd_per_hour", k->known ? cJSON_CreateNumber(k->usd_per_hour) : cJSON_CreateNull());
	/* At most: what a run's timeout bounds; null for what bills until deleted. */
	bounded = k->known && cost_rule(k) == KIND_COST_RUN;
	/* A booking is bounded by its window: what the whole window costs. */
	if (k->known && k->window_end_ms)
		rc |= add(o, "usd_max", cJSON_CreateNumber(k->usd_window));
	else
		rc |= add(o, "usd_max", bounded ? cJSON_CreateNumber(k->usd_max) : cJSON_CreateNull());
	rc |= add(o, "upper_bound", cJSON_CreateBool(k->upper_bound));
	rc |= add(o, "estimate", cJSON_CreateBool(k->estimate));
	rc |= add(o, "unknown_reason", str_or_null(k->why));
	/* What is held with autoscaling: the range its rate moves in. */
	if (k->known && k->has_range) {
		rc |= add(o, "usd_per_hour_min", cJSON_CreateNumber(k->usd_min));
		rc |= add(o, "usd_per_hour_max", cJSON_CreateNumber(k->usd_max_per_hour));
	}
	if (rc) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A job's per-class resubmit budgets: {"stockout": {"allowed": 2, "used": 1}}, classes in vx's order. */
static cJSON *budgets_json(const struct job_action *ja)
{
	cJSON *o = cJSON_CreateObject(), *c;
	int rc = 0;

	for (unsigned k = 0; o && k < STACK_FAIL_NCLASSES; k++) {
		if (ja->budget_allowed[k] < 0)
			continue;
		c = cJSON_CreateObject();
		rc |= add(o, stack_fail_names[k], c);
		if (c) {
			rc |= add(c, "allowed", cJSON_CreateNumber((double)ja->budget_allowed[k]));
			rc |= add(c, "used", cJSON_CreateNumber((double)ja->budget_used[k]));
		}
	}
	if (rc) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *action_json(const struct plan_action *a, const struct capacity_report *cap)
{
	const struct job_action *ja = job_action_of(a);
	cJSON *o = cJSON_CreateObject(), *before = NULL, *after = NULL;
	int rc = 0;

	if (!o)
		return NULL;
	rc |= add(o, "address", cJSON_CreateString(a->address));
	/* Every action carries its kind (plan_add_action). */
	rc |= add(o, "kind", str_or_null(a->kind_of ? a->kind_of->name : NULL));
	rc |= add(o, "action", cJSON_CreateString(plan_op_name(a->op)));
	rc |= add(o, "reason", str_or_null(a->reason));
	rc |= add(o, "drift", str_or_null(a->drift));
	rc |= add(o, "shape", str_or_null(a->shape));
	rc |= add(o, "region", str_or_null(a->region));
	rc |= add(o, "failure_class", str_or_null(ja->failure_class));
	rc |= add(o, "error", error_json(a));
	rc |= add(o, "cancel", str_or_null(ja->cancel_name));
	rc |= add(o, "adopt", str_or_null(ja->adopt_name));
	if (ja->has_budgets)
		rc |= add(o, "budgets", budgets_json(ja));
	if (cap) {
		const struct capacity_cost *k = capacity_cost_of(cap, a->address);

		rc |= add(o, "cost", k ? cost_json(k) : cJSON_CreateNull());
	}
	before = cJSON_CreateObject();
	rc |= add(o, "before", before);
	if (before) {
		rc |= add(before, "spec_hash", str_or_null(ja->old_hash));
		rc |= add(before, "state", str_or_null(ja->live_state));
		if (ja->queued_ms > 0)
			rc |= add(before, "queued_seconds", cJSON_CreateNumber((double)(ja->queued_ms / 1000)));
		if (a->has_values)
			rc |= add(before, "value", a->old_value >= -1 ? cJSON_CreateNumber((double)a->old_value)
								  : cJSON_CreateNull());
	}
	after = cJSON_CreateObject();
	rc |= add(o, "after", after);
	if (after) {
		rc |= add(after, "spec_hash", str_or_null(ja->new_hash));
		rc |= add(after, "run", ja->run ? cJSON_CreateNumber((double)ja->run) : cJSON_CreateNull());
		rc |= add(after, "attempt", ja->attempt ? cJSON_CreateNumber((double)ja->attempt) : cJSON_CreateNull());
		/* The ladder rung the new run goes on; only on actions that start one. */
		if (ja->attempt && !a->has_values)
			rc |= add(after, "rung", cJSON_CreateNumber((double)ja->rung));
		rc |= add(after, "max_attempts", ja->max_attempts ? cJSON_CreateNumber((double)ja->max_attempts) : cJSON_CreateNull());
		/* resubmit.within's deadline, on a resubmit and on a run given up on. */
		if (ja->deadline_ms) {
			char t[VX_TIME_MAX];

			vx_time_format(t, sizeof(t), ja->deadline_ms, VX_TIME_SECONDS);
			rc |= add(after, "deadline", cJSON_CreateString(t));
		}
		if (a->has_values)
			rc |= add(after, "value", a->new_value >= -1 ? cJSON_CreateNumber((double)a->new_value)
								: cJSON_CreateNull());
	}
	if (rc) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Top-level "cost" totals and "quota" rows (docs/plan-json.md). */
static int capacity_json(cJSON *root, const struct capacity_report *c)
{
	cJSON *cost = cJSON_CreateObject(), *rows;
	int rc = add(root, "cost", cost);

	if (cost) {
		rc |= add(cost, "currency", str_or_null(c->currency));
		rc |= add(cost, "usd_per_hour", c->delta_known ? cJSON_CreateNumber(c->delta_per_hour) : cJSON_CreateNull());
		rc |= add(cost, "usd_max", c->delta_known ? cJSON_CreateNumber(c->max_total) : cJSON_CreateNull());
		rc |= add(cost, "reservations_usd_per_hour",
			  c->delta_known ? cJSON_CreateNumber(c->reservations_per_hour) : cJSON_CreateNull());
		rc |= add(cost, "upper_bound", cJSON_CreateBool(c->delta_upper_bound));
		rc |= add(cost, "price_source", str_or_null(c->price_source));
		rc |= add(cost, "price_date", str_or_null(c->price_date));
		rc |= add(cost, "excludes_vertex_management_fee", cJSON_CreateBool(c->fee_excluded));
		rc |= add(cost, "bookings_usd", c->delta_known ? cJSON_CreateNumber(c->bookings_total) : cJSON_CreateNull());
		rc |= add(cost, "bookings_saved_usd",
			  c->delta_known ? cJSON_CreateNumber(c->bookings_saved) : cJSON_CreateNull());
	}
	rows = cJSON_CreateArray();
	rc |= add(root, "quota", rows);
	for (size_t i = 0; rows && i < c->nrows; i++) {
		const struct capacity_row *r = &c->rows[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(rows, o)) {
			cJSON_Delete(o);
			return VX_ENOMEM;
		}
		rc |= add(o, "region", cJSON_CreateString(r->region));
		rc |= add(o, "accelerator", cJSON_CreateString(r->accelerator));
		rc |= add(o, "class", cJSON_CreateString(capacity_class_name(r->cls)));
		rc |= add(o, "reservation", str_or_null(r->reservation));
		rc |= add(o, "quota_id", str_or_null(r->quota_id));
		rc |= add(o, "in_use", cJSON_CreateNumber((double)r->in_use));
		rc |= add(o, "adds", cJSON_CreateNumber((double)r->adds));
		rc |= add(o, "limit", r->has_limit ? cJSON_CreateNumber((double)r->limit) : cJSON_CreateNull());
		rc |= add(o, "requested", r->has_request ? cJSON_CreateNumber((double)r->requested) : cJSON_CreateNull());
		rc |= add(o, "granted", r->has_request && r->has_granted ? cJSON_CreateNumber((double)r->granted)
									  : cJSON_CreateNull());
		rc |= add(o, "pending", cJSON_CreateBool(r->has_request && r->pending));
		rc |= add(o, "fits", cJSON_CreateBool(r->fits));
		rc |= add(o, "unknown", str_or_null(r->unknown));
	}
	return rc ? VX_ENOMEM : 0;
}

/* key: an array of the n strings of list. */
static int strings_json(cJSON *root, const char *key, const char *const *list, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	int rc = add(root, key, arr);

	for (size_t i = 0; arr && i < n; i++)
		if (!cJSON_AddItemToArray(arr, cJSON_CreateString(list[i])))
			rc = VX_ENOMEM;
	return rc;
}

/* key: an array of the messages of d (the plan's errors, warnings). */
static int diags_json(cJSON *root, const char *key, const struct vx_diags *d)
{
	cJSON *arr = cJSON_CreateArray();
	int rc = add(root, key, arr);

	for (size_t i = 0; arr && i < d->n; i++)
		if (!cJSON_AddItemToArray(arr, cJSON_CreateString(d->items[i].msg)))
			rc = VX_ENOMEM;
	return rc;
}

/* "budget": the Stack's budget against this plan; null for a figure not known. */
static int budget_json(cJSON *root, const struct render_budget *bu)
{
	cJSON *o = cJSON_CreateObject();
	int rc = add(root, "budget", o);

	if (!o)
		return rc;
	rc |= add(o, "limit", cJSON_CreateNumber(bu->limit));
	rc |= add(o, "period", cJSON_CreateString(bu->period));
	rc |= add(o, "spent", bu->spent_known ? cJSON_CreateNumber(bu->spent) : cJSON_CreateNull());
	rc |= add(o, "at_most", bu->at_most_known ? cJSON_CreateNumber(bu->at_most) : cJSON_CreateNull());
	rc |= add(o, "would_exceed", cJSON_CreateBool(bu->would_exceed));
	rc |= add(o, "exceed_by", cJSON_CreateNumber(bu->would_exceed ? bu->exceed_by : 0));
	return rc;
}

/* What was planned, where, by whom and against what: the members before "state". */
static int header_json(cJSON *root, const struct render_header *h)
{
	int rc = 0;

	rc |= add(root, "format_version", cJSON_CreateNumber(PLAN_FORMAT_VERSION));
	rc |= add(root, "vx_version", cJSON_CreateString(VX_VERSION));
	rc |= add(root, "stack", cJSON_CreateString(h->stack));
	rc |= add(root, "project", str_or_null(h->project));
	rc |= add(root, "dir", str_or_null(h->dir));
	rc |= add(root, "dir_in_repo", str_or_null(h->dir_in_repo));
	rc |= add(root, "declaration_hash", str_or_null(h->decl_hash));
	rc |= add(root, "config_commit", str_or_null(h->config_commit));
	rc |= add(root, "config_dirty", cJSON_CreateBool(h->config_dirty));
	rc |= add(root, "refresh", cJSON_CreateBool(h->refresh));
	if (h->planned_by) {
		cJSON *by = cJSON_CreateObject();

		rc |= add(root, "planned_by", by);
		if (by) {
			rc |= add(by, "actor", cJSON_CreateString(h->planned_by));
			rc |= add(by, "pull_request", h->pr_number ? cJSON_CreateNumber((double)h->pr_number)
								   : cJSON_CreateNull());
			rc |= add(by, "pull_request_url", str_or_null(h->pr_url));
		}
	}
	rc |= strings_json(root, "regions", h->regions, h->nregions);
	rc |= strings_json(root, "targets", h->targets, h->ntargets);
	/* Only when given: what was reviewed is applied under the same choice. */
	if (h->allow_other_lineage)
		rc |= add(root, "allow_other_lineage", cJSON_CreateTrue());
	if (h->allow_released)
		rc |= add(root, "allow_released", cJSON_CreateTrue());
	if (h->budget)
		rc |= budget_json(root, h->budget);
	return rc;
}

/* "state": the state the plan was made against. */
static int state_json(cJSON *root, const struct render_header *h)
{
	cJSON *state = cJSON_CreateObject();
	int rc = add(root, "state", state);
	char serial[24];

	if (!state)
		return rc;
	snprintf(serial, sizeof(serial), "%" PRIu64, h->state_serial);
	rc |= add(state, "backend", str_or_null(h->backend));
	rc |= add(state, "ref", str_or_null(h->state_ref));
	rc |= add(state, "commit", str_or_null(h->state_commit));
	/* A string: JSON numbers lose precision past 2^53. */
	rc |= add(state, "serial", cJSON_CreateString(serial));
	rc |= add(state, "lineage", str_or_null(h->state_lineage));
	if (h->state_salt)
		rc |= add(state, "salt", cJSON_CreateString(h->state_salt));
	return rc;
}

static int actions_json(cJSON *root, const struct plan *p, const struct capacity_report *cap)
{
	cJSON *arr = cJSON_CreateArray();
	int rc = add(root, "actions", arr);

	for (size_t i = 0; arr && i < p->n; i++) {
		cJSON *a = action_json(&p->actions[i], cap);

		if (!a || !cJSON_AddItemToArray(arr, a)) {
			cJSON_Delete(a);
			rc = VX_ENOMEM;
		}
	}
	return rc;
}

/* "sweeps": each sweep's counts, as the human plan's block shows them. */
static int sweeps_json(cJSON *root, const struct plan *p)
{
	cJSON *arr = cJSON_CreateArray();
	int rc = add(root, "sweeps", arr);

	for (size_t i = 0; arr && i < p->nsweeps; i++) {
		const struct plan_sweep *s = &p->sweeps[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return VX_ENOMEM;
		}
		rc |= add(o, "address", cJSON_CreateString(s->address));
		rc |= add(o, "runs", cJSON_CreateNumber((double)s->runs));
		rc |= add(o, "create", cJSON_CreateNumber((double)s->creates));
		rc |= add(o, "wait", cJSON_CreateNumber((double)s->waiting));
		rc |= add(o, "running", cJSON_CreateNumber((double)s->running));
		rc |= add(o, "finished", cJSON_CreateNumber((double)s->finished));
		rc |= add(o, "failed", cJSON_CreateNumber((double)s->failed));
		rc |= add(o, "max_parallel", s->max_parallel ? cJSON_CreateNumber((double)s->max_parallel)
							     : cJSON_CreateNull());
		rc |= add(o, "max_failed", s->max_failed ? cJSON_CreateNumber((double)s->max_failed)
							 : cJSON_CreateNull());
		rc |= add(o, "held", str_or_null(s->held));
	}
	return rc;
}

/* The plan's body: actions, errors and warnings, counts, sweeps, then quota and cost. */
static int body_json(cJSON *root, const struct plan *p, const struct render_header *h)
{
	cJSON *sum = cJSON_CreateObject();
	int rc = actions_json(root, p, h->capacity);

	rc |= diags_json(root, "errors", &p->errors);
	rc |= diags_json(root, "warnings", &p->warnings);
	if (p->notes.n)
		rc |= diags_json(root, "notes", &p->notes);
	rc |= add(root, "summary", sum);
	for (int k = 0; sum && k < PLAN_OP_COUNT; k++)
		rc |= add(sum, plan_op_name((enum plan_op)k), cJSON_CreateNumber((double)p->counts[k]));
	rc |= sweeps_json(root, p);
	rc |= add(root, "drift_count", cJSON_CreateNumber((double)p->drifts));
	rc |= add(root, "refused_count", cJSON_CreateNumber((double)refused_count(p)));
	rc |= add(root, "changes", cJSON_CreateBool(plan_has_changes(p)));
	if (h->capacity)
		rc |= capacity_json(root, h->capacity);
	return rc;
}

/* Appends v (NULL: out of memory) to array arr. */
static int push(cJSON *arr, cJSON *v)
{
	if (!v)
		return VX_ENOMEM;
	if (!cJSON_AddItemToArray(arr, v)) {
		cJSON_Delete(v);
		return VX_ENOMEM;
	}
	return 0;
}

/* {"name", "file", "repository"} of one Policy document. */
static cJSON *policy_doc_json(const struct policy_doc *d)
{
	cJSON *e = cJSON_CreateObject();

	if (e && (add(e, "name", cJSON_CreateString(d->name)) || add(e, "file", cJSON_CreateString(d->file)) ||
		  add(e, "repository", cJSON_CreateBool(d->repo)))) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

/* {"rule", "policy", "file", "line"} of the rule in force of id. */
static cJSON *policy_rule_json(const struct policy_rules *p, size_t id)
{
	const struct policy_rule *r = p->in_force[id];
	cJSON *e = cJSON_CreateObject();

	if (e && (add(e, "rule", cJSON_CreateString(policy_rule_key(id))) ||
		  add(e, "policy", cJSON_CreateString(r->from->name)) ||
		  add(e, "file", cJSON_CreateString(r->from->file)) || add(e, "line", cJSON_CreateNumber(r->line)))) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

/*
 * "policy": the Policy documents the stack was held to and each rule that
 * held, with the document and line that write it (docs/plan-json.schema.json).
 */
static int policy_json(cJSON *root, const struct policy_rules *p)
{
	cJSON *o = cJSON_CreateObject(), *docs = cJSON_CreateArray(), *rules = cJSON_CreateArray();
	int rc = add(root, "policy", o);

	rc = rc ? (cJSON_Delete(docs), rc) : add(o, "documents", docs);
	rc = rc ? (cJSON_Delete(rules), rc) : add(o, "rules_held", rules);
	if (rc == 0 && p->repo)
		rc = push(docs, policy_doc_json(p->repo));
	if (rc == 0 && p->own)
		rc = push(docs, policy_doc_json(p->own));
	for (size_t id = 0; id < p->nrules && rc == 0; id++)
		if (p->in_force[id])
			rc = push(rules, policy_rule_json(p, id));
	return rc;
}

int render_plan_json(struct vx_buf *b, const struct plan *p, const struct render_header *h)
{
	cJSON *root = cJSON_CreateObject();
	char *text = NULL;
	int rc = 0;

	if (!root)
		return VX_ENOMEM;
	rc |= header_json(root, h);
	if (h->policy)
		rc |= policy_json(root, h->policy);
	rc |= state_json(root, h);
	rc |= body_json(root, p, h);
	if (h->rendered_human && h->rendered_markdown) {
		cJSON *r = cJSON_CreateObject();

		rc |= add(root, "rendered", r);
		if (r) {
			rc |= add(r, "human", cJSON_CreateString(h->rendered_human));
			rc |= add(r, "markdown", cJSON_CreateString(h->rendered_markdown));
		}
	}
	if (rc == 0) {
		text = cJSON_Print(root);
		rc = text ? vx_buf_adds(b, text) : VX_ENOMEM;
		if (rc == 0)
			rc = vx_buf_addc(b, '\n');
	}
	free(text);
	cJSON_Delete(root);
	return rc ? VX_ENOMEM : 0;
}

/* Compares a fresh plan with a saved one: same actions on the same addresses. */
int saved_plan_matches(const struct saved_plan *sp, const struct plan *p, struct vx_err *err)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct job_action *ja = job_action_of(a);
		const struct saved_action *s;

		if (k >= sp->n)
			return vx_err_set(err, VX_ECONFLICT, "the world changed since the plan was made: "
					  "%s would now %s; run vxplan again", a->address, plan_op_name(a->op));
		s = &sp->actions[k++];
		if (strcmp(a->address, s->address) || strcmp(plan_op_name(a->op), s->action))
			return vx_err_set(err, VX_ECONFLICT, "the world changed since the plan was made: "
					  "%s was planned to %s, %s would now %s; run vxplan again",
					  s->address, s->action, a->address, plan_op_name(a->op));
		/* A run starts where the plan showed, or not at all: a ladder's rung
		 * (and with it the region and machines) is part of what was reviewed. */
		if (s->has_rung && (s->rung != ja->rung || s->attempt != ja->attempt ||
				    !vx_text_same(s->region, a->region)))
			return vx_err_set(err, VX_ECONFLICT, "the world changed since the plan was made: "
							     "%s was planned to %s attempt %" PRId64 " on rung %" PRId64 " in %s, "
							     "it would now be attempt %" PRId64 " on rung %" PRId64 " in %s; run "
							     "vxplan again",
					  s->address, s->action, s->attempt, s->rung,
					  s->region ? s->region : "?", ja->attempt, ja->rung,
					  a->region ? a->region : "?");
	}
	if (k != sp->n)
		return vx_err_set(err, VX_ECONFLICT, "the world changed since the plan was made: %s no longer "
				  "needs to %s; run vxplan again", sp->actions[k].address, sp->actions[k].action);
	return 0;
}

void saved_plan_release(struct saved_plan *sp)
{
	for (size_t i = 0; sp->actions && i < sp->n; i++) {
		struct saved_action *a = &sp->actions[i];

		free(a->address);
		free(a->action);
		free(a->cancel_name);
		free(a->adopt_name);
		free(a->region);
		free(a->spec_hash);
	}
	free(sp->actions);
	for (size_t i = 0; i < sp->ntargets; i++)
		free(sp->targets[i]);
	free(sp->targets);
	free(sp->stack);
	free(sp->dir);
	free(sp->dir_in_repo);
	free(sp->state_commit);
	free(sp->state_lineage);
	free(sp->state_salt);
	free(sp->decl_hash);
	free(sp->planned_by);
	free(sp->pr_url);
	memset(sp, 0, sizeof(*sp));
}

/* A string member or NULL (null or absent); VX_EINVAL for another type. */
static int get_str(const cJSON *o, const char *key, char **out, int required, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return vx_err_set(err, VX_EINVAL, "saved plan: \"%s\" is missing", key);
		return 0;
	}
	if (!cJSON_IsString(v))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"%s\" must be a string", key);
	*out = strdup(v->valuestring);
	return *out ? 0 : vx_err_set(err, VX_ENOMEM, "saved plan: out of memory");
}

static int64_t get_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* A pull request number: null or absent, or a whole number from 1 to 999999999. */
static int pr_number_ok(const cJSON *n)
{
	if (!n || cJSON_IsNull(n))
		return 1;
	return cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= 999999999 &&
	       n->valuedouble == (double)(int64_t)n->valuedouble;
}

/* "planned_by", when there: the actor and the pull request number (1 to 999999999) or null. */
static int parse_planned_by(struct saved_plan *out, const cJSON *root, struct vx_err *err)
{
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(root, "planned_by");
	const cJSON *n;
	int rc;

	if (!by || cJSON_IsNull(by))
		return 0;
	n = cJSON_GetObjectItemCaseSensitive(by, "pull_request");
	if (!cJSON_IsObject(by) || !pr_number_ok(n))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"planned_by\" must be an object "
						  "with an actor and a pull request number");
	if ((rc = get_str(by, "actor", &out->planned_by, 1, err)) < 0 ||
	    (rc = get_str(by, "pull_request_url", &out->pr_url, 0, err)) < 0)
		return rc;
	/* cJSON_IsNumber(NULL) is false, which the analyzer cannot see in the library.
	 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	out->pr_number = cJSON_IsNumber(n) ? (int64_t)n->valuedouble : 0;
	return 0;
}

/* "targets": the -target addresses, strings (absent: none). */
static int parse_targets(struct saved_plan *out, const cJSON *root, struct vx_err *err)
{
	const cJSON *t, *targets = cJSON_GetObjectItemCaseSensitive(root, "targets");

	if (targets && !cJSON_IsArray(targets))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"targets\" must be an array");
	out->targets = calloc((size_t)cJSON_GetArraySize(targets) + 1, sizeof(*out->targets));
	if (!out->targets)
		return vx_err_set(err, VX_ENOMEM, "saved plan: out of memory");
	cJSON_ArrayForEach(t, targets)
	{
		if (!cJSON_IsString(t))
			return vx_err_set(err, VX_EINVAL, "saved plan: \"targets\" must hold strings");
		out->targets[out->ntargets] = strdup(t->valuestring);
		if (!out->targets[out->ntargets++])
			return vx_err_set(err, VX_ENOMEM, "saved plan: out of memory");
	}
	return 0;
}

/* "state": the commit, lineage and salt of the state planned against, and its serial (a string). */
static int parse_state(struct saved_plan *out, const cJSON *root, struct vx_err *err)
{
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(root, "state");
	char *serial = NULL;
	int rc;

	if (!cJSON_IsObject(state))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"state\" is missing");
	if ((rc = get_str(state, "commit", &out->state_commit, 0, err)) < 0 ||
	    (rc = get_str(state, "lineage", &out->state_lineage, 0, err)) < 0 ||
	    (rc = get_str(state, "salt", &out->state_salt, 0, err)) < 0 ||
	    (rc = get_str(state, "serial", &serial, 1, err)) < 0) {
		free(serial);
		return rc;
	}
	out->state_serial = serial ? strtoull(serial, NULL, 10) : 0;
	free(serial);
	return 0;
}

/* actions[i], a: what to do where, and the run it starts (its rung, attempt, spec hash). */
static int parse_action(struct saved_action *sa, const cJSON *a, size_t i, struct vx_err *err)
{
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(a, "after");
	int rc;

	if (!cJSON_IsObject(a))
		return vx_err_set(err, VX_EINVAL, "saved plan: actions[%zu] is not an object", i);
	if ((rc = get_str(a, "address", &sa->address, 1, err)) < 0 ||
	    (rc = get_str(a, "action", &sa->action, 1, err)) < 0 ||
	    (rc = get_str(a, "cancel", &sa->cancel_name, 0, err)) < 0 ||
	    (rc = get_str(a, "adopt", &sa->adopt_name, 0, err)) < 0 ||
	    (rc = get_str(a, "region", &sa->region, 0, err)) < 0)
		return rc;
	if (cJSON_IsObject(after)) {
		if ((rc = get_str(after, "spec_hash", &sa->spec_hash, 0, err)) < 0)
			return rc;
		sa->run = get_int(after, "run");
		sa->attempt = get_int(after, "attempt");
		sa->has_rung = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(after, "rung"));
		sa->rung = get_int(after, "rung");
	}
	return 0;
}

static int parse_actions(struct saved_plan *out, const cJSON *root, struct vx_err *err)
{
	const cJSON *a, *actions = cJSON_GetObjectItemCaseSensitive(root, "actions");
	int rc;

	if (!cJSON_IsArray(actions))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"actions\" must be an array");
	out->actions = calloc((size_t)cJSON_GetArraySize(actions) + 1, sizeof(*out->actions));
	if (!out->actions)
		return vx_err_set(err, VX_ENOMEM, "saved plan: out of memory");
	cJSON_ArrayForEach(a, actions)
	{
		/* Counted before it is read: saved_plan_release frees what a failed action holds. */
		out->n++;
		if ((rc = parse_action(&out->actions[out->n - 1], a, out->n - 1, err)) < 0)
			return rc;
	}
	return 0;
}

int saved_plan_parse(struct saved_plan *out, const char *json, size_t len, struct vx_err *err)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!root || !cJSON_IsObject(root)) {
		rc = vx_err_set(err, VX_EINVAL, "saved plan: not a JSON object");
		goto done;
	}
	out->format_version = get_int(root, "format_version");
	if (out->format_version != PLAN_FORMAT_VERSION) {
		rc = vx_err_set(err, VX_EINVAL, "saved plan: format_version %" PRId64 " is not supported "
				"(this vx reads %d)", out->format_version, PLAN_FORMAT_VERSION);
		goto done;
	}
	if ((rc = get_str(root, "stack", &out->stack, 1, err)) < 0 ||
	    (rc = get_str(root, "dir", &out->dir, 1, err)) < 0 ||
	    (rc = get_str(root, "dir_in_repo", &out->dir_in_repo, 0, err)) < 0 ||
	    (rc = get_str(root, "declaration_hash", &out->decl_hash, 1, err)) < 0)
		goto done;
	out->refresh = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "refresh"));
	out->allow_other_lineage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "allow_other_lineage"));
	out->allow_released = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "allow_released"));
	if ((rc = parse_planned_by(out, root, err)) < 0 || (rc = parse_targets(out, root, err)) < 0 ||
	    (rc = parse_state(out, root, err)) < 0)
		goto done;
	rc = parse_actions(out, root, err);
done:
	cJSON_Delete(root);
	if (rc < 0)
		saved_plan_release(out);
	return rc;
}
