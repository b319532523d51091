/*
 * vx report's outputs (reconcile/out/report.h): the JSON document of
 * docs/report.md, the runs as CSV, the -since/-until forms, and the cost
 * of one run for vx log.
 */
#include "reconcile/out/report.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/banned.h"

#define PRICE_NOTE "estimate: list price x running hours x replicas (machine and GPUs), at the Spot, " \
		   "FLEX_START or on-demand rate of the run's strategy; a reservation's cost is its VM-hours " \
		   "at the on-demand rate, used or not (a persistent resource's at the training rate; a " \
		   "booking's only inside its window, the on-demand rate standing in for calendar-mode " \
		   "prices), the hours no run used counted as waste. Not included: negotiated prices, " \
		   "committed-use discounts, Vertex AI's training management fee, storage and network."

/* ---- JSON ---- */

static int add_str(cJSON *o, const char *k, const char *v)
{
	cJSON *item = v ? cJSON_CreateString(v) : cJSON_CreateNull();

	return item && cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_num(cJSON *o, const char *k, double v)
{
	return cJSON_AddNumberToObject(o, k, v) ? 0 : -1;
}

static int add_bool(cJSON *o, const char *k, int v)
{
	return cJSON_AddBoolToObject(o, k, v) ? 0 : -1;
}

static int add_time(cJSON *o, const char *k, int64_t ms)
{
	char t[STATE_TIME_MAX];

	if (ms <= 0)
		return add_str(o, k, NULL);
	/* Whole seconds: the report's times are RFC 3339 without fraction. */
	state_time_format(ms - ms % 1000, t);
	return add_str(o, k, t);
}

static int add_money(cJSON *o, const char *k, int known, double usd)
{
	return known ? add_num(o, k, round(usd * 100.0) / 100.0) : add_str(o, k, NULL);
}

static cJSON *run_json(const struct report_run *rr)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || add_str(o, "stack", rr->stack) < 0 || add_str(o, "address", rr->address) < 0 ||
	    add_str(o, "group", rr->group) < 0 || add_num(o, "attempt", (double)rr->attempt) < 0 ||
	    add_num(o, "rung", (double)rr->rung) < 0 || add_str(o, "region", rr->region) < 0 ||
	    add_str(o, "strategy", rr->strategy) < 0 || add_str(o, "machine_type", rr->machine_type) < 0 ||
	    add_str(o, "accelerator_type", rr->accelerator_type) < 0 ||
	    add_num(o, "accelerator_count", (double)rr->accelerator_count) < 0 ||
	    add_num(o, "replicas", (double)rr->replicas) < 0 || add_str(o, "state", rr->state) < 0 ||
	    add_str(o, "class", rr->cls) < 0 || add_str(o, "outcome", rr->outcome) < 0 ||
	    add_time(o, "created", rr->created_ms) < 0 || add_time(o, "started", rr->started_ms) < 0 ||
	    add_time(o, "ended", rr->ended_ms) < 0 || add_num(o, "queued_seconds", (double)rr->queued_s) < 0 ||
	    add_num(o, "running_seconds", (double)rr->running_s) < 0 ||
	    add_money(o, "usd", rr->priced, rr->usd) < 0 || add_bool(o, "estimate", rr->estimate) < 0 ||
	    add_str(o, "unpriced_reason", rr->unpriced_reason) < 0 || add_str(o, "resource", rr->resource) < 0 ||
	    add_str(o, "message", rr->message) < 0 || add_str(o, "note", rr->note) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *reservation_json(const struct report_reservation *rv)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || add_str(o, "stack", rv->stack) < 0 || add_str(o, "address", rv->address) < 0 ||
	    add_str(o, "zone", rv->zone) < 0 || add_str(o, "machine_type", rv->machine_type) < 0 ||
	    add_str(o, "accelerator_type", rv->accelerator_type) < 0 || add_num(o, "count", (double)rv->count) < 0 ||
	    add_time(o, "from", rv->from_ms) < 0 || add_time(o, "to", rv->to_ms) < 0 ||
	    add_num(o, "vm_hours", round(rv->vm_hours * 100.0) / 100.0) < 0 ||
	    add_num(o, "used_vm_hours", round(rv->used_vm_hours * 100.0) / 100.0) < 0 ||
	    add_money(o, "usd", rv->priced, rv->usd) < 0 || add_bool(o, "estimate", rv->estimate) < 0 ||
	    add_money(o, "usd_idle", rv->priced, rv->usd_idle) < 0 || (*rv->job_ref ? add_bool(o, "unused", rv->unused) : add_str(o, "unused", NULL)) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A by_job row's attempts per failure class, {"stockout": 2}: the classes it had, in vx's order. */
static int add_classes(cJSON *o, const struct report_sum *s)
{
	cJSON *c = cJSON_CreateObject();
	const char *name;

	if (!c || !cJSON_AddItemToObject(o, "attempts_by_class", c)) {
		cJSON_Delete(c);
		return -1;
	}
	for (size_t i = 0; (name = report_class_name(i)); i++)
		if (s->classes[i] && add_num(c, name, (double)s->classes[i]) < 0)
			return -1;
	return 0;
}

/* Rows of a breakdown; by_job's with their attempts per class (with_classes). */
static cJSON *sums_json(const struct report_sum *s, size_t n, int with_classes)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(a, o) || add_str(o, "key", s[i].key) < 0 ||
		    add_num(o, "usd", s[i].usd) < 0 || add_num(o, "usd_wasted", s[i].usd_wasted) < 0 ||
		    add_num(o, "runs", (double)s[i].runs) < 0 || (with_classes && add_classes(o, &s[i]) < 0)) {
			if (o && !cJSON_IsArray(a))
				cJSON_Delete(o);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/*
 * The key of the list of what is held (struct report's reservations): the
 * noun of the kinds whose cost is KIND_COST_HELD (docs/report.schema.json
 * names today's, "reservations").
 */
static const char *held_key(void)
{
	for (size_t i = 0; i < kind_count; i++)
		if (kind_table[i]->cost == KIND_COST_HELD)
			return kind_table[i]->noun_plural;
	return "held";
}

static int add_item(cJSON *o, const char *k, cJSON *item)
{
	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int push(cJSON *a, cJSON *item)
{
	if (!item)
		return -1;
	return cJSON_AddItemToArray(a, item) ? 0 : (cJSON_Delete(item), -1);
}

static cJSON *failures_json(const struct report *r)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < r->nfailures; i++) {
		const struct report_failure *f = &r->failures[i];
		cJSON *o = cJSON_CreateObject(), *ms = cJSON_CreateArray();

		if (push(a, o) < 0 || add_str(o, "class", f->cls) < 0 || add_num(o, "runs", (double)f->runs) < 0 ||
		    add_item(o, "messages", ms) < 0) {
			cJSON_Delete(a);
			return NULL;
		}
		for (size_t k = 0; k < f->nmessages; k++) {
			const struct report_message *m = &f->messages[k];
			cJSON *mo = cJSON_CreateObject(), *addr = cJSON_CreateArray();

			if (push(ms, mo) < 0 || add_str(mo, "message", m->message) < 0 ||
			    add_num(mo, "runs", (double)m->runs) < 0 || add_item(mo, "addresses", addr) < 0) {
				cJSON_Delete(a);
				return NULL;
			}
			for (size_t j = 0; j < m->naddresses; j++)
				if (push(addr, cJSON_CreateString(m->addresses[j])) < 0) {
					cJSON_Delete(a);
					return NULL;
				}
		}
	}
	return a;
}

