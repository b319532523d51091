/*
 * The job kind: Vertex AI CustomJobs (job.NAME). This file holds its row of
 * the kind table (reconcile/kind.h), how jobs are read (one filtered list
 * per place a declared job or a current run lives in) and the plan entry
 * (job_plan): the stack's jobs and the state's job records turned
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
#include "reconcile/kind_job.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/kind_job_load.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/policy.h"
#include "reconcile/policy_rules.h"
#include "reconcile/provider.h"
#include "reconcile/load/spec.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
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
	/* Every attempt of its spec and run, refused or run (the current one too), for the budgets and within. */
	for (size_t h = 0; h <= r->nhistory; h++) {
		const struct state_run *x = h < r->nhistory ? &r->history[h] : r->current;

		if (!x || !vx_text_same(x->spec_hash, last->spec_hash) || x->run != last->run)
			continue;
		out->of_class += is_refusal(x) && vx_text_same(x->failure, last->failure);
		if (x->created_ms > 0 && (!out->first_ms || x->created_ms < out->first_ms))
			out->first_ms = x->created_ms;
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
	const struct job_live *jl = kind_live(live, &kind_job);
	const struct live_jobs *js = jl ? &jl->listed : NULL;
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

/*
 * What the job kind's plan allocates, kept in the planner's scratch slot
 * for this kind (kind_plan_input.scratch): the input of plan_build, which
 * the plan's actions borrow (a->decl, a->record) for as long as the plan
 * lives. Freed by job_plan_release.
 */
struct job_scratch {
	struct plan_input in;
	struct plan_decl *decls;
	char **shapes;          /* every decl's shape, owned; nshapes entries */
	size_t nshapes;
	const char **resubmit;  /* storage for every decl's resubmit_on */
	struct plan_record *records;
	struct plan_run *runs;
	const char **known;     /* storage for every record's known[] */
	const char **rung_regions; /* storage for every decl's rung_regions[] */
	struct plan_rung_id *rung_ids; /* storage for every decl's rung_ids[] */
	char *state_lost_hint;  /* owned: in.state_lost_hint */
	struct state_policy *policies; /* every decl's policy, owned; npolicies entries */
	size_t npolicies;
	char **rung_shapes;     /* every decl's rung_shapes[], owned; nrung_shapes entries */
	size_t nrung_shapes;
	const struct job_spec *last_spec; /* the spec shape_of formatted last, and its shape */
	const char *last_shape;		  /* (borrowed from shapes or rung_shapes) */
};

/*
 * job_spec_shape(spec), copied from the last one formatted when spec has
 * the same shape: most jobs of a large stack (a sweep's runs, generated
 * jobs) do, and formatting 10,000 shapes was a sixth of the plan's CPU
 * after the loads. Caller frees; NULL when out of memory.
 */
static char *shape_of(struct job_scratch *s, const struct job_spec *spec)
{
	char *shape;

	if (s->last_shape && job_spec_same_shape(s->last_spec, spec))
		return vx_strdup(s->last_shape);
	if ((shape = job_spec_shape(spec)) != NULL) {
		s->last_spec = spec;
		s->last_shape = shape;
	}
	return shape;
}

static void job_plan_release(void *scratch)
{
	struct job_scratch *s = scratch;

	if (!s)
		return;
	for (size_t i = 0; i < s->nshapes; i++)
		free(s->shapes[i]);
	free(s->shapes);
	free(s->decls);
	free(s->resubmit);
	free(s->records);
	free(s->runs);
	free(s->known);
	for (size_t i = 0; i < s->nrung_shapes; i++)
		free(s->rung_shapes[i]);
	free(s->rung_shapes);
	free(s->rung_regions);
	free(s->rung_ids);
	free(s->state_lost_hint);
	for (size_t i = 0; i < s->npolicies; i++)
		state_policy_release(&s->policies[i]);
	free(s->policies);
	free(s);
}

/* The arrays of s, for st's jobs and the state's nrec job records (nknown earlier runs). VX_ENOMEM. */
static int scratch_alloc(struct job_scratch *s, const struct stack *st, const struct state *state,
			 size_t nrec, size_t nknown)
{
	size_t nrungs = 0, njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);

	s->decls = calloc(njobs + 1, sizeof(*s->decls));
	s->shapes = calloc(njobs + 1, sizeof(*s->shapes));
	s->resubmit = calloc(njobs * STACK_FAIL_NCLASSES + 1, sizeof(*s->resubmit));
	s->records = calloc(nrec + 1, sizeof(*s->records));
	s->runs = calloc(nrec + 1, sizeof(*s->runs));
	s->known = calloc(nknown + 1, sizeof(*s->known));
	for (size_t i = 0; i < njobs; i++)
		nrungs += jobs[i].nrungs ? jobs[i].nrungs + 1 : 0;
	s->rung_regions = calloc(nrungs + 1, sizeof(*s->rung_regions));
	s->rung_shapes = calloc(nrungs + 1, sizeof(*s->rung_shapes));
	/* Every job's rung 0 has an identity, with a ladder or not. */
	s->rung_ids = calloc(nrungs + njobs + 1, sizeof(*s->rung_ids));
	s->policies = calloc(njobs + 1, sizeof(*s->policies));
	if (state->serial == 0)
		s->state_lost_hint = state_lost_hint(st);
	if (!s->decls || !s->shapes || !s->resubmit || !s->records || !s->runs || !s->known ||
	    !s->rung_regions || !s->rung_shapes || !s->rung_ids || !s->policies ||
	    (state->serial == 0 && !s->state_lost_hint))
		return VX_ENOMEM;
	return 0;
}

