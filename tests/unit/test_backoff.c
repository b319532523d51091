/* Unit tests for providers/gcp/backoff: the full-jitter schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "providers/gcp/backoff.h"
#include "util/ctx.h"
#include "util/rand.h"

static void test_same_seed_same_schedule(void **state)
{
	struct gcp_backoff a, b;
	uint64_t ra = 42, rb = 42;
	int i;

	(void)state;
	gcp_backoff_init(&a, 1000, 32000);
	gcp_backoff_init(&b, 1000, 32000);
	for (i = 0; i < 20; i++)
		assert_int_equal(gcp_backoff_next(&a, &ra), gcp_backoff_next(&b, &rb));
}

static void test_known_values(void **state)
{
	uint64_t r = 0;

	(void)state;
	/* splitmix64's published first output for state 0. */
	assert_true(vx_rand_next(&r) == 0xe220a8397b1dcdafULL);
	assert_true(vx_rand_next(&r) == 0x6e789e6aa1b965f4ULL);
}

static void test_bounds_and_cap(void **state)
{
	struct gcp_backoff b;
	uint64_t r = 7;
	int64_t ceiling = 1000, d, max_seen = 0, sum = 0;
	int i, seed;

	(void)state;
	for (seed = 1; seed <= 50; seed++) {
		r = (uint64_t)seed;
		ceiling = 1000;
		gcp_backoff_init(&b, 1000, 32000);
		for (i = 0; i < 12; i++) {
			d = gcp_backoff_next(&b, &r);
			assert_true(d >= 0);
			assert_true(d <= ceiling);
			if (i >= 6 && d > max_seen)
				max_seen = d;
			sum += d;
			ceiling = ceiling * 2 > 32000 ? 32000 : ceiling * 2;
		}
		assert_int_equal(b.ceiling_ms, 32000);
	}
	/* Full jitter: the capped draws spread over [0, 32 s], not all near 0. */
	assert_true(max_seen > 16000);
	assert_true(sum > 0);
}

static void test_different_seeds_differ(void **state)
{
	struct gcp_backoff a, b;
	uint64_t ra = 1, rb = 2;
	int i, same = 0;

	(void)state;
	gcp_backoff_init(&a, 1000, 32000);
	gcp_backoff_init(&b, 1000, 32000);
	for (i = 0; i < 10; i++)
		same += gcp_backoff_next(&a, &ra) == gcp_backoff_next(&b, &rb);
	assert_true(same < 3);
}

static void test_defaults_and_seed(void **state)
{
	struct gcp_backoff b;
	struct vx_ctx ctx;

	(void)state;
	gcp_backoff_init(&b, 0, 0);
	assert_int_equal(b.initial_ms, 1000);
	assert_int_equal(b.max_ms, 1000);
	vx_ctx_init(&ctx);
	ctx.seed = 99;
	assert_true(vx_rand_seed(&ctx) == 99);
	ctx.seed = 0;
	assert_true(vx_rand_seed(&ctx) != 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_schedule),
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_bounds_and_cap),
		cmocka_unit_test(test_different_seeds_differ),
		cmocka_unit_test(test_defaults_and_seed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
