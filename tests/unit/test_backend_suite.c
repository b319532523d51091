/*
 * The backend suite: the promises every state backend keeps (state/backend.h,
 * state/lock.h), written once and run on each backend, as Terraform runs one
 * TestBackendStates on each of its backends.
 *
 * A backend joins by adding ONE ROW to the table `rows` below: how to open it
 * for this runner and for another runner on the same state, how to remove its
 * stored state behind vx's back, and, where it cannot keep a promise, which
 * one and why (a field set to the reason, and the case then asserts what that
 * backend does instead; nothing is skipped). Every case runs on every row;
 * cmocka names each "ROW: CASE".
 *
 * The cases: a write read back by another runner; a write that changes
 * nothing makes no version; two writers from the same serial (the second is
 * refused with VX_ECONFLICT); the lease (taken, refused to a second taker and
 * its writes, renewed, released, an expired one taken over, and cleared by
 * `vx unlock ID` only with its id); history
 * (each write a version, newest first); a stored state removed behind
 * vx's back (detected, never read as a new empty state); and a record of a
 * kind this vx does not know, carried through a save unchanged.
 *
 * All on a fixed clock (support/staterepo.h): leases expire when the test
 * moves it. The gcs row runs on the fake's Cloud Storage (support/fakegcs.h).
 */
#define _XOPEN_SOURCE 700
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
#include <git2.h>

#include "providers/gcp/storage.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "state/state_file.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "tests/unit/support/fakegcs.h"
#include "tests/unit/support/staterepo.h"

/* libgit2 1.5's pcre2 leak on remote creation, as in test_state_git.c. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpcre2-8.so\n";
}

#define BRANCH "vx/state/research"

/* What a load does once the stored state was removed behind vx's back. */
enum lost {
	/* Refused with VX_ENOTFOUND naming the history left; state_restore
	 * (under the lease) puts the same state back. */
	LOST_REFUSED,
	/* Brought back by the load itself, the same state (a copy it keeps). */
	LOST_RECOVERED,
	/* Read as a new, empty state: the row's lost_why says why. */
	LOST_UNDETECTED,
};

struct fx;

/* One backend. */
struct row {
	const char *name;
	/* Run once before and after the row's cases (NULL: nothing): a server it needs. */
	CMFixtureFunction group_start, group_stop;
	/* Makes what the backend needs in the fixture's directory (NULL: nothing). */
	void (*prepare)(struct fx *f);
	/* This runner's backend, and another runner's on the same stored state. */
	struct state_backend *(*open)(struct fx *f);
	struct state_backend *(*open_other)(struct fx *f);
	/* Removes the stored state behind vx's back, as a clean-up would. */
	void (*lose)(struct fx *f);
	enum lost lost;
	const char *lost_why;      /* LOST_UNDETECTED: why it cannot tell */
	/* NULL: every write is a version state_history lists. Else why only
	 * the current record is listed (and the case asserts that). */
	const char *no_history;
};

struct fx {
	const struct row *row;
	struct staterepo *r;  /* temporary directory, repository "repo", fixed clock */
	char path[128];       /* file: the state file */
	char bare[128];       /* git-remote: the bare remote */
	char clone[128];      /* git-remote: the other runner's clone */
	char prefix[16];      /* gcs: this fixture's object prefix */
};

static struct fakegcs *gcs; /* started for the gcs row's group */

/* ---- the rows' pieces ---- */

static void file_prepare(struct fx *f)
{
	snprintf(f->path, sizeof(f->path), "%s/state.json", f->r->dir);
}

static struct state_backend *file_open(struct fx *f)
{
	struct state_file_opts o = { "research", f->path };
	struct state_backend *b = NULL;
	struct vx_err err = VX_ERR_INIT;

	if (state_file_open(&b, &f->r->ctx, &o, &err) != 0)
		fail_msg("file open: %s", err.msg);
	vx_err_release(&err);
	return b;
}

static void file_lose(struct fx *f)
{
	assert_int_equal(unlink(f->path), 0);
}