static cJSON *waiting_json(const struct report *r)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < r->nwaiting; i++) {
		const struct report_wait *w = &r->waiting[i];
		cJSON *o = cJSON_CreateObject();

		if (push(a, o) < 0 || add_str(o, "strategy", w->strategy) < 0 || add_str(o, "region", w->region) < 0 ||
		    add_num(o, "runs", (double)w->runs) < 0 || add_num(o, "median_seconds", (double)w->median_s) < 0 ||
		    add_num(o, "p90_seconds", (double)w->p90_s) < 0) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* "budgets": each stack's budget line and figures, only when some stack sets one. */
static int budgets_json(cJSON *doc, const struct report *r)
{
	cJSON *a;

	if (!r->nbudgets)
		return 0;
	if (!(a = cJSON_CreateArray()) || add_item(doc, "budgets", a) < 0)
		return -1;
	for (size_t i = 0; i < r->nbudgets; i++) {
		const struct report_budget *b = &r->budgets[i];
		cJSON *o = cJSON_CreateObject();

		if (push(a, o) < 0 || add_str(o, "stack", b->stack) < 0 || add_str(o, "period", b->period) < 0 ||
		    add_num(o, "limit", b->limit) < 0 || add_money(o, "spent", b->spent_known, b->spent) < 0 ||
		    add_str(o, "line", b->line) < 0)
			return -1;
	}
	return 0;
}

static int report_json_fill(cJSON *doc, const struct report *r)
{
	cJSON *stacks = cJSON_CreateArray(), *prices = cJSON_CreateObject(), *runs = cJSON_CreateArray();
	cJSON *resv = cJSON_CreateArray(), *totals = cJSON_CreateObject();

	if (add_num(doc, "version", 1) < 0 || add_time(doc, "generated", r->generated_ms) < 0 ||
	    add_time(doc, "since", r->since_ms) < 0 || add_time(doc, "until", r->until_ms) < 0 ||
	    add_item(doc, "stacks", stacks) < 0) {
		cJSON_Delete(prices);
		cJSON_Delete(runs);
		cJSON_Delete(resv);
		cJSON_Delete(totals);
		return -1;
	}
	for (size_t i = 0; i < r->nstacks; i++)
		if (push(stacks, cJSON_CreateString(r->stacks[i])) < 0)
			goto fail;
	if (add_item(doc, "prices", prices) < 0) {
		prices = NULL;
		goto fail;
	}
	if (add_str(prices, "source", r->price_source) < 0 || add_str(prices, "date", r->price_date) < 0 ||
	    add_str(prices, "note", PRICE_NOTE) < 0)
		goto fail_items;
	if (add_item(doc, "runs", runs) < 0) {
		runs = NULL;
		goto fail_items;
	}
	for (size_t i = 0; i < r->nruns; i++)
		if (push(runs, run_json(&r->runs[i])) < 0)
			goto fail_resv;
	if (add_item(doc, held_key(), resv) < 0) {
		resv = NULL;
		goto fail_resv;
	}
	for (size_t i = 0; i < r->nreservations; i++)
		if (push(resv, reservation_json(&r->reservations[i])) < 0)
			goto fail_totals;
	if (add_item(doc, "totals", totals) < 0) {
		totals = NULL;
		goto fail_totals;
	}
	if (add_num(totals, "usd", r->usd) < 0 || add_num(totals, "usd_wasted", r->usd_wasted) < 0 ||
	    add_item(totals, "by_job", sums_json(r->by_job, r->nby_job, 1)) < 0 ||
	    add_item(totals, "by_week", sums_json(r->by_week, r->nby_week, 0)) < 0 ||
	    add_item(totals, "by_accelerator", sums_json(r->by_accelerator, r->nby_accelerator, 0)) < 0 ||
	    add_item(totals, "by_strategy", sums_json(r->by_strategy, r->nby_strategy, 0)) < 0 ||
	    add_item(doc, "waiting", waiting_json(r)) < 0 || add_item(doc, "failures", failures_json(r)) < 0 ||
	    budgets_json(doc, r) < 0)
		return -1;
	return 0;
fail:
	cJSON_Delete(prices);
fail_items:
	cJSON_Delete(runs);
fail_resv:
	cJSON_Delete(resv);
fail_totals:
	cJSON_Delete(totals);
	return -1;
}

int report_to_json(const struct report *r, cJSON **out, struct vx_err *err)
{
	cJSON *doc = cJSON_CreateObject();

	*out = NULL;
	if (!doc || report_json_fill(doc, r) < 0) {
		cJSON_Delete(doc);
		return vx_err_set(err, VX_ENOMEM, "report: out of memory");
	}
	*out = doc;
	return 0;
}

/* ---- CSV ---- */

static const char *const csv_fields[] = {
	"stack", "address", "group", "attempt", "rung", "region", "strategy", "machine_type", "accelerator_type",
	"accelerator_count", "replicas", "state", "class", "outcome", "created", "started", "ended",
	"queued_seconds", "running_seconds", "usd", "estimate", "unpriced_reason", "resource", "message", "note",
};

/*
 * One field, quoted when it holds a comma, a quote or a line break (RFC 4180).
 * A text that a spreadsheet would take for a formula (starting with =, +, -
 * or @, or with a tab or a carriage return, which some strip first) gets a
 * single quote before it, as OWASP's CSV injection guidance says: a job's
 * failure message is the server's text, and a report is opened in
 * spreadsheets. Numbers are not texts: a negative one is written as it is.
 */
static int csv_field(struct vx_buf *b, const char *s)
{
	const char *tick = s && *s && strchr("=+-@\t\r", *s) ? "'" : "";
	int rc = 0;

	if (!s)
		return 0;
	if (!s[strcspn(s, ",\"\r\n")])
		return vx_buf_adds(b, tick) < 0 || vx_buf_adds(b, s) < 0 ? VX_ENOMEM : 0;
	rc = vx_buf_addc(b, '"') < 0 || vx_buf_adds(b, tick) < 0 ? VX_ENOMEM : 0;
	for (const char *p = s; rc == 0 && *p; p++)
		rc = *p == '"' ? vx_buf_adds(b, "\"\"") : vx_buf_addc(b, *p);
	return rc == 0 ? vx_buf_addc(b, '"') : rc;
}

/* A cJSON value as a CSV field: strings as they are, null empty, numbers and booleans as JSON writes them. */
static int csv_value(struct vx_buf *b, const cJSON *v)
{
	char *s;
	int rc;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsString(v))
		return csv_field(b, v->valuestring);
	if (!(s = cJSON_PrintUnformatted(v)))
		return VX_ENOMEM;
	rc = vx_buf_adds(b, s);
	cJSON_free(s);
	return rc;
}

