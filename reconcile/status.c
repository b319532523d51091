/*
 * vx status: the state's records joined with the live listing, one row per
 * address (reconcile/status.h). Nothing here reads the network or writes.
 */
#include "reconcile/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/render.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

const char *status_tracking_name(enum status_tracking t)
{
	switch (t) {
	case STATUS_TRACKED:
		return "tracked";
	case STATUS_NOT_APPLIED:
		return "not applied";
	case STATUS_UNTRACKED:
		return "untracked";
	case STATUS_FOREIGN:
		return "foreign";
	}
	return "tracked";
}

static void row_release(struct status_row *r)
{
	free(r->address);
	free(r->state);
	free(r->resource);
	free(r->region);
	free(r->failure);
	free(r->message);
}

void status_release(struct status_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		row_release(&r->rows[i]);
	free(r->rows);
	for (size_t i = 0; i < r->nlisted; i++)
		/* nlisted counts only names stored in listed, so listed is set when it is > 0.
		 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		free(r->listed[i]);
	free(r->listed);
	free(r->stack);
	free(r->project);
	free(r->currency);
	memset(r, 0, sizeof(*r));
}

/* A new zeroed row at the end of r, or NULL (out of memory). */
static struct status_row *row_add(struct status_report *r, const char *kind, const char *address)
{
	struct status_row *row;

	if (VX_ALLOC_GROW(r->rows, r->n + 1, r->cap) < 0)
		return NULL;
	row = &r->rows[r->n];
	memset(row, 0, sizeof(*row));
	row->kind = kind;
	row->queued_ms = -1;
	row->running_ms = -1;
	if (!(row->address = vx_text_clean(address)))
		return NULL;
	r->n++;
	return row;
}

/* "RUNNING" for JOB_STATE_RUNNING: only Vertex's own states pass (the text is the server's). */
static char *job_state_text(const char *state)
{
	if (!state)
		return NULL;
	if (!strncmp(state, "JOB_STATE_", 10) && strcmp(job_state_short(state), "unknown") != 0)
		return vx_strdup(state + 10);
	return vx_strdup("UNKNOWN");
}

/* The cleaned first line of a server's message: never a control character, never a URL's password. */
static char *clean_message(const char *msg)
{
	struct vx_buf b = VX_BUF_INIT;
	char *out;

	if (!msg || !*msg)
		return NULL;
	if (render_error_first_line(&b, msg) < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	out = vx_text_clean(vx_buf_str(&b));
	vx_buf_release(&b);
	if (out)
		vx_text_redact_userinfo(out);
	return out;
}

/*
 * The live jobs by name and the names of every run the state records, each
 * sorted once: a stack of 10,000 jobs is joined in n log n, not n^2.
 */
struct index {
	const struct live_job **live;
	size_t nlive;
	const char **known;
	size_t nknown;
};

static int cmp_live(const void *x, const void *y)
{
	const struct live_job *const *a = x, *const *b = y;

	return strcmp((*a)->name, (*b)->name);
}

static int cmp_name(const void *x, const void *y)
{
	const char *const *a = x, *const *b = y;

	return strcmp(*a, *b);
}

static void index_release(struct index *ix)
{
	free(ix->live);
	free(ix->known);
}

static int index_build(struct index *ix, const struct status_input *in)
{
	const struct live_jobs *js = in->live ? in->live->jobs : NULL;
	const struct state *s = in->state;
	size_t runs = 0;

	memset(ix, 0, sizeof(*ix));
	for (size_t i = 0; s && i < s->nrecords; i++)
		runs += s->records[i].nhistory + 1;
	if ((js && js->n && !(ix->live = calloc(js->n, sizeof(*ix->live)))) ||
	    (runs && !(ix->known = calloc(runs, sizeof(*ix->known)))))
		return VX_ENOMEM;
	for (size_t i = 0; js && i < js->n; i++)
		if (js->items[i].name)
			ix->live[ix->nlive++] = &js->items[i];
	for (size_t i = 0; s && i < s->nrecords; i++) {
		const struct state_record *r = &s->records[i];

		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource)
				/* known holds one more than each record's history: allocated when there is a record.
				 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
				ix->known[ix->nknown++] = r->history[h].resource;
		if (r->current && r->current->resource)
			ix->known[ix->nknown++] = r->current->resource;
	}
	if (ix->nlive)
		qsort(ix->live, ix->nlive, sizeof(*ix->live), cmp_live);
	if (ix->nknown)
		qsort(ix->known, ix->nknown, sizeof(*ix->known), cmp_name);
	return 0;
}

static const struct live_job *live_by_name(const struct index *ix, const char *name)
{
	struct live_job key;
	const struct live_job *kp = &key, *const *hit;

	if (!name || !ix->nlive)
		return NULL;
	key.name = (char *)(uintptr_t)name;
	hit = bsearch(&kp, ix->live, ix->nlive, sizeof(*ix->live), cmp_live);
	return hit ? *hit : NULL;
}

/* Whether the state knows a run named name (current or past, any record). */
static int state_knows(const struct index *ix, const char *name)
{
	return name && ix->nknown && bsearch(&name, ix->known, ix->nknown, sizeof(*ix->known), cmp_name);
}

/*
 * Whether a job without a startTime never ran: waiting, or ended before it
 * started (a stockout fails from PENDING). A RUNNING or SUCCEEDED job
 * without one is a server that left it out: its running time is unknown.
 */
static int never_ran(const char *state)
{
	static const char *const states[] = {
		"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
		"JOB_STATE_EXPIRED",
	};

	for (size_t i = 0; state && i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(state, states[i]))
			return 1;
	return 0;
}

/* Queued and running times, from what the listing said (times known) or not (unknown). */
static void job_times(struct status_row *row, const struct live_job *lj, int64_t now)
{
	int active = lj && job_state_is_active(lj->state);
	int64_t end = active ? 0 : row->end_ms;

	if (!lj)
		return;
	if (row->create_ms) {
		int64_t until = row->start_ms ? row->start_ms : end ? end : now;

		row->queued_ms = until > row->create_ms ? until - row->create_ms : 0;
	}
	if (row->start_ms) {
		int64_t until = end ? end : now;

		row->running_ms = until > row->start_ms ? until - row->start_ms : 0;
	} else if (never_ran(lj->state)) {
		row->running_ms = 0;
	}
}

/* Cost so far: the recorded spec's rate x running hours; a run that never ran costs nothing. */
static void job_cost(struct status_row *row, const struct status_input *in, const char *spec_json)
{
	double rate;

	if (row->running_ms < 0)
		return;
	if (row->running_ms == 0) {
		row->cost_known = 1;
		return;
	}
	rate = prices_spec_rate(in->prices, row->region, spec_json, NULL, NULL);
	if (rate < 0)
		return;
	row->cost_known = 1;
	row->cost = rate * (double)row->running_ms / 3600000.0;
}

/* Whether the next apply resubmits a run of j that failed with cls at attempt. */
static int will_resubmit(const struct stack_job *j, const char *cls, int64_t attempt)
{
	unsigned bit = stack_fail_parse(cls);

	return j && bit && (j->resubmit_on & bit) && attempt < j->max_attempts;
}

/* Fills a tracked job row from its current run and the live job, if listed. */
static int job_run_row(struct status_row *row, const struct status_input *in, const struct index *ix,
		       const struct state_record *rec, const struct stack_job *j)
{
	const struct state_run *run = rec->current;
	const struct live_job *lj = live_by_name(ix, run->resource);
	const char *state = lj ? lj->state : run->state, *msg = lj ? lj->error_message : run->error_message;
	int code = lj ? lj->error_code : (int)run->error_code;
	struct failure_input fin = {
		.state = state, .error_code = code, .message = msg,
		.scheduling = run->rung_scheduling ? run->rung_scheduling
			      : vx_text_same(run->spec_hash, rec->spec_hash) ? failure_spec_strategy(rec->spec_json)
			      : NULL,
		.started = (lj ? lj->start_ms : 0) > 0 || run->started_ms > 0,
		.cancelled_by_vx = run->cancelled_by_vx,
	};
	const char *cls = failure_classify(&fin);
	char project[128], region[64];

	row->listed = lj != NULL;
	row->attempt = run->attempt;
	row->rung = run->rung;
	if (run->region)
		row->region = vx_text_clean(run->region);
	else if (run->resource && plan_resource_place(run->resource, project, region, sizeof(region)) == 0)
		row->region = vx_strdup(region);
	if ((run->resource && !(row->resource = vx_text_clean(run->resource))) ||
	    (state && !(row->state = job_state_text(state))))
		return VX_ENOMEM;
	row->create_ms = lj && lj->create_ms ? lj->create_ms : run->created_ms;
	row->start_ms = lj ? lj->start_ms : 0;
	row->end_ms = lj && lj->end_ms ? lj->end_ms : run->ended_ms;
	job_times(row, lj, in->now_ms);
	job_cost(row, in, rec->spec_json);
	if (cls) {
		if (!(row->failure = vx_strdup(cls)))
			return VX_ENOMEM;
		row->message = clean_message(msg);
		row->resubmits = will_resubmit(j, cls, run->attempt);
		row->gave_up = !row->resubmits;
	}
	return 0;
}

/*
 * A record whose only word is a create the server refused (permission,
 * invalid argument, quota: the history's last entry, no run made): the
 * row says REFUSED with the server's reason, not "not applied".
 */
static int refused_row(struct status_row *row, const struct state_record *rec, const struct stack_job *j)
{
	const struct state_run *h = rec && rec->nhistory ? &rec->history[rec->nhistory - 1] : NULL;

	if (!h || h->resource || !h->failure || (strcmp(h->failure, "refused") && strcmp(h->failure, "quota")))
		return 1;
	row->tracking = STATUS_TRACKED;
	row->listed = 1;     /* no job to list: nothing ran, nothing spent */
	row->cost_known = 1;
	row->attempt = h->attempt;
	row->create_ms = h->created_ms;
	row->refused = 1;
	if (!(row->state = vx_strdup("REFUSED")) || !(row->failure = vx_strdup(h->failure)) ||
	    (h->region && !(row->region = vx_strdup(h->region))))
		return VX_ENOMEM;
	row->message = clean_message(h->error_message);
	row->resubmits = will_resubmit(j, h->failure, h->attempt);
	row->gave_up = !row->resubmits;
	return 0;
}

static int job_row(struct status_report *out, const struct status_input *in, const struct index *ix,
		   const char *address, const struct stack_job *j, const struct state_record *rec)
{
	int rc;

	struct status_row *row = row_add(out, "job", address);

	if (!row)
		return VX_ENOMEM;
	row->declared = j != NULL;
	row->max_attempts = j ? j->max_attempts : 0;
	if (rec && rec->current)
		return job_run_row(row, in, ix, rec, j);
	if ((rc = refused_row(row, rec, j)) <= 0)
		return rc;
	/* A run vxapply recorded while maxParallel, maxFailed or after: held it back. */
	row->tracking = rec && j && (j->sweep || j->nafter) ? STATUS_TRACKED : STATUS_NOT_APPLIED;
	if (row->tracking == STATUS_TRACKED) {
		/* nothing runs, so nothing to list and nothing spent */
		row->listed = 1;
		row->cost_known = 1;
		if (!(row->state = vx_strdup("WAITING")))
			return VX_ENOMEM;
	}
	if (j && j->region && !(row->region = vx_strdup(j->region)))
		return VX_ENOMEM;
	return 0;
}

/* A small count from a label (vx-attempt, vx-rung): digits only, else 0 (unknown). */
static int64_t label_count(const struct live_job *lj, const char *key)
{
	const char *v = live_job_label(lj, key);
	int64_t n = 0;

	for (const char *p = v; p && *p; p++) {
		if (*p < '0' || *p > '9' || n > 100000)
			return 0;
		n = n * 10 + (*p - '0');
	}
	return n;
}

/* A live job of this stack's name that the state does not know: never hidden. */
static int untracked_row(struct status_report *out, const struct status_input *in, const struct live_job *lj)
{
	const char *job = live_job_label(lj, "vx-job"), *lin = live_job_label(lj, "vx-lineage");
	char mine[13] = "", *address = vx_asprintf("job.%s", job ? job : lj->display_name ? lj->display_name : "?");
	struct status_row *row = address ? row_add(out, "job", address) : NULL;

	free(address);
	if (!row)
		return VX_ENOMEM;
	if (in->state && in->state->lineage)
		plan_lineage_label(mine, in->state->lineage);
	row->tracking = *mine && lin && !strcmp(lin, mine) ? STATUS_UNTRACKED : STATUS_FOREIGN;
	row->listed = 1;
	/* Its attempt and rung as its labels say, when it carries vx's. */
	row->attempt = label_count(lj, "vx-attempt");
	row->rung = row->attempt ? label_count(lj, "vx-rung") : 0;
	if ((lj->name && !(row->resource = vx_text_clean(lj->name))) ||
	    (lj->region && !(row->region = vx_text_clean(lj->region))) ||
	    (lj->state && !(row->state = job_state_text(lj->state))))
		return VX_ENOMEM;
	row->create_ms = lj->create_ms;
	row->start_ms = lj->start_ms;
	row->end_ms = lj->end_ms;
	job_times(row, lj, in->now_ms);
	/* No recorded spec: a run that ran costs unknown. */
	job_cost(row, in, NULL);
	return 0;
}

static int job_rows(struct status_report *out, const struct status_input *in)
{
	const struct stack *st = in->st;
	struct index ix;
	int rc = index_build(&ix, in);

	for (size_t i = 0; i < st->njobs && rc == 0; i++)
		rc = job_row(out, in, &ix, st->jobs[i].d.address, &st->jobs[i],
			     in->state ? state_find(in->state, st->jobs[i].d.address) : NULL);
	for (size_t i = 0; in->state && i < in->state->nrecords && rc == 0; i++) {
		const struct state_record *r = &in->state->records[i];

		if (!strcmp(r->kind, "CustomJob") && !strncmp(r->address, "job.", 4) &&
		    !stack_find_job(st, r->address + 4))
			rc = job_row(out, in, &ix, r->address, NULL, r);
	}
	for (size_t i = 0; i < ix.nlive && rc == 0; i++)
		if (!state_knows(&ix, ix.live[i]->name))
			rc = untracked_row(out, in, ix.live[i]);
	index_release(&ix);
	return rc;
}

static const struct live_reservation *live_reservation_of(const struct live_set *live, const char *name)
{
	for (size_t i = 0; live && live->reservations && i < live->reservations->n; i++)
		if (live->reservations->items[i].name && !strcmp(live->reservations->items[i].name, name))
			return &live->reservations->items[i];
	return NULL;
}

static const struct live_quota *live_quota_of(const struct live_set *live, const char *id)
{
	for (size_t i = 0; live && live->quotas && i < live->quotas->n; i++)
		if (live->quotas->items[i].id && !strcmp(live->quotas->items[i].id, id))
			return &live->quotas->items[i];
	return NULL;
}

/* Reservations and quota preferences: what the listing says of each declared one. */
static int other_rows(struct status_report *out, const struct status_input *in)
{
	const struct stack *st = in->st;

	for (size_t i = 0; i < st->nreservations; i++) {
		const struct stack_reservation *d = &st->reservations[i];
		const struct live_reservation *lr = live_reservation_of(in->live, d->d.name);
		struct status_row *row = row_add(out, "reservation", d->d.address);

		if (!row || !(row->region = vx_text_clean(lr && lr->zone ? lr->zone : d->zone)))
			return VX_ENOMEM;
		if (!lr) {
			row->tracking = in->state && state_find(in->state, d->d.address) ? STATUS_TRACKED
											: STATUS_NOT_APPLIED;
			continue;
		}
		row->listed = 1;
		row->has_value = row->has_value2 = 1;
		row->value = lr->count;
		row->value2 = lr->in_use;
		if ((lr->status && !(row->state = vx_text_clean(lr->status))) ||
		    !(row->resource = vx_text_clean(lr->name)))
			return VX_ENOMEM;
	}
	for (size_t i = 0; i < st->nquotas; i++) {
		const struct stack_quota *d = &st->quotas[i];
		const struct live_quota *lq = live_quota_of(in->live, d->d.name);
		struct status_row *row = row_add(out, "quota", d->d.address);

		if (!row || !(row->region = vx_strdup("global")))
			return VX_ENOMEM;
		if (!lq) {
			row->tracking = in->state && state_find(in->state, d->d.address) ? STATUS_TRACKED
											: STATUS_NOT_APPLIED;
			continue;
		}
		row->listed = 1;
		row->has_value = 1;
		row->value = lq->preferred;
		row->has_value2 = lq->has_granted;
		row->value2 = lq->granted;
		row->state = vx_strdup(lq->reconciling ? "RECONCILING"
				       : lq->has_granted && (lq->granted >= lq->preferred || lq->granted < 0)
					       ? "GRANTED" : "PENDING");
		if (!row->state || (lq->name && !(row->resource = vx_text_clean(lq->name))))
			return VX_ENOMEM;
	}
	return 0;
}

/* Jobs, then reservations, then quota preferences: the kinds' order elsewhere is by phase. */
static int kind_rank(const char *kind)
{
	return !strcmp(kind, "job") ? 0 : !strcmp(kind, "reservation") ? 1 : 2;
}

static int cmp_rows(const void *x, const void *y)
{
	const struct status_row *a = x, *b = y;
	int ka = kind_rank(a->kind), kb = kind_rank(b->kind), c;

	if (ka != kb)
		return ka - kb;
	if ((c = strcmp(a->address, b->address)))
		return c;
	if ((int)a->tracking != (int)b->tracking)
		return (int)a->tracking - (int)b->tracking;
	return strcmp(a->resource ? a->resource : "", b->resource ? b->resource : "");
}

int status_build(struct status_report *out, const struct status_input *in, struct vx_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->now_ms = in->now_ms;
	out->serial = in->state ? in->state->serial : 0;
	if (!(out->stack = vx_strdup(in->st->name)) || !(out->project = vx_strdup(in->st->project)) ||
	    (in->prices && in->prices->currency && !(out->currency = vx_strdup(in->prices->currency))))
		goto oom;
	if (in->nlisted && !(out->listed = calloc(in->nlisted, sizeof(*out->listed))))
		goto oom;
	for (; out->nlisted < in->nlisted; out->nlisted++)
		if (!(out->listed[out->nlisted] = vx_strdup(in->listed[out->nlisted])))
			goto oom;
	rc = job_rows(out, in);
	if (rc == 0)
		rc = other_rows(out, in);
	if (rc < 0)
		goto oom;
	if (out->n)
		qsort(out->rows, out->n, sizeof(*out->rows), cmp_rows);
	return 0;
oom:
	status_release(out);
	return vx_err_set(err, VX_ENOMEM, "out of memory");
}

void status_duration(char out[24], int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		snprintf(out, 24, "-");
	else if (s < 60)
		snprintf(out, 24, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(out, 24, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, 24, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(out, 24, "%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
}

/* ---- rendering ---- */

enum { COL_ADDRESS, COL_STATE, COL_ATTEMPT, COL_RUNG, COL_REGION, COL_QUEUED, COL_RUNNING, COL_COST, COL_NOTE,
       NCOLS };

static const char *const col_titles[NCOLS] = {
	"ADDRESS", "STATE", "ATTEMPT", "RUNG", "REGION", "QUEUED", "RUNNING", "COST SO FAR", "NOTE",
};

/* The note column: why it failed and what comes of it, what is untracked, a value. */
static int row_note(struct vx_buf *b, const struct status_row *r)
{
	int rc = 0;

	if (r->tracking == STATUS_UNTRACKED || r->tracking == STATUS_FOREIGN)
		rc = vx_buf_printf(b, "%s: %s", r->tracking == STATUS_UNTRACKED
			       ? "untracked (not in the state)" : "foreign (another state's job)",
			       r->resource ? r->resource : "?");
	else if (r->refused)
		rc = vx_buf_printf(b, "create refused%s%s%s%s%s; %s%s", strcmp(r->failure, "refused") ? " (" : "",
				   strcmp(r->failure, "refused") ? r->failure : "",
				   strcmp(r->failure, "refused") ? ")" : "", r->message ? ": " : "",
				   r->message ? r->message : "", r->gave_up ? "fix the cause, then vxapply -replace "
				   : "asked again on the next apply", r->gave_up ? r->address : "");
	else if (r->failure)
		rc = vx_buf_printf(b, "%s: %s%s%s", r->gave_up ? "gave up" : "resubmits on the next apply",
				   r->failure, r->message ? ": " : "", r->message ? r->message : "");
	else if (!strcmp(r->kind, "reservation") && r->has_value)
		rc = vx_buf_printf(b, "count %" PRId64 ", in use %" PRId64, r->value, r->value2);
	else if (!strcmp(r->kind, "quota") && r->has_value)
		rc = r->has_value2 ? vx_buf_printf(b, "preferred %" PRId64 ", granted %" PRId64, r->value, r->value2)
				   : vx_buf_printf(b, "preferred %" PRId64, r->value);
	if (rc == 0 && r->tracking == STATUS_TRACKED && !r->listed)
		rc = vx_buf_printf(b, "%snot listed: as last seen", b->len ? "; " : "");
	if (rc == 0 && r->tracking == STATUS_TRACKED && !r->declared && !strcmp(r->kind, "job"))
		rc = vx_buf_printf(b, "%sno longer declared", b->len ? "; " : "");
	return rc;
}

/* The cells of one row (each cell a NUL-terminated string in cells[i]). */
static int row_cells(struct vx_buf cells[NCOLS], const struct status_row *r, const char *currency)
{
	char d[24];
	int job = !strcmp(r->kind, "job"), rc;

	rc = vx_buf_adds(&cells[COL_ADDRESS], r->address);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_STATE], r->tracking == STATUS_NOT_APPLIED ? "not applied"
						   : r->state ? r->state : "-");
	if (rc == 0)
		rc = job && r->attempt ? (r->max_attempts ? vx_buf_printf(&cells[COL_ATTEMPT], "%" PRId64 "/%" PRId64,
									   r->attempt, r->max_attempts)
						  : vx_buf_printf(&cells[COL_ATTEMPT], "%" PRId64 "/-", r->attempt))
				       : vx_buf_adds(&cells[COL_ATTEMPT], "-");
	if (rc == 0)
		rc = job && r->attempt ? vx_buf_printf(&cells[COL_RUNG], "%" PRId64, r->rung)
				       : vx_buf_adds(&cells[COL_RUNG], "-");
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_REGION], r->region ? r->region : "-");
	status_duration(d, r->queued_ms);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_QUEUED], d);
	status_duration(d, r->running_ms);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_RUNNING], d);
	if (rc == 0)
		rc = !job || r->tracking == STATUS_NOT_APPLIED ? vx_buf_adds(&cells[COL_COST], "-")
		     : r->cost_known ? capacity_money(&cells[COL_COST], currency, r->cost, 2)
				     : vx_buf_adds(&cells[COL_COST], "unknown");
	if (rc == 0)
		rc = row_note(&cells[COL_NOTE], r);
	return rc;
}

