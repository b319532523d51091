/*
 * The reservation kind: Compute Engine specific reservations of GPU VMs
 * that Vertex AI jobs of the stack consume (reservation.NAME).
 *
 * Compute reservations carry no labels (v1), so vx marks its own in the
 * description ("vx: stack=S lineage=L") and acts on a live reservation only
 * when that marker is this state's or the state knows it. A reservation that
 * holds capacity is never deleted to be re-created unless asked
 * (-replace): the capacity might not come back. A count change is a resize
 * in place; a removal waits for the stack's jobs on it to end.
 */
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/import.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/stack.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/ctx.h"
#include "util/banned.h"

#define KIND_NAME "Reservation"

/* The marker vx appends to the description of the reservations it makes. */
static char *marker(const char *stack, const char *lineage)
{
	return vx_asprintf("vx: stack=%s lineage=%s", stack, lineage);
}

static int has_marker(const struct live_reservation *l, const char *mark)
{
	const char *d = l->description;
	size_t n = strlen(mark), dn;

	if (!d)
		return 0;
	dn = strlen(d);
	return dn >= n && !strcmp(d + dn - n, mark) && (dn == n || d[dn - n - 1] == ' ');
}

/* The project and zone a recorded reservation lives in. */
static void record_place(const struct state_record *r, const struct stack *st, const char **project,
			 const char **zone)
{
	*project = r && r->current && r->current->project ? r->current->project : st->project;
	*zone = r && r->current ? r->current->region : NULL;
}

static const struct live_reservation *live_find(const struct live_set *live, const char *zone,
						const char *name)
{
	const struct live_reservations *rs = kind_live(live, &kind_reservation);

	for (size_t i = 0; rs && zone && i < rs->n; i++)
		if (!strcmp(rs->items[i].name, name) && rs->items[i].zone && !strcmp(rs->items[i].zone, zone))
			return &rs->items[i];
	return NULL;
}

static const char *decl_zone(const struct stack *st, size_t i)
{
	return stack_reservations(st, NULL)[i].zone;
}

static int list_zone(struct live_store *out, struct provider *p, const char *project, const char *zone,
		     struct vx_err *err)
{
	struct live_reservations *all = kind_live_slot(out, &kind_reservation), rs = { 0 };
	int rc;

