#include "reconcile/planner.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/banned.h"

void planner_release(struct planner *p)
{
	plan_release(&p->plan);
	if (p->shapes)
		for (size_t i = 0; i < p->in.ndecls; i++)
			free(p->shapes[i]);
	free(p->shapes);
	free(p->decls);
	free(p->resubmit);
	free(p->records);
	free(p->runs);
	free(p->known);
	memset(p, 0, sizeof(*p));
}

static enum plan_on_change on_change(enum stack_on_change v)
{
	switch (v) {
	case STACK_ON_CHANGE_AFTER_FINISH: return PLAN_ON_CHANGE_AFTER_FINISH;
	case STACK_ON_CHANGE_IGNORE: return PLAN_ON_CHANGE_IGNORE;
	default: return PLAN_ON_CHANGE_REPLACE;
	}
}

int planner_plan_jobs(struct planner *out, const struct kind_plan_input *kin, struct vx_err *err)
{
	const struct stack *st = kin->st;
	const struct state *state = kin->state;
	struct plan jobs;
	size_t nknown = 0, ri = 0, ki = 0, nrec = 0;
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
	if (!out->decls || !out->shapes || !out->resubmit || !out->records || !out->runs || !out->known) {
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
		d->on_change = on_change(j->on_change);
		d->protect = j->protect;
		d->user = j;
	}
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
			run->end_ms = r->current->ended_ms;
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
		n++;
	}
	out->in.stack = st->name;
	out->in.lineage = out->lineage;
	out->in.decls = out->decls;
	out->in.ndecls = st->njobs;
	out->in.records = out->records;
	out->in.nrecords = nrec;
	out->in.live = kin->live ? kin->live->jobs : NULL;
	out->in.targets = kin->targets;
	out->in.ntargets = kin->ntargets;
	out->in.replaces = kin->replaces;
	out->in.nreplaces = kin->nreplaces;
	rc = plan_build(&jobs, &out->in, err);
	if (rc < 0)
		return rc;
	rc = plan_merge(&out->plan, &jobs);
	plan_release(&jobs);
	return rc < 0 ? vx_err_set(err, rc, "planning: out of memory") : 0;
fail:
	return rc;
}

int planner_run(struct planner *out, const struct stack *st, const struct state *state,
		const struct live_set *live, const struct planner_options *opts,
		struct vx_err *err)
{
	struct kind_plan_input kin;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&kin, 0, sizeof(kin));
	out->refresh = live != NULL;
	plan_lineage_label(out->lineage, state->lineage);
	kin.st = st;
	kin.state = state;
	kin.live = live;
	kin.lineage = out->lineage;
	if (opts) {
		kin.targets = opts->targets;
		kin.ntargets = opts->ntargets;
		kin.replaces = opts->replaces;
		kin.nreplaces = opts->nreplaces;
	}
	/* In reverse phase order: a removal may depend on what a later phase's
	 * plan does (a reservation is deleted only once this plan cancels the
	 * stack's jobs on it). */
	for (size_t k = kind_count; k-- > 0 && rc == 0;)
		rc = kind_table[k]->plan(out, &kin, err);
	if (rc < 0) {
		planner_release(out);
		return rc;
	}
	plan_sort(&out->plan);
	return 0;
	return rc;
}

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

int planner_migrate_legacy(struct state *state, const struct stack *st, size_t *migrated)
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

	for (size_t i = 0; i < st->njobs; i++)
		if (add_place(&arr, &cnt, st->project, st->jobs[i].region) < 0)
			goto oom;
	for (size_t i = 0; state && i < state->nrecords; i++) {
		const struct state_run *cur = state->records[i].current;

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
