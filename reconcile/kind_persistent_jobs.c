/*
 * The jobs of the stack on its persistent resources, as the plan sees them
 * (issue 34; docs/persistent-resources.md, "What the plan assumes").
 *
 * The persistent resource kind plans after the job kind (kinds plan in
 * reverse phase order, reconcile/planner.c), so the jobs' actions are in the
 * plan when this runs, and this pass may hold them back:
 *
 *   - A run that would start on a resource that cannot take it now (the
 *     resource is PROVISIONING, UPDATING, REBOOTING, STOPPING or in ERROR,
 *     or it does not exist and this plan does not make it) waits, with the
 *     resource and its state as the reason. Vertex refuses a job on a
 *     resource that is not RUNNING. A resource this plan creates or
 *     replaces comes first in the apply (its phase is before the jobs'),
 *     and the apply sends the job only once it is RUNNING.
 *   - A replace of a resource is refused while jobs run on it, unless this
 *     plan cancels them first (-replace job.NAME for each of the stack's).
 *   - Each pool gets a line: how many of its replicas the stack's active
 *     jobs on it and the runs this plan starts on it would use, against the
 *     most the pool may have. Past that most, what Google does is not
 *     stated; vx reads it as the extra jobs queueing, says so in a warning,
 *     and does not refuse the plan.
 */
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind_job.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_persistent_internal.h"
#include "reconcile/plan.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_persistent.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "util/banned.h"

/* Whether op starts a run of a job (its new run lands on the declared resource). */
static int starts_run(enum plan_op op)
{
	return op == PLAN_CREATE || op == PLAN_RERUN || op == PLAN_RESUBMIT || op == PLAN_REPLACE;
}

/*
 * Whether job action a keeps a run active on d that it started before:
 * the run's recorded spec names d, in d's region, and the live job is active.
 */
static int active_on(const struct plan_action *a, const struct stack_persistent *d)
{
	const struct job_action *ja = job_action_of(a);
	const struct state_record *r = a->krecord;

	if (a->kind_of != &kind_job || (a->op != PLAN_NOOP && a->op != PLAN_UPDATE && a->op != PLAN_ADOPT))
		return 0;
	if (!ja->live_state || !job_state_is_active(ja->live_state) || !r || !r->current)
		return 0;
	return vx_text_same(r->current->region, d->region) && stack_persistent_named_in(r->spec_json, d->d.name);
}

/* Whether job action a starts a run on d (its declaration names d). */
static int starts_on(const struct plan_action *a, const struct stack_persistent *d)
{
	const struct stack_job *j = job_action_job(a);

	return a->kind_of == &kind_job && starts_run(a->op) && j && stack_persistent_of_job(d, j);
}

/* This plan's action for d, or NULL. */
static const struct plan_action *own_action(const struct plan *p, const struct stack_persistent *d)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->actions[i].kind_of == &kind_persistent && !strcmp(p->actions[i].address, d->d.address))
			return &p->actions[i];
	return NULL;
}

/*
 * Why a run cannot start on d now (owned), or NULL when it can: d is
 * RUNNING, or this plan creates or replaces it (its phase comes first).
 * *oom is set when out of memory.
 */
static char *not_ready(const struct plan *p, const struct stack_persistent *d, const struct live_persistent *l,
		       int *oom)
{
	const struct plan_action *own = own_action(p, d);
	char *why;

	if (own && (own->op == PLAN_CREATE || own->op == PLAN_REPLACE))
		return NULL;
	if (l && l->state && !strcmp(l->state, "RUNNING"))
		return NULL;
	if (!l)
		why = vx_asprintf("waits for %s: it does not exist yet, and this plan does not create it",
				  d->d.address);
	else if (l->error_message) /* set in ERROR and STOPPING */
		why = vx_asprintf("waits for %s: %s (%s)", d->d.address, l->state ? l->state : "no state",
				  l->error_message);
	else
		why = vx_asprintf("waits for %s: %s", d->d.address, l->state ? l->state : "no state");
	*oom = !why;
	return why;
}

/* A run that starts on d once this apply has made it (own: d's create or replace): its reason says so. */
static int after_made(struct plan_action *a, const struct stack_persistent *d, const struct plan_action *own)
{
	char *why = vx_asprintf("%s%s%s, %s first by this apply, is RUNNING", a->reason ? a->reason : "",
				a->reason ? "; sent once " : "sent once ", d->d.address,
				own->op == PLAN_CREATE ? "created" : "replaced");

	if (!why)
		return VX_ENOMEM;
	free(a->reason);
	a->reason = why;
	return 0;
}

