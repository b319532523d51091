/*
 * The job kind: Vertex AI CustomJobs (job.NAME). This file holds its row of
 * the kind table (reconcile/kind.h), how jobs are read (one filtered list
 * per place a declared job or a current run lives in) and the plan entry
 * (planner_plan_jobs): the stack's jobs and the state's job records turned
 * into the plain input of the three-way diff (kind_job_diff.c). What the
 * other kind_job_*.c files hold: reconcile/kind_job_internal.h.
 */
#include "reconcile/kind.h"
#include "reconcile/import.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/spec.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/pool.h"
#include "util/text.h"
#include "util/banned.h"

/* ---- plan: from the stack and the state ---------------------------------- */

static enum plan_on_change on_change(enum stack_on_change v)
{
	switch (v) {
	case STACK_ON_CHANGE_AFTER_FINISH: return PLAN_ON_CHANGE_AFTER_FINISH;
	case STACK_ON_CHANGE_IGNORE: return PLAN_ON_CHANGE_IGNORE;
	default: return PLAN_ON_CHANGE_REPLACE;
	}
}

/* Whether a history entry is a create the server refused (record_refused). */
static int is_refusal(const struct state_run *h)
{
	return !h->resource && h->failure && (!strcmp(h->failure, "refused") || !strcmp(h->failure, "quota"));
}

/*
 * The refused creates at the end of r's history (a new run moves the
 * current one to the end of the history), those of the newest one's spec
 * and run, unless a run of that spec and run was made since.
 */
static void note_refusals(struct plan_refusal *out, const struct state_record *r)
{
	const struct state_run *last;

	memset(out, 0, sizeof(*out));
	if (!r->nhistory || !is_refusal(&r->history[r->nhistory - 1]))
		return;
	last = &r->history[r->nhistory - 1];
	/* A run made since (the first create was refused, a later one was not). */
	if (r->current && r->current->resource && vx_text_same(r->current->spec_hash, last->spec_hash) &&
	    r->current->run == last->run && r->current->attempt >= last->attempt)
		return;
	out->spec_hash = last->spec_hash;
	out->run = last->run;
	out->attempt = last->attempt;
	out->at_ms = last->ended_ms ? last->ended_ms : last->created_ms;
	out->cls = last->failure;
	out->message = last->error_message;
	for (size_t h = r->nhistory; h-- > 0;) {
		const struct state_run *x = &r->history[h];

		if (!is_refusal(x) || !vx_text_same(x->spec_hash, last->spec_hash) || x->run != last->run)
			break;
		out->n++;
	}
}

/*
 * Where the state of st is kept and how a state that was not found is got
 * back, for the plan error of job_check_other_lineage. Owned by the caller.
 */
static char *state_lost_hint(const struct stack *st)
{
	const struct stack_state_cfg *c = &st->state;
	char *prefix, *hint;

	switch (c->backend) {
	case STACK_BACKEND_GCS:
		/* The object prefix, as the gcs backend defaults it (state/state_gcs.h). */
		prefix = c->path ? vx_strdup(c->path) : vx_asprintf("vx/state/%s", st->name);
		if (!prefix)
			return NULL;
		/* A state.json deleted with its history still there is refused by
		 * the backend itself, with vx state restore: here there is neither. */
		hint = vx_asprintf("Likely cause: state.bucket or state.path changed, or everything under "
				   "gs://%s/%s/ was deleted, its history too. Fix: set the bucket and path "
				   "back, or restore gs://%s/%s/state.json from an earlier version (a "
				   "versioned bucket keeps them: gcloud storage ls --all-versions "
				   "gs://%s/%s/state.json).",
				   c->bucket, prefix, c->bucket, prefix, c->bucket, prefix);
		free(prefix);
		return hint;
	case STACK_BACKEND_FILE:
		return vx_asprintf("Likely cause: the state file %s is missing (not committed, or deleted). "
				   "Fix: restore it, or point state.path at it.",
				   c->path ? c->path : STACK_STATE_FILE_DEFAULT);
	default:
		if (!c->remote)
			return vx_asprintf("Likely cause: the state is kept on the branch %s, which this "
					   "clone does not have, and state.remote is unset, so vx does not fetch "
					   "it (a CI checkout fetches one branch). Fix: set state.remote (e.g. "
					   "remote: origin) in the Stack, or fetch the branch before planning: "
					   "git fetch origin %s:%s.", c->branch, c->branch, c->branch);
		return vx_asprintf("Likely cause: the branch %s was not found on %s (not fetched, or "
				   "deleted). Fix: fetch it (git fetch %s %s:%s), or restore it from a clone "
				   "that has it and push it.", c->branch, c->remote, c->remote, c->branch,
				   c->branch);
	}
}

