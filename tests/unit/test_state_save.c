/*
 * What a save writes (docs/state.md, "What a save writes"): only the
 * records marked changed, through the git backend's fanned-out folders and
 * the gcs backend's kept record texts, and the safety net around it: every
 * mutator marks what it changes, so a state saved after any of them reads
 * back exactly as it is in memory, and (VX_STATE_CHECK_MARKS) a change
 * made without a mark is an error, not a silent loss. Older flat folders
 * keep loading, and their history reads through the change of layout.
 */
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
#include "util/ctx.h"
#include "util/hashmap.h"
#include "tests/unit/support/fakegcs.h"
#include "tests/unit/support/staterepo.h"

/* As in test_state_git.c: libgit2 1.5's pcre2 leak is not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpcre2-8.so\n";
}

#define STATE_REF "refs/heads/vx/state/research"

static struct fakegcs *gcs;

/* The backends check that every record a save skips is as stored. */
static const char *check_env(void *ud, const char *name)
{
	(void)ud;
	return !strcmp(name, "VX_STATE_CHECK_MARKS") ? "1" : NULL;
}

static int setup(void **state)
{
	struct staterepo *f = staterepo_new("/tmp/vx-stsave-XXXXXX");

	f->ctx.getenv = check_env;
	*state = f;
	return 0;
}

static int setup_gcs(void **state)
{
	struct staterepo *f;

	setup((void **)&f);
	f->gcs = gcs;
	fakegcs_new_prefix(gcs, f->prefix, sizeof(f->prefix));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	staterepo_free(*state);
	return 0;
}

static int group_start_gcs(void **state)
{
	(void)state;
	gcs = fakegcs_start();
	return 0;
}

static int group_stop_gcs(void **state)
{
	(void)state;
	fakegcs_stop(gcs);
	gcs = NULL;
	return 0;
}

/* A run of job NAME numbered id. */
static void make_run(struct state_run *run, int id)
{
	char res[96];

	memset(run, 0, sizeof(*run));
	snprintf(res, sizeof(res), "projects/p/locations/us-central1/customJobs/%d", id);
	run->resource = strdup(res);
	run->region = strdup("us-central1");
	run->action = strdup("create");
	run->state = strdup("JOB_STATE_PENDING");
	run->attempt = 1;
	run->run = 1;
}

/* Adds job.NAME (through state_add_record) with a spec and a first run. */
static void add_job(struct state *st, const char *name, int id)
{
	struct state_record *r = NULL;
	struct state_run run;
	char addr[64];

	snprintf(addr, sizeof(addr), "job.%s", name);
	assert_int_equal(state_add_record(st, addr, "CustomJob", &r, NULL), 0);
	r->spec_hash = strdup("h1");
	r->spec_json = strdup("{\"image\":\"gcr.io/x\",\"args\":[\"a\",\"b\\nc\"],\"env\":{\"K\":1}}");
	r->run = 1;
	r->attempts = 1;
	make_run(&run, id);
	assert_int_equal(state_record_start_run(r, &run, NULL), 0);
}

static void add_jobs(struct state *st, int n)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "j%04d", i);
		add_job(st, name, i);
	}
}

/* What a fresh backend reads back, as one JSON text. */
static char *reread(struct staterepo *f)
{
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL;

	if (state_load(b, &st, &err) != 0)
		fail_msg("reload: %s", err.msg);
	assert_int_equal(state_to_json(&st, &text, &err), 0);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
	return text;
}

/* Saves st and checks that what is stored is st, byte for byte. */
static void save_and_compare(struct staterepo *f, struct state_backend *b, struct state *st, const char *msg)
{
	struct vx_err err = VX_ERR_INIT;
	char *want = NULL, *got;

	if (state_write(b, st, msg, &err) != 0)
		fail_msg("%s: %s", msg, err.msg);
	got = reread(f);
	assert_int_equal(state_to_json(st, &want, &err), 0);
	assert_string_equal(got, want);
	free(want);
	free(got);
	vx_err_release(&err);
}

/*
 * Every way a record changes, each saved on its own and read back: the
 * state stored is the state in memory. Past FAN_AT records, so the git
 * backend's folder is fanned out.
 */
