/*
 * Unit tests for state/lock.c, run twice: on the git backend (temporary
 * repositories) and on the gcs backend (the fake's Cloud Storage), with a
 * fixed clock: the lease means the same on both.
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "state/state_git.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "tests/unit/support/fakegcs.h"
#include "tests/unit/support/staterepo.h"

static int setup(void **state)
{
	*state = staterepo_new("/tmp/vx-stlock-XXXXXX");
	return 0;
}

/* The gcs group's fake, started once for the group. */
static struct fakegcs *gcs;

static int setup_gcs(void **state)
{
	struct staterepo *f = staterepo_new("/tmp/vx-stlock-XXXXXX");

	f->gcs = gcs;
	fakegcs_new_prefix(gcs, f->prefix, sizeof(f->prefix));
	*state = f;
	return 0;
}

static int group_start_gcs(void **state)
{
	(void)state;
	gcs = fakegcs_start();
	return 0;
}

static int group_stop_gcs(void **state)
{
	(void)state;
	fakegcs_stop(gcs);
	gcs = NULL;
	return 0;
}

static int teardown(void **state)
{
	staterepo_free(*state);
	return 0;
}

static const struct state_lock_opts alice = { .operation = "apply", .lease_ms = 15 * 60 * 1000,
					       .user = "alice", .host = "ci-runner-3", .pid = 4242 };

