#include "reconcile/provider.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

void live_job_release(struct live_job *j)
{
	if (!j)
		return;
	free(j->name);
	free(j->region);
	free(j->display_name);
	free(j->state);
	vx_labels_free(j->labels, j->nlabels);
	free(j->error_message);
	memset(j, 0, sizeof(*j));
}

int live_job_copy(struct live_job *out, const struct live_job *in)
{
	memset(out, 0, sizeof(*out));
	out->create_ms = in->create_ms;
	out->start_ms = in->start_ms;
	out->end_ms = in->end_ms;
	out->error_code = in->error_code;
	if ((in->name && !(out->name = strdup(in->name))) ||
	    (in->region && !(out->region = strdup(in->region))) ||
	    (in->display_name && !(out->display_name = strdup(in->display_name))) ||
	    (in->state && !(out->state = strdup(in->state))) ||
	    (in->error_message && !(out->error_message = strdup(in->error_message))))
		goto oom;
	if (vx_labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0)
		goto oom;
	return 0;
oom:
	live_job_release(out);
	return VX_ENOMEM;
}

void live_log_page_release(struct live_log_page *pg)
{
	for (size_t i = 0; i < pg->n; i++) {
		free(pg->items[i].insert_id);
		free(pg->items[i].timestamp);
		free(pg->items[i].severity);
		free(pg->items[i].text);
	}
	free(pg->items);
	free(pg->next_token);
	memset(pg, 0, sizeof(*pg));
}

void live_jobs_release(struct live_jobs *js)
{
	for (size_t i = 0; i < js->n; i++)
		live_job_release(&js->items[i]);
	free(js->items);
	js->items = NULL;
	js->n = 0;
}

int64_t provider_now_ms(struct provider *p, const struct vx_ctx *ctx)
{
	return vx_now_ms(ctx) + (p && p->clock_offset ? p->clock_offset(p) : 0);
}

int live_jobs_push(struct live_jobs *js, const struct live_job *j)
{
	struct live_job *p = realloc(js->items, (js->n + 1) * sizeof(*p));

	if (!p)
		return VX_ENOMEM;
	js->items = p;
	if (live_job_copy(&js->items[js->n], j) < 0)
		return VX_ENOMEM;
	js->n++;
	return 0;
}

const char *live_job_label(const struct live_job *j, const char *key)
{
	for (size_t i = 0; i < j->nlabels; i++)
		if (!strcmp(j->labels[i].key, key))
			return j->labels[i].value;
	return NULL;
}

static int state_in(const char *state, const char *const *set)
{
	if (!state)
		return 0;
	for (; *set; set++)
		if (!strcmp(state, *set))
			return 1;
	return 0;
}

int job_state_is_active(const char *state)
{
	static const char *const active[] = {
		"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING",
		"JOB_STATE_CANCELLING", "JOB_STATE_PAUSED", "JOB_STATE_UPDATING", NULL,
	};
	return state_in(state, active);
}

int job_state_is_terminal(const char *state)
{
	static const char *const terminal[] = {
		"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
		"JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED", NULL,
	};
	return state_in(state, terminal);
}

const char *job_state_short(const char *state)
{
	static const struct { const char *full, *brief; } names[] = {
		{ "JOB_STATE_QUEUED", "queued" }, { "JOB_STATE_PENDING", "pending" },
		{ "JOB_STATE_RUNNING", "running" }, { "JOB_STATE_SUCCEEDED", "succeeded" },
		{ "JOB_STATE_FAILED", "failed" }, { "JOB_STATE_CANCELLING", "cancelling" },
		{ "JOB_STATE_CANCELLED", "cancelled" }, { "JOB_STATE_PAUSED", "paused" },
		{ "JOB_STATE_EXPIRED", "expired" }, { "JOB_STATE_UPDATING", "updating" },
		{ "JOB_STATE_PARTIALLY_SUCCEEDED", "partially succeeded" },
	};
	if (!state)
		return "unknown";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(state, names[i].full))
			return names[i].brief;
	return "unknown";
}

/* strdup that copies NULL as NULL; 0, or VX_ENOMEM. */
static int dup_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

void live_reservation_release(struct live_reservation *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->project);
	free(r->zone);
	free(r->status);
	free(r->description);
	free(r->machine_type);
	free(r->accelerator_type);
	free(r->share_type);
	memset(r, 0, sizeof(*r));
}

