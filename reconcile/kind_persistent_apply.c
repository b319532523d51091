/*
 * The persistent resource kind's apply (its row's apply slot): creates with
 * an intent journaled before anything is sent, in-place updates, deletes,
 * abandons and adoptions, each recorded as a run of the address's record.
 *
 * A create whose answer is lost, or that meets ALREADY_EXISTS (an earlier
 * create that died before recording it), lists the region: a resource of
 * that id carrying this stack's and state's labels is the one asked for
 * and is recorded; anything else is someone else's and the create fails.
 * The id is the name, so there are never two resources for one address.
 */
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/apply.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_persistent_internal.h"
#include "reconcile/plan.h"
#include "reconcile/provider_persistent.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

/* What was declared, as the record keeps it: deletionPolicy first (persistent_record_abandons). */
char *persistent_record_json(const struct stack_persistent *d)
{
	struct vx_buf b = VX_BUF_INIT;

	if (vx_buf_printf(&b, "{\"deletionPolicy\":\"%s\",\"onError\":\"%s\",\"region\":",
			  d->abandon ? "abandon" : "delete", d->on_error ? "replace" : "keep") < 0 ||
	    vx_buf_add_json_str(&b, d->region) < 0 || vx_buf_printf(&b, ",\"spec\":%s}", d->spec_json) < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

/* Records an action on the resource as a run of its record (l: as live after it, or NULL). */
static int record_run(struct applier *a, const struct plan_action *pa, const char *action,
		      const struct live_persistent *l, struct vx_err *err)
{
	const struct stack_persistent *d = pa->kdecl;
	const char *project = l && l->project ? l->project : a->opts->project;
	const char *region = l ? l->region : d ? d->region
					       : pa->region;
	struct state_record *r;
	struct state_run run;
	int rc;

	memset(&run, 0, sizeof(run));
	run.resource = l ? vx_asprintf("projects/%s/locations/%s/persistentResources/%s", project, l->region, l->id)
			 : NULL;
	run.project = vx_strdup(project);
	run.region = vx_strdup(region);
	run.action = vx_strdup(action);
	run.state = vx_strdup(l && l->state ? l->state : "STATE_UNKNOWN");
	run.has_value = 1;
	run.value = 0;
	for (size_t i = 0; l && i < l->npools; i++)
		run.value += l->pools[i].replica_count;
	if (l && l->error_message)
		run.error_message = vx_strdup(l->error_message);
	rc = applier_record_action(a, pa->address, kind_persistent.name, d ? d->d.hash : NULL, &run, err);
	if (rc < 0 || !d || !(r = state_edit(a->state, pa->address)))
		return rc;
	r->protect = d->protect;
	free(r->spec_json);
	r->spec_json = persistent_record_json(d);
	return r->spec_json ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

/* The resource id of region as listed now: *out, 1; 0 when there is none. */
static int list_one(struct applier *a, const char *project, const char *region, const char *id,
		    struct live_persistent *out, struct vx_err *err)
{
	struct live_persistents rs = { 0 };
	int rc = provider_persistent_list(a->prov, project, region, &rs, err);

	if (rc < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < rs.n && rc == 0; i++)
		if (rs.items[i].id && !strcmp(rs.items[i].id, id))
			rc = live_persistent_copy(out, &rs.items[i]) < 0 ? VX_ENOMEM : 1;
	live_persistents_release(&rs);
	return rc;
}

/* A change that failed (e): counted and told; or, fenced, the apply stops. */
static int change_failed(struct applier *a, const struct plan_action *pa, const char *what, struct vx_err *e,
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

/* The labels every resource vx makes carries, with the user's: *out (sorted). */
static int create_labels(struct applier *a, const struct stack_persistent *d, struct vx_label **out, size_t *n)
{
	char lin[13];
	int rc = vx_labels_copy(out, n, d->labels.items, d->labels.n);

	plan_lineage_label(lin, a->state->lineage);
	if (rc == 0)
		rc = vx_labels_set(out, n, "vx-stack", a->st->name);
	if (rc == 0)
		rc = vx_labels_set(out, n, "vx-lineage", lin);
	return rc;
}

/*
 * Sends the create; when its outcome is unknown or the id is taken, the
 * region's list says whether ours exists (by id and labels): then it is
 * the one made. The provider's answer, *got the resource.
 */
static int send_create(struct applier *a, const struct stack_persistent *d, const struct vx_label *labels,
		       size_t nlabels, struct live_persistent *got, struct vx_err *e)
{
	struct provider_persistent_request req;
	char lin[13];
	int rc;

	memset(&req, 0, sizeof(req));
	req.project = a->opts->project;
	req.region = d->region;
	req.id = d->d.name;
	req.spec_json = d->spec_json;
	req.labels = labels;
	req.nlabels = nlabels;
	req.fence = applier_fence(a);
	rc = provider_persistent_create(a->prov, &req, got, e);
	if ((rc == VX_EUNCERTAIN || rc == VX_ECONFLICT) && !applier_fenced(a)) {
		struct vx_err e2 = VX_ERR_INIT;

		live_persistent_release(got);
		plan_lineage_label(lin, a->state->lineage);
		if (list_one(a, req.project, d->region, d->d.name, got, &e2) == 1 &&
		    persistent_is_ours(got, a->st->name, lin)) {
			applier_progress(a, "~ %s the create's answer was %s: found it, with this stack's labels",
					 d->d.address, rc == VX_ECONFLICT ? "ALREADY_EXISTS" : "lost");
			rc = 0;
		}
		vx_err_release(&e2);
	}
	return rc;
}

static int do_create(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct stack_persistent *d = pa->kdecl;
	struct live_persistent got;
	struct vx_label *labels = NULL;
	size_t nlabels = 0;
	struct vx_err e = VX_ERR_INIT;
	int rc;

	memset(&got, 0, sizeof(got));
	if (create_labels(a, d, &labels, &nlabels) < 0) {
		vx_labels_free(labels, nlabels);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	/* The intent, saved before anything is sent: a later plan adopts what a killed apply made. */
	rc = applier_intend_create(a, pa->address, labels, nlabels, err);
	if (rc == 0)
		rc = send_create(a, d, labels, nlabels, &got, &e);
	vx_labels_free(labels, nlabels);
	if (rc < 0 && !e.code)
		goto done; /* the journal could not be saved: err says why */
	if (rc < 0) {
		/* A create that failed leaving a resource in ERROR: record it, it is paid for. */
		if (got.id && record_run(a, pa, "create", &got, err) < 0)
			rc = VX_ENOMEM;
		else if (rc != VX_EUNCERTAIN)
			(void)state_journal_remove(a->state, pa->address);
		rc = rc == VX_ENOMEM ? rc : change_failed(a, pa, "create", &e, err);
		goto done;
	}
	if ((rc = record_run(a, pa, pa->op == PLAN_REPLACE ? "replace" : "create", &got, err)) == 0) {
		(void)state_journal_remove(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "+ %s create %s in %s (%s)", pa->address, d->d.name, d->region,
				 got.state ? got.state : "?");
	}
done:
	vx_err_release(&e);
	live_persistent_release(&got);
	return rc;
}

/* An in-place update: one PATCH with the mask of what changed, and the resource read back. */
static int do_update(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	const struct stack_persistent *d = pa->kdecl;
	const struct live_persistent *l = pa->klive;
	struct provider_persistent_request req;
	struct live_persistent got;
	struct vx_buf what = VX_BUF_INIT;
	struct vx_label *labels = NULL;
	size_t nlabels = 0;
	struct vx_err e = VX_ERR_INIT;
	unsigned mask = persistent_mutable_change(d, l, &what);
	int rc;

	vx_buf_release(&what);
	memset(&got, 0, sizeof(got));
	if (!mask) { /* only what vx keeps changed (protect, deletionPolicy, onError) */
		if ((rc = record_run(a, pa, "update", l, err)) == 0) {
			a->res->ok++;
			applier_progress(a, "~ %s update (recorded: %s)", pa->address, pa->reason ? pa->reason : "");
		}
		return rc;
	}
	if (create_labels(a, d, &labels, &nlabels) < 0) {
		vx_labels_free(labels, nlabels);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	memset(&req, 0, sizeof(req));
	req.project = l->project ? l->project : a->opts->project;
	req.region = l->region;
	req.id = l->id;
	req.spec_json = d->spec_json;
	req.labels = labels;
	req.nlabels = nlabels;
	req.fence = applier_fence(a);
	rc = provider_persistent_update(a->prov, &req, mask, &got, &e);
	vx_labels_free(labels, nlabels);
	if (rc < 0) {
		live_persistent_release(&got);
		return change_failed(a, pa, "update", &e, err);
	}
	vx_err_release(&e);
	rc = record_run(a, pa, "update", &got, err);
	if (rc == 0) {
		a->res->ok++;
		applier_progress(a, "~ %s update in place (%s)", pa->address, pa->reason ? pa->reason : "");
	}
	live_persistent_release(&got);
	return rc;
}

/*
 * The plan deletes (or replaces) the resource once this apply cancelled the
 * jobs on it (kind_persistent.c's delete_in_use, persistent_replace_in_use):
 * a cancelled job lets its machines go only when it has ended, and Vertex
 * may refuse to delete a resource jobs use (not stated; the fake does). So
 * wait until none are used, up to ctx->reservation_wait_ms (default 300 s,
 * VX_RESERVATION_WAIT_SECONDS), as a reservation's delete does. 1 when free
 * (or gone), 0 when still used (left for the next apply), < 0 on error.
 */
static int wait_free(struct applier *a, const char *project, const char *region, const char *id, struct vx_err *err)
{
	int64_t limit = a->ctx->reservation_wait_ms ? a->ctx->reservation_wait_ms : 300000;
	int64_t start = vx_mono_ms(a->ctx);

	for (;;) {
		struct live_persistent l;
		int rc;

		memset(&l, 0, sizeof(l));
		if ((rc = list_one(a, project, region, id, &l, err)) <= 0)
			return rc < 0 ? rc : 1;
		rc = persistent_used(&l) == 0;
		live_persistent_release(&l);
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
	const struct live_persistent *l = pa->klive;
	const char *project = l && l->project ? l->project : r && r->current && r->current->project ? r->current->project
												    : a->opts->project;
	const char *region = l ? l->region : r && r->current ? r->current->region
							     : NULL;
	const char *name = strchr(pa->address, '.') + 1;
	const char *verb = pa->op == PLAN_REPLACE ? "replace (delete)" : "delete";
	struct vx_err e = VX_ERR_INIT;
	int rc;

	if (!region)
		return 0;
	rc = l && persistent_used(l) ? wait_free(a, project, region, name, &e) : 1;
	if (rc == 0)
		vx_err_set(&e, VX_ECONFLICT, "jobs still use its machines after the jobs on it were cancelled; left "
					     "for the next apply");
	if (rc > 0)
		rc = provider_persistent_del(a->prov, project, region, name, applier_fence(a), &e);
	else if (rc == 0)
		rc = VX_ECONFLICT;
	if (rc < 0 && rc != VX_ENOTFOUND)
		return change_failed(a, pa, verb, &e, err);
	vx_err_release(&e);
	applier_progress(a, "- %s delete %s in %s", pa->address, name, region);
	if (pa->op == PLAN_REPLACE)
		return applier_persist(a, "vx: apply: persistent resources deleted", err);
	(void)state_remove_record(a->state, pa->address);
	applier_progress(a, "- %s forget", pa->address);
	a->res->ok++;
	return applier_persist(a, "vx: apply: persistent resources deleted", err);
}

static int apply_removal(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	if (pa->op == PLAN_DELETE || pa->op == PLAN_REPLACE)
		return do_delete(a, pa, err);
	if (pa->op == PLAN_FORGET || pa->op == PLAN_ABANDON) {
		(void)state_remove_record(a->state, pa->address);
		a->res->ok++;
		applier_progress(a, "- %s %s", pa->address, pa->op == PLAN_ABANDON ? "abandon (left running)" : "forget");
	}
	return 0;
}

static int apply_change(struct applier *a, const struct plan_action *pa, struct vx_err *err)
{
	int rc = 0;

	switch (pa->op) {
	case PLAN_CREATE:
		return do_create(a, pa, err);
	case PLAN_REPLACE:
		return applier_has_failed(a, pa->address) ? 0 : do_create(a, pa, err);
	case PLAN_ADOPT:
		rc = record_run(a, pa, "adopt", pa->klive, err);
		if (rc == 0) {
			(void)state_journal_remove(a->state, pa->address);
			a->res->ok++;
			applier_progress(a, "~ %s adopt %s", pa->address, strchr(pa->address, '.') + 1);
		}
		return rc;
	case PLAN_UPDATE:
		return do_update(a, pa, err);
	default:
		return 0;
	}
}

int persistent_apply(struct applier *a, int removals, struct vx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < a->plan->n && rc == 0 && !a->res->fenced; i++) {
		const struct plan_action *pa = &a->plan->actions[i];

		if (pa->kind_of != &kind_persistent)
			continue;
		if (vx_interrupted(a->ctx)) {
			a->res->interrupted = 1;
			a->res->skipped++;
			continue;
		}
		rc = removals ? apply_removal(a, pa, err) : apply_change(a, pa, err);
		if (rc == 0)
			rc = applier_heartbeat(a, err);
	}
	if (rc == 0)
		rc = applier_persist(a, removals ? "vx: apply: persistent resources removed" : "vx: apply: persistent resources", err);
	return rc;
}
