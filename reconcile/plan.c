#include "reconcile/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/load/spec.h"
#include "util/buf.h"
#include "util/banned.h"

const char *plan_op_name(enum plan_op k)
{
	static const char *const names[PLAN_OP_COUNT] = {
		"noop", "create", "adopt", "replace", "rerun", "resubmit", "cancel", "forget", "update",
		"delete", "pending", "abandon", "wait",
	};
	return (unsigned)k < PLAN_OP_COUNT ? names[k] : "?";
}

const char *plan_op_symbol(enum plan_op k)
{
	static const char *const symbols[PLAN_OP_COUNT] = {
		" ", "+", "~", "-/+", "\u21bb", "\u21bb", "-", "-", "~", "-", " ", "-", " ",
	};
	return (unsigned)k < PLAN_OP_COUNT ? symbols[k] : "?";
}

void plan_short_hash(char out[13], const char *hash)
{
	size_t i;

	for (i = 0; i < 12 && hash && hash[i]; i++)
		out[i] = hash[i];
	out[i] = '\0';
}

void plan_lineage_label(char out[13], const char *lineage)
{
	size_t k = 0;

	for (size_t i = 0; k < 12 && lineage && lineage[i]; i++)
		if (lineage[i] != '-')
			out[k++] = lineage[i];
	out[k] = '\0';
}

int plan_resource_place(const char *name, char *project, char *region, size_t len)
{
	const char *p, *slash, *r, *rs;

	if (!name || strncmp(name, "projects/", 9) != 0)
		return -1;
	p = name + 9;
	slash = strchr(p, '/');
	if (!slash || slash == p || strncmp(slash, "/locations/", 11) != 0)
		return -1;
	r = slash + 11;
	rs = strchr(r, '/');
	if (!rs || rs == r || (size_t)(slash - p) >= len || (size_t)(rs - r) >= len)
		return -1;
	memcpy(project, p, (size_t)(slash - p));
	project[slash - p] = '\0';
	memcpy(region, r, (size_t)(rs - r));
	region[rs - r] = '\0';
	return 0;
}

int plan_has_changes(const struct plan *p)
{
	return p->n > p->counts[PLAN_NOOP] + p->counts[PLAN_PENDING] + p->counts[PLAN_WAIT];
}

struct plan_action *plan_add_action(struct plan *p, enum plan_op op, const struct kind *k,
				    const char *address)
{
	struct plan_action *a, *arr = realloc(p->actions, (p->n + 1) * sizeof(*arr));

	if (!arr)
		return NULL;
	p->actions = arr;
	a = &arr[p->n];
	memset(a, 0, sizeof(*a));
	if (!(a->address = strdup(address)))
		return NULL;
	if (k && k->action_size && !(a->payload = calloc(1, k->action_size))) {
		free(a->address);
		a->address = NULL;
		return NULL;
	}
	a->op = op;
	a->kind_of = k;
	p->n++;
	p->counts[op]++;
	return a;
}

struct plan_action *plan_add_kind_action(struct plan *p, enum plan_op op, const struct kind *k, const char *address,
					 const void *decl, const void *live, const struct state_record *record)
{
	struct plan_action *a = plan_add_action(p, op, k, address);

	if (!a)
		return NULL;
	a->kdecl = decl;
	a->klive = live;
	a->krecord = record;
	return a;
}

int plan_action_reason(struct plan_action *a, char *text)
{
	if (!text)
		return VX_ENOMEM;
	free(a->reason);
	a->reason = text;
	return 0;
}

int plan_action_drift(struct plan *p, struct plan_action *a, char *text)
{
	if (!text)
		return VX_ENOMEM;
	free(a->drift);
	a->drift = text;
	p->drifts++;
	return 0;
}

static void action_release(struct plan_action *a)
{
	free(a->address);
	free(a->reason);
	free(a->drift);
	free(a->shape);
	free(a->region);
	if (a->payload && a->kind_of && a->kind_of->action_release)
		a->kind_of->action_release(a->payload);
	free(a->payload);
}

void plan_release(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		action_release(&p->actions[i]);
	free(p->actions);
	p->actions = NULL;
	p->n = 0;
	memset(p->counts, 0, sizeof(p->counts));
	p->drifts = 0;
	vx_diags_release(&p->errors);
	vx_diags_release(&p->warnings);
	vx_diags_release(&p->notes);
	for (size_t i = 0; i < p->nsweeps; i++) {
		free(p->sweeps[i].address);
		free(p->sweeps[i].held);
	}
	free(p->sweeps);
	p->sweeps = NULL;
	p->nsweeps = 0;
}

static int cmp_action(const void *x, const void *y)
{
	const struct plan_action *a = x, *b = y;
	int c = strcmp(a->address, b->address);

	if (c)
		return c;
	return (int)a->op - (int)b->op;
}

int plan_merge(struct plan *into, struct plan *from)
{
	struct plan_action *arr;

	if (!from->n)
		goto diags;
	arr = realloc(into->actions, (into->n + from->n) * sizeof(*arr));
	if (!arr)
		return VX_ENOMEM;
	into->actions = arr;
	memcpy(&arr[into->n], from->actions, from->n * sizeof(*arr));
	into->n += from->n;
	for (int k = 0; k < PLAN_OP_COUNT; k++)
		into->counts[k] += from->counts[k];
	free(from->actions);
	from->actions = NULL;
	from->n = 0;
	memset(from->counts, 0, sizeof(from->counts));
diags:
	into->drifts += from->drifts;
	from->drifts = 0;
	for (size_t i = 0; i < from->errors.n; i++)
		if (vx_diags_add(&into->errors, NULL, 0, 0, "%s", from->errors.items[i].msg) < 0)
			return VX_ENOMEM;
	for (size_t i = 0; i < from->warnings.n; i++)
		if (vx_diags_add(&into->warnings, NULL, 0, 0, "%s", from->warnings.items[i].msg) < 0)
			return VX_ENOMEM;
	for (size_t i = 0; i < from->notes.n; i++)
		if (vx_diags_add(&into->notes, NULL, 0, 0, "%s", from->notes.items[i].msg) < 0)
			return VX_ENOMEM;
	return 0;
}

void plan_sort(struct plan *p)
{
	if (p->n > 1)
		qsort(p->actions, p->n, sizeof(*p->actions), cmp_action);
}
