/*
 * Unit tests for state/state_gcs.c against the fake's Cloud Storage: the
 * objects it keeps, the compare-and-swap on the generation, our own retried
 * write that landed, and what it refuses to believe. The lease and the
 * promises shared with git are in test_lock.c and test_state_git.c.
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

#include "providers/gcp/http.h"
#include "providers/gcp/storage.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "state/state_gcs.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "tests/unit/support/fakegcs.h"
#include "tests/unit/support/staterepo.h"

static struct fakegcs *gcs;

struct fx {
	struct vx_ctx ctx;
	int64_t now;
	char prefix[16];
	char obj[64];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->now = INT64_C(1795341720000);
	vx_ctx_init(&f->ctx);
	staterepo_fixed_clock(&f->ctx, &f->now);
	f->ctx.seed = 7;
	fakegcs_new_prefix(gcs, f->prefix, sizeof(f->prefix));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static int group_start(void **state)
{
	(void)state;
	gcs = fakegcs_start();
	return 0;
}

static int group_stop(void **state)
{
	(void)state;
	fakegcs_stop(gcs);
	return 0;
}

/* The name of object rel under the fixture's prefix (in f->obj). */
static const char *obj(struct fx *f, const char *rel)
{
	snprintf(f->obj, sizeof(f->obj), "%s/%s", f->prefix, rel);
	return f->obj;
}

/* The object's content and generation, or NULL / 0 when it does not exist. */
static char *get(struct fx *f, const char *rel, int64_t *gen)
{
	struct vx_err err = VX_ERR_INIT;
	char *data = NULL;
	size_t len = 0;
	int rc = storage_object_read(&gcs->sc, "vx-unit", obj(f, rel), &data, &len, gen, &err);

	if (rc == VX_ENOTFOUND) {
		vx_err_release(&err);
		*gen = 0;
		return NULL;
	}
	if (rc != 0)
		fail_msg("reading %s: %s", f->obj, err.msg);
	return data;
}

/* Writes rel behind the backend's back (no precondition); its new generation. */
static int64_t put(struct fx *f, const char *rel, const char *text)
{
	struct vx_err err = VX_ERR_INIT;
	int64_t gen = 0;

	if (storage_object_write(&gcs->sc, "vx-unit", obj(f, rel), text, strlen(text), NULL,
				 STORAGE_ANY_GENERATION, &gen, &err) != 0)
		fail_msg("writing %s: %s", f->obj, err.msg);
	return gen;
}

/* A POST to the fake's control API. */
static void control(const char *path, const char *body)
{
	struct gcp_request req;
	struct gcp_response resp = { 0 };
	struct vx_err err = VX_ERR_INIT;
	char url[256];

	snprintf(url, sizeof(url), "%s%s", gcs->url, path);
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = url;
	req.body = body;
	req.body_len = strlen(body);
	req.api = "storage";
	req.retry = GCP_RETRY_NEVER;
	req.no_auth = 1;
	req.rpc = "control";
	if (gcp_http_send(gcs->http, &req, &resp, &err) != 0 || resp.status != 200)
		fail_msg("%s: %s (HTTP %ld)", path, err.msg ? err.msg : "", resp.status);
	gcp_response_release(&resp);
}

static struct state_backend *open_b(struct fx *f)
{
	return fakegcs_open(gcs, &f->ctx, f->prefix);
}

static void add_job(struct state *st, const char *addr)
{
	assert_int_equal(state_add_record(st, addr, "CustomJob", NULL, NULL), 0);
}

