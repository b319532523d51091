/*
 * The persistent resource kind's vx import, vx status and notifications
 * (its row's import, status_rows and notify slots).
 */
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/errtext.h"
#include "reconcile/import.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_persistent_internal.h"
#include "reconcile/notify.h"
#include "reconcile/plan.h"
#include "reconcile/provider_persistent.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

const struct notify_event_kind persistent_events[1] = {
	{ PERSISTENT_EVENT_ERROR, "resource-error", "is in ERROR" },
};

/* What one import has read, step by step. */
struct pr_import {
	const struct import_request *req;
	const char *name; /* the address's NAME, also the persistentResourceId */
	const struct stack_persistent *d;
	char region[128];
	struct live_persistents rs;
	const struct live_persistent *l; /* the one of rs imported */
	char *resource;			 /* projects/P/locations/R/persistentResources/ID */
};

/* Checks the resource name against the declaration and reads the region's list. */
static int import_read(struct pr_import *ri, struct provider *p, const struct stack *st, struct vx_err *err)
{
	const struct import_request *req = ri->req;
	char proj[128], id[128];
	int rc;

	if (import_split_name(req->resource, "locations", "persistentResources", proj, ri->region, id,
			      sizeof(proj)) < 0)
		return vx_err_set(err, VX_EINVAL, "%s takes a Vertex AI persistent resource, "
						  "projects/PROJECT/locations/REGION/persistentResources/ID, not '%s'",
				  req->address, req->resource);
	if (strcmp(proj, st->project))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (!ri->d->region || strcmp(ri->region, ri->d->region))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in region %s, but %s is declared in region %s",
				  req->address, req->resource, ri->region, req->address,
				  ri->d->region ? ri->d->region : "(none)");
	if (strcmp(id, ri->name))
		return vx_err_set(err, VX_EINVAL, "%s: the persistent resource must be named %s, as the address "
						  "is, not %s",
				  req->address, ri->name, id);
	if ((rc = provider_persistent_list(p, st->project, ri->region, &ri->rs, err)) < 0) {
		rc = vx_err_wrap(err, "%s: reading persistent resources in %s", req->address, ri->region);
		return rc < 0 ? rc : VX_EIO;
	}
	for (size_t i = 0; i < ri->rs.n && !ri->l; i++)
		if (ri->rs.items[i].id && !strcmp(ri->rs.items[i].id, ri->name))
			ri->l = &ri->rs.items[i];
	if (!ri->l)
		return vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
	if (!(ri->resource = vx_asprintf("projects/%s/locations/%s/persistentResources/%s", st->project,
					 ri->region, ri->name)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/* Tracked nowhere yet, and its vx labels, when it has them, this stack's and state's. */
static int import_owner(const struct pr_import *ri, const struct state *state, const struct stack *st,
			struct vx_err *err)
{
	const char *s = live_persistent_label(ri->l, "vx-stack"), *g = live_persistent_label(ri->l, "vx-lineage");
	char lineage[13];
	int rc;

	if ((rc = import_check_untracked(state, ri->req, ri->resource, err)) < 0)
		return rc;
	plan_lineage_label(lineage, state->lineage);
	if ((!s && !g) || (vx_text_same(s, st->name) && (state->serial == 0 || vx_text_same(g, lineage))))
		return 0;
	return vx_err_set(err, VX_ECONFLICT, "%s: %s is labelled as another stack's or state's (vx-stack=%s "
					     "vx-lineage=%s)",
			  ri->req->address, ri->resource, s ? s : "(none)", g ? g : "(none)");
}

/* What import says: the resource, its state, and what differs live -> declared. */
static int import_outcome(const struct pr_import *ri, struct import_outcome *out, struct vx_err *err)
{
	struct vx_buf what = VX_BUF_INIT;
	char *shape = persistent_immutable_change(ri->d, ri->l);
	unsigned mask = shape ? 0 : persistent_mutable_change(ri->d, ri->l, &what);
	int rc = 0;

	if (shape)
		out->differs = shape;
	else if (mask && !(out->differs = vx_strdup(vx_buf_str(&what))))
		rc = VX_ENOMEM;
	if (rc == 0 && shape)
		out->next = vx_asprintf("the next plan refuses it, as Vertex AI cannot change that in place, "
					"unless planned with -replace %s",
					ri->req->address);
	else if (rc == 0 && mask)
		out->next = vx_strdup("the next plan will update it in place");
	out->resource = vx_strdup(ri->resource);
	out->status = vx_text_clean(ri->l->state ? ri->l->state : "unknown");
	vx_buf_release(&what);
	if (rc < 0 || !out->resource || !out->status || (out->differs && !out->next))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

static int import_record(const struct pr_import *ri, const char *status, struct state *state,
			 const struct stack *st, struct vx_err *err)
{
	struct state_record *r = NULL;
	struct state_run run;
	int rc;

	if ((rc = import_run_init(&run, ri->req, ri->resource, st->project, ri->region, ri->d->d.hash,
				  ri->l->create_ms, err)) < 0)
		goto done;
	run.state = vx_strdup(status);
	run.has_value = 1;
	for (size_t i = 0; i < ri->l->npools; i++)
		run.value += ri->l->pools[i].replica_count;
	if ((rc = import_record_of(&r, state, ri->req, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(ri->d->d.hash);
	r->protect = ri->d->protect;
	if (!(r->spec_json = persistent_record_json(ri->d)) || !r->spec_hash) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	return rc;
}

int persistent_import(struct import_outcome *out, struct state *state, struct provider *p,
		      const struct stack *st, const struct import_request *req, int check_only, struct vx_err *err)
{
	struct pr_import ri;
	int rc;

	memset(&ri, 0, sizeof(ri));
	ri.req = req;
	ri.name = strchr(req->address, '.') + 1;
	ri.d = stack_find_persistent(st, ri.name);
	if ((rc = import_read(&ri, p, st, err)) == 0 && (rc = import_owner(&ri, state, st, err)) == 0 &&
	    (rc = import_outcome(&ri, out, err)) == 0 && !check_only)
		rc = import_record(&ri, out->status, state, st, err);
	live_persistents_release(&ri.rs);
	free(ri.resource);
	return rc;
}

static const struct status_values pr_status_values = { "replicas", "used", "replicas", "used" };

/* One row per declared resource: what the region's listing says of it. */
int persistent_status_rows(struct status_report *out, const struct status_input *in)
{
	size_t n;
	const struct stack_persistent *ds = stack_persistents(in->st, &n);

	for (size_t i = 0; i < n; i++) {
		const struct stack_persistent *d = &ds[i];
		const struct live_persistent *l = persistent_live_find(in->live, d->region, d->d.name);
		struct status_row *row = status_row_add(out, kind_persistent.prefix, d->d.address);

		if (!row || !(row->region = vx_text_clean(d->region ? d->region : "?")))
			return VX_ENOMEM;
		row->values = &pr_status_values;
		if (!l) {
			row->tracking = status_declared_tracking(in, d->d.address);
			continue;
		}
		row->listed = 1;
		row->has_value = row->has_value2 = 1;
		row->value = 0;
		for (size_t k = 0; k < l->npools; k++)
			row->value += l->pools[k].replica_count;
		row->value2 = persistent_used(l);
		if ((l->state && !(row->state = vx_text_clean(l->state))) || !(row->resource = vx_text_clean(l->id)) ||
		    (l->error_message && !(row->message = status_clean_message(l->error_message))))
			return VX_ENOMEM;
	}
	return 0;
}

/*
 * resource-error while the resource is in ERROR (watch does nothing about
 * it unreviewed: onError decides what the next reviewed plan does). The
 * API gives no time of the change, so it is told when seen (to the
 * second); the resource
 * (its creation time) and its error make the event one: the same error of
 * the same resource is told once (again at most weekly, as the state
 * forgets deliveries after a week, while it stays in ERROR).
 */
int persistent_notify(struct notify_list *out, const struct plan_action *a, const char *stack, int64_t now_ms,
		      int64_t since_ms)
{
	const struct live_persistent *l = a->klive;
	struct vx_buf msg = VX_BUF_INIT;
	struct notify_event ev;

	(void)since_ms;
	if (!l || !l->state || strcmp(l->state, "ERROR"))
		return 0;
	memset(&ev, 0, sizeof(ev));
	/* The server's text, cleaned and with URLs' credentials hidden, as the plan shows it. */
	if (l->error_message && render_error_message(&msg, l->error_message) < 0) {
		vx_buf_release(&msg);
		return VX_ENOMEM;
	}
	if (msg.len && !(ev.message = ev.owned[0] = vx_buf_detach(&msg))) {
		vx_buf_release(&msg);
		return VX_ENOMEM;
	}
	vx_buf_release(&msg);
	if (!(ev.key = ev.owned[1] = vx_asprintf("%" PRId64 "|%s", l->create_ms, ev.message ? ev.message : ""))) {
		free(ev.owned[0]);
		return VX_ENOMEM;
	}
	ev.kind = PERSISTENT_EVENT_ERROR;
	ev.stack = stack;
	ev.address = a->address;
	ev.state = l->state;
	ev.time_ms = now_ms - now_ms % 1000;
	return notify_list_add(out, &ev);
}
