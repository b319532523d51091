/*
 * The state's JSON form (the codec behind state_*_to_json and
 * state_*_from_json in state.h); the model itself is state.c.
 *
 * Writing builds a cJSON tree with keys added in a fixed order (cJSON keeps
 * insertion order), so the same state always prints the same bytes.
 * Parsing goes through cJSON (bounded nesting) and then a strict walk that
 * checks every key, type and range; cJSON never leaves this file.
 */
#include "state/state.h"
#include "state/state_shared.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/buf.h"
#include "util/json.h"
#include "util/text.h"
#include "util/banned.h"

#define F_REQ 1  /* the key must be present */
#define F_NULL 2 /* null is allowed (and means "unset") */
#define MAX_SAFE_INT 9007199254740992.0 /* 2^53: integers above lose precision in JSON */
#define MAX_SPEC ((size_t)1 << 20)

static int uuid_ok(const char *s)
{
	int i;

	if (strlen(s) != 36)
		return 0;
	for (i = 0; i < 36; i++) {
		char c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return 0;
		}
	}
	return 1;
}

static int lock_id_ok(const char *s)
{
	int i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 32;
}

/* ---- writing ---------------------------------------------------------------- */

/* Each adder returns 0 or -1 (out of memory); callers map -1 to VX_ENOMEM. */
static int add_str(cJSON *o, const char *k, const char *v)
{
	cJSON *item = v ? cJSON_CreateString(v) : cJSON_CreateNull();

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_int(cJSON *o, const char *k, int64_t v)
{
	cJSON *item = cJSON_CreateNumber((double)v);

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_bool(cJSON *o, const char *k, int v)
{
	cJSON *item = cJSON_CreateBool(v != 0);

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_time(cJSON *o, const char *k, int64_t ms)
{
	char t[STATE_TIME_MAX];

	if (!ms)
		return add_str(o, k, NULL);
	state_time_format(ms, t);
	return add_str(o, k, t);
}

static int add_item(cJSON *o, const char *k, cJSON *item)
{
	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static cJSON *labels_json(const struct vx_label *l, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < n; i++) {
		if (add_str(o, l[i].key, l[i].value) < 0) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

static cJSON *run_json(const struct state_run *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (add_str(o, "resource", r->resource) < 0 ||
	    (r->project && add_str(o, "project", r->project) < 0) ||
	    add_str(o, "region", r->region) < 0 ||
	    add_str(o, "action", r->action) < 0 || add_str(o, "specHash", r->spec_hash) < 0 ||
	    add_int(o, "run", r->run) < 0 || add_int(o, "attempt", r->attempt) < 0 ||
	    (r->rung && add_int(o, "rung", r->rung) < 0) ||
	    (r->rung_scheduling && add_str(o, "rungScheduling", r->rung_scheduling) < 0) ||
	    (r->rung_scheduling && add_str(o, "rungMachine", r->rung_machine) < 0) ||
	    (r->rung_scheduling && add_str(o, "rungReservation", r->rung_reservation) < 0) ||
	    add_item(o, "labels", labels_json(r->labels, r->nlabels)) < 0 ||
	    (r->nfollows && add_item(o, "follows", labels_json(r->follows, r->nfollows)) < 0) ||
	    add_str(o, "state", r->state) < 0 || add_str(o, "failure", r->failure) < 0 ||
	    add_int(o, "errorCode", r->error_code) < 0 ||
	    add_str(o, "errorMessage", r->error_message) < 0 ||
	    add_bool(o, "cancelledByVx", r->cancelled_by_vx) < 0 ||
	    add_time(o, "createdAt", r->created_ms) < 0 ||
	    (r->started_ms && add_time(o, "startedAt", r->started_ms) < 0) ||
	    (r->exit_code && add_int(o, "exitCode", r->exit_code) < 0) ||
	    (r->timeout_ms && add_int(o, "timeoutMs", r->timeout_ms) < 0) ||
	    add_time(o, "endedAt", r->ended_ms) < 0 ||
	    add_str(o, "configCommit", r->config_commit) < 0 ||
	    add_bool(o, "configDirty", r->config_dirty) < 0 ||
	    add_str(o, "declHash", r->decl_hash) < 0 ||
	    add_str(o, "launchedBy", r->launched_by) < 0 ||
	    /* Written only when set, so a record without them keeps its bytes. */
	    (r->planned_by && add_str(o, "plannedBy", r->planned_by) < 0) ||
	    (r->policy_commit && add_str(o, "policyCommit", r->policy_commit) < 0) ||
	    (r->pr_number && add_int(o, "pullRequest", r->pr_number) < 0) ||
	    (r->pr_url && add_str(o, "pullRequestUrl", r->pr_url) < 0) ||
	    (r->has_value && add_int(o, "value", r->value) < 0) ||
	    (r->machine_type && (add_str(o, "machineType", r->machine_type) < 0 ||
				 add_str(o, "acceleratorType", r->accelerator_type) < 0 ||
				 add_int(o, "acceleratorCount", r->accelerator_count) < 0 ||
				 add_int(o, "replicas", r->replicas) < 0 ||
				 add_str(o, "strategy", r->strategy) < 0 ||
				 add_str(o, "reservation", r->reservation) < 0))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *lock_json(const struct state_lock *l, int with_version)
{
	cJSON *o;

	if (!l)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if ((with_version && add_int(o, "version", STATE_VERSION) < 0) ||
	    add_str(o, "id", l->id) < 0 || add_str(o, "user", l->user) < 0 ||
	    add_str(o, "host", l->host) < 0 || add_int(o, "pid", l->pid) < 0 ||
	    add_str(o, "operation", l->operation) < 0 ||
	    add_time(o, "startedAt", l->started_ms) < 0 ||
	    add_time(o, "expiresAt", l->expires_ms) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *strs_json(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++) {
		cJSON *s = cJSON_CreateString(v[i]);

		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* "onExitCodes": [137, 143], only when one is set (a record without keeps its bytes). */
static int add_exit_codes(cJSON *o, const uint64_t *bits)
{
	cJSON *a;

	if (!(bits[0] | bits[1] | bits[2] | bits[3]))
		return 0;
	if (!(a = cJSON_CreateArray()))
		return -1;
	for (int c = 1; c < 256; c++)
		if (bits[c / 64] & (UINT64_C(1) << (c % 64)) && !cJSON_AddItemToArray(a, cJSON_CreateNumber(c))) {
			cJSON_Delete(a);
			return -1;
		}
	return add_item(o, "onExitCodes", a);
}

/* "resubmitBudgets": one number per resubmitOn class, only for resubmit.on's map form. */
static int add_budgets(cJSON *o, const struct state_policy *p)
{
	cJSON *a;

	if (!p->resubmit_budgets || !p->nresubmit_on)
		return 0;
	if (!(a = cJSON_CreateArray()))
		return -1;
	for (size_t i = 0; i < p->nresubmit_on; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber((double)p->resubmit_budgets[i]))) {
			cJSON_Delete(a);
			return -1;
		}
	return add_item(o, "resubmitBudgets", a);
}

static cJSON *policy_json(const struct state_policy *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (add_item(o, "resubmitOn", strs_json(p->resubmit_on, p->nresubmit_on)) < 0 ||
	    add_int(o, "maxAttempts", p->max_attempts) < 0 || add_int(o, "delayMs", p->delay_ms) < 0 ||
	    add_int(o, "fallbackRungs", p->fallback_rungs) < 0 ||
	    add_str(o, "fallbackHash", p->fallback_hash) < 0 ||
	    add_item(o, "after", strs_json(p->after, p->nafter)) < 0 ||
	    add_int(o, "maxParallel", p->max_parallel) < 0 || add_int(o, "maxFailed", p->max_failed) < 0 ||
	    add_exit_codes(o, p->on_exit_codes) < 0 || add_budgets(o, p) < 0 ||
	    (p->within_ms && add_int(o, "withinMs", p->within_ms) < 0) ||
	    (p->return_after_ms && add_int(o, "returnAfterMs", p->return_after_ms) < 0) ||
	    (p->max_queued_ms && add_int(o, "maxQueuedMs", p->max_queued_ms) < 0)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* -1 out of memory, -2 the spec is not a JSON object. */
static int record_json(const struct state_record *r, int with_version, cJSON **out)
{
	cJSON *o = cJSON_CreateObject(), *spec = NULL, *hist = NULL;
	size_t i;
	int rc = -1;

	*out = NULL;
	if (!o)
		goto done;
	if (r->spec_json) {
		spec = cJSON_ParseWithLength(r->spec_json, strlen(r->spec_json));
		if (!spec || !cJSON_IsObject(spec)) {
			rc = -2;
			goto done;
		}
	} else {
		spec = cJSON_CreateNull();
		if (!spec)
			goto done;
	}
	if ((with_version && add_int(o, "version", STATE_VERSION) < 0) ||
	    add_str(o, "address", r->address) < 0 || add_str(o, "kind", r->kind) < 0 ||
	    add_str(o, "specHash", r->spec_hash) < 0)
		goto done;
	rc = add_item(o, "spec", spec);
	spec = NULL;
	if (rc < 0)
		goto done;
	rc = -1;
	if (add_int(o, "run", r->run) < 0 || add_int(o, "attempts", r->attempts) < 0 ||
	    add_bool(o, "protect", r->protect) < 0 ||
	    /* Only when set, so a record without it keeps its bytes. */
	    (r->on_remove && add_str(o, "onRemove", r->on_remove == STATE_ON_REMOVE_CANCEL ? "cancel"
				     : "forget") < 0) ||
	    add_item(o, "current", r->current ? run_json(r->current) : cJSON_CreateNull()) < 0)
		goto done;
	hist = cJSON_CreateArray();
	if (!hist)
		goto done;
	for (i = 0; i < r->nhistory; i++) {
		cJSON *h = run_json(&r->history[i]);

		if (!h || !cJSON_AddItemToArray(hist, h)) {
			cJSON_Delete(h);
			goto done;
		}
	}
	if (add_item(o, "history", hist) < 0) {
		hist = NULL;
		goto done;
	}
	hist = NULL;
	/* Only when recorded, so a record without it keeps its bytes. */
	if (r->applied && add_item(o, "applied", policy_json(r->applied)) < 0)
		goto done;
	*out = o;
	o = NULL;
	rc = 0;
done:
	cJSON_Delete(hist);
	cJSON_Delete(spec);
	cJSON_Delete(o);
	return rc;
}

/*
 * The record's fingerprint (state.h): every field record_json reads, each
 * self-delimiting (a string as a presence byte, its length and its bytes;
 * an integer as its 8 bytes), in record_json's order. Equal fingerprints
 * therefore mean equal JSON, which is all the git backend relies on to
 * skip serialising a record a save did not touch. A field added to
 * record_json or run_json must be added here too; test_state.c's
 * test_fingerprint_covers_every_field changes each field in turn.
 */
static int fp_bytes(struct vx_buf *b, const void *p, size_t n)
{
	return vx_buf_add(b, p, n);
}

static int fp_int(struct vx_buf *b, int64_t v)
{
	return fp_bytes(b, &v, sizeof(v));
}

static int fp_str(struct vx_buf *b, const char *s)
{
	uint64_t n;

	if (!s)
		return vx_buf_addc(b, 0);
	n = strlen(s);
	if (vx_buf_addc(b, 1) < 0 || fp_bytes(b, &n, sizeof(n)) < 0)
		return -1;
	return fp_bytes(b, s, (size_t)n);
}

static int fp_run(struct vx_buf *b, const struct state_run *r)
{
	size_t i;

	if (fp_str(b, r->resource) < 0 || fp_str(b, r->project) < 0 || fp_str(b, r->region) < 0 ||
	    fp_str(b, r->action) < 0 || fp_str(b, r->spec_hash) < 0 || fp_int(b, r->run) < 0 ||
	    fp_int(b, r->attempt) < 0 || fp_int(b, r->rung) < 0 || fp_int(b, (int64_t)r->nlabels) < 0)
		return -1;
	for (i = 0; i < r->nlabels; i++)
		if (fp_str(b, r->labels[i].key) < 0 || fp_str(b, r->labels[i].value) < 0)
			return -1;
	if (fp_str(b, r->state) < 0 || fp_str(b, r->failure) < 0 || fp_int(b, r->error_code) < 0 ||
	    fp_str(b, r->error_message) < 0 || fp_int(b, r->cancelled_by_vx != 0) < 0 ||
	    fp_int(b, r->created_ms) < 0 || fp_int(b, r->ended_ms) < 0 ||
	    fp_str(b, r->config_commit) < 0 || fp_int(b, r->config_dirty != 0) < 0 ||
	    fp_str(b, r->policy_commit) < 0 ||
	    fp_str(b, r->decl_hash) < 0 || fp_str(b, r->launched_by) < 0 ||
	    fp_str(b, r->planned_by) < 0 || fp_int(b, r->pr_number) < 0 || fp_str(b, r->pr_url) < 0 ||
	    fp_int(b, r->has_value != 0) < 0 || fp_int(b, r->has_value ? r->value : 0) < 0 ||
	    fp_str(b, r->rung_scheduling) < 0 || fp_str(b, r->rung_machine) < 0 ||
	    fp_str(b, r->rung_reservation) < 0 || fp_int(b, r->started_ms) < 0 ||
	    fp_int(b, (int64_t)r->nfollows) < 0 || fp_str(b, r->machine_type) < 0 ||
	    fp_str(b, r->accelerator_type) < 0 || fp_int(b, r->accelerator_count) < 0 ||
	    fp_int(b, r->replicas) < 0 || fp_str(b, r->strategy) < 0 || fp_str(b, r->reservation) < 0 ||
	    fp_int(b, r->exit_code) < 0)
		return -1;
	/* Only when set, so a run without it keeps its fingerprint. */
	if (r->timeout_ms && (fp_str(b, "timeoutMs") < 0 || fp_int(b, r->timeout_ms) < 0))
		return -1;
	for (i = 0; i < r->nfollows; i++)
		if (fp_str(b, r->follows[i].key) < 0 || fp_str(b, r->follows[i].value) < 0)
			return -1;
	return 0;
}

static int fp_strs(struct vx_buf *b, char *const *v, size_t n)
{
	if (fp_int(b, (int64_t)n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (fp_str(b, v[i]) < 0)
			return -1;
	return 0;
}

static int fp_policy(struct vx_buf *b, const struct state_policy *p)
{
	if (fp_int(b, p != NULL) < 0)
		return -1;
	if (!p)
		return 0;
	if (fp_strs(b, p->resubmit_on, p->nresubmit_on) < 0 || fp_int(b, p->max_attempts) < 0 ||
	    fp_int(b, p->delay_ms) < 0 || fp_int(b, p->fallback_rungs) < 0 || fp_str(b, p->fallback_hash) < 0 ||
	    fp_strs(b, p->after, p->nafter) < 0 || fp_int(b, p->max_parallel) < 0 || fp_int(b, p->max_failed) < 0 ||
	    fp_bytes(b, p->on_exit_codes, sizeof(p->on_exit_codes)) < 0 || fp_int(b, p->within_ms) < 0 ||
	    fp_int(b, p->resubmit_budgets != NULL) < 0)
		return -1;
	/* Only when set, so a policy without it keeps its fingerprint. */
	if (p->return_after_ms && (fp_str(b, "returnAfterMs") < 0 || fp_int(b, p->return_after_ms) < 0))
		return -1;
	if (p->max_queued_ms && (fp_str(b, "maxQueuedMs") < 0 || fp_int(b, p->max_queued_ms) < 0))
		return -1;
	for (size_t i = 0; p->resubmit_budgets && i < p->nresubmit_on; i++)
		if (fp_int(b, p->resubmit_budgets[i]) < 0)
			return -1;
	return 0;
}

int state_record_fingerprint(const struct state_record *r, struct vx_buf *out, struct vx_err *err)
{
	size_t i;

	vx_buf_reset(out);
	if (fp_str(out, r->address) < 0 || fp_str(out, r->kind) < 0 || fp_str(out, r->spec_hash) < 0 ||
	    fp_str(out, r->spec_json) < 0 || fp_int(out, r->run) < 0 || fp_int(out, r->attempts) < 0 ||
	    fp_int(out, r->protect != 0) < 0 || fp_int(out, r->on_remove) < 0 ||
	    fp_int(out, r->current != NULL) < 0 ||
	    (r->current && fp_run(out, r->current) < 0) || fp_int(out, (int64_t)r->nhistory) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0; i < r->nhistory; i++)
		if (fp_run(out, &r->history[i]) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (fp_policy(out, r->applied) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

static cJSON *intent_json(const struct state_intent *in)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (add_str(o, "address", in->address) < 0 || add_str(o, "op", in->op) < 0 ||
	    add_item(o, "labels", labels_json(in->labels, in->nlabels)) < 0 ||
	    add_time(o, "startedAt", in->started_ms) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Prints o with a trailing newline into *out; frees o. */
static int print_json(cJSON *o, char **out, struct vx_err *err)
{
	char *s = o ? cJSON_Print(o) : NULL;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (!s) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	/* A copy, not a printf of "%s\n": that was most of the time a save took. */
	n = strlen(s);
	*out = malloc(n + 2);
	if (!*out) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	memcpy(*out, s, n);
	(*out)[n] = '\n';
	(*out)[n + 1] = '\0';
done:
	if (s)
		cJSON_free(s);
	cJSON_Delete(o);
	return rc;
}

/* "notified": the deliveries recorded, as {"key", "at"} objects. NULL on OOM. */
static cJSON *notified_json(const struct state *st)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < st->nnotified; i++) {
		cJSON *n = cJSON_CreateObject();

		if (!n || !cJSON_AddItemToArray(arr, n)) {
			cJSON_Delete(n);
			goto oom;
		}
		if (add_str(n, "key", st->notified[i].key) < 0 || add_time(n, "at", st->notified[i].at_ms) < 0 ||
		    (st->notified[i].until_ms && add_time(n, "until", st->notified[i].until_ms) < 0))
			goto oom;
	}
	return arr;
oom:
	cJSON_Delete(arr);
	return NULL;
}

/* An array of the n strings of v ("released", "notifyTargets"). NULL on OOM. */
/* "budget": {"usdCents": N, "days": D} (days 0: the calendar month). */
static cJSON *budget_json(const struct state *st)
{
	cJSON *o = cJSON_CreateObject();

	cJSON *warn = NULL;

	if (o && (add_int(o, "usdCents", st->budget_cents) < 0 || add_int(o, "days", st->budget_days) < 0))
		goto fail;
	if (o && st->nbudget_warn_at) {
		if (!(warn = cJSON_CreateIntArray(st->budget_warn_at, (int)st->nbudget_warn_at)) ||
		    !cJSON_AddItemToObject(o, "warnAt", warn))
			goto fail;
	}
	return o;
fail:
	if (warn && !cJSON_GetObjectItemCaseSensitive(o, "warnAt"))
		cJSON_Delete(warn);
	cJSON_Delete(o);
	return NULL;
}

static cJSON *strings_json(char *const *v, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < n; i++) {
		cJSON *s = cJSON_CreateString(v[i]);

		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

/* "journal": the intents not yet settled. NULL on OOM. */
static cJSON *journal_json(const struct state *st)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < st->njournal; i++) {
		cJSON *j = intent_json(&st->journal[i]);

		if (!j || !cJSON_AddItemToArray(arr, j)) {
			cJSON_Delete(j);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

/* "records": every record with its spec, in *out (the caller owns it). A
 * spec that is not a JSON object is an error naming its address. */
static int records_json(cJSON **out, const struct state *st, struct vx_err *err)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;
	int rc;

	*out = NULL;
	for (i = 0; arr && i < st->nrecords; i++) {
		cJSON *r = NULL;

		rc = record_json(&st->records[i], 0, &r);
		if (rc == -2) {
			cJSON_Delete(arr);
			return vx_err_set(err, VX_EINVAL, "%s: the spec is not a JSON object",
					  st->records[i].address);
		}
		if (rc < 0 || !cJSON_AddItemToArray(arr, r)) {
			cJSON_Delete(r);
			cJSON_Delete(arr);
			arr = NULL;
		}
	}
	if (!arr)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	*out = arr;
	return 0;
}

/* header_json's with_records: the records' place held by the string RECORDS_MARK, for state_to_json_from. */
#define RECORDS_SPLICED 2
#define RECORDS_MARK "(records)"

/* The state document: its header (identity, lock, notifications, journal)
 * and, with_records, its records. */
static int header_json(const struct state *st, int with_records, cJSON **out, struct vx_err *err)
{
	cJSON *o = cJSON_CreateObject(), *arr = NULL;
	int rc;

	*out = NULL;
	if (!st->stack || !st->lineage) {
		rc = vx_err_set(err, VX_EINVAL, "state has no stack name or lineage");
		goto done;
	}
	if (st->serial > (uint64_t)MAX_SAFE_INT) {
		rc = vx_err_set(err, VX_EINVAL, "state serial %llu is too large",
				(unsigned long long)st->serial);
		goto done;
	}
	if (!o || add_int(o, "version", STATE_VERSION) < 0 || add_str(o, "stack", st->stack) < 0 ||
	    add_int(o, "serial", (int64_t)st->serial) < 0 ||
	    add_str(o, "lineage", st->lineage) < 0 ||
	    (st->salt && add_str(o, "salt", st->salt) < 0) ||
	    (st->lease_ref && add_str(o, "leaseRef", st->lease_ref) < 0) ||
	    add_item(o, "lock", lock_json(st->lock, 0)) < 0)
		goto oom;
	/* The optional lists are written only when they hold something. */
	if ((st->nnotified && add_item(o, "notified", notified_json(st)) < 0) ||
	    (st->nreleased && add_item(o, "released", strings_json(st->released, st->nreleased)) < 0) ||
	    (st->nnotify_targets &&
	     add_item(o, "notifyTargets", strings_json(st->notify_targets, st->nnotify_targets)) < 0) ||
	    (st->budget_cents > 0 && add_item(o, "budget", budget_json(st)) < 0) ||
	    add_item(o, "journal", journal_json(st)) < 0)
		goto oom;
	if (with_records == RECORDS_SPLICED) {
		if (add_str(o, "records", RECORDS_MARK) < 0)
			goto oom;
	} else if (with_records) {
		if ((rc = records_json(&arr, st, err)) < 0)
			goto done;
		if (add_item(o, "records", arr) < 0)
			goto oom;
	}
	*out = o;
	o = NULL;
	rc = 0;
	goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	cJSON_Delete(o);
	return rc;
}

int state_to_json(const struct state *st, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = header_json(st, 1, &o, err);
	if (rc < 0)
		return rc;
	return print_json(o, out, err);
}

int state_record_to_doc_json(const struct state_record *r, char **out, struct vx_err *err)
{
	struct vx_buf b = VX_BUF_INIT;
	cJSON *o = NULL;
	char *text = NULL;
	int rc;

	*out = NULL;
	rc = record_json(r, 0, &o);
	if (rc == -2)
		return vx_err_set(err, VX_EINVAL, "%s: the spec is not a JSON object", r->address);
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if ((rc = print_json(o, &text, err)) < 0)
		return rc;
	/* Two levels deeper than alone (the document's object, then its array):
	 * cJSON indents each line by a tab per level, and no string holds a raw
	 * newline (it is escaped). */
	for (const char *p = text; *p && rc == 0; p++)
		if (p[1] || *p != '\n')
			rc = *p == '\n' ? vx_buf_add(&b, "\n\t\t", 3) : vx_buf_addc(&b, *p);
	free(text);
	if (rc < 0 || !(*out = vx_buf_detach(&b))) {
		vx_buf_release(&b);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return 0;
}

int state_to_json_from(const struct state *st, char *const *texts, char **out, struct vx_err *err)
{
	static const char needle[] = "\n\t\"records\":\t\"" RECORDS_MARK "\"";
	struct vx_buf b = VX_BUF_INIT;
	cJSON *o = NULL;
	char *text = NULL;
	const char *at;
	int rc;

	*out = NULL;
	if ((rc = header_json(st, RECORDS_SPLICED, &o, err)) < 0 || (rc = print_json(o, &text, err)) < 0)
		return rc;
	/* The key at the top level, where no string of the header can make it (its quotes would be escaped). */
	at = strstr(text, needle);
	if (!at) {
		free(text);
		return vx_err_set(err, VX_EIO, "state: no place for the records in the document");
	}
	at += sizeof(needle) - 1 - strlen(RECORDS_MARK) - 2;
	rc = vx_buf_add(&b, text, (size_t)(at - text)) < 0 || vx_buf_addc(&b, '[') < 0;
	for (size_t i = 0; i < st->nrecords && !rc; i++)
		rc = (i && vx_buf_add(&b, ", ", 2) < 0) || vx_buf_adds(&b, texts[i]) < 0;
	if (!rc)
		rc = vx_buf_addc(&b, ']') < 0 || vx_buf_adds(&b, at + strlen(RECORDS_MARK) + 2) < 0;
	free(text);
	if (rc || !(*out = vx_buf_detach(&b))) {
		vx_buf_release(&b);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return 0;
}

int state_header_to_json(const struct state *st, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = header_json(st, 0, &o, err);
	if (rc < 0)
		return rc;
	return print_json(o, out, err);
}

int state_record_to_json(const struct state_record *r, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = record_json(r, 1, &o);
	if (rc == -2)
		return vx_err_set(err, VX_EINVAL, "%s: the spec is not a JSON object", r->address);
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return print_json(o, out, err);
}

int state_lock_to_json(const struct state_lock *l, char **out, struct vx_err *err)
{
	*out = NULL;
	return print_json(lock_json(l, 1), out, err);
}

/* ---- parsing ---------------------------------------------------------------- */

/* Every key and string valid UTF-8, every number finite. */
static int tree_ok(const cJSON *o)
{
	const cJSON *c;

	if (o->string && !vx_utf8_valid(o->string, strlen(o->string)))
		return 0;
	if (cJSON_IsString(o) && !vx_utf8_valid(o->valuestring, strlen(o->valuestring)))
		return 0;
	if (cJSON_IsNumber(o) && !isfinite(o->valuedouble))
		return 0;
	for (c = o->child; c; c = c->next)
		if (!tree_ok(c))
			return 0;
	return 1;
}

/* Every number finite (tree_ok's other half). */
static int numbers_ok(const cJSON *o)
{
	const cJSON *c;

	if (cJSON_IsNumber(o) && !isfinite(o->valuedouble))
		return 0;
	for (c = o->child; c; c = c->next)
		if (!numbers_ok(c))
			return 0;
	return 1;
}

/*
 * Whether the len bytes of text are valid UTF-8. A text that is holds only
 * valid keys and strings once parsed: cJSON copies a string's bytes as they
 * are and decodes each escape to a whole character (it refuses a lone
 * surrogate), so tree_ok's walk over every string, which was a sixth of a
 * state's load, is needed only when this fails. ASCII, most of a state,
 * goes a byte at a time without a call.
 */
static int text_utf8(const char *text, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		if ((unsigned char)text[i] < 0x80) {
			i++;
			continue;
		}
		if (!(n = vx_utf8_len(text + i, len - i)))
			return 0;
		i += n;
	}
	return 1;
}

static void jpath(char *buf, size_t n, const char *path, const char *k)
{
	if (path && *path)
		snprintf(buf, n, "%s.%s", path, k);
	else
		snprintf(buf, n, "%s", k);
}

/*
 * The error "PATH.K: <fmt>" (VX_EINVAL). The path is made only here: a
 * record's fields are read by the dozen, and making each one's path up
 * front was a tenth of a state's load. jfail is an expression worth
 * VX_EINVAL, so that callers (and the analyzer, which does not follow a
 * variadic call) see an error returned.
 */
static void jfail_set(struct vx_err *err, const char *path, const char *k, const char *fmt, ...) VX_PRINTF(4, 5);

static void jfail_set(struct vx_err *err, const char *path, const char *k, const char *fmt, ...)
{
	char p[512];
	va_list ap;

	jpath(p, sizeof(p), path, k);
	va_start(ap, fmt);
	vx_err_setv(err, VX_EINVAL, fmt, ap);
	va_end(ap);
	vx_err_wrap(err, "%s", p);
}

#define jfail(err, path, k, ...) (jfail_set((err), (path), (k), __VA_ARGS__), VX_EINVAL)

/*
 * o must be an object whose keys are all in keys[] (no duplicates), and has
 * every F_REQ key; at (NULL: not wanted) gets each key's member, or NULL
 * when absent, so the fields are then read without a search by name.
 * Members are matched from the key after the last one found: a record's
 * are written in about the order of its keys[].
 */
static int check_keys(const cJSON *o, const char *path, const char *const *keys,
		      const int *flags, size_t nkeys, const cJSON **at, struct vx_err *err)
{
	const cJSON *c;
	uint64_t seen = 0;
	size_t i, n, from = 0;

	if (!o || !cJSON_IsObject(o))
		return vx_err_set(err, VX_EINVAL, "%s: expected an object", *path ? path : "(top)");
	for (c = o->child; c; c = c->next) {
		for (n = 0, i = from; n < nkeys; n++, i = i + 1 < nkeys ? i + 1 : 0)
			if (strcmp(c->string, keys[i]) == 0)
				break;
		if (n == nkeys)
			return vx_err_set(err, VX_EINVAL, "%s%sunknown key \"%.100s\"", path,
					  *path ? ": " : "", c->string);
		if (seen & ((uint64_t)1 << i))
			return vx_err_set(err, VX_EINVAL, "%s%sduplicate key \"%s\"", path,
					  *path ? ": " : "", keys[i]);
		seen |= (uint64_t)1 << i;
		if (at)
			at[i] = c;
		from = i + 1 < nkeys ? i + 1 : 0;
	}
	for (i = 0; i < nkeys; i++) {
		if ((flags[i] & F_REQ) && !(seen & ((uint64_t)1 << i)))
			return vx_err_set(err, VX_EINVAL, "%s%smissing key \"%s\"", path,
					  *path ? ": " : "", keys[i]);
		if (at && !(seen & ((uint64_t)1 << i)))
			at[i] = NULL;
	}
	return 0;
}

/*
 * The readers of one member: v is the member named k of the object at
 * path (NULL: absent). The get_ forms below find it by name first.
 */
static int str_at(const cJSON *v, const char *path, const char *k, int flags, size_t max,
		  char **out, struct vx_err *err)
{
	*out = NULL;
	if (!v)
		return (flags & F_REQ) ? jfail(err, path, k, "missing") : 0;
	if (cJSON_IsNull(v) && (flags & F_NULL))
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return jfail(err, path, k, "expected a string%s", (flags & F_NULL) ? " or null" : "");
	if (strlen(v->valuestring) > max)
		return jfail(err, path, k, "longer than %zu bytes", max);
	if (!(flags & F_NULL) && !*v->valuestring)
		return jfail(err, path, k, "must not be empty");
	*out = vx_strdup(v->valuestring);
	return *out ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

static int get_str(const cJSON *o, const char *path, const char *k, int flags, size_t max,
		   char **out, struct vx_err *err)
{
	return str_at(cJSON_GetObjectItemCaseSensitive(o, k), path, k, flags, max, out, err);
}

static int int_at(const cJSON *v, const char *path, const char *k, int64_t min, int64_t max,
		  int64_t *out, struct vx_err *err)
{
	double d;

	*out = 0;
	if (!v)
		return jfail(err, path, k, "missing");
	d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || floor(d) != d || d > MAX_SAFE_INT ||
	    d < -MAX_SAFE_INT)
		return jfail(err, path, k, "expected an integer");
	if (d < (double)min || d > (double)max)
		return jfail(err, path, k, "%.0f is out of range [%lld, %lld]", d, (long long)min,
			     (long long)max);
	*out = (int64_t)d;
	return 0;
}

static int get_int(const cJSON *o, const char *path, const char *k, int64_t min, int64_t max,
		   int64_t *out, struct vx_err *err)
{
	return int_at(cJSON_GetObjectItemCaseSensitive(o, k), path, k, min, max, out, err);
}

/* An optional integer: absent or null leaves *has 0. */
static int opt_int_at(const cJSON *v, const char *path, const char *k, int64_t min, int64_t max,
		      int *has, int64_t *out, struct vx_err *err)
{
	*has = 0;
	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	*has = 1;
	return int_at(v, path, k, min, max, out, err);
}

static int bool_at(const cJSON *v, const char *path, const char *k, int *out, struct vx_err *err)
{
	if (!cJSON_IsBool(v))
		return jfail(err, path, k, "expected true or false");
	*out = cJSON_IsTrue(v) ? 1 : 0;
	return 0;
}

/* A boolean that may be absent (then false): for keys added after version 1 was first written. */
static int opt_bool_at(const cJSON *v, const char *path, const char *k, int *out,
		       struct vx_err *err)
{
	*out = 0;
	if (!v)
		return 0;
	return bool_at(v, path, k, out, err);
}

static int time_at(const cJSON *v, const char *path, const char *k, int flags, int64_t *out,
		   struct vx_err *err)
{
	char *s = NULL;
	int rc;

	*out = 0;
	rc = str_at(v, path, k, flags, 64, &s, err);
	if (rc < 0 || !s)
		return rc;
	if (state_time_parse(s, out) < 0)
		rc = jfail(err, path, k, "\"%s\" is not a time like 2026-11-22T10:02:00Z", s);
	else if (*out == 0)
		rc = jfail(err, path, k, "the epoch itself is not a valid time");
	free(s);
	return rc;
}

static int get_time(const cJSON *o, const char *path, const char *k, int flags, int64_t *out,
		    struct vx_err *err)
{
	return time_at(cJSON_GetObjectItemCaseSensitive(o, k), path, k, flags, out, err);
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vx_label *)a)->key, ((const struct vx_label *)b)->key);
}

static int labels_at(const cJSON *v, const char *path, const char *k, struct vx_label **out,
		     size_t *nout, struct vx_err *err)
{
	const cJSON *c;
	size_t n = 0, i;

	*out = NULL;
	*nout = 0;
	if (!cJSON_IsObject(v))
		return jfail(err, path, k, "expected an object");
	for (c = v->child; c; c = c->next) {
		if (++n > STATE_MAX_LABELS)
			return jfail(err, path, k, "more than %d labels", STATE_MAX_LABELS);
		if (!cJSON_IsString(c) || !*c->string || strlen(c->string) > 256 ||
		    strlen(c->valuestring) > 1024)
			return jfail(err, path, k,
				     "label \"%.100s\" must be a non-empty key (at most 256 "
				     "bytes) with a string value (at most 1024 bytes)",
				     c->string);
	}
	if (!n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (c = v->child, i = 0; c; c = c->next, i++) {
		*nout = i + 1;
		if (state_dup_opt(&(*out)[i].key, c->string) < 0 ||
		    state_dup_opt(&(*out)[i].value, c->valuestring) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	/* Written sorted: sorting is then only a check. */
	for (i = 1; i < n && strcmp((*out)[i - 1].key, (*out)[i].key) < 0; i++)
		;
	if (i < n)
		qsort(*out, n, sizeof(**out), label_cmp);
	for (i = 1; i < n; i++)
		if (strcmp((*out)[i - 1].key, (*out)[i].key) == 0)
			return jfail(err, path, k, "duplicate label \"%.100s\"", (*out)[i].key);
	return 0;
}

static int get_labels(const cJSON *o, const char *path, const char *k, struct vx_label **out,
		      size_t *nout, struct vx_err *err)
{
	return labels_at(cJSON_GetObjectItemCaseSensitive(o, k), path, k, out, nout, err);
}

/* A run's keys, by index (check_keys's order: the first missing F_REQ key is the one named). */
enum {
	RU_RESOURCE,
	RU_PROJECT,
	RU_REGION,
	RU_ACTION,
	RU_SPEC_HASH,
	RU_RUN,
	RU_ATTEMPT,
	RU_LABELS,
	RU_STATE,
	RU_FAILURE,
	RU_ERROR_CODE,
	RU_ERROR_MESSAGE,
	RU_CANCELLED,
	RU_CREATED,
	RU_ENDED,
	RU_CONFIG_COMMIT,
	RU_CONFIG_DIRTY,
	RU_DECL_HASH,
	RU_LAUNCHED_BY,
	RU_VALUE,
	RU_RUNG,
	RU_PLANNED_BY,
	RU_PR,
	RU_PR_URL,
	RU_RUNG_SCHEDULING,
	RU_RUNG_MACHINE,
	RU_RUNG_RESERVATION,
	RU_STARTED,
	RU_FOLLOWS,
	RU_MACHINE_TYPE,
	RU_ACCEL_TYPE,
	RU_ACCEL_COUNT,
	RU_REPLICAS,
	RU_STRATEGY,
	RU_RESERVATION,
	RU_POLICY_COMMIT,
	RU_EXIT_CODE,
	RU_TIMEOUT,
	RU_N
};

static const char *const run_keys[RU_N] = {
	[RU_RESOURCE] = "resource",
	[RU_PROJECT] = "project",
	[RU_REGION] = "region",
	[RU_ACTION] = "action",
	[RU_SPEC_HASH] = "specHash",
	[RU_RUN] = "run",
	[RU_ATTEMPT] = "attempt",
	[RU_LABELS] = "labels",
	[RU_STATE] = "state",
	[RU_FAILURE] = "failure",
	[RU_ERROR_CODE] = "errorCode",
	[RU_ERROR_MESSAGE] = "errorMessage",
	[RU_CANCELLED] = "cancelledByVx",
	[RU_CREATED] = "createdAt",
	[RU_ENDED] = "endedAt",
	[RU_CONFIG_COMMIT] = "configCommit",
	[RU_CONFIG_DIRTY] = "configDirty",
	[RU_DECL_HASH] = "declHash",
	[RU_LAUNCHED_BY] = "launchedBy",
	[RU_VALUE] = "value",
	[RU_RUNG] = "rung",
	[RU_PLANNED_BY] = "plannedBy",
	[RU_PR] = "pullRequest",
	[RU_PR_URL] = "pullRequestUrl",
	[RU_RUNG_SCHEDULING] = "rungScheduling",
	[RU_RUNG_MACHINE] = "rungMachine",
	[RU_RUNG_RESERVATION] = "rungReservation",
	[RU_STARTED] = "startedAt",
	[RU_FOLLOWS] = "follows",
	[RU_MACHINE_TYPE] = "machineType",
	[RU_ACCEL_TYPE] = "acceleratorType",
	[RU_ACCEL_COUNT] = "acceleratorCount",
	[RU_REPLICAS] = "replicas",
	[RU_STRATEGY] = "strategy",
	[RU_RESERVATION] = "reservation",
	[RU_POLICY_COMMIT] = "policyCommit",
	[RU_EXIT_CODE] = "exitCode",
	[RU_TIMEOUT] = "timeoutMs",
};

/* project, launchedBy, configDirty, declHash, value, rung and the planner's
 * fields came after the first states were written: optional, so those
 * states stay readable (each is written only when set, so states without
 * them keep their bytes). */
static const int run_flags[RU_N] = {
	[RU_RESOURCE] = F_REQ,
	[RU_PROJECT] = F_NULL,
	[RU_REGION] = F_REQ,
	[RU_ACTION] = F_REQ,
	[RU_SPEC_HASH] = F_REQ,
	[RU_RUN] = F_REQ,
	[RU_ATTEMPT] = F_REQ,
	[RU_LABELS] = F_REQ,
	[RU_STATE] = F_REQ,
	[RU_FAILURE] = F_REQ,
	[RU_ERROR_CODE] = F_REQ,
	[RU_ERROR_MESSAGE] = F_REQ,
	[RU_CANCELLED] = F_REQ,
	[RU_CREATED] = F_REQ,
	[RU_ENDED] = F_REQ,
	[RU_CONFIG_COMMIT] = F_REQ,
	[RU_CONFIG_DIRTY] = F_NULL,
	[RU_DECL_HASH] = F_NULL,
	[RU_LAUNCHED_BY] = F_NULL,
	[RU_VALUE] = F_NULL,
	[RU_RUNG] = F_NULL,
	[RU_PLANNED_BY] = F_NULL,
	[RU_PR] = F_NULL,
	[RU_PR_URL] = F_NULL,
	[RU_RUNG_SCHEDULING] = F_NULL,
	[RU_RUNG_MACHINE] = F_NULL,
	[RU_RUNG_RESERVATION] = F_NULL,
	[RU_STARTED] = F_NULL,
	[RU_FOLLOWS] = F_NULL,
	[RU_MACHINE_TYPE] = F_NULL,
	[RU_ACCEL_TYPE] = F_NULL,
	[RU_ACCEL_COUNT] = F_NULL,
	[RU_REPLICAS] = F_NULL,
	[RU_STRATEGY] = F_NULL,
	[RU_RESERVATION] = F_NULL,
	[RU_POLICY_COMMIT] = F_NULL,
	[RU_EXIT_CODE] = F_NULL,
	[RU_TIMEOUT] = F_NULL,
};

/* The member, path and name of a run's key i (for the *_at readers). */
#define RUN_AT(i) at[i], path, run_keys[i]

static int run_from(const cJSON *o, const char *path, struct state_run *r, struct vx_err *err)
{
	const cJSON *at[RU_N];
	int rc, has_rung = 0, has_pr, has_n;

	memset(r, 0, sizeof(*r));
	rc = check_keys(o, path, run_keys, run_flags, RU_N, at, err);
	if (rc < 0)
		return rc;
	if ((rc = str_at(RUN_AT(RU_RESOURCE), F_REQ | F_NULL, 1024, &r->resource, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_PROJECT), F_NULL, 128, &r->project, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_REGION), F_REQ | F_NULL, 128, &r->region, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_ACTION), F_REQ | F_NULL, 64, &r->action, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_SPEC_HASH), F_REQ | F_NULL, 128, &r->spec_hash, err)) < 0 ||
	    (rc = int_at(RUN_AT(RU_RUN), 0, INT64_C(1) << 53, &r->run, err)) < 0 ||
	    (rc = int_at(RUN_AT(RU_ATTEMPT), 0, INT64_C(1) << 53, &r->attempt, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_RUNG), 0, 1000, &has_rung, &r->rung, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_RUNG_SCHEDULING), F_NULL, 64, &r->rung_scheduling, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_RUNG_MACHINE), F_NULL, 128, &r->rung_machine, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_RUNG_RESERVATION), F_NULL, 1024, &r->rung_reservation, err)) < 0 ||
	    (rc = labels_at(RUN_AT(RU_LABELS), &r->labels, &r->nlabels, err)) < 0 ||
	    (at[RU_FOLLOWS] && (rc = labels_at(RUN_AT(RU_FOLLOWS), &r->follows, &r->nfollows, err)) < 0) ||
	    (rc = str_at(RUN_AT(RU_STATE), F_REQ | F_NULL, 128, &r->state, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_FAILURE), F_REQ | F_NULL, 128, &r->failure, err)) < 0 ||
	    (rc = int_at(RUN_AT(RU_ERROR_CODE), -(INT64_C(1) << 31), INT64_C(1) << 31, &r->error_code, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_ERROR_MESSAGE), F_REQ | F_NULL, STATE_MAX_STRING, &r->error_message, err)) < 0 ||
	    (rc = bool_at(RUN_AT(RU_CANCELLED), &r->cancelled_by_vx, err)) < 0 ||
	    (rc = time_at(RUN_AT(RU_CREATED), F_REQ | F_NULL, &r->created_ms, err)) < 0 ||
	    (rc = time_at(RUN_AT(RU_ENDED), F_REQ | F_NULL, &r->ended_ms, err)) < 0 ||
	    (rc = time_at(RUN_AT(RU_STARTED), F_NULL, &r->started_ms, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_LAUNCHED_BY), F_NULL, 512, &r->launched_by, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_PLANNED_BY), F_NULL, 512, &r->planned_by, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_PR), 1, 999999999, &has_pr, &r->pr_number, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_PR_URL), F_NULL, 1024, &r->pr_url, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_VALUE), -1, INT64_C(1) << 53, &r->has_value, &r->value, err)) < 0 ||
	    (rc = opt_bool_at(RUN_AT(RU_CONFIG_DIRTY), &r->config_dirty, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_DECL_HASH), F_NULL, 128, &r->decl_hash, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_POLICY_COMMIT), F_NULL, 128, &r->policy_commit, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_MACHINE_TYPE), F_NULL, 128, &r->machine_type, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_ACCEL_TYPE), F_NULL, 128, &r->accelerator_type, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_ACCEL_COUNT), 0, 1000000, &has_n, &r->accelerator_count, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_REPLICAS), 0, 1000000, &has_n, &r->replicas, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_STRATEGY), F_NULL, 64, &r->strategy, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_RESERVATION), F_NULL, 1024, &r->reservation, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_EXIT_CODE), 1, 255, &has_n, &r->exit_code, err)) < 0 ||
	    (rc = opt_int_at(RUN_AT(RU_TIMEOUT), 1, INT64_C(1) << 53, &has_n, &r->timeout_ms, err)) < 0 ||
	    (rc = str_at(RUN_AT(RU_CONFIG_COMMIT), F_REQ | F_NULL, 128, &r->config_commit, err)) < 0)
		state_run_release(r);
	return rc;
}