int report_to_csv(const struct report *r, struct vx_buf *out, struct vx_err *err)
{
	const size_t nf = sizeof(csv_fields) / sizeof(csv_fields[0]);
	int rc = 0;

	for (size_t k = 0; rc == 0 && k < nf; k++)
		rc = vx_buf_adds(out, csv_fields[k]) < 0 || vx_buf_adds(out, k + 1 < nf ? "," : "\r\n") < 0 ? -1 : 0;
	for (size_t i = 0; rc == 0 && i < r->nruns; i++) {
		/* Through the JSON object, so both outputs carry the same text for each figure. */
		cJSON *o = run_json(&r->runs[i]);

		if (!o) {
			rc = -1;
			break;
		}
		for (size_t k = 0; rc == 0 && k < nf; k++)
			rc = csv_value(out, cJSON_GetObjectItemCaseSensitive(o, csv_fields[k])) < 0 ||
					     vx_buf_adds(out, k + 1 < nf ? "," : "\r\n") < 0
				     ? -1
				     : 0;
		cJSON_Delete(o);
	}
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "report: out of memory") : 0;
}

/* ---- -since / -until ---- */

int report_parse_when(const char *flag, const char *s, int64_t now_ms, int64_t *out, struct vx_err *err)
{
	char *end = NULL;
	long long n;

	if (s && isdigit((unsigned char)s[0])) {
		errno = 0;
		n = strtoll(s, &end, 10);
		if (errno == 0 && end != s && end[0] && !end[1] && n >= 0 && n <= 100000) {
			int64_t unit = end[0] == 'm' ? 60000 : end[0] == 'h' ? 3600000
							     : end[0] == 'd' ? 86400000
							     : end[0] == 'w' ? 7 * INT64_C(86400000) : 0;

			if (unit) {
				*out = now_ms - (int64_t)n * unit;
				return 0;
			}
		}
		if (strlen(s) == 10) {
			char day[32];

			snprintf(day, sizeof(day), "%sT00:00:00Z", s);
			if (state_time_parse(day, out) == 0)
				return 0;
		}
		if (state_time_parse(s, out) == 0)
			return 0;
	}
	return vx_err_set(err, VX_EINVAL,
			  "-%s: \"%.64s\" is not a duration (30d, 12h, 2w, 90m), a date (2026-11-01) or an RFC 3339 "
			  "UTC time (2026-11-01T09:00:00Z)",
			  flag, s ? s : "");
}

