/*
 * The future reservation kind's apply (insert journaled before it is sent,
 * cancel, delete), vx import and vx status rows. See kind_future.c.
 */
#include "reconcile/kind_future_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/import.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/banned.h"

/* What was declared, as the record keeps it (names are [a-z0-9-]: nothing to escape). */
static char *spec_json(const char *zone, int calendar, int64_t start_ms, int64_t end_ms, int64_t count,
		       const char *mt, const char *at, int64_t ac)
{
	char s[VX_TIME_MAX], e[VX_TIME_MAX];

	vx_time_format(s, sizeof(s), start_ms, VX_TIME_SECONDS);
	vx_time_format(e, sizeof(e), end_ms, VX_TIME_SECONDS);
	return vx_asprintf("{\"zone\":\"%s\",\"mode\":\"%s\",\"start\":\"%s\",\"end\":\"%s\",\"totalCount\":%" PRId64
			   ",\"machineType\":\"%s\",\"acceleratorType\":%s%s%s,\"acceleratorCount\":%" PRId64 "}",
			   zone, calendar ? "calendar" : "default", s, e, count, mt ? mt : "", at ? "\"" : "",
			   at ? at : "null", at ? "\"" : "", ac);
}

/* Records an action on the booking as a run of its record. */
static int record_run(struct applier *a, const struct plan_action *pa, const char *action,
		      const struct live_future *l, const char *status, struct vx_err *err)
{
	const struct stack_future *d = pa->kdecl;
	struct state_record *r;
	struct state_run run;
	int rc;

	memset(&run, 0, sizeof(run));
	run.resource = l ? vx_asprintf("projects/%s/zones/%s/futureReservations/%s",
				       l->project ? l->project : a->opts->project, l->zone, l->name)
			 : NULL;
	run.project = vx_strdup(l && l->project ? l->project : a->opts->project);
	run.region = vx_strdup(l ? l->zone : d ? d->zone
					       : pa->region);
	run.action = vx_strdup(action);
	run.state = vx_strdup(status ? status : l && l->procurement_status ? l->procurement_status
									   : "unknown");
	run.has_value = 1;
	run.value = d ? d->total_count : l ? l->total_count
					   : 0;
	rc = applier_record_action(a, pa->address, FUTURE_KIND_NAME, d ? d->d.hash : NULL, &run, err);
	if (rc < 0 || !d || !(r = state_edit(a->state, pa->address)))
		return rc;
	r->protect = d->protect;
	free(r->spec_json);
	r->spec_json = spec_json(d->zone, d->calendar, d->start_ms, d->end_ms, d->total_count, d->machine_type,
				 d->accelerator, d->accelerator_count);
	return r->spec_json ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

/* A failed call (rc, e) of what on pa: counted, or, fenced, the apply stops. */
static int failed(struct applier *a, const struct plan_action *pa, const char *what, struct vx_err *e,
		  struct vx_err *err)
{
	if (applier_fenced(a)) {
		vx_err_release(e);
		return applier_fence_stop(a, err);
	}
	applier_fail(a, pa->address, what, e);
	applier_mark_failed(a, pa->address);
	vx_err_release(e);
	return 0;
}

/* Cancel (unless nothing is left to cancel), then delete: a cancel, a delete or a replace's first half. */
static int do_remove(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct live_future *l = pa->klive;
	const char *project = l && l->project ? l->project : a->opts->project;
	const char *name = strchr(pa->address, '.') + 1;
	int cancel = pa->op != PLAN_DELETE && l && !fr_status_dead(l->procurement_status);
	struct vx_err e = VX_ERR_INIT;
	int rc = 0;

	if (!l)
		return 0;
	if (cancel && (rc = provider_future_cancel(a->prov, project, l->zone, name, applier_fence(a), &e)) < 0)
		return failed(a, pa, pa->op == PLAN_REPLACE ? "replace (cancel)" : "cancel", &e, err);
	if (cancel && (rc = record_run(a, pa, "cancel", l, "CANCELLED", err)) < 0)
		return rc;
	rc = provider_future_del(a->prov, project, l->zone, name, applier_fence(a), &e);
	if (rc < 0 && rc != VX_ENOTFOUND)
		return failed(a, pa, pa->op == PLAN_REPLACE ? "replace (delete)" : "delete", &e, err);
	vx_err_release(&e);
	applier_progress(a, "- %s %s %s in %s", pa->address, cancel ? "cancel and delete" : "delete", name, l->zone);
	if (pa->op != PLAN_REPLACE) {
		(void)state_remove_record(a->state, pa->address);
		applier_progress(a, "- %s forget", pa->address);
		a->res->ok++;
	}
	return applier_persist(a, "vx: apply: future reservations removed", err);
}

/* Sends the insert of d; when its outcome is unknown, a list says whether it was made. */
static int send_create(struct applier *a, const struct stack_future *d, const char *id, const char *desc,
		       const char *mark, struct live_future *got, struct vx_err *e)
{
	struct provider_future_request req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.project = a->opts->project;
	req.zone = d->zone;
	req.name = d->d.name;
	req.description = desc;
	req.calendar = d->calendar;
	req.start_ms = d->start_ms;
	req.end_ms = d->end_ms;
	req.total_count = d->total_count;
	req.machine_type = d->machine_type;
	req.accelerator_type = d->accelerator;
	req.accelerator_count = d->accelerator_count;
	req.request_id = id;
	req.fence = applier_fence(a);
	rc = provider_future_create(a->prov, &req, got, e);
	if (rc == VX_EUNCERTAIN && !applier_fenced(a)) {
		struct live_futures fs = { 0 };
		struct vx_err e2 = VX_ERR_INIT;

		for (size_t i = 0; provider_future_list(a->prov, req.project, d->zone, &fs, &e2) == 0 && i < fs.n; i++)
			if (!strcmp(fs.items[i].name, d->d.name) && future_has_marker(&fs.items[i], mark)) {
				live_future_release(got);
				rc = live_future_copy(got, &fs.items[i]) < 0 ? VX_ENOMEM : 0;
				break;
			}
		live_futures_release(&fs);
		vx_err_release(&e2);
	}
	return rc;
}

static int do_create(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct stack_future *d = pa->kdecl;
	struct live_future got;
	char id[37], lin[13], *mark, *desc;
	struct vx_err e = VX_ERR_INIT;
	int rc;

	memset(&got, 0, sizeof(got));
	if ((rc = applier_intend_create_id(a, pa->address, id, err)) < 0)
		return rc;
	plan_lineage_label(lin, a->state->lineage);
	mark = future_marker(a->st->name, lin);
	desc = mark ? (d->description ? vx_asprintf("%s %s", d->description, mark) : vx_strdup(mark)) : NULL;
	if (!desc) {
		free(mark);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	rc = send_create(a, d, id, desc, mark, &got, &e);
	free(mark);
	free(desc);
	if (rc < 0) {
		live_future_release(&got);
		if (rc != VX_EUNCERTAIN && !applier_fenced(a))
			(void)state_journal_remove(a->state, pa->address);
		return failed(a, pa, "create", &e, err);
	}
	vx_err_release(&e);
	if (!got.zone)
		got.zone = vx_strdup(d->zone);
	if (!got.name)
		got.name = vx_strdup(d->d.name);
	if ((rc = record_run(a, pa, "create", &got, NULL, err)) == 0) {
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "+ %s book %s in %s (%" PRId64 " VMs, %s)", pa->address, d->d.name, d->zone,
				 d->total_count, got.procurement_status ? got.procurement_status : "submitted");
	}
	live_future_release(&got);
	return rc;
}

/* Opens each delivered reservation to Vertex AI, as the declaration asks (jobs run on it). */
static int do_open(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct live_future *l = pa->klive;
	const char *project = l->project ? l->project : a->opts->project;
	struct vx_err e = VX_ERR_INIT;
	int rc;

	for (size_t i = 0; i < l->n_auto_created; i++)
		if ((rc = provider_future_open_to_vertex(a->prov, project, l->zone, l->auto_created[i],
							 applier_fence(a), &e)) < 0)
			return failed(a, pa, "open to Vertex AI", &e, err);
	vx_err_release(&e);
	if ((rc = record_run(a, pa, "open", l, NULL, err)) == 0) {
		a->res->ok++;
		applier_progress(a, "~ %s open %s to Vertex AI", pa->address, l->auto_created[0]);
	}
	return rc;
}

static int apply_one(struct applier *a, const struct plan_action *pa, int removals, struct vx_err *err)
{
	int rc = 0;

	if (removals) {
		if (pa->op == PLAN_CANCEL || pa->op == PLAN_DELETE || pa->op == PLAN_REPLACE)
			return do_remove(a, pa, err);
		if (pa->op == PLAN_FORGET) {
			(void)state_remove_record(a->state, pa->address);
			a->res->ok++;
			applier_progress(a, "- %s forget", pa->address);
		}
		return 0;
	}
	if (pa->op == PLAN_CREATE || (pa->op == PLAN_REPLACE && !applier_has_failed(a, pa->address)))
		return do_create(a, pa, err);
	if (pa->op == PLAN_UPDATE && pa->klive && future_needs_opening(pa->klive))
		return do_open(a, pa, err);
	if (pa->op == PLAN_UPDATE) {
		if ((rc = record_run(a, pa, "update", pa->klive, NULL, err)) == 0) {
			a->res->ok++;
			applier_progress(a, "~ %s update (recorded)", pa->address);
		}
		return rc;
	}
	if (pa->op == PLAN_ADOPT) {
		rc = record_run(a, pa, "adopt", pa->klive, NULL, err);
		if (rc == 0) {
			(void)state_journal_remove(a->state, pa->address);
			a->res->ok++;
			applier_progress(a, "~ %s adopt %s", pa->address, strchr(pa->address, '.') + 1);
		}
	}
	return rc;
}

int future_apply(struct applier *a, int removals, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < a->plan->n && rc == 0 && !a->res->fenced; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_future)
			continue;
		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped++;
			continue;
		}
		if ((rc = apply_one(a, pa, removals, err)) == 0)
			rc = applier_heartbeat(a, err);
	}
	if (rc == 0)
		rc = applier_persist(a, removals ? "vx: apply: future reservations removed" : "vx: apply: future reservations", err);
	return rc;
}

