#include "reconcile/provider_reservation.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

/* The table of p's chain that has op, and *impl the provider that holds it. */
#define FIND(op) provider_find(p, &provider_kind_reservation, offsetof(struct provider_reservation_ops, op), &impl)

const struct provider_kind provider_kind_reservation = { .name = "reservations" };

int provider_reservation_list(struct provider *p, const char *project, const char *zone,
			      struct live_reservations *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_reservation_ops *o = FIND(list);

	return o ? o->list(impl, project, zone, out, err) : provider_lacks(&provider_kind_reservation, "list", err);
}

int provider_reservation_create(struct provider *p, const struct provider_reservation_request *req,
				struct live_reservation *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_reservation_ops *o = FIND(create);

	return o ? o->create(impl, req, out, err) : provider_lacks(&provider_kind_reservation, "create", err);
}

int provider_reservation_resize(struct provider *p, const char *project, const char *zone, const char *name,
				int64_t count, const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_reservation_ops *o = FIND(resize);

	return o ? o->resize(impl, project, zone, name, count, fence, err) : provider_lacks(&provider_kind_reservation, "resize", err);
}

int provider_reservation_del(struct provider *p, const char *project, const char *zone, const char *name,
			     const struct provider_fence *fence, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_reservation_ops *o = FIND(del);

	return o ? o->del(impl, project, zone, name, fence, err) : provider_lacks(&provider_kind_reservation, "del", err);
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