/* Display width of UTF-8 text: one column per character (the table's texts are narrow). */
static size_t text_width(const char *s)
{
	return vx_utf8_count(s);
}

static const char *state_color(const char *state)
{
	if (!state)
		return NULL;
	if (!strcmp(state, "RUNNING") || !strcmp(state, "SUCCEEDED") || !strcmp(state, "READY") ||
	    !strcmp(state, "GRANTED"))
		return "\033[32m";
	if (!strcmp(state, "FAILED") || !strcmp(state, "CANCELLED") || !strcmp(state, "EXPIRED"))
		return "\033[31m";
	return "\033[33m";
}

static int render_line(struct vx_buf *b, struct vx_buf cells[NCOLS], const size_t width[NCOLS],
		       const char *color)
{
	int rc = 0, last = NCOLS - 1;

	/* The note, when empty, leaves no trailing spaces behind the cost. */
	while (last > 0 && !cells[last].len)
		last--;
	for (int c = 0; c <= last && rc == 0; c++) {
		const char *text = vx_buf_str(&cells[c]);
		size_t pad = c < last ? width[c] - text_width(text) + 2 : 0;

		if (c == COL_STATE && color)
			rc = vx_buf_printf(b, "%s%s\033[0m", color, text);
		else
			rc = vx_buf_adds(b, text);
		for (; rc == 0 && pad > 0; pad--)
			rc = vx_buf_addc(b, ' ');
	}
	return rc == 0 ? vx_buf_addc(b, '\n') : rc;
}