static struct state_backend *git_open(struct fx *f)
{
	return staterepo_open_git(f->r, f->r->repo, NULL);
}

/* Removes path, failing the test unless it existed. */
static void remove_file(const char *dir, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	if (unlink(p) != 0)
		fail_msg("removing %s: it should exist", p);
}

/* The branch's ref file goes (a clean-up, a broken copy of .git); its reflog stays. */
static void git_lose(struct fx *f)
{
	char gitdir[160];

	snprintf(gitdir, sizeof(gitdir), "%s/.git", f->r->repo);
	remove_file(gitdir, "refs/heads/" BRANCH);
}

static void add_origin(const char *repo, const char *url)
{
	git_repository *r = NULL;
	git_remote *rem = NULL;

	assert_int_equal(git_repository_open(&r, repo), 0);
	assert_int_equal(git_remote_create(&rem, r, "origin", url), 0);
	git_remote_free(rem);
	git_repository_free(r);
}

/* A bare remote and a second clone of the config, both with origin pointing at it. */
static void remote_prepare(struct fx *f)
{
	git_repository *bare = NULL;
	char url[160], sd[160];

	snprintf(f->bare, sizeof(f->bare), "%s/remote.git", f->r->dir);
	snprintf(f->clone, sizeof(f->clone), "%s/clone2", f->r->dir);
	snprintf(url, sizeof(url), "file://%s", f->bare);
	assert_int_equal(git_repository_init(&bare, f->bare, 1), 0);
	git_repository_free(bare);
	snprintf(sd, sizeof(sd), "%s/stack", f->clone);
	assert_int_equal(mkdir(f->clone, 0755), 0);
	staterepo_make_repo(f->clone, sd);
	add_origin(f->r->repo, url);
	add_origin(f->clone, url);
}

static struct state_backend *remote_open(struct fx *f)
{
	return staterepo_open_git(f->r, f->r->repo, "origin");
}

static struct state_backend *remote_open_other(struct fx *f)
{
	return staterepo_open_git(f->r, f->clone, "origin");
}

/* Deleted on the remote (from another clone) and here, reflog and all: only the
 * remote-tracking ref the last fetch left still names it. */
static void remote_lose(struct fx *f)
{
	char gitdir[160];

	snprintf(gitdir, sizeof(gitdir), "%s/.git", f->r->repo);
	remove_file(f->bare, "refs/heads/" BRANCH);
	remove_file(gitdir, "refs/heads/" BRANCH);
	remove_file(gitdir, "logs/refs/heads/" BRANCH);
}

static void gcs_prepare(struct fx *f)
{
	fakegcs_new_prefix(gcs, f->prefix, sizeof(f->prefix));
}

static struct state_backend *gcs_open(struct fx *f)
{
	return fakegcs_open(gcs, &f->r->ctx, f->prefix);
}

/* state.json deleted (a lifecycle rule); history/ kept. */
static void gcs_lose(struct fx *f)
{
	struct vx_err err = VX_ERR_INIT;
	char name[64];

	snprintf(name, sizeof(name), "%s/state.json", f->prefix);
	if (storage_object_delete(&gcs->sc, "vx-unit", name, STORAGE_ANY_GENERATION, &err) != 0)
		fail_msg("deleting %s: %s", name, err.msg);
}

static int gcs_group_start(void **state)
{
	(void)state;
	gcs = fakegcs_start();
	return 0;
}

static int gcs_group_stop(void **state)
{
	(void)state;
	fakegcs_stop(gcs);
	gcs = NULL;
	return 0;
}

/* ---- the table: one row per backend ---- */

