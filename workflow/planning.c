#include "workflow/planning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/policy_rules.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/load/machines.h"
#include "reconcile/out/render.h"
#include "reconcile/provider_quota.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/backend.h"
#include "util/buf.h"
#include "util/suggest.h"
#include "workflow/ci.h"
#include "workflow/report.h"
#include "workflow/workspace.h"
#include "util/banned.h"

/* Whether target names something: a declaration, a record, or a sweep or a
 * slice of one with at least one run declared or recorded. */
static int target_known(const struct workspace *ws, const char *target)
{
	if (stack_find_decl(ws->st, target) || state_find(&ws->state, target))
		return 1;
	if (!strchr(target, '['))
		for (size_t i = 0; i < stack_nsweeps(ws->st); i++)
			if (!strcmp(stack_sweeps(ws->st, NULL)[i].address, target))
				return 1;
	for (size_t i = 0; i < stack_count(ws->st, &kind_job); i++)
		if (sweep_address_matches(target, stack_jobs(ws->st, NULL)[i].d.address))
			return 1;
	for (size_t i = 0; i < ws->state.nrecords; i++)
		if (sweep_address_matches(target, ws->state.records[i].address))
			return 1;
	return 0;
}

/* Whether -replace names a declaration: a job, a sweep or a slice of one. */
static int replace_known(const struct workspace *ws, const char *address)
{
	if (stack_find_decl(ws->st, address))
		return 1;
	for (size_t i = 0; i < stack_count(ws->st, &kind_job); i++)
		if (sweep_address_matches(address, stack_jobs(ws->st, NULL)[i].d.address))
			return 1;
	return 0;
}