static int lock_from(const cJSON *o, const char *path, int with_version, struct state_lock *l,
		     struct vx_err *err)
{
	static const char *const keys[] = { "version", "id", "user", "host", "pid", "operation",
					    "startedAt", "expiresAt" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ };
	int64_t version = STATE_VERSION;
	int rc;
	char p[512];

	memset(l, 0, sizeof(*l));
	rc = check_keys(o, path, keys + !with_version, flags, 8 - !with_version, NULL, err);
	if (rc < 0)
		return rc;
	if ((with_version && (rc = get_int(o, path, "version", 0, 1000, &version, err)) < 0))
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported lock version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = get_str(o, path, "id", F_REQ, 64, &l->id, err)) < 0 ||
	    (rc = get_str(o, path, "user", F_REQ, 256, &l->user, err)) < 0 ||
	    (rc = get_str(o, path, "host", F_REQ, 256, &l->host, err)) < 0 ||
	    (rc = get_int(o, path, "pid", 0, INT32_MAX, &l->pid, err)) < 0 ||
	    (rc = get_str(o, path, "operation", F_REQ, 64, &l->operation, err)) < 0 ||
	    (rc = get_time(o, path, "startedAt", F_REQ, &l->started_ms, err)) < 0 ||
	    (rc = get_time(o, path, "expiresAt", F_REQ, &l->expires_ms, err)) < 0)
		goto fail;
	if (!lock_id_ok(l->id)) {
		jpath(p, sizeof(p), path, "id");
		rc = vx_err_set(err, VX_EINVAL, "%s: not a lock id (32 lowercase hex digits)", p);
		goto fail;
	}
	return 0;