static const struct row rows[] = {
	{ .name = "file", .prepare = file_prepare, .open = file_open, .open_other = file_open,
	  .lose = file_lose, .lost = LOST_UNDETECTED,
	  .lost_why = "the file backend keeps nothing beside FILE (state/state_file.h): a missing "
		      "file is a stack never applied; the plan's lineage check on live resources "
		      "(tests/e2e/test_lost_state.py) is what stops a second create",
	  .no_history = "the file backend keeps one file, no versions: state_history gives the "
			"current record (state/state_file.h)" },
	{ .name = "git", .open = git_open, .open_other = git_open, .lose = git_lose,
	  .lost = LOST_REFUSED },
	{ .name = "git-remote", .prepare = remote_prepare, .open = remote_open,
	  .open_other = remote_open_other, .lose = remote_lose, .lost = LOST_RECOVERED },
	{ .name = "gcs", .group_start = gcs_group_start, .group_stop = gcs_group_stop,
	  .prepare = gcs_prepare, .open = gcs_open, .open_other = gcs_open,
	  .lose = gcs_lose, .lost = LOST_REFUSED },
};

/* ---- fixture ---- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->row = *state;
	f->r = staterepo_new("/tmp/vx-bsuite-XXXXXX");
	if (f->row->prepare)
		f->row->prepare(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	staterepo_free(f->r);
	free(f);
	return 0;
}

/* A record at address with run `run` and a spec hash naming it. */
static void put(struct state *st, const char *address, int64_t run)
{
	struct state_record *rec = state_edit(st, address);
	struct vx_err err = VX_ERR_INIT;
	char hash[32];

	if (!rec && state_add_record(st, address, "CustomJob", &rec, &err) != 0)
		fail_msg("add %s: %s", address, err.msg);
	snprintf(hash, sizeof(hash), "sha256:%lld", (long long)run);
	free(rec->spec_hash);
	rec->spec_hash = strdup(hash);
	assert_non_null(rec->spec_hash);
	rec->run = run;
}

static void load(struct state_backend *b, struct state *st)
{
	struct vx_err err = VX_ERR_INIT;

	state_release(st);
	if (state_load(b, st, &err) != 0)
		fail_msg("load: %s", err.msg);
	vx_err_release(&err);
}

static void write_ok(struct state_backend *b, struct state *st, const char *msg)
{
	struct vx_err err = VX_ERR_INIT;

	if (state_write(b, st, msg, &err) != 0)
		fail_msg("write %s: %s", msg, err.msg);
	vx_err_release(&err);
}

/* The state's JSON without its lock: what two readers of one state must agree on. */
static char *json_of(struct state *st)
{
	struct state_lock *lock = st->lock;
	struct vx_err err = VX_ERR_INIT;
	char *out = NULL;

	st->lock = NULL;
	if (state_to_json(st, &out, &err) != 0)
		fail_msg("to json: %s", err.msg);
	st->lock = lock;
	return out;
}

/* ---- the cases ---- */