static void test_every_mutator_round_trips(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT;
	struct state_record *r, moved;
	struct state_run run;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(state_load(b, &st, &err), 0);
	add_jobs(&st, 300);
	save_and_compare(f, b, &st, "state_add_record, state_record_start_run");

	/* state_edit, then fields changed through the pointer it gives. */
	r = state_edit(&st, "job.j0007");
	free(r->current->state);
	r->current->state = strdup("JOB_STATE_RUNNING");
	r->current->started_ms = INT64_C(1795341780000);
	save_and_compare(f, b, &st, "state_edit");

	/* A new run: the current one goes to the history. */
	make_run(&run, 1000);
	assert_int_equal(state_record_start_run(state_edit(&st, "job.j0100"), &run, &err), 0);
	save_and_compare(f, b, &st, "state_record_start_run");

	/* A refused create, in the history only; on a record reached by walking the records. */
	make_run(&run, 1001);
	assert_int_equal(state_record_add_history(&st.records[200], &run, &err), 0);
	save_and_compare(f, b, &st, "state_record_add_history");

	/* A pointer kept across a save, marked again (state_record_mark). */
	state_record_mark(r);
	r->attempts = 2;
	r->protect = 1;
	save_and_compare(f, b, &st, "state_record_mark");

	/* Moved (vx state mv): a copy under a new address, the old one removed. */
	assert_int_equal(state_record_copy(&moved, state_find(&st, "job.j0042")), 0);
	assert_int_equal(state_remove_record(&st, "job.j0042"), 0);
	assert_int_equal(state_add_record(&st, "job.renamed", "CustomJob", &r, &err), 0);
	free(moved.address);
	moved.address = r->address;
	r->address = NULL;
	state_record_release(r);
	*r = moved;
	save_and_compare(f, b, &st, "state_record_copy, state_remove_record");

	/* Removed, several at once, and the header alone (the journal). */
	assert_int_equal(state_remove_record(&st, "job.j0001"), 0);
	assert_int_equal(state_remove_record(&st, "job.j0299"), 0);
	save_and_compare(f, b, &st, "state_remove_record");
	st.budget_cents = 12345;
	save_and_compare(f, b, &st, "header");

	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* A change without its mark is caught by VX_STATE_CHECK_MARKS, naming the record. */
static void test_unmarked_change_is_caught(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT;
	struct state_record *r;
	struct vx_err err = VX_ERR_INIT;

	assert_int_equal(state_load(b, &st, &err), 0);
	add_jobs(&st, 20);
	r = state_edit(&st, "job.j0003");
	assert_int_equal(state_write(b, &st, "first", &err), 0);
	r->attempts = 9; /* after the save cleared its mark */
	assert_int_equal(state_write(b, &st, "lost", &err), VX_EIO);
	assert_string_equal(err.msg, "state: job.j0003 changed but was not marked changed, so a save would "
				     "lose it (a bug in vx)");
	vx_err_release(&err);
	state_release(&st);
	state_backend_free(b);
}

/* The text of each record as the document holds it, spliced: the bytes state_to_json gives. */
static void test_document_from_record_texts(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *texts[4] = { NULL }, *want = NULL, *got = NULL;
	struct state_policy *p = calloc(1, sizeof(*p));

	assert_int_equal(state_load(b, &st, &err), 0);
	/* No record at all. */
	assert_int_equal(state_to_json(&st, &want, &err), 0);
	assert_int_equal(state_to_json_from(&st, texts, &got, &err), 0);
	assert_string_equal(got, want);
	free(want);
	free(got);
	add_jobs(&st, 3);
	p->max_attempts = 3;
	p->after = calloc(1, sizeof(*p->after));
	p->after[0] = strdup("job.j0000");
	p->nafter = 1;
	state_edit(&st, "job.j0002")->applied = p;
	assert_int_equal(vx_labels_set(&st.records[1].current->labels, &st.records[1].current->nlabels, "k",
				       "v\"w"),
			 0);
	for (size_t i = 0; i < st.nrecords; i++)
		assert_int_equal(state_record_to_doc_json(&st.records[i], &texts[i], &err), 0);
	assert_int_equal(state_to_json(&st, &want, &err), 0);
	assert_int_equal(state_to_json_from(&st, texts, &got, &err), 0);
	assert_string_equal(got, want);
	for (size_t i = 0; i < st.nrecords; i++)
		free(texts[i]);
	free(want);
	free(got);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* ---- the git layout ---------------------------------------------------------- */

/* The bucket of NAME as docs/state.md gives it: the first two hex digits of its FNV-1a. */
static void bucket_of(const char *name, char out[3])
{
	snprintf(out, 3, "%02x", (unsigned)(vx_fnv1a64(name, strlen(name)) >> 56));
}

/* The jobs/ tree at the tip's first parent (back 1) or the tip (back 0). */
static git_tree *jobs_tree(git_repository *repo, int back)
{
	git_commit *c = NULL, *p = NULL;
	git_tree *root = NULL, *jobs = NULL;
	git_tree_entry *e = NULL;
	git_oid tip;

	assert_int_equal(git_reference_name_to_id(&tip, repo, STATE_REF), 0);
	assert_int_equal(git_commit_lookup(&c, repo, &tip), 0);
	if (back) {
		assert_int_equal(git_commit_parent(&p, c, 0), 0);
		git_commit_free(c);
		c = p;
	}
	assert_int_equal(git_commit_tree(&root, c), 0);
	assert_int_equal(git_tree_entry_bypath(&e, root, "jobs"), 0);
	assert_int_equal(git_tree_lookup(&jobs, repo, git_tree_entry_id(e)), 0);
	git_tree_entry_free(e);
	git_tree_free(root);
	git_commit_free(c);
	return jobs;
}

/* Whether jobs/ at the tip is fanned out: only buckets, each holding its own records. */
static int tip_fanned(git_repository *repo)
{
	git_tree *jobs = jobs_tree(repo, 0);
	int fanned = 1;

	for (size_t i = 0; i < git_tree_entrycount(jobs); i++) {
		const git_tree_entry *e = git_tree_entry_byindex(jobs, i);
		git_tree *sub = NULL;

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE) {
			fanned = 0;
			continue;
		}
		assert_int_equal(strlen(git_tree_entry_name(e)), 2);
		assert_int_equal(git_tree_lookup(&sub, repo, git_tree_entry_id(e)), 0);
		for (size_t k = 0; k < git_tree_entrycount(sub); k++) {
			char name[160], bucket[3];

			snprintf(name, sizeof(name), "%s", git_tree_entry_name(git_tree_entry_byindex(sub, k)));
			name[strlen(name) - 5] = '\0';
			bucket_of(name, bucket);
			assert_string_equal(bucket, git_tree_entry_name(e));
		}
		git_tree_free(sub);
	}
	git_tree_free(jobs);
	return fanned;
}

/*
 * Fanned out past 256 records: a save of one change rewrites one bucket,
 * and the other buckets keep their trees. Back to flat only at 128.
 */
static void test_fanned_save_rewrites_one_bucket(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	git_repository *repo = NULL;
	git_tree *before, *after;
	size_t differ = 0;
	char bucket[3], name[32];

	assert_int_equal(state_load(b, &st, &err), 0);
	add_jobs(&st, 256);
	save_and_compare(f, b, &st, "256 records");
	assert_int_equal(git_repository_open(&repo, f->repo), 0);
	assert_false(tip_fanned(repo));
	add_job(&st, "k257", 257);
	save_and_compare(f, b, &st, "257 records");
	assert_true(tip_fanned(repo));

	state_edit(&st, "job.j0123")->attempts = 5;
	save_and_compare(f, b, &st, "one change");
	before = jobs_tree(repo, 1);
	after = jobs_tree(repo, 0);
	assert_int_equal(git_tree_entrycount(before), git_tree_entrycount(after));
	bucket_of("j0123", bucket);
	for (size_t i = 0; i < git_tree_entrycount(after); i++) {
		const git_tree_entry *e = git_tree_entry_byindex(after, i);

		if (!git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(git_tree_entry_byindex(before, i)))) {
			differ++;
			assert_string_equal(git_tree_entry_name(e), bucket);
		}
	}
	assert_int_equal(differ, 1);
	git_tree_free(before);
	git_tree_free(after);

	/* Down to 129: still fanned out; to 128: flat again. */
	for (int i = 0; i < 128; i++) {
		snprintf(name, sizeof(name), "job.j%04d", i);
		assert_int_equal(state_remove_record(&st, name), 0);
	}
	save_and_compare(f, b, &st, "129 records");
	assert_true(tip_fanned(repo));
	assert_int_equal(state_remove_record(&st, "job.k257"), 0);
	save_and_compare(f, b, &st, "128 records");
	assert_false(tip_fanned(repo));

	git_repository_free(repo);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Commits st as an older vx did: every record in one flat jobs/ tree. */
static void commit_flat(struct staterepo *f, const struct state *st)
{
	git_repository *repo = NULL;
	git_treebuilder *jobs = NULL, *root = NULL;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_oid id, jobs_id, root_id;
	struct state hdr = *st;
	char *text = NULL;

	assert_int_equal(git_repository_open(&repo, f->repo), 0);
	assert_int_equal(git_treebuilder_new(&jobs, repo, NULL), 0);
	for (size_t i = 0; i < st->nrecords; i++) {
		char file[160];

		snprintf(file, sizeof(file), "%s.json", st->records[i].address + 4);
		assert_int_equal(state_record_to_json(&st->records[i], &text, NULL), 0);
		assert_int_equal(git_blob_create_from_buffer(&id, repo, text, strlen(text)), 0);
		assert_int_equal(git_treebuilder_insert(NULL, jobs, file, &id, GIT_FILEMODE_BLOB), 0);
		free(text);
	}
	assert_int_equal(git_treebuilder_write(&jobs_id, jobs), 0);
	hdr.serial = 1;
	assert_int_equal(state_header_to_json(&hdr, &text, NULL), 0);
	assert_int_equal(git_blob_create_from_buffer(&id, repo, text, strlen(text)), 0);
	free(text);
	assert_int_equal(git_treebuilder_new(&root, repo, NULL), 0);
	assert_int_equal(git_treebuilder_insert(NULL, root, "stack.json", &id, GIT_FILEMODE_BLOB), 0);
	assert_int_equal(git_treebuilder_insert(NULL, root, "jobs", &jobs_id, GIT_FILEMODE_TREE), 0);
	assert_int_equal(git_treebuilder_write(&root_id, root), 0);
	assert_int_equal(git_tree_lookup(&tree, repo, &root_id), 0);
	assert_int_equal(git_signature_new(&sig, "Test User", "test@example.com", 1795341720, 0), 0);
	assert_int_equal(git_commit_create(&id, repo, STATE_REF, sig, sig, NULL, "an older vx", tree, 0, NULL), 0);
	git_signature_free(sig);
	git_tree_free(tree);
	git_treebuilder_free(root);
	git_treebuilder_free(jobs);
	git_repository_free(repo);
}

/*
 * A flat folder of 300 records, as an older vx wrote it, loads; the first
 * save fans it out; the history reads through the change of layout, which
 * changed no record but the one saved.
 */
static void test_flat_state_loads_and_fans_out(void **state)
{
	struct staterepo *f = *state;
	struct state_backend *b = staterepo_open(f);
	struct state st = STATE_INIT, old = STATE_INIT;
	struct state_history_entry *h = NULL;
	struct vx_err err = VX_ERR_INIT;
	git_repository *repo = NULL;
	char *want = NULL, *got = NULL;
	size_t n = 0;

	assert_int_equal(state_load(b, &old, &err), 0);
	add_jobs(&old, 300);
	commit_flat(f, &old);
	old.serial = 1;
	assert_int_equal(state_load(b, &st, &err), 0);
	assert_int_equal(state_to_json(&st, &got, &err), 0);
	assert_int_equal(state_to_json(&old, &want, &err), 0);
	assert_string_equal(got, want);
	free(got);
	free(want);

	state_edit(&st, "job.j0005")->attempts = 2;
	save_and_compare(f, b, &st, "fanned out");
	assert_int_equal(git_repository_open(&repo, f->repo), 0);
	assert_true(tip_fanned(repo));

	/* One entry for a record the new layout did not change; two for the one saved. */
	assert_int_equal(state_history(b, "job.j0200", 0, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(h[0].message, "an older vx");
	state_history_free(h, n);
	assert_int_equal(state_history(b, "job.j0005", 0, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(h[0].record->attempts, 2);
	state_history_free(h, n);
	/* Every address: the fanning commit changed job.j0005 alone. */
	assert_int_equal(state_history(b, NULL, 2, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(h[0].address, "job.j0005");
	assert_string_equal(h[1].message, "an older vx");
	state_history_free(h, n);

	git_repository_free(repo);
	state_release(&st);
	state_release(&old);
	state_backend_free(b);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest on_git[] = {
		cmocka_unit_test_setup_teardown(test_every_mutator_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmarked_change_is_caught, setup, teardown),
		cmocka_unit_test_setup_teardown(test_document_from_record_texts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fanned_save_rewrites_one_bucket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flat_state_loads_and_fans_out, setup, teardown),
	};
	const struct CMUnitTest on_gcs[] = {
		cmocka_unit_test_setup_teardown(test_every_mutator_round_trips, setup_gcs, teardown),
		cmocka_unit_test_setup_teardown(test_unmarked_change_is_caught, setup_gcs, teardown),
	};
	int failed = cmocka_run_group_tests_name("saves on git", on_git, NULL, NULL);

	return failed + cmocka_run_group_tests_name("saves on gcs", on_gcs, group_start_gcs, group_stop_gcs);
}
