/* Unit tests for state/lock.c on the git backend (temporary repositories, fixed clock). */
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
#include "tests/unit/support/staterepo.h"

static int setup(void **state)
{
	*state = staterepo_new("/tmp/vx-stlock-XXXXXX");
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
	struct state_backend *a = staterepo_open_git(f, f->repo, NULL);
	struct state_backend *b = staterepo_open_git(f, f->repo, NULL);
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
	assert_int_equal(state_add_record(&st, "job.x", NULL, NULL, &err), 0);
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
	struct state_backend *a = staterepo_open_git(f, f->repo, NULL);
	struct state_backend *b = staterepo_open_git(f, f->repo, NULL);
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
	struct state_backend *a = staterepo_open_git(f, f->repo, NULL);
	struct state_backend *b = staterepo_open_git(f, f->repo, NULL);
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
	struct state_backend *a = staterepo_open_git(f, f->repo, NULL);
	struct state_backend *b = staterepo_open_git(f, f->repo, NULL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_held_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_pid_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_and_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlock_by_id, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