/* j's ladder into d: each rung's region and shape (nothing for a job without one). VX_ENOMEM. */
static int decl_rungs(struct job_scratch *s, struct plan_decl *d, const struct stack_job *j)
{
	size_t base = s->nrung_shapes;

	if (!j->nrungs)
		return 0;
	d->rung_regions = &s->rung_regions[base];
	d->rung_shapes = (const char *const *)&s->rung_shapes[base];
	d->nrungs = j->nrungs + 1;
	for (size_t k = 0; k <= j->nrungs; k++) {
		s->rung_regions[base + k] = stack_job_rung_region(j, (int64_t)k);
		s->rung_shapes[base + k] = shape_of(s, stack_job_rung_spec(j, (int64_t)k));
		s->nrung_shapes++;
		if (!s->rung_shapes[base + k])
			return VX_ENOMEM;
	}
	return 0;
}

/*
 * Job i of st as plan_build's declaration i. *ri and *nids count what of
 * s->resubmit and s->rung_ids the declarations so far took. VX_ENOMEM.
 */
static int decl_of(struct job_scratch *s, const struct stack *st, size_t i, size_t *ri, size_t *nids)
{
	const struct stack_job *j = &stack_jobs(st, NULL)[i];
	struct plan_decl *d = &s->decls[i];

	d->address = j->d.address;
	d->name = j->d.name;
	d->project = st->project;
	d->region = j->region;
	d->spec_hash = j->spec.hash;
	d->spec_json = j->spec.redacted_json;
	s->shapes[i] = shape_of(s, &j->spec);
	s->nshapes = i + 1;
	d->shape = s->shapes[i];
	d->run = j->run;
	d->resubmit_on = &s->resubmit[*ri];
	for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
		if (j->resubmit_on & (1u << c))
			s->resubmit[(*ri)++] = stack_fail_names[c];
	d->nresubmit_on = (size_t)(&s->resubmit[*ri] - d->resubmit_on);
	d->max_attempts = j->max_attempts;
	if (decl_rungs(s, d, j) < 0)
		return VX_ENOMEM;
	d->rung_ids = &s->rung_ids[*nids];
	for (size_t k = 0; k <= j->nrungs; k++)
		job_rung_id(&s->rung_ids[(*nids)++], j, (int64_t)k);
	d->on_change = on_change(j->on_change);
	d->protect = j->protect;
	d->on_remove = (enum plan_on_remove)j->on_remove;
	d->retry_delay_ms = j->resubmit_delay_ms;
	if (policy_of_job(&s->policies[i], st, j) < 0)
		return VX_ENOMEM;
	s->npolicies = i + 1;
	d->policy = &s->policies[i];
	return 0;
}