	if (!PROVIDER_HAS(p, reservation, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list reservations");
	rc = provider_reservation_list(p, project, zone, &rs, err);
	for (size_t k = 0; k < rs.n && rc == 0; k++)
		if (live_reservations_push(all, &rs.items[k]) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	live_reservations_release(&rs);
	return rc;
}

/* One list per zone a declared or recorded reservation is in; none without any. */
static int res_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err)
{
	static const struct kind_places how = { "reservations", decl_zone, record_place, list_zone, NULL, NULL };

	return kind_refresh_places(&kind_reservation, &how, out, p, st, state, err);
}

static const char *accel_type(const struct stack_reservation *d)
{
	return d->naccelerators ? d->accelerators[0].type : NULL;
}

static int64_t accel_count(const struct stack_reservation *d)
{
	return d->naccelerators ? d->accelerators[0].count : 0;
}

/* What differs that Compute cannot change in place, in words, or NULL. */
static char *immutable_change(const struct stack_reservation *d, const struct live_reservation *l)
{
	if (!vx_text_same(d->zone, l->zone))
		return vx_asprintf("zone %s -> %s", l->zone, d->zone);
	if (!vx_text_same(d->machine_type, l->machine_type))
		return vx_asprintf("machineType %s -> %s", l->machine_type ? l->machine_type : "none",
				   d->machine_type);
	if (!vx_text_same(accel_type(d), l->accelerator_type) || accel_count(d) != l->accelerator_count)
		return vx_asprintf("accelerators %" PRId64 "x%s -> %" PRId64 "x%s", l->accelerator_count,
				   l->accelerator_type ? l->accelerator_type : "none", accel_count(d),
				   accel_type(d) ? accel_type(d) : "none");
	if (!d->specific_required != !l->specific_required)
		return vx_asprintf("specificReservationRequired %s -> %s",
				   l->specific_required ? "true" : "false",
				   d->specific_required ? "true" : "false");
	return NULL;
}

static struct plan_action *add(struct plan *p, enum plan_op k, const char *address, const void *d,
			       const struct live_reservation *l, const struct state_record *r)
{
	struct plan_action *a = plan_add_kind_action(p, k, &kind_reservation, address, d, l, r);

	if (!a)
		return NULL;
	a->has_values = 1;
	a->old_value = l ? l->count : -2;
	a->new_value = d ? ((const struct stack_reservation *)d)->count : -2;
	return a;
}

/*
 * The shape line: what the reservation is, where, and how much of it is in use.
 * A delete carries its zone as the action's region, which the plan prints after
 * the shape ("... (in use 0/2) in us-central1-a"): then the shape leaves it out.
 */
static char *describe(const struct plan_action *act)
{
	const struct stack_reservation *d = act->kdecl;
	const struct live_reservation *l = act->klive;
	const char *mt = d ? d->machine_type : l ? l->machine_type : NULL;
	const char *at = d ? accel_type(d) : l ? l->accelerator_type : NULL;
	int64_t ac = d ? accel_count(d) : l ? l->accelerator_count : 0;
	int64_t count = d ? d->count : l ? l->count : 0;
	const char *zone = d ? d->zone : l ? l->zone : NULL;
	char use[64] = "", where[96] = "";

	if (l)
		snprintf(use, sizeof(use), " (in use %" PRId64 "/%" PRId64 ")", l->in_use, l->count);
	if (!act->region)
		snprintf(where, sizeof(where), " in %s", zone ? zone : "?");
	if (!mt)
		return NULL;
	if (at)
		return vx_asprintf("%s \u00d7%" PRId64 ", %" PRId64 "\u00d7%s%s%s", mt, count, ac, at, where,
				   use);
	return vx_asprintf("%s \u00d7%" PRId64 "%s%s", mt, count, where, use);
}

/* Whether this plan cancels a job of the stack that runs on reservation name. */
static int cancels_jobs_on(const struct plan *p, const char *project, const char *zone, const char *name,
			   struct vx_buf *which)
{
	char *needle = vx_asprintf("\"projects/%s/zones/%s/reservations/%s\"", project, zone, name);
	int found = 0;

	for (size_t i = 0; needle && i < p->n; i++) {
		const struct plan_action *a = &p->actions[i];
		const struct state_record *r = a->krecord;

		if (a->kind_of != &kind_job || (a->op != PLAN_CANCEL && a->op != PLAN_REPLACE) || !r ||
		    !r->spec_json || !strstr(r->spec_json, needle))
			continue;
		if (vx_buf_printf(which, "%s%s", found++ ? ", " : "", a->address) < 0)
			break;
	}
	free(needle);
	return found;
}

/*
 * A declared reservation whose zone or shape changed (why says which; owned,
 * freed here): a plan error unless -replace names it, else a replace.
 */
static int plan_immutable(struct plan *p, const struct kind_plan_input *in, const struct stack_reservation *d,
			  const struct live_reservation *l, const struct state_record *r, char *why)
{
	struct plan_action *a;
	int rc;

	if (!why)
		return VX_ENOMEM;
	if (!kind_replaced(in, d->d.address)) {
		rc = vx_diags_add(&p->errors, NULL, 0, 0,
				  "%s: %s cannot change in place: Compute would have to delete the "
				  "reservation and make a new one, and the capacity it holds might not "
				  "come back; to do that anyway, plan with -replace %s",
				  d->d.address, why, d->d.address) < 0 ? VX_ENOMEM : 0;
		free(why);
		return rc;
	}
	a = add(p, PLAN_REPLACE, d->d.address, d, l, r);
	if (!a) {
		free(why);
		return VX_ENOMEM;
	}
	rc = plan_action_reason(a, vx_asprintf("%s (-replace): deleted, then created again", why));
	free(why);
	return rc;
}

/* A declared reservation not found live: created (again, if vx made it before). */
static int plan_missing(struct plan *p, const struct stack_reservation *d, const struct state_record *r)
{
	struct plan_action *a = add(p, PLAN_CREATE, d->d.address, d, NULL, r);
	int rc;

	if (!a)
		return VX_ENOMEM;
	if (r && r->current) {
		rc = plan_action_reason(a, vx_strdup("deleted outside vx: created again as declared"));
		if (rc == 0)
			rc = plan_action_drift(p, a, vx_asprintf("reservation %s was deleted outside vx", d->d.name));
		return rc;
	}
	return plan_action_reason(a, vx_strdup("new reservation"));
}

/* A declared reservation found live and recorded: resized, or left, and drift told. */
static int plan_known(struct plan *p, const struct stack_reservation *d, const struct live_reservation *l,
		      const struct state_record *r)
{
	struct plan_action *a;
	int rc = 0;

	if (l->count != d->count) {
		a = add(p, PLAN_UPDATE, d->d.address, d, l, r);
		if (!a)
			return VX_ENOMEM;
		rc = plan_action_reason(a, vx_asprintf("resize in place: count %" PRId64 " -> %" PRId64, l->count, d->count));
	} else {
		a = add(p, PLAN_NOOP, d->d.address, d, l, r);
		if (!a)
			return VX_ENOMEM;
	}
	if (rc == 0 && r->current && r->current->has_value && r->current->value != l->count)
		rc = plan_action_drift(p, a, vx_asprintf("count changed outside vx: %" PRId64 " recorded, %" PRId64 " live", r->current->value, l->count));
	return rc;
}

static int plan_declared(struct plan *p, const struct kind_plan_input *in, const void *decl, void *ud)
{
	const struct stack_reservation *d = decl;
	const char *mark = ud;
	const struct state_record *r = state_find(in->state, d->d.address);
	const char *rproject, *rzone;
	const struct live_reservation *l, *old = NULL;
	struct plan_action *a;
	char *why;

	record_place(r, in->st, &rproject, &rzone);
	l = live_find(in->live, d->zone, d->d.name);
	if (!l && rzone && strcmp(rzone, d->zone) != 0)
		old = live_find(in->live, rzone, d->d.name);
	if (!in->live) {
		/* Refresh off: from the state alone, a recorded reservation is as declared. */
		a = add(p, r ? PLAN_NOOP : PLAN_CREATE, d->d.address, d, NULL, r);
		return a ? plan_action_reason(a, vx_strdup(r ? "refresh off: not read" : "new reservation")) : VX_ENOMEM;
	}
	if (l && !has_marker(l, mark) && !r) {
		return vx_diags_add(&p->errors, NULL, 0, 0,
				    "%s: a reservation %s already exists in %s and is not this stack's (its "
				    "description has no \"%s\"); give the declaration another name",
				    d->d.address, d->d.name, d->zone, mark) < 0 ? VX_ENOMEM : 0;
	}
	if (old)
		return plan_immutable(p, in, d, old, r, vx_asprintf("zone %s -> %s", rzone, d->zone));
	if (l && (why = immutable_change(d, l)))
		return plan_immutable(p, in, d, l, r, why);
	if (!l)
		return plan_missing(p, d, r);
	if (!r) {
		a = add(p, PLAN_ADOPT, d->d.address, d, l, r);
		return a ? plan_action_reason(a, vx_asprintf("a reservation %s with this stack's marker exists in %s: "
							     "an earlier apply created it",
							     d->d.name, d->zone))
			 : VX_ENOMEM;
	}
	return plan_known(p, d, l, r);
}

static int plan_removed(struct plan *p, const struct kind_plan_input *in, const struct state_record *r,
			void *ud)
{
	const char *name = strchr(r->address, '.') + 1, *project, *zone;
	const struct live_reservation *l;
	struct vx_buf which = VX_BUF_INIT;
	struct plan_action *a;
	int rc = 0;

	(void)ud;

	record_place(r, in->st, &project, &zone);
	l = live_find(in->live, zone, name);
	if (in->live && !l) {
		a = add(p, PLAN_FORGET, r->address, NULL, NULL, r);
		return a ? plan_action_reason(a, vx_strdup("no longer declared, and already gone (history stays in git)"))
			 : VX_ENOMEM;
	}
	if (r->protect)
		return vx_diags_add(&p->errors, NULL, 0, 0, "%s is protected (protect: true): it is no longer "
				    "declared; deleting it is refused", r->address) < 0 ? VX_ENOMEM : 0;
	if (l && l->in_use > 0 && !cancels_jobs_on(p, project, zone, name, &which)) {
		rc = vx_diags_add(&p->errors, NULL, 0, 0,
				  "%s is no longer declared but %" PRId64 " of its %" PRId64 " VMs are in use, "
				  "and no cancel in this plan frees them (a job of another stack, or one made "
				  "outside vx); it is not deleted", r->address, l->in_use, l->count) < 0
			? VX_ENOMEM : 0;
		vx_buf_release(&which);
		return rc;
	}
	a = add(p, PLAN_DELETE, r->address, NULL, l, r);
	if (!a)
		rc = VX_ENOMEM;
	else if (which.len)
		rc = plan_action_reason(a, vx_asprintf("no longer declared; deleted once the jobs on it have ended (%s)",
						       vx_buf_str(&which)));
	else
		rc = plan_action_reason(a, vx_strdup("no longer declared"));
	if (rc == 0 && a) {
		free(a->region);
		a->region = vx_strdup(zone);
	}
	vx_buf_release(&which);
	return rc;
}

static int res_plan(struct planner *pl, const struct kind_plan_input *in, struct vx_err *err)
{
	static const struct kind_plan_steps how = { "reservations", plan_declared, plan_removed, describe };
	char *mark = marker(in->st->name, in->lineage);
	int rc = mark ? kind_plan_each(&kind_reservation, &how, &pl->plan, in, mark, err)
		      : vx_err_set(err, VX_ENOMEM, "planning reservations: out of memory");

	free(mark);
	return rc;
}

/* ---- apply ------------------------------------------------------------- */

/* Records an action on the reservation as a run of its record. */
static int record_run(struct applier *a, const struct plan_action *pa, const char *action,
		      const struct live_reservation *l, int64_t count, struct vx_err *err)
{
	const struct stack_reservation *d = pa->kdecl;
	struct state_record *r;
	struct state_run run;
	int rc;

	memset(&run, 0, sizeof(run));
	run.resource = l ? vx_asprintf("projects/%s/zones/%s/reservations/%s", l->project ? l->project
					: a->opts->project, l->zone, l->name) : NULL;
	run.project = vx_strdup(l && l->project ? l->project : a->opts->project);
	run.region = vx_strdup(l ? l->zone : d ? d->zone : pa->region);
	run.action = vx_strdup(action);
	run.state = vx_strdup(l && l->status ? l->status : "READY");
	run.value = count;
	rc = applier_record_action(a, pa->address, KIND_NAME, d ? d->d.hash : NULL, &run, err);
	if (rc < 0 || !d || !(r = state_edit(a->state, pa->address)))
		return rc;
	/* What was declared, for the next plan's diff and for vx state show. The
	 * loader allows only [a-z0-9-] in these strings: nothing to escape. */
	r->protect = d->protect;
	free(r->spec_json);
	r->spec_json = vx_asprintf("{\"zone\":\"%s\",\"machineType\":\"%s\",\"acceleratorType\":%s%s%s,"
				   "\"acceleratorCount\":%" PRId64 ",\"count\":%" PRId64
				   ",\"specificReservationRequired\":%s}", d->zone, d->machine_type,
				   accel_type(d) ? "\"" : "", accel_type(d) ? accel_type(d) : "null",
				   accel_type(d) ? "\"" : "", accel_count(d), d->count,
				   d->specific_required ? "true" : "false");
	return r->spec_json ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

static int list_one(struct applier *a, const char *project, const char *zone, const char *name,
		    struct live_reservation *out, struct vx_err *err)
{
	struct live_reservations rs = { 0 };
	int rc = provider_reservation_list(a->prov, project, zone, &rs, err);

	if (rc < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < rs.n && rc == 0; i++)
		if (!strcmp(rs.items[i].name, name))
			rc = live_reservation_copy(out, &rs.items[i]) < 0 ? VX_ENOMEM : 1;
	live_reservations_release(&rs);
	return rc;
}

/*
 * The stack's jobs on it were cancelled in this apply: wait until no VM
 * uses it, up to ctx->reservation_wait_ms (default 300 s). Returns 1 when
 * free, 0 when still in use (left for the next apply), < 0 on error.
 */
static int wait_free(struct applier *a, const struct plan_action *pa, const char *project,
		     const char *zone, struct vx_err *err)
{
	int64_t limit = a->ctx->reservation_wait_ms ? a->ctx->reservation_wait_ms : 300000;
	int64_t start = vx_mono_ms(a->ctx);
	const char *name = strchr(pa->address, '.') + 1;

	for (;;) {
		struct live_reservation l;
		int rc;

		memset(&l, 0, sizeof(l));
		rc = list_one(a, project, zone, name, &l, err);
		if (rc <= 0)
			return rc < 0 ? rc : 1; /* gone already counts as free */
		rc = l.in_use == 0;
		live_reservation_release(&l);
		if (rc)
			return 1;
		if (vx_mono_ms(a->ctx) - start >= limit || vx_interrupted(a->ctx))
			return 0;
		vx_sleep_ms(a->ctx, 2000);
	}
}

static int do_delete(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct state_record *r = pa->krecord;
	const char *project = r && r->current && r->current->project ? r->current->project : a->opts->project;
	const char *zone = pa->klive ? ((const struct live_reservation *)pa->klive)->zone
				     : r && r->current ? r->current->region : NULL;
	const char *name = strchr(pa->address, '.') + 1;
	const char *verb = pa->op == PLAN_REPLACE ? "replace (delete)" : "delete";
	struct vx_err e = VX_ERR_INIT;
	int rc;

	if (!zone)
		return 0;
	rc = wait_free(a, pa, project, zone, &e);
	if (rc == 0) {
		vx_err_set(&e, VX_ECONFLICT, "its VMs are still in use after the jobs on it were cancelled; "
			   "left for the next apply");
		applier_fail(a, pa->address, verb, &e);
		applier_mark_failed(a, pa->address);
		vx_err_release(&e);
		return 0;
	}
	if (rc > 0)
		rc = provider_reservation_del(a->prov, project, zone, name, applier_fence(a), &e);
	if (rc < 0 && rc != VX_ENOTFOUND) {
		if (applier_fenced(a)) {
			vx_err_release(&e);
			return applier_fence_stop(a, err);
		}
		applier_fail(a, pa->address, verb, &e);
		applier_mark_failed(a, pa->address);
		vx_err_release(&e);
		return 0;
	}
	vx_err_release(&e);
	if ((rc = record_run(a, pa, "delete", NULL, 0, err)) < 0)
		return rc;
	applier_progress(a, "- %s delete %s in %s", pa->address, name, zone);
	if ((rc = applier_persist(a, "vx: apply: reservations deleted", err)) < 0)
		return rc;
	if (pa->op == PLAN_DELETE) {
		(void)state_remove_record(a->state, pa->address);
		applier_progress(a, "- %s forget", pa->address);
		a->res->ok++;
	}
	return 0;
}

/*
 * Sends the insert of d with requestId id and description desc (which
 * carries mark); when its outcome is unknown, a list by name says whether it
 * was made (the name is unique in its zone). The provider's answer.
 */
static int send_create(struct applier *a, const struct stack_reservation *d, const char *id, const char *desc,
		       const char *mark, struct live_reservation *got, struct vx_err *e)
{
	struct provider_reservation_request req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.project = a->opts->project;
	req.zone = d->zone;
	req.name = d->d.name;
	req.description = desc;
	req.machine_type = d->machine_type;
	req.accelerator_type = accel_type(d);
	req.accelerator_count = accel_count(d);
	req.count = d->count;
	req.specific_required = d->specific_required;
	req.request_id = id;
	req.fence = applier_fence(a);
	rc = provider_reservation_create(a->prov, &req, got, e);
	if (rc == VX_EUNCERTAIN && !applier_fenced(a)) {
		struct vx_err e2 = VX_ERR_INIT;
		int found = list_one(a, a->opts->project, d->zone, d->d.name, got, &e2);

		if (found == 1 && has_marker(got, mark))
			rc = 0;
		vx_err_release(&e2);
	}
	return rc;
}

/* A create that failed (rc, e): counted, its journal entry dropped when nothing
 * can have been made; or, fenced, the apply stops. */
static int create_failed(struct applier *a, const struct plan_action *pa, int rc, struct vx_err *e,
			 struct vx_err *err)
{
	if (applier_fenced(a)) {
		vx_err_release(e);
		return applier_fence_stop(a, err);
	}
	if (rc != VX_EUNCERTAIN)
		(void)state_journal_remove(a->state, pa->address);
	applier_fail(a, pa->address, "create", e);
	applier_mark_failed(a, pa->address);
	vx_err_release(e);
	return 0;
}

static int do_create(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct stack_reservation *d = pa->kdecl;
	struct live_reservation got;
	char id[37], lin[13], *mark, *desc;
	struct vx_err e = VX_ERR_INIT;
	int rc;

	memset(&got, 0, sizeof(got));
	if ((rc = applier_intend_create_id(a, pa->address, id, err)) < 0)
		return rc;
	plan_lineage_label(lin, a->state->lineage);
	mark = marker(a->st->name, lin);
	desc = mark ? (d->description ? vx_asprintf("%s %s", d->description, mark) : vx_strdup(mark)) : NULL;
	if (!desc) {
		free(mark);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	rc = send_create(a, d, id, desc, mark, &got, &e);
	free(mark);
	free(desc);
	if (rc < 0) {
		live_reservation_release(&got);
		return create_failed(a, pa, rc, &e, err);
	}
	vx_err_release(&e);
	if (!got.zone)
		got.zone = vx_strdup(d->zone);
	if (!got.name)
		got.name = vx_strdup(d->d.name);
	rc = record_run(a, pa, "create", &got, d->count, err);
	if (rc == 0) {
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "+ %s create %s in %s (%" PRId64 " VMs)", pa->address, d->d.name, d->zone,
				 d->count);
	}
	live_reservation_release(&got);
	return rc;
}

static int do_resize(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct stack_reservation *d = pa->kdecl;
	const struct live_reservation *l = pa->klive;
	struct vx_err e = VX_ERR_INIT;
	int rc = provider_reservation_resize(a->prov, l->project ? l->project : a->opts->project, l->zone,
					     l->name, d->count, applier_fence(a), &e);

	if (rc < 0) {
		if (applier_fenced(a)) {
			vx_err_release(&e);
			return applier_fence_stop(a, err);
		}
		applier_fail(a, pa->address, "resize", &e);
		applier_mark_failed(a, pa->address);
		vx_err_release(&e);
		return 0;
	}
	vx_err_release(&e);
	if ((rc = record_run(a, pa, "resize", l, d->count, err)) < 0)
		return rc;
	a->res->ok++;
	applier_progress(a, "~ %s resize %" PRId64 " -> %" PRId64, pa->address, l->count, d->count);
	return 0;
}

static int res_apply(struct applier *a, int removals, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < a->plan->n && rc == 0 && !a->res->fenced; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_reservation)
			continue;
		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped++;
			continue;
		}
		if (removals) {
			if (pa->op == PLAN_DELETE || pa->op == PLAN_REPLACE)
				rc = do_delete(a, pa, err);
			else if (pa->op == PLAN_FORGET) {
				(void)state_remove_record(a->state, pa->address);
				a->res->ok++;
				applier_progress(a, "- %s forget", pa->address);
			}
			continue;
		}
		switch (pa->op) {
		case PLAN_CREATE:
			rc = do_create(a, pa, err);
			break;
		case PLAN_REPLACE:
			if (!applier_has_failed(a, pa->address))
				rc = do_create(a, pa, err);
			break;
		case PLAN_ADOPT:
			rc = record_run(a, pa, "adopt", pa->klive, ((const struct live_reservation *)pa->klive)->count,
					err);
			if (rc == 0) {
				(void)state_journal_remove(a->state, pa->address);
				a->res->ok++;
				applier_progress(a, "~ %s adopt %s", pa->address, strchr(pa->address, '.') + 1);
			}
			break;
		case PLAN_UPDATE:
			rc = do_resize(a, pa, err);
			break;
		default:
			break;
		}
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	if (rc == 0)
		rc = applier_persist(a, removals ? "vx: apply: reservations removed" : "vx: apply: reservations", err);
	return rc;
}

/* ---- vx import (the kind's import slot, reconcile/import.h) ---------------- */

/* What one reservation import has read, step by step. */
struct res_import {
	const struct import_request *req;
	const char *name; /* the address's NAME, also Compute's name */
	const struct stack_reservation *d;
	char zone[128]; /* the resource's zone, as long as the whole name may be */
	struct live_reservations rs;
	const struct live_reservation *l; /* the one of rs imported */
	char *resource;			  /* projects/P/zones/Z/reservations/NAME */
};

/*
 * Checks the resource name against the declaration and reads the
 * reservation (the zone's list: Compute has no get vx uses).
 */
static int res_import_read(struct res_import *ri, struct provider *p, const struct stack *st,
			   struct vx_err *err)
{
	const struct import_request *req = ri->req;
	char proj[128], rname[128];
	int rc;

