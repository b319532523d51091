#include "cmd/planning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/workspace.h"
#include "reconcile/capacity.h"
#include "reconcile/machines.h"
#include "reconcile/stack.h"
#include "state/backend.h"
#include "util/buf.h"
#include "util/suggest.h"

static int push(const char ***arr, size_t *n, const char *v)
{
	const char **p = realloc(*arr, (*n + 1) * sizeof(*p));

	if (!p)
		return VX_ENOMEM;
	*arr = p;
	p[(*n)++] = v;
	return 0;
}

/* KIND.NAME for a kind of the table (job., reservation., quota.). */
static int valid_address(const char *a)
{
	const char *dot = strchr(a, '.');

	return kind_of_address(a) && dot[1];
}

int planning_opt(struct planning_opts *o, int id, const char *v, struct vx_err *err)
{
	switch (id) {
	case PLANNING_OPT_FAIL_ON:
		if (!strcmp(v, "quota"))
			o->fail_on_quota = 1;
		else
			vx_err_set(err, VX_EINVAL, "-fail-on takes quota, not '%s'", v);
		return 1;
	case PLANNING_OPT_ALLOW_OTHER_LINEAGE:
		o->allow_other_lineage = 1;
		return 1;
	case PLANNING_OPT_REFRESH:
		if (!v || !strcmp(v, "true"))
			o->refresh = 1;
		else if (!strcmp(v, "false"))
			o->refresh = 0;
		else
			vx_err_set(err, VX_EINVAL, "-refresh takes true or false, not '%s'", v);
		return 1;
	case PLANNING_OPT_TARGET:
	case PLANNING_OPT_REPLACE:
		if (!valid_address(v))
			vx_err_set(err, VX_EINVAL, "-%s takes an address such as job.NAME, reservation.NAME or "
				   "quota.NAME, not '%s'", id == PLANNING_OPT_TARGET ? "target" : "replace", v);
		else if ((id == PLANNING_OPT_TARGET ? push(&o->targets, &o->ntargets, v)
						    : push(&o->replaces, &o->nreplaces, v)) < 0)
			vx_err_set(err, VX_ENOMEM, "out of memory");
		return 1;
	default:
		return 0;
	}
}

void planning_opts_release(struct planning_opts *o)
{
	free(o->targets);
	free(o->replaces);
	o->targets = o->replaces = NULL;
	o->ntargets = o->nreplaces = 0;
}

/* The error for an address that names nothing, with the nearest declared (or, with
 * recorded set, recorded) address as a hint. */
static int unknown_address(struct vx_err *err, const struct workspace *ws, const char *flag,
			   const char *addr, int recorded, const char *why)
{
	const struct stack *st = ws->st;
	size_t n = st->njobs + st->nreservations + st->nquotas + (recorded ? ws->state.nrecords : 0), k = 0;
	const char **names = calloc(n + 1, sizeof(*names));
	const char *near;
	int rc;

	if (!names)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < st->njobs; i++)
		names[k++] = st->jobs[i].d.address;
	for (size_t i = 0; i < st->nreservations; i++)
		names[k++] = st->reservations[i].d.address;
	for (size_t i = 0; i < st->nquotas; i++)
		names[k++] = st->quotas[i].d.address;
	for (size_t i = 0; recorded && i < ws->state.nrecords; i++)
		names[k++] = ws->state.records[i].address;
	near = vx_suggest(addr, names, k);
	if (near)
		rc = vx_err_set(err, VX_EINVAL, "%s %s: %s (did you mean \"%s\"?)", flag, addr, why, near);
	else
		rc = vx_err_set(err, VX_EINVAL, "%s %s: %s", flag, addr, why);
	free(names);
	return rc;
}

/*
 * Quota limits and prices, then the capacity report, once per run: one
 * quotaInfos list for Vertex (and one for Compute when reservations are
 * declared), whatever the number of jobs.
 */
static int plan_capacity(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
			 struct vx_err *err)
{
	const struct stack *st = ws->st;
	struct capacity_input in;
	const char *file = getenv("VX_PRICES"), *why;
	char *path = NULL;
	int rc;

