#include "reconcile/provider.h"

#include <stdlib.h>
#include <string.h>

#include "util/ctx.h"
#include "util/banned.h"

/* p's own table of kind k; NULL: none. */
static const void *own_table(const struct provider *p, const struct provider_kind *k)
{
	for (size_t i = 0; i < p->ntables; i++)
		if (p->tables[i].kind == k)
			return p->tables[i].ops;
	return NULL;
}

/*
 * Whether the entry at offset op of table ops is set. Every entry of a
 * kind's table is a pointer to a function, and all of them have the one
 * representation on the platforms vx builds for: read as the generic
 * function pointer type, by memcpy (no aliasing of the table's own type).
 */
static int entry_set(const void *ops, size_t op)
{
	void (*fn)(void);

	memcpy(&fn, (const char *)ops + op, sizeof(fn));
	return fn != NULL;
}

const void *provider_find(struct provider *p, const struct provider_kind *k, size_t op,
			  struct provider **impl)
{
	const void *found = NULL, *own;
	struct provider *under = NULL;

	/* What inner lacks, a decorator lacks too: p's own entry counts only then. */
	if (p && (!p->inner || (found = provider_find(p->inner, k, op, &under)))) {
		own = own_table(p, k);
		if (own && entry_set(own, op)) {
			under = p;
			found = own;
		}
	}
	if (impl)
		*impl = found ? under : NULL;
	return found;
}

int provider_lacks(const struct provider_kind *k, const char *op, struct vx_err *err)
{
	return vx_err_set(err, VX_EINVAL, "the provider has no %s operation for %s", op, k->name);
}

int64_t provider_now_ms(struct provider *p, const struct vx_ctx *ctx)
{
	return vx_now_ms(ctx) + (p && p->clock_offset ? p->clock_offset(p) : 0);
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