	if (import_split_name(req->resource, "zones", "reservations", proj, ri->zone, rname, sizeof(proj)) < 0)
		return vx_err_set(err, VX_EINVAL,
				  "%s takes a Compute Engine reservation, projects/PROJECT/zones/ZONE/reservations/NAME, not '%s'",
				  req->address, req->resource);
	if (strcmp(proj, st->project))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(ri->zone, ri->d->zone))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in zone %s, but %s is declared in zone %s",
				  req->address, req->resource, ri->zone, req->address, ri->d->zone);
	/* vx finds a reservation by the address's name: another name could not be found again. */
	if (strcmp(rname, ri->name))
		return vx_err_set(err, VX_EINVAL, "%s: the reservation must be named %s, as the address is, not %s",
				  req->address, ri->name, rname);
	if (!PROVIDER_HAS(p, reservation, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list reservations");
	if ((rc = provider_reservation_list(p, st->project, ri->zone, &ri->rs, err)) < 0) {
		/* vx_err_wrap returns err's code, negative (the analyzer cannot see it). */
		rc = vx_err_wrap(err, "%s: reading reservations in %s", req->address, ri->zone);
		return rc < 0 ? rc : VX_EIO;
	}
	for (size_t i = 0; i < ri->rs.n && !ri->l; i++)
		if (ri->rs.items[i].name && !strcmp(ri->rs.items[i].name, ri->name) && ri->rs.items[i].zone &&
		    !strcmp(ri->rs.items[i].zone, ri->zone))
			ri->l = &ri->rs.items[i];
	if (!ri->l)
		return vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
	if (!(ri->resource = vx_asprintf("projects/%s/zones/%s/reservations/%s", st->project, ri->zone, ri->name)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/*
 * Whether the reservation may be this address's: tracked nowhere yet, and
 * its description's marker, when it has one, this stack's and state's.
 */
static int res_import_owner(const struct res_import *ri, const struct state *state, const struct stack *st,
			    struct vx_err *err)
{
	const struct import_request *req = ri->req;
	const char *desc = ri->l->description, *mk;
	char lineage[13], *mark, *said;
	int rc;

	if ((rc = import_check_untracked(state, req, ri->resource, err)) < 0)
		return rc;
	/* The description marker names the stack and state that made it; another's is theirs. */
	plan_lineage_label(lineage, state->lineage);
	if (!(mark = marker(st->name, lineage)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!desc || !(mk = strstr(desc, "vx: stack=")) || !strcmp(mk, mark)) {
		free(mark);
		return 0;
	}
	said = vx_text_clean(mk);
	if (state->serial == 0) /* as for jobs: no lineage written, no marker to name */
		rc = vx_err_set(err, VX_ECONFLICT,
				"%s: %s is marked as another stack's or state's (its description says \"%s\"; "
				"stack %s has no state yet, so no marker of its own)",
				req->address, ri->resource, said ? said : "?", st->name);
	else
		rc = vx_err_set(err, VX_ECONFLICT,
				"%s: %s is marked as another stack's or state's (its description says \"%s\", "
				"this state's marker is \"%s\")",
				req->address, ri->resource, said ? said : "?", mark);
	free(said);
	free(mark);
	return rc;
}

/*
 * The differences, live -> declared, into *df; *immutable set when one of
 * them is what Compute cannot change in place (all but the count).
 */
static void res_import_diffs(struct import_diffs *df, int *immutable, const struct live_reservation *l,
			     const struct stack_reservation *d)
{
	const char *daccel = d->naccelerators ? d->accelerators[0].type : NULL;
	int64_t dcount = d->naccelerators ? d->accelerators[0].count : 0;
	char a[64], b[64];

	if (!l->machine_type || !d->machine_type || strcmp(l->machine_type, d->machine_type)) {
		import_diff_add(df, "machineType", l->machine_type, d->machine_type);
		*immutable = 1;
	}
	if ((!l->accelerator_type) != (!daccel) || (daccel && strcmp(l->accelerator_type, daccel)) ||
	    l->accelerator_count != dcount) {
		snprintf(a, sizeof(a), "%" PRId64 "x%s", l->accelerator_count,
			 l->accelerator_type ? l->accelerator_type : "none");
		snprintf(b, sizeof(b), "%" PRId64 "x%s", dcount, daccel ? daccel : "none");
		import_diff_add(df, "accelerators", a, b);
		*immutable = 1;
	}
	if (!l->specific_required != !d->specific_required) {
		import_diff_add(df, "specificReservationRequired", l->specific_required ? "true" : "false",
				d->specific_required ? "true" : "false");
		*immutable = 1;
	}
	if (l->count != d->count) {
		snprintf(a, sizeof(a), "%" PRId64, l->count);
		snprintf(b, sizeof(b), "%" PRId64, d->count);
		import_diff_add(df, "count", a, b);
	}
}

/* What import says of the reservation: its name and status, and how it differs. */
static int res_import_outcome(const struct res_import *ri, struct import_outcome *out, struct vx_err *err)
{
	struct import_diffs df = { 0 };
	int immutable = 0, rc = 0;

	res_import_diffs(&df, &immutable, ri->l, ri->d);
	if (df.oom) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	out->differs = import_diff_text(&df);
	if (out->differs && immutable)
		out->next = vx_asprintf("the next plan refuses it, as Compute cannot change that in place, "
					"unless planned with -replace %s",
					ri->req->address);
	else if (out->differs)
		out->next = vx_strdup("the next plan will resize it in place");
	out->resource = vx_strdup(ri->resource);
	out->status = vx_text_clean(ri->l->status ? ri->l->status : "unknown");
	if (!out->resource || !out->status || (out->differs && !out->next))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	vx_buf_release(&df.out);
	return rc;
}

/*
 * What is live, in the form an apply records the declaration in. Compute
 * names are [a-z0-9-]: nothing to escape, but they came from a server.
 */
static char *res_import_spec_json(const struct live_reservation *l, const char *zone)
{
	struct vx_buf js = VX_BUF_INIT;

	if (vx_buf_adds(&js, "{\"zone\":") < 0 || vx_buf_add_json_str(&js, zone) < 0 ||
	    vx_buf_adds(&js, ",\"machineType\":") < 0 ||
	    vx_buf_add_json_str(&js, l->machine_type ? l->machine_type : "") < 0 ||
	    vx_buf_adds(&js, ",\"acceleratorType\":") < 0 ||
	    (l->accelerator_type ? vx_buf_add_json_str(&js, l->accelerator_type) : vx_buf_adds(&js, "null")) < 0 ||
	    vx_buf_printf(&js, ",\"acceleratorCount\":%" PRId64 ",\"count\":%" PRId64, l->accelerator_count,
			  l->count) < 0 ||
	    vx_buf_printf(&js, ",\"specificReservationRequired\":%s}", l->specific_required ? "true" : "false") < 0) {
		vx_buf_release(&js);
		return NULL;
	}
	return vx_buf_detach(&js);
}

/* The record of the reservation, as live, with one run: the import. */
static int res_import_record(const struct res_import *ri, const char *status, struct state *state,
			     const struct stack *st, struct vx_err *err)
{
	const struct live_reservation *l = ri->l;
	struct state_record *r = NULL;
	struct state_run run;
	int rc;

	if ((rc = import_run_init(&run, ri->req, ri->resource, st->project, ri->zone, ri->d->d.hash,
				  l->create_ms, err)) < 0)
		goto done;
	run.state = vx_strdup(status);
	run.has_value = 1;
	run.value = l->count;
	if ((rc = import_record_of(&r, state, ri->req, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(ri->d->d.hash);
	r->protect = ri->d->protect;
	if (!(r->spec_json = res_import_spec_json(l, ri->zone))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	return rc;
}

static int res_import(struct import_outcome *out, struct state *state, struct provider *p,
		      const struct stack *st, const struct import_request *req, int check_only,
		      struct vx_err *err)
{
	struct res_import ri;
	int rc;

	memset(&ri, 0, sizeof(ri));
	ri.req = req;
	ri.name = strchr(req->address, '.') + 1;
	ri.d = stack_find_reservation(st, ri.name);
	if ((rc = res_import_read(&ri, p, st, err)) == 0 && (rc = res_import_owner(&ri, state, st, err)) == 0 &&
	    (rc = res_import_outcome(&ri, out, err)) == 0 && !check_only)
		rc = res_import_record(&ri, out->status, state, st, err);
	live_reservations_release(&ri.rs);
	free(ri.resource);
	return rc;
}

/* ---- vx status (the kind's status_rows slot, reconcile/status.h) ----------- */

static const struct live_reservation *live_reservation_of(const struct live_set *live, const char *name)
{
	const struct live_reservations *rs = kind_live(live, &kind_reservation);

	for (size_t i = 0; rs && i < rs->n; i++)
		if (rs->items[i].name && !strcmp(rs->items[i].name, name))
			return &rs->items[i];
	return NULL;
}

static const struct status_values res_status_values = { "count", "in use", "count", "in_use" };

/* One row per declared reservation: what the zone's listing says of it. */
static int res_status_rows(struct status_report *out, const struct status_input *in)
{
	const struct stack *st = in->st;

	for (size_t i = 0; i < stack_count(st, &kind_reservation); i++) {
		const struct stack_reservation *d = &stack_reservations(st, NULL)[i];
		const struct live_reservation *lr = live_reservation_of(in->live, d->d.name);
		struct status_row *row = status_row_add(out, kind_reservation.prefix, d->d.address);

		if (!row || !(row->region = vx_text_clean(lr && lr->zone ? lr->zone : d->zone)))
			return VX_ENOMEM;
		row->values = &res_status_values;
		if (!lr) {
			row->tracking = status_declared_tracking(in, d->d.address);
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
	return 0;
}

/*
 * A reservation's action holds VMs: the declared machine when declared,
 * else the live one's (a reservation no longer declared, being deleted).
 */
static void res_capacity(const struct plan_action *a, struct kind_capacity *out)
{
	const struct stack_reservation *sr = a->kdecl;
	const struct live_reservation *lr = a->klive;

	out->holds = 1;
	if (sr) {
		out->zone = sr->zone;
		out->machine_type = sr->machine_type;
		out->accelerator = sr->naccelerators ? sr->accelerators[0].type : NULL;
		out->accelerator_count = sr->naccelerators ? sr->accelerators[0].count : 0;
	} else if (lr) {
		out->zone = lr->zone;
		out->machine_type = lr->machine_type;
		out->accelerator = lr->accelerator_type;
		out->accelerator_count = lr->accelerator_count;
	}
}

/* A declared reservation's machines, with the live one's count and use when listed. */
static void res_held(const struct stack *st, const struct live_set *live, size_t i,
		     struct kind_held *out)
{
	const struct stack_reservation *sr = &stack_reservations(st, NULL)[i];
	const struct live_reservations *rs = kind_live(live, &kind_reservation);
	const struct live_reservation *lr = NULL;

	for (size_t k = 0; rs && k < rs->n && !lr; k++)
		if (!strcmp(rs->items[k].name, sr->d.name) && rs->items[k].zone &&
		    !strcmp(rs->items[k].zone, sr->zone))
			lr = &rs->items[k];
	out->address = sr->d.address;
	out->name = sr->d.name;
	out->zone = sr->zone;
	out->machine_type = sr->machine_type;
	out->accelerator = sr->naccelerators ? sr->accelerators[0].type : NULL;
	out->accelerator_count = sr->naccelerators ? sr->accelerators[0].count : 0;
	out->count = lr ? lr->count : sr->count;
	out->in_use = lr ? lr->in_use : 0;
}

static void res_live_release(void *live)
{
	live_reservations_release(live);
}

const struct kind kind_reservation = {
	.name = KIND_NAME,
	.prefix = "reservation",
	.rfc1035_names = 1,
	.refresh = res_refresh,
	.plan = res_plan,
	.apply = res_apply,
	.cost = KIND_COST_HELD,
	.capacity = res_capacity,
	.noun = "reservation",
	.noun_plural = "reservations",
	.decl_size = sizeof(struct stack_reservation),
	.import = res_import,
	.status_rows = res_status_rows,
	.live_size = sizeof(struct live_reservations),
	.live_release = res_live_release,
	.load_alloc = kind_reservation_load_alloc,
	.load_read = kind_reservation_load_read,
	.decl_hash = kind_reservation_decl_hash,
	.decl_release = kind_reservation_decl_release,
	.limits_service = "compute.googleapis.com",
	.held = res_held,
	.import_form = "projects/P/zones/ZONE/reservations/NAME",
	.policy_allow = "reservations",
};
