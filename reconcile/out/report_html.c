#include "reconcile/out/report_html.h"

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "util/buf.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/banned.h"

/*
 * Two passes: the document is read into the structs below and checked whole
 * (so a malformed document writes nothing), then the page is written from
 * them. Strings are borrowed from the cJSON tree, which outlives the call.
 */

struct rh_run {
	const char *stack, *address, *group, *region, *strategy, *machine_type, *accelerator_type;
	const char *state, *cls, *outcome, *resource, *message, *unpriced_reason, *note;
	int64_t attempt, rung, accelerator_count, replicas, queued_s, running_s;
	int64_t created, started, ended; /* ms since the epoch; -1: null */
	double usd;
	int has_usd, estimate;
	size_t idx;
};

struct rh_break {
	const char *key;
	double usd, usd_wasted;
	int64_t runs;
	const cJSON *classes; /* by_job: attempts_by_class (borrowed), NULL when absent */
};

struct rh_list {
	struct rh_break *v;
	size_t n;
};

struct rh_resv {
	const char *stack, *address, *zone, *machine_type, *accelerator_type;
	int64_t count, from, to;
	double vm_hours, used_vm_hours, usd;
	int has_usd, estimate;
};

struct rh_wait {
	const char *strategy, *region;
	int64_t runs, median_s, p90_s;
};

struct rh_msg {
	const char *message;
	int64_t runs;
	const cJSON *addresses; /* checked: a list of strings */
};

struct rh_fail {
	const char *cls;
	int64_t runs;
	struct rh_msg *msgs;
	size_t nmsgs;
};

/* A stack's budget over its own period ending at the report's generation (docs/budgets.md). */
struct rh_budget {
	const char *stack, *period, *line;
	double limit, spent;
	int has_spent;
};

struct rh_doc {
	const char *generated_s, *since_s, *until_s;
	int64_t generated, since, until;
	int64_t axis0; /* where the timeline starts: since, or the day of the first attempt */
	const cJSON *stacks;
	const char *price_source, *price_date, *price_note;
	struct rh_run *runs;
	size_t nruns;
	struct rh_resv *resv;
	size_t nresv;
	double usd, usd_wasted;
	struct rh_list by_job, by_week, by_accel, by_strategy;
	struct rh_wait *waits;
	size_t nwaits;
	struct rh_fail *fails;
	size_t nfails;
	struct rh_budget *budgets;
	size_t nbudgets;
};

/* ---- reading the document ---- */

enum rh_type { T_STR, T_NUM, T_INT, T_SINT, T_BOOL, T_TIME, T_LIST, T_OBJ };

static const char *const type_words[] = {
	[T_STR] = "a string", [T_NUM] = "a number", [T_INT] = "a whole number", [T_SINT] = "a whole number",
	[T_BOOL] = "true or false", [T_TIME] = "an RFC 3339 time", [T_LIST] = "a list",
	[T_OBJ] = "an object",
};

/* What was found instead, for the error: a string is quoted, cleaned and cut. */
static void describe(char *out, size_t outsz, const cJSON *v)
{
	if (!v)
		snprintf(out, outsz, "nothing (the field is missing)");
	else if (cJSON_IsNull(v))
		snprintf(out, outsz, "null");
	else if (cJSON_IsBool(v))
		snprintf(out, outsz, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNumber(v))
		snprintf(out, outsz, "the number %g", v->valuedouble);
	else if (cJSON_IsArray(v))
		snprintf(out, outsz, "a list");
	else if (cJSON_IsObject(v))
		snprintf(out, outsz, "an object");
	else if (cJSON_IsString(v)) {
		char *c = vx_text_clean(v->valuestring);
		size_t n = c ? strlen(c) : 0;

		if (n > 60) { /* cut on a UTF-8 boundary */
			n = 60;
			while (n > 0 && ((unsigned char)c[n] & 0xC0) == 0x80)
				n--;
		}
		snprintf(out, outsz, "\"%.*s%s\"", (int)n, c ? c : "", c && c[n] ? "..." : "");
		free(c);
	} else
		snprintf(out, outsz, "something else");
}

static int bad(struct vx_err *err, const char *where, const char *name, const char *want, const cJSON *v)
{
	char got[128];

	describe(got, sizeof(got), v);
	return vx_err_set(err, VX_EINVAL, "report document: %s%s%s: expected %s, got %s", where,
			  *where ? "." : "", name, want, got);
}

/*
 * Reads obj.name as type t into out (a const char **, an int64_t *, a double *,
 * an int * or a const cJSON **, by type). nullable: null (or a missing field)
 * is allowed and gives NULL / -1 / 0 and *present 0.
 */
static int field(const cJSON *obj, const char *where, const char *name, enum rh_type t, int nullable,
		 void *out, int *present, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	char want[96];

	snprintf(want, sizeof(want), "%s%s", type_words[t], nullable ? " or null" : "");
	if (present)
		*present = 0;
	if (!v || cJSON_IsNull(v)) {
		if (!nullable)
			return bad(err, where, name, want, v);
		switch (t) {
		case T_STR: *(const char **)out = NULL; break;
		case T_INT: case T_SINT: case T_TIME: *(int64_t *)out = -1; break;
		case T_NUM: *(double *)out = 0; break;
		case T_BOOL: *(int *)out = 0; break;
		case T_LIST: case T_OBJ: *(const cJSON **)out = NULL; break;
		}
		return 0;
	}
	switch (t) {
	case T_STR:
		if (!cJSON_IsString(v))
			return bad(err, where, name, want, v);
		*(const char **)out = v->valuestring;
		break;
	case T_TIME:
		if (!cJSON_IsString(v) || vx_time_parse((int64_t *)out, v->valuestring, 0) < 0)
			return bad(err, where, name, want, v);
		break;
	case T_NUM:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
			return bad(err, where, name, want, v);
		*(double *)out = v->valuedouble;
		break;
	case T_INT:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
		    v->valuedouble < 0 || v->valuedouble > 9007199254740992.0)
			return bad(err, where, name, "a whole number, 0 or more", v);
		*(int64_t *)out = (int64_t)v->valuedouble;
		break;
	case T_SINT: /* a rung: a negative one is shown as none */
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
		    fabs(v->valuedouble) > 9007199254740992.0)
			return bad(err, where, name, want, v);
		*(int64_t *)out = v->valuedouble < 0 ? -1 : (int64_t)v->valuedouble;
		break;
	case T_BOOL:
		if (!cJSON_IsBool(v))
			return bad(err, where, name, want, v);
		*(int *)out = cJSON_IsTrue(v);
		break;
	case T_LIST:
		if (!cJSON_IsArray(v))
			return bad(err, where, name, want, v);
		*(const cJSON **)out = v;
		break;
	case T_OBJ:
		if (!cJSON_IsObject(v))
			return bad(err, where, name, want, v);
		*(const cJSON **)out = v;
		break;
	}
	if (present)
		*present = 1;
	return 0;
}

/* The objects of a list, checked to be objects; where is "runs", i the index. */
static int list_item(const cJSON *item, const char *list, size_t i, char *where, size_t wsz, struct vx_err *err)
{
	snprintf(where, wsz, "%s[%zu]", list, i);
	if (!cJSON_IsObject(item)) {
		char got[128];

		describe(got, sizeof(got), item);
		return vx_err_set(err, VX_EINVAL, "report document: %s: expected an object, got %s", where, got);
	}
	return 0;
}

/*
 * The fields of one object of a list, as a table (STYLE: variation by table):
 * its name, type, whether null is allowed, where it goes in the record and,
 * for a nullable number, where "present" goes (-1: nowhere).
 */
struct rh_field {
	const char *name;
	enum rh_type t;
	int nullable;
	size_t off;
	long present_off;
};

#define RH_FIELD(s, n, t, nl, m) { n, t, nl, offsetof(struct s, m), -1 }
#define RH_FIELD_P(s, n, t, nl, m, p) { n, t, nl, offsetof(struct s, m), (long)offsetof(struct s, p) }

