/* The backend-independent part of state storage: dispatch and the write check. */
#include "state/backend.h"

#include <stdlib.h>
#include <string.h>

#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

void state_history_free(struct state_history_entry *h, size_t n)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < n; i++) {
		free(h[i].address);
		free(h[i].commit);
		free(h[i].message);
		if (h[i].record) {
			state_record_release(h[i].record);
			free(h[i].record);
		}
	}
	free(h);
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

int state_load(struct state_backend *b, struct state *out, struct vx_err *err)
{
	memset(out, 0, sizeof(*out));
	return b->ops->load(b, out, err);
}

int state_write(struct state_backend *b, struct state *st, const char *message,
		struct vx_err *err)
{
	int64_t t0 = vx_mono_ms(b->ctx);
	int rc = b->ops->write(b, st, message, err);

	/* With -debug: how long each save took, so the share of an apply spent
	 * writing state can be measured (make bench). */
	if (rc == 0)
		vx_log(b->ctx, VX_LOG_DEBUG, "state: wrote serial %llu (%zu records) in %lld ms",
		       (unsigned long long)st->serial, st->nrecords, (long long)(vx_mono_ms(b->ctx) - t0));
	return rc;
}

int state_history(struct state_backend *b, const char *address, size_t max,
		  struct state_history_entry **out, size_t *n, struct vx_err *err)
{
	int rc;

	*out = NULL;
	*n = 0;
	rc = address ? state_address_split(address, NULL, NULL, err) : 0;
	if (rc < 0)
		return rc;
	return b->ops->history(b, address, max, out, n, err);
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
