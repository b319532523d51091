/* The gcs backend: see state_gcs.h. */
#include "state/state_gcs.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/backend.h"
#include "state/blobstore.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/alloc.h"
#include "util/ctx.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/banned.h"

#define LEASE_MAX ((size_t)64 << 10)
#define PATH_MAX_LEN 900 /* leaves room for "/history/NNNNNNNNNN.json" in 1024 bytes */

struct gcs_backend {
	struct state_backend base; /* first */
	struct blob_store *store;  /* owned */
	struct state_backend *config; /* owned, or NULL */
	char *bucket;
	char *prefix;
	char *state_obj;
	char *lease_obj;
	/* What the last load saw: state.json's generation (0: none) at serial
	 * loaded_serial, or loaded_gen -1 before any load. A write of a state
	 * at that serial must find that generation still there. */
	int64_t loaded_gen;
	uint64_t loaded_serial;
	char *loaded_lineage; /* that state's lineage (NULL: unknown) */
	/* The serial whose history object this backend made last (0: none):
	 * the next write need not look for it. */
	uint64_t history_serial;
	/*
	 * Each record's text in state.json (state_record_to_doc_json) as this
	 * backend last wrote it, so a save prints only the marked records
	 * (state.h): valid for a state whose base is this backend at epoch, the
	 * count of its loads and saves. Emptied when a state is written whole.
	 */
	uint64_t epoch;
	struct rec_text *texts;
	size_t ntexts, atexts;
	struct vx_hashmap text_index; /* address -> index into texts */
	int check_marks;	      /* VX_STATE_CHECK_MARKS: an unmarked record that changed is an error */
	/*
	 * state.json's text as this backend last loaded or wrote it (at serial
	 * last_serial; NULL: unknown): a write whose text at that serial is the
	 * same is no write (detects_noop), found without printing the state
	 * again. read_text, read_gen: what read_state read last.
	 */
	char *last_text;
	uint64_t last_serial;
	char *read_text;
	int64_t read_gen;
};

struct rec_text {
	char *address;
	char *text;
};

static void texts_clear(struct gcs_backend *g);

static struct gcs_backend *gb(struct state_backend *b)
{
	return (struct gcs_backend *)b;
}

/* Reads an object; *found 0 when it does not exist. Larger than max: VX_EINVAL. */
static int read_obj(struct gcs_backend *g, const char *name, size_t max, char **data,
		    size_t *len, int64_t *gen, int *found, struct vx_err *err)
{
	int rc;

	*found = 0;
	*gen = 0;
	rc = blob_read(g->store, g->bucket, name, data, len, gen, err);
	if (rc == VX_ENOTFOUND) {
		vx_err_release(err);
		*gen = 0;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (*len > max || strlen(*data) != *len) {
		free(*data);
		*data = NULL;
		return vx_err_set(err, VX_EINVAL, "gs://%s/%s: %s", g->bucket, name,
				  *len > max ? "too large" : "holds a NUL byte");
	}
	*found = 1;
	return 0;
}

/*
 * Writes data at if_gen. A 412 may be our own earlier attempt that landed
 * (blobstore.h): when the object now holds exactly data, that is success, and
 * *new_gen its generation. Otherwise VX_ECONFLICT.
 */
static int cas_write(struct gcs_backend *g, const char *name, const char *data, int64_t if_gen,
		     int64_t *new_gen, struct vx_err *err)
{
	char *back = NULL;
	size_t len = 0;
	int64_t gen = 0;
	int found = 0, rc;

	rc = blob_write(g->store, g->bucket, name, data, strlen(data), if_gen, new_gen, err);
	if (rc != VX_ECONFLICT)
		return rc;
	{
		struct vx_err e2 = VX_ERR_INIT;

		if (read_obj(g, name, STATE_MAX_JSON, &back, &len, &gen, &found, &e2) == 0 && found &&
		    len == strlen(data) && memcmp(back, data, len) == 0) {
			vx_err_release(err);
			*new_gen = gen;
			rc = 0;
		}
		vx_err_release(&e2);
	}
	free(back);
	return rc;
}

/* ---- the lease ---- */

static int lease_read(struct gcs_backend *g, struct state_lock **out, int64_t *gen,
		      struct vx_err *err)
{
	char *text = NULL;
	size_t len = 0;
	int found, rc;

	*out = NULL;
	rc = read_obj(g, g->lease_obj, LEASE_MAX, &text, &len, gen, &found, err);
	if (rc < 0 || !found)
		goto done;
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_lock_from_json(*out, text, len, err);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		vx_err_wrap(err, "gs://%s/%s", g->bucket, g->lease_obj);
	}
done:
	free(text);
	return rc;
}

static int gcs_lock_read(struct state_backend *b, struct state_lock **out, struct vx_err *err)
{
	int64_t gen;

	return lease_read(gb(b), out, &gen, err);
}

static int gcs_lock_swap(struct state_backend *b, const char *expect_id,
			 const struct state_lock *next, const char *message, struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	struct state_lock *cur = NULL;
	char *text = NULL;
	int64_t gen = 0, new_gen = 0;
	int rc = 0;

	(void)message; /* the lease is kept off the history */
	if (next && (rc = state_lock_to_json(next, &text, err)) < 0)
		goto done;
	if (!expect_id) {
		if (next)
			rc = cas_write(g, g->lease_obj, text, 0, &new_gen, err);
		goto done;
	}
	if ((rc = lease_read(g, &cur, &gen, err)) < 0)
		goto done;
	if (!cur || strcmp(cur->id, expect_id) != 0) {
		rc = vx_err_set(err, VX_ECONFLICT, "the state lock changed meanwhile");
		goto done;
	}
	if (next) {
		rc = cas_write(g, g->lease_obj, text, gen, &new_gen, err);
	} else {
		rc = blob_remove(g->store, g->bucket, g->lease_obj, gen, err);
		/* Gone: our own retried delete landed, or someone cleared it; either
		 * way it is released. */
		if (rc == VX_ENOTFOUND) {
			vx_err_release(err);
			rc = 0;
		}
	}
done:
	state_lock_free(cur);
	free(text);
	return rc;
}