/* What the page draws from is required; what it only shows may be missing. */
static const struct rh_field run_fields[] = {
	RH_FIELD(rh_run, "stack", T_STR, 0, stack),
	RH_FIELD(rh_run, "address", T_STR, 0, address),
	RH_FIELD(rh_run, "group", T_STR, 0, group),
	RH_FIELD(rh_run, "attempt", T_INT, 0, attempt),
	RH_FIELD(rh_run, "rung", T_SINT, 1, rung),
	RH_FIELD(rh_run, "region", T_STR, 1, region),
	RH_FIELD(rh_run, "strategy", T_STR, 1, strategy),
	RH_FIELD(rh_run, "machine_type", T_STR, 1, machine_type),
	RH_FIELD(rh_run, "accelerator_type", T_STR, 1, accelerator_type),
	RH_FIELD(rh_run, "accelerator_count", T_INT, 1, accelerator_count),
	RH_FIELD(rh_run, "replicas", T_INT, 1, replicas),
	RH_FIELD(rh_run, "state", T_STR, 1, state),
	RH_FIELD(rh_run, "class", T_STR, 1, cls),
	RH_FIELD(rh_run, "outcome", T_STR, 0, outcome),
	RH_FIELD(rh_run, "created", T_TIME, 0, created),
	RH_FIELD(rh_run, "started", T_TIME, 1, started),
	RH_FIELD(rh_run, "ended", T_TIME, 1, ended),
	RH_FIELD(rh_run, "queued_seconds", T_INT, 0, queued_s),
	RH_FIELD(rh_run, "running_seconds", T_INT, 0, running_s),
	RH_FIELD_P(rh_run, "usd", T_NUM, 1, usd, has_usd),
	RH_FIELD(rh_run, "estimate", T_BOOL, 0, estimate),
	RH_FIELD(rh_run, "unpriced_reason", T_STR, 1, unpriced_reason),
	RH_FIELD(rh_run, "resource", T_STR, 1, resource),
	RH_FIELD(rh_run, "message", T_STR, 1, message),
	RH_FIELD(rh_run, "note", T_STR, 1, note),
};

static const struct rh_field wait_fields[] = {
	RH_FIELD(rh_wait, "strategy", T_STR, 1, strategy),
	RH_FIELD(rh_wait, "region", T_STR, 1, region),
	RH_FIELD(rh_wait, "runs", T_INT, 0, runs),
	RH_FIELD(rh_wait, "median_seconds", T_INT, 0, median_s),
	RH_FIELD(rh_wait, "p90_seconds", T_INT, 0, p90_s),
};

static const struct rh_field budget_fields[] = {
	RH_FIELD(rh_budget, "stack", T_STR, 0, stack),
	RH_FIELD(rh_budget, "period", T_STR, 0, period),
	RH_FIELD(rh_budget, "limit", T_NUM, 0, limit),
	RH_FIELD_P(rh_budget, "spent", T_NUM, 1, spent, has_spent),
	RH_FIELD(rh_budget, "line", T_STR, 0, line),
};

static const struct rh_field resv_fields[] = {
	RH_FIELD(rh_resv, "stack", T_STR, 0, stack),
	RH_FIELD(rh_resv, "address", T_STR, 0, address),
	RH_FIELD(rh_resv, "zone", T_STR, 1, zone),
	RH_FIELD(rh_resv, "machine_type", T_STR, 1, machine_type),
	RH_FIELD(rh_resv, "accelerator_type", T_STR, 1, accelerator_type),
	RH_FIELD(rh_resv, "count", T_INT, 0, count),
	RH_FIELD(rh_resv, "from", T_TIME, 1, from),
	RH_FIELD(rh_resv, "to", T_TIME, 1, to),
	RH_FIELD(rh_resv, "vm_hours", T_NUM, 0, vm_hours),
	RH_FIELD(rh_resv, "used_vm_hours", T_NUM, 0, used_vm_hours),
	RH_FIELD_P(rh_resv, "usd", T_NUM, 1, usd, has_usd),
	RH_FIELD(rh_resv, "estimate", T_BOOL, 0, estimate),
};

