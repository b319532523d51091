#include "reconcile/provider_quota.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

/* The table of p's chain that has op, and *impl the provider that holds it. */
#define FIND(op) provider_find(p, &provider_kind_quota, offsetof(struct provider_quota_ops, op), &impl)

const struct provider_kind provider_kind_quota = { .name = "quota preferences" };

int provider_quota_list(struct provider *p, const char *project, struct live_quotas *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_quota_ops *o = FIND(list);

	return o ? o->list(impl, project, out, err) : provider_lacks(&provider_kind_quota, "list", err);
}

int provider_quota_create(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
			  struct vx_err *err)
{
	struct provider *impl;
	const struct provider_quota_ops *o = FIND(create);

	return o ? o->create(impl, req, out, err) : provider_lacks(&provider_kind_quota, "create", err);
}

int provider_quota_update(struct provider *p, const struct provider_quota_request *req, struct live_quota *out,
			  struct vx_err *err)
{
	struct provider *impl;
	const struct provider_quota_ops *o = FIND(update);

	return o ? o->update(impl, req, out, err) : provider_lacks(&provider_kind_quota, "update", err);
}

int provider_quota_list_infos(struct provider *p, const char *project, const char *service,
			      struct live_quota_limits *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_quota_ops *o = FIND(list_infos);

	return o ? o->list_infos(impl, project, service, out, err) : provider_lacks(&provider_kind_quota, "list_infos", err);
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
