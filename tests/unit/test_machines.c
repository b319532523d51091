/* Unit tests for reconcile/load/machines.c: each rule of the machine table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/load/machines.h"

/* Checks and returns the message (NULL when allowed); *field gets the field at fault. */
static char *chk(const char *mt, const char *acc, int64_t count, enum machines_field *field)
{
	char *msg = NULL;
	enum machines_field f = 0;
	int rc = machines_check(mt, acc, count, &msg, &f);

	if (field)
		*field = f;
	assert_int_equal(rc, msg ? VX_EINVAL : 0);
	return msg;
}

static void expect_ok(const char *mt, const char *acc, int64_t count)
{
	char *msg = chk(mt, acc, count, NULL);

	if (msg)
		fail_msg("%s %s %lld refused: %s", mt, acc ? acc : "-", (long long)count, msg);
}

static void expect_msg(const char *mt, const char *acc, int64_t count, enum machines_field field,
		       const char *want)
{
	enum machines_field f;
	char *msg = chk(mt, acc, count, &f);

	assert_non_null(msg);
	assert_string_equal(msg, want);
	assert_int_equal(f, field);
	free(msg);
}

static void test_fixed_families(void **state)
{
	(void)state;
	expect_ok("a3-highgpu-1g", "NVIDIA_H100_80GB", 1);
	expect_ok("a3-highgpu-2g", "NVIDIA_H100_80GB", 2);
	expect_ok("a3-highgpu-4g", "NVIDIA_H100_80GB", 4);
	expect_ok("a3-highgpu-8g", "NVIDIA_H100_80GB", 8);
	expect_ok("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8);
	expect_ok("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8);
	expect_ok("a4-highgpu-8g", "NVIDIA_B200", 8);
	expect_ok("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1);
	expect_ok("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8);
	expect_ok("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16);
	expect_ok("a2-ultragpu-2g", "NVIDIA_A100_80GB", 2);
	expect_ok("a2-ultragpu-8g", "NVIDIA_A100_80GB", 8);
	expect_ok("g2-standard-4", "NVIDIA_L4", 1);
	expect_ok("g2-standard-24", "NVIDIA_L4", 2);
	expect_ok("g2-standard-48", "NVIDIA_L4", 4);
	expect_ok("g2-standard-96", "NVIDIA_L4", 8);
	expect_ok("g2-standard-32", "NVIDIA_L4", 1);
}

static void test_fixed_mismatch(void **state)
{
	(void)state;
	expect_msg("a3-highgpu-8g", "NVIDIA_H100_80GB", 4, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "a3-highgpu-8g comes with 8 NVIDIA_H100_80GB; acceleratorCount is 4 "
		   "(4 NVIDIA_H100_80GB come with machineType a3-highgpu-4g)");
	expect_msg("a3-highgpu-8g", "NVIDIA_H100_80GB", 0, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "a3-highgpu-8g comes with 8 NVIDIA_H100_80GB; acceleratorCount is not set");
	expect_msg("a3-megagpu-8g", "NVIDIA_H100_80GB", 8, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "a3-megagpu-8g comes with 8 NVIDIA_H100_MEGA_80GB; acceleratorType is NVIDIA_H100_80GB "
		   "(8 NVIDIA_H100_80GB come with machineType a3-highgpu-8g)");
	expect_msg("a2-ultragpu-2g", "NVIDIA_TESLA_A100", 2, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "a2-ultragpu-2g comes with 2 NVIDIA_A100_80GB; acceleratorType is NVIDIA_TESLA_A100 "
		   "(2 NVIDIA_TESLA_A100 come with machineType a2-highgpu-2g)");
	/* GPU machine types need an accelerator */
	expect_msg("g2-standard-24", NULL, 0, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "g2-standard-24 comes with 2 NVIDIA_L4; acceleratorType is not set");
	expect_msg("g2-standard-12", "NVIDIA_L4", 2, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "g2-standard-12 comes with 1 NVIDIA_L4; acceleratorCount is 2 "
		   "(2 NVIDIA_L4 come with machineType g2-standard-24)");
	expect_msg("a4-highgpu-8g", "NVIDIA_H200_141GB", 8, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "a4-highgpu-8g comes with 8 NVIDIA_B200; acceleratorType is NVIDIA_H200_141GB "
		   "(8 NVIDIA_H200_141GB come with machineType a3-ultragpu-8g)");
	expect_msg("a3-highgpu-8", "NVIDIA_H100_80GB", 8, MACHINES_FIELD_MACHINE_TYPE,
		   "unknown GPU machine type a3-highgpu-8 (did you mean \"a3-highgpu-8g\"?)");
}

static void test_n1_table(void **state)
{
	(void)state;
	expect_ok("n1-standard-4", NULL, 0);
	expect_ok("n1-standard-4", "NVIDIA_TESLA_T4", 1);
	expect_ok("n1-standard-4", "NVIDIA_TESLA_V100", 8);
	expect_ok("n1-standard-16", "NVIDIA_TESLA_P100", 4);
	expect_ok("n1-standard-32", "NVIDIA_TESLA_P4", 2);
	expect_ok("n1-highcpu-64", "NVIDIA_TESLA_P100", 4);
	expect_ok("n1-highmem-96", "NVIDIA_TESLA_V100", 8);
	expect_msg("n1-standard-32", "NVIDIA_TESLA_T4", 1, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "n1-standard-32 takes 2 or 4 NVIDIA_TESLA_T4; acceleratorCount is 1");
	expect_msg("n1-standard-16", "NVIDIA_TESLA_V100", 1, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "n1-standard-16 takes 2, 4 or 8 NVIDIA_TESLA_V100; acceleratorCount is 1");
	expect_msg("n1-standard-8", "NVIDIA_TESLA_T4", 3, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "n1-standard-8 takes 1, 2 or 4 NVIDIA_TESLA_T4; acceleratorCount is 3");
	expect_msg("n1-standard-8", "NVIDIA_TESLA_T4", 0, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "n1-standard-8 takes 1, 2 or 4 NVIDIA_TESLA_T4; acceleratorCount is not set");
	expect_msg("n1-standard-64", "NVIDIA_TESLA_P100", 4, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "n1-standard-64 takes no NVIDIA_TESLA_P100 (see the N1 GPU table)");
	expect_msg("n1-standard-8", "NVIDIA_L4", 1, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "n1-standard-8 takes NVIDIA_TESLA_T4, NVIDIA_TESLA_V100, NVIDIA_TESLA_P4 or "
		   "NVIDIA_TESLA_P100; acceleratorType is NVIDIA_L4");
	expect_msg("n1-standard-2", "NVIDIA_TESLA_T4", 1, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "n1-standard-2 takes no GPUs (it is not in the N1 GPU table); acceleratorType is "
		   "NVIDIA_TESLA_T4");
}

static void test_other_rules(void **state)
{
	(void)state;
	expect_ok("e2-standard-4", NULL, 0);
	expect_ok("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4);
	expect_msg("e2-standard-4", "NVIDIA_TESLA_T4", 1, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "e2-standard-4 takes no GPUs; acceleratorType is NVIDIA_TESLA_T4");
	expect_msg("n1-standard-4", NULL, 2, MACHINES_FIELD_ACCELERATOR_COUNT,
		   "acceleratorCount is 2 but acceleratorType is not set");
	expect_msg("n1-standard-4", "NVIDIA_TESLA_K80", 1, MACHINES_FIELD_ACCELERATOR_TYPE,
		   "NVIDIA_TESLA_K80 is retired (end of life) and refused");
}

static void test_gpu_names(void **state)
{
	const struct machines_gpu *g;
	const char *v = NULL;
	int64_t n = 0;

	(void)state;
	g = machines_gpu_by_vertex("NVIDIA_H100_80GB");
	assert_non_null(g);
	assert_string_equal(g->display, "H100 80GB");
	assert_string_equal(g->compute, "nvidia-h100-80gb");
	assert_string_equal(g->quota_id, "CustomModelTrainingH100GPUsPerProjectPerRegion");
	assert_string_equal(machines_quota_id(g, "FLEX_START"),
			    "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion");
	assert_string_equal(machines_quota_id(g, "SPOT"),
			    "CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion");
	assert_string_equal(machines_quota_id(g, "STANDARD"), g->quota_id);
	assert_string_equal(g->metric_preemptible,
			    "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_h100_gpus");
	assert_true(g->flex_start);
	assert_ptr_equal(machines_gpu_by_compute("nvidia-h100-80gb"), g);
	assert_string_equal(machines_gpu_by_vertex("NVIDIA_A100_80GB")->quota_id,
			    "CustomModelTrainingA10080GBGPUsPerProjectPerRegion");
	/* FLEX_START GPUs: L4, A100 (both), H100 (and Mega), H200, B200 */
	assert_true(machines_gpu_by_vertex("NVIDIA_L4")->flex_start);
	assert_true(machines_gpu_by_vertex("NVIDIA_TESLA_A100")->flex_start);
	assert_true(machines_gpu_by_vertex("NVIDIA_H100_MEGA_80GB")->flex_start);
	assert_true(machines_gpu_by_vertex("NVIDIA_H200_141GB")->flex_start);
	assert_true(machines_gpu_by_vertex("NVIDIA_B200")->flex_start);
	assert_false(machines_gpu_by_vertex("NVIDIA_TESLA_T4")->flex_start);
	assert_false(machines_gpu_by_vertex("NVIDIA_TESLA_V100")->flex_start);
	assert_true(machines_gpu_by_vertex("NVIDIA_TESLA_K80")->retired);
	assert_null(machines_gpu_by_vertex("TPU_V3"));
	assert_null(machines_quota_id(NULL, "SPOT"));
	assert_true(machines_fixed_gpus("g2-standard-48", &v, &n));
	assert_string_equal(v, "NVIDIA_L4");
	assert_int_equal(n, 4);
	assert_false(machines_fixed_gpus("n1-standard-4", &v, &n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_families),
		cmocka_unit_test(test_fixed_mismatch),
		cmocka_unit_test(test_n1_table),
		cmocka_unit_test(test_other_rules),
		cmocka_unit_test(test_gpu_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