/* Reads the fields of table f (n of them) from o into the record rec. */
static int read_fields(const cJSON *o, const char *w, void *rec, const struct rh_field *f, size_t n,
		       struct vx_err *err)
{
	for (size_t i = 0; i < n; i++) {
		int *present = f[i].present_off < 0 ? NULL : (int *)((char *)rec + f[i].present_off);
		int rc = field(o, w, f[i].name, f[i].t, f[i].nullable, (char *)rec + f[i].off, present, err);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int read_run(const cJSON *o, const char *w, void *r, struct vx_err *err)
{
	return read_fields(o, w, r, run_fields, sizeof(run_fields) / sizeof(run_fields[0]), err);
}

static int read_resv(const cJSON *o, const char *w, void *r, struct vx_err *err)
{
	return read_fields(o, w, r, resv_fields, sizeof(resv_fields) / sizeof(resv_fields[0]), err);
}

static int read_wait(const cJSON *o, const char *w, void *r, struct vx_err *err)
{
	return read_fields(o, w, r, wait_fields, sizeof(wait_fields) / sizeof(wait_fields[0]), err);
}

static int read_budget(const cJSON *o, const char *w, void *r, struct vx_err *err)
{
	return read_fields(o, w, r, budget_fields, sizeof(budget_fields) / sizeof(budget_fields[0]), err);
}

/*
 * A by_job row's attempts_by_class: an object of failure class -> attempts
 * (a whole number, 1 or more); absent or null in a document from before it.
 */
static int read_classes(const cJSON *row, const char *where, const cJSON **out, struct vx_err *err)
{
	const cJSON *c;
	char w[96];
	int rc;

	if ((rc = field(row, where, "attempts_by_class", T_OBJ, 1, out, NULL, err)) < 0 || !*out)
		return rc;
	snprintf(w, sizeof(w), "%s.attempts_by_class", where);
	cJSON_ArrayForEach(c, *out) {
		int64_t n;

		if ((rc = field(*out, w, c->string, T_INT, 0, &n, NULL, err)) < 0)
			return rc;
	}
	return 0;
}

static int read_breakdown(const cJSON *totals, const char *name, struct rh_list *l, struct vx_err *err)
{
	const cJSON *list = NULL, *it;
	char where[64], lw[32];
	size_t i = 0;
	int rc;

	if ((rc = field(totals, "totals", name, T_LIST, 0, &list, NULL, err)) < 0)
		return rc;
	l->n = (size_t)cJSON_GetArraySize(list);
	if (l->n && !(l->v = calloc(l->n, sizeof(*l->v))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	snprintf(lw, sizeof(lw), "totals.%s", name);
	cJSON_ArrayForEach(it, list) {
		struct rh_break *b;

		if (i >= l->n) /* the list is as long as cJSON_GetArraySize said */
			break;
		b = &l->v[i];
		if ((rc = list_item(it, lw, i++, where, sizeof(where), err)) < 0 ||
		    (rc = field(it, where, "key", T_STR, 0, &b->key, NULL, err)) < 0 ||
		    (rc = field(it, where, "usd", T_NUM, 0, &b->usd, NULL, err)) < 0 ||
		    (rc = field(it, where, "usd_wasted", T_NUM, 0, &b->usd_wasted, NULL, err)) < 0 ||
		    (rc = field(it, where, "runs", T_INT, 0, &b->runs, NULL, err)) < 0 ||
		    (!strcmp(name, "by_job") && (rc = read_classes(it, where, &b->classes, err)) < 0))
			return rc;
	}
	return 0;
}

static int read_failure(const cJSON *o, const char *w, void *rec, struct vx_err *err)
{
	struct rh_fail *f = rec;
	const cJSON *msgs = NULL, *it, *a;
	char where[128];
	size_t i = 0;
	int rc;

	if ((rc = field(o, w, "class", T_STR, 1, &f->cls, NULL, err)) < 0 ||
	    (rc = field(o, w, "runs", T_INT, 0, &f->runs, NULL, err)) < 0 ||
	    (rc = field(o, w, "messages", T_LIST, 0, &msgs, NULL, err)) < 0)
		return rc;
	f->nmsgs = (size_t)cJSON_GetArraySize(msgs);
	if (f->nmsgs && !(f->msgs = calloc(f->nmsgs, sizeof(*f->msgs))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, msgs) {
		struct rh_msg *m;
		char lw[96];
		size_t j = 0;

		if (i >= f->nmsgs) /* the list is as long as cJSON_GetArraySize said */
			break;
		m = &f->msgs[i];
		snprintf(lw, sizeof(lw), "%s.messages", w);
		if ((rc = list_item(it, lw, i++, where, sizeof(where), err)) < 0 ||
		    (rc = field(it, where, "message", T_STR, 1, &m->message, NULL, err)) < 0 ||
		    (rc = field(it, where, "runs", T_INT, 0, &m->runs, NULL, err)) < 0 ||
		    (rc = field(it, where, "addresses", T_LIST, 0, &m->addresses, NULL, err)) < 0)
			return rc;
		cJSON_ArrayForEach(a, m->addresses) {
			if (!cJSON_IsString(a)) {
				char got[128];

				describe(got, sizeof(got), a);
				return vx_err_set(err, VX_EINVAL, "report document: %s.addresses[%zu]: expected a string, got %s",
						  where, j, got);
			}
			j++;
		}
	}
	return 0;
}

/*
 * Reads the list (NULL: none) into *out, n elements of size sz, each object
 * by read (named "name[i]" in errors): 0, or the first error.
 */
static int read_list(const cJSON *list, const char *name, void *out, size_t *n, size_t sz,
		     int (*read)(const cJSON *, const char *, void *, struct vx_err *), struct vx_err *err)
{
	const cJSON *it;
	char where[64];
	char *v = NULL;
	size_t i = 0, len = list ? (size_t)cJSON_GetArraySize(list) : 0;
	int rc;

	if (len && !(v = calloc(len, sz)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	*(void **)out = v;
	*n = len; /* only once there is room: the release walks n of them */
	cJSON_ArrayForEach(it, list) {
		if (i >= len) /* the list is as long as cJSON_GetArraySize said */
			break;
		if ((rc = list_item(it, name, i, where, sizeof(where), err)) < 0 ||
		    (rc = read(it, where, v + i * sz, err)) < 0)
			return rc;
		i++;
	}
	return 0;
}

static int read_doc(const cJSON *doc, struct rh_doc *d, struct vx_err *err)
{
	const cJSON *prices = NULL, *runs = NULL, *resv = NULL, *totals = NULL, *waits = NULL, *fails = NULL, *it;
	const cJSON *budgets = NULL;
	int64_t version = 0;
	size_t i;
	int rc;

	if (!cJSON_IsObject(doc))
		return vx_err_set(err, VX_EINVAL, "report document: expected an object");
	if ((rc = field(doc, "", "version", T_INT, 0, &version, NULL, err)) < 0)
		return rc;
	if (version != 1)
		return vx_err_set(err, VX_EINVAL, "report document: version: this vx reads version 1, got %" PRId64
				  " (a newer vx wrote it: render it with that vx)", version);
	if ((rc = field(doc, "", "generated", T_TIME, 0, &d->generated, NULL, err)) < 0 ||
	    (rc = field(doc, "", "since", T_TIME, 0, &d->since, NULL, err)) < 0 ||
	    (rc = field(doc, "", "until", T_TIME, 0, &d->until, NULL, err)) < 0 ||
	    (rc = field(doc, "", "stacks", T_LIST, 0, &d->stacks, NULL, err)) < 0 ||
	    (rc = field(doc, "", "prices", T_OBJ, 0, &prices, NULL, err)) < 0 ||
	    (rc = field(prices, "prices", "source", T_STR, 0, &d->price_source, NULL, err)) < 0 ||
	    (rc = field(prices, "prices", "date", T_STR, 0, &d->price_date, NULL, err)) < 0 ||
	    (rc = field(prices, "prices", "note", T_STR, 1, &d->price_note, NULL, err)) < 0 ||
	    (rc = field(doc, "", "runs", T_LIST, 0, &runs, NULL, err)) < 0 ||
	    (rc = field(doc, "", "reservations", T_LIST, 1, &resv, NULL, err)) < 0 ||
	    (rc = field(doc, "", "totals", T_OBJ, 0, &totals, NULL, err)) < 0 ||
	    (rc = field(totals, "totals", "usd", T_NUM, 0, &d->usd, NULL, err)) < 0 ||
	    (rc = field(totals, "totals", "usd_wasted", T_NUM, 0, &d->usd_wasted, NULL, err)) < 0 ||
	    (rc = read_breakdown(totals, "by_job", &d->by_job, err)) < 0 ||
	    (rc = read_breakdown(totals, "by_week", &d->by_week, err)) < 0 ||
	    (rc = read_breakdown(totals, "by_accelerator", &d->by_accel, err)) < 0 ||
	    (rc = read_breakdown(totals, "by_strategy", &d->by_strategy, err)) < 0 ||
	    (rc = field(doc, "", "waiting", T_LIST, 0, &waits, NULL, err)) < 0 ||
	    (rc = field(doc, "", "failures", T_LIST, 0, &fails, NULL, err)) < 0 ||
	    (rc = field(doc, "", "budgets", T_LIST, 1, &budgets, NULL, err)) < 0)
		return rc;
	if (d->until <= d->since)
		return vx_err_set(err, VX_EINVAL, "report document: until: %s is not after since (%s)",
				  cJSON_GetObjectItemCaseSensitive(doc, "until")->valuestring,
				  cJSON_GetObjectItemCaseSensitive(doc, "since")->valuestring);
	i = 0;
	cJSON_ArrayForEach(it, d->stacks) {
		if (!cJSON_IsString(it)) {
			char got[128];

			describe(got, sizeof(got), it);
			return vx_err_set(err, VX_EINVAL, "report document: stacks[%zu]: expected a string, got %s", i, got);
		}
		i++;
	}

	if ((rc = read_list(runs, "runs", &d->runs, &d->nruns, sizeof(*d->runs), read_run, err)) < 0 ||
	    (rc = read_list(resv, "reservations", &d->resv, &d->nresv, sizeof(*d->resv), read_resv, err)) < 0 ||
	    (rc = read_list(waits, "waiting", &d->waits, &d->nwaits, sizeof(*d->waits), read_wait, err)) < 0 ||
	    (rc = read_list(fails, "failures", &d->fails, &d->nfails, sizeof(*d->fails), read_failure, err)) < 0 ||
	    (rc = read_list(budgets, "budgets", &d->budgets, &d->nbudgets, sizeof(*d->budgets), read_budget, err)) < 0)
		return rc;
	for (i = 0; i < d->nruns; i++)
		d->runs[i].idx = i;
	d->generated_s = cJSON_GetObjectItemCaseSensitive(doc, "generated")->valuestring;
	d->since_s = cJSON_GetObjectItemCaseSensitive(doc, "since")->valuestring;
	d->until_s = cJSON_GetObjectItemCaseSensitive(doc, "until")->valuestring;
	return 0;
}

static void doc_release(struct rh_doc *d)
{
	for (size_t i = 0; i < d->nfails; i++)
		free(d->fails[i].msgs);
	free(d->fails);
	free(d->budgets);
	free(d->waits);
	free(d->by_job.v);
	free(d->by_week.v);
	free(d->by_accel.v);
	free(d->by_strategy.v);
	free(d->resv);
	free(d->runs);
}

/* ---- writing ---- */

struct rh_out {
	struct vx_buf *b;
	struct vx_buf scratch; /* the cleaned form of the string being escaped */
	int rc;                /* the first write error; later writes do nothing */
};

static void put(struct rh_out *o, const char *s)
{
	if (o->rc == 0)
		o->rc = vx_buf_adds(o->b, s);
}

static void VX_PRINTF(2, 3) putf(struct rh_out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->rc)
		return;
	va_start(ap, fmt);
	o->rc = vx_buf_vprintf(o->b, fmt, ap);
	va_end(ap);
}

/* Appends n bytes of untrusted s: controls replaced, then & < > " ' escaped. */
static void esc_n(struct rh_out *o, const char *s, size_t n)
{
	const char *p, *run;

	if (o->rc || !s)
		return;
	vx_buf_reset(&o->scratch);
	if ((o->rc = vx_text_add_clean(&o->scratch, s, n)) < 0)
		return;
	for (p = run = vx_buf_str(&o->scratch); *p && o->rc == 0; p++) {
		const char *e;

		switch (*p) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&#39;"; break;
		default: continue;
		}
		if ((o->rc = vx_buf_add(o->b, run, (size_t)(p - run))) == 0)
			o->rc = vx_buf_adds(o->b, e);
		run = p + 1;
	}
	if (o->rc == 0)
		o->rc = vx_buf_add(o->b, run, (size_t)(p - run));
}

static void esc(struct rh_out *o, const char *s)
{
	if (s)
		esc_n(o, s, strlen(s));
}

/* esc() of s, or dash for NULL. */
static void esc_or(struct rh_out *o, const char *s, const char *dash)
{
	if (s)
		esc(o, s);
	else
		put(o, dash);
}

/* At most max bytes of s (cut on a UTF-8 boundary, "…" marking the cut), escaped. */
static void esc_cut(struct rh_out *o, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max) {
		esc_n(o, s, n);
		return;
	}
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	esc_n(o, s, max);
	put(o, "\xe2\x80\xa6");
}

/* "$1,240.50": cents rounded, thousands separated, no locale. */
static void money(struct rh_out *o, double usd)
{
	long long cents = llround(usd * 100.0);
	unsigned long long whole, c;
	char digits[32], grouped[48];
	size_t n, g = 0;

	c = (unsigned long long)(cents < 0 ? -cents : cents);
	whole = c / 100;
	n = (size_t)snprintf(digits, sizeof(digits), "%llu", whole);
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			grouped[g++] = ',';
		grouped[g++] = digits[i];
	}
	grouped[g] = '\0';
	putf(o, "%s$%s.%02llu", cents < 0 ? "-" : "", grouped, c % 100);
}

/* "45s", "12m", "3h 05m", "2d 04h". */
static void duration(struct rh_out *o, int64_t s)
{
	if (s < 60)
		putf(o, "%" PRId64 "s", s);
	else if (s < 3600)
		putf(o, "%" PRId64 "m", s / 60);
	else if (s < 86400)
		putf(o, "%" PRId64 "h %02" PRId64 "m", s / 3600, s / 60 % 60);
	else
		putf(o, "%" PRId64 "d %02" PRId64 "h", s / 86400, s / 3600 % 24);
}

/* The forms of a time on the page, all UTC. */
enum rh_when {
	W_DAY,      /* 2026-11-20 */
	W_MINUTE,   /* 2026-11-20 10:00 */
	W_UTC,      /* 2026-11-20 10:00 UTC */
	W_MD,       /* 11-20 */
	W_MD_MINUTE /* 11-20 10:00 */
};

static void when(struct rh_out *o, int64_t ms, enum rh_when form)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&t, &tm)) {
		put(o, "\xe2\x80\x94");
		return;
	}
	switch (form) {
	case W_DAY: putf(o, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday); break;
	case W_MINUTE: case W_UTC:
		putf(o, "%04d-%02d-%02d %02d:%02d%s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, form == W_UTC ? " UTC" : "");
		break;
	case W_MD: putf(o, "%02d-%02d", tm.tm_mon + 1, tm.tm_mday); break;
	case W_MD_MINUTE: putf(o, "%02d-%02d %02d:%02d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min); break;
	}
}

/* "18%", or "0.5%" under 10%, where a whole percent would hide the part. */
static void percent(struct rh_out *o, double part, double whole)
{
	double p = whole > 0 ? 100.0 * part / whole : 0.0;

	putf(o, p < 9.95 && p > 0 ? "%.1f%%" : "%.0f%%", p);
}

/* The outcomes in the legend's order; anything else is drawn as "other". */
static const char *const outcomes[] = {
	"succeeded", "preempted", "stockout", "user-error", "failed", "cancelled", "running", "queued", "refused",
};
#define NOUTCOMES (sizeof(outcomes) / sizeof(outcomes[0]))

static const char *outcome_class(const char *outcome)
{
	for (size_t i = 0; i < NOUTCOMES; i++)
		if (strcmp(outcome, outcomes[i]) == 0)
			return outcomes[i];
	return "other";
}

static const char css[] =
	":root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0;--panel:#f6f8fa;"
	"--succeeded:#1a7f37;--preempted:#d4730b;--stockout:#8250df;--user-error:#cf222e;--failed:#82071e;"
	"--cancelled:#8c959f;--running:#0969da;--queued:#54aeff;--refused:#9a6700;--other:#6e7781}\n"
	"@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;--line:#3d444d;"
	"--panel:#151b23;--succeeded:#3fb950;--preempted:#f0883e;--stockout:#ab7df8;--user-error:#f85149;"
	"--failed:#ff7b72;--cancelled:#9198a1;--running:#4493f8;--queued:#80ccff;--refused:#d29922;--other:#8b949e}}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0 auto;max-width:1120px;padding:20px 24px;background:var(--bg);color:var(--fg);"
	"font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;"
	"-webkit-print-color-adjust:exact;print-color-adjust:exact}\n"
	"h1{font-size:22px;margin:0 0 2px}h2{font-size:17px;margin:26px 0 8px;padding-bottom:3px;"
	"border-bottom:1px solid var(--line)}h3{font-size:14px;margin:14px 0 4px}\n"
	".mute{color:var(--mute)}.est{font-size:12px;color:var(--mute)}\n"
	".tiles{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}.tile{border:1px solid var(--line);"
	"background:var(--panel);border-radius:6px;padding:6px 12px;min-width:150px}"
	".tile b{display:block;font-size:20px}\n"
	"table{border-collapse:collapse;width:100%;margin:4px 0 12px;font-variant-numeric:tabular-nums}"
	"th,td{text-align:left;padding:2px 8px;border-bottom:1px solid var(--line);vertical-align:top}"
	"th{font-weight:600}.n{text-align:right;white-space:nowrap}td.a{word-break:break-all}\n"
	".grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:0 24px}"
	"@media (max-width:640px){.grid{grid-template-columns:minmax(0,1fr)}}\n"
	".legend{display:flex;flex-wrap:wrap;gap:2px 16px;list-style:none;padding:0;margin:6px 0}\n"
	"svg.sw{width:12px;height:12px;vertical-align:-1px;margin-right:4px}\n"
	"svg.tl{display:block;width:100%;height:auto}svg.tl text{fill:var(--fg);font-size:11px}"
	"svg.tl .tick{stroke:var(--line)}svg.tl .ax{fill:var(--mute);font-size:10px}"
	"svg.tl .span{stroke:var(--mute);stroke-width:1}svg.tl .bl{fill:#fff;font-size:9px}\n"
	".q{fill-opacity:.32}.bar .q{stroke-width:.6;stroke:currentColor;stroke-opacity:.5}"
	".bar.hl rect,.bar:hover rect{stroke:var(--fg);stroke-width:1.4}tr.hl td{background:var(--panel)}\n";

static const char css_outcomes[] =
	".o-succeeded{fill:var(--succeeded);color:var(--succeeded)}.o-preempted{fill:var(--preempted);color:var(--preempted)}"
	".o-stockout{fill:var(--stockout);color:var(--stockout)}.o-user-error{fill:var(--user-error);color:var(--user-error)}"
	".o-failed{fill:var(--failed);color:var(--failed)}.o-cancelled{fill:var(--cancelled);color:var(--cancelled)}"
	".o-running{fill:var(--running);color:var(--running)}.o-queued{fill:var(--queued);color:var(--queued)}"
	".o-refused{fill:var(--refused);color:var(--refused)}.o-other{fill:var(--other);color:var(--other)}\n"
	"@page{size:A4;margin:12mm}\n"
	"@media print{body{max-width:none;padding:0;font-size:9pt}h2{break-after:avoid}"
	"tr,.tile,.legend{break-inside:avoid}.tiles{gap:6px}}\n";

/* Links a bar and its row in the attempts table on hover; the page reads the same without it. */
static const char script[] =
	"document.addEventListener('mouseover',function(e){"
	"var t=e.target&&e.target.closest?e.target.closest('[data-run]'):null;"
	"var o=document.querySelectorAll('.hl');for(var i=0;i<o.length;i++)o[i].classList.remove('hl');"
	"if(!t)return;var m=document.querySelectorAll('[data-run=\"'+t.getAttribute('data-run')+'\"]');"
	"for(var j=0;j<m.length;j++)m[j].classList.add('hl');});\n";

static void swatch(struct rh_out *o, const char *cls, int queued)
{
	putf(o, "<svg class=\"sw\" viewBox=\"0 0 12 12\" aria-hidden=\"true\"><rect class=\"o-%s%s\" width=\"12\" "
	     "height=\"12\" rx=\"2\"/></svg>", cls, queued ? " q" : "");
}

static void head(struct rh_out *o, const struct rh_doc *d)
{
	const cJSON *s;
	int first = 1;

	put(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	       "<meta name=\"color-scheme\" content=\"light dark\">\n<title>vx report: ");
	cJSON_ArrayForEach(s, d->stacks) {
		put(o, first ? "" : ", ");
		esc(o, s->valuestring);
		first = 0;
	}
	put(o, first ? "no stack" : "");
	put(o, ", ");
	when(o, d->since, W_DAY);
	put(o, " to ");
	when(o, d->until, W_DAY);
	put(o, "</title>\n<style>\n");
	put(o, css);
	put(o, css_outcomes);
	put(o, "</style>\n</head>\n<body>\n");
}

static size_t count_running(const struct rh_doc *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nruns; i++)
		n += strcmp(d->runs[i].outcome, "running") == 0;
	return n;
}

static void intro(struct rh_out *o, const struct rh_doc *d)
{
	const cJSON *s;
	size_t unpriced = 0;
	int first = 1;

	for (size_t i = 0; i < d->nruns; i++)
		unpriced += !d->runs[i].has_usd;
	put(o, "<header>\n<h1>vx report</h1>\n<p class=\"mute\">");
	put(o, cJSON_GetArraySize(d->stacks) == 1 ? "Stack " : "Stacks ");
	cJSON_ArrayForEach(s, d->stacks) {
		put(o, first ? "<b>" : ", <b>");
		esc(o, s->valuestring);
		put(o, "</b>");
		first = 0;
	}
	put(o, first ? "none" : "");
	put(o, " \xc2\xb7 from <time datetime=\"");
	esc(o, d->since_s);
	put(o, "\">");
	when(o, d->since, W_MINUTE);
	put(o, "</time> to <time datetime=\"");
	esc(o, d->until_s);
	put(o, "\">");
	when(o, d->until, W_MINUTE);
	put(o, "</time> UTC \xc2\xb7 generated ");
	when(o, d->generated, W_UTC);
	put(o, "</p>\n</header>\n<div class=\"tiles\">\n<div class=\"tile\">Spend (estimate)<b>");
	money(o, d->usd);
	put(o, "</b></div>\n<div class=\"tile\">Wasted on attempts that did not finish<b>");
	money(o, d->usd_wasted);
	put(o, " <small class=\"mute\">");
	percent(o, d->usd_wasted, d->usd);
	put(o, "</small></b></div>\n<div class=\"tile\">Attempts<b>");
	putf(o, "%zu", d->nruns);
	put(o, "</b>");
	putf(o, "%zu running now", count_running(d));
	put(o, "</div>\n</div>\n<p class=\"est\">Every amount is estimated from the price table of ");
	esc(o, d->price_source);
	put(o, ", dated ");
	esc(o, d->price_date);
	put(o, "; Google's bill is the authority.");
	if (d->price_note) {
		put(o, " How: ");
		esc(o, d->price_note);
	}
	if (unpriced)
		putf(o, " %zu attempt%s had no known price and %s left out of the sums (see the attempts table).", unpriced,
		     unpriced == 1 ? "" : "s", unpriced == 1 ? "is" : "are");
	put(o, "</p>\n");
}

/* ---- the timeline ---- */

#define TL_W 1000.0   /* the SVG's own units; it is scaled to the page width */
#define TL_X0 250.0   /* where the time axis starts: the labels are left of it */
#define TL_X1 990.0
#define TL_TOP 26.0
#define TL_ROW 20.0
#define TL_BAR 12.0
#define TL_LABEL_MAX 40 /* bytes of a label before it is cut */

struct rh_row {
	size_t first, last; /* the range of the sorted runs drawn on this row; first > last: none */
	int header;         /* a sweep's own line: its span, no bars */
	int child;          /* a sweep run's row, indented */
};

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_runs(const void *pa, const void *pb)
{
	const struct rh_run *a = *(struct rh_run *const *)pa, *b = *(struct rh_run *const *)pb;
	int c;

	if ((c = strcmp(a->stack, b->stack)) || (c = strcmp(a->group, b->group)) ||
	    (c = strcmp(a->address, b->address)))
		return c;
	if (a->attempt != b->attempt)
		return a->attempt < b->attempt ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static double tl_x(const struct rh_doc *d, int64_t ms)
{
	if (ms < d->axis0)
		ms = d->axis0;
	if (ms > d->until)
		ms = d->until;
	return TL_X0 + (double)(ms - d->axis0) * (TL_X1 - TL_X0) / (double)(d->until - d->axis0);
}

/*
 * A period of 30 days whose runs were all in its last week would draw them
 * as slivers: the axis starts on the day (UTC) of the first attempt when that
 * is later than since.
 */
static void tl_axis0(struct rh_doc *d)
{
	int64_t first = INT64_MAX, day = 86400000;

	for (size_t i = 0; i < d->nruns; i++)
		first = d->runs[i].created < first ? d->runs[i].created : first;
	d->axis0 = d->since;
	if (first != INT64_MAX && first / day * day > d->since && first / day * day < d->until)
		d->axis0 = first / day * day;
}

/* Builds the rows from runs sorted by stack, group, address and attempt. */
static int tl_rows(struct rh_run **sorted, size_t n, struct rh_row **out, size_t *nout)
{
	struct rh_row *rows = NULL;
	size_t nrows = 0, i = 0;

	/* At most two rows per run (a header and its row). */
	if (n && !(rows = calloc(2 * n, sizeof(*rows))))
		return VX_ENOMEM;
	while (i < n) {
		size_t end = i, j;
		int sweep = 0;

		while (end < n && strcmp(sorted[end]->stack, sorted[i]->stack) == 0 &&
		       strcmp(sorted[end]->group, sorted[i]->group) == 0) {
			sweep |= strcmp(sorted[end]->address, sorted[end]->group) != 0;
			end++;
		}
		if (sweep)
			rows[nrows++] = (struct rh_row){ .first = i, .last = end - 1, .header = 1 };
		for (j = i; j < end;) {
			size_t k = j;

			while (k + 1 < end && strcmp(sorted[k + 1]->address, sorted[j]->address) == 0)
				k++;
			rows[nrows++] = (struct rh_row){ .first = j, .last = k, .child = sweep };
			j = k + 1;
		}
		i = end;
	}
	*out = rows;
	*nout = nrows;
	return 0;
}

static void tl_axis(struct rh_out *o, const struct rh_doc *d, double height)
{
	static const int64_t steps[] = { 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400,
					 14 * 86400, 28 * 86400, 91 * 86400, 364 * 86400 };
	int64_t range = (d->until - d->axis0) / 1000, step = steps[0], t, offset;
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		step = steps[i];
		if (range / step <= 10)
			break;
	}
	/* Weeks start on Monday (1970-01-05 was one). */
	offset = step >= 7 * 86400 ? 4 * 86400 : 0;
	t = ((d->axis0 / 1000 - offset + step - 1) / step) * step + offset;
	put(o, "<g aria-hidden=\"true\">");
	for (; t * 1000 <= d->until; t += step) {
		double x = tl_x(d, t * 1000);

		putf(o, "<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x, TL_TOP - 6,
		     height);
		/* The last label ends at the edge rather than being cut by it. */
		putf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, TL_TOP - 10,
		     x > TL_X1 - 20 ? "end" : "middle");
		when(o, t * 1000, step < 86400 ? W_MD_MINUTE : W_MD);
		put(o, "</text>");
	}
	put(o, "</g>\n");
}