/* A record's current run c as plan_build's run, its end from the live listing (byname) when listed. */
static void run_of(struct plan_run *run, const struct state_run *c, const struct live_job **byname,
		   size_t nlive)
{
	run->name = c->resource;
	run->project = c->project;
	run->region = c->region;
	run->state = c->state;
	run->error_code = (int)c->error_code;
	run->error_message = c->error_message;
	run->attempt = c->attempt;
	run->rung = c->rung;
	run->rung_id.region = c->region;
	run->rung_id.scheduling = c->rung_scheduling;
	run->rung_id.machine = c->rung_machine;
	run->rung_id.reservation = c->rung_reservation;
	run->end_ms = live_end(byname, nlive, c);
	run->created_ms = c->created_ms;
	run->started_ms = c->started_ms;
	run->cancelled_by_vx = c->cancelled_by_vx;
	run->failure = c->failure;
	run->timeout_ms = c->timeout_ms;
}

/* Whether run x is one of r's attempts of its spec and run. */
static int same_attempts(const struct state_run *x, const struct state_record *r)
{
	return x->spec_hash && r->spec_hash && !strcmp(x->spec_hash, r->spec_hash) && x->run == r->run;
}

/* pr's failures per class and first create, of r's attempts of its spec and run (plan_record). */
static void note_attempts(struct plan_record *pr, const struct state_record *r)
{
	memset(pr->fails, 0, sizeof(pr->fails));
	pr->first_create_ms = r->current && same_attempts(r->current, r) ? r->current->created_ms : 0;
	for (size_t h = 0; h < r->nhistory; h++) {
		const struct state_run *x = &r->history[h];
		unsigned bit;

		if (!same_attempts(x, r))
			continue;
		if (x->created_ms > 0 && (!pr->first_create_ms || x->created_ms < pr->first_create_ms))
			pr->first_create_ms = x->created_ms;
		bit = x->failure ? stack_fail_parse(x->failure) : 0;
		for (unsigned c = 0; bit && c < STACK_FAIL_NCLASSES; c++)
			if (bit == 1u << c)
				pr->fails[c]++;
	}
}

/* Attempt i of r's runs, history first and the current run last (i == r->nhistory). */
static const struct state_run *attempt_at(const struct state_record *r, size_t i)
{
	return i < r->nhistory ? &r->history[i] : r->current;
}

/*
 * When r's run of its spec and run left rung 0 (plan_record.left_rung0_ms):
 * the earliest create on a rung >= 1 later than every create on rung 0.
 */
static void note_left_rung0(struct plan_record *pr, const struct state_record *r)
{
	int64_t last0 = 0;

	pr->left_rung0_ms = 0;
	for (size_t i = 0; i <= r->nhistory; i++) {
		const struct state_run *x = attempt_at(r, i);

		if (x && same_attempts(x, r) && x->rung <= 0 && x->created_ms > last0)
			last0 = x->created_ms;
	}
	for (size_t i = 0; i <= r->nhistory; i++) {
		const struct state_run *x = attempt_at(r, i);

		if (x && same_attempts(x, r) && x->rung >= 1 && x->created_ms > last0 &&
		    (!pr->left_rung0_ms || x->created_ms < pr->left_rung0_ms))
			pr->left_rung0_ms = x->created_ms;
	}
}

/* The state's job record r as plan_build's record n; *ki counts what of s->known the records took. */
static void record_of(struct job_scratch *s, size_t n, const struct state_record *r, size_t *ki,
		      const struct live_job **byname, size_t nlive)
{
	struct plan_record *pr = &s->records[n];

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
		struct plan_run *run = &s->runs[n];

		run_of(run, r->current, byname, nlive);
		/* A create that never answered has no resource: the plan treats it as
		 * no current run, and adoption by labels finds the job if it exists. */
		if (run->name)
			pr->current = run;
	}
	pr->known = &s->known[*ki];
	for (size_t h = 0; h < r->nhistory; h++)
		if (r->history[h].resource)
			s->known[(*ki)++] = r->history[h].resource;
	pr->nknown = (size_t)(&s->known[*ki] - pr->known);
	note_refusals(&pr->refusal, r);
	note_attempts(pr, r);
	note_left_rung0(pr, r);
}

