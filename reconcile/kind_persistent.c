/*
 * The persistent resource kind: Vertex AI persistent resources, pools of
 * machines that stay up so that the stack's jobs start on them at once
 * (persistent_resource.NAME, NAME the persistentResourceId).
 *
 * vx proves its own by the labels on the resource (vx-stack and vx-lineage,
 * as its jobs carry) or by the state knowing it, and acts on nothing else.
 * The pools' replicaCount and autoscalingSpec and the labels change in
 * place (one PATCH with the exact updateMask); anything else Google cannot
 * change in place (a pool's id, machine or disk, a pool added or removed)
 * is refused unless -replace names the address, as for reservations: the
 * machines held might not come back. A resource in ERROR is shown with its
 * error and replaced only when the declaration says onError: replace.
 * docs/persistent-resources.md has the API's facts and the readings taken.
 */
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_persistent_internal.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/provider_persistent.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "util/banned.h"

/* The project and region a recorded resource lives in. */
void persistent_record_place(const struct state_record *r, const struct stack *st, const char **project,
			     const char **region)
{
	*project = r && r->current && r->current->project ? r->current->project : st->project;
	*region = r && r->current ? r->current->region : NULL;
}

const struct live_persistent *persistent_live_find(const struct live_set *live, const char *region,
						   const char *id)
{
	const struct live_persistents *rs = kind_live(live, &kind_persistent);

	for (size_t i = 0; rs && region && i < rs->n; i++)
		if (rs->items[i].id && !strcmp(rs->items[i].id, id) && rs->items[i].region &&
		    !strcmp(rs->items[i].region, region))
			return &rs->items[i];
	return NULL;
}

int persistent_is_ours(const struct live_persistent *l, const char *stack, const char *lineage)
{
	return vx_text_same(live_persistent_label(l, "vx-stack"), stack) &&
	       vx_text_same(live_persistent_label(l, "vx-lineage"), lineage);
}

int persistent_record_abandons(const struct state_record *r)
{
	static const char key[] = "{\"deletionPolicy\":\"abandon\"";

	return r->spec_json && !strncmp(r->spec_json, key, sizeof(key) - 1);
}

static const char *decl_region(const struct stack *st, size_t i)
{
	return stack_persistents(st, NULL)[i].region;
}

static int list_region(struct live_store *out, struct provider *p, const char *project, const char *region,
		       struct vx_err *err)
{
	struct live_persistents *all = kind_live_slot(out, &kind_persistent), rs = { 0 };
	int rc;