/* Holds back the runs this plan would start on d while d cannot take them. */
static int hold_runs(struct plan *p, const struct kind_plan_input *in, const struct stack_persistent *d)
{
	const struct live_persistent *l = persistent_live_find(in->live, d->region, d->d.name);
	const struct plan_action *own = own_action(p, d);
	int oom = 0;

	for (size_t i = 0; i < p->n; i++) {
		char *why;

		if (!starts_on(&p->actions[i], d))
			continue;
		if ((why = not_ready(p, d, l, &oom)) != NULL) {
			if (job_action_hold(p, &p->actions[i], why) < 0)
				return VX_ENOMEM;
		} else if (oom) {
			return VX_ENOMEM;
		} else if (own && (own->op == PLAN_CREATE || own->op == PLAN_REPLACE) &&
			   after_made(&p->actions[i], d, own) < 0) {
			return VX_ENOMEM;
		}
	}
	return 0;
}

/* ---- a replace while jobs run ------------------------------------------------ */

/* The stack's jobs active on d that this plan does not cancel, named into which; how many. */
static size_t kept_on(const struct plan *p, const struct stack_persistent *d, struct vx_buf *which)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++)
		if (active_on(&p->actions[i], d) &&
		    vx_buf_printf(which, "%s%s", n++ ? ", " : "", p->actions[i].address) < 0)
			break;
	return n;
}

/* The stack's jobs on d whose runs this plan cancels (cancel, replace), named into which; how many. */
static size_t cancelled_on(const struct plan *p, const struct stack_persistent *d, struct vx_buf *which)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct state_record *r = a->krecord;

		if (a->kind_of != &kind_job || !job_action_of(a)->cancel_name || !r || !r->current ||
		    !vx_text_same(r->current->region, d->region) || !stack_persistent_named_in(r->spec_json, d->d.name))
			continue;
		if (vx_buf_printf(which, "%s%s", n++ ? ", " : "", a->address) < 0)
			break;
	}
	return n;
}

int persistent_replace_in_use(struct plan *p, const struct stack_persistent *d, const struct live_persistent *l,
			      const char *how, char **note)
{
	struct vx_buf kept = VX_BUF_INIT, gone = VX_BUF_INIT;
	size_t nkept = kept_on(p, d, &kept), ngone = cancelled_on(p, d, &gone);
	int64_t used = l ? persistent_used(l) : 0;
	int rc = 0;

	*note = NULL;
	if (nkept)
		rc = vx_diags_add(&p->errors, NULL, 0, 0,
				  "%s: the replace (%s) is refused while %s run%s on it: deleting it takes their "
				  "machines; plan with -replace for each of them too (they are cancelled first and "
				  "started again on the new resource), or once they have ended",
				  d->d.address, how, vx_buf_str(&kept), nkept == 1 ? "s" : "") < 0
			     ? VX_ENOMEM
			     : 1;
	else if (used > 0 && !ngone)
		rc = vx_diags_add(&p->errors, NULL, 0, 0,
				  "%s: the replace (%s) is refused while jobs use %" PRId64 " of its machines and no "
				  "cancel in this plan frees them (a job of another stack, or made outside vx)",
				  d->d.address, how, used) < 0
			     ? VX_ENOMEM
			     : 1;
	else if (ngone && !(*note = vx_asprintf("; %s, cancelled first, start again on the new one", vx_buf_str(&gone))))
		rc = VX_ENOMEM;
	vx_buf_release(&kept);
	vx_buf_release(&gone);
	return rc;
}

/* ---- the replicas the jobs use ------------------------------------------------ */

/* What the jobs counted want of one pool. */
struct pool_use {
	int64_t want;
	size_t jobs, active, starts; /* jobs on the pool; of them already active, started by this plan */
};

/* Adds job action a (its declared worker pools) to the use of d's pool q. */
static void count_job(struct pool_use *u, const struct plan_action *a, const struct stack_persistent *d,
		      const struct stack_persistent_pool *q, int active)
{
	const struct stack_job *j = job_action_job(a);
	int64_t n = 0;

	for (size_t w = 0; j && w < j->spec.npools; w++)
		if (j->spec.pools[w].machine_type && stack_persistent_pool_for(d, &j->spec.pools[w]) == q)
			n += j->spec.pools[w].replica_count;
	if (!n)
		return;
	u->want += n;
	u->jobs++;
	if (active)
		u->active++;
	else
		u->starts++;
}

