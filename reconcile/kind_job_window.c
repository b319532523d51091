/*
 * Jobs in a booking's window (issue 35): a CustomJob whose `reservation:`
 * names a FutureReservation of the stack runs on the capacity Google
 * delivers for it, on the reservation Google makes at the window's start.
 *
 * What holds, and where:
 *   - vx validate (job_window_refused, job_window_check): the job's worker
 *     pools with GPUs are exactly the booked shape (machine type,
 *     accelerator type and count), their VMs fit the booking, its strategy
 *     is neither FLEX_START nor SPOT, it names no persistent resource and
 *     has no ladder; a timeout longer than a calendar window is a warning;
 *   - the plan (job_window_gate, the row's plan_after): a create waits
 *     until the booking is delivered and open to Vertex AI (or opened by
 *     this plan first), saying for what (future_window_ready);
 *   - apply (job_window_blocked, job_window_spec): the create is sent on the
 *     delivered reservation's full name, and not at all when the booking's
 *     opening failed in the same apply.
 *
 * The declared spec names the booking's own name as its reservation (what
 * the delivered reservation is called when a booking asks for no name,
 * gcloud says); its hash is the run's identity. The create sends the name
 * Google reports in status.autoCreatedReservations instead, should it
 * differ.
 */
#include "reconcile/kind_job_load.h"
#include "reconcile/kind_job_internal.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/kind_future.h"
#include "reconcile/load/machines.h"
#include "reconcile/load/ynode.h"
#include "reconcile/planner.h"
#include "reconcile/provider_future.h"
#include "util/buf.h"
#include "util/banned.h"

char *job_window_planned_name(const char *project, const struct stack_future *f)
{
	return vx_asprintf("projects/%s/zones/%s/reservations/%s", project ? project : "", f->zone ? f->zone : "",
			   f->d.name);
}

/* ---- vx validate ---- */

/* A duration as the messages write it: the largest of d, h, m, s that divides it ("5d", "36h"). */
static void dur_text(char *out, size_t n, int64_t ms)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} units[] = { { 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms % units[i].ms == 0 || i + 1 == sizeof(units) / sizeof(units[0])) {
			snprintf(out, n, "%" PRId64 "%s", ms / units[i].ms, units[i].unit);
			return;
		}
}

/* spec.scheduling.strategy as written, or NULL. */
static const struct ynode *strategy_node(const struct ynode *spec)
{
	const struct ynode *s = ynode_get(spec, "scheduling"), *v;

	if (!s || s->kind != YNODE_MAP || !(v = ynode_get(s, "strategy")) || !stack_is_string(v))
		return NULL;
	return v;
}

int job_window_refused(struct loader *L, const struct ynode *doc, const struct ynode *spec,
		       const struct stack_future *f, const struct ynode *at, const char *region)
{
	const struct ynode *v = strategy_node(spec), *rs = ynode_get(doc, "resubmit");
	size_t before = L->nerr, rlen = region ? strlen(region) : 0;

	if (region && f->zone && (strncmp(f->zone, region, rlen) != 0 || f->zone[rlen] != '-'))
		stack_err(L, at, "reservation: %s is in zone %s, outside the job's region %s", f->d.address, f->zone,
			  region);
	if (v && !strcmp(v->str, "FLEX_START"))
		stack_err(L, v, "spec.scheduling.strategy: FLEX_START cannot run in %s's window: Vertex AI training "
				"does not use Dynamic Workload Scheduler on a reservation; use STANDARD (or leave "
				"strategy out)",
			  f->d.address);
	else if (v && !strcmp(v->str, "SPOT"))
		stack_err(L, v, "spec.scheduling.strategy: SPOT cannot run in %s's window: the booked capacity is "
				"reserved on-demand VMs, not Spot; use STANDARD (or leave strategy out)",
			  f->d.address);
	if (rs && rs->kind == YNODE_MAP && (v = stack_get_value(rs, "fallback")) != NULL)
		stack_err(L, v, "resubmit.fallback: a job in %s's window takes no fallback ladder (its rungs would "
				"leave the booked capacity)",
			  f->d.address);
	return L->nerr != before;
}

