/* The state tests' fixture: a temporary git repository and a fixed clock (staterepo.h). */
#define _XOPEN_SOURCE 700
#include "tests/unit/support/staterepo.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <git2.h>

#include "state/backend.h"
#include "state/state_git.h"
#include "tests/unit/support/fakegcs.h"
#include "util/err.h"

#include "util/banned.h"

static int64_t clk(void *ud)
{
	return *(int64_t *)ud;
}

static void clk_sleep(void *ud, int64_t ms)
{
	*(int64_t *)ud += ms;
}

void staterepo_fixed_clock(struct vx_ctx *ctx, int64_t *now)
{
	ctx->clock.now_ms = clk;
	ctx->clock.mono_ms = clk;
	ctx->clock.sleep_ms = clk_sleep;
	ctx->clock.ud = now;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void staterepo_make_repo(const char *path, const char *stackdir)
{
	git_repository *repo = NULL;
	git_config *cfg = NULL;
	git_index *idx = NULL;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_oid tid, cid;
	char file[256];
	FILE *f;

	assert_int_equal(git_repository_init(&repo, path, 0), 0);
	assert_int_equal(git_repository_config(&cfg, repo), 0);
	assert_int_equal(git_config_set_string(cfg, "user.name", "Test User"), 0);
	assert_int_equal(git_config_set_string(cfg, "user.email", "test@example.com"), 0);
	assert_int_equal(mkdir(stackdir, 0755), 0);
	snprintf(file, sizeof(file), "%s/vx.yaml", stackdir);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs("kind: Stack\nname: research\n", f);
	fclose(f);
	assert_int_equal(git_repository_index(&idx, repo), 0);
	assert_int_equal(git_index_add_bypath(idx, "stack/vx.yaml"), 0);
	assert_int_equal(git_index_write(idx), 0);
	assert_int_equal(git_index_write_tree(&tid, idx), 0);
	assert_int_equal(git_tree_lookup(&tree, repo, &tid), 0);
	assert_int_equal(git_signature_new(&sig, "Test User", "test@example.com", 1795340000, 0), 0);
	assert_int_equal(git_commit_create(&cid, repo, "HEAD", sig, sig, NULL, "config\n", tree, 0,
					   NULL),
			 0);
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(idx);
	git_config_free(cfg);
	git_repository_free(repo);
}

struct staterepo *staterepo_new(const char *tmpl)
{
	struct staterepo *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s", tmpl);
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
	snprintf(f->stack, sizeof(f->stack), "%s/stack", f->repo);
	git_libgit2_init();
	staterepo_make_repo(f->repo, f->stack);
	f->now = INT64_C(1795341720000); /* 2026-11-22T10:02:00Z */
	vx_ctx_init(&f->ctx);
	staterepo_fixed_clock(&f->ctx, &f->now);
	f->ctx.seed = 7;
	return f;
}

void staterepo_free(struct staterepo *f)
{
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	git_libgit2_shutdown();
	free(f);
}

struct state_backend *staterepo_open_git(struct staterepo *f, const char *repo_dir,
					 const char *remote)
{
	struct state_backend *b = NULL;
	struct state_git_opts o = { "research", NULL, NULL, NULL, NULL };
	struct vx_err err = VX_ERR_INIT;
	char dir[200];

	snprintf(dir, sizeof(dir), "%s/stack", repo_dir);
	o.stack_dir = dir;
	o.remote = remote;
	if (state_git_open(&b, &f->ctx, &o, &err) != 0)
		fail_msg("open: %s", err.msg);
	vx_err_release(&err);
	return b;
}

struct state_backend *staterepo_open(struct staterepo *f)
{
	if (f->gcs)
		return fakegcs_open(f->gcs, &f->ctx, f->prefix);
	return staterepo_open_git(f, f->repo, NULL);
}
