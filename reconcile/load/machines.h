#ifndef VX_RECONCILE_MACHINES_H
#define VX_RECONCILE_MACHINES_H

/*
 * What Vertex AI accepts as machine type and accelerator, as one table:
 * GPU machine types that come with a fixed GPU type and count (A3, A2, G2,
 * A4, ...), N1 machine types with the GPU counts they may take (T4, V100,
 * P4, P100), and the GPUs themselves with the names the planner needs
 * (display name, Compute Engine accelerator name, Cloud Quotas IDs and
 * metrics for on-demand and preemptible capacity, FLEX_START support).
 *
 * All data is static; every pointer returned is borrowed and lives forever.
 */

#include <stdint.h>

#include "util/err.h"

struct machines_gpu {
	const char *vertex;          /* AcceleratorType enum name: NVIDIA_H100_80GB */
	const char *display;         /* "H100 80GB" */
	const char *compute;         /* Compute Engine accelerator type: nvidia-h100-80gb */
	const char *quota_id;        /* on-demand (STANDARD): CustomModelTrainingH100GPUsPerProjectPerRegion */
	const char *quota_id_preemptible; /* SPOT and FLEX_START: CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion */
	const char *metric;          /* aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus */
	const char *metric_preemptible; /* ..._preemptible_nvidia_h100_gpus */
	unsigned flex_start : 1;     /* may run with scheduling.strategy FLEX_START */
	unsigned retired : 1;        /* refused: end of life (NVIDIA_TESLA_K80) */
};

/* The GPU by Vertex enum name or by Compute Engine name, or NULL (also for TPUs). */
const struct machines_gpu *machines_gpu_by_vertex(const char *vertex);
const struct machines_gpu *machines_gpu_by_compute(const char *compute);
/* The Compute Engine GPU name (not retired) nearest a misspelt one, for
 * "did you mean"; NULL when none is close. Borrowed from the table. */
const char *machines_suggest_compute(const char *word);

/* The Cloud Quotas ID a GPU draws from for a strategy ("STANDARD", "SPOT",
 * "FLEX_START"; NULL = STANDARD): SPOT and FLEX_START use the preemptible
 * quota. NULL when gpu is NULL. */
const char *machines_quota_id(const struct machines_gpu *gpu, const char *strategy);

/* Whether a machine type is a GPU machine type that comes with fixed GPUs;
 * if so, *vertex and *count (either may be NULL) are set. */
int machines_fixed_gpus(const char *machine_type, const char **vertex, int64_t *count);

/* The GPU machine type that comes with count GPUs vertex (the first in the
 * table: g2-standard-4 for 1 NVIDIA_L4), or NULL: what a message about a
 * count or GPU that does not fit the machine suggests instead. */
const char *machines_with_gpus(const char *vertex, int64_t count);

/* Which field of a machineSpec a problem is about, so it can be reported at
 * that field's position. */
enum machines_field {
	MACHINES_FIELD_MACHINE_TYPE = 1,
	MACHINES_FIELD_ACCELERATOR_TYPE,
	MACHINES_FIELD_ACCELERATOR_COUNT,
};

/*
 * Checks one machineSpec: machine_type (not NULL), accelerator (Vertex enum
 * name, or NULL when not set) and count (0 when not set). Returns 0 when the
 * combination is allowed; VX_EINVAL with *msg set to a message naming the
 * rule ("a3-highgpu-8g comes with 8 NVIDIA_H100_80GB; acceleratorCount is 4",
 * caller frees) and *field to the field at fault; or VX_ENOMEM.
 * TPU accelerators and CPU-only machine types without accelerators pass.
 */
int machines_check(const char *machine_type, const char *accelerator, int64_t count,
		   char **msg, enum machines_field *field) VX_WUR;

/* The GPUs FLEX_START runs on, for messages: "L4, A100, H100, H200, B200". */
const char *machines_flex_start_gpus(void);

#endif