static void test_held_refused(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_backend *b = staterepo_open(f);
	struct vx_err err = VX_ERR_INIT;
	struct state_lock *cur = NULL;
	struct state st = STATE_INIT;
	const char *id;
	char *want;

	if (state_lock_acquire(a, &alice, &err) != 0)
		fail_msg("acquire: %s", err.msg);
	id = state_lock_held(a)->id;
	assert_int_equal(strlen(id), 32);
	assert_int_equal(state_lock_acquire(b, NULL, &err), VX_ECONFLICT);
	want = vx_asprintf("state is locked by alice@ci-runner-3 (pid 4242, apply) since "
			   "2026-11-22T10:02:00Z, expires 10:17:00Z; lock id %s; wait with "
			   "-lock-timeout or clear it with: vx unlock %s",
			   id, id);
	assert_string_equal(err.msg, want);
	assert_null(state_lock_held(b));
	/* The lock is visible to readers and writes by others are refused. */
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_string_equal(cur->user, "alice");
	assert_int_equal(state_load(b, &st, &err), 0);
	assert_non_null(st.lock);
	assert_int_equal(state_add_record(&st, "job.x", "CustomJob", NULL, &err), 0);
	assert_int_equal(state_write(b, &st, "sneaky", &err), VX_ECONFLICT);
	/* The holder writes; its lock survives the write; renew; drop. */
	assert_int_equal(state_write(a, &st, "mine", &err), 0);
	f->now += 60000;
	assert_int_equal(state_lock_renew(a, &err), 0);
	state_lock_free(cur);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_true(cur->expires_ms == f->now + 15 * 60 * 1000);
	assert_int_equal(state_lock_drop(a, &err), 0);
	assert_null(state_lock_held(a));
	state_lock_free(cur);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_null(cur);
	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	assert_int_equal(state_lock_drop(b, &err), 0);
	free(want);
	state_release(&st);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

static void test_dead_pid_takeover(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_backend *b = staterepo_open(f);
	struct state_lock_opts dead = { .operation = "apply", .user = "bob", .pid = 99999999 };
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(state_lock_acquire(a, &dead, &err), 0); /* this host, no such pid */
	assert_true(state_lock_holder_dead(state_lock_held(a)));
	if (state_lock_acquire(b, NULL, &err) != 0)
		fail_msg("takeover: %s", err.msg);
	assert_int_equal(state_lock_held(b)->pid, getpid());
	/* The old holder finds out on its next heartbeat. */
	assert_int_equal(state_lock_renew(a, &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "renewing the lock: lock ", 24) == 0);
	assert_non_null(strstr(err.msg, " was lost: state is locked by "));
	assert_null(state_lock_held(a));
	assert_int_equal(state_lock_drop(b, &err), 0);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

static void count_wait(void *ud, const struct state_lock *holder, int64_t timeout_ms)
{
	int *n = ud;

	assert_string_equal(holder->user, "alice");
	assert_true(timeout_ms == 5 * 60 * 1000);
	++*n;
}

static void test_expiry_and_wait(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_backend *b = staterepo_open(f);
	int waits = 0;
	struct state_lock_opts wait = { .operation = "apply", .timeout_ms = 20 * 60 * 1000,
					.retry_ms = 60 * 1000 };
	struct state_lock_opts short_wait = { .operation = "apply", .timeout_ms = 5 * 60 * 1000,
					      .retry_ms = 60 * 1000, .unlock_args = "'my stack'",
					      .on_wait = count_wait, .ud = &waits };
	struct vx_err err = VX_ERR_INIT;
	int64_t t0 = f->now;
	size_t n;

	assert_int_equal(state_lock_acquire(a, &alice, &err), 0);
	/* Waiting 5 minutes is not enough: refused, saying so. */
	assert_int_equal(state_lock_acquire(b, &short_wait, &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "gave up after waiting 300s: state is locked by alice@", 53) ==
		    0);
	assert_true(f->now == t0 + 5 * 60 * 1000);
	/* Said once, not at each of the five looks; the hint names the directory. */
	assert_int_equal(waits, 1);
	n = strlen(err.msg);
	assert_true(n > 11 && !strcmp(err.msg + n - 11, " 'my stack'"));
	/* Waiting up to 20 minutes: the 15-minute lease expires on the way. */
	if (state_lock_acquire(b, &wait, &err) != 0)
		fail_msg("wait: %s", err.msg);
	assert_true(f->now == t0 + 15 * 60 * 1000);
	assert_int_equal(state_lock_drop(b, &err), 0);
	/* a's lease is gone: dropping it is a conflict, and forgets it. */
	assert_int_equal(state_lock_drop(a, &err), VX_ECONFLICT);
	assert_null(state_lock_held(a));
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

static void test_unlock_by_id(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_backend *b = staterepo_open(f);
	struct vx_err err = VX_ERR_INIT;
	struct state_lock *cur = NULL;
	char id[33];

	assert_int_equal(state_unlock(b, "00000000000000000000000000000000", &err), VX_ENOTFOUND);
	assert_string_equal(err.msg, "unlocking: the state of stack research is not locked");
	assert_int_equal(state_lock_acquire(a, &alice, &err), 0);
	snprintf(id, sizeof(id), "%s", state_lock_held(a)->id);
	assert_int_equal(state_unlock(b, "00000000000000000000000000000000", &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "unlocking: lock id 00000000000000000000000000000000 does not "
				     "match the current lock ",
			    84) == 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_string_equal(cur->id, id);
	state_lock_free(cur);
	assert_int_equal(state_unlock(b, id, &err), 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_null(cur);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Two clocks a test moves apart: a wall clock and a monotonic one. */
struct split_clock {
	int64_t wall;
	int64_t mono;
};

static int64_t split_now(void *ud)
{
	return ((struct split_clock *)ud)->wall;
}

static int64_t split_mono(void *ud)
{
	return ((struct split_clock *)ud)->mono;
}

static void split_sleep(void *ud, int64_t ms)
{
	((struct split_clock *)ud)->wall += ms;
	((struct split_clock *)ud)->mono += ms;
}

static const char fence_msg_3s_4s[] =
	"the state lease expired while this apply was paused (last renewed 3s ago, lease 4s): "
	"stopping without sending; another apply may hold it now";

static void test_fence_margin(void **state)
{
	(void)state;
	/* A quarter of the lease, at most a minute. */
	assert_true(state_lock_margin_ms(1000) == 250);
	assert_true(state_lock_margin_ms(2000) == 500);
	assert_true(state_lock_margin_ms(4 * 60 * 1000) == 60 * 1000);
	assert_true(state_lock_margin_ms(STATE_LOCK_LEASE_MS) == 60 * 1000);
}

/* Valid until confirmed + lease - margin on the monotonic clock, then refused. */
static void test_fence_valid_margin_expired(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_lock_opts four = { .operation = "apply", .lease_ms = 4000, .user = "alice", .host = "ci-runner-3", .pid = 4242 };
	struct split_clock c = { f->now, 5000000 };
	struct vx_err err = VX_ERR_INIT;

	f->ctx.clock.now_ms = split_now;
	f->ctx.clock.mono_ms = split_mono;
	f->ctx.clock.sleep_ms = split_sleep;
	f->ctx.clock.ud = &c;
	/* No lease yet: nothing may be sent. */
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "no state lease is held: stopping without sending");
	assert_int_equal(state_lock_acquire(a, &four, &err), 0);
	assert_int_equal(state_lock_fence(a, &err), 0);
	/* Valid: 2.999 s of a 4 s lease with a 1 s margin. */
	c.mono += 2999;
	assert_int_equal(state_lock_fence(a, &err), 0);
	/* Within the margin: refused although the lease itself runs 1 s more. */
	c.mono += 1;
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, fence_msg_3s_4s);
	/* Long expired: still refused, never wrapped round. */
	c.mono += 3600 * 1000;
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	/* A renewal that succeeds (nobody took the lease) makes it valid again. */
	assert_int_equal(state_lock_renew(a, &err), 0);
	assert_int_equal(state_lock_fence(a, &err), 0);
	/* Dropped: refused. */
	assert_int_equal(state_lock_drop(a, &err), 0);
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "no state lease is held: stopping without sending");
	state_backend_free(a);
	vx_err_release(&err);
}

/*
 * The fence counts on the monotonic clock, which goes on through a pause or
 * a suspend, not on the wall clock (which the holder only writes): a wall
 * clock stepped forward an hour changes nothing, a monotonic clock moved
 * past the validity refuses whatever the wall clock says.
 */
static void test_fence_reads_the_injected_monotonic_clock(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_lock_opts four = { .operation = "apply", .lease_ms = 4000, .user = "alice", .host = "ci-runner-3", .pid = 4242 };
	struct split_clock c = { f->now, 7 };
	struct vx_err err = VX_ERR_INIT;

	f->ctx.clock.now_ms = split_now;
	f->ctx.clock.mono_ms = split_mono;
	f->ctx.clock.sleep_ms = split_sleep;
	f->ctx.clock.ud = &c;
	assert_int_equal(state_lock_acquire(a, &four, &err), 0);
	c.wall += 3600 * 1000;
	assert_int_equal(state_lock_fence(a, &err), 0);
	c.wall -= 3600 * 1000;
	c.mono += 3000;
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, fence_msg_3s_4s);
	assert_int_equal(state_lock_drop(a, &err), 0);
	state_backend_free(a);
	vx_err_release(&err);
}

/* The heartbeat renews once a third of the lease has passed, not before. */
static void test_heartbeat_renews_after_a_third(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *a = staterepo_open(f);
	struct state_backend *b = staterepo_open(f);
	struct state_lock_opts three = { .operation = "apply", .lease_ms = 3000, .user = "alice", .host = "ci-runner-3", .pid = 4242 };
	struct state_lock *cur = NULL;
	struct vx_err err = VX_ERR_INIT;
	int64_t t0 = f->now;

	assert_int_equal(state_lock_acquire(a, &three, &err), 0);
	f->now += 1000;
	assert_int_equal(state_lock_heartbeat(a, &err), 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_true(cur->expires_ms == t0 + 3000); /* not renewed */
	state_lock_free(cur);
	f->now += 1;
	assert_int_equal(state_lock_heartbeat(a, &err), 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_true(cur->expires_ms == t0 + 1001 + 3000);
	state_lock_free(cur);
	/* Renewed: the fence counts from the renewal (margin 750 ms). */
	f->now += 2249;
	assert_int_equal(state_lock_fence(a, &err), 0);
	f->now += 1;
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	/* Expired and taken over: the heartbeat finds out and the fence stays shut. */
	f->now += 1000;
	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	assert_int_equal(state_lock_heartbeat(a, &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "renewing the lock: lock ", 24) == 0);
	assert_int_equal(state_lock_fence(a, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "no state lease is held: stopping without sending");
	assert_int_equal(state_lock_drop(b, &err), 0);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

#define LOCK_TESTS(setup)                                                                   \
	cmocka_unit_test_setup_teardown(test_held_refused, setup, teardown),                 \
	cmocka_unit_test_setup_teardown(test_dead_pid_takeover, setup, teardown),            \
	cmocka_unit_test_setup_teardown(test_expiry_and_wait, setup, teardown),              \
	cmocka_unit_test_setup_teardown(test_unlock_by_id, setup, teardown),                 \
	cmocka_unit_test(test_fence_margin),                                                 \
	cmocka_unit_test_setup_teardown(test_fence_valid_margin_expired, setup, teardown),   \
	cmocka_unit_test_setup_teardown(test_fence_reads_the_injected_monotonic_clock, setup, \
					teardown),                                           \
	cmocka_unit_test_setup_teardown(test_heartbeat_renews_after_a_third, setup, teardown)

int main(void)
{
	const struct CMUnitTest git[] = { LOCK_TESTS(setup) };
	const struct CMUnitTest gcs_tests[] = { LOCK_TESTS(setup_gcs) };
	int failed = cmocka_run_group_tests_name("lock on git", git, NULL, NULL);

	return failed + cmocka_run_group_tests_name("lock on gcs", gcs_tests, group_start_gcs,
						    group_stop_gcs);
}