/* The value node of pool i's machineSpec.key, else its machineSpec, else NULL. */
static const struct ynode *pool_field(const struct ynode *spec, size_t i, const char *key)
{
	const struct ynode *pools = ynode_get(spec, "workerPoolSpecs"), *ms, *v;

	if (!pools || pools->kind != YNODE_SEQ || i >= pools->n || pools->items[i]->kind != YNODE_MAP)
		return NULL;
	ms = ynode_get(pools->items[i], "machineSpec");
	v = ms && ms->kind == YNODE_MAP ? ynode_get(ms, key) : NULL;
	return v ? v : ms;
}

/* Pool i (p, with GPUs) against the booked shape: the first field that differs, reported. */
static void check_pool(struct loader *L, const struct ynode *spec, size_t i, const struct spec_pool *p,
		       const struct stack_future *f)
{
	static const char tail[] = "; a job in the window runs on exactly the booked machine type and GPUs";
	const struct machines_gpu *gpu = f->accelerator ? machines_gpu_by_compute(f->accelerator) : NULL;
	const char *vertex = gpu ? gpu->vertex : NULL;

	if (strcmp(p->machine_type, f->machine_type ? f->machine_type : "") != 0)
		stack_err(L, pool_field(spec, i, "machineType"),
			  "spec.workerPoolSpecs[%zu].machineSpec.machineType: %s, but %s books %s VMs%s", i,
			  p->machine_type, f->d.address, f->machine_type ? f->machine_type : "(unknown)", tail);
	else if (!vertex || strcmp(p->accelerator_type, vertex) != 0)
		stack_err(L, pool_field(spec, i, "acceleratorType"),
			  "spec.workerPoolSpecs[%zu].machineSpec.acceleratorType: %s, but %s books %s (%s) GPUs%s", i,
			  p->accelerator_type, f->d.address, f->accelerator ? f->accelerator : "no",
			  vertex ? vertex : "none", tail);
	else if (p->accelerator_count != f->accelerator_count)
		stack_err(L, pool_field(spec, i, "acceleratorCount"),
			  "spec.workerPoolSpecs[%zu].machineSpec.acceleratorCount: %" PRId64 ", but %s books %" PRId64
			  " %s per VM%s",
			  i, p->accelerator_count, f->d.address, f->accelerator_count, vertex, tail);
}

void job_window_check(struct loader *L, const struct stack_job *j, const struct ynode *spec,
		      const struct stack_future *f, const struct ynode *at)
{
	const struct ynode *s = ynode_get(spec, "scheduling");
	int64_t vms = 0, window = f->end_ms - f->start_ms;
	char a[32], b[32];

	for (size_t i = 0; i < j->spec.npools; i++) {
		const struct spec_pool *p = &j->spec.pools[i];

		if (!p->machine_type || !p->accelerator_type)
			continue; /* a pool without GPUs runs beside the booking, on demand */
		check_pool(L, spec, i, p, f);
		vms += p->replica_count > 0 ? p->replica_count : 1;
	}
	if (vms > f->total_count)
		stack_err(L, at, "reservation: the job's worker pools with GPUs ask for %" PRId64 " VMs; %s books %" PRId64,
			  vms, f->d.address, f->total_count);
	/* Calendar mode ends the VMs at the window's end (the proto); a default
	 * booking's reservation outlives it. */
	if (f->calendar && j->spec.timeout_s > 0 && j->spec.timeout_s * 1000 > window) {
		dur_text(a, sizeof(a), j->spec.timeout_s * 1000);
		dur_text(b, sizeof(b), window);
		stack_warn(L, s && s->kind == YNODE_MAP && ynode_get(s, "timeout") ? ynode_get(s, "timeout") : at,
			   "spec.scheduling.timeout: %s is longer than %s's window (%s): Google ends the VMs when the "
			   "window closes, so a run still going then is stopped",
			   a, f->d.address, b);
	}
}

/* ---- the plan ---- */

/* The create-like actions a job in a window waits with. */
static int starts_run(enum plan_op op)
{
	return op == PLAN_CREATE || op == PLAN_RERUN || op == PLAN_RESUBMIT || op == PLAN_REPLACE;
}

int job_window_gate(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err)
{
	struct plan *p = &pl->plan;

	for (size_t i = 0; i < p->n; i++) {
		struct plan_action *a = &p->actions[i];
		const struct stack_job *j = a->kind_of == &kind_job ? job_action_job(a) : NULL;
		const struct stack_future *f = j && j->booking ? stack_find_future(in->st, j->booking) : NULL;
		char *name, *why;
		int rc;

		if (!f || !starts_run(a->op))
			continue;
		rc = future_window_ready(&name, &why, f, p, in->live, in->now_ms, in->st->project);
		if (rc < 0)
			return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
		if (rc == 0) {
			if (job_action_hold(p, a, why) < 0)
				return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
			continue;
		}
		free(job_action_mut(a)->window_reservation);
		job_action_mut(a)->window_reservation = name;
	}
	return 0;
}