static void tl_title(struct rh_out *o, const struct rh_run *r)
{
	put(o, "<title>");
	esc(o, r->address);
	putf(o, " attempt %" PRId64 ": ", r->attempt);
	esc(o, r->outcome);
	if (r->rung >= 0)
		putf(o, "\nrung %" PRId64, r->rung);
	else
		put(o, "\nrung \xe2\x80\x94");
	put(o, " \xc2\xb7 ");
	esc_or(o, r->region, "no region");
	put(o, " \xc2\xb7 ");
	esc_or(o, r->strategy, "no strategy");
	if (r->machine_type) {
		put(o, " \xc2\xb7 ");
		esc(o, r->machine_type);
	}
	if (r->accelerator_type && r->accelerator_count > 0) {
		putf(o, " %" PRId64 "\xc3\x97", r->accelerator_count);
		esc(o, r->accelerator_type);
	}
	if (r->replicas > 1)
		putf(o, " \xc3\x97 %" PRId64 " replicas", r->replicas);
	put(o, "\ncreated ");
	when(o, r->created, W_UTC);
	put(o, " \xc2\xb7 queued ");
	duration(o, r->queued_s);
	put(o, " \xc2\xb7 ran ");
	duration(o, r->running_s);
	put(o, "\n");
	if (r->has_usd) {
		money(o, r->usd);
		put(o, r->estimate ? " (estimate)" : "");
	} else {
		put(o, "no price");
		if (r->unpriced_reason) {
			put(o, ": ");
			esc(o, r->unpriced_reason);
		}
	}
	if (r->note) {
		put(o, " \xc2\xb7 ");
		esc(o, r->note);
	}
	if (r->message) {
		put(o, "\n");
		esc_cut(o, r->message, 300);
	}
	put(o, "</title>");
}

