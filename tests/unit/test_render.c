/* Unit tests for reconcile/out/render.c: the human text, markdown and the JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/kind_job.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/out/render.h"
#include "reconcile/provider_job.h"
#include "util/buf.h"

#define HASH_A "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000"

static const char *const regions[] = { "us-central1" };

static struct render_header header(void)
{
	struct render_header h = {
		.stack = "research", .project = "my-project", .dir = "/repo/stack", .backend = "git",
		.state_ref = "refs/heads/vx/state/research",
		.state_commit = "0123456789abcdef0123456789abcdef01234567", .state_serial = 7,
		.state_lineage = "d78900b3-2055-4084-ab8b-76f61f94e371", .config_commit = NULL,
		.decl_hash = "ff00", .refresh = 1, .regions = regions, .nregions = 1,
	};
	return h;
}

static void make_plan(struct plan *p)
{
	static struct plan_decl d[2];
	struct plan_input in;
	struct live_jobs live = { 0 };
	struct vx_err err = VX_ERR_INIT;

	memset(d, 0, sizeof(d));
	d[0].address = "job.b|pipe"; d[0].name = "b"; d[0].region = "us-central1"; d[0].spec_hash = HASH_A;
	d[0].shape = "a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START"; d[0].run = 1; d[0].max_attempts = 3;
	d[1] = d[0];
	d[1].address = "job.a";
	d[1].name = "a";
	memset(&in, 0, sizeof(in));
	in.stack = "research";
	in.decls = d;
	in.ndecls = 2;
	in.live = &live;
	assert_int_equal(plan_build(p, &in, &err), 0);
}

static void test_human_exact(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct plan p;

	(void)unused;
	make_plan(&p);
	assert_int_equal(render_plan_human(&b, &p, &h, 0), 0);
	assert_string_equal(vx_buf_str(&b),
		"Stack research, project my-project\n"
		"State: git refs/heads/vx/state/research @ 0123456789ab (serial 7)\n"
		"Refresh: live jobs read in 1 region (us-central1)\n"
		"\n"
		"  +   job.a create\n"
		"        a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START in us-central1\n"
		"        new job\n"
		"  +   job.b|pipe create\n"
		"        a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START in us-central1\n"
		"        new job\n"
		"\n"
		"Plan: 2 to create. 0 unchanged.\n");
	vx_buf_reset(&b);
	/* Colour only when asked: escape codes appear, the words stay. */
	assert_int_equal(render_plan_human(&b, &p, &h, 1), 0);
	assert_non_null(strstr(vx_buf_str(&b), "\033[32m"));
	assert_non_null(strstr(vx_buf_str(&b), "job.a"));
	vx_buf_release(&b);
	plan_release(&p);
}

static void test_refresh_off_is_loud(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct plan p;

	(void)unused;
	h.refresh = 0;
	make_plan(&p);
	assert_int_equal(render_plan_human(&b, &p, &h, 0), 0);
	assert_non_null(strstr(vx_buf_str(&b), "Refresh: OFF (-refresh=false)"));
	vx_buf_release(&b);
	plan_release(&p);
}

static void test_markdown_escapes_cells(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct plan p;

	(void)unused;
	make_plan(&p);
	assert_int_equal(render_plan_markdown(&b, &p, &h), 0);
	assert_non_null(strstr(vx_buf_str(&b), "| `+` | `job.a` | create | a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START | new job |\n"));
	assert_non_null(strstr(vx_buf_str(&b), "**Plan:** 2 to create."));
	vx_buf_release(&b);
	plan_release(&p);
}