/* Live jobs by name, for live_end. NULL when there are none (or no memory: the state's ends are used). */
static const struct live_job **live_by_names(const struct live_set *live, size_t *n)
{
	const struct live_jobs *js = live ? live->jobs : NULL;
	const struct live_job **idx;

	*n = 0;
	if (!js || !js->n || !(idx = calloc(js->n, sizeof(*idx))))
		return NULL;
	for (size_t i = 0; i < js->n; i++)
		if (js->items[i].name)
			idx[(*n)++] = &js->items[i];
	qsort(idx, *n, sizeof(*idx), job_cmp_live_name);
	return idx;
}

/* A run's end: the live job's endTime when it is listed with one, else the state's. */
static int64_t live_end(const struct live_job **idx, size_t n, const struct state_run *cur)
{
	const struct live_job *lj = idx ? job_live_lookup(idx, n, cur->resource) : NULL;

	return lj && lj->end_ms ? lj->end_ms : cur->ended_ms;
}

int planner_plan_jobs(struct planner *out, const struct kind_plan_input *kin, struct vx_err *err)
{
	const struct stack *st = kin->st;
	const struct state *state = kin->state;
	struct plan jobs;
	size_t nknown = 0, ri = 0, ki = 0, nrec = 0, nrungs = 0, nids = 0, nlive;
	const struct live_job **byname;
	int rc;

	for (size_t i = 0; i < state->nrecords; i++) {
		if (!strncmp(state->records[i].address, "job.", 4)) {
			nrec++;
			nknown += state->records[i].nhistory;
		}
	}
	out->decls = calloc(st->njobs + 1, sizeof(*out->decls));
	out->shapes = calloc(st->njobs + 1, sizeof(*out->shapes));
	out->resubmit = calloc(st->njobs * STACK_FAIL_NCLASSES + 1, sizeof(*out->resubmit));
	out->records = calloc(nrec + 1, sizeof(*out->records));
	out->runs = calloc(nrec + 1, sizeof(*out->runs));
	out->known = calloc(nknown + 1, sizeof(*out->known));
	for (size_t i = 0; i < st->njobs; i++)
		nrungs += st->jobs[i].nrungs ? st->jobs[i].nrungs + 1 : 0;
	out->rung_regions = calloc(nrungs + 1, sizeof(*out->rung_regions));
	out->rung_shapes = calloc(nrungs + 1, sizeof(*out->rung_shapes));
	/* Every job's rung 0 has an identity, with a ladder or not. */
	out->rung_ids = calloc(nrungs + st->njobs + 1, sizeof(*out->rung_ids));
	out->policies = calloc(st->njobs + 1, sizeof(*out->policies));
	if (state->serial == 0)
		out->state_lost_hint = state_lost_hint(st);
	if (!out->decls || !out->shapes || !out->resubmit || !out->records || !out->runs || !out->known ||
	    !out->rung_regions || !out->rung_shapes || !out->rung_ids || !out->policies ||
	    (state->serial == 0 && !out->state_lost_hint)) {
		rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < st->njobs; i++) {
		const struct stack_job *j = &st->jobs[i];
		struct plan_decl *d = &out->decls[i];

		d->address = j->d.address;
		d->name = j->d.name;
		d->project = st->project;
		d->region = j->region;
		d->spec_hash = j->spec.hash;
		d->spec_json = j->spec.redacted_json;
		out->shapes[i] = job_spec_shape(&j->spec);
		d->shape = out->shapes[i];
		d->run = j->run;
		d->resubmit_on = &out->resubmit[ri];
		for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
			if (j->resubmit_on & (1u << c))
				out->resubmit[ri++] = stack_fail_names[c];
		d->nresubmit_on = (size_t)(&out->resubmit[ri] - d->resubmit_on);
		d->max_attempts = j->max_attempts;
		if (j->nrungs) {
			size_t base = out->nrung_shapes;

			d->rung_regions = &out->rung_regions[base];
			d->rung_shapes = (const char *const *)&out->rung_shapes[base];
			d->nrungs = j->nrungs + 1;
			for (size_t k = 0; k <= j->nrungs; k++) {
				out->rung_regions[base + k] = stack_job_rung_region(j, (int64_t)k);
				out->rung_shapes[base + k] = job_spec_shape(stack_job_rung_spec(j, (int64_t)k));
				out->nrung_shapes++;
				if (!out->rung_shapes[base + k]) {
					rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
					goto fail;
				}
			}
		}
		d->rung_ids = &out->rung_ids[nids];
		for (size_t k = 0; k <= j->nrungs; k++)
			planner_rung_id(&out->rung_ids[nids++], j, (int64_t)k);
		d->on_change = on_change(j->on_change);
		d->protect = j->protect;
		d->on_remove = (enum plan_on_remove)j->on_remove;
		d->retry_delay_ms = j->resubmit_delay_ms;
		if (policy_of_job(&out->policies[i], st, j) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "planning: out of memory");
			goto fail;
		}
		out->npolicies = i + 1;
		d->policy = &out->policies[i];
		d->user = j;
	}
	byname = live_by_names(kin->live, &nlive);
	for (size_t i = 0, n = 0; i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];
		struct plan_record *pr;

		if (strncmp(r->address, "job.", 4) != 0)
			continue;
		pr = &out->records[n];
		pr->address = r->address;
		pr->spec_hash = r->spec_hash;
		pr->spec_json = r->spec_json;
		pr->run = r->run;
		pr->protect = r->protect;
		pr->on_remove = (enum plan_on_remove)r->on_remove;
		pr->applied = r->applied;
		pr->unlabelled_import = r->current && r->current->action &&
					!strcmp(r->current->action, "import") &&
					!vx_labels_get(r->current->labels, r->current->nlabels, "vx-stack");
		pr->user = r;
		if (r->current) {
			struct plan_run *run = &out->runs[n];

			run->name = r->current->resource;
			run->project = r->current->project;
			run->region = r->current->region;
			run->state = r->current->state;
			run->error_code = (int)r->current->error_code;
			run->error_message = r->current->error_message;
			run->attempt = r->current->attempt;
			run->rung = r->current->rung;
			run->rung_id.region = r->current->region;
			run->rung_id.scheduling = r->current->rung_scheduling;
			run->rung_id.machine = r->current->rung_machine;
			run->rung_id.reservation = r->current->rung_reservation;
			run->end_ms = live_end(byname, nlive, r->current);
			run->created_ms = r->current->created_ms;
			run->started_ms = r->current->started_ms;
			run->cancelled_by_vx = r->current->cancelled_by_vx;
			/* A create that never answered has no resource: the plan treats it as
			 * no current run, and adoption by labels finds the job if it exists. */
			if (run->name)
				pr->current = run;
		}
		pr->known = &out->known[ki];
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource)
				out->known[ki++] = r->history[h].resource;
		pr->nknown = (size_t)(&out->known[ki] - pr->known);
		note_refusals(&pr->refusal, r);
		n++;
	}
	free(byname);
	out->in.stack = st->name;
	out->in.lineage = out->lineage;
	out->in.decls = out->decls;
	out->in.ndecls = st->njobs;
	out->in.records = out->records;
	out->in.nrecords = nrec;
	out->in.live = kin->live ? kin->live->jobs : NULL;
	out->in.released = kin->live ? kin->live->released : NULL;
	out->in.targets = kin->targets;
	out->in.ntargets = kin->ntargets;
	out->in.replaces = kin->replaces;
	out->in.nreplaces = kin->nreplaces;
	out->in.state_is_new = state->serial == 0;
	out->in.state_lost_hint = out->state_lost_hint;
	out->in.now_ms = kin->now_ms;
	rc = plan_build(&jobs, &out->in, err);
	if (rc < 0)
		return rc;
	rc = plan_merge(&out->plan, &jobs);
	plan_release(&jobs);
	return rc < 0 ? vx_err_set(err, rc, "planning: out of memory") : 0;