/* ---- one run, for vx log ---- */

int report_run_cost(struct vx_buf *out, const struct state_record *rec, const struct state_run *run,
		    const struct prices *p)
{
	struct report_input in = REPORT_INPUT_INIT;
	struct report_source src = { .stack = "", .address = rec->address, .record = rec, .run = run };
	struct report r;
	struct vx_err err = VX_ERR_INIT;
	/* Still running: an hour of it from its start, which is its rate. */
	int running = !run->ended_ms && run->started_ms > 0;
	int64_t since = running ? run->started_ms : run->created_ms > 0 ? run->created_ms : 1;
	int64_t until = running ? since + 3600000 : (run->ended_ms > since ? run->ended_ms : since) + 1;
	int rc;

	memset(&r, 0, sizeof(r));
	in.runs = &src;
	in.n = in.cap = 1;
	rc = report_build(&r, &in, p, since, until, until, &err);
	vx_err_release(&err);
	if (rc < 0)
		return rc;
	if (r.nruns != 1 || !r.runs[0].priced)
		rc = vx_buf_adds(out, "unknown");
	else if ((rc = capacity_money(out, "USD", r.runs[0].usd, 2)) == 0 && running)
		rc = vx_buf_adds(out, "/h");
	report_release(&r);
	return rc;
}