fail:
	state_lock_release(l);
	return rc;
}

static int intent_from(const cJSON *o, const char *path, struct state_intent *in,
		       struct vx_err *err)
{
	static const char *const keys[] = { "address", "op", "labels", "startedAt" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ };
	int rc;

	memset(in, 0, sizeof(*in));
	rc = check_keys(o, path, keys, flags, 4, NULL, err);
	if (rc < 0)
		return rc;
	if ((rc = get_str(o, path, "address", F_REQ, 256, &in->address, err)) < 0 ||
	    (rc = get_str(o, path, "op", F_REQ, 64, &in->op, err)) < 0 ||
	    (rc = get_labels(o, path, "labels", &in->labels, &in->nlabels, err)) < 0 ||
	    (rc = get_time(o, path, "startedAt", F_REQ | F_NULL, &in->started_ms, err)) < 0) {
		state_intent_release(in);
		return rc;
	}
	if (state_address_split(in->address, NULL, NULL, err) < 0) {
		state_intent_release(in);
		return vx_err_wrap(err, "%s.address", path);
	}
	return 0;
}

/* A list of at most STATE_MAX_POLICY_LIST non-empty strings. */
static int strs_at(const cJSON *v, const char *path, const char *k, char ***out, size_t *nout,
		   struct vx_err *err)
{
	const cJSON *c;
	size_t n = 0;

