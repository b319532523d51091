/* Unit tests for util/completion.c: scripts from a table passed in, names that could not be
 * written into a script refused. Running the scripts is tests/e2e/test_completion.py's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/completion.h"
#include "util/err.h"

static const char *const formats[] = { "human", "json", NULL };

static const struct completion_flag run_flags[] = {
	{ .name = "format", .arg = COMPLETION_ARG_REQUIRED, .values = formats },
	{ .name = "target", .arg = COMPLETION_ARG_REQUIRED, .value = COMPLETION_VALUE_ADDRESS },
	{ .name = "C", .arg = COMPLETION_ARG_REQUIRED, .value = COMPLETION_VALUE_DIR },
	{ .name = "quiet", .arg = COMPLETION_ARG_NONE },
};

static const struct completion_cmd cmds[] = {
	{ .name = "run", .alias = "tool-run", .summary = "run it's things", .flags = run_flags, .nflags = 4 },
	{ .name = "list", .summary = "list" },
};

static void test_bash_from_the_table(void **state)
{
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(completion_script(&b, "bash", "tool", cmds, 2), 0);
	assert_non_null(strstr(b.data, "_tool_complete() {\n"));
	assert_non_null(strstr(b.data, "\ttool-run) cmd=run ;;\n"));
	assert_non_null(strstr(b.data, "\t\t\twords='run list'\n"));
	assert_non_null(strstr(b.data, "\t\tflags='-format -target -C -quiet -help -debug'\n"
				       "\t\tvalued=' format target C '\n\t\tdirs=' C '\n"));
	assert_non_null(strstr(b.data, "\trun:format:?) what=words words='human json' ;;\n"
				       "\trun:target:?) what=addresses ;;\n\trun:C:?) what=dir ;;\n"));
	assert_null(strstr(b.data, "run:quiet"));
	assert_non_null(strstr(b.data, "complete -o default -F _tool_complete tool tool-run\n"));
	vx_buf_release(&b);
}

static void test_zsh_and_fish(void **state)
{
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(completion_script(&b, "zsh", "tool", cmds, 2), 0);
	assert_memory_equal(b.data, "#compdef tool tool-run\n", 23);
	vx_buf_reset(&b);
	assert_int_equal(completion_script(&b, "fish", "tool", cmds, 2), 0);
	/* A summary is quoted for fish: its ' escaped. */
	assert_non_null(strstr(b.data, "complete -c tool -n __fish_use_subcommand -f -a run -d 'run it\\'s things'\n"));
	assert_non_null(strstr(b.data, "complete -c tool-run -o format -x -a 'human json'\n"));
	assert_non_null(strstr(b.data, "complete -c tool -n '__fish_seen_subcommand_from run' -o C -x -a "
				       "'(__fish_complete_directories)'\n"));
	vx_buf_release(&b);
}

static void test_refused(void **state)
{
	static const char *const bad_values[] = { "ok", "$(rm -rf ~)", NULL };
	struct completion_flag bad_flag = { .name = "format", .arg = COMPLETION_ARG_REQUIRED, .values = bad_values };
	struct completion_cmd bad[] = { { .name = "run", .flags = &bad_flag, .nflags = 1 } };
	struct completion_cmd quote[] = { { .name = "it's" } };
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(completion_script(&b, "tcsh", "tool", cmds, 2), VX_EINVAL);
	assert_int_equal(completion_script(&b, "bash", "tool", bad, 1), VX_EINVAL);
	assert_int_equal(completion_script(&b, "bash", "tool", quote, 1), VX_EINVAL);
	assert_int_equal(completion_script(&b, "bash", "to ol", cmds, 2), VX_EINVAL);
	assert_int_equal((int)b.len, 0);
	vx_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bash_from_the_table),
		cmocka_unit_test(test_zsh_and_fish),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests_name("completion", tests, NULL, NULL);
}