/* plan_build's input: s's declarations and nrec records, and what the planner was asked. */
static void input_of(struct job_scratch *s, const struct kind_plan_input *kin, size_t nrec)
{
	s->in.stack = kin->st->name;
	s->in.lineage = kin->lineage;
	s->in.decls = s->decls;
	s->in.ndecls = stack_count(kin->st, &kind_job);
	s->in.records = s->records;
	s->in.nrecords = nrec;
	const struct job_live *jl = kind_live(kin->live, &kind_job);

	s->in.live = jl ? &jl->listed : NULL;
	s->in.released = jl ? &jl->released : NULL;
	s->in.kinds = kin->live;
	s->in.targets = kin->targets;
	s->in.ntargets = kin->ntargets;
	s->in.replaces = kin->replaces;
	s->in.nreplaces = kin->nreplaces;
	s->in.state_is_new = kin->state->serial == 0;
	s->in.state_lost_hint = s->state_lost_hint;
	s->in.now_ms = kin->now_ms;
	s->in.allow_other_lineage = kin->allow_other_lineage;
	s->in.allow_released = kin->allow_released;
}

/*
 * Gives each of the job plan p's actions what every kind's action says it
 * is of: its declaration (the stack's job that s->decls[i] was made from)
 * and its state record, as kdecl and krecord.
 */
static void link_actions(struct plan *p, const struct job_scratch *s, const struct stack *st)
{
	const struct stack_job *jobs = stack_jobs(st, NULL);

	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct job_action *ja = job_action_of(a);

		if (ja->decl)
			a->kdecl = &jobs[ja->decl - s->decls];
		if (ja->record)
			a->krecord = ja->record->user;
	}
}

/*
 * The job kind's plan: the three-way diff of reconcile/kind_job.h over the
 * stack's jobs and the state's job records, appended to pl->plan. What the
 * actions borrow is left in the kind's scratch slot.
 */
static int job_plan(struct planner *pl, const struct kind_plan_input *kin, struct vx_err *err)
{
	const struct stack *st = kin->st;
	const struct state *state = kin->state;
	struct job_scratch *s = calloc(1, sizeof(*s));
	size_t nknown = 0, nrec = 0, ri = 0, nids = 0, ki = 0, nlive;
	const struct live_job **byname;
	struct plan jobs;
	int rc;

	*kin->scratch = s;
	if (!s)
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	for (size_t i = 0; i < state->nrecords; i++) {
		if (!strncmp(state->records[i].address, "job.", 4)) {
			nrec++;
			nknown += state->records[i].nhistory;
		}
	}
	if (scratch_alloc(s, st, state, nrec, nknown) < 0)
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	for (size_t i = 0; i < stack_count(st, &kind_job); i++)
		if (decl_of(s, st, i, &ri, &nids) < 0)
			return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	byname = live_by_names(kin->live, &nlive);
	for (size_t i = 0, n = 0; i < state->nrecords; i++)
		if (!strncmp(state->records[i].address, "job.", 4))
			record_of(s, n++, &state->records[i], &ki, byname, nlive);
	free(byname);
	input_of(s, kin, nrec);
	rc = plan_build(&jobs, &s->in, err);
	if (rc < 0)
		return rc;
	link_actions(&jobs, s, st);
	rc = plan_merge(&pl->plan, &jobs);
	plan_release(&jobs);
	return rc < 0 ? vx_err_set(err, rc, "planning: out of memory") : 0;
}

/* A project and region whose jobs are listed. */
struct job_place {
	const char *project;  /* borrowed */
	const char *region;   /* borrowed */
};

static int add_place(struct job_place **arr, size_t *n, const char *project, const char *region)
{
	struct job_place *p;

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
	const struct job_place *x = a, *y = b;
	int c = strcmp(x->project, y->project);

	return c ? c : strcmp(x->region, y->region);
}