int planning_opts_add(const char ***arr, size_t *n, const char *addr)
{
	const char **p = realloc(*arr, (*n + 1) * sizeof(*p));

	if (!p)
		return VX_ENOMEM;
	*arr = p;
	p[(*n)++] = addr;
	return 0;
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
	size_t n = recorded ? ws->state.nrecords : 0, k = 0;
	const char **names;
	const char *near;
	int rc;

	for (size_t d = 0; d < kind_count; d++)
		n += kind_count_decls(kind_table[d], st);
	if (!(names = calloc(n + 1, sizeof(*names))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* The declared addresses of every kind, jobs first (kind_table in reverse phase order). */
	for (size_t d = kind_count; d-- > 0;)
		for (size_t i = 0; i < kind_count_decls(kind_table[d], st); i++)
			names[k++] = kind_decl_at(kind_table[d], st, i)->address;
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
 * Reads the quota limits: one quotaInfos list per service the kinds name
 * (capacity_limit_services: Vertex's, and Compute's when reservations are
 * declared), whatever the number of jobs.
 * The quota check is advice: when Cloud Quotas says the caller may not read
 * it, the API is not enabled (403) or the project or service is not found
 * (404), the plan goes on without limits and *why (the caller frees) says
 * why, the server's words and their hint kept. Any other failure (401, 5xx
 * after the retries) stays an error.
 */
static int read_limits(struct planning *pl, struct workspace *ws, char **why, struct vx_err *err)
{
	const struct stack *st = ws->st;
	struct provider *p = workspace_reader(ws);
	struct vx_err e = VX_ERR_INIT;
	const char *services[KIND_MAX];
	size_t n = capacity_limit_services(st, services);
	int rc = 0;

	*why = NULL;
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = provider_quota_list_infos(p, st->project, services[i], &pl->limits, &e);
		if (rc == 0)
			pl->limits_read = 1;
	}
	if (rc == VX_EDENIED) {
		rc = (*why = vx_strdup(vx_err_msg(&e))) ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
	} else if (rc == VX_ENOTFOUND) {
		/* A 404 carries no hint of its own: the likely cause is the project. */
		*why = vx_asprintf("%s (Cloud Quotas does not know project %s or this service: check the "
				   "Stack's project)", vx_err_msg(&e), st->project);
		rc = *why ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
	} else if (rc < 0) {
		rc = vx_err_set(err, rc, "%s", vx_err_msg(&e));
	}
	vx_err_release(&e);
	return rc;
}

/*
 * The limits set on prices (a job's maxHourlyUsd, the policy's), as vx
 * validate checks them: each one broken is a plan error, "FILE:LINE:COLUMN:
 * message", for a plan made without vx validate.
 */
static int plan_price_limits(struct planning *pl, const struct stack *st, struct vx_err *err)
{
	struct vx_diags d = VX_DIAGS_INIT;
	int rc = kind_check_prices(st, &pl->prices, &d);

	vx_diags_sort(&d);
	for (size_t i = 0; i < d.n && rc >= 0; i++) {
		char *line = vx_diag_format(&d.items[i]);

		rc = line ? vx_diags_add(&pl->planner.plan.errors, NULL, 0, 0, "%s", line) : VX_ENOMEM;
		free(line);
	}
	vx_diags_release(&d);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

/*
 * vxplan and vxapply (the watcher holds to the budget applied, in
 * workflow/watch.c): the starts no reviewer approved that the Stack's
 * budget does not cover are held (workflow/budget.h), and the costs are
 * counted again without them.
 */
static int plan_budget_holds(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
			     const struct capacity_input *in, struct vx_err *err)
{
	size_t held = 0;

	if (!ws->st->budget.set || o->budget_holds)
		return 0;
	if (budget_hold_unreviewed(&held, &pl->planner.plan, &pl->capacity, ws, &pl->prices, in->now_ms) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!held)
		return 0;
	capacity_release(&pl->capacity);
	return capacity_build(&pl->capacity, in, err);
}

/* Quota limits and prices, then the capacity report, once per run. */
static int plan_capacity(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
			 struct vx_err *err)
{
	const struct stack *st = ws->st;
	struct capacity_input in;
	const char *why;
	char *unread = NULL;
	int rc;

	/* A budget counts every run's cost, GPUs or not; maxHourlyUsd (a job's, the policy's) needs the prices too. */
	if (!capacity_wanted(st) && !capacity_releases_held(&pl->planner.plan) && !st->budget.set &&
	    kind_check_prices(st, NULL, NULL) <= 0)
		return 0;
	if ((rc = prices_load_in_force(&pl->prices, st, ws->ctx, err)) < 0)
		return rc;
	if (o->refresh && capacity_wanted(st) && ws->prov && PROVIDER_HAS(ws->prov, quota, list_infos) && (rc = read_limits(pl, ws, &unread, err)) < 0)
		return rc;
	memset(&in, 0, sizeof(in));
	in.st = st;
	in.plan = &pl->planner.plan;
	in.live = o->refresh ? &pl->live : NULL;
	in.limits = pl->limits_read ? &pl->limits : NULL;
	in.prices = &pl->prices;
	in.limits_error = unread;
	in.now_ms = o->now_ms ? o->now_ms : vx_now_ms(ws->ctx);
	in.price_all = st->budget.set;
	rc = capacity_build(&pl->capacity, &in, err);
	if (rc == 0)
		rc = plan_budget_holds(pl, ws, o, &in, err);
	if (rc < 0) {
		free(unread);
		return rc;
	}
	why = o->fail_on_quota ? " (-fail-on=quota)" : st->fail_on_quota ? " (failOn: [quota])" : NULL;
	/* Said once, not once per job: the limits are unknown, so is every fit. */
	if (unread && pl->capacity.any)
		rc = vx_diags_add(why ? &pl->planner.plan.errors : &pl->planner.plan.warnings, NULL, 0, 0,
				  "quota limits not read, so no job's fit is known%s: %s%s",
				  why ? "" : " (the quota check is advice: the plan goes on)", unread, why ? why : "");
	free(unread);
	for (size_t i = 0; i < pl->capacity.misfits.n && rc == 0; i++)
		rc = vx_diags_add(why ? &pl->planner.plan.errors : &pl->planner.plan.warnings, NULL, 0, 0,
				  "%s%s", pl->capacity.misfits.items[i].msg, why ? why : "");
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	pl->header.capacity = pl->capacity.any ? &pl->capacity : NULL;
	return plan_price_limits(pl, st, err);
}

/*
 * The Stack's budget against the plan, when it has one (workflow/budget.h):
 * its line in every form of the plan; over it, a plan error under
 * -fail-on=budget or failOn: [budget], else a warning (vxapply refuses it
 * without -allow-over-budget).
 */
static int plan_budget(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
		       struct vx_err *err)
{
	const struct stack *st = ws->st;
	const struct render_budget *r = &pl->budget.r;
	const char *why = o->fail_on_budget ? " (-fail-on=budget)" : st->fail_on_budget ? " (failOn: [budget])"
											: NULL;
	struct vx_buf by = VX_BUF_INIT;
	int rc;

	if (!st->budget.set)
		return 0;
	if (budget_build(&pl->budget, ws, &pl->prices, &pl->capacity, o->now_ms ? o->now_ms : vx_now_ms(ws->ctx)) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	pl->header.budget = &pl->budget.r;
	if (o->budget_holds)
		return 0;
	if (r->would_exceed) {
		rc = budget_money(&by, r->exceed_by);
		if (rc == 0)
			rc = vx_diags_add(why ? &pl->planner.plan.errors : &pl->planner.plan.warnings, NULL, 0, 0,
					  "budget: this plan would exceed the Stack's budget by %s%s", vx_buf_str(&by),
					  why ? why : " (vxapply refuses it without -allow-over-budget)");
	} else if (why && (!r->spent_known || !r->at_most_known)) {
		/* Unknown is never under a limit. */
		rc = vx_diags_add(&pl->planner.plan.errors, NULL, 0, 0, "budget: %s, so it cannot be checked%s",
				  r->spent_known ? "this plan's cost is unknown (a price is not in the table)"
						 : "the period's spend is unknown",
				  why);
	} else {
		rc = 0;
	}
	vx_buf_release(&by);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

int planning_over_budget(const struct planning *pl)
{
	return pl->header.budget && pl->budget.r.would_exceed;
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
		if (!target_known(ws, o->targets[i]))
			return unknown_address(err, ws, "-target", o->targets[i], 1,
					       "no such address in the stack or its state");
	for (size_t i = 0; i < o->nreplaces; i++)
		if (!replace_known(ws, o->replaces[i]))
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
	popts.allow_released = o->allow_released;
	popts.now_ms = o->now_ms ? o->now_ms : vx_now_ms(ws->ctx);
	pl->live = live_store_view(&ws->store);
	rc = planner_run(&pl->planner, ws->st, &ws->state, o->refresh ? &pl->live : NULL, &popts, err);
	if (rc < 0)
		return rc;
	/* The loader's doubts (a region vx does not know) are the plan's warnings too. */
	for (size_t i = 0; i < ws->st->warnings.n; i++) {
		char *line = vx_diag_format(&ws->st->warnings.items[i]);

		rc = line ? vx_diags_add(&pl->planner.plan.warnings, NULL, 0, 0, "%s", line) : VX_ENOMEM;
		free(line);
		if (rc < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
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
	pl->header.policy = ws->st->policy;
	pl->header.refresh = o->refresh;
	pl->header.regions = (const char *const *)ws->store.read;
	pl->header.nregions = o->refresh ? ws->store.nread : 0;
	pl->header.also = (const char *const *)ws->store.also;
	pl->header.nalso = o->refresh ? ws->store.nalso : 0;
	pl->header.verbose = o->verbose;
	pl->header.targets = o->targets;
	pl->header.ntargets = o->ntargets;
	pl->header.allow_other_lineage = o->allow_other_lineage;
	pl->header.allow_released = o->allow_released;
	if ((rc = plan_capacity(pl, ws, o, err)) < 0)
		return rc;
	return plan_budget(pl, ws, o, err);
}

int planning_run_dir(struct planning *pl, struct workspace *ws, struct vx_ctx *ctx, const char *dir,
		     const struct planning_opts *o, const struct workspace_events *ev, struct vx_err *err)
{
	int rc;

	memset(pl, 0, sizeof(*pl));
	if ((rc = o->refresh ? workspace_open_ahead(ws, ctx, dir, ev, err)
			     : workspace_open(ws, ctx, dir, ev, err)) < 0)
		return rc;
	if (o->refresh)
		workspace_prefetch(ws);
	if ((rc = workspace_load_state(ws, err)) < 0)
		return rc;
	return planning_run(pl, ws, o, err);
}

int planning_has_changes(const struct planning *pl)
{
	return plan_has_changes(&pl->planner.plan);
}

int planning_has_waits(const struct planning *pl)
{
	return pl->planner.plan.counts[PLAN_WAIT] > 0;
}

int planning_save(struct planning *pl, const struct workspace *ws, const struct ci *ci, const char *path,
		  struct vx_err *err)
{
	struct vx_buf js = VX_BUF_INIT, human = VX_BUF_INIT, md = VX_BUF_INIT;
	FILE *f = NULL;
	int rc = 0;

	/* The texts `vx show FILE` prints again: rendered as vxplan prints
	 * them (no colour), before anything only a saved plan holds is set. */
	if (render_plan_human(&human, &pl->planner.plan, &pl->header, 0) < 0 ||
	    render_plan_markdown(&md, &pl->planner.plan, &pl->header) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	pl->header.rendered_human = vx_buf_str(&human);
	pl->header.rendered_markdown = vx_buf_str(&md);
	/* A state that has not stored its salt yet would get another one when
	 * vxapply loads it: the saved plan carries the one its hashes used
	 * (only then, and never on stdout). */
	pl->header.state_salt = ws->salt_fresh ? ws->state.salt : NULL;
	/* Who planned, so the runs applied from it say so (workflow/ci.h). */
	pl->header.planned_by = ci->actor;
	pl->header.pr_number = ci->pr;
	pl->header.pr_url = ci->pr_url;
	if (render_plan_json(&js, &pl->planner.plan, &pl->header) < 0 || !(f = fopen(path, "w")) ||
	    fputs(vx_buf_str(&js), f) < 0) {
		rc = vx_err_set(err, VX_EIO, "cannot write %s", path);
		goto done;
	}
done:
	if (f && fclose(f) != 0 && rc == 0)
		rc = vx_err_set(err, VX_EIO, "cannot write %s", path);
	pl->header.rendered_human = pl->header.rendered_markdown = NULL;
	vx_buf_release(&js);
	vx_buf_release(&human);
	vx_buf_release(&md);
	return rc;
}

int planning_spend_line(struct planning *pl, const struct workspace *ws, int64_t now_ms)
{
	free(pl->spend_line);
	pl->header.spend_line = pl->spend_line = NULL;
	if (report_spend_line(&pl->spend_line, ws, &pl->prices, pl->header.capacity, now_ms) < 0)
		return VX_ENOMEM;
	pl->header.spend_line = pl->spend_line;
	return 0;
}

void planning_release(struct planning *pl)
{
	free(pl->spend_line);
	budget_release(&pl->budget);
	planner_release(&pl->planner);
	capacity_release(&pl->capacity);
	prices_release(&pl->prices);
	live_quota_limits_release(&pl->limits);
	memset(pl, 0, sizeof(*pl));
}
