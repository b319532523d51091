/*
 * Unit tests for workflow/ghactions.c: the escaping GitHub's toolkit
 * documents for workflow commands, the annotation lines, and the step
 * outputs file, where no name or value may end the NAME<<DELIMITER block
 * or add an output of its own.
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

#include "util/buf.h"
#include "util/diag.h"
#include "workflow/ghactions.h"

static void test_escape(void **st)
{
	struct vx_buf b = VX_BUF_INIT;

	(void)st;
	assert_int_equal(gha_escape(&b, "50% a:b,c\r\nd\x1b[2J", 0), 0);
	assert_string_equal(vx_buf_str(&b), "50%25 a:b,c%0D%0Ad?[2J");
	vx_buf_reset(&b);
	assert_int_equal(gha_escape(&b, "50% a:b,c\r\nd", 1), 0);
	assert_string_equal(vx_buf_str(&b), "50%25 a%3Ab%2Cc%0D%0Ad");
	vx_buf_release(&b);
}

static void test_annotations(void **st)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_buf b = VX_BUF_INIT;

	(void)st;
	d.cap = 3;
	assert_int_equal(vx_diags_add(&d, "jobs/a,b.yaml", 12, 5, "line one\nline two: 100%%"), 0);
	assert_int_equal(vx_diags_add(&d, "stack.yaml", 3, 0, "no column"), 0);
	assert_int_equal(vx_diags_add(&d, NULL, 0, 0, "stack-wide"), 0);
	assert_int_equal(vx_diags_add(&d, "x.yaml", 1, 1, "dropped"), 0);
	assert_int_equal(vx_diags_add(&d, "x.yaml", 1, 2, "dropped"), 0);
	assert_int_equal(gha_annotations(&b, &d), 0);
	assert_string_equal(vx_buf_str(&b),
			    "::error file=jobs/a%2Cb.yaml,line=12,col=5::line one%0Aline two: 100%25\n"
			    "::error file=stack.yaml,line=3::no column\n"
			    "::error::stack-wide\n"
			    "::error::... and 2 more\n");
	vx_buf_release(&b);
	vx_diags_release(&d);
}

static char *slurp(const char *path)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(vx_buf_read_file(&b, path, 1 << 20, &err), 0);
	return vx_buf_detach(&b);
}

static void test_outputs_refuse_what_could_inject(void **st)
{
	char path[] = "/tmp/vx-gha-XXXXXX";
	struct vx_err err = VX_ERR_INIT;
	int fd = mkstemp(path);
	char *got, delim[64];
	const struct gha_output good[2] = {
		{ .name = "changes", .value = "3" },
		{ .name = "cost_per_hour", .value = "" },
	};
	const struct gha_output bad_value[2] = {
		{ .name = "changes", .value = "3" },
		{ .name = "exitcode", .value = "0\nchanges=99" },
	};
	const struct gha_output bad_name[1] = { { .name = "a\nb", .value = "1" } };
	const struct gha_output heredoc_name[1] = { { .name = "a<<EOF", .value = "1" } };

	(void)st;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(setenv("GITHUB_OUTPUT", path, 1), 0);
	assert_int_equal(gha_outputs_write(NULL, bad_value, 2, &err), VX_EINVAL);
	assert_string_equal(vx_err_msg(&err), "step output exitcode: a value is at most 128 printable "
			    "ASCII characters");
	assert_int_equal(gha_outputs_write(NULL, bad_name, 1, &err), VX_EINVAL);
	assert_int_equal(gha_outputs_write(NULL, heredoc_name, 1, &err), VX_EINVAL);
	got = slurp(path);
	assert_string_equal(got, ""); /* nothing written, not even the good one */
	free(got);

	assert_int_equal(gha_outputs_write(NULL, good, 2, &err), 0);
	got = slurp(path);
	assert_int_equal(sscanf(got, "changes<<%63[^\n]", delim), 1);
	assert_int_equal(strlen(delim), strlen("ghadelimiter_") + 32);
	{
		char *want = vx_asprintf("changes<<%s\n3\n%s\ncost_per_hour<<%s\n\n%s\n", delim, delim,
					 delim, delim);

		assert_string_equal(got, want);
		free(want);
	}
	free(got);
	unsetenv("GITHUB_OUTPUT");
	/* Unset: nothing to do, not an error. */
	assert_int_equal(gha_outputs_write(NULL, good, 2, &err), 0);
	assert_int_equal(gha_summary_append(NULL, "x", &err), 0);
	unlink(path);
	vx_err_release(&err);
}

static void test_active_only_for_true(void **st)
{
	(void)st;
	unsetenv("GITHUB_ACTIONS");
	assert_false(gha_active(NULL));
	assert_int_equal(setenv("GITHUB_ACTIONS", "1", 1), 0);
	assert_false(gha_active(NULL));
	assert_int_equal(setenv("GITHUB_ACTIONS", "true", 1), 0);
	assert_true(gha_active(NULL));
	unsetenv("GITHUB_ACTIONS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_annotations),
		cmocka_unit_test(test_outputs_refuse_what_could_inject),
		cmocka_unit_test(test_active_only_for_true),
	};

	unsetenv("GITHUB_STEP_SUMMARY");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
