#ifndef VX_TEST_STATEREPO_H
#define VX_TEST_STATEREPO_H

/*
 * The fixture the state tests share (test_state_git, test_lock): a
 * temporary directory holding a non-bare git repository "repo" with one
 * commit on HEAD (stack/vx.yaml, author and committer "Test User
 * <test@example.com>" at a fixed time, user.name and user.email set in its
 * config, so commit ids are deterministic), and a ctx (seed 7) on a fixed
 * clock: now is 2026-11-22T10:02:00Z and sleeps advance it without waiting.
 * staterepo_fixed_clock alone serves tests without a repository (test_state_file).
 *
 *	static int setup(void **state)
 *	{
 *		*state = staterepo_new("/tmp/vx-stgit-XXXXXX");
 *		return 0;
 *	}
 *	static int teardown(void **state)
 *	{
 *		staterepo_free(*state);
 *		return 0;
 *	}
 *
 * Failures to set up fail the test through cmocka's asserts.
 */

#include <stdint.h>

#include "util/ctx.h"

struct state_backend;

struct staterepo {
	char dir[64];     /* the temporary directory (removed by staterepo_free) */
	char repo[128];   /* dir/repo: the repository's work tree */
	char stack[160];  /* repo/stack: the stack directory */
	int64_t now;      /* the clock of ctx, in ms since the epoch; tests may move it */
	struct vx_ctx ctx;
	/* Set by a test group that runs on the gcs backend (support/fakegcs.h):
	 * then staterepo_open opens that backend under prefix, not git. */
	struct fakegcs *gcs;
	char prefix[16];
};

/*
 * Makes ctx's clock read *now (now_ms and mono_ms) and makes its sleeps add
 * to *now instead of waiting. now must outlive ctx's use.
 */
void staterepo_fixed_clock(struct vx_ctx *ctx, int64_t *now);

/*
 * Creates the repository described above at path, with stackdir (which
 * must be path/stack) holding vx.yaml "kind: Stack, name: research".
 */
void staterepo_make_repo(const char *path, const char *stackdir);

/*
 * Initialises libgit2, creates the temporary directory from tmpl (a
 * mkdtemp template such as "/tmp/vx-stgit-XXXXXX", under 64 bytes) and the
 * repository in it, and sets up ctx. Never returns NULL.
 */
struct staterepo *staterepo_new(const char *tmpl);

/* Removes the directory, shuts libgit2 down and frees f. */
void staterepo_free(struct staterepo *f);

/*
 * Opens the git backend for stack "research" of the repository whose work
 * tree is repo_dir (its stack directory repo_dir/stack), pushing to and
 * fetching from remote (NULL: none), on f's ctx. Fails the test with the
 * error when it cannot. Free with state_backend_free.
 */
struct state_backend *staterepo_open_git(struct staterepo *f, const char *repo_dir,
					 const char *remote);

/*
 * The backend the tests shared by git and gcs run on: with f->gcs set,
 * the gcs backend under f->prefix (a fresh one per fixture), else the git
 * backend of f->repo without a remote.
 */
struct state_backend *staterepo_open(struct staterepo *f);

#endif
