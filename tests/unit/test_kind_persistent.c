/* Unit tests for how the persistent resource kind finds the jobs on a
 * resource (reconcile/kind_persistent_load.c): the id a job's spec names,
 * and the pool each of its worker pools lands on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/kind_persistent.h"
#include "reconcile/load/spec.h"

/* The id must be the whole value: a longer id that starts with it, or the key elsewhere, is not it. */
static void test_named_in(void **unused)
{
	(void)unused;
	assert_true(stack_persistent_named_in("{\"persistentResourceId\":\"eval-pool\",\"workerPoolSpecs\":[]}",
					      "eval-pool"));
	assert_false(stack_persistent_named_in("{\"persistentResourceId\":\"eval-pool-2\"}", "eval-pool"));
	assert_false(stack_persistent_named_in("{\"persistentResourceId\":\"eval\"}", "eval-pool"));
	assert_false(stack_persistent_named_in("{\"network\":\"eval-pool\"}", "eval-pool"));
	assert_false(stack_persistent_named_in("{\"persistentResourceId\":\"", "eval-pool"));
	assert_false(stack_persistent_named_in(NULL, "eval-pool"));
	/* A value that holds the key again (an arg) does not hide the real one. */
	assert_true(stack_persistent_named_in("{\"args\":[\"\\\"persistentResourceId\\\":\\\"x\"],"
					      "\"persistentResourceId\":\"eval-pool\"}",
					      "eval-pool"));
}

/* A worker pool lands on the pool of equal machine type, accelerator type and count. */
static void test_pool_for(void **unused)
{
	char l4s[] = "l4s", cpuid[] = "cpu", g2[] = "g2-standard-8", n1[] = "n1-standard-4", l4[] = "NVIDIA_L4";
	struct stack_persistent_pool pools[2] = {
		{ .id = l4s, .machine_type = g2, .accelerator_type = l4, .accelerator_count = 1, .replica_count = 2 },
		{ .id = cpuid, .machine_type = n1, .replica_count = 1 },
	};
	struct stack_persistent d;
	struct spec_pool on_l4 = { .machine_type = g2, .accelerator_type = l4, .accelerator_count = 1, .replica_count = 1 };
	struct spec_pool two = on_l4, cpu = { .machine_type = n1, .replica_count = 1 };

	(void)unused;
	memset(&d, 0, sizeof(d));
	d.pools = pools;
	d.npools = 2;
	two.accelerator_count = 2;
	assert_ptr_equal(stack_persistent_pool_for(&d, &on_l4), &pools[0]);
	assert_ptr_equal(stack_persistent_pool_for(&d, &cpu), &pools[1]);
	assert_null(stack_persistent_pool_for(&d, &two));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named_in),
		cmocka_unit_test(test_pool_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