/* ---- the state ---- */

/* state.json parsed, or *found = 0; *gen its generation (0 when none). */
static int read_state(struct gcs_backend *g, struct state *out, int64_t *gen, int *found,
		      struct vx_err *err)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_obj(g, g->state_obj, STATE_MAX_JSON, &text, &len, gen, found, err);
	if (rc < 0 || !*found)
		goto done;
	rc = state_from_json(out, text, len, err);
	if (rc == 0) {
		free(g->read_text);
		g->read_text = vx_strdup(text); /* NULL when out of memory: then no write is found a no-op */
		g->read_gen = *gen;
	}
	if (rc == 0 && strcmp(out->stack, g->base.stack) != 0)
		rc = vx_err_set(err, VX_EINVAL, "it belongs to stack \"%s\", not \"%s\"", out->stack,
				g->base.stack);
	if (rc == 0) {
		/* The lease lives in lease.json, whatever state.json says. */
		state_lock_free(out->lock);
		out->lock = NULL;
	}
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "reading state gs://%s/%s", g->bucket, g->state_obj);
	}
done:
	free(text);
	return rc;
}

static char *history_name(struct gcs_backend *g, uint64_t serial);

/*
 * The newest history object under the prefix, by listing P/history/
 * (names are zero-padded, so the last in order is the newest): *serial
 * its serial, or 0 when there is none. Names of another form are ignored.
 */
