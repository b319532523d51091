/*
 * The job kind's rows in vx status (struct kind's status_rows slot,
 * reconcile/status.h): one per declared job, one per job recorded and no
 * longer declared, and one per live job labelled with this stack that the
 * state does not know. A row's state and times come from the listing when
 * it returned the job, else from the state's last word.
 */
#include "reconcile/provider_job.h"
#include "reconcile/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* "RUNNING" for JOB_STATE_RUNNING: only Vertex's own states pass (the text is the server's). */
static char *job_state_text(const char *state)
{
	if (!state)
		return NULL;
	if (!strncmp(state, "JOB_STATE_", 10) && strcmp(job_state_short(state), "unknown") != 0)
		return vx_strdup(state + 10);
	return vx_strdup("UNKNOWN");
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
	const struct job_live *jl = kind_live(in->live, &kind_job);
	const struct live_jobs *js = jl ? &jl->listed : NULL;
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
	/* known holds one more than each record's history: allocated when there is a record. */
	for (size_t i = 0; s && ix->known && i < s->nrecords; i++) {
		const struct state_record *r = &s->records[i];

		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource)
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
	const struct live_job *kp = &key;
	const struct live_job *const *hit;

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
		"JOB_STATE_QUEUED",
		"JOB_STATE_PENDING",
		"JOB_STATE_FAILED",
		"JOB_STATE_CANCELLED",
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
		int64_t until = row->start_ms ? row->start_ms : (end ? end : now);

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

/*
 * What the resubmission of j's run at attempt on rung, after a failure of
 * class cls, can cost at most, as the plan counts it: per attempt left, the
 * priciest rung it may run on (a capacity failure sends it one down) x its
 * rate x its timeout (7 days when unset). -1 when a price is unknown.
 */
static double resubmit_at_most(const struct status_input *in, const struct stack_job *j, int64_t rung,
			       int64_t attempt, const char *cls)
{
	int moves = (stack_fail_parse(cls) & (STACK_FAIL_STOCKOUT | STACK_FAIL_PREEMPTED | STACK_FAIL_WAIT_TIMEOUT)) != 0;

	return kind_job_attempts_most(j, rung, moves, j->max_attempts - attempt, in->prices, NULL);
}

/* The scheduling strategy run was made with: its rung's, else its record's spec's if it is the run's. */
static const char *run_scheduling(const struct state_run *run, const struct state_record *rec)
{
	if (run->rung_scheduling)
		return run->rung_scheduling;
	return vx_text_same(run->spec_hash, rec->spec_hash) ? failure_spec_strategy(rec->spec_json) : NULL;
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
		.state = state,
		.error_code = code,
		.message = msg,
		.scheduling = run_scheduling(run, rec),
		.started = (lj ? lj->start_ms : 0) > 0 || run->started_ms > 0,
		.cancelled_by_vx = run->cancelled_by_vx,
		.ended_ms = lj && lj->end_ms ? lj->end_ms : run->ended_ms,
	};
	struct job_window w;
	const char *cls = job_classify(&fin, in->live, vx_text_same(run->spec_hash, rec->spec_hash) ? rec->spec_json : NULL,
				       run->failure, &w);
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
		row->message = status_clean_message(msg);
		row->resubmits = will_resubmit(j, cls, run->attempt);
		row->gave_up = !row->resubmits;
		if (row->resubmits)
			row->resubmit_at_most = resubmit_at_most(in, j, run->rung, run->attempt, cls);
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
	row->listed = 1; /* no job to list: nothing ran, nothing spent */
	row->cost_known = 1;
	row->attempt = h->attempt;
	row->create_ms = h->created_ms;
	row->refused = 1;
	if (!(row->state = vx_strdup("REFUSED")) || !(row->failure = vx_strdup(h->failure)) ||
	    (h->region && !(row->region = vx_strdup(h->region))))
		return VX_ENOMEM;
	row->message = status_clean_message(h->error_message);
	row->resubmits = will_resubmit(j, h->failure, h->attempt);
	row->gave_up = !row->resubmits;
	return 0;
}

_Static_assert(STACK_FAIL_NCLASSES <= STATUS_MAX_BUDGETS, "a budget per failure class");

/*
 * j's per-class resubmit budgets (resubmit.on's map form) and how many of
 * each rec's run has had: its earlier attempts of the record's spec and run
 * (history) that failed with that class, each followed by a resubmission.
 */
static void job_budgets(struct status_row *row, const struct stack_job *j, const struct state_record *rec)
{
	for (unsigned c = 0; j && j->on_budgets && c < STACK_FAIL_NCLASSES; c++) {
		struct status_budget *bu = &row->budgets[row->nbudgets];

		if (!(j->resubmit_on & (1u << c)))
			continue;
		bu->cls = stack_fail_names[c];
		bu->allowed = j->on_budget[c];
		bu->used = 0;
		for (size_t h = 0; rec && h < rec->nhistory; h++) {
			const struct state_run *x = &rec->history[h];

			if (x->failure && !strcmp(x->failure, bu->cls) && x->run == rec->run &&
			    vx_text_same(x->spec_hash, rec->spec_hash))
				bu->used++;
		}
		row->nbudgets++;
	}
}

static int job_row(struct status_report *out, const struct status_input *in, const struct index *ix,
		   const char *address, const struct stack_job *j, const struct state_record *rec)
{
	int rc;

	struct status_row *row = status_row_add(out, kind_job.prefix, address);

	if (!row)
		return VX_ENOMEM;
	row->runs = 1;
	row->declared = j != NULL;
	row->max_attempts = j ? j->max_attempts : 0;
	job_budgets(row, j, rec);
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
	const char *shown = job ? job : (lj->display_name ? lj->display_name : "?");
	char mine[13] = "", *address = vx_asprintf("job.%s", shown);
	struct status_row *row = address ? status_row_add(out, kind_job.prefix, address) : NULL;

	free(address);
	if (!row)
		return VX_ENOMEM;
	row->runs = 1;
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

int kind_job_status_rows(struct status_report *out, const struct status_input *in)
{
	const struct stack *st = in->st;
	struct index ix;
	size_t njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);
	int rc = index_build(&ix, in);

	for (size_t i = 0; i < njobs && rc == 0; i++)
		rc = job_row(out, in, &ix, jobs[i].d.address, &jobs[i],
			     in->state ? state_find(in->state, jobs[i].d.address) : NULL);
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