static void tl_bar(struct rh_out *o, const struct rh_doc *d, const struct rh_run *r, double y)
{
	int64_t end = r->ended >= 0 ? r->ended : d->until;
	int64_t start_run = r->started >= 0 ? r->started : end;
	double x0 = tl_x(d, r->created), xs = tl_x(d, start_run), x1 = tl_x(d, end);
	const char *cls = outcome_class(r->outcome);

	/* Two units at least, so that a bar of a minute is still seen (and counted). */
	if (x1 - x0 < 2.0) {
		x1 = x0 + 2.0;
		if (x1 > TL_X1) {
			x1 = TL_X1;
			x0 = x1 - 2.0;
		}
		if (xs < x0)
			xs = x0;
		if (xs > x1)
			xs = x1;
	}
	putf(o, "<g class=\"bar o-%s\" data-run=\"%zu\" data-address=\"", cls, r->idx);
	esc(o, r->address);
	putf(o, "\" data-attempt=\"%" PRId64 "\">", r->attempt);
	tl_title(o, r);
	if (xs > x0)
		putf(o, "<rect class=\"q\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"/>", x0, y, xs - x0,
		     TL_BAR);
	if (x1 > xs)
		putf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"/>", xs, y, x1 - xs, TL_BAR);
	if (x1 - x0 > 90 && r->rung >= 0) {
		putf(o, "<text class=\"bl\" x=\"%.1f\" y=\"%.1f\">r%" PRId64 " ", x0 + 3, y + 9.5, r->rung);
		esc_or(o, r->region, "");
		put(o, "</text>");
	}
	put(o, "</g>\n");
}

