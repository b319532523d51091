/*
 * The machine and accelerator rules, as tables. To support a new GPU or
 * machine type, add a row; the checking code below has no per-family case.
 *
 * Sources: Google's GPU machine type pages for A2/A3/A4/G2/G4 (fixed GPUs),
 * the AI Platform Training table of valid GPU counts per N1 machine type, the
 * Vertex AI Dynamic Workload Scheduler requirements (FLEX_START needs L4,
 * A100, H100, H200 or B200 GPUs and a timeout of at most 7 days), and the
 * quota IDs observed in Google's vertex-ai-samples (common_util.py).
 */
#include "reconcile/load/machines.h"

#include <stddef.h>
#include <string.h>

#include "util/buf.h"
#include "util/suggest.h"
#include "util/banned.h"

/* On-demand and preemptible quota IDs, and the matching metric names. Where
 * Google's samples do not show an ID (P4, K80, GB200, RTX PRO 6000) the
 * pattern is followed; the planner verifies IDs against quotaInfos.list. */
#define QUOTA(x) "CustomModelTraining" x "PerProjectPerRegion", \
		 "CustomModelTrainingPreemptible" x "PerProjectPerRegion"
#define METRIC(x) "aiplatform.googleapis.com/custom_model_training_" x "_gpus", \
		  "aiplatform.googleapis.com/custom_model_training_preemptible_" x "_gpus"

static const struct machines_gpu gpus[] = {
	/* vertex enum, display, compute name, quota IDs, metrics, FLEX_START, retired */
	{ "NVIDIA_H100_80GB", "H100 80GB", "nvidia-h100-80gb",
	  QUOTA("H100GPUs"), METRIC("nvidia_h100"), 1, 0 },
	{ "NVIDIA_H100_MEGA_80GB", "H100 Mega 80GB", "nvidia-h100-mega-80gb",
	  QUOTA("H100MEGAGPUs"), METRIC("nvidia_h100_mega"), 1, 0 },
	{ "NVIDIA_H200_141GB", "H200 141GB", "nvidia-h200-141gb",
	  QUOTA("H200GPUs"), METRIC("nvidia_h200"), 1, 0 },
	{ "NVIDIA_B200", "B200", "nvidia-b200",
	  QUOTA("B200GPUs"), METRIC("nvidia_b200"), 1, 0 },
	{ "NVIDIA_GB200", "GB200", "nvidia-gb200",
	  QUOTA("GB200GPUs"), METRIC("nvidia_gb200"), 0, 0 },
	{ "NVIDIA_TESLA_A100", "A100 40GB", "nvidia-tesla-a100",
	  QUOTA("A100GPUs"), METRIC("nvidia_a100"), 1, 0 },
	{ "NVIDIA_A100_80GB", "A100 80GB", "nvidia-a100-80gb",
	  QUOTA("A10080GBGPUs"), METRIC("nvidia_a100_80gb"), 1, 0 },
	{ "NVIDIA_L4", "L4", "nvidia-l4",
	  QUOTA("L4GPUs"), METRIC("nvidia_l4"), 1, 0 },
	{ "NVIDIA_RTX_PRO_6000", "RTX PRO 6000", "nvidia-rtx-pro-6000",
	  QUOTA("RTXPRO6000GPUs"), METRIC("nvidia_rtx_pro_6000"), 0, 0 },
	{ "NVIDIA_TESLA_T4", "T4", "nvidia-tesla-t4",
	  QUOTA("T4GPUs"), METRIC("nvidia_t4"), 0, 0 },
	{ "NVIDIA_TESLA_V100", "V100", "nvidia-tesla-v100",
	  QUOTA("V100GPUs"), METRIC("nvidia_v100"), 0, 0 },
	{ "NVIDIA_TESLA_P100", "P100", "nvidia-tesla-p100",
	  QUOTA("P100GPUs"), METRIC("nvidia_p100"), 0, 0 },
	{ "NVIDIA_TESLA_P4", "P4", "nvidia-tesla-p4",
	  QUOTA("P4GPUs"), METRIC("nvidia_p4"), 0, 0 },
	{ "NVIDIA_TESLA_K80", "K80", "nvidia-tesla-k80",
	  QUOTA("K80GPUs"), METRIC("nvidia_k80"), 0, 1 },
};