fail:
	return rc;
}

static int add_place(struct planner_place **arr, size_t *n, const char *project, const char *region)
{
	struct planner_place *p;

	if (!region || !project)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].region, region) && !strcmp((*arr)[i].project, project))
			return 0;
	p = realloc(*arr, (*n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	*arr = p;
	p[*n].project = project;
	p[*n].region = region;
	(*n)++;
	return 0;
}

static int cmp_place(const void *a, const void *b)
{
	const struct planner_place *x = a, *y = b;
	int c = strcmp(x->project, y->project);

	return c ? c : strcmp(x->region, y->region);
}

int planner_places(const struct stack *st, const struct state *state, struct planner_place **out,
		   size_t *n)
{
	struct planner_place *arr = NULL;
	size_t cnt = 0;

	/* Every region a ladder can reach: an attempt left by a crash on any
	 * rung is found (and adopted) by its labels wherever it runs. */
	for (size_t i = 0; i < st->njobs; i++)
		for (size_t k = 0; k <= st->jobs[i].nrungs; k++)
			if (add_place(&arr, &cnt, st->project, stack_job_rung_region(&st->jobs[i], (int64_t)k)) < 0)
				goto oom;
	for (size_t i = 0; state && i < state->nrecords; i++) {
		const struct state_run *cur = state->records[i].current;

		/* Only jobs' runs: a reservation's zone or a quota preference's
		 * "global" is no Vertex region. */
		if (kind_of_address(state->records[i].address) != &kind_job)
			continue;
		if (cur && add_place(&arr, &cnt, cur->project ? cur->project : st->project, cur->region) < 0)
			goto oom;
	}
	if (cnt > 1)
		qsort(arr, cnt, sizeof(*arr), cmp_place);
	*out = arr;
	*n = cnt;
	return 0;
oom:
	free(arr);
	return VX_ENOMEM;
}



/* ---- the row of the table ------------------------------------------------ */

/* How many places are listed at once: regions are few, and Google's read
 * quota is per region, so more threads would only wait. */
#define JOB_LIST_THREADS 8

/* One place's list, filled by whichever thread takes it. */
struct job_list_slot {
	const struct planner_place *place;
	struct live_jobs js;
	struct vx_err err;
	int rc;
};

struct job_list_pool {
	struct provider *p;
	const char *stack;
	struct job_list_slot *slots;
};

static void job_list_one(void *ud, size_t i)
{
	struct job_list_pool *pool = ud;
	struct job_list_slot *s = &pool->slots[i];

	s->rc = pool->p->list_jobs(pool->p, s->place->project, s->place->region, pool->stack, &s->js,
				   &s->err);
}

/*
 * One filtered list per place a declared job or a current run lives in.
 * The places are listed side by side, on up to JOB_LIST_THREADS threads
 * (the calling thread is one; providers are thread-safe, provider.h), so
 * N regions cost the round trips of the largest, not their sum. The
 * results are merged in place order, so the live set and the plan header
 * are as if listed one after another; the first failure in place order
 * is the one reported, naming its place.
 */
static int job_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err)
{
	struct planner_place *places = NULL;
	struct job_list_pool pool;
	size_t n = 0;
	int rc = planner_places(st, state, &places, &n);

	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	memset(&pool, 0, sizeof(pool));
	pool.p = p;
	pool.stack = st->name;
		pool.slots = calloc(n ? n : 1, sizeof(*pool.slots));
	if (!pool.slots) {
		free(places);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		pool.slots[i].place = &places[i];
	vx_pool_run(n, JOB_LIST_THREADS, job_list_one, &pool);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct job_list_slot *s = &pool.slots[i];
		char *where = strcmp(places[i].project, st->project)
			? vx_asprintf("%s/%s", places[i].project, places[i].region)
			: vx_strdup(places[i].region);

		if (!where || live_store_note(out, 1, where) < 0) {
			free(where);
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		if (s->rc < 0) {
			rc = vx_err_wrap(&s->err, "reading live jobs in %s", where);
			rc = vx_err_set(err, rc, "%s", vx_err_msg(&s->err));
		}
		for (size_t k = 0; k < s->js.n && rc == 0; k++)
			if (live_jobs_push(&out->jobs, &s->js.items[k]) < 0)
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		free(where);
	}
	for (size_t i = 0; i < n; i++) {
		live_jobs_release(&pool.slots[i].js);
		vx_err_release(&pool.slots[i].err);
	}
	free(pool.slots);
	free(places);
	/* An imported job may carry no vx labels: no list above finds it. */
	if (rc == 0)
		rc = import_refresh_jobs(&out->jobs, p, state, err);
	return rc;
}

static int job_apply(struct applier *a, int removals, struct vx_err *err)
{
	return removals ? apply_job_removals(a, err) : apply_job_changes(a, err);
}

static const struct stack_decl *job_find_decl(const struct stack *st, const char *name)
{
	const struct stack_job *x = stack_find_job(st, name);

	return x ? &x->d : NULL;
}

const struct kind kind_job = {
	.name = "CustomJob",
	.prefix = "job",
	.phase = 2,
	.find_decl = job_find_decl,
	.refresh = job_refresh,
	.plan = planner_plan_jobs,
	.apply = job_apply,
};