static void tl_label(struct rh_out *o, const struct rh_run *r, const struct rh_row *row, double y, int many_stacks)
{
	const char *label = r->address;
	size_t glen = strlen(r->group);

	putf(o, "<text x=\"%.1f\" y=\"%.1f\"%s><title>", row->child ? 18.0 : 4.0, y + 10,
	     row->header ? " font-weight=\"600\"" : "");
	if (many_stacks) {
		esc(o, r->stack);
		put(o, ": ");
	}
	esc(o, row->header ? r->group : r->address);
	put(o, "</title>");
	if (row->header)
		label = r->group;
	else if (row->child && strncmp(r->address, r->group, glen) == 0 && r->address[glen])
		label = r->address + glen; /* "[lr=0.1]" under "job.sweep" */
	if (many_stacks && !row->child) {
		esc(o, r->stack);
		put(o, ": ");
	}
	esc_cut(o, label, TL_LABEL_MAX);
	put(o, "</text>\n");
}

static void tl_header_span(struct rh_out *o, const struct rh_doc *d, struct rh_run **sorted,
			   const struct rh_row *row, double y)
{
	int64_t lo = INT64_MAX, hi = 0;

	for (size_t i = row->first; i <= row->last; i++) {
		int64_t end = sorted[i]->ended >= 0 ? sorted[i]->ended : d->until;

		lo = sorted[i]->created < lo ? sorted[i]->created : lo;
		hi = end > hi ? end : hi;
	}
	putf(o, "<line class=\"span\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", tl_x(d, lo),
	     tl_x(d, hi), y + TL_BAR / 2, y + TL_BAR / 2);
}

static int timeline(struct rh_out *o, struct rh_doc *d)
{
	struct rh_run **sorted = NULL;
	struct rh_row *rows = NULL;
	size_t nrows = 0;
	double height;
	int rc = 0, many_stacks = cJSON_GetArraySize(d->stacks) > 1;

	if (d->nruns && !(sorted = calloc(d->nruns, sizeof(*sorted))))
		return VX_ENOMEM;
	for (size_t i = 0; i < d->nruns; i++)
		sorted[i] = &d->runs[i];
	if (d->nruns)
		qsort(sorted, d->nruns, sizeof(*sorted), cmp_runs);
	if ((rc = tl_rows(sorted, d->nruns, &rows, &nrows)) < 0)
		goto done;
	tl_axis0(d);
	height = TL_TOP + (double)nrows * TL_ROW + 4;
	put(o, "<section id=\"timeline\">\n<h2>Timeline</h2>\n");
	if (!d->nruns) {
		put(o, "<p>No attempt in this period.</p>\n</section>\n");
		goto done;
	}
	putf(o, "<svg class=\"tl\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" "
	     "aria-label=\"One row per job, one bar per attempt from its creation to its end\">\n", TL_W, height,
	     TL_W, height);
	tl_axis(o, d, height);
	for (size_t i = 0; i < nrows; i++) {
		const struct rh_row *row = &rows[i];
		double y = TL_TOP + (double)i * TL_ROW + (TL_ROW - TL_BAR) / 2;

		tl_label(o, sorted[row->first], row, y, many_stacks);
		if (row->header) {
			tl_header_span(o, d, sorted, row, y);
			continue;
		}
		for (size_t j = row->first; j <= row->last; j++)
			tl_bar(o, d, sorted[j], y);
	}
	put(o, "</svg>\n");
	if (d->axis0 > d->since) {
		put(o, "<p class=\"est\">The axis starts on the day of the first attempt, ");
		when(o, d->axis0, W_DAY);
		put(o, "; times are UTC.</p>\n");
	} else
		put(o, "<p class=\"est\">Times are UTC.</p>\n");
done:
	free(rows);
	free(sorted);
	return rc;
}