/* Machine types that come with a fixed GPU type and count. */
static const struct {
	const char *machine_type;
	const char *gpu;
	int count;
} fixed[] = {
	{ "a4-highgpu-8g", "NVIDIA_B200", 8 },
	{ "a4x-highgpu-4g", "NVIDIA_GB200", 4 },
	{ "a3-ultragpu-8g", "NVIDIA_H200_141GB", 8 },
	{ "a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8 },
	{ "a3-highgpu-1g", "NVIDIA_H100_80GB", 1 },
	{ "a3-highgpu-2g", "NVIDIA_H100_80GB", 2 },
	{ "a3-highgpu-4g", "NVIDIA_H100_80GB", 4 },
	{ "a3-highgpu-8g", "NVIDIA_H100_80GB", 8 },
	{ "a2-ultragpu-1g", "NVIDIA_A100_80GB", 1 },
	{ "a2-ultragpu-2g", "NVIDIA_A100_80GB", 2 },
	{ "a2-ultragpu-4g", "NVIDIA_A100_80GB", 4 },
	{ "a2-ultragpu-8g", "NVIDIA_A100_80GB", 8 },
	{ "a2-highgpu-1g", "NVIDIA_TESLA_A100", 1 },
	{ "a2-highgpu-2g", "NVIDIA_TESLA_A100", 2 },
	{ "a2-highgpu-4g", "NVIDIA_TESLA_A100", 4 },
	{ "a2-highgpu-8g", "NVIDIA_TESLA_A100", 8 },
	{ "a2-megagpu-16g", "NVIDIA_TESLA_A100", 16 },
	{ "g2-standard-4", "NVIDIA_L4", 1 },
	{ "g2-standard-8", "NVIDIA_L4", 1 },
	{ "g2-standard-12", "NVIDIA_L4", 1 },
	{ "g2-standard-16", "NVIDIA_L4", 1 },
	{ "g2-standard-24", "NVIDIA_L4", 2 },
	{ "g2-standard-32", "NVIDIA_L4", 1 },
	{ "g2-standard-48", "NVIDIA_L4", 4 },
	{ "g2-standard-96", "NVIDIA_L4", 8 },
	{ "g4-standard-48", "NVIDIA_RTX_PRO_6000", 1 },
	{ "g4-standard-96", "NVIDIA_RTX_PRO_6000", 2 },
	{ "g4-standard-192", "NVIDIA_RTX_PRO_6000", 4 },
	{ "g4-standard-384", "NVIDIA_RTX_PRO_6000", 8 },
};

/* Prefixes of the families above: a machine type with one of them that is
 * not in the table is a misspelling or a shape we do not know. */
static const char *const fixed_prefixes[] = { "a2-", "a3-", "a4-", "a4x-", "g2-", "g4-" };

/*
 * N1 machine types and the GPU counts each may take, as bit sets of counts
 * (1, 2, 4 and 8 are their own bits; 0 = this GPU is not allowed).
 * From the AI Platform Training compatibility table (K80 left out: retired).
 */
#define N_1 1
#define N_2 2
#define N_4 4
#define N_8 8
static const char *const n1_gpus[] = {
	"NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_P100",
};
static const struct {
	const char *machine_type;
	unsigned char counts[4]; /* in n1_gpus order: T4, V100, P4, P100 */
} n1[] = {
	/*                    T4                V100                    P4                P100 */
	{ "n1-standard-4",  { N_1 | N_2 | N_4, N_1 | N_2 | N_4 | N_8, N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-standard-8",  { N_1 | N_2 | N_4, N_1 | N_2 | N_4 | N_8, N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-standard-16", { N_1 | N_2 | N_4, N_2 | N_4 | N_8,       N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-standard-32", { N_2 | N_4,       N_4 | N_8,             N_2 | N_4,       N_2 | N_4 } },
	{ "n1-standard-64", { N_4,             N_8,                   N_4,             0 } },
	{ "n1-standard-96", { N_4,             N_8,                   N_4,             0 } },
	{ "n1-highmem-2",   { N_1 | N_2 | N_4, N_1 | N_2 | N_4 | N_8, N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-highmem-4",   { N_1 | N_2 | N_4, N_1 | N_2 | N_4 | N_8, N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-highmem-8",   { N_1 | N_2 | N_4, N_1 | N_2 | N_4 | N_8, N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-highmem-16",  { N_1 | N_2 | N_4, N_2 | N_4 | N_8,       N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-highmem-32",  { N_2 | N_4,       N_4 | N_8,             N_2 | N_4,       N_2 | N_4 } },
	{ "n1-highmem-64",  { N_4,             N_8,                   N_4,             0 } },
	{ "n1-highmem-96",  { N_4,             N_8,                   N_4,             0 } },
	{ "n1-highcpu-16",  { N_1 | N_2 | N_4, N_2 | N_4 | N_8,       N_1 | N_2 | N_4, N_1 | N_2 | N_4 } },
	{ "n1-highcpu-32",  { N_2 | N_4,       N_4 | N_8,             N_2 | N_4,       N_2 | N_4 } },
	{ "n1-highcpu-64",  { N_4,             N_8,                   N_4,             N_4 } },
	{ "n1-highcpu-96",  { N_4,             N_8,                   N_4,             0 } },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const struct machines_gpu *machines_gpu_by_vertex(const char *vertex)
{
	size_t i;

	for (i = 0; vertex && i < NELEM(gpus); i++)
		if (!strcmp(gpus[i].vertex, vertex))
			return &gpus[i];
	return NULL;
}

const struct machines_gpu *machines_gpu_by_compute(const char *compute)
{
	size_t i;

	for (i = 0; compute && i < NELEM(gpus); i++)
		if (!strcmp(gpus[i].compute, compute))
			return &gpus[i];
	return NULL;
}

const char *machines_suggest_compute(const char *word)
{
	const char *names[NELEM(gpus)];
	size_t i, n = 0;

	for (i = 0; i < NELEM(gpus); i++)
		if (!gpus[i].retired)
			names[n++] = gpus[i].compute;
	return vx_suggest(word, names, n);
}

const char *machines_quota_id(const struct machines_gpu *gpu, const char *strategy)
{
	if (!gpu)
		return NULL;
	if (strategy && (!strcmp(strategy, "SPOT") || !strcmp(strategy, "FLEX_START")))
		return gpu->quota_id_preemptible;
	return gpu->quota_id;
}

int machines_fixed_gpus(const char *machine_type, const char **vertex, int64_t *count)
{
	size_t i;

	for (i = 0; machine_type && i < NELEM(fixed); i++) {
		if (strcmp(fixed[i].machine_type, machine_type))
			continue;
		if (vertex)
			*vertex = fixed[i].gpu;
		if (count)
			*count = fixed[i].count;
		return 1;
	}
	return 0;
}

const char *machines_with_gpus(const char *vertex, int64_t count)
{
	for (size_t i = 0; vertex && i < NELEM(fixed); i++)
		if (!strcmp(fixed[i].gpu, vertex) && fixed[i].count == count)
			return fixed[i].machine_type;
	return NULL;
}

const char *machines_flex_start_gpus(void)
{
	return "L4, A100, H100, H200, B200";
}

static int is_tpu(const char *accelerator)
{
	return accelerator && !strncmp(accelerator, "TPU_", 4);
}

/* "2 or 4", "1, 2, 4 or 8" */
static int add_counts(struct vx_buf *b, unsigned mask)
{
	unsigned c, left = mask;
	int first = 1, rc = 0;

	for (c = 1; c <= 8 && rc == 0; c <<= 1) {
		if (!(mask & c))
			continue;
		left &= ~c;
		if (!first)
			rc = vx_buf_adds(b, left ? ", " : " or ");
		if (rc == 0)
			rc = vx_buf_printf(b, "%u", c);
		first = 0;
	}
	return rc;
}

static int check_fixed(struct vx_buf *b, size_t i, const char *accelerator, int64_t count,
		       enum machines_field *field)
{
	const char *other;
	int rc;

	if (accelerator && !strcmp(accelerator, fixed[i].gpu) && count == fixed[i].count)
		return 0;
	rc = vx_buf_printf(b, "%s comes with %d %s; ", fixed[i].machine_type, fixed[i].count,
			   fixed[i].gpu);
	if (rc == 0 && !accelerator) {
		*field = MACHINES_FIELD_ACCELERATOR_TYPE;
		rc = vx_buf_adds(b, "acceleratorType is not set");
	} else if (rc == 0 && strcmp(accelerator, fixed[i].gpu)) {
		*field = MACHINES_FIELD_ACCELERATOR_TYPE;
		rc = vx_buf_printf(b, "acceleratorType is %s", accelerator);
	} else if (rc == 0 && count == 0) {
		*field = MACHINES_FIELD_ACCELERATOR_COUNT;
		rc = vx_buf_adds(b, "acceleratorCount is not set");
	} else if (rc == 0) {
		*field = MACHINES_FIELD_ACCELERATOR_COUNT;
		rc = vx_buf_printf(b, "acceleratorCount is %lld", (long long)count);
	}
	/* The machine that has what was asked for, when one does. */
	other = accelerator && count ? machines_with_gpus(accelerator, count) : NULL;
	if (rc == 0 && other)
		rc = vx_buf_printf(b, " (%lld %s come with machineType %s)", (long long)count, accelerator, other);
	return rc < 0 ? rc : VX_EINVAL;
}

static int check_n1(struct vx_buf *b, size_t i, const char *accelerator, int64_t count,
		    enum machines_field *field)
{
	const char *mt = n1[i].machine_type;
	unsigned mask;
	size_t g;
	int rc;

	if (!accelerator)
		return 0; /* a CPU-only N1 */
	for (g = 0; g < NELEM(n1_gpus); g++)
		if (!strcmp(n1_gpus[g], accelerator))
			break;
	*field = MACHINES_FIELD_ACCELERATOR_TYPE;
	if (g == NELEM(n1_gpus)) {
		rc = vx_buf_printf(b, "%s takes NVIDIA_TESLA_T4, NVIDIA_TESLA_V100, NVIDIA_TESLA_P4 or "
				   "NVIDIA_TESLA_P100; acceleratorType is %s", mt, accelerator);
		return rc < 0 ? rc : VX_EINVAL;
	}
	mask = n1[i].counts[g];
	if (!mask) {
		rc = vx_buf_printf(b, "%s takes no %s (see the N1 GPU table)", mt, accelerator);
		return rc < 0 ? rc : VX_EINVAL;
	}
	if (count > 0 && count <= 8 && !(count & (count - 1)) && (mask & (unsigned)count))
		return 0;
	*field = MACHINES_FIELD_ACCELERATOR_COUNT;
	rc = vx_buf_printf(b, "%s takes ", mt);
	if (rc == 0)
		rc = add_counts(b, mask);
	if (rc == 0)
		rc = vx_buf_printf(b, " %s; ", accelerator);
	if (rc == 0 && count == 0)
		rc = vx_buf_adds(b, "acceleratorCount is not set");
	else if (rc == 0)
		rc = vx_buf_printf(b, "acceleratorCount is %lld", (long long)count);
	return rc < 0 ? rc : VX_EINVAL;
}

static int check_other(struct vx_buf *b, const char *machine_type, const char *accelerator,
		       int64_t count, enum machines_field *field)
{
	const char *names[NELEM(fixed)];
	const char *near;
	size_t i;
	int rc = 0;

	for (i = 0; i < NELEM(fixed_prefixes); i++) {
		if (strncmp(machine_type, fixed_prefixes[i], strlen(fixed_prefixes[i])))
			continue;
		for (i = 0; i < NELEM(fixed); i++)
			names[i] = fixed[i].machine_type;
		near = vx_suggest(machine_type, names, NELEM(fixed));
		*field = MACHINES_FIELD_MACHINE_TYPE;
		if (near)
			rc = vx_buf_printf(b, "unknown GPU machine type %s (did you mean \"%s\"?)",
					   machine_type, near);
		else
			rc = vx_buf_printf(b, "unknown GPU machine type %s", machine_type);
		return rc < 0 ? rc : VX_EINVAL;
	}
	if (!accelerator)
		return 0;
	*field = MACHINES_FIELD_ACCELERATOR_TYPE;
	if (!strncmp(machine_type, "n1-", 3))
		rc = vx_buf_printf(b, "%s takes no GPUs (it is not in the N1 GPU table); "
				   "acceleratorType is %s", machine_type, accelerator);
	else
		rc = vx_buf_printf(b, "%s takes no GPUs; acceleratorType is %s", machine_type,
				   accelerator);
	(void)count;
	return rc < 0 ? rc : VX_EINVAL;
}

int machines_check(const char *machine_type, const char *accelerator, int64_t count,
		   char **msg, enum machines_field *field)
{
	struct vx_buf b = VX_BUF_INIT;
	const struct machines_gpu *gpu = machines_gpu_by_vertex(accelerator);
	size_t i;
	int rc = 0;

	*msg = NULL;
	*field = MACHINES_FIELD_MACHINE_TYPE;
	if (is_tpu(accelerator))
		goto done; /* TPU shapes are Vertex's to check */
	if (gpu && gpu->retired) {
		*field = MACHINES_FIELD_ACCELERATOR_TYPE;
		rc = vx_buf_printf(&b, "%s is retired (end of life) and refused", accelerator);
		rc = rc < 0 ? rc : VX_EINVAL;
		goto done;
	}
	if (!accelerator && count > 0) {
		*field = MACHINES_FIELD_ACCELERATOR_COUNT;
		rc = vx_buf_printf(&b, "acceleratorCount is %lld but acceleratorType is not set",
				   (long long)count);
		rc = rc < 0 ? rc : VX_EINVAL;
		goto done;
	}
	for (i = 0; i < NELEM(fixed); i++)
		if (!strcmp(fixed[i].machine_type, machine_type)) {
			rc = check_fixed(&b, i, accelerator, count, field);
			goto done;
		}
	for (i = 0; i < NELEM(n1); i++)
		if (!strcmp(n1[i].machine_type, machine_type)) {
			rc = check_n1(&b, i, accelerator, count, field);
			goto done;
		}
	rc = check_other(&b, machine_type, accelerator, count, field);
done:
	if (rc == VX_EINVAL) {
		*msg = vx_buf_detach(&b);
		if (!*msg)
			rc = VX_ENOMEM;
	}
	vx_buf_release(&b);
	return rc;
}