	*out = NULL;
	*nout = 0;
	if (!cJSON_IsArray(v))
		return jfail(err, path, k, "expected an array");
	for (c = v->child; c; c = c->next) {
		if (++n > STATE_MAX_POLICY_LIST)
			return jfail(err, path, k, "more than %d entries", STATE_MAX_POLICY_LIST);
		if (!cJSON_IsString(c) || !c->valuestring || !*c->valuestring || strlen(c->valuestring) > 1024) {
			char p[512];

			jpath(p, sizeof(p), path, k);
			return vx_err_set(err, VX_EINVAL, "%s[%zu]: expected a non-empty string (at most 1024 bytes)",
					  p, n - 1);
		}
	}
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (c = v->child; c; c = c->next) {
		if (state_dup_opt(&(*out)[*nout], c->valuestring) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		(*nout)++;
	}
	return 0;
}

/* "onExitCodes" (optional, its member v): exit statuses 1..255, into bits. */
static int exit_codes_at(const cJSON *v, const char *path, uint64_t *bits, struct vx_err *err)
{
	const cJSON *c;
	const char *dot = path && *path ? "." : "";
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "%.400s%sonExitCodes: expected an array", path ? path : "", dot);
	for (c = v->child; c; c = c->next, i++) {
		if (!cJSON_IsNumber(c) || c->valuedouble < 1 || c->valuedouble > 255 ||
		    floor(c->valuedouble) != c->valuedouble)
			return vx_err_set(err, VX_EINVAL, "%.400s%sonExitCodes[%zu]: expected an exit status (1 to 255)",
					  path ? path : "", dot, i);
		bits[c->valueint / 64] |= UINT64_C(1) << (c->valueint % 64);
	}
	return 0;
}