/* The line of pool q of d: into the plan's notes, or its warnings when the jobs want more than q's most. */
static int pool_line(struct plan *p, const struct stack_persistent *d, const struct stack_persistent_pool *q,
		     const struct pool_use *u)
{
	int64_t most = stack_persistent_pool_max(q);
	char *who = vx_asprintf("%zu job%s (%zu active, %zu started by this plan)", u->jobs, u->jobs == 1 ? "" : "s",
				u->active, u->starts);
	int rc;

	if (!who)
		return VX_ENOMEM;
	if (u->want <= most)
		rc = vx_diags_add(&p->notes, NULL, 0, 0, "%s: pool %s: %" PRId64 " of %" PRId64 " replicas in use by %s",
				  d->d.address, q->id, u->want, most, who);
	else
		rc = vx_diags_add(&p->warnings, NULL, 0, 0,
				  "%s: pool %s: %" PRId64 " replicas wanted by %s, %" PRId64 " more than its most (%" PRId64
				  "): the jobs past it queue until replicas are free (what Vertex AI does then is not "
				  "stated; vx reads it as a queue)",
				  d->d.address, q->id, u->want, who, u->want - most, most);
	free(who);
	return rc < 0 ? VX_ENOMEM : 0;
}

/* One line per pool of d, when any of the stack's jobs are on it. */
static int use_lines(struct plan *p, const struct stack_persistent *d)
{
	struct pool_use *u = calloc(d->npools + 1, sizeof(*u));
	size_t total = 0;
	int rc = u ? 0 : VX_ENOMEM;

	for (size_t k = 0; u && k < d->npools; k++) {
		for (size_t i = 0; i < p->n; i++) {
			const struct plan_action *a = &p->actions[i];
			int active = active_on(a, d);

			if (active || starts_on(a, d))
				count_job(&u[k], a, d, &d->pools[k], active);
		}
		total += u[k].jobs;
	}
	for (size_t k = 0; total && k < d->npools && rc == 0; k++)
		rc = pool_line(p, d, &d->pools[k], &u[k]);
	free(u);
	return rc;
}

/*
 * Holds back the runs this plan would start on resources the stack does not
 * declare (a job's full name of one in its project and region): read by the
 * refresh (their region is listed), never changed, and a run waits while
 * the resource is not RUNNING, or does not exist, as on the stack's own.
 */
static int hold_undeclared(struct plan *p, const struct kind_plan_input *in)
{
	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct stack_job *j = job_action_job(a);
		const char *id = j && a->kind_of == &kind_job && starts_run(a->op)
					 ? persistent_undeclared_of_job(in->st, j)
					 : NULL;
		const struct live_persistent *l = id ? persistent_live_find(in->live, j->region, id) : NULL;
		char *why;

		if (!id || (l && l->state && !strcmp(l->state, "RUNNING")))
			continue;
		if (!l)
			why = vx_asprintf("waits for projects/%s/locations/%s/persistentResources/%s: it does not exist (a "
					  "persistent resource this stack does not manage)",
					  in->st->project, j->region, id);
		else /* named as the job names it (Google lists the project's number) */
			why = vx_asprintf("waits for projects/%s/locations/%s/persistentResources/%s: %s%s%s%s",
					  in->st->project, j->region, id, l->state ? l->state : "no state",
					  l->error_message ? " (" : "", l->error_message ? l->error_message : "",
					  l->error_message ? ")" : "");
		if (job_action_hold(p, a, why) < 0)
			return VX_ENOMEM;
	}
	return 0;
}

int persistent_plan_jobs(struct plan *p, const struct kind_plan_input *in)
{
	size_t nd;
	const struct stack_persistent *ds = stack_persistents(in->st, &nd);
	int rc = 0;

	/* Refresh off: the resources' states are not known; nothing is held back or counted. */
	for (size_t i = 0; in->live && i < nd && rc == 0; i++) {
		rc = hold_runs(p, in, &ds[i]);
		if (rc == 0)
			rc = use_lines(p, &ds[i]);
	}
	return rc == 0 && in->live ? hold_undeclared(p, in) : rc;
}
