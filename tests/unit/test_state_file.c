/* Unit tests for state/state_file.c: the one-file backend and its FILE.lock. */
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
#include "state/state_file.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "tests/unit/support/staterepo.h"

static void test_file_round_trip_and_lock(void **unused)
{
	char dir[] = "/tmp/vx-stfile-XXXXXX", path[64], lockp[80], tmpp[128];
	struct vx_ctx ctx;
	struct state_file_opts o = { "research", path };
	struct state_backend *a = NULL, *b = NULL;
	struct state st = STATE_INIT, back = STATE_INIT;
	struct state_history_entry *h = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf text = VX_BUF_INIT;
	char *want = NULL;
	size_t n = 0;
	int64_t now = INT64_C(1795341720000);

	(void)unused;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.json", dir);
	snprintf(lockp, sizeof(lockp), "%s.lock", path);
	vx_ctx_init(&ctx);
	staterepo_fixed_clock(&ctx, &now);
	ctx.seed = 3;
	assert_int_equal(state_file_open(&a, &ctx, &o, &err), 0);
	assert_int_equal(state_file_open(&b, &ctx, &o, &err), 0);

	assert_int_equal(state_lock_acquire(a, NULL, &err), 0);
	assert_int_equal(access(lockp, F_OK), 0);
	/* Made whole through a linked temporary file, which is gone. */
	snprintf(tmpp, sizeof(tmpp), "%s.tmp.%ld", lockp, (long)getpid());
	assert_int_equal(access(tmpp, F_OK), -1);
	assert_int_equal(state_lock_acquire(b, NULL, &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "state is locked by ", 19) == 0);

	assert_int_equal(state_load(a, &st, &err), 0);
	assert_int_equal(state_add_record(&st, "job.a", "CustomJob", NULL, &err), 0);
	if (state_write(a, &st, "one", &err) != 0)
		fail_msg("write: %s", err.msg);
	assert_int_equal(st.serial, 1);
	/* b may not write while a holds the lock. */
	assert_int_equal(state_load(b, &back, &err), 0);
	assert_int_equal(back.serial, 1);
	assert_non_null(back.lock);
	assert_int_equal(state_write(b, &back, "no", &err), VX_ECONFLICT);
	/* What is in the file is exactly state_to_json of the state, without the lock. */
	assert_int_equal(vx_buf_read_file(&text, path, 0, &err), 0);
	state_lock_free(back.lock);
	back.lock = NULL;
	assert_int_equal(state_to_json(&back, &want, &err), 0);
	assert_string_equal(vx_buf_str(&text), want);
	assert_non_null(state_find(&back, "job.a"));

	assert_int_equal(state_history(a, "job.a", 0, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_null(h[0].commit);
	assert_string_equal(h[0].record->address, "job.a");
	state_history_free(h, n);

	/* Wrong id refused, the right one clears. */
	assert_int_equal(state_unlock(b, "ffffffffffffffffffffffffffffffff", &err), VX_ECONFLICT);
	assert_int_equal(state_lock_drop(a, &err), 0);
	assert_int_equal(access(lockp, F_OK), -1);
	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	assert_int_equal(state_lock_renew(b, &err), 0);
	assert_int_equal(state_unlock(a, state_lock_held(b)->id, &err), 0);
	assert_int_equal(state_lock_renew(b, &err), VX_ECONFLICT);

	/* A corrupted file is refused with the reason. */
	{
		FILE *fp = fopen(path, "w");

		fputs("{\"version\": 1, \"stack\": \"research\"}", fp);
		fclose(fp);
	}
	state_release(&back);
	assert_int_equal(state_load(b, &back, &err), VX_EINVAL);
	assert_true(strncmp(err.msg, "reading state file /tmp/vx-stfile-", 34) == 0);
	assert_non_null(strstr(err.msg, "invalid state JSON: missing key \"serial\""));

	unlink(path);
	unlink(lockp);
	rmdir(dir);
	free(want);
	vx_buf_release(&text);
	state_release(&st);
	state_release(&back);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_round_trip_and_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