static int newest_history(struct gcs_backend *g, uint64_t *serial, struct vx_err *err)
{
	char **names = NULL, *dir = vx_asprintf("%s/history/", g->prefix);
	size_t n = 0, dlen;
	int rc;

	*serial = 0;
	if (!dir)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	dlen = strlen(dir);
	rc = blob_list(g->store, g->bucket, dir, &names, &n, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *t = names[i] + dlen;
		uint64_t v = 0;
		size_t k;

		for (k = 0; k < 10 && t[k] >= '0' && t[k] <= '9'; k++)
			v = v * 10 + (uint64_t)(t[k] - '0');
		if (k == 10 && !strcmp(t + 10, ".json") && v > *serial)
			*serial = v;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
	return rc;
}

/*
 * state.json is absent: a first run, or a deleted state. When history
 * objects are there, it is the latter, and a new state (serial 0, a new
 * lineage) would create every job again: VX_ENOTFOUND saying how to
 * restore it instead.
 */
static int refuse_if_lost(struct gcs_backend *g, struct vx_err *err)
{
	uint64_t serial = 0;
	char *h = NULL;
	int rc;

	if ((rc = newest_history(g, &serial, err)) < 0) {
		vx_err_wrap(err, "state gs://%s/%s does not exist; looking for its history",
			    g->bucket, g->state_obj);
		return rc;
	}
	if (!serial)
		return 0;
	if (!(h = history_name(g, serial)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = vx_err_set(err, VX_ENOTFOUND,
			"state gs://%s/%s does not exist, but its history does: the newest is "
			"gs://%s/%s (serial %llu), so the state was deleted (a lifecycle rule or a "
			"clean-up?); starting a new state would create every job again. Restore it "
			"with: vx state restore (or by hand: gcloud storage cat gs://%s/%s | jq .state | "
			"gcloud storage cp - gs://%s/%s)",
			g->bucket, g->state_obj, g->bucket, h, (unsigned long long)serial, g->bucket,
			h, g->bucket, g->state_obj);
	free(h);
	return rc;
}

struct version;
static int history_get(struct gcs_backend *g, uint64_t serial, const char *lineage,
		       struct version *v, int *found, struct vx_err *err);
static void version_release(struct version *v);
static int history_exists(struct gcs_backend *g, uint64_t serial, const char *lineage, int *found,
			  struct vx_err *err);

/*
 * state.json went back: history/<serial + 1> of the same lineage exists,
 * so a newer state was written, and an older copy put over it (a restored
 * object generation). An older state forgets the jobs vx started since and
 * would start them again: VX_ECONFLICT, naming the newest version. A
 * writer that moved on between our two reads is no rewind: the state is
 * read again (*again set) and compared again.
 */
static int refuse_if_rewound(struct gcs_backend *g, struct state *st, int64_t *gen, int *again,
			     struct vx_err *err)
{
	struct state now = STATE_INIT;
	uint64_t newest = 0;
	int64_t now_gen = 0;
	int found = 0, rc = 0;
	char *h = NULL;

	*again = 0;
	if (!st->serial || (rc = history_exists(g, st->serial + 1, st->lineage, &found, err)) < 0 || !found)
		return st->serial ? rc : 0;
	if ((rc = read_state(g, &now, &now_gen, &found, err)) < 0)
		return rc;
	if (found && now_gen != *gen) {
		state_release(st);
		*st = now;
		*gen = now_gen;
		*again = 1;
		return 0;
	}
	state_release(&now);
	if ((rc = newest_history(g, &newest, err)) < 0)
		return rc;
	if (!(h = history_name(g, newest > st->serial ? newest : st->serial + 1)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = vx_err_set(err, VX_ECONFLICT,
			"state gs://%s/%s went back: it holds serial %llu, but history/%010llu.json of the "
			"same state exists; an older state forgets the jobs vx started since, and would "
			"start them again. Put the newest back with: gcloud storage cat gs://%s/%s | jq .state "
			"| gcloud storage cp - gs://%s/%s (to keep the older state anyway, delete the "
			"history objects after serial %llu)",
			g->bucket, g->state_obj, (unsigned long long)st->serial,
			(unsigned long long)st->serial + 1, g->bucket, h, g->bucket, g->state_obj,
			(unsigned long long)st->serial);
	free(h);
	return rc;
}

/* What this backend knows is stored: state.json at generation gen holds serial and lineage. */
static void known(struct gcs_backend *g, int64_t gen, uint64_t serial, const char *lineage)
{
	g->loaded_gen = gen;
	g->loaded_serial = serial;
	free(g->loaded_lineage);
	g->loaded_lineage = gen > 0 && lineage ? vx_strdup(lineage) : NULL;
}

static int gcs_load(struct state_backend *b, struct state *out, struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	int64_t gen = 0;
	int found = 0, rc, again = 1;

	rc = read_state(g, out, &gen, &found, err);
	if (rc == 0 && !found && (rc = refuse_if_lost(g, err)) == 0)
		rc = state_new(out, b->stack, b->ctx, err);
	for (int tries = 0; rc == 0 && found && again && tries < 3; tries++)
		rc = refuse_if_rewound(g, out, &gen, &again, err);
	if (rc == 0)
		rc = gcs_lock_read(b, &out->lock, err);
	if (rc < 0)
		state_release(out);
	if (rc == 0) {
		known(g, gen, out->serial, out->lineage);
		/* Its records are as state.json holds them; their texts are made at the first save. */
		texts_clear(g);
		state_saved(out, g, ++g->epoch);
		free(g->last_text);
		g->last_text = NULL;
		if (found && g->read_text && g->read_gen == gen) {
			g->last_text = g->read_text;
			g->last_serial = out->serial;
			g->read_text = NULL;
		}
	}
	return rc;
}

static char *history_name(struct gcs_backend *g, uint64_t serial)
{
	return vx_asprintf("%s/history/%010llu.json", g->prefix, (unsigned long long)serial);
}

/*
 * A history object is {"serial", "lineage", "time", "message", "state"}:
 * this head, state.json's text as written, and HISTORY_TAIL. The server
 * composes it from three objects (history_compose), so a save uploads the
 * state once, as state.json, however large it is.
 */
#define HISTORY_TAIL "}\n"

/* The head of history/<serial>, or NULL when out of memory. */
static char *history_head(uint64_t serial, const char *lineage, int64_t time_ms, const char *message)
{
	struct vx_buf b = VX_BUF_INIT;
	char when[STATE_TIME_MAX];

	state_time_format(time_ms, when);
	if (vx_buf_printf(&b, "{\"serial\":%llu,\"lineage\":", (unsigned long long)serial) < 0 ||
	    vx_buf_add_json_str(&b, lineage ? lineage : "") < 0 || vx_buf_adds(&b, ",\"time\":") < 0 ||
	    vx_buf_add_json_str(&b, time_ms > 0 ? when : "") < 0 ||
	    vx_buf_adds(&b, ",\"message\":") < 0 ||
	    (message ? vx_buf_add_json_str(&b, message) : vx_buf_adds(&b, "null")) < 0 ||
	    vx_buf_adds(&b, ",\"state\":") < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

/* Writes PREFIX/parts/tail (HISTORY_TAIL) unless it is there. */
static int history_tail_put(struct gcs_backend *g, const char *name, struct vx_err *err)
{
	int64_t gen = 0;
	int rc = blob_write(g->store, g->bucket, name, HISTORY_TAIL, strlen(HISTORY_TAIL), 0, &gen, err);

	if (rc == VX_ECONFLICT) {
		vx_err_release(err);
		rc = 0;
	}
	return rc;
}

/*
 * Makes history/<serial> unless it exists: the server composes it from a
 * head uploaded here (parts/<serial>-<generation>.head, deleted after), the
 * state.json generation state_gen, and parts/tail (written when missing).
 * VX_ENOTFOUND when state.json is no longer at state_gen.
 */
static int history_compose(struct gcs_backend *g, uint64_t serial, const char *lineage,
			   int64_t time_ms, const char *message, int64_t state_gen, struct vx_err *err)
{
	char *name = history_name(g, serial), *text = NULL;
	char *head = vx_asprintf("%s/parts/%010llu-%lld.head", g->prefix, (unsigned long long)serial,
				 (long long)state_gen);
	char *tail = vx_asprintf("%s/parts/tail", g->prefix);
	int64_t head_gen = 0, gen = 0;
	int rc;

	if (!name || !head || !tail || !(text = history_head(serial, lineage, time_ms, message))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	/* Named after state.json's generation, which only this writer made: a
	 * 412 is our own retried upload that landed, with this very text. */
	rc = blob_write(g->store, g->bucket, head, text, strlen(text), 0, &head_gen, err);
	if (rc == VX_ECONFLICT) {
		vx_err_release(err);
		head_gen = 0;
		rc = 0;
	}
	if (rc < 0)
		goto done;
	{
		struct blob_source src[3] = {
			{ .name = head, .generation = head_gen },
			{ .name = g->state_obj, .generation = state_gen },
			{ .name = tail, .generation = 0 },
		};

		rc = blob_compose(g->store, g->bucket, name, src, 3, 0, &gen, err);
		/* The first history of this prefix: no tail yet. (Or state.json moved on: then
		 * the second try fails the same way.) */
		if (rc == VX_ENOTFOUND) {
			vx_err_release(err);
			if ((rc = history_tail_put(g, tail, err)) == 0)
				rc = blob_compose(g->store, g->bucket, name, src, 3, 0, &gen, err);
		}
		if (rc == VX_ECONFLICT) { /* it exists: its first writer made it */
			vx_err_release(err);
			rc = 0;
		}
	}
	{
		struct vx_err e2 = VX_ERR_INIT;

		/* A head left behind (this failed) is a few hundred bytes, never read. */
		if (blob_remove(g->store, g->bucket, head, head_gen ? head_gen : BLOB_ANY_GENERATION,
				&e2) < 0)
			vx_log(g->base.ctx, VX_LOG_DEBUG, "%s", e2.msg ? e2.msg : "");
		vx_err_release(&e2);
	}
done:
	free(text);
	free(tail);
	free(head);
	free(name);
	return rc;
}

/*
 * Keeps the state being replaced reachable, its writer may have died before
 * making its history: history/<serial> from state.json at gen, when missing.
 * Nothing to do when this backend made it (the previous write of an apply).
 */
static int history_keep(struct gcs_backend *g, const struct state *cur, int64_t gen,
			struct vx_err *err)
{
	int64_t gen_now = 0;
	char *name;
	int rc;

	if (g->history_serial == cur->serial)
		return 0;
	if (!(name = history_name(g, cur->serial)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = blob_stat(g->store, g->bucket, name, &gen_now, err);
	if (rc == VX_ENOTFOUND) {
		vx_err_release(err);
		rc = history_compose(g, cur->serial, cur->lineage, 0, NULL, gen, err);
	}
	free(name);
	return rc;
}

/*
 * Why the compare-and-swap of state.json failed: another serial, a lease
 * that is not ours (as check_write says), or a rewrite at the same serial.
 */
static int moved(struct gcs_backend *g, const struct state *st, struct vx_err *err)
{
	struct state cur = STATE_INIT;
	struct vx_err e2 = VX_ERR_INIT;
	int64_t gen = 0;
	int found = 0, rc = 0;

	if (read_state(g, &cur, &gen, &found, &e2) == 0 && found &&
	    lease_read(g, &cur.lock, &gen, &e2) == 0)
		rc = state_backend_check_write(&g->base, &cur, st, err);
	if (rc == 0)
		rc = vx_err_set(err, VX_ECONFLICT,
				"writing state: gs://%s/%s changed since it was read at serial %llu "
				"(another writer replaced it); plan again",
				g->bucket, g->state_obj, (unsigned long long)st->serial);
	vx_err_release(&e2);
	state_release(&cur);
	return rc;
}

/* Whether lock (lease.json as read) is the lease this backend holds. */
static int is_ours(const struct state_backend *b, const struct state_lock *lock)
{
	return b->held && lock && !strcmp(lock->id, b->held->id);
}

/*
 * state.json is absent and lease.json names our lease: someone deleted the
 * state under a running apply. Writing it back (created, so nobody else's
 * state is replaced) keeps what this apply did; giving up would lose the
 * record of jobs it already created, and the next apply would create them
 * again.
 */
static int gone_under_our_lease(struct gcs_backend *g)
{
	struct state_lock *lock = NULL;
	struct vx_err e = VX_ERR_INIT;
	char *text = NULL;
	size_t len = 0;
	int64_t gen = 0, lease_gen = 0;
	int found = 1, gone;

	gone = read_obj(g, g->state_obj, STATE_MAX_JSON, &text, &len, &gen, &found, &e) == 0 &&
	       !found && lease_read(g, &lock, &lease_gen, &e) == 0 && is_ours(&g->base, lock);
	state_lock_free(lock);
	vx_err_release(&e);
	free(text);
	return gone;
}

static void write_back_warning(struct gcs_backend *g, uint64_t serial)
{
	vx_log(g->base.ctx, VX_LOG_WARN,
	       "state.json was deleted: generation %lld is gone (gs://%s/%s, serial %llu); this "
	       "apply still holds the lease, so it writes the state back to keep what it did",
	       (long long)g->loaded_gen, g->bucket, g->state_obj, (unsigned long long)serial);
}

/*
 * The history of the serial just written (out, at state.json's generation
 * gen): only the winner of a serial gets here, so its message goes with it.
 * A failure leaves the history without the message, not the state
 * unwritten: it is a warning.
 */
static void history_written(struct gcs_backend *g, const struct state *out, int64_t now,
			    const char *message, int64_t gen)
{
	struct vx_err e2 = VX_ERR_INIT;

	if (history_compose(g, out->serial, out->lineage, now, message, gen, &e2) == 0)
		g->history_serial = out->serial;
	else
		vx_log(g->base.ctx, VX_LOG_WARN, "state serial %llu written, but not its history: %s",
		       (unsigned long long)out->serial, e2.msg ? e2.msg : "");
	vx_err_release(&e2);
}

static void texts_clear(struct gcs_backend *g)
{
	for (size_t i = 0; i < g->ntexts; i++) {
		free(g->texts[i].address);
		free(g->texts[i].text);
	}
	free(g->texts);
	vx_hashmap_release(&g->text_index);
	g->texts = NULL;
	g->ntexts = g->atexts = 0;
}

/* Keeps text (taken) as address's; returns it (borrowed), or NULL when out of memory (then freed). */
static const char *texts_put(struct gcs_backend *g, const char *address, char *text)
{
	struct rec_text *t;
	size_t i;

	if (vx_hashmap_get(&g->text_index, address, strlen(address), &i)) {
		free(g->texts[i].text);
		return g->texts[i].text = text;
	}
	if (VX_ALLOC_GROW(g->texts, g->ntexts + 1, g->atexts) < 0) {
		free(text);
		return NULL;
	}
	t = &g->texts[g->ntexts];
	/* The key is the entry's own copy of the address, which lives as long as it. */
	if (!(t->address = vx_strdup(address)) ||
	    vx_hashmap_add(&g->text_index, t->address, strlen(t->address), g->ntexts, NULL) < 0) {
		free(t->address);
		free(text);
		return NULL;
	}
	t->text = text;
	g->ntexts++;
	return text;
}

/* Record r's text for state.json into *out (borrowed from the cache): kept when r is unmarked (inc). */
static int record_text(struct gcs_backend *g, const struct state_record *r, int inc, const char **out,
		       struct vx_err *err)
{
	size_t i;
	int kept = inc && vx_hashmap_get(&g->text_index, r->address, strlen(r->address), &i);
	char *text = NULL;
	int rc;

	if (kept && !r->mark && !g->check_marks) {
		*out = g->texts[i].text;
		return 0;
	}
	if ((rc = state_record_to_doc_json(r, &text, err)) < 0)
		return rc;
	if (kept && !r->mark && strcmp(text, g->texts[i].text) != 0) {
		free(text);
		return vx_err_set(err, VX_EIO, "state: %s changed but was not marked changed, so a save "
					       "would lose it (a bug in vx)",
				  r->address);
	}
	if (!(*out = texts_put(g, r->address, text)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/*
 * Each record's text for state.json (*out, texts borrowed from the cache;
 * free the array): the records st has unmarked since this backend last
 * loaded or saved it are not printed again, so a save prints what changed.
 */
static int record_texts(struct gcs_backend *g, const struct state *st, const char ***out, struct vx_err *err)
{
	int inc = st->base == g && st->base_epoch == g->epoch, rc = 0;
	const char **texts = calloc(st->nrecords + 1, sizeof(*texts));

	*out = NULL;
	if (!texts)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!inc)
		texts_clear(g);
	for (size_t i = 0; i < st->nrecords && rc == 0; i++)
		rc = record_text(g, &st->records[i], inc, &texts[i], err);
	if (rc < 0)
		free(texts);
	else
		*out = texts;
	return rc;
}

/* state.json's text for hdr (the records' texts, record_texts's). */
static int state_text(const struct state *hdr, const char **texts, char **out, struct vx_err *err)
{
	return state_to_json_from(hdr, (char *const *)(uintptr_t)texts, out, err);
}

/*
 * Whether st is what state.json holds as this backend last loaded or
 * wrote it (so writing it is no write). As state_write's hash did before:
 * not when another's lease is live, which the write refuses.
 */
static int unchanged(struct gcs_backend *g, const struct state *st, const char **texts, struct vx_err *err)
{
	struct state hdr = *st; /* shallow: only printed */
	char *text = NULL;
	int same;

	if (!g->last_text || !st->serial || g->last_serial != st->serial ||
	    !(g->base.held || !st->lock || st->lock->expires_ms <= vx_now_ms(g->base.ctx)))
		return 0;
	hdr.lock = NULL;
	if (state_text(&hdr, texts, &text, err) < 0) {
		vx_err_release(err);
		return 0; /* then written, which says what is wrong */
	}
	same = !strcmp(text, g->last_text);
	free(text);
	return same;
}

/*
 * state.json is out (st at its next serial), written as *text (taken) at
 * generation gen: st takes that serial, and this backend remembers what
 * it holds (the generation, the text, every record as saved).
 */
static void written(struct gcs_backend *g, struct state *st, const struct state *out, char **text, int64_t gen,
		    int64_t now, const char *message)
{
	st->serial = out->serial;
	known(g, gen, st->serial, out->lineage);
	state_saved(st, g, ++g->epoch);
	history_written(g, out, now, message, gen);
	free(g->last_text);
	g->last_text = *text;
	g->last_serial = st->serial;
	*text = NULL;
}

/*
 * The stored state as this backend left it: st's serial and lineage at
 * generation loaded_gen, which it loaded or wrote itself. The write's
 * compare-and-swap on that generation proves it is still there, so it is
 * not downloaded and parsed again before each save (a state of 10,000
 * records is megabytes); a write that finds another generation reads it
 * then, to say why (moved). 1 with cur and *gen filled, 0: read it.
 */
static int known_state(struct gcs_backend *g, const struct state *st, struct state *cur, int64_t *gen)
{
	if (g->loaded_gen <= 0 || g->loaded_serial != st->serial || !g->loaded_lineage || !st->lineage ||
	    strcmp(g->loaded_lineage, st->lineage) != 0)
		return 0;
	cur->stack = vx_strdup(g->base.stack);
	cur->lineage = vx_strdup(g->loaded_lineage);
	if (!cur->stack || !cur->lineage) {
		state_release(cur);
		memset(cur, 0, sizeof(*cur));
		return 0;
	}
	cur->serial = st->serial;
	*gen = g->loaded_gen;
	return 1;
}

static int gcs_write(struct state_backend *b, struct state *st, const char *message,
		     struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	struct state cur = STATE_INIT, out;
	struct state_lock *lock = NULL;
	const char **texts = NULL;
	char *text = NULL;
	int64_t gen = 0, lease_gen = 0, new_gen = 0, now = vx_now_ms(b->ctx);
	int found = 0, rc;

	if ((rc = record_texts(g, st, &texts, err)) < 0)
		goto done;
	if (unchanged(g, st, texts, err)) {
		state_saved(st, g, ++g->epoch);
		goto done;
	}
	if (!(found = known_state(g, st, &cur, &gen)) && (rc = read_state(g, &cur, &gen, &found, err)) < 0)
		goto done;
	/* The lease object must still name us (checked by check_write). */
	if ((rc = lease_read(g, &lock, &lease_gen, err)) < 0)
		goto done;
	if (!found && lock) {
		cur.stack = vx_strdup(b->stack);
		cur.lineage = vx_strdup(st->lineage ? st->lineage : "");
		if (!cur.stack || !cur.lineage) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
	}
	cur.lock = lock;
	lock = NULL;
	/* Gone since we loaded or wrote it, while we hold the lease: deleted, not replaced. */
	if (!found && is_ours(b, cur.lock) && g->loaded_gen > 0 && g->loaded_serial == st->serial) {
		cur.serial = st->serial;
		write_back_warning(g, st->serial);
	}
	if ((rc = state_backend_check_write(b, found || cur.lock ? &cur : NULL, st, err)) < 0)
		goto done;
	/* Same serial, but not the object we loaded: rewritten behind our back. */
	if (found && g->loaded_gen >= 0 && g->loaded_serial == st->serial && gen != g->loaded_gen) {
		rc = vx_err_set(err, VX_ECONFLICT,
				"writing state: gs://%s/%s changed since it was read at serial %llu "
				"(another writer replaced it); plan again",
				g->bucket, g->state_obj, (unsigned long long)st->serial);
		goto done;
	}
	/* Keep the state being replaced reachable (its writer may have died before). */
	if (found && cur.serial > 0 && (rc = history_keep(g, &cur, gen, err)) < 0)
		goto done;
	out = *st;
	out.serial = st->serial + 1;
	out.lock = NULL; /* the lease lives in lease.json */
	if ((rc = state_text(&out, texts, &text, err)) < 0)
		goto done;
	rc = cas_write(g, g->state_obj, text, gen, &new_gen, err);
	/* Deleted between our read and our write: the same as above. */
	if (rc == VX_ECONFLICT && gen > 0 && gone_under_our_lease(g)) {
		vx_err_release(err);
		write_back_warning(g, st->serial);
		rc = cas_write(g, g->state_obj, text, 0, &new_gen, err);
	}
	if (rc == VX_ECONFLICT) {
		vx_err_release(err);
		rc = moved(g, st, err);
		goto done;
	}
	if (rc == 0)
		written(g, st, &out, &text, new_gen, now, message);
done:
	state_lock_free(lock);
	free(text);
	free(texts);
	state_release(&cur);
	return rc;
}

/* ---- history ---- */

/* One version: the state and its message and time (NULL / 0 when unknown). */
struct version {
	struct state st;
	char *message;
	int64_t time_ms;
};

static void version_release(struct version *v)
{
	state_release(&v->st);
	free(v->message);
	memset(v, 0, sizeof(*v));
}

/*
 * history/<serial> into *v; *found 0 when missing or not of lineage
 * (a state of that name made afresh reuses serials; NULL: any lineage).
 */
static int history_get(struct gcs_backend *g, uint64_t serial, const char *lineage,
		       struct version *v, int *found, struct vx_err *err)
{
	char *name = history_name(g, serial), *text = NULL, *inner = NULL;
	cJSON *root = NULL;
	const cJSON *it;
	size_t len = 0;
	int64_t gen = 0, n = 0;
	int rc;

	memset(v, 0, sizeof(*v));
	*found = 0;
	if (!name)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = read_obj(g, name, STATE_MAX_JSON, &text, &len, &gen, found, err);
	if (rc < 0 || !*found)
		goto done;
	*found = 0;
	root = vx_json_parse(text, len);
	it = cJSON_GetObjectItemCaseSensitive(root, "serial");
	if (!cJSON_IsObject(root) || vx_json_int(it, 1, INT64_MAX, &n) < 0 || (uint64_t)n != serial ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "state"))) {
		rc = vx_err_set(err, VX_EINVAL, "gs://%s/%s: not a history object of serial %llu",
				g->bucket, name, (unsigned long long)serial);
		goto done;
	}
	if (!vx_json_str(root, "lineage") || (lineage && strcmp(vx_json_str(root, "lineage"), lineage) != 0))
		goto done;
	if (!lineage)
		lineage = vx_json_str(root, "lineage");
	inner = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "state"));
	if (!inner) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_from_json(&v->st, inner, strlen(inner), err);
	if (rc == 0 && (v->st.serial != serial || strcmp(v->st.lineage, lineage) != 0 ||
			strcmp(v->st.stack, g->base.stack) != 0))
		rc = vx_err_set(err, VX_EINVAL, "its state is not serial %llu of this stack",
				(unsigned long long)serial);
	if (rc < 0) {
		vx_err_wrap(err, "gs://%s/%s", g->bucket, name);
		goto done;
	}
	state_lock_free(v->st.lock);
	v->st.lock = NULL;
	if (vx_json_str(root, "message") && !(v->message = vx_strdup(vx_json_str(root, "message")))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (vx_json_str(root, "time") && *vx_json_str(root, "time") &&
	    state_time_parse(vx_json_str(root, "time"), &v->time_ms) < 0)
		v->time_ms = 0;
	*found = 1;
done:
	if (rc < 0 || !*found)
		version_release(v);
	cJSON_Delete(root);
	free(inner);
	free(text);
	free(name);
	return rc;
}

/* Whether history/<serial> of lineage is there (one that is not valid counts as not). */
static int history_exists(struct gcs_backend *g, uint64_t serial, const char *lineage, int *found,
			  struct vx_err *err)
{
	struct version v;
	int rc = history_get(g, serial, lineage, &v, found, err);

	if (rc == VX_EINVAL) {
		vx_err_release(err);
		*found = 0;
		rc = 0;
	}
	if (rc == 0 && *found)
		version_release(&v);
	return rc;
}

/* Whether two records (either may be NULL) differ. -1: out of memory. */
static int record_differs(const struct state_record *a, const struct state_record *b)
{
	char *ta = NULL, *tb = NULL;
	struct vx_err e = VX_ERR_INIT;
	int d;

	if (!a || !b)
		return a != b;
	if (state_record_to_json(a, &ta, &e) < 0 || state_record_to_json(b, &tb, &e) < 0)
		d = -1;
	else
		d = strcmp(ta, tb) != 0;
	vx_err_release(&e);
	free(ta);
	free(tb);
	return d;
}

struct hist_out {
	struct state_history_entry *items;
	size_t n, cap, max;
};

static int hist_add(struct hist_out *h, const char *address, const struct version *v,
		    const struct state_record *r)
{
	struct state_history_entry *e;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct state_history_entry *p = realloc(h->items, cap * sizeof(*p));

		if (!p)
			return VX_ENOMEM;
		h->items = p;
		h->cap = cap;
	}
	e = &h->items[h->n];
	memset(e, 0, sizeof(*e));
	h->n++;
	e->time_ms = v->time_ms;
	if (!(e->address = vx_strdup(address)) ||
	    (v->message && !(e->message = vx_strdup(v->message))))
		return VX_ENOMEM;
	if (r) {
		if (!(e->record = calloc(1, sizeof(*e->record))))
			return VX_ENOMEM;
		if (state_record_copy(e->record, r) < 0) {
			free(e->record);
			e->record = NULL;
			return VX_ENOMEM;
		}
	}
	return 0;
}

/*
 * The entries of version v against the older one (NULL: nothing before):
 * every address whose record differs, in address order.
 */
static int hist_diff(struct hist_out *h, const char *address, const struct version *v,
		     const struct state *older)
{
	size_t i = 0, j = 0, nv = v->st.nrecords, no = older ? older->nrecords : 0;

	while ((i < nv || j < no) && (h->max == 0 || h->n < h->max)) {
		const struct state_record *a = i < nv ? &v->st.records[i] : NULL;
		const struct state_record *o = j < no ? &older->records[j] : NULL;
		int c = !a ? 1 : !o ? -1 : strcmp(a->address, o->address), d, rc;

		if (c > 0)
			a = NULL; /* removed in v */
		else if (c < 0)
			o = NULL; /* new in v */
		i += c <= 0;
		j += c >= 0;
		/* The loop runs while i < nv or j < no, so a or o is set (records exist when counted).
		 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		if (address && strcmp(address, a ? a->address : o->address) != 0)
			continue;
		d = record_differs(a, o);
		if (d < 0)
			return VX_ENOMEM;
		if (d && (rc = hist_add(h, a ? a->address : o->address, v, a)) < 0)
			return rc;
	}
	return 0;
}

/*
 * The older version than serial: history/<serial - 1>, or, when that one
 * is not a valid history object, the next older one, each bad one named
 * in skips (the history is append-only: one bad object must not end the
 * walk). *found 0 when there is none of this lineage.
 */
static int history_older(struct gcs_backend *g, uint64_t serial, const char *lineage,
			 struct version *older, int *found, struct state_history_skips *skips,
			 struct vx_err *err)
{
	char version[32];
	int rc = 0;

	*found = 0;
	while (serial-- > 1) {
		rc = history_get(g, serial, lineage, older, found, err);
		if (rc != VX_EINVAL)
			return rc;
		snprintf(version, sizeof(version), "serial %llu", (unsigned long long)serial);
		rc = state_history_skips_add(skips, version, vx_err_msg(err));
		vx_err_release(err);
		if (rc < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return 0;
}

static int gcs_history(struct state_backend *b, const char *address, size_t max,
		       struct state_history_entry **out, size_t *n,
		       struct state_history_skips *skips, struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	struct hist_out h = { NULL, 0, 0, max };
	struct version cur, older;
	int64_t gen = 0;
	int found = 0, rc;

	memset(&cur, 0, sizeof(cur));
	memset(&older, 0, sizeof(older));
	rc = read_state(g, &cur.st, &gen, &found, err);
	if (rc < 0 || !found)
		goto done;
	/* The current state's message is in its own history object. */
	if (cur.st.serial > 0) {
		rc = history_get(g, cur.st.serial, cur.st.lineage, &older, &found, err);
		if (rc == VX_EINVAL) {
			/* Only its message is lost: the version itself is state.json. */
			char version[32];

			snprintf(version, sizeof(version), "serial %llu",
				 (unsigned long long)cur.st.serial);
			rc = state_history_skips_add(skips, version, vx_err_msg(err));
			vx_err_release(err);
			if (rc < 0) {
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
				goto done;
			}
		}
		if (rc < 0)
			goto done;
		if (found) {
			cur.message = older.message;
			cur.time_ms = older.time_ms;
			older.message = NULL;
		}
		version_release(&older);
	}
	while (max == 0 || h.n < max) {
		rc = history_older(g, cur.st.serial, cur.st.lineage, &older, &found, skips, err);
		if (rc < 0)
			goto done;
		rc = hist_diff(&h, address, &cur, found ? &older.st : NULL);
		if (rc < 0) {
			vx_err_set(err, rc, "out of memory");
			goto done;
		}
		if (!found)
			break;
		version_release(&cur);
		cur = older;
		memset(&older, 0, sizeof(older));
	}
done:
	version_release(&cur);
	version_release(&older);
	if (rc < 0) {
		state_history_free(h.items, h.n);
		return rc;
	}
	*out = h.items;
	*n = h.n;
	return 0;
}

/*
 * A restore of serial `serial`, older than the newest history object
 * `newest`: the history objects after it belong to a line the state left,
 * and would pass for newer versions of it (a load would refuse the state as
 * moved back, and the next writes would find their serials taken). They
 * are moved, not deleted, to P/history/abandoned/N.json. A failure is
 * logged: the loads then refuse, which is safe, and say why.
 */
static void history_set_aside(struct gcs_backend *g, uint64_t serial, uint64_t newest)
{
	for (uint64_t s = serial + 1; s <= newest; s++) {
		struct vx_err e = VX_ERR_INIT;
		char *from = history_name(g, s);
		char *to = vx_asprintf("%s/history/abandoned/%010llu.json", g->prefix, (unsigned long long)s);
		struct blob_source src = { from, 0 };
		int rc = !from || !to ? vx_err_set(&e, VX_ENOMEM, "out of memory") : 0;

		if (rc == 0)
			rc = blob_compose(g->store, g->bucket, to, &src, 1, 0, NULL, &e);
		if (rc == 0 || rc == VX_ENOTFOUND) {
			vx_err_release(&e);
			rc = rc == 0 ? blob_remove(g->store, g->bucket, from, BLOB_ANY_GENERATION, &e) : 0;
		}
		if (rc < 0 && rc != VX_ENOTFOUND)
			vx_log(g->base.ctx, VX_LOG_WARN, "state restore: moving gs://%s/%s aside: %s",
			       g->bucket, from ? from : "history", vx_err_msg(&e));
		vx_err_release(&e);
		free(from);
		free(to);
	}
}

static int gcs_restore(struct state_backend *b, uint64_t serial, char **what,
		       struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	struct state cur = STATE_INIT;
	struct state_lock *lock = NULL;
	struct version v;
	char *name = NULL, *text = NULL;
	int64_t gen = 0, new_gen = 0;
	uint64_t newest = 0;
	int found = 0, rc;

	memset(&v, 0, sizeof(v));
	if ((rc = read_state(g, &cur, &gen, &found, err)) < 0)
		goto done;
	if (found) {
		rc = vx_err_set(err, VX_ECONFLICT, "state restore: gs://%s/%s exists (serial %llu); "
				"there is nothing to restore", g->bucket, g->state_obj,
				(unsigned long long)cur.serial);
		goto done;
	}
	if ((rc = newest_history(g, &newest, err)) < 0)
		goto done;
	if (!serial)
		serial = newest;
	if (!serial) {
		rc = vx_err_set(err, VX_ENOTFOUND, "state restore: gs://%s/%s/history/ holds no "
				"history object; there is nothing to restore from", g->bucket,
				g->prefix);
		goto done;
	}
	if (!(name = history_name(g, serial))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	/* A history object holds the whole state of its serial (history_head). */
	if ((rc = history_get(g, serial, NULL, &v, &found, err)) < 0)
		goto done;
	if (!found) {
		rc = vx_err_set(err, VX_ENOTFOUND, "state restore: gs://%s/%s does not exist",
				g->bucket, name);
		goto done;
	}
	if ((rc = lease_read(g, &lock, &gen, err)) < 0)
		goto done;
	if (!is_ours(b, lock)) {
		rc = vx_err_set(err, VX_ECONFLICT, "state restore: lock %s was lost", b->held->id);
		goto done;
	}
	if ((rc = state_to_json(&v.st, &text, err)) < 0)
		goto done;
	rc = cas_write(g, g->state_obj, text, 0, &new_gen, err);
	if (rc == VX_ECONFLICT)
		vx_err_wrap(err, "state restore: gs://%s/%s was created meanwhile", g->bucket,
			    g->state_obj);
	if (rc < 0)
		goto done;
	known(g, new_gen, v.st.serial, v.st.lineage);
	history_set_aside(g, serial, newest);
	if (!(*what = vx_asprintf("gs://%s/%s restored from gs://%s/%s: serial %llu, lineage %s, "
				  "%zu record%s", g->bucket, g->state_obj, g->bucket, name,
				  (unsigned long long)v.st.serial, v.st.lineage, v.st.nrecords,
				  v.st.nrecords == 1 ? "" : "s")))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	version_release(&v);
	state_lock_free(lock);
	state_release(&cur);
	free(name);
	free(text);
	return rc;
}

static int gcs_revision(struct state_backend *b, char **out, struct vx_err *err)
{
	struct gcs_backend *g = gb(b);
	int64_t gen = 0;
	int rc;

	rc = blob_stat(g->store, g->bucket, g->state_obj, &gen, err);
	if (rc == VX_ENOTFOUND) {
		vx_err_release(err);
		return 0;
	}
	if (rc == 0 && !(*out = vx_asprintf("gen:%" PRId64, gen)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	return rc;
}

static int gcs_config_commit(struct state_backend *b, char **out, struct vx_err *err)
{
	struct gcs_backend *g = gb(b);

	*out = NULL;
	return g->config ? state_config_commit(g->config, out, err) : 0;
}

static int gcs_config_changes(struct state_backend *b, const char *dir, char **out,
			      struct vx_err *err)
{
	struct gcs_backend *g = gb(b);

	*out = NULL;
	return g->config ? state_config_changes(g->config, dir, out, err) : 0;
}

static void gcs_free(struct state_backend *b)
{
	struct gcs_backend *g = gb(b);

	texts_clear(g);
	free(g->last_text);
	free(g->loaded_lineage);
	free(g->read_text);
	state_backend_free(g->config);
	blob_store_free(g->store);
	free(g->bucket);
	free(g->prefix);
	free(g->state_obj);
	free(g->lease_obj);
	free(g);
}

static const struct state_backend_ops gcs_ops = {
	.name = "gcs",
	.detects_noop = 1,
	.load = gcs_load,
	.write = gcs_write,
	.lock_read = gcs_lock_read,
	.lock_swap = gcs_lock_swap,
	.history = gcs_history,
	.list = state_backend_list_loaded,
	.revision = gcs_revision,
	.config_commit = gcs_config_commit,
	.config_changes = gcs_config_changes,
	.restore = gcs_restore,
	.free = gcs_free,
};

/* An object prefix: segments of printable ASCII, none empty, "." or "..". */
static int prefix_ok(const char *p)
{
	const char *s;

	if (!*p || strlen(p) > PATH_MAX_LEN || *p == '/' || p[strlen(p) - 1] == '/')
		return 0;
	for (s = p; *s; s++)
		if (*s <= ' ' || *s > '~' || *s == '#' || *s == '?' || *s == '[' || *s == ']' ||
		    *s == '*' || (*s == '/' && s[1] == '/'))
			return 0;
	for (s = p; s; s = strchr(s, '/')) {
		if (*s == '/')
			s++;
		if (!strncmp(s, ".", 1) && (s[1] == '/' || !s[1]))
			return 0;
		if (!strncmp(s, "..", 2) && (s[2] == '/' || !s[2]))
			return 0;
	}
	return 1;
}

int state_gcs_open(struct state_backend **out, const struct vx_ctx *ctx,
		   const struct state_gcs_opts *opts, struct vx_err *err)
{
	struct gcs_backend *g = NULL;
	int rc;

	*out = NULL;
	if (!opts->bucket || !*opts->bucket) {
		rc = vx_err_set(err, VX_EINVAL, "gcs state: no bucket given");
		goto fail;
	}
	if (!opts->store) {
		rc = vx_err_set(err, VX_EINVAL, "gcs state: no storage client");
		goto fail;
	}
	if (opts->path && !prefix_ok(opts->path)) {
		rc = vx_err_set(err, VX_EINVAL, "gcs state: path \"%.100s\" is not an object prefix "
				"(no leading or trailing '/', no empty, '.' or '..' segment, no "
				"spaces or wildcards)", opts->path);
		goto fail;
	}
	if (!(g = calloc(1, sizeof(*g)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = state_backend_init(&g->base, &gcs_ops, ctx, opts->stack, err)) < 0) {
		free(g);
		g = NULL;
		goto fail;
	}
	g->store = opts->store;
	g->config = opts->config;
	g->loaded_gen = -1;
	g->check_marks = vx_getenv(ctx, "VX_STATE_CHECK_MARKS") != NULL;
	g->bucket = vx_strdup(opts->bucket);
	g->prefix = opts->path ? vx_strdup(opts->path) : vx_asprintf("vx/state/%s", opts->stack);
	if (g->prefix) {
		g->state_obj = vx_asprintf("%s/state.json", g->prefix);
		g->lease_obj = vx_asprintf("%s/lease.json", g->prefix);
	}
	if (!g->bucket || !g->prefix || !g->state_obj || !g->lease_obj) {
		state_backend_free(&g->base);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	*out = &g->base;
	return 0;
fail:
	state_backend_free(opts->config);
	blob_store_free(opts->store);
	return rc;
}