/* "resubmitBudgets" (optional, its member v): one number 0..1000 per resubmitOn class. */
static int budgets_at(const cJSON *v, const char *path, struct state_policy *pol, struct vx_err *err)
{
	const cJSON *c;
	const char *dot = path && *path ? "." : "";
	size_t i = 0;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v) || (size_t)cJSON_GetArraySize(v) != pol->nresubmit_on || !pol->nresubmit_on)
		return vx_err_set(err, VX_EINVAL, "%.400s%sresubmitBudgets: expected one number per resubmitOn class",
				  path ? path : "", dot);
	if (!(pol->resubmit_budgets = calloc(pol->nresubmit_on, sizeof(int64_t))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (c = v->child; c; c = c->next, i++) {
		if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 1000 ||
		    floor(c->valuedouble) != c->valuedouble)
			return vx_err_set(err, VX_EINVAL, "%.400s%sresubmitBudgets[%zu]: expected a number from 0 to 1000",
					  path ? path : "", dot, i);
		pol->resubmit_budgets[i] = (int64_t)c->valuedouble;
	}
	return 0;
}

/* A policy's keys, by index, in check_keys's order. */
enum {
	PO_RESUBMIT_ON,
	PO_MAX_ATTEMPTS,
	PO_DELAY,
	PO_FALLBACK_RUNGS,
	PO_FALLBACK_HASH,
	PO_AFTER,
	PO_MAX_PARALLEL,
	PO_MAX_FAILED,
	PO_EXIT_CODES,
	PO_BUDGETS,
	PO_WITHIN,
	PO_RETURN_AFTER,
	PO_MAX_QUEUED,
	PO_N
};

