/* Unit tests for providers/gcp/ratelimit: token buckets on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "providers/gcp/ratelimit.h"
#include "util/ctx.h"

struct fake_clock {
	int64_t now;
	int64_t slept;
	int sleeps;
};

static int64_t fc_mono(void *ud)
{
	return ((struct fake_clock *)ud)->now;
}

static int64_t fc_now(void *ud)
{
	return 1700000000000LL + ((struct fake_clock *)ud)->now;
}

static void fc_sleep(void *ud, int64_t ms)
{
	struct fake_clock *c = ud;

	if (ms > 0) {
		c->now += ms;
		c->slept += ms;
		c->sleeps++;
	}
}

static void fake_ctx(struct vx_ctx *ctx, struct fake_clock *fc)
{
	vx_ctx_init(ctx);
	fc->now = 5000;
	fc->slept = 0;
	fc->sleeps = 0;
	ctx->clock.mono_ms = fc_mono;
	ctx->clock.now_ms = fc_now;
	ctx->clock.sleep_ms = fc_sleep;
	ctx->clock.ud = fc;
}

/* At most burst + rate * window / 60000 events fall in any window. */
static void assert_window_bound(const int64_t *t, int n, int64_t window, double burst, double rate)
{
	int i, j;
	double bound = burst + rate * (double)window / 60000.0;

	for (i = 0; i < n; i++) {
		for (j = i; j < n && t[j] < t[i] + window; j++)
			;
		assert_true((double)(j - i) <= bound + 1e-9);
	}
}

static void test_200_against_600_per_minute(void **state)
{
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct gcp_ratelimit *rl = NULL;
	struct vx_err err = VX_ERR_INIT;
	int64_t t[200];
	int i;

	(void)state;
	fake_ctx(&ctx, &fc);
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, NULL, &err), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(gcp_ratelimit_wait(rl, "aiplatform", "us-central1", 0), 0);
		t[i] = fc.now;
	}
	/* Burst of 60 (a tenth of 600) at once, then one every 100 ms: 140 * 100 ms. */
	assert_int_equal(t[59], 5000);
	assert_int_equal(t[60], 5100);
	assert_int_equal(fc.slept, 14000);
	assert_int_equal(fc.sleeps, 140);
	assert_window_bound(t, 200, 1000, 60, 600);
	assert_window_bound(t, 200, 10000, 60, 600);
	/* After the burst, no more than 10 in any second. */
	assert_window_bound(t + 60, 140, 1000, 1, 600);
	/* Another region has its own full bucket. */
	int64_t w = -1;
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "europe-west4", 0, &w), 0);
	assert_int_equal(w, 0);
	gcp_ratelimit_free(rl);
}

static void test_create_bucket_and_refill(void **state)
{
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct gcp_ratelimit *rl = NULL;
	int64_t w;
	int i;

	(void)state;
	fake_ctx(&ctx, &fc);
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, NULL, NULL), 0);
	/* 60 creations a minute, burst 6: the seventh waits a second. */
	for (i = 0; i < 6; i++) {
		assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
		assert_int_equal(w, 0);
	}
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
	assert_int_equal(w, 1000);
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
	assert_int_equal(w, 2000);
	/* Reads are not held back by the create bucket. */
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 0, &w), 0);
	assert_int_equal(w, 0);
	/* A minute later the bucket is full again, not overfull. */
	fc.now += 60000;
	for (i = 0; i < 6; i++) {
		assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
		assert_int_equal(w, 0);
	}
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
	assert_int_equal(w, 1000);
	gcp_ratelimit_free(rl);
}

static void test_options_and_unlimited(void **state)
{
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct gcp_ratelimit *rl = NULL;
	struct gcp_ratelimit_options o = { 120, -1, 2 };
	int64_t w;
	int i;

	(void)state;
	fake_ctx(&ctx, &fc);
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, &o, NULL), 0);
	assert_int_equal(gcp_ratelimit_reserve(rl, "compute", NULL, 1, &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(gcp_ratelimit_reserve(rl, "compute", NULL, 1, &w), 0);
	assert_int_equal(w, 0);
	/* 120 a minute = one per 500 ms once the burst of 2 is spent. */
	assert_int_equal(gcp_ratelimit_reserve(rl, "compute", NULL, 1, &w), 0);
	assert_int_equal(w, 500);
	/* Unknown APIs and NULL are unlimited by default. */
	gcp_ratelimit_free(rl);
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, NULL, NULL), 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(gcp_ratelimit_reserve(rl, "oauth", NULL, 0, &w), 0);
		assert_int_equal(w, 0);
		assert_int_equal(gcp_ratelimit_reserve(rl, NULL, NULL, 0, &w), 0);
		assert_int_equal(w, 0);
	}
	gcp_ratelimit_free(rl);
}

static volatile sig_atomic_t stop_flag;

static void test_wait_interrupted(void **state)
{
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct gcp_ratelimit *rl = NULL;
	struct gcp_ratelimit_options o = { 60, 0, 1 };

	(void)state;
	fake_ctx(&ctx, &fc);
	ctx.interrupted = &stop_flag;
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, &o, NULL), 0);
	assert_int_equal(gcp_ratelimit_wait(rl, "storage", NULL, 0), 0);
	stop_flag = 1;
	assert_int_equal(gcp_ratelimit_wait(rl, "storage", NULL, 0), VX_ECANCELED);
	assert_int_equal(fc.slept, 0);
	stop_flag = 0;
	gcp_ratelimit_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_200_against_600_per_minute),
		cmocka_unit_test(test_create_bucket_and_refill),
		cmocka_unit_test(test_options_and_unlimited),
		cmocka_unit_test(test_wait_interrupted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