static int render_header(struct vx_buf *b, const struct status_report *r)
{
	char now[STATE_TIME_MAX];
	int rc;

	state_time_format(r->now_ms, now);
	rc = vx_buf_printf(b, "Stack %s, project %s, state serial %" PRIu64 ", as of %s\n", r->stack,
			   r->project ? r->project : "?", r->serial, now);
	if (rc == 0 && r->nlisted)
		rc = vx_buf_adds(b, "Jobs listed in ");
	for (size_t i = 0; rc == 0 && i < r->nlisted; i++)
		rc = vx_buf_printf(b, "%s%s", i ? ", " : "", r->listed[i]);
	if (rc == 0 && r->nlisted)
		rc = vx_buf_addc(b, '\n');
	return rc == 0 ? vx_buf_addc(b, '\n') : rc;
}

int status_render_human(struct vx_buf *b, const struct status_report *r, int color)
{
	struct vx_buf *cells = calloc((r->n + 1) * NCOLS, sizeof(*cells));
	size_t width[NCOLS];
	int rc;

	if (!cells)
		return VX_ENOMEM;
	rc = render_header(b, r);
	if (rc == 0 && !r->n)
		rc = vx_buf_adds(b, "Nothing declared, recorded or listed.\n");
	for (int c = 0; c < NCOLS && rc == 0 && r->n; c++) {
		rc = vx_buf_adds(&cells[c], col_titles[c]);
		width[c] = text_width(col_titles[c]);
	}
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		rc = row_cells(&cells[(i + 1) * NCOLS], &r->rows[i], r->currency);
		for (int c = 0; c < NCOLS && rc == 0; c++) {
			size_t w = text_width(vx_buf_str(&cells[(i + 1) * NCOLS + c]));

			width[c] = w > width[c] ? w : width[c];
		}
	}
	for (size_t i = 0; i <= r->n && rc == 0 && r->n; i++)
		rc = render_line(b, &cells[i * NCOLS], width,
				 i && color ? state_color(r->rows[i - 1].state) : NULL);
	for (size_t i = 0; i < (r->n + 1) * NCOLS; i++)
		vx_buf_release(&cells[i]);
	free(cells);
	return rc;
}

