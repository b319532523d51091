#include "reconcile/provider_future.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

/* The table of p's chain that has op, and *impl the provider that holds it. */
#define FIND(op) provider_find(p, &provider_kind_future, offsetof(struct provider_future_ops, op), &impl)

const struct provider_kind provider_kind_future = { .name = "future reservations" };

int provider_future_list(struct provider *p, const char *project, const char *zone, struct live_futures *out,
			 struct vx_err *err)
{
	struct provider *impl;
	const struct provider_future_ops *o = FIND(list);

	return o ? o->list(impl, project, zone, out, err) : provider_lacks(&provider_kind_future, "list", err);
}

int provider_future_create(struct provider *p, const struct provider_future_request *req,
			   struct live_future *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_future_ops *o = FIND(create);

	return o ? o->create(impl, req, out, err) : provider_lacks(&provider_kind_future, "create", err);
}

int provider_future_cancel(struct provider *p, const char *project, const char *zone, const char *name,
			   const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_future_ops *o = FIND(cancel);

	return o ? o->cancel(impl, project, zone, name, fence, err)
		 : provider_lacks(&provider_kind_future, "cancel", err);
}

int provider_future_del(struct provider *p, const char *project, const char *zone, const char *name,
			const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_future_ops *o = FIND(del);

	return o ? o->del(impl, project, zone, name, fence, err) : provider_lacks(&provider_kind_future, "del", err);
}

int provider_future_open_to_vertex(struct provider *p, const char *project, const char *zone,
				   const char *reservation, const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_future_ops *o = FIND(open_to_vertex);

	return o ? o->open_to_vertex(impl, project, zone, reservation, fence, err)
		 : provider_lacks(&provider_kind_future, "open_to_vertex", err);
}

static int dup_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

void live_future_release(struct live_future *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->project);
	free(f->zone);
	free(f->description);
	free(f->mode);
	free(f->procurement_status);
	free(f->machine_type);
	free(f->accelerator_type);
	for (size_t i = 0; i < f->n_auto_created; i++)
		free(f->auto_created[i]);
	free(f->auto_created);
	memset(f, 0, sizeof(*f));
}

int live_future_copy(struct live_future *out, const struct live_future *in)
{
	*out = *in;
	out->name = out->project = out->zone = out->description = out->mode = NULL;
	out->procurement_status = out->machine_type = out->accelerator_type = NULL;
	out->auto_created = NULL;
	out->n_auto_created = 0;
	if (dup_opt(&out->name, in->name) < 0 || dup_opt(&out->project, in->project) < 0 ||
	    dup_opt(&out->zone, in->zone) < 0 || dup_opt(&out->description, in->description) < 0 ||
	    dup_opt(&out->mode, in->mode) < 0 || dup_opt(&out->procurement_status, in->procurement_status) < 0 ||
	    dup_opt(&out->machine_type, in->machine_type) < 0 ||
	    dup_opt(&out->accelerator_type, in->accelerator_type) < 0)
		goto oom;
	if (in->n_auto_created) {
		if (!(out->auto_created = calloc(in->n_auto_created, sizeof(char *))))
			goto oom;
		for (; out->n_auto_created < in->n_auto_created; out->n_auto_created++)
			if (dup_opt(&out->auto_created[out->n_auto_created], in->auto_created[out->n_auto_created]) < 0)
				goto oom;
	}
	return 0;
oom:
	live_future_release(out);
	return VX_ENOMEM;
}

void live_futures_release(struct live_futures *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; i < fs->n; i++)
		live_future_release(&fs->items[i]);
	free(fs->items);
	fs->items = NULL;
	fs->n = 0;
}

int live_futures_push(struct live_futures *fs, const struct live_future *f)
{
	struct live_future *p;

	if (fs->n >= (size_t)-1 / sizeof(*p) - 1)
		return VX_ENOMEM;
	p = realloc(fs->items, (fs->n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	fs->items = p;
	if (live_future_copy(&fs->items[fs->n], f) < 0)
		return VX_ENOMEM;
	fs->n++;
	return 0;
}