/*
 * The places whose jobs must be listed: every declared job's (the Stack's
 * project, the job's region) and every place of a job record's current run
 * (the project it was created in, or the Stack's for older states), so a
 * run left behind by a change of project or region is seen where it is:
 * "not looked at" must never read as "gone". Sorted, unique. Caller frees
 * the array (the strings are borrowed).
 */
static int job_places(const struct stack *st, const struct state *state, struct job_place **out,
		      size_t *n)
{
	struct job_place *arr = NULL;
	size_t cnt = 0, njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);

	/* Every region a ladder can reach: an attempt left by a crash on any
	 * rung is found (and adopted) by its labels wherever it runs. */
	for (size_t i = 0; i < njobs; i++)
		for (size_t k = 0; k <= jobs[i].nrungs; k++)
			if (add_place(&arr, &cnt, st->project, stack_job_rung_region(&jobs[i], (int64_t)k)) < 0)
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



/* ---- records of an older vx ---------------------------------------------- */

/* Replaces *hash by to when it is from. */
static int swap_hash(char **hash, const char *from, const char *to)
{
	char *n;

	if (!*hash || strcmp(*hash, from) != 0)
		return 0;
	if (!(n = vx_strdup(to)))
		return VX_ENOMEM;
	free(*hash);
	*hash = n;
	return 0;
}

/*
 * A job record whose spec_hash is its declaration's legacy hash (plain
 * SHA-256 with the secrets in it, reconcile/load/spec.h) gets the declaration's
 * salted hash and redacted spec, and so do its runs made from that same
 * spec. The spec is the same, so the planner sees no change and replaces
 * nothing; the next state write stores the new forms. The runs' labels
 * (vx-spec) stay as they are: they are the live jobs' copy.
 */
