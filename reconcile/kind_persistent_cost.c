/*
 * The persistent resource kind's machines, as the capacity check, the
 * plan's cost lines and vx report see them (struct kind's capacity, held
 * and held_record slots; docs/persistent-resources.md, "Quota and cost").
 *
 * A resource's machines are regional on-demand machines held from its
 * create to its delete, used or not: they count against the region's
 * training quota (on-demand GPUs) and are priced at Vertex AI's training
 * rates, as a job's machines are. Each of its pools is one part of what it
 * holds; with autoscaling a pool's machines move between its min and max,
 * and the quota counts the max.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/kind_persistent.h"
#include "reconcile/kind_persistent_internal.h"
#include "reconcile/plan.h"
#include "reconcile/provider_persistent.h"
#include "state/state.h"
#include "util/banned.h"

static const struct live_persistent_pool *listed_pool(const struct live_persistent *l, const char *id)
{
	for (size_t i = 0; l && id && i < l->npools; i++)
		if (l->pools[i].id && !strcmp(l->pools[i].id, id))
			return &l->pools[i];
	return NULL;
}

/* The most machines a listed pool may have now: its autoscaling max, else its replicas. */
static int64_t listed_max(const struct live_persistent_pool *lp)
{
	return lp->has_autoscaling && lp->max_replica_count > lp->replica_count ? lp->max_replica_count
										: lp->replica_count;
}

/*
 * What action a holds, pool out->part of it: the declared pool (else the
 * listed one, for a resource no longer declared), its machines before (as
 * listed) and after (as declared; none when deleted).
 */
void persistent_capacity(const struct plan_action *a, struct kind_capacity *out)
{
	const struct stack_persistent *d = a->kdecl;
	const struct live_persistent *l = a->klive;
	const struct live_persistent_pool *lp;

	out->holds = 1;
	out->has_counts = 1;
	out->draws_quota = out->vertex_rates = 1;
	out->nparts = d ? d->npools : 0;
	if (!d && l)
		out->nparts = l->npools;
	if (out->part >= out->nparts) {
		out->holds = 0;
		return;
	}
	if (d) {
		const struct stack_persistent_pool *p = &d->pools[out->part];

		out->region = d->region;
		out->machine_type = p->machine_type;
		out->accelerator = p->accelerator_type;
		out->accelerator_count = p->accelerator_count;
		out->new_count = a->op == PLAN_DELETE ? 0 : p->replica_count;
		lp = listed_pool(l, p->id);
	} else {
		lp = &l->pools[out->part];
		out->region = l->region;
		out->machine_type = lp->machine_type;
		out->accelerator = lp->accelerator_type;
		out->accelerator_count = lp->accelerator_count;
	}
	out->old_count = lp && a->op != PLAN_CREATE ? lp->replica_count : 0;
}

/* Declared resource i of st, pool out->part of it, with what the refresh listed of it (live NULL: not read). */
void persistent_held(const struct stack *st, const struct live_set *live, size_t i, struct kind_held *out)
{
	const struct stack_persistent *d = &stack_persistents(st, NULL)[i];
	const struct live_persistent *l = persistent_live_find(live, d->region, d->d.name);
	const struct stack_persistent_pool *p;
	const struct live_persistent_pool *lp;

	out->address = d->d.address;
	out->job_ref = d->d.name;
	out->nparts = d->npools;
	if (out->part >= d->npools)
		return;
	p = &d->pools[out->part];
	lp = listed_pool(l, p->id);
	out->region = d->region;
	out->draws_quota = out->vertex_rates = 1;
	out->machine_type = p->machine_type;
	out->accelerator = p->accelerator_type;
	out->accelerator_count = p->accelerator_count;
	out->count = p->replica_count;
	out->count_min = p->has_autoscaling ? p->min_replica_count : p->replica_count;
	out->count_max = stack_persistent_pool_max(p);
	out->listed = lp != NULL;
	out->listed_max = lp ? listed_max(lp) : 0;
	out->in_use = lp ? lp->used_replica_count : 0;
}

static int64_t json_int64(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	return cJSON_IsString(v) ? strtoll(v->valuestring, NULL, 10) : 0;
}

static const char *json_string(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * vx report: what a recorded resource held, from its recorded spec
 * ({"region", "spec": {"resourcePools": [...]}}): the first pool's shape
 * names the row, and one machine's rate is the mean over the pools,
 * weighted by their replicas, at Vertex AI's training rates in its region.
 */
void persistent_held_record(const struct state_record *rec, const struct state_run *run, const struct prices *p,
			    struct kind_held_shape *out)
{
	cJSON *root = rec && rec->spec_json ? cJSON_Parse(rec->spec_json) : NULL;
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(root, "spec");
	const cJSON *pools = cJSON_GetObjectItemCaseSensitive(spec, "resourcePools"), *pool;
	const char *region = run->region ? run->region : json_string(root, "region");
	double sum = 0;
	int64_t n = 0;

	out->vm_rate = -1;
	const char *dot = rec ? strchr(rec->address, '.') : NULL;

	snprintf(out->job_ref, sizeof(out->job_ref), "%s", dot ? dot + 1 : "");
	if (!cJSON_IsArray(pools))
		pools = NULL;
	cJSON_ArrayForEach(pool, pools) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(pool, "machineSpec");
		const char *mt = json_string(ms, "machineType"), *at = json_string(ms, "acceleratorType");
		int64_t count = json_int64(ms, "acceleratorCount"), replicas = json_int64(pool, "replicaCount");
		double r = prices_machine_rate(p, region, mt, at, count, 1, &out->estimate);

		if (!n) {
			snprintf(out->machine_type, sizeof(out->machine_type), "%s", mt ? mt : "");
			snprintf(out->accelerator, sizeof(out->accelerator), "%s", at ? at : "");
			out->accelerator_count = at ? count : 0;
		}
		n += replicas > 0 ? replicas : 0;
		sum = r < 0 || sum < 0 ? -1 : sum + r * (double)(replicas > 0 ? replicas : 0);
	}
	if (n > 0 && sum >= 0)
		out->vm_rate = sum / (double)n;
	cJSON_Delete(root);
}
