/* The backend-independent part of state storage: dispatch and the write check. */
#include "state/backend.h"

#include <stdlib.h>
#include <string.h>

#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/digest.h"
#include "util/banned.h"

void state_history_entry_release(struct state_history_entry *e)
{
	free(e->address);
	free(e->commit);
	free(e->message);
	if (e->record) {
		state_record_release(e->record);
		free(e->record);
	}
}

void state_history_free(struct state_history_entry *h, size_t n)
{
	if (!h)
		return;
	for (size_t i = 0; i < n; i++)
		state_history_entry_release(&h[i]);
	free(h);
}

void state_history_skips_release(struct state_history_skips *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->list[i].version);
		free(s->list[i].why);
	}
	free(s->list);
	s->list = NULL;
	s->n = 0;
}

int state_history_skips_add(struct state_history_skips *s, const char *version, const char *why)
{
	struct state_history_skip *grown, *last = s->n ? &s->list[s->n - 1] : NULL;
	char *more;

	if (last && !strcmp(last->version, version)) {
		if (!(more = vx_asprintf("%s; %s", last->why, why)))
			return VX_ENOMEM;
		free(last->why);
		last->why = more;
		return 0;
	}
	if (!(grown = realloc(s->list, (s->n + 1) * sizeof(*grown))))
		return VX_ENOMEM;
	s->list = grown;
	grown = &s->list[s->n];
	grown->version = vx_strdup(version);
	grown->why = vx_strdup(why);
	if (!grown->version || !grown->why) {
		free(grown->version);
		free(grown->why);
		return VX_ENOMEM;
	}
	s->n++;
	return 0;
}

/* How many skipped versions the warning names; the rest are counted. */
#define SKIPS_NAMED 3

char *state_history_skips_text(const struct state_history_skips *s)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc = vx_buf_printf(&b, "%zu state %s%s skipped (", s->n, s->noun, s->n == 1 ? "" : "s");

	for (size_t i = 0; rc == 0 && i < s->n && i < SKIPS_NAMED; i++)
		rc = vx_buf_printf(&b, "%s%s: %s", i ? "; " : "", s->list[i].version, s->list[i].why);
	if (rc == 0 && s->n > SKIPS_NAMED)
		rc = vx_buf_printf(&b, "; and %zu more", s->n - SKIPS_NAMED);
	if (rc == 0)
		rc = vx_buf_adds(&b, ")");
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