static void test_objects_and_round_trip(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *want = NULL, *rev = NULL, *hist = NULL, **list = NULL;
	int64_t gen = 0;
	size_t n = 0;

	assert_int_equal(state_load(b, &st, &err), 0);
	assert_int_equal(st.serial, 0);
	assert_int_equal(state_revision(b, &rev, &err), 0);
	assert_null(rev);
	assert_null(get(f, "state.json", &gen));
	add_job(&st, "job.a");
	if (state_write(b, &st, "apply: 1 created\n+ job.a create X", &err) != 0)
		fail_msg("write: %s", err.msg);
	assert_int_equal(st.serial, 1);
	/* state.json is exactly state_to_json of the state, without a lock. */
	text = get(f, "state.json", &gen);
	assert_non_null(text);
	assert_int_equal(state_to_json(&st, &want, &err), 0);
	assert_string_equal(text, want);
	assert_int_equal(state_revision(b, &rev, &err), 0);
	{
		char g[40];

		snprintf(g, sizeof(g), "gen:%lld", (long long)gen);
		assert_string_equal(rev, g);
	}
	/* Its history object holds it, the message and the time. */
	hist = get(f, "history/0000000001.json", &gen);
	assert_non_null(hist);
	free(want);
	want = vx_asprintf("{\"serial\":1,\"lineage\":\"%s\",\"time\":\"2026-11-22T10:02:00Z\","
			   "\"message\":\"apply: 1 created\\n+ job.a create X\\n\\nVx-Serial: 1\\n\","
			   "\"state\":%s}\n",
			   st.lineage, text);
	assert_string_equal(hist, want);
	/* No lease object without a lease. */
	free(text);
	assert_null(text = get(f, "lease.json", &gen));
	assert_int_equal(state_load(b, &back, &err), 0);
	assert_int_equal(back.serial, 1);
	assert_non_null(state_find(&back, "job.a"));
	assert_int_equal(state_list(b, &list, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "job.a");
	free(list[0]);
	free(list);
	free(text);
	free(hist);
	free(want);
	free(rev);
	state_release(&st);
	state_release(&back);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Same serial, same lease, but not the object loaded: the generation says so. */
static void test_rewrite_behind_our_back_is_refused(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *want = NULL;
	int64_t gen = 0;

	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	assert_int_equal(state_load(b, &st, &err), 0);
	add_job(&st, "job.a");
	assert_int_equal(state_write(b, &st, "one", &err), 0);
	text = get(f, "state.json", &gen);
	put(f, "state.json", text); /* the same bytes, a new generation */
	add_job(&st, "job.b");
	assert_int_equal(state_write(b, &st, "two", &err), VX_ECONFLICT);
	want = vx_asprintf("writing state: gs://vx-unit/%s/state.json changed since it was read "
			   "at serial 1 (another writer replaced it); plan again", f->prefix);
	assert_string_equal(err.msg, want);
	assert_int_equal(st.serial, 1);
	assert_null(get(f, "history/0000000002.json", &gen));
	assert_int_equal(state_lock_drop(b, &err), 0);
	free(text);
	free(want);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Two writers based on the same state: the compare-and-swap lets one win. */
static void test_two_writers_one_wins(void **state)
{
	struct fx *f = *state;
	struct state_backend *a = open_b(f), *b = open_b(f);
	struct state sa = STATE_INIT, sb = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *hist = NULL;
	int64_t gen = 0;

	assert_int_equal(state_load(a, &sa, &err), 0);
	add_job(&sa, "job.a");
	assert_int_equal(state_write(a, &sa, "one", &err), 0);
	state_release(&sa);
	assert_int_equal(state_load(a, &sa, &err), 0);
	assert_int_equal(state_load(b, &sb, &err), 0);
	add_job(&sa, "job.x");
	add_job(&sb, "job.y");
	assert_int_equal(state_write(a, &sa, "a wins", &err), 0);
	assert_int_equal(state_write(b, &sb, "b loses", &err), VX_ECONFLICT);
	assert_string_equal(err.msg, "writing state: the state moved to serial 2 since it was read "
				     "at serial 1 (another apply wrote it); plan again");
	hist = get(f, "history/0000000002.json", &gen);
	assert_non_null(strstr(hist, "\"message\":\"a wins\\n\\nVx-Serial: "));
	free(hist);
	state_release(&sa);
	state_release(&sb);
	state_backend_free(a);
	state_backend_free(b);
	vx_err_release(&err);
}

/*
 * The first attempt lands but its answer is lost; the retry meets its own
 * write (412). Read back, that is success, not a conflict (storage.h).
 */
static void test_own_retried_write_is_not_a_conflict(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *text = NULL, *want = NULL;
	int64_t gen = 0;

	assert_int_equal(state_load(b, &st, &err), 0);
	add_job(&st, "job.a");
	control("/_fake/faults", "{\"drop_after_processing_rate\": 1.0, \"methods\": "
				 "[\"storage.objects.insert\"], \"times\": 1}");
	if (state_write(b, &st, "one", &err) != 0)
		fail_msg("write: %s", err.msg);
	control("/_fake/faults", "{}");
	assert_int_equal(st.serial, 1);
	text = get(f, "state.json", &gen);
	assert_int_equal(state_to_json(&st, &want, &err), 0);
	assert_string_equal(text, want);
	/* And the next write is at the generation that landed. */
	add_job(&st, "job.b");
	if (state_write(b, &st, "two", &err) != 0)
		fail_msg("write 2: %s", err.msg);
	free(text);
	free(want);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* What the bucket says is checked, not believed. */
static void test_untrusted_objects_are_refused(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT;
	struct state_lock *l = NULL;
	struct state_history_entry *h = NULL;
	struct vx_err err = VX_ERR_INIT;
	char *want = NULL, *text = NULL;
	int64_t gen = 0;
	size_t n = 0;

	put(f, "lease.json", "{\"version\": 1, \"id\": \"x\"}");
	assert_int_equal(state_lock_current(b, &l, &err), VX_EINVAL);
	want = vx_asprintf("gs://vx-unit/%s/lease.json: invalid lock JSON: missing key \"user\"",
			   f->prefix);
	assert_string_equal(err.msg, want);
	assert_int_equal(state_lock_acquire(b, NULL, &err), VX_EINVAL);
	free(want);

	put(f, "state.json", "{\"version\": 1, \"stack\": \"other\"}");
	assert_int_equal(state_load(b, &st, &err), VX_EINVAL);
	want = vx_asprintf("reading state gs://vx-unit/%s/state.json: invalid state JSON: missing "
			   "key \"serial\"", f->prefix);
	assert_string_equal(err.msg, want);
	free(want);

	/* A state of serial 2 whose history/1 claims another serial. */
	fakegcs_new_prefix(gcs, f->prefix, sizeof(f->prefix));
	state_backend_free(b);
	b = open_b(f);
	assert_int_equal(state_load(b, &st, &err), 0);
	add_job(&st, "job.a");
	assert_int_equal(state_write(b, &st, "one", &err), 0);
	add_job(&st, "job.b");
	assert_int_equal(state_write(b, &st, "two", &err), 0);
	text = get(f, "history/0000000001.json", &gen);
	put(f, "history/0000000001.json", "{\"serial\": 7, \"state\": {}}");
	/* It is left out and named: the history is append-only, and the walk
	 * goes on (here to nothing older, so serial 2 shows every record). */
	{
		struct state_history_skips skips = STATE_HISTORY_SKIPS_INIT;
		char *warn;

		assert_int_equal(state_history(b, NULL, 0, &h, &n, &skips, &err), 0);
		assert_int_equal(n, 2);
		assert_string_equal(h[0].address, "job.a");
		assert_string_equal(h[1].address, "job.b");
		state_history_free(h, n);
		h = NULL;
		want = vx_asprintf("1 state version skipped (serial 1: gs://vx-unit/%s/history/"
				   "0000000001.json: not a history object of serial 1)", f->prefix);
		warn = state_history_skips_text(&skips);
		assert_string_equal(warn, want);
		free(warn);
		state_history_skips_release(&skips);
	}
	/* One of another lineage ends the walk (a state made afresh reuses serials). */
	{
		char *p = strstr(text, "\"lineage\":\"");

		assert_non_null(p);
		p[11] = p[11] == '0' ? '1' : '0';
	}
	put(f, "history/0000000001.json", text);
	assert_int_equal(state_history(b, NULL, 0, &h, &n, NULL, &err), 0);
	/* The oldest version reached shows every record it holds. */
	assert_int_equal(n, 2);
	assert_string_equal(h[0].address, "job.a");
	assert_string_equal(h[1].address, "job.b");
	/* The message with the trailers state_write adds (backend.h). */
	assert_string_equal(h[0].message, "two\n\nVx-Serial: 2\n");
	assert_string_equal(h[1].message, "two\n\nVx-Serial: 2\n");
	state_history_free(h, n);
	free(text);
	free(want);
	state_release(&st);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Deletes rel behind the backend's back. */
static void del(struct fx *f, const char *rel)
{
	struct vx_err err = VX_ERR_INIT;

	if (storage_object_delete(&gcs->sc, "vx-unit", obj(f, rel), STORAGE_ANY_GENERATION, &err) != 0)
		fail_msg("deleting %s: %s", f->obj, err.msg);
}

/* A list reads every page, and only names under the prefix. */
static void test_list_reads_every_page(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char **names = NULL, dir[32];
	size_t n = 0;

	put(f, "history/0000000002.json", "{}");
	put(f, "history/0000000001.json", "{}");
	put(f, "history/0000000010.json", "{}");
	put(f, "state.json", "{}");
	control("/_fake/paging", "{\"max_page_size\": 2}");
	snprintf(dir, sizeof(dir), "%s/history/", f->prefix);
	if (storage_object_list(&gcs->sc, "vx-unit", dir, &names, &n, &err) != 0)
		fail_msg("list: %s", err.msg);
	control("/_fake/paging", "{\"max_page_size\": 0}");
	assert_int_equal(n, 3);
	assert_string_equal(names[0], obj(f, "history/0000000001.json"));
	assert_string_equal(names[1], obj(f, "history/0000000002.json"));
	assert_string_equal(names[2], obj(f, "history/0000000010.json"));
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	vx_err_release(&err);
}

/*
 * state.json deleted, its history kept: a load refuses rather than start a
 * new state (which would create every job again); restore puts back the
 * newest version, the same state it was.
 */
static void test_deleted_state_is_refused_and_restored(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	char *want = NULL, *what = NULL, *before = NULL, *after = NULL;
	int64_t gen = 0;

	assert_int_equal(state_load(b, &st, &err), 0);
	add_job(&st, "job.a");
	assert_int_equal(state_write(b, &st, "one", &err), 0);
	add_job(&st, "job.b");
	assert_int_equal(state_write(b, &st, "two", &err), 0);
	before = get(f, "state.json", &gen);
	del(f, "state.json");
	assert_int_equal(state_load(b, &back, &err), VX_ENOTFOUND);
	want = vx_asprintf("state gs://vx-unit/%s/state.json does not exist, but its history does: the "
			   "newest is gs://vx-unit/%s/history/0000000002.json (serial 2), so the state "
			   "was deleted (a lifecycle rule or a clean-up?); starting a new state would "
			   "create every job again. Restore it with: vx state restore (or by hand: gcloud "
			   "storage cat gs://vx-unit/%s/history/0000000002.json | jq .state | gcloud "
			   "storage cp - gs://vx-unit/%s/state.json)",
			   f->prefix, f->prefix, f->prefix, f->prefix);
	assert_string_equal(err.msg, want);
	/* Only under the lease. */
	assert_int_equal(state_restore(b, 0, &what, &err), VX_EINVAL);
	assert_string_equal(err.msg, "state restore: the state lease is not held");
	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	if (state_restore(b, 0, &what, &err) != 0)
		fail_msg("restore: %s", err.msg);
	free(want);
	want = vx_asprintf("gs://vx-unit/%s/state.json restored from gs://vx-unit/%s/history/"
			   "0000000002.json: serial 2, lineage %s, 2 records",
			   f->prefix, f->prefix, st.lineage);
	assert_string_equal(what, want);
	after = get(f, "state.json", &gen);
	assert_string_equal(after, before);
	/* Once there, nothing to restore. */
	free(what);
	assert_int_equal(state_restore(b, 1, &what, &err), VX_ECONFLICT);
	assert_null(what);
	/* And the holder writes on from it. */
	add_job(&st, "job.c");
	if (state_write(b, &st, "three", &err) != 0)
		fail_msg("write after restore: %s", err.msg);
	assert_int_equal(st.serial, 3);
	assert_int_equal(state_lock_drop(b, &err), 0);
	free(before);
	free(after);
	free(want);
	state_release(&st);
	state_release(&back);
	state_backend_free(b);
	vx_err_release(&err);
}

/* Deleted under a running writer that holds the lease: written back, not blamed on another apply. */
static void test_state_deleted_under_the_lease_is_written_back(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = open_b(f);
	struct state st = STATE_INIT, back = STATE_INIT;
	struct vx_err err = VX_ERR_INIT;
	int64_t gen = 0;
	char *text = NULL;

	assert_int_equal(state_lock_acquire(b, NULL, &err), 0);
	assert_int_equal(state_load(b, &st, &err), 0);
	add_job(&st, "job.a");
	assert_int_equal(state_write(b, &st, "one", &err), 0);
	del(f, "state.json");
	add_job(&st, "job.b");
	if (state_write(b, &st, "two", &err) != 0)
		fail_msg("write: %s", err.msg);
	assert_int_equal(st.serial, 2);
	/*
	 * Deleted between the save's reads and its compare-and-swap: the two
	 * reads are lease.json's metadata and content (state.json is not read:
	 * this backend wrote its generation); the create at that generation
	 * fails (412), and read back the object is gone, not replaced.
	 */
	{
		char body[256];

		snprintf(body, sizeof(body), "{\"rpc\": \"storage.objects.get\", \"count\": 2, "
					     "\"bucket\": \"vx-unit\", \"name\": \"%s\"}",
			 obj(f, "state.json"));
		control("/_fake/objects/delete-after", body);
	}
	add_job(&st, "job.c");
	if (state_write(b, &st, "three", &err) != 0)
		fail_msg("write after a delete at the last moment: %s", err.msg);
	assert_int_equal(st.serial, 3);
	assert_non_null(text = get(f, "state.json", &gen));
	assert_int_equal(state_load(b, &back, &err), 0);
	assert_int_equal(back.serial, 3);
	assert_string_equal(back.lineage, st.lineage);
	assert_non_null(state_find(&back, "job.a"));
	assert_non_null(state_find(&back, "job.b"));
	assert_non_null(state_find(&back, "job.c"));
	assert_int_equal(state_lock_drop(b, &err), 0);
	free(text);
	state_release(&st);
	state_release(&back);
	state_backend_free(b);
	vx_err_release(&err);
}

static void test_open_errors(void **state)
{
	struct fx *f = *state;
	struct state_backend *b = NULL;
	struct vx_err err = VX_ERR_INIT;
	struct state_gcs_opts o = { "research", "vx-unit", "a/../b", fakegcs_store(gcs), NULL };

	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), VX_EINVAL);
	assert_string_equal(err.msg, "gcs state: path \"a/../b\" is not an object prefix (no leading "
				     "or trailing '/', no empty, '.' or '..' segment, no spaces or "
				     "wildcards)");
	o.path = "/abs";
	o.store = fakegcs_store(gcs); /* the last open owned (and freed) it */
	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), VX_EINVAL);
	o.path = "x//y";
	o.store = fakegcs_store(gcs); /* the last open owned (and freed) it */
	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), VX_EINVAL);
	o.path = NULL;
	o.bucket = "";
	o.store = fakegcs_store(gcs); /* the last open owned (and freed) it */
	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), VX_EINVAL);
	assert_string_equal(err.msg, "gcs state: no bucket given");
	o.bucket = "vx-unit";
	o.stack = "bad name";
	o.store = fakegcs_store(gcs); /* the last open owned (and freed) it */
	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), VX_EINVAL);
	assert_null(b);
	o.stack = "research";
	o.store = fakegcs_store(gcs); /* the last open owned (and freed) it */
	assert_int_equal(state_gcs_open(&b, &f->ctx, &o, &err), 0);
	state_backend_free(b);
	vx_err_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_objects_and_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_behind_our_back_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_writers_one_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_retried_write_is_not_a_conflict, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_objects_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_reads_every_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_state_is_refused_and_restored, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_state_deleted_under_the_lease_is_written_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_start, group_stop);
}