static const char *const policy_keys[PO_N] = {
	[PO_RESUBMIT_ON] = "resubmitOn",
	[PO_MAX_ATTEMPTS] = "maxAttempts",
	[PO_DELAY] = "delayMs",
	[PO_FALLBACK_RUNGS] = "fallbackRungs",
	[PO_FALLBACK_HASH] = "fallbackHash",
	[PO_AFTER] = "after",
	[PO_MAX_PARALLEL] = "maxParallel",
	[PO_MAX_FAILED] = "maxFailed",
	[PO_EXIT_CODES] = "onExitCodes",
	[PO_BUDGETS] = "resubmitBudgets",
	[PO_WITHIN] = "withinMs",
	[PO_RETURN_AFTER] = "returnAfterMs",
	[PO_MAX_QUEUED] = "maxQueuedMs",
};

static const int policy_flags[PO_N] = {
	[PO_RESUBMIT_ON] = F_REQ,
	[PO_MAX_ATTEMPTS] = F_REQ,
	[PO_DELAY] = F_REQ,
	[PO_FALLBACK_RUNGS] = F_REQ,
	[PO_FALLBACK_HASH] = F_REQ | F_NULL,
	[PO_AFTER] = F_REQ,
	[PO_MAX_PARALLEL] = F_REQ,
	[PO_MAX_FAILED] = F_REQ,
	[PO_EXIT_CODES] = F_NULL,
	[PO_BUDGETS] = F_NULL,
	[PO_WITHIN] = F_NULL,
	[PO_RETURN_AFTER] = F_NULL,
	[PO_MAX_QUEUED] = F_NULL,
};

#define POLICY_AT(i) at[i], path, policy_keys[i]

static int policy_from(const cJSON *o, const char *path, struct state_policy *pol, struct vx_err *err)
{
	const cJSON *at[PO_N];
	int rc, has_within, has_return, has_queued;

	memset(pol, 0, sizeof(*pol));
	if ((rc = check_keys(o, path, policy_keys, policy_flags, PO_N, at, err)) < 0 ||
	    (rc = exit_codes_at(at[PO_EXIT_CODES], path, pol->on_exit_codes, err)) < 0 ||
	    (rc = opt_int_at(POLICY_AT(PO_WITHIN), 1, INT64_C(1) << 53, &has_within, &pol->within_ms, err)) < 0 ||
	    (rc = opt_int_at(POLICY_AT(PO_RETURN_AFTER), 1, INT64_C(1) << 53, &has_return, &pol->return_after_ms,
			     err)) < 0 ||
	    (rc = opt_int_at(POLICY_AT(PO_MAX_QUEUED), 1, INT64_C(1) << 53, &has_queued, &pol->max_queued_ms,
			     err)) < 0 ||
	    (rc = strs_at(POLICY_AT(PO_RESUBMIT_ON), &pol->resubmit_on, &pol->nresubmit_on, err)) < 0 ||
	    (rc = int_at(POLICY_AT(PO_MAX_ATTEMPTS), 1, INT64_C(1) << 31, &pol->max_attempts, err)) < 0 ||
	    (rc = int_at(POLICY_AT(PO_DELAY), 0, INT64_C(1) << 53, &pol->delay_ms, err)) < 0 ||
	    (rc = int_at(POLICY_AT(PO_FALLBACK_RUNGS), 0, 1000, &pol->fallback_rungs, err)) < 0 ||
	    (rc = str_at(POLICY_AT(PO_FALLBACK_HASH), F_REQ | F_NULL, 64, &pol->fallback_hash, err)) < 0 ||
	    (rc = strs_at(POLICY_AT(PO_AFTER), &pol->after, &pol->nafter, err)) < 0 ||
	    (rc = int_at(POLICY_AT(PO_MAX_PARALLEL), 0, INT64_C(1) << 31, &pol->max_parallel, err)) < 0 ||
	    (rc = int_at(POLICY_AT(PO_MAX_FAILED), 0, INT64_C(1) << 31, &pol->max_failed, err)) < 0 ||
	    (rc = budgets_at(at[PO_BUDGETS], path, pol, err)) < 0)
		state_policy_release(pol);
	return rc;
}

/* "onRemove" (optional, its member v): "cancel" or "forget", into r->on_remove. */
static int on_remove_from(const cJSON *v, const char *path, struct state_record *r, struct vx_err *err)
{
	char *on_remove = NULL;
	int rc;

	if ((rc = str_at(v, path, "onRemove", F_NULL, 16, &on_remove, err)) < 0)
		return rc;
	if (on_remove && strcmp(on_remove, "cancel") != 0 && strcmp(on_remove, "forget") != 0)
		rc = jfail(err, path, "onRemove", "expected \"cancel\" or \"forget\"");
	else if (on_remove)
		r->on_remove = strcmp(on_remove, "cancel") ? STATE_ON_REMOVE_FORGET : STATE_ON_REMOVE_CANCEL;
	free(on_remove);
	return rc;
}

