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
	/* Burst of 60 (a tenth of 600) at once, then the bucket refills at
	 * 600 - 60 = 540 a minute: one every 111.1 ms, 140 of them in 15.556 s. */
	assert_int_equal(t[59], 5000);
	assert_int_equal(t[60], 5112);
	assert_int_equal(fc.slept, 15556);
	assert_int_equal(fc.sleeps, 140);
	assert_window_bound(t, 200, 1000, 60, 540);
	assert_window_bound(t, 200, 10000, 60, 540);
	/* After the burst, no more than 10 in any second. */
	assert_window_bound(t + 60, 140, 1000, 1, 540);
	/* Another region has its own full bucket. */
	int64_t w = -1;
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "europe-west4", 0, &w), 0);
	assert_int_equal(w, 0);
	gcp_ratelimit_free(rl);
}

/*
 * What Google enforces: requests per minute. However the requests come,
 * no 60 s window may hold more than the quota (a bucket refilled at the
 * full rate would let 660 through in the first minute).
 */
static void test_no_minute_over_quota(void **state)
{
	struct vx_ctx ctx;
	struct fake_clock fc;
	struct gcp_ratelimit *rl = NULL;
	int64_t *t = calloc(2000, sizeof(*t));
	int i;

	(void)state;
	assert_non_null(t);
	fake_ctx(&ctx, &fc);
	assert_int_equal(gcp_ratelimit_new(&rl, &ctx, NULL, NULL), 0);
	for (i = 0; i < 2000; i++) {
		/* an idle gap now and then lets the bucket fill up again */
		if (i % 700 == 699)
			fc.now += 90000;
		assert_int_equal(gcp_ratelimit_wait(rl, "aiplatform", "us-central1", 0), 0);
		t[i] = fc.now;
	}
	assert_window_bound(t, 2000, 60000, 0, 600);
	free(t);
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
	/* 60 creations a minute, burst 6, refilled at 54 a minute: the seventh waits 1.11 s. */
	for (i = 0; i < 6; i++) {
		assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
		assert_int_equal(w, 0);
	}
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
	assert_int_equal(w, 1112);
	assert_int_equal(gcp_ratelimit_reserve(rl, "aiplatform", "r", 1, &w), 0);
	assert_int_equal(w, 2223);
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
	assert_int_equal(w, 1112);
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
	/* 120 a minute, burst 2: refilled at 118 a minute, one per 508.5 ms once spent. */
	assert_int_equal(gcp_ratelimit_reserve(rl, "compute", NULL, 1, &w), 0);
	assert_int_equal(w, 509);
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
		cmocka_unit_test(test_no_minute_over_quota),
		cmocka_unit_test(test_create_bucket_and_refill),
		cmocka_unit_test(test_options_and_unlimited),
		cmocka_unit_test(test_wait_interrupted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