int state_backend_init(struct state_backend *b, const struct state_backend_ops *ops,
		       const struct vx_ctx *ctx, const char *stack, struct vx_err *err)
{
	struct state probe = STATE_INIT;
	int rc;

	memset(b, 0, sizeof(*b));
	/* state_new validates the name the same way the model does. */
	rc = state_new(&probe, stack, ctx, err);
	state_release(&probe);
	if (rc < 0)
		return rc;
	b->ops = ops;
	b->ctx = ctx;
	b->lease_ms = STATE_LOCK_LEASE_MS;
	b->stack = vx_strdup(stack);
	return b->stack ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

/*
 * What a state holds, as far as a write is concerned: the SHA-256 of its
 * JSON with the serial and the lock left out (the serial is the write's
 * own doing, and the lock lives elsewhere or is about to be dropped).
 */
static int content_hash(const struct state *st, char out[65], struct vx_err *err)
{
	struct state bare = *st; /* shallow: only printed */
	char *text = NULL;
	int rc;

	bare.serial = 0;
	bare.lock = NULL;
	rc = state_to_json(&bare, &text, err);
	if (rc == 0 && vx_digest_sha256_hex(out, text, strlen(text)) < 0)
		rc = vx_err_set(err, VX_EIO, "hashing the state");
	free(text);
	return rc;
}

int state_load(struct state_backend *b, struct state *out, struct vx_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	b->stored_serial = 0;
	rc = b->ops->load(b, out, err);
	/* A backend that tells a no-op write by itself needs no hash (and a
	 * plan of a large state does not pay for serialising it again). */
	if (b->ops->detects_noop)
		return rc;
	if (rc == 0 && out->serial > 0 && content_hash(out, b->stored_hash, err) == 0)
		b->stored_serial = out->serial;
	else if (rc == 0 && out->serial > 0)
		vx_err_release(err); /* no hash: the next write is simply made */
	return rc;
}

/* message (trailing blank lines dropped) and the trailers of state_write. */
static char *full_message(struct state_backend *b, const char *message, uint64_t serial,
			  struct vx_err *err)
{
	struct vx_buf m = VX_BUF_INIT;
	char *config = NULL, *out = NULL;
	size_t n = message ? strlen(message) : 0;

	while (n && (message[n - 1] == '\n' || message[n - 1] == ' ' || message[n - 1] == '\r'))
		n--;
	if (state_config_commit(b, &config, err) < 0)
		goto done;
	if ((n ? vx_buf_add(&m, message, n) : vx_buf_adds(&m, "vx: write state")) < 0 ||
	    vx_buf_adds(&m, "\n\n") < 0 ||
	    (config && vx_buf_printf(&m, "Vx-Config-Commit: %s\n", config) < 0) ||
	    (b->policy_commit && vx_buf_printf(&m, "Vx-Policy-Commit: %s\n", b->policy_commit) < 0) ||
	    (b->dirty_decl_hash &&
	     vx_buf_printf(&m, "Vx-Config-Dirty: true\nVx-Decl-Hash: %s\n", b->dirty_decl_hash) < 0) ||
	    (b->audit_actor && vx_buf_printf(&m, "Vx-Actor: %s\n", b->audit_actor) < 0) ||
	    (b->audit_pr_url && vx_buf_printf(&m, "Vx-Pull-Request: %s\n", b->audit_pr_url) < 0) ||
	    (b->audit_run_url && vx_buf_printf(&m, "Vx-CI-Run: %s\n", b->audit_run_url) < 0) ||
	    (b->audit_over_budget && vx_buf_printf(&m, "Vx-Allow-Over-Budget: %s\n", b->audit_over_budget) < 0) ||
	    vx_buf_printf(&m, "Vx-Serial: %llu\n", (unsigned long long)serial) < 0 ||
	    !(out = vx_buf_detach(&m)))
		vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	vx_buf_release(&m);
	free(config);
	return out;
}

int state_write(struct state_backend *b, struct state *st, const char *message,
		struct vx_err *err)
{
	char hash[65], *full = NULL;
	int64_t t0;
	int rc, hashed;

	t0 = vx_mono_ms(b->ctx);
	hashed = !b->ops->detects_noop && content_hash(st, hash, err) == 0;
	if (!hashed)
		vx_err_release(err);
	/* Unchanged; but a write by someone who does not hold the lease while
	 * another does is refused as before, by the backend's own check. */
	if (hashed && b->stored_serial && b->stored_serial == st->serial &&
	    !strcmp(hash, b->stored_hash) &&
	    (b->held || !st->lock || st->lock->expires_ms <= vx_now_ms(b->ctx)))
		return 0;
	full = full_message(b, message, st->serial + 1, err);
	if (!full)
		return err->code ? err->code : VX_ENOMEM;
	rc = b->ops->write(b, st, full, err);
	free(full);
	/* With -debug: how long each save took (the hash included), so the
	 * share of an apply spent writing state can be measured (make bench). */
	if (rc == 0)
		vx_log(b->ctx, VX_LOG_DEBUG, "state: wrote serial %llu (%zu records) in %lld ms",
		       (unsigned long long)st->serial, st->nrecords, (long long)(vx_mono_ms(b->ctx) - t0));
	b->stored_serial = 0;
	if (rc == 0 && hashed) {
		memcpy(b->stored_hash, hash, sizeof(hash));
		b->stored_serial = st->serial;
	}
	return rc;
}

int state_audit(struct state_backend *b, const char *actor, const char *pr_url,
		const char *run_url, struct vx_err *err)
{
	free(b->audit_actor);
	free(b->audit_pr_url);
	free(b->audit_run_url);
	b->audit_actor = vx_strdup(actor);
	b->audit_pr_url = vx_strdup(pr_url);
	b->audit_run_url = vx_strdup(run_url);
	if ((actor && !b->audit_actor) || (pr_url && !b->audit_pr_url) ||
	    (run_url && !b->audit_run_url))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

int state_policy_commit(struct state_backend *b, const char *commit, struct vx_err *err)
{
	free(b->policy_commit);
	b->policy_commit = vx_strdup(commit);
	return commit && !b->policy_commit ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

int state_audit_over_budget(struct state_backend *b, const char *what, struct vx_err *err)
{
	free(b->audit_over_budget);
	b->audit_over_budget = vx_strdup(what);
	if (what && !b->audit_over_budget)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

int state_history(struct state_backend *b, const char *address, size_t max,
		  struct state_history_entry **out, size_t *n,
		  struct state_history_skips *skips, struct vx_err *err)
{
	struct state_history_skips own = STATE_HISTORY_SKIPS_INIT;
	int rc;

	*out = NULL;
	*n = 0;
	if (!skips)
		skips = &own;
	state_history_skips_release(skips);
	skips->noun = "version";
	rc = address ? state_address_split(address, NULL, NULL, err) : 0;
	if (rc == 0)
		rc = b->ops->history(b, address, max, out, n, skips, err);
	state_history_skips_release(&own);
	return rc;
}

int state_list(struct state_backend *b, char ***out, size_t *n, struct vx_err *err)
{
	*out = NULL;
	*n = 0;
	return b->ops->list(b, out, n, err);
}

int state_revision(struct state_backend *b, char **out, struct vx_err *err)
{
	*out = NULL;
	return b->ops->revision(b, out, err);
}

int state_config_commit(struct state_backend *b, char **out, struct vx_err *err)
{
	*out = NULL;
	return b->ops->config_commit(b, out, err);
}

int state_config_changes(struct state_backend *b, const char *dir, char **out,
			 struct vx_err *err)
{
	*out = NULL;
	return b->ops->config_changes(b, dir, out, err);
}

int state_restore(struct state_backend *b, uint64_t serial, char **what, struct vx_err *err)
{
	*what = NULL;
	if (!b->ops->restore)
		return vx_err_set(err, VX_EINVAL, "state restore: the %s backend keeps no history "
				  "to restore from", b->ops->name);
	if (!b->held)
		return vx_err_set(err, VX_EINVAL, "state restore: the state lease is not held");
	b->stored_serial = 0;
	return b->ops->restore(b, serial, what, err);
}

int state_config_dirty(struct state_backend *b, const char *decl_hash, struct vx_err *err)
{
	free(b->dirty_decl_hash);
	b->dirty_decl_hash = vx_strdup(decl_hash);
	return b->dirty_decl_hash ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

void state_backend_free(struct state_backend *b)
{
	if (!b)
		return;
	free(b->dirty_decl_hash);
	b->dirty_decl_hash = NULL;
	free(b->audit_actor);
	free(b->audit_pr_url);
	free(b->audit_run_url);
	free(b->policy_commit);
	free(b->audit_over_budget);
	state_lock_free(b->held);
	b->held = NULL;
	free(b->stack);
	b->stack = NULL;
	b->ops->free(b);
}

int state_backend_check_write(struct state_backend *b, const struct state *cur,
			      const struct state *st, struct vx_err *err)
{
	const struct state_lock *lock = cur ? cur->lock : NULL;
	char *who = NULL;
	int rc = 0;

	if (!st->stack || strcmp(st->stack, b->stack) != 0)
		return vx_err_set(err, VX_EINVAL, "writing state: it is for stack \"%s\", not \"%s\"",
				  st->stack ? st->stack : "(none)", b->stack);
	if (!st->lineage)
		return vx_err_set(err, VX_EINVAL, "writing state: it has no lineage");
	if (!cur) {
		if (st->serial != 0)
			return vx_err_set(err, VX_ECONFLICT,
					  "writing state: the stored state is gone, but this write "
					  "was based on serial %llu; plan again",
					  (unsigned long long)st->serial);
		if (b->held)
			return vx_err_set(err, VX_ECONFLICT,
					  "writing state: lock %s was lost (the state is gone)",
					  b->held->id);
		return 0;
	}
	if (cur->serial != st->serial)
		return vx_err_set(err, VX_ECONFLICT,
				  "writing state: the state moved to serial %llu since it was read "
				  "at serial %llu (another apply wrote it); plan again",
				  (unsigned long long)cur->serial, (unsigned long long)st->serial);
	if (cur->serial > 0 && strcmp(cur->lineage, st->lineage) != 0)
		return vx_err_set(err, VX_ECONFLICT,
				  "writing state: lineage %s differs from the stored %s (a different "
				  "state with the same name); refusing to overwrite it",
				  st->lineage, cur->lineage);
	if (b->held) {
		if (!lock || strcmp(lock->id, b->held->id) != 0) {
			who = lock ? state_lock_describe(lock) : NULL;
			rc = vx_err_set(err, VX_ECONFLICT, "writing state: lock %s was lost: %s",
					b->held->id, who ? who : "the state is no longer locked");
		}
	} else if (lock && lock->expires_ms > vx_now_ms(b->ctx)) {
		who = state_lock_describe(lock);
		rc = vx_err_set(err, VX_ECONFLICT, "writing state: %s", who ? who : "locked");
	}
	free(who);
	return rc;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_backend_list_loaded(struct state_backend *b, char ***out, size_t *n,
			      struct vx_err *err)
{
	struct state st = STATE_INIT;
	size_t i;
	int rc;

	rc = b->ops->load(b, &st, err);
	if (rc < 0)
		return rc;
	if (st.nrecords && !(*out = calloc(st.nrecords, sizeof(**out)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (i = 0; i < st.nrecords; i++) {
		(*out)[i] = st.records[i].address;
		st.records[i].address = NULL;
		*n = i + 1;
	}
	/* A loaded state's records are sorted already: this only makes sure. */
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), str_cmp);
done:
	state_release(&st);
	return rc;
}