/* ---- vx import ---------------------------------------------------------- */

struct fr_import {
	const struct import_request *req;
	const char *name;
	const struct stack_future *d;
	char zone[128];
	struct live_futures fs;
	const struct live_future *l;
	char *resource;
};

/* Checks the resource name against the declaration and reads the booking (the zone's list). */
static int fr_import_read(struct fr_import *fi, struct provider *p, const struct stack *st, struct vx_err *err)
{
	const struct import_request *req = fi->req;
	char proj[128], rname[128];
	int rc;

	if (import_split_name(req->resource, "zones", "futureReservations", proj, fi->zone, rname, sizeof(proj)) < 0)
		return vx_err_set(err, VX_EINVAL, "%s takes a Compute Engine future reservation, "
						  "projects/PROJECT/zones/ZONE/futureReservations/NAME, not '%s'",
				  req->address,
				  req->resource);
	if (strcmp(proj, st->project))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(fi->zone, fi->d->zone))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in zone %s, but %s is declared in zone %s", req->address,
				  req->resource, fi->zone, req->address, fi->d->zone);
	if (strcmp(rname, fi->name))
		return vx_err_set(err, VX_EINVAL, "%s: the future reservation must be named %s, as the address is, "
						  "not %s",
				  req->address, fi->name, rname);
	if (!PROVIDER_HAS(p, future, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list future reservations");
	if ((rc = provider_future_list(p, st->project, fi->zone, &fi->fs, err)) < 0) {
		rc = vx_err_wrap(err, "%s: reading future reservations in %s", req->address, fi->zone);
		return rc < 0 ? rc : VX_EIO;
	}
	for (size_t i = 0; i < fi->fs.n && !fi->l; i++)
		if (!strcmp(fi->fs.items[i].name, fi->name))
			fi->l = &fi->fs.items[i];
	if (!fi->l)
		return vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
	if (!(fi->resource = vx_asprintf("projects/%s/zones/%s/futureReservations/%s", st->project, fi->zone,
					 fi->name)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/* Tracked nowhere yet, and its marker, when it has one, this stack's and state's. */
static int fr_import_owner(const struct fr_import *fi, const struct state *state, const struct stack *st,
			   struct vx_err *err)
{
	const char *desc = fi->l->description, *mk;
	char lineage[13], *mark, *said;
	int rc;

	if ((rc = import_check_untracked(state, fi->req, fi->resource, err)) < 0)
		return rc;
	plan_lineage_label(lineage, state->lineage);
	if (!(mark = future_marker(st->name, lineage)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!desc || !(mk = strstr(desc, "vx: stack=")) || !strcmp(mk, mark)) {
		free(mark);
		return 0;
	}
	said = vx_text_clean(mk);
	rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is marked as another stack's or state's (its description says "
					   "\"%s\", this state's marker is \"%s\")",
			fi->req->address, fi->resource, said ? said : "?",
			mark);
	free(said);
	free(mark);
	return rc;
}

/* What import says: the booking's status, and how it differs (any change is a new booking). */
static int fr_import_outcome(const struct fr_import *fi, struct import_outcome *out, struct vx_err *err)
{
	const struct live_future *l = fi->l;
	const struct stack_future *d = fi->d;
	struct import_diffs df = { 0 };
	char a[64], b[64];
	int rc = 0;

	if (!vx_text_same(l->mode, d->calendar ? "CALENDAR" : "DEFAULT"))
		import_diff_add(&df, "mode", l->mode ? l->mode : "none", d->calendar ? "CALENDAR" : "DEFAULT");
	if (l->start_ms != d->start_ms || l->end_ms != d->end_ms)
		import_diff_add(&df, "window", "as listed", "as declared");
	if (l->total_count != d->total_count) {
		snprintf(a, sizeof(a), "%" PRId64, l->total_count);
		snprintf(b, sizeof(b), "%" PRId64, d->total_count);
		import_diff_add(&df, "totalCount", a, b);
	}
	if (!vx_text_same(l->machine_type, d->machine_type))
		import_diff_add(&df, "machineType", l->machine_type ? l->machine_type : "none", d->machine_type);
	if (df.oom)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	else if ((out->differs = import_diff_text(&df)))
		out->next = vx_strdup("the next plan cancels it and books again, where Google still accepts a cancel");
	out->resource = vx_strdup(fi->resource);
	out->status = vx_text_clean(l->procurement_status ? l->procurement_status : "unknown");
	if (rc == 0 && (!out->resource || !out->status || (out->differs && !out->next)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	vx_buf_release(&df.out);
	return rc;
}

static int fr_import_record(const struct fr_import *fi, const char *status, struct state *state,
			    const struct stack *st, struct vx_err *err)
{
	const struct live_future *l = fi->l;
	struct state_record *r = NULL;
	struct state_run run;
	int rc;

	if ((rc = import_run_init(&run, fi->req, fi->resource, st->project, fi->zone, fi->d->d.hash, l->create_ms,
				  err)) < 0)
		goto done;
	run.state = vx_strdup(status);
	run.has_value = 1;
	run.value = l->total_count;
	if ((rc = import_record_of(&r, state, fi->req, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(fi->d->d.hash);
	r->protect = fi->d->protect;
	r->spec_json = spec_json(fi->zone, l->mode && !strcmp(l->mode, "CALENDAR"), l->start_ms, l->end_ms,
				 l->total_count, l->machine_type, l->accelerator_type, l->accelerator_count);
	if (!r->spec_json || !r->spec_hash) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	return rc;
}

int future_import(struct import_outcome *out, struct state *state, struct provider *p, const struct stack *st,
		  const struct import_request *req, int check_only, struct vx_err *err)
{
	struct fr_import fi;
	int rc;

	memset(&fi, 0, sizeof(fi));
	fi.req = req;
	fi.name = strchr(req->address, '.') + 1;
	fi.d = stack_find_future(st, fi.name);
	if ((rc = fr_import_read(&fi, p, st, err)) == 0 && (rc = fr_import_owner(&fi, state, st, err)) == 0 &&
	    (rc = fr_import_outcome(&fi, out, err)) == 0 && !check_only)
		rc = fr_import_record(&fi, out->status, state, st, err);
	live_futures_release(&fi.fs);
	free(fi.resource);
	return rc;
}

/* ---- vx status ---------------------------------------------------------- */

static const struct status_values fr_status_values = { "VMs", "delivered", "count", "fulfilled" };

/* One row per declared booking: its procurement status, VMs booked and delivered. */
int future_status_rows(struct status_report *out, const struct status_input *in)
{
	for (size_t i = 0; i < stack_count(in->st, &kind_future); i++) {
		const struct stack_future *d = &stack_futures(in->st, NULL)[i];
		const struct live_future *l = future_live_find(in->live, d->zone, d->d.name);
		struct status_row *row = status_row_add(out, kind_future.prefix, d->d.address);

		if (!row || !(row->region = vx_strdup(d->zone)))
			return VX_ENOMEM;
		row->values = &fr_status_values;
		row->declared = 1;
		if (!l) {
			row->tracking = status_declared_tracking(in, d->d.address);
			continue;
		}
		row->listed = 1;
		row->has_value = row->has_value2 = 1;
		row->value = l->total_count;
		row->value2 = l->fulfilled_count;
		if ((l->procurement_status && !(row->state = vx_text_clean(l->procurement_status))) ||
		    !(row->resource = vx_text_clean(l->name)))
			return VX_ENOMEM;
	}
	return 0;
}