static int job_migrate(struct state *state, const struct stack *st, size_t *migrated)
{
	*migrated = 0;
	for (size_t i = 0; i < state->nrecords; i++) {
		struct state_record *r = &state->records[i];
		const struct stack_job *j;
		char *json;

		if (strncmp(r->address, "job.", 4) != 0 || !(j = stack_find_job(st, r->address + 4)) ||
		    !j->spec.nsensitive || !r->spec_hash || strcmp(r->spec_hash, j->spec.legacy_hash) != 0)
			continue;
		/* A record whose spec changed since keeps its old form until its next
		 * run: the old secret is not known, so it cannot be keyed. */
		if (!(json = vx_strdup(j->spec.redacted_json)))
			return VX_ENOMEM;
		state_record_mark(r); /* reached by walking the records: the next save writes it */
		free(r->spec_json);
		r->spec_json = json;
		if (r->current && swap_hash(&r->current->spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
			return VX_ENOMEM;
		for (size_t h = 0; h < r->nhistory; h++)
			if (swap_hash(&r->history[h].spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
				return VX_ENOMEM;
		/* Last: the record counts as migrated only once all of it is. */
		if (swap_hash(&r->spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
			return VX_ENOMEM;
		(*migrated)++;
	}
	return 0;
}


/* ---- the row of the table ------------------------------------------------ */

/* How many places are listed at once: regions are few, and Google's read
 * quota is per region, so more threads would only wait. */
#define JOB_LIST_THREADS 8

/* One place's list, filled by whichever thread takes it. */
struct job_list_slot {
	const struct job_place *place;
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

	s->rc = provider_job_list(pool->p, s->place->project, s->place->region, pool->stack, &s->js,
				  &s->err);
}

/*
 * The jobs `vx state rm` let go of still carry this state's labels (Vertex
 * cannot relabel a job): moved out of the listed jobs, so no plan adopts,
 * cancels or counts them again; the planner sees them apart, to say when it
 * would create a job beside one still active.
 */
static int set_released_apart(struct job_live *jl, const struct state *state, struct vx_err *err)
{
	struct live_jobs *js = &jl->listed;
	size_t keep = 0;
	int rc = 0;

	if (!state || !state->nreleased)
		return 0;
	for (size_t i = 0; i < js->n; i++) {
		if (!state_released_has(state, js->items[i].name)) {
			js->items[keep++] = js->items[i];
			continue;
		}
		if (rc == 0)
			rc = live_jobs_push(&jl->released, &js->items[i]);
		live_job_release(&js->items[i]);
	}
	js->n = keep;
	return rc < 0 ? vx_err_set(err, rc, "out of memory") : 0;
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
	struct job_live *jl = kind_live_slot(out, &kind_job);
	struct job_place *places = NULL;
	struct job_list_pool pool;
	size_t n = 0;
	int rc = jl ? job_places(st, state, &places, &n) : VX_ENOMEM;

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
		if (rc == 0 && live_jobs_take(&jl->listed, &s->js) < 0)
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
		rc = import_refresh_jobs(&jl->listed, p, state, err);
	return rc == 0 ? set_released_apart(jl, state, err) : rc;
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

/* A run on a fallback ladder: its attempts left, each at the priciest rung it may reach (kind_job_budget.c). */
static double job_attempts_most(const struct plan_action *a, const struct prices *p, int64_t attempts, char **why)
{
	return kind_job_attempts_most(a->kdecl, job_action_of(a)->rung, 0, attempts, p, why);
}

/*
 * A job's action asks for the machines of the rung its run starts or runs
 * on, in that rung's region (capacity.c decides whether it starts, stays or
 * stops). An action with no declaration (a job no longer declared) asks
 * for nothing.
 */
static void job_capacity(const struct plan_action *a, struct kind_capacity *out)
{
	const struct job_action *ja = job_action_of(a);
	const struct stack_job *j = a->kdecl;

	if (!j)
		return;
	out->run = stack_job_rung_spec(j, ja->rung);
	out->region = stack_job_rung_region(j, ja->rung);
	out->max_attempts = j->max_attempts;
	if (j->nrungs)
		out->attempts_most = job_attempts_most;
}

/* A sweep's runs are jobs of st too: counted and listed with the others. */
static size_t job_count_decls(const struct stack *st)
{
	return stack_count(st, &kind_job);
}

static void job_live_release(void *live)
{
	struct job_live *jl = live;

	live_jobs_release(&jl->listed);
	live_jobs_release(&jl->released);
}

const struct live_jobs *kind_job_listed(const struct live_store *ls)
{
	static const struct live_jobs none;
	const struct job_live *jl = ls->of[kind_index(&kind_job)];

	return jl ? &jl->listed : &none;
}

/* The payload of a job's plan action (reconcile/kind_job.h): its strings. */
static void job_action_release(void *payload)
{
	struct job_action *j = payload;

	free(j->old_hash);
	free(j->new_hash);
	free(j->failure_class);
	free(j->cancel_name);
	free(j->adopt_name);
	free(j->live_state);
	free(j->error_message);
	free(j->window_reservation);
}

const struct job_action *job_action_of(const struct plan_action *a)
{
	static const struct job_action none;

	return a->payload ? a->payload : &none;
}

const struct stack_job *job_action_job(const struct plan_action *a)
{
	return a->payload ? a->kdecl : NULL;
}

struct job_action *job_action_mut(struct plan_action *a)
{
	return a ? a->payload : NULL;
}

int job_action_hold(struct plan *p, struct plan_action *a, char *why)
{
	struct job_action *ja = job_action_mut(a);

	if (!why)
		return VX_ENOMEM;
	p->counts[a->op]--;
	p->counts[PLAN_WAIT]++;
	a->op = PLAN_WAIT;
	free(a->reason);
	a->reason = why;
	free(ja->cancel_name);
	ja->cancel_name = NULL;
	return 0;
}

/*
 * A start of a job no reviewer approved in this plan: a resubmission, or a
 * run whose declaration is the one its record says was applied (a sweep's
 * run that waited, an after: dependent, a rerun a dependency's new run asks
 * for).
 */
static int job_budget_unreviewed(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);
	const struct plan_decl *d = ja->decl;
	const struct plan_record *r = ja->record;
	int applied = d && r && d->spec_hash && r->spec_hash && !strcmp(d->spec_hash, r->spec_hash) && d->run == r->run;

	return a->op == PLAN_RESUBMIT || ((a->op == PLAN_CREATE || (a->op == PLAN_RERUN && ja->after_rerun)) && applied);
}

/* A violation of pol about address's rung r exactly (r 0: the declaration, or the whole stack), or NULL. */
static const struct policy_violation *rung_violation(const struct policy_rules *pol, const char *address, int64_t r)
{
	for (size_t i = 0; i < pol->nviolations; i++) {
		const struct policy_violation *v = &pol->violations[i];

		if ((!v->address && r == 0) || (v->address && !strcmp(v->address, address) && v->rung == r))
			return v;
	}
	return NULL;
}

/*
 * The policy in force forbids some rungs of a's ladder only: a run on one
 * of them goes to the next rung down none forbids (docs/policy.md, "The
 * watcher"); a run on an allowed rung goes as planned.
 */
static int job_policy_rung(struct plan_action *a, const struct policy_rules *pol)
{
	struct job_action *ja = job_action_mut(a);
	const struct stack_job *j = a->kdecl;
	const struct policy_violation *v;
	char *shape, *region, *why;
	int64_t k;

	if (!j || !ja || rung_violation(pol, a->address, 0) ||
	    (a->op != PLAN_CREATE && a->op != PLAN_RESUBMIT && a->op != PLAN_RERUN && a->op != PLAN_REPLACE))
		return 0;
	if (!(v = rung_violation(pol, a->address, ja->rung)))
		return 1;
	for (k = ja->rung + 1; k <= (int64_t)j->nrungs && rung_violation(pol, a->address, k); k++)
		;
	if (k > (int64_t)j->nrungs)
		return 0;
	shape = job_spec_shape(stack_job_rung_spec(j, k));
	region = vx_strdup(stack_job_rung_region(j, k));
	why = vx_asprintf("%s; rung %lld skipped (held: policy: %s): on rung %lld (region %s)", a->reason ? a->reason : "",
			  (long long)ja->rung, v->msg, (long long)k, stack_job_rung_region(j, k));
	if (!shape || !region || !why) {
		free(shape);
		free(region);
		free(why);
		return VX_ENOMEM;
	}
	ja->rung = k;
	free(a->shape);
	a->shape = shape;
	free(a->region);
	a->region = region;
	free(a->reason);
	a->reason = why;
	return 2;
}

const struct kind kind_job = {
	.name = "CustomJob",
	.prefix = "job",
	.find_decl = job_find_decl,
	.refresh = job_refresh,
	.plan = job_plan,
	.apply = job_apply,
	.plan_release = job_plan_release,
	.migrate = job_migrate,
	.cost = KIND_COST_RUN,
	.capacity = job_capacity,
	.update_says_why = 1,
	.name_in_label = 1,
	.has_logs = 1,
	.noun = "job",
	.noun_plural = "jobs",
	.count_decls = job_count_decls,
	.decl_at = kind_job_decl_at,
	.import = kind_job_import,
	.status_rows = kind_job_status_rows,
	.live_size = sizeof(struct job_live),
	.live_release = job_live_release,
	.watch_runs = 1,
	.load_alloc = kind_job_load_alloc,
	.load_prepare = kind_job_load_prepare,
	.load_read = kind_job_load_read,
	.load_finish = kind_job_load_finish,
	.decl_hash = kind_job_decl_hash,
	.load_index = kind_job_load_index,
	.decl_salt = kind_job_decl_salt,
	.decl_release = kind_job_decl_release,
	.limits_service = "aiplatform.googleapis.com",
	.limits_always = 1,
	.action_size = sizeof(struct job_action),
	.action_release = job_action_release,
	.import_form = "projects/P/locations/REGION/customJobs/ID",
	.plan_after = job_window_gate,
	.watch_relies = job_window_relies,
	.check_prices = kind_job_check_prices,
	.budget_unreviewed = job_budget_unreviewed,
	.budget_hold = job_action_hold,
	.policy_rung = job_policy_rung,
};