static int cmp_rung(const void *pa, const void *pb)
{
	const struct rh_run *a = *(struct rh_run *const *)pa, *b = *(struct rh_run *const *)pb;
	int c;

	if (a->rung != b->rung)
		return a->rung < b->rung ? -1 : 1;
	if ((c = cmp_str(a->region, b->region)) || (c = cmp_str(a->strategy, b->strategy)))
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The outcomes seen, with their counts, then the rungs seen with their region and strategy. */
static int legend(struct rh_out *o, const struct rh_doc *d)
{
	struct rh_run **by_rung = NULL;
	size_t counts[NOUTCOMES + 1] = { 0 };

	if (!d->nruns)
		return 0;
	for (size_t i = 0; i < d->nruns; i++) {
		size_t k = 0;

		while (k < NOUTCOMES && strcmp(d->runs[i].outcome, outcomes[k]) != 0)
			k++;
		counts[k]++;
	}
	put(o, "<ul class=\"legend\">\n");
	for (size_t k = 0; k <= NOUTCOMES; k++) {
		if (!counts[k])
			continue;
		put(o, "<li>");
		swatch(o, k < NOUTCOMES ? outcomes[k] : "other", 0);
		putf(o, "%s (%zu)</li>\n", k < NOUTCOMES ? outcomes[k] : "other", counts[k]);
	}
	put(o, "<li>");
	swatch(o, "other", 1);
	put(o, "light: waiting in the queue (created to running); solid: running</li>\n</ul>\n");

	if (!(by_rung = calloc(d->nruns, sizeof(*by_rung))))
		return VX_ENOMEM;
	for (size_t i = 0; i < d->nruns; i++)
		by_rung[i] = &d->runs[i];
	qsort(by_rung, d->nruns, sizeof(*by_rung), cmp_rung);
	put(o, "<ul class=\"legend\">\n");
	for (size_t i = 0; i < d->nruns; i++) {
		const struct rh_run *r = by_rung[i];
		size_t n = 1;

		while (i + 1 < d->nruns && by_rung[i + 1]->rung == r->rung &&
		       !cmp_str(by_rung[i + 1]->region, r->region) && !cmp_str(by_rung[i + 1]->strategy, r->strategy)) {
			i++;
			n++;
		}
		if (r->rung >= 0)
			putf(o, "<li><b>r%" PRId64 "</b> rung %" PRId64 ": ", r->rung, r->rung);
		else
			put(o, "<li>no rung: ");
		esc_or(o, r->region, "no region");
		put(o, ", ");
		esc_or(o, r->strategy, "no strategy");
		putf(o, " (%zu)</li>\n", n);
	}
	put(o, "</ul>\n</section>\n");
	free(by_rung);
	return 0;
}

/* ---- spend, waste, waiting, failures, attempts ---- */

/* A row's attempts per failure class, "stockout 2, preempted 1" as the document orders them; a dash for none. */
static void class_cell(struct rh_out *o, const cJSON *classes)
{
	const cJSON *c;
	int first = 1;

	put(o, "<td>");
	cJSON_ArrayForEach(c, classes) {
		put(o, first ? "" : ", ");
		esc(o, c->string);
		putf(o, " %.0f", c->valuedouble);
		first = 0;
	}
	if (first)
		put(o, "\xe2\x80\x94");
	put(o, "</td>");
}

/* One breakdown table; with_classes adds the by_job column of attempts per failure class. */
static void breakdown(struct rh_out *o, const char *title, const char *key_head, const struct rh_list *l,
		      int with_classes)
{
	putf(o, "<div>\n<h3>%s</h3>\n<table>\n<thead><tr><th>%s</th><th class=\"n\">attempts</th>%s"
		"<th class=\"n\">spend</th><th class=\"n\">wasted</th></tr></thead>\n<tbody>\n",
	     title, key_head,
	     with_classes ? "<th>ended by</th>" : "");
	if (!l->n)
		putf(o, "<tr><td colspan=\"%d\" class=\"mute\">nothing</td></tr>\n", with_classes ? 5 : 4);
	for (size_t i = 0; i < l->n; i++) {
		put(o, "<tr><td class=\"a\">");
		esc(o, l->v[i].key);
		putf(o, "</td><td class=\"n\">%" PRId64 "</td>", l->v[i].runs);
		if (with_classes)
			class_cell(o, l->v[i].classes);
		put(o, "<td class=\"n\">");
		money(o, l->v[i].usd);
		put(o, "</td><td class=\"n\">");
		money(o, l->v[i].usd_wasted);
		put(o, "</td></tr>\n");
	}
	put(o, "</tbody>\n</table>\n</div>\n");
}

static void reservations(struct rh_out *o, const struct rh_doc *d)
{
	if (!d->nresv)
		return;
	put(o, "<h3>Reservations</h3>\n<p class=\"est\">A reservation costs its VM-hours whether runs use it or "
	       "not; its use is the running hours of the runs that used it.</p>\n<table>\n<thead><tr>"
	       "<th>reservation</th><th>zone</th><th>machines</th><th>held</th><th class=\"n\">VM-hours</th>"
	       "<th class=\"n\">used</th><th class=\"n\">use</th><th class=\"n\">cost</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < d->nresv; i++) {
		const struct rh_resv *r = &d->resv[i];

		put(o, "<tr><td class=\"a\">");
		esc(o, r->address);
		put(o, "</td><td>");
		esc_or(o, r->zone, "\xe2\x80\x94");
		putf(o, "</td><td>%" PRId64 " \xc3\x97 ", r->count);
		esc_or(o, r->machine_type, "?");
		if (r->accelerator_type) {
			put(o, " (");
			esc(o, r->accelerator_type);
			put(o, ")");
		}
		put(o, "</td><td>");
		when(o, r->from, W_MD_MINUTE);
		put(o, " to ");
		when(o, r->to, W_MD_MINUTE);
		putf(o, "</td><td class=\"n\">%.1f</td><td class=\"n\">%.1f</td><td class=\"n\">", r->vm_hours,
		     r->used_vm_hours);
		percent(o, r->used_vm_hours, r->vm_hours);
		put(o, "</td><td class=\"n\">");
		if (r->has_usd)
			money(o, r->usd);
		else
			put(o, "no price");
		put(o, "</td></tr>\n");
	}
	put(o, "</tbody>\n</table>\n");
}

/* Each stack's budget, over its own period ending now (whatever the report's span), when some sets one. */
static void budgets(struct rh_out *o, const struct rh_doc *d)
{
	if (!d->nbudgets)
		return;
	put(o, "<section id=\"budgets\">\n<h2>Budgets</h2>\n<p class=\"est\">Each over its own period ending when "
	       "this page was generated, whatever span the page shows.</p>\n<table>\n<thead><tr><th>stack</th>"
	       "<th>period</th><th class=\"n\">spent</th><th class=\"n\">budget</th><th class=\"n\">used</th>"
	       "<th>line</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < d->nbudgets; i++) {
		const struct rh_budget *b = &d->budgets[i];

		put(o, "<tr><td class=\"a\">");
		esc(o, b->stack);
		put(o, "</td><td>");
		esc(o, b->period);
		put(o, "</td><td class=\"n\">");
		if (b->has_spent)
			money(o, b->spent);
		else
			put(o, "unknown");
		put(o, "</td><td class=\"n\">");
		money(o, b->limit);
		put(o, "</td><td class=\"n\">");
		if (b->has_spent)
			percent(o, b->spent, b->limit);
		else
			put(o, "\xe2\x80\x94");
		put(o, "</td><td>");
		esc(o, b->line);
		put(o, "</td></tr>\n");
	}
	put(o, "</tbody>\n</table>\n</section>\n");
}

static void spend(struct rh_out *o, const struct rh_doc *d)
{
	put(o, "<section id=\"spend\">\n<h2>Spend</h2>\n<p>");
	money(o, d->usd);
	put(o, " in this period. The reservations' cost is in the total and in the tables by accelerator and "
	       "by strategy, not in those by job and by week.</p>\n<div class=\"grid\">\n");
	breakdown(o, "By job", "job", &d->by_job, 1);
	breakdown(o, "By week", "week of", &d->by_week, 0);
	breakdown(o, "By accelerator", "accelerator", &d->by_accel, 0);
	breakdown(o, "By strategy", "strategy", &d->by_strategy, 0);
	put(o, "</div>\n");
	reservations(o, d);
	put(o, "</section>\n");
}

static int is_waste(const struct rh_run *r)
{
	return r->running_s > 0 && strcmp(r->outcome, "succeeded") != 0 && strcmp(r->outcome, "running") != 0;
}

static void waste(struct rh_out *o, const struct rh_doc *d)
{
	size_t n = 0;

	put(o, "<section id=\"waste\">\n<h2>Waste</h2>\n<p>");
	money(o, d->usd_wasted);
	put(o, " (");
	percent(o, d->usd_wasted, d->usd);
	put(o, " of the spend) went to attempts that ran and did not finish: preempted, stocked out after "
	       "starting, failed or cancelled.</p>\n");
	for (size_t i = 0; i < d->nruns; i++)
		n += is_waste(&d->runs[i]);
	if (n) {
		put(o, "<table>\n<thead><tr><th>attempt</th><th>outcome</th><th class=\"n\">ran</th>"
		       "<th class=\"n\">cost</th></tr></thead>\n<tbody>\n");
		for (size_t i = 0; i < d->nruns; i++) {
			const struct rh_run *r = &d->runs[i];

			if (!is_waste(r))
				continue;
			put(o, "<tr><td class=\"a\">");
			esc(o, r->address);
			putf(o, " #%" PRId64 "</td><td>", r->attempt);
			swatch(o, outcome_class(r->outcome), 0);
			esc(o, r->outcome);
			put(o, "</td><td class=\"n\">");
			duration(o, r->running_s);
			put(o, "</td><td class=\"n\">");
			if (r->has_usd)
				money(o, r->usd);
			else
				put(o, "no price");
			put(o, "</td></tr>\n");
		}
		put(o, "</tbody>\n</table>\n");
	}
	put(o, "</section>\n");
}

static void waiting(struct rh_out *o, const struct rh_doc *d)
{
	put(o, "<section id=\"waiting\">\n<h2>Waiting</h2>\n<p>Time in the queue, from creation to running, of "
	       "the attempts that started.</p>\n");
	if (!d->nwaits) {
		put(o, "<p class=\"mute\">No attempt started in this period.</p>\n</section>\n");
		return;
	}
	put(o, "<table>\n<thead><tr><th>strategy</th><th>region</th><th class=\"n\">attempts</th>"
	       "<th class=\"n\">median</th><th class=\"n\">p90</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < d->nwaits; i++) {
		const struct rh_wait *w = &d->waits[i];

		put(o, "<tr><td>");
		esc_or(o, w->strategy, "\xe2\x80\x94");
		put(o, "</td><td>");
		esc_or(o, w->region, "\xe2\x80\x94");
		putf(o, "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">", w->runs);
		duration(o, w->median_s);
		put(o, "</td><td class=\"n\">");
		duration(o, w->p90_s);
		put(o, "</td></tr>\n");
	}
	put(o, "</tbody>\n</table>\n</section>\n");
}

static void failures(struct rh_out *o, const struct rh_doc *d)
{
	put(o, "<section id=\"failures\">\n<h2>Failures</h2>\n");
	if (!d->nfails)
		put(o, "<p class=\"mute\">No attempt failed in this period.</p>\n");
	for (size_t i = 0; i < d->nfails; i++) {
		const struct rh_fail *f = &d->fails[i];

		put(o, "<h3>");
		esc_or(o, f->cls, "unclassified");
		putf(o, " <span class=\"mute\">(%" PRId64 " attempt%s)</span></h3>\n<table>\n<tbody>\n", f->runs,
		     f->runs == 1 ? "" : "s");
		for (size_t j = 0; j < f->nmsgs; j++) {
			const struct rh_msg *m = &f->msgs[j];
			const cJSON *a;
			int first = 1;

			put(o, "<tr><td class=\"a\">");
			if (m->message)
				esc_cut(o, m->message, 600);
			else
				put(o, "<span class=\"mute\">no message</span>");
			putf(o, "</td><td class=\"n\">%" PRId64 "\xc3\x97</td><td class=\"a\">", m->runs);
			cJSON_ArrayForEach(a, m->addresses) {
				put(o, first ? "" : ", ");
				esc(o, a->valuestring);
				first = 0;
			}
			put(o, "</td></tr>\n");
		}
		put(o, "</tbody>\n</table>\n");
	}
	put(o, "</section>\n");
}

static void attempts(struct rh_out *o, const struct rh_doc *d)
{
	put(o, "<section id=\"attempts\">\n<h2>Attempts</h2>\n<table>\n<thead><tr><th>job</th>"
	       "<th class=\"n\">#</th><th>rung</th><th>region</th><th>strategy</th><th>outcome</th><th>created (UTC)</th>"
	       "<th class=\"n\">queued</th><th class=\"n\">ran</th><th class=\"n\">cost</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < d->nruns; i++) {
		const struct rh_run *r = &d->runs[i];

		putf(o, "<tr data-run=\"%zu\"><td class=\"a\">", r->idx);
		esc(o, r->address);
		putf(o, "</td><td class=\"n\">%" PRId64 "</td><td>", r->attempt);
		if (r->rung >= 0)
			putf(o, "%" PRId64, r->rung);
		put(o, "</td><td>");
		esc_or(o, r->region, "");
		put(o, "</td><td>");
		esc_or(o, r->strategy, "");
		put(o, "</td><td>");
		swatch(o, outcome_class(r->outcome), 0);
		esc(o, r->outcome);
		put(o, "</td><td>");
		when(o, r->created, W_MINUTE);
		put(o, "</td><td class=\"n\">");
		duration(o, r->queued_s);
		put(o, "</td><td class=\"n\">");
		duration(o, r->running_s);
		put(o, "</td><td class=\"n\">");
		if (r->has_usd)
			money(o, r->usd);
		else {
			put(o, "<span title=\"");
			esc_or(o, r->unpriced_reason, "no price known");
			put(o, "\">no price</span>");
		}
		put(o, "</td></tr>\n");
	}
	put(o, "</tbody>\n</table>\n</section>\n");
}

int report_html(const struct cJSON *doc, struct vx_buf *out, struct vx_err *err)
{
	struct rh_doc d = { 0 };
	struct rh_out o = { .b = out, .scratch = VX_BUF_INIT };
	size_t len0 = out->len;
	int rc;

	if ((rc = read_doc(doc, &d, err)) < 0)
		goto done;
	head(&o, &d);
	intro(&o, &d);
	if (o.rc == 0)
		o.rc = timeline(&o, &d);
	if (o.rc == 0)
		o.rc = legend(&o, &d);
	budgets(&o, &d);
	spend(&o, &d);
	waste(&o, &d);
	waiting(&o, &d);
	failures(&o, &d);
	attempts(&o, &d);
	put(&o, "<footer class=\"est\">Written by vx report. Light and dark follow the system; the page needs no "
		"network and no script.</footer>\n<script>\n");
	put(&o, script);
	put(&o, "</script>\n</body>\n</html>\n");
	if ((rc = o.rc) < 0) {
		vx_err_set(err, rc, "writing the report page: %s", rc == VX_ENOMEM ? "out of memory" :
			   "the page is larger than its buffer allows");
		/* Leave out as it was. */
		out->len = len0;
		if (out->data)
			out->data[len0] = '\0';
	}
done:
	vx_buf_release(&o.scratch);
	doc_release(&d);
	return rc;
}