/* ---- apply ---- */

/*
 * The action of booking (its NAME) in p when the booking's reservation stays
 * closed to Vertex AI: the plan relied on the booking's update opening it,
 * and that update is no longer in the plan (vx watch held it back, not
 * reviewed); else NULL.
 */
static const struct plan_action *left_closed(const struct plan *p, const char *booking)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *fa = &p->actions[i];
		const struct live_future *l = fa->klive;
		const char *name = fa->kind_of == &kind_future ? kind_address_name(&kind_future, fa->address) : NULL;

		if (name && !strcmp(name, booking))
			return l && !l->vertex_open && fa->op != PLAN_UPDATE ? fa : NULL;
	}
	return NULL;
}

const char *job_window_relies(const struct plan *p, const struct plan_action *a)
{
	const struct stack_job *j = job_action_job(a);
	const struct plan_action *fa;

	if (!j || !j->booking || !starts_run(a->op) || !job_action_of(a)->window_reservation)
		return NULL;
	fa = left_closed(p, j->booking);
	return fa ? fa->address : NULL;
}

int job_window_blocked(struct applier *a, const struct plan_action *pa)
{
	const struct stack_job *j = job_action_job(pa);
	const struct stack_future *f = j && j->booking ? stack_find_future(a->st, j->booking) : NULL;
	struct vx_err e = VX_ERR_INIT;

	if (!f)
		return 0;
	if (!job_action_of(pa)->window_reservation)
		vx_err_set(&e, VX_EINVAL, "not sent: no reservation delivered for %s is known", f->d.address);
	else if (left_closed(a->plan, f->d.name))
		vx_err_set(&e, VX_EINVAL, "not sent: %s's reservation is not open to Vertex AI, and this apply does "
					  "not open it (vxapply does)",
			   f->d.address);
	else if (applier_has_failed(a, f->d.address))
		vx_err_set(&e, VX_EINVAL, "not sent: it runs in %s's window, whose reservation was not opened to "
					  "Vertex AI",
			   f->d.address);
	else
		return 0;
	applier_fail(a, pa->address, plan_op_name(pa->op), &e);
	vx_err_release(&e);
	return 1;
}

/* Each pool's reservationAffinity.values[0] that is from, set to to. */
static int swap_values(cJSON *root, const char *from, const char *to)
{
	cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "workerPoolSpecs"), *pool;

	cJSON_ArrayForEach(pool, pools) {
		cJSON *ms = cJSON_GetObjectItemCaseSensitive(pool, "machineSpec");
		cJSON *aff = cJSON_GetObjectItemCaseSensitive(ms, "reservationAffinity");
		cJSON *vals = cJSON_GetObjectItemCaseSensitive(aff, "values");
		cJSON *v = cJSON_GetArrayItem(vals, 0);
		cJSON *s;

		if (!cJSON_IsString(v) || strcmp(v->valuestring, from) != 0)
			continue;
		if (!(s = cJSON_CreateString(to)) || !cJSON_ReplaceItemInArray(vals, 0, s)) {
			cJSON_Delete(s);
			return VX_ENOMEM;
		}
	}
	return 0;
}

int job_window_spec(char **out, const struct stack *st, const struct stack_job *j, const struct job_action *ja)
{
	const struct stack_future *f = j->booking ? stack_find_future(st, j->booking) : NULL;
	char *planned;
	cJSON *root;
	int rc;

	*out = NULL;
	if (!f || !ja->window_reservation)
		return 0;
	if (!(planned = job_window_planned_name(st->project, f)))
		return VX_ENOMEM;
	if (!strcmp(planned, ja->window_reservation)) {
		free(planned);
		return 0;
	}
	root = cJSON_Parse(j->spec.canonical_json);
	rc = root ? swap_values(root, planned, ja->window_reservation) : VX_ENOMEM;
	if (rc == 0 && !(*out = cJSON_PrintUnformatted(root)))
		rc = VX_ENOMEM;
	cJSON_Delete(root);
	free(planned);
	return rc;
}