	if (!PROVIDER_HAS(p, persistent, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list persistent resources");
	rc = provider_persistent_list(p, project, region, &rs, err);
	for (size_t k = 0; k < rs.n && rc == 0; k++)
		if (live_persistents_push(all, &rs.items[k]) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	live_persistents_release(&rs);
	return rc;
}

static size_t count_jobs(const struct stack *st)
{
	size_t n;

	(void)stack_jobs(st, &n);
	return n;
}

/* The region of job i when it runs on a resource the stack does not declare (a full name), else NULL. */
static const char *undeclared_region(const struct stack *st, size_t i)
{
	const struct stack_job *j = &stack_jobs(st, NULL)[i];

	return persistent_undeclared_of_job(st, j) ? j->region : NULL;
}

/* One list per region a declared or recorded resource is in, or a job's on one the stack does not
 * declare (to see its state); none without any. */
static int pr_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		      const struct state *state, struct vx_err *err)
{
	static const struct kind_places how = { "persistent resources", decl_region, persistent_record_place,
						list_region, count_jobs, undeclared_region };

	return kind_refresh_places(&kind_persistent, &how, out, p, st, state, err);
}

/* ---- plan ----------------------------------------------------------------- */

static int64_t live_replicas(const struct live_persistent *l)
{
	int64_t n = 0;

	for (size_t i = 0; i < l->npools; i++)
		n += l->pools[i].replica_count;
	return n;
}

int64_t persistent_decl_replicas(const struct stack_persistent *d)
{
	int64_t n = 0;

	for (size_t i = 0; i < d->npools; i++)
		n += d->pools[i].replica_count;
	return n;
}

static const struct live_persistent_pool *live_pool(const struct live_persistent *l, const char *id)
{
	for (size_t i = 0; id && i < l->npools; i++)
		if (l->pools[i].id && !strcmp(l->pools[i].id, id))
			return &l->pools[i];
	return NULL;
}

/* What differs that Google cannot change in place, in words, or NULL (VX_ENOMEM: *oom). */
char *persistent_immutable_change(const struct stack_persistent *d, const struct live_persistent *l)
{
	/* Not stated whether an update may change them; they move the machines: a replace. */
	if (!vx_text_same(d->network, l->network))
		return vx_asprintf("network %s -> %s", l->network ? l->network : "none", d->network ? d->network : "none");
	if (!vx_text_same(d->kms_key_name, l->kms_key_name))
		return vx_asprintf("encryptionSpec.kmsKeyName %s -> %s", l->kms_key_name ? l->kms_key_name : "none",
				   d->kms_key_name ? d->kms_key_name : "none");
	if (d->npools != l->npools)
		return vx_asprintf("resourcePools: %zu pools -> %zu", l->npools, d->npools);
	for (size_t i = 0; i < d->npools; i++) {
		const struct stack_persistent_pool *p = &d->pools[i];
		const struct live_persistent_pool *q = live_pool(l, p->id);

		if (!q)
			return vx_asprintf("resourcePools: pool %s is new", p->id);
		if (!vx_text_same(p->machine_type, q->machine_type))
			return vx_asprintf("pool %s: machineType %s -> %s", p->id,
					   q->machine_type ? q->machine_type : "none", p->machine_type);
		if (!vx_text_same(p->accelerator_type, q->accelerator_type) ||
		    p->accelerator_count != q->accelerator_count)
			return vx_asprintf("pool %s: accelerators %" PRId64 "x%s -> %" PRId64 "x%s", p->id,
					   q->accelerator_count, q->accelerator_type ? q->accelerator_type : "none",
					   p->accelerator_count, p->accelerator_type ? p->accelerator_type : "none");
		if ((p->boot_disk_type && !vx_text_same(p->boot_disk_type, q->boot_disk_type)) ||
		    (p->boot_disk_size_gb && p->boot_disk_size_gb != q->boot_disk_size_gb))
			return vx_asprintf("pool %s: diskSpec changed", p->id);
	}
	return NULL;
}

/* The user's labels as declared against the live ones (vx's own left aside): 1 when they differ. */
int persistent_labels_differ(const struct stack_persistent *d, const struct live_persistent *l)
{
	size_t nl = 0;

	for (size_t i = 0; i < l->nlabels; i++) {
		if (!strncmp(l->labels[i].key, "vx-", 3))
			continue;
		nl++;
		if (!vx_text_same(stack_labels_get(&d->labels, l->labels[i].key), l->labels[i].value))
			return 1;
	}
	return nl != d->labels.n;
}

/* The in-place changes, as words into out, and the updateMask they need. */
unsigned persistent_mutable_change(const struct stack_persistent *d, const struct live_persistent *l,
				   struct vx_buf *out)
{
	unsigned mask = 0;
	int oom = 0; /* out of memory: the words stay short, the mask is whole */

	for (size_t i = 0; i < d->npools; i++) {
		const struct stack_persistent_pool *p = &d->pools[i];
		const struct live_persistent_pool *q = live_pool(l, p->id);

		if (!q)
			continue;
		if (p->replica_count != q->replica_count) {
			oom |= vx_buf_printf(out, "%spool %s replicaCount %" PRId64 " -> %" PRId64, out->len ? ", " : "",
					     p->id, q->replica_count, p->replica_count) < 0;
			mask |= PROVIDER_PERSISTENT_POOLS;
		}
		if (p->has_autoscaling != q->has_autoscaling ||
		    (p->has_autoscaling && (p->min_replica_count != q->min_replica_count ||
					    p->max_replica_count != q->max_replica_count))) {
			oom |= vx_buf_printf(out, "%spool %s autoscalingSpec %" PRId64 "-%" PRId64 " -> %" PRId64 "-%" PRId64,
					     out->len ? ", " : "", p->id, q->min_replica_count, q->max_replica_count,
					     p->min_replica_count, p->max_replica_count) < 0;
			mask |= PROVIDER_PERSISTENT_POOLS;
		}
	}
	if (persistent_labels_differ(d, l)) {
		oom |= vx_buf_printf(out, "%slabels", out->len ? ", " : "") < 0;
		mask |= PROVIDER_PERSISTENT_LABELS;
	}
	(void)oom;
	return mask;
}

static struct plan_action *add(struct plan *p, enum plan_op k, const char *address,
			       const struct stack_persistent *d, const struct live_persistent *l,
			       const struct state_record *r)
{
	return plan_add_kind_action(p, k, &kind_persistent, address, d, l, r);
}

/* One action with its reason (owned, NULL: out of memory). */
static int add_why(struct plan *p, enum plan_op k, const struct stack_persistent *d, const char *address,
		   const struct live_persistent *l, const struct state_record *r, char *why)
{
	struct plan_action *a = why ? add(p, k, address, d, l, r) : NULL;

	if (!a) {
		free(why);
		return VX_ENOMEM;
	}
	return plan_action_reason(a, why);
}

/*
 * The shape line: each pool's machines and replicas (a range with
 * autoscaling), and the live state with how many replicas jobs use.
 */
static char *describe(const struct plan_action *act)
{
	const struct stack_persistent *d = act->kdecl;
	const struct live_persistent *l = act->klive;
	struct vx_buf b = VX_BUF_INIT;
	size_t n = d ? d->npools : l ? l->npools
				     : 0;
	int oom = 0;

	for (size_t i = 0; i < n; i++) {
		const char *id = d ? d->pools[i].id : l->pools[i].id;
		const char *mt = d ? d->pools[i].machine_type : l->pools[i].machine_type;
		const char *at = d ? d->pools[i].accelerator_type : l->pools[i].accelerator_type;
		int64_t ac = d ? d->pools[i].accelerator_count : l->pools[i].accelerator_count;
		int64_t rc = d ? d->pools[i].replica_count : l->pools[i].replica_count;
		int as = d ? d->pools[i].has_autoscaling : l->pools[i].has_autoscaling;
		int64_t lo = d ? d->pools[i].min_replica_count : l->pools[i].min_replica_count;
		int64_t hi = d ? d->pools[i].max_replica_count : l->pools[i].max_replica_count;

		oom |= vx_buf_printf(&b, "%s%s: %s \u00d7%" PRId64, i ? "; " : "", id ? id : "?", mt ? mt : "?", rc) < 0;
		if (as)
			oom |= vx_buf_printf(&b, " (%" PRId64 "-%" PRId64 ")", lo, hi) < 0;
		if (at)
			oom |= vx_buf_printf(&b, ", %" PRId64 "\u00d7%s", ac, at) < 0;
	}
	if (l)
		oom |= vx_buf_printf(&b, " [%s, %" PRId64 " used]", l->state ? l->state : "?", persistent_used(l)) < 0;
	if (!b.len || oom) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

int64_t persistent_used(const struct live_persistent *l)
{
	int64_t n = 0;

	for (size_t i = 0; i < l->npools; i++)
		n += l->pools[i].used_replica_count;
	return n;
}

/*
 * A replace (how: "-replace", "onError: replace") with its reason (why,
 * borrowed): refused while jobs run on it, unless this plan cancels them
 * first (persistent_replace_in_use), and then said after the reason.
 */
static int plan_replace(struct plan *p, const struct stack_persistent *d, const struct live_persistent *l,
			const struct state_record *r, const char *how, const char *why)
{
	char *note = NULL;
	int rc = persistent_replace_in_use(p, d, l, how, &note);

	if (rc == 0)
		rc = add_why(p, PLAN_REPLACE, d, d->d.address, l, r, vx_asprintf("%s%s", why, note ? note : ""));
	free(note);
	return rc < 0 ? rc : 0;
}

/* A declared resource whose shape changed (why, owned): refused unless -replace names it. */
static int plan_immutable(struct plan *p, const struct kind_plan_input *in, const struct stack_persistent *d,
			  const struct live_persistent *l, const struct state_record *r, char *why)
{
	int rc;

	if (!why)
		return VX_ENOMEM;
	if (kind_replaced(in, d->d.address)) {
		char *reason = vx_asprintf("%s (-replace): deleted, then created again", why);

		rc = reason ? plan_replace(p, d, l, r, "-replace", reason) : VX_ENOMEM;
		free(reason);
		free(why);
		return rc;
	}
	rc = vx_diags_add(&p->errors, NULL, 0, 0,
			  "%s: %s cannot change in place: Vertex AI would have to delete the persistent "
			  "resource and make a new one, and the machines it holds might not come back; to do "
			  "that anyway, plan with -replace %s",
			  d->d.address, why, d->d.address) < 0
		     ? VX_ENOMEM
		     : 0;
	free(why);
	return rc;
}

/* A declared resource in ERROR: replaced with onError: replace (or -replace), else shown. */
static int plan_error(struct plan *p, const struct kind_plan_input *in, const struct stack_persistent *d,
		      const struct live_persistent *l, const struct state_record *r)
{
	const char *msg = l->error_message ? l->error_message : "no error given";

	char *why;
	int rc;

	if (d->on_error == STACK_PERSISTENT_ON_ERROR_REPLACE || kind_replaced(in, d->d.address)) {
		const char *how = d->on_error ? "onError: replace" : "-replace";

		if (!(why = vx_asprintf("in ERROR (%s): deleted, then created again (%s)", msg, how)))
			return VX_ENOMEM;
		rc = plan_replace(p, d, l, r, how, why);
		free(why);
		return rc;
	}
	if (vx_diags_add(&p->warnings, NULL, 0, 0, "%s is in ERROR: %s; left as it is (onError: keep; "
						   "onError: replace or -replace %s replaces it)",
			 d->d.address, msg, d->d.address) < 0)
		return VX_ENOMEM;
	return add_why(p, PLAN_NOOP, d, d->d.address, l, r, vx_asprintf("in ERROR: %s (onError: keep)", msg));
}

/* A declared resource found live and recorded: updated in place, or left, and drift told. */
static int plan_known(struct plan *p, const struct stack_persistent *d, const struct live_persistent *l,
		      const struct state_record *r)
{
	struct vx_buf what = VX_BUF_INIT;
	unsigned mask = persistent_mutable_change(d, l, &what);
	/* protect, deletionPolicy or onError changed alone: recorded, nothing sent. */
	int recorded = !mask && r->spec_hash && strcmp(r->spec_hash, d->d.hash) != 0;
	struct plan_action *a = add(p, mask || recorded ? PLAN_UPDATE : PLAN_NOOP, d->d.address, d, l, r);
	int rc = a ? 0 : VX_ENOMEM;

	if (rc == 0 && recorded)
		rc = plan_action_reason(a, vx_strdup("protect, deletionPolicy or onError changed: recorded, nothing sent"));
	if (rc == 0 && mask)
		rc = plan_action_reason(a, vx_asprintf("in place (updateMask %s%s%s): %s",
						       mask & PROVIDER_PERSISTENT_POOLS ? "resourcePools" : "",
						       mask == (PROVIDER_PERSISTENT_POOLS | PROVIDER_PERSISTENT_LABELS) ? "," : "",
						       mask & PROVIDER_PERSISTENT_LABELS ? "labels" : "", vx_buf_str(&what)));
	if (rc == 0 && r->current && r->current->has_value && r->current->value != live_replicas(l))
		rc = plan_action_drift(p, a, vx_asprintf("replicas changed outside vx: %" PRId64 " recorded, %" PRId64 " live", r->current->value, live_replicas(l)));
	vx_buf_release(&what);
	return rc;
}

/* Live and not recorded: adopted when its labels prove it this stack's and state's, else refused. */
static int plan_unrecorded(struct plan *p, const struct kind_plan_input *in, const struct stack_persistent *d,
			   const struct live_persistent *l)
{
	if (!persistent_is_ours(l, in->st->name, in->lineage))
		return vx_diags_add(&p->errors, NULL, 0, 0,
				    "%s: a persistent resource %s already exists in %s and is not this stack's "
				    "(its labels vx-stack and vx-lineage are not %s and %s); give the declaration "
				    "another name",
				    d->d.address, d->d.name, d->region, in->st->name, in->lineage) < 0
			       ? VX_ENOMEM
			       : 0;
	return add_why(p, PLAN_ADOPT, d, d->d.address, l, NULL,
		       vx_asprintf("a persistent resource %s with this stack's labels exists in %s (%s): an "
				   "earlier apply created it",
				   d->d.name, d->region, l->state ? l->state : "?"));
}

static int plan_declared(struct plan *p, const struct kind_plan_input *in, const void *decl, void *ud)
{
	const struct stack_persistent *d = decl;
	const struct state_record *r = state_find(in->state, d->d.address);
	const char *rproject, *rregion;
	const struct live_persistent *l, *old = NULL;
	char *why;

	(void)ud;

	persistent_record_place(r, in->st, &rproject, &rregion);
	l = persistent_live_find(in->live, d->region, d->d.name);
	if (!l && rregion && strcmp(rregion, d->region) != 0)
		old = persistent_live_find(in->live, rregion, d->d.name);
	if (!in->live)
		return add_why(p, r ? PLAN_NOOP : PLAN_CREATE, d, d->d.address, NULL, r,
			       vx_strdup(r ? "refresh off: not read" : "new persistent resource"));
	if (l && !r)
		return plan_unrecorded(p, in, d, l);
	if (old)
		return plan_immutable(p, in, d, old, r, vx_asprintf("region %s -> %s", rregion, d->region));
	if (!l && r && r->current) {
		if (add_why(p, PLAN_CREATE, d, d->d.address, NULL, r,
			    vx_strdup("deleted outside vx: created again as declared")) < 0)
			return VX_ENOMEM;
		return plan_action_drift(p, &p->actions[p->n - 1],
					 vx_asprintf("persistent resource %s was deleted outside vx", d->d.name));
	}
	if (!l)
		return add_why(p, PLAN_CREATE, d, d->d.address, NULL, r, vx_strdup("new persistent resource"));
	if (l->state && !strcmp(l->state, "ERROR"))
		return plan_error(p, in, d, l, r);
	if ((why = persistent_immutable_change(d, l)))
		return plan_immutable(p, in, d, l, r, why);
	return plan_known(p, d, l, r);
}

/* The jobs of the stack this plan cancels (or replaces) that run on resource id, named into which. */
static int cancels_jobs_on(const struct plan *p, const char *id, struct vx_buf *which)
{
	char *needle = vx_asprintf("\"persistentResourceId\":\"%s\"", id);
	int found = 0;

	for (size_t i = 0; needle && i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct state_record *r = a->krecord;

		if (a->kind_of == &kind_persistent || (a->op != PLAN_CANCEL && a->op != PLAN_REPLACE) || !r ||
		    !r->spec_json || !strstr(r->spec_json, needle))
			continue;
		if (vx_buf_printf(which, "%s%s", found++ ? ", " : "", a->address) < 0)
			break;
	}
	free(needle);
	return found;
}

/*
 * A delete of a resource whose machines jobs use: refused unless this plan
 * cancels the stack's jobs on it (then said; the apply's removals cancel
 * them first). 1 when refused (a plan error added), 0, or VX_ENOMEM.
 */
static int delete_in_use(struct plan *p, const char *address, const struct live_persistent *l, struct vx_buf *which)
{
	if (!l || persistent_used(l) == 0 || cancels_jobs_on(p, l->id, which))
		return 0;
	return vx_diags_add(&p->errors, NULL, 0, 0,
			    "%s is no longer declared but jobs use %" PRId64 " of its machines, and no cancel in this "
			    "plan frees them (a job of this stack still declared, of another stack, or made outside "
			    "vx); it is not deleted",
			    address, persistent_used(l)) < 0
		       ? VX_ENOMEM
		       : 1;
}

/* No longer declared: deleted, or forgotten (gone already, deletionPolicy: abandon). */
static int plan_removed(struct plan *p, const struct kind_plan_input *in, const struct state_record *r,
			void *ud)
{
	const char *name = strchr(r->address, '.') + 1, *project, *region;
	const struct live_persistent *l;
	struct vx_buf which = VX_BUF_INIT;
	struct plan_action *a;
	int rc;

	(void)ud;

	persistent_record_place(r, in->st, &project, &region);
	l = persistent_live_find(in->live, region, name);
	if (in->live && !l)
		return add_why(p, PLAN_FORGET, NULL, r->address, NULL, r,
			       vx_strdup("no longer declared, and already gone (history stays in git)"));
	if (r->protect)
		return vx_diags_add(&p->errors, NULL, 0, 0, "%s is protected (protect: true): it is no longer "
							    "declared; deleting it is refused",
				    r->address) < 0
			       ? VX_ENOMEM
			       : 0;
	if (persistent_record_abandons(r))
		return add_why(p, PLAN_ABANDON, NULL, r->address, l, r,
			       vx_strdup("no longer declared (deletionPolicy: abandon): forgotten, left running"));
	if ((rc = delete_in_use(p, r->address, l, &which)) != 0) {
		vx_buf_release(&which);
		return rc < 0 ? rc : 0;
	}
	rc = add_why(p, PLAN_DELETE, NULL, r->address, l, r,
		     which.len ? vx_asprintf("no longer declared; deleted once the jobs on it are cancelled (%s)",
					     vx_buf_str(&which))
			       : vx_strdup("no longer declared"));
	vx_buf_release(&which);
	if (rc < 0)
		return VX_ENOMEM;
	a = &p->actions[p->n - 1];
	free(a->region);
	a->region = vx_strdup(region);
	return region && !a->region ? VX_ENOMEM : 0;
}

static int pr_plan(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err)
{
	static const struct kind_plan_steps how = { "persistent resources", plan_declared, plan_removed, describe };

	int rc = kind_plan_each(&kind_persistent, &how, &pl->plan, in, NULL, err);

	/* The jobs on the resources: held back while one cannot take them, and their use of each pool. */
	if (rc == 0 && persistent_plan_jobs(&pl->plan, in) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "planning persistent resources: out of memory");
	return rc;
}

/* ---- the row ---------------------------------------------------------------- */

static void pr_live_release(void *live)
{
	live_persistents_release(live);
}

const struct kind kind_persistent = {
	.name = "PersistentResource",
	.prefix = "persistent_resource",
	.rfc1035_names = 1,
	.refresh = pr_refresh,
	.plan = pr_plan,
	.apply = persistent_apply,
	/* Held machines, paid while it exists used or not: regional VMs in the
	 * region's training quota, at Vertex AI's training rates (kind_persistent_cost.c). */
	.cost = KIND_COST_HELD,
	.capacity = persistent_capacity,
	.update_says_why = 1,
	.name_in_label = 0,
	.has_logs = 0,
	.noun = "persistent resource",
	.noun_plural = "persistent resources",
	.decl_size = sizeof(struct stack_persistent),
	.import = persistent_import,
	.status_rows = persistent_status_rows,
	.live_size = sizeof(struct live_persistents),
	.live_release = pr_live_release,
	.watch_runs = 0,
	.load_alloc = kind_persistent_load_alloc,
	.load_read = kind_persistent_load_read,
	.decl_hash = kind_persistent_decl_hash,
	.decl_release = kind_persistent_decl_release,
	.summary_if_declared = 1,
	.import_form = "projects/P/locations/REGION/persistentResources/ID",
	.notify = persistent_notify,
	.events = persistent_events,
	.nevents = 1,
	.job_ref_field = "persistentResourceId",
	.held = persistent_held,
	.held_record = persistent_held_record,
	.policy_allow = "reservations",
};