/* "spec" (its member): null or an object, kept as compact JSON text in r->spec_json (at most MAX_SPEC bytes). */
static int spec_from(const cJSON *spec, const char *path, struct state_record *r, struct vx_err *err)
{
	char *s;

	if (cJSON_IsNull(spec))
		return 0;
	if (!cJSON_IsObject(spec))
		return jfail(err, path, "spec", "expected an object or null");
	s = cJSON_PrintUnformatted(spec);
	if (!s)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (strlen(s) > MAX_SPEC) {
		cJSON_free(s);
		return jfail(err, path, "spec", "longer than %zu bytes", MAX_SPEC);
	}
	r->spec_json = vx_strdup(s);
	cJSON_free(s);
	if (!r->spec_json)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/* "history" (its member): the record's earlier runs, at most STATE_MAX_HISTORY. */
static int history_from(const cJSON *hist, const char *path, struct state_record *r, struct vx_err *err)
{
	const cJSON *c;
	size_t n, i;
	char p[512];
	int rc;

	if (!cJSON_IsArray(hist))
		return jfail(err, path, "history", "expected an array");
	for (n = 0, c = hist->child; c; c = c->next)
		if (++n > STATE_MAX_HISTORY)
			return jfail(err, path, "history", "more than %d runs", STATE_MAX_HISTORY);
	if (n && !(r->history = calloc(n, sizeof(*r->history))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (n)
		jpath(p, sizeof(p), path, "history");
	for (i = 0, c = hist->child; c; c = c->next, i++) {
		char hp[560];

		snprintf(hp, sizeof(hp), "%s[%zu]", p, i);
		if ((rc = run_from(c, hp, &r->history[i], err)) < 0)
			return rc;
		r->nhistory = i + 1;
	}
	return 0;
}

/* A record's keys, by index, in check_keys's order ("version" only in a record stored alone). */
enum {
	RE_VERSION,
	RE_ADDRESS,
	RE_KIND,
	RE_SPEC_HASH,
	RE_SPEC,
	RE_RUN,
	RE_ATTEMPTS,
	RE_PROTECT,
	RE_CURRENT,
	RE_HISTORY,
	RE_ON_REMOVE,
	RE_APPLIED,
	RE_N
};

static const char *const record_keys[RE_N] = {
	[RE_VERSION] = "version",
	[RE_ADDRESS] = "address",
	[RE_KIND] = "kind",
	[RE_SPEC_HASH] = "specHash",
	[RE_SPEC] = "spec",
	[RE_RUN] = "run",
	[RE_ATTEMPTS] = "attempts",
	[RE_PROTECT] = "protect",
	[RE_CURRENT] = "current",
	[RE_HISTORY] = "history",
	[RE_ON_REMOVE] = "onRemove",
	[RE_APPLIED] = "applied",
};

/* onRemove and applied came later: optional. */
static const int record_flags[RE_N] = {
	[RE_VERSION] = F_REQ,
	[RE_ADDRESS] = F_REQ,
	[RE_KIND] = F_REQ,
	[RE_SPEC_HASH] = F_REQ,
	[RE_SPEC] = F_REQ,
	[RE_RUN] = F_REQ,
	[RE_ATTEMPTS] = F_REQ,
	[RE_PROTECT] = F_REQ,
	[RE_CURRENT] = F_REQ,
	[RE_HISTORY] = F_REQ,
	[RE_ON_REMOVE] = F_NULL,
	[RE_APPLIED] = F_NULL,
};

#define RECORD_AT(i) at[i], path, record_keys[i]

/* A record's "current" (the run in flight, or null) and "applied" (optional: the policy the last apply used). */
static int record_runs(const cJSON *const *at, const char *path, struct state_record *r, struct vx_err *err)
{
	char p[512];
	int rc;

	if (!cJSON_IsNull(at[RE_CURRENT])) {
		jpath(p, sizeof(p), path, "current");
		if (!(r->current = calloc(1, sizeof(*r->current))))
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		if ((rc = run_from(at[RE_CURRENT], p, r->current, err)) < 0)
			return rc;
	}
	if ((rc = history_from(at[RE_HISTORY], path, r, err)) < 0)
		return rc;
	if (at[RE_APPLIED] && !cJSON_IsNull(at[RE_APPLIED])) {
		jpath(p, sizeof(p), path, "applied");
		if (!(r->applied = calloc(1, sizeof(*r->applied))))
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		if ((rc = policy_from(at[RE_APPLIED], p, r->applied, err)) < 0)
			return rc;
	}
	return 0;
}

/* One record at path; "version" is checked only with_version (a record
 * stored on its own, not inside a state document). On error r is released. */
static int record_from(const cJSON *o, const char *path, int with_version,
		       struct state_record *r, struct vx_err *err)
{
	const cJSON *at[RE_N] = { NULL };
	int64_t version = STATE_VERSION;
	int rc, skip = !with_version;

	memset(r, 0, sizeof(*r));
	rc = check_keys(o, path, record_keys + skip, record_flags + skip, RE_N - skip, at + skip, err);
	if (rc < 0)
		return rc;
	if (with_version && (rc = int_at(RECORD_AT(RE_VERSION), 0, 1000, &version, err)) < 0)
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported state version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = str_at(RECORD_AT(RE_ADDRESS), F_REQ, 256, &r->address, err)) < 0 ||
	    (rc = str_at(RECORD_AT(RE_KIND), F_REQ, 64, &r->kind, err)) < 0 ||
	    (rc = str_at(RECORD_AT(RE_SPEC_HASH), F_REQ | F_NULL, 128, &r->spec_hash, err)) < 0 ||
	    (rc = int_at(RECORD_AT(RE_RUN), 0, INT64_C(1) << 53, &r->run, err)) < 0 ||
	    (rc = int_at(RECORD_AT(RE_ATTEMPTS), 0, INT64_C(1) << 53, &r->attempts, err)) < 0 ||
	    (rc = bool_at(RECORD_AT(RE_PROTECT), &r->protect, err)) < 0 ||
	    (rc = on_remove_from(at[RE_ON_REMOVE], path, r, err)) < 0)
		goto fail;
	if ((rc = state_address_split(r->address, NULL, NULL, err)) < 0) {
		vx_err_wrap(err, "%s%saddress", path, *path ? "." : "");
		goto fail;
	}
	if ((rc = spec_from(at[RE_SPEC], path, r, err)) < 0 || (rc = record_runs(at, path, r, err)) < 0)
		goto fail;
	return 0;
fail:
	state_record_release(r);
	return rc;
}

static int record_cmp(const void *a, const void *b)
{
	return strcmp(((const struct state_record *)a)->address,
		      ((const struct state_record *)b)->address);
}

/* "notified": the deliveries recorded (optional: written only when there are some). */
static int notified_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	static const char *const keys[] = { "key", "at", "until" };
	static const int flags[] = { F_REQ, F_REQ, 0 };
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "notified"), *c;
	size_t n = 0, i;
	int rc;

	if (!v)
		return 0;
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "notified: expected an array");
	for (c = v->child; c; c = c->next)
		if (++n > STATE_MAX_NOTIFIED)
			return vx_err_set(err, VX_EINVAL, "notified: more than %d entries", STATE_MAX_NOTIFIED);
	if (n && !(st->notified = calloc(n, sizeof(*st->notified))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		char p[64];
		struct state_notified *e = &st->notified[i];

		snprintf(p, sizeof(p), "notified[%zu]", i);
		if ((rc = check_keys(c, p, keys, flags, 3, NULL, err)) < 0 ||
		    (rc = get_str(c, p, "key", F_REQ, 64, &e->key, err)) < 0)
			return rc;
		st->nnotified = i + 1;
		if ((rc = get_time(c, p, "at", F_REQ, &e->at_ms, err)) < 0 ||
		    (rc = get_time(c, p, "until", 0, &e->until_ms, err)) < 0)
			return rc;
		if (strlen(e->key) != 45 || strncmp(e->key, "evt_", 4))
			return vx_err_set(err, VX_EINVAL, "%s.key: not a notification key", p);
	}
	return 0;
}

/* "released": the jobs `vx state rm` let go of (optional: written only when there are some). */
static int released_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "released"), *c;
	size_t n = 0, i;

	if (!v)
		return 0;
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "released: expected an array");
	for (c = v->child; c; c = c->next)
		if (++n > STATE_MAX_RELEASED)
			return vx_err_set(err, VX_EINVAL, "released: more than %d entries", STATE_MAX_RELEASED);
	if (n && !(st->released = calloc(n, sizeof(*st->released))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		if (!cJSON_IsString(c) || !*c->valuestring || strlen(c->valuestring) > 1024 ||
		    !vx_text_is_clean(c->valuestring, strlen(c->valuestring)))
			return vx_err_set(err, VX_EINVAL, "released[%zu]: expected a job's resource name", i);
		if (i && strcmp(st->released[i - 1], c->valuestring) >= 0)
			return vx_err_set(err, VX_EINVAL, "released[%zu]: not sorted or not unique", i);
		if (!(st->released[i] = strdup(c->valuestring)))
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		st->nreleased = i + 1;
	}
	return 0;
}