	if (!capacity_wanted(st))
		return 0;
	/* VX_PRICES beats the Stack's prices:, as an environment variable beats a
	 * file setting elsewhere (git's GIT_* over its config): a one-off look at
	 * other prices without editing the reviewed stack. */
	if ((!file || !*file) && st->prices) {
		if (st->prices[0] == '/' || !st->dir || !strcmp(st->dir, "."))
			path = vx_strdup(st->prices);
		else
			path = vx_asprintf("%s/%s", st->dir, st->prices);
		if (!path)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		file = path;
	}
	if (file && *file) {
		struct vx_buf text = VX_BUF_INIT;

		rc = vx_buf_read_file(&text, file, 16u << 20, err);
		if (rc == 0)
			rc = prices_parse(&pl->prices, vx_buf_str(&text), text.len, file, err);
		vx_buf_release(&text);
		if (rc < 0 && path)
			(void)vx_err_wrap(err, "%s: prices", st->d.address);
	} else {
		rc = prices_parse(&pl->prices, prices_default_json, strlen(prices_default_json),
				  "built-in price table", err);
	}
	free(path);
	if (rc < 0)
		return rc;
	if (o->refresh && ws->prov && ws->prov->list_quota_infos) {
		struct provider *p = workspace_reader(ws);

		rc = p->list_quota_infos(p, st->project, "aiplatform.googleapis.com", &pl->limits, err);
		if (rc == 0 && st->nreservations)
			rc = p->list_quota_infos(p, st->project, "compute.googleapis.com", &pl->limits, err);
		if (rc < 0)
			return rc;
		pl->limits_read = 1;
	}
	memset(&in, 0, sizeof(in));
	in.st = st;
	in.plan = &pl->planner.plan;
	in.live = o->refresh ? &pl->live : NULL;
	in.limits = pl->limits_read ? &pl->limits : NULL;
	in.prices = &pl->prices;
	rc = capacity_build(&pl->capacity, &in, err);
	if (rc < 0)
		return rc;
	why = o->fail_on_quota ? " (-fail-on=quota)" : st->fail_on_quota ? " (failOn: [quota])" : NULL;
	for (size_t i = 0; i < pl->capacity.misfits.n && rc == 0; i++)
		rc = vx_diags_add(why ? &pl->planner.plan.errors : &pl->planner.plan.warnings, NULL, 0, 0,
				  "%s%s", pl->capacity.misfits.items[i].msg, why ? why : "");
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	pl->header.capacity = pl->capacity.any ? &pl->capacity : NULL;
	return 0;
}

int planning_run(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
		 struct vx_err *err)
{
	struct planner_options popts;
	int rc;

	memset(pl, 0, sizeof(*pl));
	/* The one place hashes get their salt before anything compares them. */
	rc = workspace_salt(ws, NULL, err);
	if (rc < 0)
		return rc;
	/* Refused rather than warned about (Terraform warns): an apply limited to
	 * a misspelt address would do nothing and say it succeeded. */
	for (size_t i = 0; i < o->ntargets; i++)
		if (!stack_find_decl(ws->st, o->targets[i]) && !state_find(&ws->state, o->targets[i]))
			return unknown_address(err, ws, "-target", o->targets[i], 1,
					       "no such address in the stack or its state");
	for (size_t i = 0; i < o->nreplaces; i++)
		if (!stack_find_decl(ws->st, o->replaces[i]))
			return unknown_address(err, ws, "-replace", o->replaces[i], 0,
					       "no such address is declared");
	if ((rc = workspace_config_status(ws, err)) < 0)
		return rc;
	if (o->refresh) {
		rc = workspace_refresh(ws, err);
		if (rc < 0)
			return rc;
	}
	memset(&popts, 0, sizeof(popts));
	popts.targets = o->targets;
	popts.ntargets = o->ntargets;
	popts.replaces = o->replaces;
	popts.nreplaces = o->nreplaces;
	popts.allow_other_lineage = o->allow_other_lineage;
	pl->live = live_store_view(&ws->store);
	rc = planner_run(&pl->planner, ws->st, &ws->state, o->refresh ? &pl->live : NULL, &popts, err);
	if (rc < 0)
		return rc;
	pl->header.stack = ws->st->name;
	pl->header.project = ws->st->project;
	pl->header.dir = ws->dir;
	pl->header.dir_in_repo = ws->dir_in_repo;
	pl->header.backend = stack_backend_name(ws->st->state.backend);
	pl->header.state_ref = ws->state_ref;
	pl->header.state_commit = ws->revision;
	pl->header.state_serial = ws->state.serial;
	pl->header.state_lineage = ws->state.serial ? ws->state.lineage : NULL;
	pl->header.config_commit = ws->config_commit;
	pl->header.config_dirty = ws->config_changes != NULL;
	pl->header.decl_hash = ws->st->decl_hash;
	pl->header.refresh = o->refresh;
	pl->header.regions = (const char *const *)ws->store.read;
	pl->header.nregions = o->refresh ? ws->store.nread : 0;
	pl->header.also = (const char *const *)ws->store.also;
	pl->header.nalso = o->refresh ? ws->store.nalso : 0;
	pl->header.targets = o->targets;
	pl->header.ntargets = o->ntargets;
	pl->header.allow_other_lineage = o->allow_other_lineage;
	return plan_capacity(pl, ws, o, err);
}

int planning_has_changes(const struct planning *pl)
{
	return plan_has_changes(&pl->planner.plan);
}

void planning_release(struct planning *pl)
{
	planner_release(&pl->planner);
	capacity_release(&pl->capacity);
	prices_release(&pl->prices);
	live_quota_limits_release(&pl->limits);
	memset(pl, 0, sizeof(*pl));
}