static void test_json_round_trip(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct saved_plan sp;
	struct vx_err err = VX_ERR_INIT;
	const char *targets[] = { "job.a" };
	struct plan p;

	(void)unused;
	h.targets = targets;
	h.ntargets = 1;
	h.allow_other_lineage = 1;
	make_plan(&p);
	assert_int_equal(render_plan_json(&b, &p, &h), 0);
	assert_int_equal(saved_plan_parse(&sp, b.data, b.len, &err), 0);
	assert_int_equal(sp.allow_other_lineage, 1);
	assert_int_equal(sp.format_version, PLAN_FORMAT_VERSION);
	assert_string_equal(sp.stack, "research");
	assert_string_equal(sp.dir, "/repo/stack");
	assert_int_equal(sp.state_serial, 7);
	assert_string_equal(sp.state_lineage, "d78900b3-2055-4084-ab8b-76f61f94e371");
	assert_int_equal(sp.n, 2);
	assert_string_equal(sp.actions[1].address, "job.b|pipe");
	assert_string_equal(sp.actions[1].action, "create");
	assert_int_equal(sp.actions[1].attempt, 1);
	assert_int_equal(sp.ntargets, 1);
	assert_string_equal(sp.targets[0], "job.a");
	/* The rung, attempt and region the plan showed are what the apply must do: a plan made
	 * now that would start the run elsewhere is stale. */
	assert_int_equal(saved_plan_matches(&sp, &p, &err), 0);
	job_action_mut(&p.actions[1])->rung = 2;
	free(p.actions[1].region);
	p.actions[1].region = strdup("us-east5");
	assert_int_equal(saved_plan_matches(&sp, &p, &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "the world changed since the plan was made: job.b|pipe was planned to "
			    "create attempt 1 on rung 0 in us-central1, it would now be attempt 1 on rung 2 in "
			    "us-east5; run vxplan again");
	vx_err_release(&err);
	job_action_mut(&p.actions[1])->rung = 0;
	job_action_mut(&p.actions[1])->attempt = 2;
	assert_int_equal(saved_plan_matches(&sp, &p, &err), VX_ECONFLICT);
	vx_err_release(&err);
	saved_plan_release(&sp);
	/* A plan of a format this vx does not know is refused. */
	assert_int_equal(saved_plan_parse(&sp, "{\"format_version\": 2}", 21, &err), VX_EINVAL);
	assert_non_null(strstr(err.msg, "format_version 2 is not supported"));
	vx_err_release(&err);
	assert_int_equal(saved_plan_parse(&sp, "not json", 8, &err), VX_EINVAL);
	vx_err_release(&err);
	vx_buf_release(&b);
	plan_release(&p);
}

/*
 * Issue 8: an action about a failed run shows the run's error: code and
 * first line, control characters dropped, capped, in every form.
 */
static void test_error_in_reason(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct plan p;
	static char long_msg[RENDER_ERROR_MAX + 200];

	(void)unused;
	make_plan(&p);
	job_action_mut(&p.actions[0])->error_code = 8;
	job_action_mut(&p.actions[0])->error_message = strdup("No \033[31mH100\tleft\x7f in \xc2\x9bus-central1.\r\nSecond line");
	assert_int_equal(render_plan_human(&b, &p, &h, 0), 0);
	assert_non_null(strstr(vx_buf_str(&b),
			       "        new job (code 8: No [31mH100 left in us-central1. Second line)\n"
			       "  +   job.b|pipe create\n"));
	vx_buf_reset(&b);
	assert_int_equal(render_plan_markdown(&b, &p, &h), 0);
	assert_non_null(strstr(vx_buf_str(&b), "| new job (code 8: No [31mH100 left in us-central1. Second line) |\n"));
	vx_buf_reset(&b);
	assert_int_equal(render_plan_json(&b, &p, &h), 0);
	assert_non_null(strstr(vx_buf_str(&b), "\t\t\t\"failure_class\":\tnull,\n"
					       "\t\t\t\"error\":\t{\n"
					       "\t\t\t\t\"code\":\t8,\n"
					       "\t\t\t\t\"message\":\t\"No [31mH100 left in us-central1. Second line\"\n"
					       "\t\t\t},\n"));
	assert_non_null(strstr(vx_buf_str(&b), "\t\t\t\"failure_class\":\tnull,\n"
					       "\t\t\t\"error\":\tnull,\n"));
	vx_buf_reset(&b);
	/* Whole: Google's sentence, the Cloud Logging link after it, the log tail; a URL's
	 * credentials hidden, a line break one space. */
	assert_int_equal(render_error(&b, 3, "The replica workerpool0-0 exited with a non-zero status of 1. "
				      "To find out more about why your job exited please check the logs: "
				      "https://console.cloud.google.com/logs/viewer?project=p&resource=ml_job%2Fjob_id"
				      "%2F4606268999515242496&advancedFilter=resource.type%3D%22ml_job%22\n"
				      "Traceback: fetching https://bot:s3cr3t@git.example.com/x.git failed"), 0);
	assert_string_equal(vx_buf_str(&b), "code 3: The replica workerpool0-0 exited with a non-zero status of 1. "
			    "To find out more about why your job exited please check the logs: "
			    "https://console.cloud.google.com/logs/viewer?project=p&resource=ml_job%2Fjob_id"
			    "%2F4606268999515242496&advancedFilter=resource.type%3D%22ml_job%22 "
			    "Traceback: fetching https://***@git.example.com/x.git failed");
	vx_buf_reset(&b);
	/* vx status's note: the first line, at most RENDER_ERROR_LINE_MAX characters. */
	assert_int_equal(render_error_first_line(&b, "first https://u:p@h/x\nsecond"), 0);
	assert_string_equal(vx_buf_str(&b), "first https://***@h/x");
	vx_buf_reset(&b);
	/* At most RENDER_ERROR_MAX characters (not bytes: "é" is two), then "…": a bound on a
	 * hostile server only. */
	memset(long_msg, 'x', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';
	memcpy(long_msg, "\xc3\xa9", 2);
	assert_int_equal(render_error(&b, 0, long_msg), 0);
	assert_int_equal(b.len, RENDER_ERROR_MAX + 1 + 3);
	assert_string_equal(vx_buf_str(&b) + RENDER_ERROR_MAX + 1, "\u2026");
	vx_buf_reset(&b);
	/* A line break landing on the limit is a character like any other: the message is cut
	 * there, not let through whole (the cap was skipped so before the one filter of util/). */
	memset(long_msg, 'x', RENDER_ERROR_MAX);
	memcpy(long_msg + RENDER_ERROR_MAX, "\nmore", 6);
	assert_int_equal(render_error_message(&b, long_msg), 0);
	assert_int_equal(b.len, RENDER_ERROR_MAX + 3);
	assert_string_equal(vx_buf_str(&b) + RENDER_ERROR_MAX, "\u2026");
	vx_buf_reset(&b);
	assert_int_equal(render_error(&b, 13, NULL), 0);
	assert_string_equal(vx_buf_str(&b), "code 13");
	vx_buf_release(&b);
	plan_release(&p);
}

/* Issue 8: a plan of uncommitted YAML says so in its header, in every form. */
static void test_dirty_header(void **unused)
{
	struct render_header h = header();
	struct vx_buf b = VX_BUF_INIT;
	struct plan p;

	(void)unused;
	h.config_commit = "c0ffee0123456789c0ffee0123456789c0ffee01";
	h.decl_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	h.config_dirty = 1;
	make_plan(&p);
	assert_int_equal(render_plan_human(&b, &p, &h, 0), 0);
	assert_non_null(strstr(vx_buf_str(&b), "(serial 7)\n"
			       "Config: commit c0ffee012345 with uncommitted changes (declaration 9f86d081884c)\n"
			       "Refresh:"));
	vx_buf_reset(&b);
	assert_int_equal(render_plan_markdown(&b, &p, &h), 0);
	assert_non_null(strstr(vx_buf_str(&b), "\n> **Uncommitted changes**: configuration `c0ffee012345` with "
			       "uncommitted changes (declaration `9f86d081884c`).\n\n"));
	vx_buf_reset(&b);
	assert_int_equal(render_plan_json(&b, &p, &h), 0);
	assert_non_null(strstr(vx_buf_str(&b), "\t\"config_dirty\":\ttrue,\n"));
	vx_buf_reset(&b);
	h.config_dirty = 0;
	assert_int_equal(render_plan_human(&b, &p, &h, 0), 0);
	assert_non_null(strstr(vx_buf_str(&b), "(serial 7)\nConfig: commit c0ffee012345\nRefresh:"));
	vx_buf_release(&b);
	plan_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_human_exact),
		cmocka_unit_test(test_refresh_off_is_loud),
		cmocka_unit_test(test_markdown_escapes_cells),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_error_in_reason),
		cmocka_unit_test(test_dirty_header),
	};
	return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
