/*
 * The CustomJobSpec checker's machine and scheduling rules: a worker pool's
 * machine type, accelerators and reservation against the machine table
 * (machines.h), and what FLEX_START needs of the whole job.
 */
#include "reconcile/load/spec.h"
#include "reconcile/load/spec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/banned.h"

#define FLEX_MAX_TIMEOUT_MS (7LL * 24 * 3600 * 1000)

void spec_machine_check_pool(struct chk *c, size_t idx, struct pool_info *p)
{
	const struct machines_gpu *gpu;
	const struct spec_reservation *r = p->res;
	enum machines_field field;
	const struct ynode *at;
	char *msg = NULL, *path = NULL;
	const char *leaf;
	size_t rlen;
	int rc;

	rc = machines_check(p->machine_type, p->accel, p->count, &msg, &field);
	if (rc == VX_ENOMEM) {
		c->oom = 1;
		return;
	}
	if (rc < 0) {
		if (field == MACHINES_FIELD_ACCELERATOR_TYPE && p->acc_node) {
			at = p->acc_node;
			leaf = "acceleratorType";
		} else if (field == MACHINES_FIELD_ACCELERATOR_COUNT && p->cnt_node) {
			at = p->cnt_node;
			leaf = "acceleratorCount";
		} else if (field == MACHINES_FIELD_MACHINE_TYPE) {
			at = p->mt_node;
			leaf = "machineType";
		} else {
			at = p->mspec;
			leaf = NULL;
		}
		path = vx_asprintf("spec.workerPoolSpecs[%zu].machineSpec%s%s", idx, leaf ? "." : "",
				   leaf ? leaf : "");
		if (!path)
			c->oom = 1;
		else
			spec_err_at(c, at, path, "%s", msg);
		free(msg);
		free(path);
	}
	if (!r)
		return;
	path = vx_asprintf("spec.workerPoolSpecs[%zu].machineSpec.reservationAffinity%s", idx,
			   p->res_node && p->res_node->kind == YNODE_SCALAR &&
			   !strcmp(p->res_node->str, r->name) ? ".reservation" : ".values[0]");
	if (!path) {
		c->oom = 1;
		return;
	}
	gpu = machines_gpu_by_compute(r->accelerator);
	if (!r->machine_type || strcmp(r->machine_type, p->machine_type))
		spec_err_at(c, p->res_node, path, "reservation \"%s\" holds %s VMs; machineType is %s",
		       r->name, r->machine_type ? r->machine_type : "(unknown)", p->machine_type);
	else if ((r->accelerator != NULL) != (p->accel != NULL) ||
		 (r->accelerator && (!gpu || !p->accel || strcmp(gpu->vertex, p->accel))) ||
		 (r->accelerator && r->accelerator_count != p->count))
		spec_err_at(c, p->res_node, path,
		       "reservation \"%s\" holds %lld %s per VM; this pool asks for %lld %s",
		       r->name, (long long)(r->accelerator ? r->accelerator_count : 0),
		       r->accelerator ? r->accelerator : "GPUs", (long long)p->count,
		       p->accel ? p->accel : "GPUs");
	rlen = c->env && c->env->region ? strlen(c->env->region) : 0;
	if (c->env && c->env->region && (!r->zone || strncmp(r->zone, c->env->region, rlen) ||
					r->zone[rlen] != '-'))
		spec_err_at(c, p->res_node, path, "reservation \"%s\" is in zone %s, outside the job's "
		       "region %s", r->name, r->zone ? r->zone : "(unknown)", c->env->region);
	free(path);
}

static int same_machine(const struct pool_info *a, const struct pool_info *b)
{
	return !strcmp(a->machine_type, b->machine_type) && a->count == b->count &&
	       ((!a->accel && !b->accel) || (a->accel && b->accel && !strcmp(a->accel, b->accel)));
}

/* FLEX_START: supported GPUs, timeout of at most 7 days, one machine shape, no reservation. */
void spec_machine_check_strategy(struct chk *c)
{
	const struct machines_gpu *gpu;
	const struct pool_info *first = NULL;
	char path[96];
	size_t i;

	if (!c->strategy || strcmp(c->strategy, "FLEX_START"))
		return;
	for (i = 0; i < c->npools; i++) {
		const struct pool_info *p = &c->pools[i];

		if (!p->machine_type)
			continue;
		gpu = machines_gpu_by_vertex(p->accel);
		if (!gpu || !gpu->flex_start) {
			snprintf(path, sizeof(path), "spec.workerPoolSpecs[%zu].machineSpec%s", i,
				 p->acc_node ? ".acceleratorType" : "");
			if (p->accel)
				spec_err_at(c, p->acc_node, path, "FLEX_START runs only on %s GPUs; "
				       "acceleratorType is %s", machines_flex_start_gpus(), p->accel);
			else
				spec_err_at(c, p->mspec, path, "FLEX_START runs only on %s GPUs; this pool "
				       "has none", machines_flex_start_gpus());
		}
		/* Vertex AI training runs FLEX_START (Dynamic Workload Scheduler)
		 * only on capacity it finds, never on a reservation (use-reservations). */
		if (p->affinity_node) {
			snprintf(path, sizeof(path), "spec.workerPoolSpecs[%zu].machineSpec.reservationAffinity", i);
			spec_err_at(c, p->affinity_node, path, "FLEX_START cannot use a reservation: Vertex AI "
				    "training does not support Dynamic Workload Scheduler with reservationAffinity; "
				    "use scheduling.strategy STANDARD or SPOT to run on the reservation, or remove "
				    "reservationAffinity to wait for capacity with FLEX_START");
		}
		if (!first) {
			first = p;
		} else if (!same_machine(first, p)) {
			snprintf(path, sizeof(path), "spec.workerPoolSpecs[%zu].machineSpec", i);
			spec_err_at(c, p->mspec, path, "FLEX_START needs the same machineSpec in every "
			       "worker pool; this one differs from the first");
		}
	}
	if (c->timeout_node && c->timeout_ms > FLEX_MAX_TIMEOUT_MS)
		spec_err_at(c, c->timeout_node, "spec.scheduling.timeout", "FLEX_START allows a timeout "
		       "of at most 7 days (604800s); timeout is %llds",
		       (long long)(c->timeout_ms / 1000));
}
