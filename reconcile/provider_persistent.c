#include "reconcile/provider_persistent.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

/* The table of p's chain that has op, and *impl the provider that holds it. */
#define FIND(op) provider_find(p, &provider_kind_persistent, offsetof(struct provider_persistent_ops, op), &impl)

const struct provider_kind provider_kind_persistent = { .name = "persistent resources" };

int provider_persistent_list(struct provider *p, const char *project, const char *region,
			     struct live_persistents *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_persistent_ops *o = FIND(list);

	return o ? o->list(impl, project, region, out, err) : provider_lacks(&provider_kind_persistent, "list", err);
}

int provider_persistent_create(struct provider *p, const struct provider_persistent_request *req,
			       struct live_persistent *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_persistent_ops *o = FIND(create);

	return o ? o->create(impl, req, out, err) : provider_lacks(&provider_kind_persistent, "create", err);
}

int provider_persistent_update(struct provider *p, const struct provider_persistent_request *req, unsigned mask,
			       struct live_persistent *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_persistent_ops *o = FIND(update);

	return o ? o->update(impl, req, mask, out, err) : provider_lacks(&provider_kind_persistent, "update", err);
}

int provider_persistent_del(struct provider *p, const char *project, const char *region, const char *id,
			    const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_persistent_ops *o = FIND(del);

	return o ? o->del(impl, project, region, id, fence, err) : provider_lacks(&provider_kind_persistent, "del", err);
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

static void pool_release(struct live_persistent_pool *p)
{
	free(p->id);
	free(p->machine_type);
	free(p->accelerator_type);
	free(p->boot_disk_type);
}

void live_persistent_release(struct live_persistent *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->name);
	free(r->project);
	free(r->region);
	free(r->state);
	free(r->error_message);
	free(r->network);
	free(r->kms_key_name);
	vx_labels_free(r->labels, r->nlabels);
	for (size_t i = 0; i < r->npools; i++)
		pool_release(&r->pools[i]);
	free(r->pools);
	memset(r, 0, sizeof(*r));
}

static int pools_copy(struct live_persistent *out, const struct live_persistent *in)
{
	if (!in->npools)
		return 0;
	if (!(out->pools = calloc(in->npools, sizeof(*out->pools))))
		return VX_ENOMEM;
	for (size_t i = 0; i < in->npools; i++) {
		struct live_persistent_pool *d = &out->pools[i];
		const struct live_persistent_pool *s = &in->pools[i];

		*d = *s;
		d->id = d->machine_type = d->accelerator_type = d->boot_disk_type = NULL;
		out->npools++;
		if (dup_opt(&d->id, s->id) < 0 || dup_opt(&d->machine_type, s->machine_type) < 0 ||
		    dup_opt(&d->accelerator_type, s->accelerator_type) < 0 ||
		    dup_opt(&d->boot_disk_type, s->boot_disk_type) < 0)
			return VX_ENOMEM;
	}
	return 0;
}

int live_persistent_copy(struct live_persistent *out, const struct live_persistent *in)
{
	memset(out, 0, sizeof(*out));
	out->create_ms = in->create_ms;
	if (dup_opt(&out->id, in->id) < 0 || dup_opt(&out->name, in->name) < 0 ||
	    dup_opt(&out->project, in->project) < 0 || dup_opt(&out->region, in->region) < 0 ||
	    dup_opt(&out->state, in->state) < 0 || dup_opt(&out->error_message, in->error_message) < 0 ||
	    dup_opt(&out->network, in->network) < 0 || dup_opt(&out->kms_key_name, in->kms_key_name) < 0 ||
	    vx_labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0 || pools_copy(out, in) < 0) {
		live_persistent_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

void live_persistents_release(struct live_persistents *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++)
		live_persistent_release(&rs->items[i]);
	free(rs->items);
	rs->items = NULL;
	rs->n = 0;
}

int live_persistents_push(struct live_persistents *rs, const struct live_persistent *r)
{
	struct live_persistent *p;

	if (rs->n >= (size_t)-1 / sizeof(*p) - 1)
		return VX_ENOMEM;
	p = realloc(rs->items, (rs->n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	rs->items = p;
	if (live_persistent_copy(&rs->items[rs->n], r) < 0)
		return VX_ENOMEM;
	rs->n++;
	return 0;
}

const char *live_persistent_label(const struct live_persistent *r, const char *key)
{
	return vx_labels_get(r->labels, r->nlabels, key);
}