/* "budget": the budget applied (optional: written only when one is). */
static int budget_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "budget");
	static const char *const keys[] = { "usdCents", "days", "warnAt" };
	static const int flags[] = { F_REQ, F_REQ, 0 };
	const cJSON *w, *c;
	int rc;

	if (!v)
		return 0;
	if (!cJSON_IsObject(v))
		return vx_err_set(err, VX_EINVAL, "budget: expected an object");
	if ((rc = check_keys(v, "budget", keys, flags, 3, NULL, err)) < 0 ||
	    (rc = get_int(v, "budget", "usdCents", 1, (int64_t)100000000000, &st->budget_cents, err)) < 0 ||
	    (rc = get_int(v, "budget", "days", 0, 366, &st->budget_days, err)) < 0)
		return rc;
	if (!(w = cJSON_GetObjectItemCaseSensitive(v, "warnAt")))
		return 0;
	if (!cJSON_IsArray(w))
		return vx_err_set(err, VX_EINVAL, "budget.warnAt: expected an array");
	for (c = w->child; c; c = c->next) {
		int prev = st->nbudget_warn_at ? st->budget_warn_at[st->nbudget_warn_at - 1] : 0;

		if (st->nbudget_warn_at >= 8 || !cJSON_IsNumber(c) || c->valuedouble != (double)c->valueint ||
		    c->valueint <= prev || c->valueint > 100)
			return vx_err_set(err, VX_EINVAL, "budget.warnAt: at most 8 percents from 1 to 100, ascending");
		st->budget_warn_at[st->nbudget_warn_at++] = c->valueint;
	}
	return 0;
}

/* "notifyTargets": the notify targets applied (optional: written only when there are some). */
static int notify_targets_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "notifyTargets"), *c;
	const char *d[STATE_MAX_NOTIFY_TARGETS];
	size_t n = 0;
	int changed, rc;

	if (!v)
		return 0;
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "notifyTargets: expected an array");
	for (c = v->child; c; c = c->next, n++) {
		if (n >= STATE_MAX_NOTIFY_TARGETS)
			return vx_err_set(err, VX_EINVAL, "notifyTargets: more than %d entries", STATE_MAX_NOTIFY_TARGETS);
		if (!cJSON_IsString(c))
			return vx_err_set(err, VX_EINVAL, "notifyTargets[%zu]: expected a string", n);
		d[n] = c->valuestring;
	}
	if ((rc = state_notify_targets_set(st, d, n, &changed)) == VX_EINVAL)
		return vx_err_set(err, rc, "notifyTargets: each is 32 lowercase hex digits (a target's digest)");
	return rc < 0 ? vx_err_set(err, rc, "out of memory") : 0;
}

/* The state's identity: version (this vx's only), stack, serial, lineage,
 * and the optional salt and leaseRef. */
static int identity_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	int64_t version, serial;
	int rc;

	if ((rc = get_int(o, "", "version", 0, 1000, &version, err)) < 0)
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported state version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = get_str(o, "", "stack", F_REQ, 256, &st->stack, err)) < 0 ||
	    (rc = get_int(o, "", "serial", 0, INT64_C(1) << 53, &serial, err)) < 0 ||
	    (rc = get_str(o, "", "lineage", F_REQ, 64, &st->lineage, err)) < 0)
		return rc;
	st->serial = (uint64_t)serial;
	if (!state_name_ok(st->stack, 0))
		return vx_err_set(err, VX_EINVAL, "stack: bad stack name \"%.100s\"", st->stack);
	if (!uuid_ok(st->lineage))
		return vx_err_set(err, VX_EINVAL, "lineage: not a UUID");
	if ((rc = get_str(o, "", "salt", 0, 64, &st->salt, err)) < 0)
		return rc;
	if (st->salt && !state_salt_ok(st->salt))
		return vx_err_set(err, VX_EINVAL, "salt: not 64 lowercase hex digits");
	return get_str(o, "", "leaseRef", 0, 256, &st->lease_ref, err);
}

/* "journal": the intents not yet settled, at most STATE_MAX_JOURNAL. */
static int journal_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "journal"), *c;
	size_t n, i;
	int rc;

	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "journal: expected an array");
	for (n = 0, c = v->child; c; c = c->next)
		if (++n > STATE_MAX_JOURNAL)
			return vx_err_set(err, VX_EINVAL, "journal: more than %d entries",
					  STATE_MAX_JOURNAL);
	if (n && !(st->journal = calloc(n, sizeof(*st->journal))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		char p[64];

		snprintf(p, sizeof(p), "journal[%zu]", i);
		if ((rc = intent_from(c, p, &st->journal[i], err)) < 0)
			return rc;
		st->njournal = i + 1;
	}
	return 0;
}

/* "records": at most STATE_MAX_RECORDS, sorted by address, each address once. */
static int records_from(const cJSON *o, struct state *st, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "records"), *c;
	size_t n, i;
	int rc;

	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "records: expected an array");
	for (n = 0, c = v->child; c; c = c->next)
		if (++n > STATE_MAX_RECORDS)
			return vx_err_set(err, VX_EINVAL, "records: more than %d records",
					  STATE_MAX_RECORDS);
	if (n && !(st->records = calloc(n, sizeof(*st->records))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		char p[64];

		snprintf(p, sizeof(p), "records[%zu]", i);
		if ((rc = record_from(c, p, 0, &st->records[i], err)) < 0)
			return rc;
		st->nrecords = i + 1;
	}
	if (st->nrecords > 1)
		qsort(st->records, st->nrecords, sizeof(*st->records), record_cmp);
	for (i = 1; i < st->nrecords; i++)
		if (strcmp(st->records[i - 1].address, st->records[i].address) == 0)
			return vx_err_set(err, VX_EINVAL, "records: %s appears twice",
					  st->records[i].address);
	return 0;
}

/* The state document into st: its header and, with_records, its records. */
static int header_from(const cJSON *o, int with_records, struct state *st, struct vx_err *err)
{
	/* "salt" and "leaseRef" are optional: states written before them have
	 * none (records last). */
	static const char *const keys[] = { "version", "stack", "serial", "lineage", "lock",
					    "journal", "salt", "leaseRef", "notified", "released", "notifyTargets",
					    "budget", "records" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, 0, 0, 0, 0, 0, 0, F_REQ };
	const cJSON *v;
	int rc;

	rc = check_keys(o, "", keys, flags, with_records ? 13 : 12, NULL, err);
	if (rc < 0 || (rc = identity_from(o, st, err)) < 0)
		return rc;
	v = cJSON_GetObjectItemCaseSensitive(o, "lock");
	if (!cJSON_IsNull(v)) {
		st->lock = calloc(1, sizeof(*st->lock));
		if (!st->lock)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		if ((rc = lock_from(v, "lock", 0, st->lock, err)) < 0)
			return rc;
	}
	if ((rc = journal_from(o, st, err)) < 0 || (rc = notified_from(o, st, err)) < 0 ||
	    (rc = released_from(o, st, err)) < 0 || (rc = notify_targets_from(o, st, err)) < 0 ||
	    (rc = budget_from(o, st, err)) < 0)
		return rc;
	return with_records ? records_from(o, st, err) : 0;
}

/* Parses text into a tree, with bounds; the error names line and column. */
static int parse_root(const char *text, size_t len, size_t max, cJSON **out, struct vx_err *err)
{
	const char *end = NULL, *p;
	unsigned line = 1, col = 1;
	cJSON *root;

	*out = NULL;
	if (!text)
		return vx_err_set(err, VX_EINVAL, "no input");
	if (len > max)
		return vx_err_set(err, VX_EINVAL, "%zu bytes is over the limit of %zu", len, max);
	if (memchr(text, '\0', len))
		return vx_err_set(err, VX_EINVAL, "contains a NUL byte");
	root = vx_json_parse_tree(text, len, &end);
	if (root) {
		for (p = end; p < text + len; p++) {
			if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
				end = p;
				vx_json_drop(root);
				root = NULL;
				break;
			}
		}
	}
	if (!root) {
		if (!end || end < text || end > text + len)
			end = text + len;
		for (p = text; p < end; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		return vx_err_set(err, VX_EINVAL, "%u:%u: not valid JSON", line, col);
	}
	/* A text that is not valid UTF-8 may still parse to valid strings (one cut at a \u0000). */
	if (!(text_utf8(text, len) ? numbers_ok(root) : tree_ok(root))) {
		vx_json_drop(root);
		return vx_err_set(err, VX_EINVAL, "invalid UTF-8 or a non-finite number");
	}
	*out = root;
	return 0;
}

int state_from_json(struct state *out, const char *text, size_t len, struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_JSON, &root, err);
	if (rc == 0)
		rc = header_from(root, 1, out, err);
	vx_json_drop(root);
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "invalid state JSON");
	}
	return rc;
}

int state_header_from_json(struct state *out, const char *text, size_t len, struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_FILE, &root, err);
	if (rc == 0)
		rc = header_from(root, 0, out, err);
	vx_json_drop(root);
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "invalid state JSON");
	}
	return rc;
}

int state_record_from_json(struct state_record *out, const char *text, size_t len,
			   struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_FILE, &root, err);
	if (rc == 0)
		rc = record_from(root, "", 1, out, err);
	vx_json_drop(root);
	if (rc < 0) {
		state_record_release(out);
		vx_err_wrap(err, "invalid state record JSON");
	}
	return rc;
}

int state_lock_from_json(struct state_lock *out, const char *text, size_t len,
			 struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, 64 << 10, &root, err);
	if (rc == 0)
		rc = lock_from(root, "", 1, out, err);
	vx_json_drop(root);
	if (rc < 0) {
		state_lock_release(out);
		vx_err_wrap(err, "invalid lock JSON");
	}
	return rc;
}