/* A write is read back whole by another runner; a write that changes nothing makes no version. */
static void case_round_trip(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state st = STATE_INIT, back = STATE_INIT;
	char *want, *got, **names = NULL;
	size_t n = 0;
	struct vx_err err = VX_ERR_INIT;

	load(a, &st);
	assert_int_equal(st.serial, 0);
	assert_null(st.records);
	assert_non_null(st.lineage);
	put(&st, "job.a", 2);
	put(&st, "reservation.pool", 1);
	write_ok(a, &st, "one");
	assert_int_equal(st.serial, 1);
	load(b, &back);
	assert_int_equal(back.serial, 1);
	assert_string_equal(back.lineage, st.lineage);
	want = json_of(&st);
	got = json_of(&back);
	assert_string_equal(got, want);
	assert_int_equal(state_list(b, &names, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "job.a");
	assert_string_equal(names[1], "reservation.pool");
	/* Nothing changed: nothing written, the serial stays. */
	write_ok(b, &back, "again");
	assert_int_equal(back.serial, 1);
	load(a, &st);
	assert_int_equal(st.serial, 1);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(want);
	free(got);
	state_release(&st);
	state_release(&back);
	state_backend_free(a);
	state_backend_free(b);
}

/* Two writers from the same serial: the first wins, the second is refused, and wins once it reloads. */
static void case_cas_conflict(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state sa = STATE_INIT, sb = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;

	load(a, &sa);
	put(&sa, "job.a", 1);
	write_ok(a, &sa, "one");
	load(a, &sa);
	load(b, &sb);
	assert_int_equal(sb.serial, 1);
	put(&sa, "job.a", 2);
	write_ok(a, &sa, "a wins");
	assert_int_equal(sa.serial, 2);
	put(&sb, "job.b", 1);
	assert_int_equal(state_write(b, &sb, "b loses", &err), VX_ECONFLICT);
	assert_non_null(err.msg);
	load(b, &sb);
	assert_int_equal(sb.serial, 2);
	assert_int_equal(state_find(&sb, "job.a")->run, 2);
	assert_null(state_find(&sb, "job.b"));
	put(&sb, "job.b", 1);
	write_ok(b, &sb, "b after reloading");
	assert_int_equal(sb.serial, 3);
	load(a, &sa);
	assert_non_null(state_find(&sa, "job.b"));
	state_release(&sa);
	state_release(&sb);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

static const struct state_lock_opts alice = { .operation = "apply", .lease_ms = 15 * 60 * 1000,
					       .user = "alice", .host = "ci-runner-3", .pid = 4242 };

/* The lease: taken, refused to a second taker (and its writes), renewed, released. */
static void case_lease(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state sa = STATE_INIT, sb = STATE_INIT;
	struct state_lock *cur = NULL;
	struct vx_err err = VX_ERR_INIT;

	if (state_lock_acquire(a, &alice, &err) != 0)
		fail_msg("acquire: %s", err.msg);
	assert_int_equal(state_lock_acquire(b, NULL, &err), VX_ECONFLICT);
	assert_true(strncmp(err.msg, "state is locked by alice@ci-runner-3 (pid 4242, apply) since ",
			    61) == 0);
	assert_null(state_lock_held(b));
	/* The holder writes; the other's write is refused. */
	load(a, &sa);
	put(&sa, "job.a", 1);
	write_ok(a, &sa, "holder");
	load(b, &sb);
	put(&sb, "job.b", 1);
	assert_int_equal(state_write(b, &sb, "not the holder", &err), VX_ECONFLICT);
	/* Renewed: the lease runs from now. */
	f->r->now += 5 * 60 * 1000;
	assert_int_equal(state_lock_renew(a, &err), 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_non_null(cur);
	assert_string_equal(cur->id, state_lock_held(a)->id);
	assert_true(cur->expires_ms == f->r->now + 15 * 60 * 1000);
	state_lock_free(cur);
	/* Released: nobody holds it, and the other runner takes it. */
	assert_int_equal(state_lock_drop(a, &err), 0);
	assert_null(state_lock_held(a));
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_null(cur);
	if (state_lock_acquire(b, NULL, &err) != 0)
		fail_msg("acquire after release: %s", err.msg);
	assert_int_equal(state_lock_drop(b, &err), 0);
	state_release(&sa);
	state_release(&sb);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* An expired lease is taken over; its old holder learns it on its next renewal. */
static void case_lease_expired(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state sb = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;

	if (state_lock_acquire(a, &alice, &err) != 0)
		fail_msg("acquire: %s", err.msg);
	f->r->now += 14 * 60 * 1000;
	assert_int_equal(state_lock_acquire(b, NULL, &err), VX_ECONFLICT);
	f->r->now += 2 * 60 * 1000;
	if (state_lock_acquire(b, NULL, &err) != 0)
		fail_msg("taking over an expired lease: %s", err.msg);
	assert_int_equal(state_lock_renew(a, &err), VX_ECONFLICT);
	assert_null(state_lock_held(a));
	/* The new holder writes. */
	load(b, &sb);
	put(&sb, "job.b", 1);
	write_ok(b, &sb, "new holder");
	assert_int_equal(state_lock_drop(b, &err), 0);
	state_release(&sb);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* vx unlock ID: clears the lease only by its id; the holder learns it lost it. */
static void case_unlock(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state_lock *cur = NULL;
	struct vx_err err = VX_ERR_INIT;
	char id[33];

	assert_int_equal(state_unlock(b, "00000000000000000000000000000000", &err), VX_ENOTFOUND);
	assert_string_equal(err.msg, "unlocking: the state of stack research is not locked");
	if (state_lock_acquire(a, &alice, &err) != 0)
		fail_msg("acquire: %s", err.msg);
	snprintf(id, sizeof(id), "%s", state_lock_held(a)->id);
	assert_int_equal(state_unlock(b, "00000000000000000000000000000000", &err), VX_ECONFLICT);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_non_null(cur);
	assert_string_equal(cur->id, id);
	state_lock_free(cur);
	assert_int_equal(state_unlock(b, id, &err), 0);
	assert_int_equal(state_lock_current(b, &cur, &err), 0);
	assert_null(cur);
	assert_int_equal(state_lock_renew(a, &err), VX_ECONFLICT);
	assert_null(state_lock_held(a));
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Each write is a version: the history of an address lists them newest first. */
static void case_history(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state st = STATE_INIT;
	struct state_history_entry *h = NULL;
	struct vx_err err = VX_ERR_INIT;
	size_t n = 0, want = f->row->no_history ? 1 : 3;
	char msg[32];

	load(a, &st);
	for (int64_t run = 1; run <= 3; run++) {
		put(&st, "job.a", run);
		snprintf(msg, sizeof(msg), "v%lld", (long long)run);
		write_ok(a, &st, msg);
	}
	if (state_history(b, "job.a", 0, &h, &n, NULL, &err) != 0)
		fail_msg("history: %s", err.msg);
	assert_int_equal(n, want);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(h[i].address, "job.a");
		assert_non_null(h[i].record);
		assert_int_equal(h[i].record->run, 3 - (int64_t)i);
		if (f->row->no_history)
			continue;
		snprintf(msg, sizeof(msg), "v%lld", (long long)(3 - i));
		assert_non_null(h[i].message);
		assert_true(strncmp(h[i].message, msg, 2) == 0);
	}
	state_history_free(h, n);
	/* At most max, the newest. */
	assert_int_equal(state_history(b, "job.a", 1, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].record->run, 3);
	state_history_free(h, n);
	state_release(&st);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Loads after the stored state was removed behind vx's back; checks the row's promise. */
static void check_lost(struct fx *f, struct state_backend *b, const struct state *was)
{
	struct state back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *what = NULL;
	int rc = state_load(b, &back, &err);

	switch (f->row->lost) {
	case LOST_UNDETECTED:
		/* f->row->lost_why: a new state, serial 0, no records. */
		assert_int_equal(rc, 0);
		assert_int_equal(back.serial, 0);
		assert_null(back.records);
		break;
	case LOST_RECOVERED:
		if (rc != 0)
			fail_msg("load after the loss: %s", err.msg);
		break;
	case LOST_REFUSED:
		assert_int_equal(rc, VX_ENOTFOUND);
		assert_non_null(strstr(err.msg, "does not exist, but its history does"));
		assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
		if (state_restore(b, 0, &what, &err) != 0)
			fail_msg("restore: %s", err.msg);
		free(what);
		assert_int_equal(state_load(b, &back, &err), 0);
		assert_int_equal(state_lock_drop(b, &err), 0);
		break;
	}
	if (f->row->lost != LOST_UNDETECTED) {
		/* The same state, never a new one that would create everything again. */
		assert_int_equal(back.serial, was->serial);
		assert_string_equal(back.lineage, was->lineage);
		assert_non_null(state_find(&back, "job.a"));
		assert_non_null(state_find(&back, "job.b"));
	}
	state_release(&back);
	vx_err_release(&err);
}

static void case_lost(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b;
	struct state st = STATE_INIT;

	load(a, &st);
	put(&st, "job.a", 1);
	write_ok(a, &st, "one");
	put(&st, "job.b", 1);
	write_ok(a, &st, "two");
	load(a, &st); /* with a remote: the fetch that leaves the tracking ref */
	assert_int_equal(st.serial, 2);
	f->row->lose(f);
	b = f->row->open(f);
	check_lost(f, b, &st);
	state_release(&st);
	state_backend_free(a);
	state_backend_free(b);
}

/*
 * A record of a kind this vx does not know (a newer vx's, widget.NAME)
 * survives a save: another runner loads it, saves a change to another
 * record, and the record is read back the same, byte for byte as JSON.
 * The state layer files a record by its address alone, so none of its
 * kinds is needed.
 */
static void case_unknown_kind(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = f->row->open(f), *b = f->row->open_other(f);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct state_record *w = NULL;
	struct state_run run;
	struct state_history_entry *h = NULL;
	struct vx_err err = VX_ERR_INIT;
	char *want = NULL, *got = NULL, **names = NULL;
	size_t n = 0;

	load(a, &st);
	put(&st, "job.a", 1);
	if (state_add_record(&st, "widget.w1", "Widget", &w, &err) != 0)
		fail_msg("add widget.w1: %s", err.msg);
	memset(&run, 0, sizeof(run));
	run.resource = strdup("projects/p/locations/us-central1/widgets/w1");
	run.region = strdup("us-central1");
	run.action = strdup("create");
	run.has_value = 1;
	run.value = 3;
	assert_int_equal(state_record_start_run(w, &run, &err), 0);
	w->spec_json = strdup("{\"size\":3}");
	assert_int_equal(state_record_to_json(w, &want, &err), 0);
	write_ok(a, &st, "a newer vx");
	/* Another runner loads it and saves a change to job.a only. */
	load(b, &back);
	assert_non_null(state_find(&back, "widget.w1"));
	put(&back, "job.a", 2);
	write_ok(b, &back, "an older vx");
	load(a, &st);
	assert_int_equal(st.serial, 2);
	assert_int_equal(state_find(&st, "job.a")->run, 2);
	assert_non_null(w = state_edit(&st, "widget.w1"));
	assert_int_equal(state_record_to_json(w, &got, &err), 0);
	assert_string_equal(got, want);
	assert_int_equal(state_list(a, &names, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[1], "widget.w1");
	/* Its history: the one version that wrote it (or, without versions, the record). */
	if (state_history(b, "widget.w1", 0, &h, &n, NULL, &err) != 0)
		fail_msg("history: %s", err.msg);
	assert_int_equal(n, 1);
	assert_non_null(h[0].record);
	state_history_free(h, n);
	for (size_t i = 0; i < 2; i++)
		free(names[i]);
	free(names);
	free(want);
	free(got);
	state_release(&st);
	state_release(&back);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/* ---- every case on every row ---- */

static const struct {
	const char *name;
	CMUnitTestFunction fn;
} cases[] = {
	{ "round trip", case_round_trip },
	{ "CAS conflict", case_cas_conflict },
	{ "lease", case_lease },
	{ "expired lease taken over", case_lease_expired },
	{ "unlock by id", case_unlock },
	{ "history", case_history },
	{ "lost state", case_lost },
	{ "a record of an unknown kind survives a save", case_unknown_kind },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
#define NCASES (sizeof(cases) / sizeof(cases[0]))

int main(void)
{
	struct CMUnitTest tests[NCASES];
	char names[NCASES][96];
	int failed = 0;

	for (size_t r = 0; r < NROWS; r++) {
		for (size_t c = 0; c < NCASES; c++) {
			snprintf(names[c], sizeof(names[c]), "%s: %s", rows[r].name, cases[c].name);
			tests[c] = (struct CMUnitTest){ names[c], cases[c].fn, setup, teardown,
							(void *)(uintptr_t)&rows[r] };
		}
		failed += _cmocka_run_group_tests(rows[r].name, tests, NCASES, rows[r].group_start,
						  rows[r].group_stop);
	}
	return failed;
}