static int json_time(struct vx_buf *b, const char *key, int64_t ms)
{
	char t[STATE_TIME_MAX];

	if (!ms)
		return vx_buf_printf(b, ",\"%s\":null", key);
	state_time_format(ms, t);
	return vx_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

static int json_str(struct vx_buf *b, const char *key, const char *v)
{
	int rc = vx_buf_printf(b, ",\"%s\":", key);

	if (rc == 0)
		rc = v ? vx_buf_add_json_str(b, v) : vx_buf_adds(b, "null");
	return rc;
}

static int json_seconds(struct vx_buf *b, const char *key, int64_t ms)
{
	return ms < 0 ? vx_buf_printf(b, ",\"%s\":null", key) : vx_buf_printf(b, ",\"%s\":%" PRId64, key, ms / 1000);
}

static int json_int(struct vx_buf *b, const char *key, int has, int64_t v)
{
	return has ? vx_buf_printf(b, ",\"%s\":%" PRId64, key, v) : vx_buf_printf(b, ",\"%s\":null", key);
}

static int json_row(struct vx_buf *b, const struct status_row *r)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"kind\":\"%s\",\"tracking\":\"%s\",\"declared\":%s,\"listed\":%s", r->kind,
				   status_tracking_name(r->tracking), r->declared ? "true" : "false",
				   r->listed ? "true" : "false");
	if (rc == 0)
		rc = json_str(b, "state", r->state);
	if (rc == 0)
		rc = json_str(b, "resource", r->resource);
	if (rc == 0)
		rc = json_str(b, "region", r->region);
	if (rc == 0 && strcmp(r->kind, "job") != 0) {
		int res = !strcmp(r->kind, "reservation");

		rc = json_int(b, res ? "count" : "preferred", r->has_value, r->value);
		if (rc == 0)
			rc = json_int(b, res ? "in_use" : "granted", r->has_value2, r->value2);
		return rc == 0 ? vx_buf_addc(b, '}') : rc;
	}
	if (rc == 0)
		rc = json_int(b, "attempt", r->attempt > 0, r->attempt);
	if (rc == 0)
		rc = json_int(b, "max_attempts", r->max_attempts > 0, r->max_attempts);
	if (rc == 0)
		rc = json_int(b, "rung", r->attempt > 0, r->rung);
	if (rc == 0)
		rc = json_time(b, "create_time", r->create_ms);
	if (rc == 0)
		rc = json_time(b, "start_time", r->start_ms);
	if (rc == 0)
		rc = json_time(b, "end_time", r->end_ms);
	if (rc == 0)
		rc = json_seconds(b, "queued_seconds", r->queued_ms);
	if (rc == 0)
		rc = json_seconds(b, "running_seconds", r->running_ms);
	if (rc == 0)
		rc = r->cost_known ? vx_buf_printf(b, ",\"cost_so_far\":%.2f", r->cost)
				   : vx_buf_adds(b, ",\"cost_so_far\":null");
	if (rc == 0 && !r->failure)
		return vx_buf_adds(b, ",\"failure\":null}");
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"failure\":{\"class\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->failure);
	if (rc == 0)
		rc = json_str(b, "message", r->message);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"resubmits\":%s,\"gave_up\":%s}}", r->resubmits ? "true" : "false",
				   r->gave_up ? "true" : "false");
	return rc;
}

int status_render_json(struct vx_buf *b, const struct status_report *r)
{
	char now[STATE_TIME_MAX];
	int rc;

	state_time_format(r->now_ms, now);
	rc = vx_buf_adds(b, "{\"format_version\":1,\"stack\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->stack);
	if (rc == 0)
		rc = json_str(b, "project", r->project);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"state_serial\":\"%" PRIu64 "\",\"as_of\":\"%s\"", r->serial, now);
	if (rc == 0)
		rc = json_str(b, "currency", r->currency);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"regions\":[");
	for (size_t i = 0; rc == 0 && i < r->nlisted; i++) {
		if (i)
			rc = vx_buf_addc(b, ',');
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->listed[i]);
	}
	if (rc == 0)
		rc = vx_buf_adds(b, "],\"addresses\":[");
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		if (i)
			rc = vx_buf_addc(b, ',');
		if (rc == 0)
			rc = json_row(b, &r->rows[i]);
	}
	return rc == 0 ? vx_buf_adds(b, "]}") : rc;
}
