/*
 * Unit tests for state/state_scan.c on a temporary repository: the other
 * stacks' state branches (local, and a remote's tracked copy) are searched
 * for a resource in current and past runs; this state's own branch and its
 * copies are not; a mention outside a run is no hit.
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <git2.h>

#include "state/backend.h"
#include "state/state.h"
#include "state/state_git.h"
#include "state/state_scan.h"
#include "tests/unit/support/staterepo.h"

/* libgit2 1.5's pcre2 leak, as in test_state_git.c: not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpcre2-8.so\n";
}

static int setup(void **state)
{
	*state = staterepo_new("/tmp/vx-stscan-XXXXXX");
	return 0;
}

static int teardown(void **state)
{
	staterepo_free(*state);
	return 0;
}

/* A new run of job.NAME on resource res (the one before goes to history). */
static void put_job(struct state *st, const char *name, const char *res)
{
	struct state_record *r = NULL;
	struct state_run run;
	char addr[64];

	snprintf(addr, sizeof(addr), "job.%s", name);
	r = state_edit(st, addr);
	if (!r)
		assert_int_equal(state_add_record(st, addr, "CustomJob", &r, NULL), 0);
	free(r->spec_hash);
	r->spec_hash = strdup("h1");
	memset(&run, 0, sizeof(run));
	run.resource = strdup(res);
	run.region = strdup("us-central1");
	run.action = strdup("create");
	run.state = strdup("JOB_STATE_PENDING");
	run.attempt = 1;
	run.run = 1;
	assert_int_equal(state_record_start_run(r, &run, NULL), 0);
}

/* Writes stack's state with jobs (name, resource) pairs, NULL-terminated. */
static void write_state(struct staterepo *f, const char *stack, const char *const *jobs)
{
	struct state_git_opts o = { .stack = stack, .stack_dir = f->stack };
	struct state_backend *b = NULL;
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;

	if (state_git_open(&b, &f->ctx, &o, &err) < 0 || state_load(b, &st, &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; jobs[i]; i += 2)
		put_job(&st, jobs[i], jobs[i + 1]);
	if (state_write(b, &st, "test", &err) < 0)
		fail_msg("%s", err.msg);
	state_release(&st);
	state_backend_free(b);
}

#define R(n) "projects/p/locations/us-central1/customJobs/" #n

/* The address another state records res under ("" when none), and where. */
static void expect(struct staterepo *f, const char *res, const char *address, const char *stack,
		   const char *where)
{
	struct state_scan_place place = { .stack_dir = f->stack, .branch = "vx/state/research" };
	struct state_scan_hit hit;
	struct vx_err err = VX_ERR_INIT;

	if (state_scan_find(&hit, &place, res, &err) < 0)
		fail_msg("%s", err.msg);
	if (!address) {
		assert_null(hit.address);
	} else {
		assert_non_null(hit.address);
		assert_string_equal(hit.address, address);
		assert_string_equal(hit.stack, stack);
		assert_string_equal(hit.where, where);
	}
	state_scan_hit_release(&hit);
}

static void test_other_branches(void **state)
{
	struct staterepo *f = *state;
	const char *mine[] = { "a", R(1), NULL };
	const char *theirs[] = { "b", R(3), "b", R(2), "c", R(4), NULL };
	git_repository *repo = NULL;
	git_oid id;

	/* nothing beside this state yet: nothing found, nothing failed */
	expect(f, R(2), NULL, NULL, NULL);
	write_state(f, "research", mine);
	write_state(f, "other", theirs);
	expect(f, R(1), NULL, NULL, NULL);                      /* our own */
	expect(f, R(2), "job.b", "other", "refs/heads/vx/state/other");  /* current */
	expect(f, R(3), "job.b", "other", "refs/heads/vx/state/other");  /* history */
	expect(f, R(4), "job.c", "other", "refs/heads/vx/state/other");
	expect(f, R(5), NULL, NULL, NULL);
	/* a prefix of a resource is not that resource */
	expect(f, "projects/p/locations/us-central1/customJobs/", NULL, NULL, NULL);

	/* a remote's copies: ours is still ours, theirs still theirs once the local branch is gone */
	assert_int_equal(git_repository_open(&repo, f->repo), 0);
	assert_int_equal(git_reference_name_to_id(&id, repo, "refs/heads/vx/state/research"), 0);
	assert_int_equal(git_reference_create(NULL, repo, "refs/remotes/origin/vx/state/research", &id, 0, "t"), 0);
	assert_int_equal(git_reference_name_to_id(&id, repo, "refs/heads/vx/state/other"), 0);
	assert_int_equal(git_reference_create(NULL, repo, "refs/remotes/origin/vx/state/other", &id, 0, "t"), 0);
	{
		git_reference *ref = NULL;

		assert_int_equal(git_reference_lookup(&ref, repo, "refs/heads/vx/state/other"), 0);
		assert_int_equal(git_reference_delete(ref), 0);
		git_reference_free(ref);
	}
	git_repository_free(repo);
	expect(f, R(1), NULL, NULL, NULL);
	expect(f, R(2), "job.b", "other", "refs/remotes/origin/vx/state/other");
}

/* Another state of more than 256 jobs is fanned out (jobs/BB/NAME.json): its records are found too. */
static void test_fanned_out_branch(void **state)
{
	struct staterepo *f = *state;
	static char names[300][16], res[300][64];
	const char *theirs[2 * 300 + 1];

	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "j%03d", i);
		snprintf(res[i], sizeof(res[i]), "projects/p/locations/us-central1/customJobs/%d", 1000 + i);
		theirs[2 * i] = names[i];
		theirs[2 * i + 1] = res[i];
	}
	theirs[600] = NULL;
	write_state(f, "other", theirs);
	expect(f, "projects/p/locations/us-central1/customJobs/1000", "job.j000", "other", "refs/heads/vx/state/other");
	expect(f, "projects/p/locations/us-central1/customJobs/1299", "job.j299", "other", "refs/heads/vx/state/other");
	expect(f, R(5), NULL, NULL, NULL);
}

static void test_not_a_repository(void **state)
{
	struct staterepo *f = *state;
	struct state_scan_place place = { .stack_dir = f->dir, .branch = "vx/state/research" };
	struct state_scan_hit hit;
	struct vx_err err = VX_ERR_INIT;

	/* f->dir holds the repository but is not inside one */
	assert_int_equal(state_scan_find(&hit, &place, R(1), &err), VX_EIO);
	assert_non_null(strstr(err.msg, "reading the other states: "));
	assert_null(hit.address);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_other_branches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fanned_out_branch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_repository, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