int live_reservation_copy(struct live_reservation *out, const struct live_reservation *in)
{
	memset(out, 0, sizeof(*out));
	out->accelerator_count = in->accelerator_count;
	out->count = in->count;
	out->in_use = in->in_use;
	out->specific_required = in->specific_required;
	out->create_ms = in->create_ms;
	if (dup_opt(&out->name, in->name) < 0 || dup_opt(&out->project, in->project) < 0 ||
	    dup_opt(&out->zone, in->zone) < 0 || dup_opt(&out->status, in->status) < 0 ||
	    dup_opt(&out->description, in->description) < 0 ||
	    dup_opt(&out->machine_type, in->machine_type) < 0 ||
	    dup_opt(&out->accelerator_type, in->accelerator_type) < 0 ||
	    dup_opt(&out->share_type, in->share_type) < 0) {
		live_reservation_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

void live_reservations_release(struct live_reservations *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++)
		live_reservation_release(&rs->items[i]);
	free(rs->items);
	rs->items = NULL;
	rs->n = 0;
}

int live_reservations_push(struct live_reservations *rs, const struct live_reservation *r)
{
	struct live_reservation *p;

	if (rs->n >= (size_t)-1 / sizeof(*p) - 1)
		return VX_ENOMEM;
	p = realloc(rs->items, (rs->n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	rs->items = p;
	if (live_reservation_copy(&rs->items[rs->n], r) < 0)
		return VX_ENOMEM;
	rs->n++;
	return 0;
}

void live_quota_release(struct live_quota *q)
{
	if (!q)
		return;
	free(q->name);
	free(q->id);
	free(q->service);
	free(q->quota_id);
	for (size_t i = 0; q->dimensions && i < q->ndimensions; i++) {
		free(q->dimensions[i].key);
		free(q->dimensions[i].value);
	}
	free(q->dimensions);
	free(q->state_detail);
	free(q->etag);
	free(q->contact_email);
	memset(q, 0, sizeof(*q));
}

int live_quota_copy(struct live_quota *out, const struct live_quota *in)
{
	memset(out, 0, sizeof(*out));
	out->preferred = in->preferred;
	out->has_granted = in->has_granted;
	out->granted = in->granted;
	out->reconciling = in->reconciling;
	out->requested_ms = in->requested_ms;
	out->has_limit = in->has_limit;
	out->limit = in->limit;
	if (dup_opt(&out->name, in->name) < 0 || dup_opt(&out->id, in->id) < 0 ||
	    dup_opt(&out->service, in->service) < 0 || dup_opt(&out->quota_id, in->quota_id) < 0 ||
	    dup_opt(&out->state_detail, in->state_detail) < 0 || dup_opt(&out->etag, in->etag) < 0 ||
	    dup_opt(&out->contact_email, in->contact_email) < 0)
		goto oom;
	if (in->ndimensions) {
		out->dimensions = calloc(in->ndimensions, sizeof(*out->dimensions));
		if (!out->dimensions)
			goto oom;
		for (size_t i = 0; i < in->ndimensions; i++) {
			out->ndimensions = i + 1;
			if (dup_opt(&out->dimensions[i].key, in->dimensions[i].key) < 0 ||
			    dup_opt(&out->dimensions[i].value, in->dimensions[i].value) < 0)
				goto oom;
		}
	}
	return 0;
oom:
	live_quota_release(out);
	return VX_ENOMEM;
}

void live_quotas_release(struct live_quotas *qs)
{
	if (!qs)
		return;
	for (size_t i = 0; i < qs->n; i++)
		live_quota_release(&qs->items[i]);
	free(qs->items);
	qs->items = NULL;
	qs->n = 0;
}

int live_quotas_push(struct live_quotas *qs, const struct live_quota *q)
{
	struct live_quota *p;

	if (qs->n >= (size_t)-1 / sizeof(*p) - 1)
		return VX_ENOMEM;
	p = realloc(qs->items, (qs->n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	qs->items = p;
	if (live_quota_copy(&qs->items[qs->n], q) < 0)
		return VX_ENOMEM;
	qs->n++;
	return 0;
}

void live_quota_limits_release(struct live_quota_limits *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].service);
		free(l->items[i].quota_id);
		free(l->items[i].location);
		free(l->items[i].dimensions);
	}
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int live_quota_limits_push(struct live_quota_limits *l, const struct live_quota_limit *q)
{
	struct live_quota_limit *items = realloc(l->items, (l->n + 1) * sizeof(*items)), *o;

	if (!items)
		return VX_ENOMEM;
	l->items = items;
	o = &items[l->n];
	memset(o, 0, sizeof(*o));
	o->value = q->value;
	if (!(o->service = vx_strdup(q->service ? q->service : "")) ||
	    !(o->quota_id = vx_strdup(q->quota_id ? q->quota_id : "")) ||
	    !(o->location = vx_strdup(q->location ? q->location : "")) ||
	    (q->dimensions && !(o->dimensions = vx_strdup(q->dimensions)))) {
		free(o->service);
		free(o->quota_id);
		free(o->location);
		free(o->dimensions);
		return VX_ENOMEM;
	}
	l->n++;
	return 0;
}

int live_quota_limits_find(const struct live_quota_limits *l, const char *service, const char *quota_id,
			   const char *location, int64_t *out)
{
	for (size_t i = 0; l && service && quota_id && location && i < l->n; i++) {
		const struct live_quota_limit *q = &l->items[i];

		if (!q->dimensions && !strcmp(q->service, service) && !strcmp(q->quota_id, quota_id) &&
		    (!strcmp(q->location, location) || !strcmp(q->location, "global"))) {
			*out = q->value;
			return 0;
		}
	}
	return VX_ENOTFOUND;
}

/*
 * A decorator's passing on of the operations it does not change: each calls
 * the same operation of the wrapped provider, with that provider as p.
 */
static int fwd_jobs_list(struct provider *p, const char *project, const char *region, const char *stack,
			 struct live_jobs *out, struct vx_err *err)
{
	return p->inner->jobs->list(p->inner, project, region, stack, out, err);
}

static int fwd_jobs_list_runs(struct provider *p, const char *project, const char *region,
			      const char *stack, const char *job, struct live_jobs *out, struct vx_err *err)
{
	return p->inner->jobs->list_runs(p->inner, project, region, stack, job, out, err);
}

static int fwd_jobs_list_active(struct provider *p, const char *project, const char *region,
				const char *stack, struct live_jobs *out, struct vx_err *err)
{
	return p->inner->jobs->list_active(p->inner, project, region, stack, out, err);
}

static int fwd_jobs_create(struct provider *p, const struct provider_job_request *req, struct live_job *out,
			   struct vx_err *err)
{
	return p->inner->jobs->create(p->inner, req, out, err);
}

static int fwd_jobs_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
			   struct vx_err *err)
{
	return p->inner->jobs->cancel(p->inner, name, fence, err);
}

static int fwd_jobs_get(struct provider *p, const char *name, struct live_job *out, char **spec_json,
			struct vx_err *err)
{
	return p->inner->jobs->get(p->inner, name, out, spec_json, err);
}

static int fwd_reservations_list(struct provider *p, const char *project, const char *zone,
				 struct live_reservations *out, struct vx_err *err)
{
	return p->inner->reservations->list(p->inner, project, zone, out, err);
}

static int fwd_reservations_create(struct provider *p, const struct provider_reservation_request *req,
				   struct live_reservation *out, struct vx_err *err)
{
	return p->inner->reservations->create(p->inner, req, out, err);
}

static int fwd_reservations_resize(struct provider *p, const char *project, const char *zone,
				   const char *name, int64_t count, const struct provider_fence *fence,
				   struct vx_err *err)
{
	return p->inner->reservations->resize(p->inner, project, zone, name, count, fence, err);
}

static int fwd_reservations_del(struct provider *p, const char *project, const char *zone,
				const char *name, const struct provider_fence *fence, struct vx_err *err)
{
	return p->inner->reservations->del(p->inner, project, zone, name, fence, err);
}

static int fwd_quotas_list(struct provider *p, const char *project, struct live_quotas *out,
			   struct vx_err *err)
{
	return p->inner->quotas->list(p->inner, project, out, err);
}

static int fwd_quotas_create(struct provider *p, const struct provider_quota_request *req,
			     struct live_quota *out, struct vx_err *err)
{
	return p->inner->quotas->create(p->inner, req, out, err);
}

static int fwd_quotas_update(struct provider *p, const struct provider_quota_request *req,
			     struct live_quota *out, struct vx_err *err)
{
	return p->inner->quotas->update(p->inner, req, out, err);
}

static int fwd_quotas_list_infos(struct provider *p, const char *project, const char *service,
				 struct live_quota_limits *out, struct vx_err *err)
{
	return p->inner->quotas->list_infos(p->inner, project, service, out, err);
}

void provider_wrap(struct provider *self, struct provider_tables *own, struct provider *inner)
{
	const struct provider_job_ops *j = inner->jobs;
	const struct provider_reservation_ops *r = inner->reservations;
	const struct provider_quota_ops *q = inner->quotas;

	memset(own, 0, sizeof(*own));
	/* What inner lacks, the decorator lacks too. */
#define FWD(t, kind, op) own->kind.op = t && t->op ? fwd_##kind##_##op : NULL
	FWD(j, jobs, list);
	FWD(j, jobs, list_runs);
	FWD(j, jobs, list_active);
	FWD(j, jobs, create);
	FWD(j, jobs, cancel);
	FWD(j, jobs, get);
	FWD(r, reservations, list);
	FWD(r, reservations, create);
	FWD(r, reservations, resize);
	FWD(r, reservations, del);
	FWD(q, quotas, list);
	FWD(q, quotas, create);
	FWD(q, quotas, update);
	FWD(q, quotas, list_infos);
#undef FWD
	self->jobs = j ? &own->jobs : NULL;
	self->reservations = r ? &own->reservations : NULL;
	self->quotas = q ? &own->quotas : NULL;
	self->inner = inner;
}
