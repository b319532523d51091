/*
 * Unit tests for workflow/: a cycle (open, load, plan, close) run many times
 * in one process, as a watcher runs it, leaves nothing behind (LeakSanitizer
 * checks the ASan build) and plans the same each time; what the library
 * would have printed reaches the caller's events instead.
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

#include "reconcile/plan.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/diag.h"
#include "workflow/ci.h"
#include "workflow/planning.h"
#include "workflow/workspace.h"

#define STACK_DOC "kind: Stack\nname: research\nproject: my-project\nregion: us-central1\n" \
	"state: {backend: file, path: vx-state.json}\n"
#define JOB(name) "kind: CustomJob\nname: " name "\nspec:\n  workerPoolSpecs:\n" \
	"    - machineSpec: {machineType: n1-standard-4}\n      replicaCount: 1\n" \
	"      containerSpec: {imageUri: gcr.io/p/i:1}\n"

static void write_stack(const char *dir, const char *yaml)
{
	char *path = vx_asprintf("%s/stack.yaml", dir);
	FILE *f;

	assert_non_null(path);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(yaml, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	free(path);
}

static void remove_stack(const char *dir)
{
	char *path = vx_asprintf("%s/stack.yaml", dir);

	assert_non_null(path);
	unlink(path);
	free(path);
	assert_int_equal(rmdir(dir), 0);
}

/* What the events were told. */
struct told {
	size_t diags_calls;
	size_t ndiags;
	struct vx_buf lines;
};

static void on_diags(void *ud, const struct vx_diags *d)
{
	struct told *t = ud;

	t->diags_calls++;
	t->ndiags += d->n;
}

static void on_problem(void *ud, const char *doing, const struct vx_err *e)
{
	struct told *t = ud;

	assert_int_equal(vx_buf_printf(&t->lines, "%s: %s\n", doing, vx_err_msg(e)), 0);
}

static void on_warn(void *ud, const char *msg)
{
	struct told *t = ud;

	assert_int_equal(vx_buf_printf(&t->lines, "%s\n", msg), 0);
}

/* A watcher's cycle, 50 times over: the same plan each time, no event, nothing kept. */
static void test_cycles_reuse_one_struct(void **unused)
{
	char dir[] = "/tmp/vx-workflow-XXXXXX";
	struct told t = { 0, 0, VX_BUF_INIT };
	const struct workspace_events ev = { .diags = on_diags, .problem = on_problem, .ud = &t };
	struct planning_opts po;
	struct workspace ws;
	struct planning pl;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	vx_ctx_init(&ctx);
	assert_non_null(mkdtemp(dir));
	write_stack(dir, STACK_DOC "---\n" JOB("a") "---\n" JOB("b"));
	memset(&po, 0, sizeof(po));
	memset(&ws, 0, sizeof(ws));
	for (int i = 0; i < 50; i++) {
		assert_int_equal(planning_run_dir(&pl, &ws, &ctx, dir, &po, &ev, &err), 0);
		assert_int_equal(pl.planner.plan.errors.n, 0);
		assert_int_equal(planning_has_changes(&pl), 1);
		assert_string_equal(pl.header.stack, "research");
		planning_release(&pl);
		workspace_close(&ws);
		assert_null(ws.st);
		assert_null(ws.backend);
	}
	assert_int_equal(t.diags_calls, 0);
	assert_int_equal(t.lines.len, 0);
	vx_buf_release(&t.lines);
	vx_err_release(&err);
	remove_stack(dir);
}

/* An invalid stack: its diagnostics go to the events, the error names the count. */
static void test_invalid_stack_tells_the_events(void **unused)
{
	char dir[] = "/tmp/vx-workflow-XXXXXX";
	struct told t = { 0, 0, VX_BUF_INIT };
	const struct workspace_events ev = { .diags = on_diags, .problem = on_problem, .ud = &t };
	struct workspace ws;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	char *want;

	(void)unused;
	vx_ctx_init(&ctx);
	assert_non_null(mkdtemp(dir));
	write_stack(dir, STACK_DOC "---\n" JOB("a") "run: three\n");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(workspace_open(&ws, &ctx, dir, &ev, &err), VX_EINVAL);
		want = vx_asprintf("%s: the stack has 1 error", dir);
		assert_string_equal(vx_err_msg(&err), want);
		free(want);
		vx_err_release(&err);
		workspace_close(&ws);
	}
	assert_int_equal(t.diags_calls, 3);
	assert_int_equal(t.ndiags, 3);
	assert_int_equal(t.lines.len, 0);
	vx_buf_release(&t.lines);
	remove_stack(dir);
}

/* An invalid CI variable is a warning to the caller, naming it, never its value. */
static void test_ci_warns_through_the_caller(void **unused)
{
	struct told t = { 0, 0, VX_BUF_INIT };
	struct ci ci;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	assert_int_equal(setenv("VX_ACTOR", "two words", 1), 0);
	assert_int_equal(setenv("GITHUB_ACTOR", "octocat", 1), 0);
	assert_int_equal(ci_read(&ci, NULL, on_warn, &t, &err), 0);
	assert_string_equal(ci.actor, "octocat");
	assert_string_equal(vx_buf_str(&t.lines), "ignoring VX_ACTOR: an actor is at most 100 printable "
			    "characters without spaces\n");
	ci_release(&ci);
	/* No callback: the same, silently. */
	assert_int_equal(ci_read(&ci, NULL, NULL, NULL, &err), 0);
	assert_string_equal(ci.actor, "octocat");
	ci_release(&ci);
	unsetenv("VX_ACTOR");
	unsetenv("GITHUB_ACTOR");
	vx_buf_release(&t.lines);
	vx_err_release(&err);
}

static const char *ci_env(void *ud, const char *name)
{
	(void)ud;
	if (!strcmp(name, "GITHUB_ACTOR"))
		return "from-the-context";
	if (!strcmp(name, "GITHUB_RUN_ID"))
		return "17";
	return NULL;
}

/* ci_read reads the context's environment, not the process's. */
static void test_ci_reads_the_context(void **unused)
{
	struct vx_ctx ctx;
	struct ci ci;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	vx_ctx_init(&ctx);
	ctx.getenv = ci_env;
	assert_int_equal(setenv("GITHUB_ACTOR", "octocat", 1), 0);
	assert_int_equal(ci_read(&ci, &ctx, NULL, NULL, &err), 0);
	assert_string_equal(ci.actor, "from-the-context");
	ci_release(&ci);
	unsetenv("GITHUB_ACTOR");
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycles_reuse_one_struct),
		cmocka_unit_test(test_invalid_stack_tells_the_events),
		cmocka_unit_test(test_ci_warns_through_the_caller),
		cmocka_unit_test(test_ci_reads_the_context),
	};

	/* The CI variables of whoever runs the tests must not leak in. */
	unsetenv("GITHUB_TRIGGERING_ACTOR");
	unsetenv("GITLAB_USER_LOGIN");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
