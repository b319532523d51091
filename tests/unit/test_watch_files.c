/* Unit tests for watch_files_digest (workflow/watch.c): what an idle vx watch cycle checks of the stack's files. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "workflow/watch.h"

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_non_null(f = fopen(p, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static uint64_t digest(const char *dir)
{
	struct vx_err err = VX_ERR_INIT;
	uint64_t d = 0;

	assert_int_equal(watch_files_digest(dir, &d, NULL, &err), 0);
	return d;
}

/* An edit, a new file or a removed one changes it; a file the stack does not read does not. */
static void test_files(void **unused)
{
	char dir[] = "/tmp/vx-test-watch-files-XXXXXX", p[512];
	struct vx_err err = VX_ERR_INIT;
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	uint64_t d0, d1, d2;

	(void)unused;
	assert_non_null(mkdtemp(dir));
	put(dir, "stack.yaml", "kind: Stack\n");
	put(dir, "jobs.yml", "a\n");
	snprintf(p, sizeof(p), "%s/jobs.yml", dir);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
	d0 = digest(dir);
	assert_true(d0 == digest(dir));
	/* Not a stack file: README, a hidden file. */
	put(dir, "README.md", "x\n");
	put(dir, ".hidden.yaml", "x\n");
	assert_true(d0 == digest(dir));
	/* The same size, another content: the time tells. */
	put(dir, "jobs.yml", "b\n");
	d1 = digest(dir);
	assert_true(d1 != d0);
	put(dir, "more.yaml", "c\n");
	d2 = digest(dir);
	assert_true(d2 != d1);
	snprintf(p, sizeof(p), "%s/more.yaml", dir);
	assert_int_equal(unlink(p), 0);
	assert_true(digest(dir) == d1);
	/* The newest time among them: the stack's files, not README.md. */
	{
		struct timespec old[2] = { { 2000, 5 }, { 2000, 5 } }, newer[2] = { { 3000, 7 }, { 3000, 7 } },
				latest[2] = { { 4000, 9 }, { 4000, 9 } };
		int64_t newest = -1;

		snprintf(p, sizeof(p), "%s/jobs.yml", dir);
		assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
		snprintf(p, sizeof(p), "%s/stack.yaml", dir);
		assert_int_equal(utimensat(AT_FDCWD, p, newer, 0), 0);
		snprintf(p, sizeof(p), "%s/README.md", dir);
		assert_int_equal(utimensat(AT_FDCWD, p, latest, 0), 0);
		assert_int_equal(watch_files_digest(dir, &d2, &newest, &err), 0);
		assert_true(newest == (int64_t)3000 * 1000000000 + 7);
	}
	/* No such directory: an error that names it. */
	snprintf(p, sizeof(p), "%s/nope", dir);
	assert_int_not_equal(watch_files_digest(p, &d0, NULL, &err), 0);
	assert_non_null(strstr(vx_err_msg(&err), "nope"));
	vx_err_release(&err);
	for (size_t i = 0; i < 4; i++) {
		static const char *const names[] = { "stack.yaml", "jobs.yml", "README.md", ".hidden.yaml" };

		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		assert_int_equal(unlink(p), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
