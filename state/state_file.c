/* The file backend: see state_file.h. */
#include "state/state_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/file.h"
#include "util/banned.h"

struct file_backend {
	struct state_backend base; /* first */
	char *path;
	char *lock_path;
	char *serial_path;   /* FILE.serial: the newest "LINEAGE SERIAL" written here */
};

/* Reads path; *found = 0 when it does not exist. */
static int read_text(const char *path, size_t max, struct vx_buf *b, int *found,
		     struct vx_err *err)
{
	int rc;

	*found = 0;
	rc = vx_buf_read_file(b, path, max, err);
	if (rc == VX_ENOTFOUND) {
		vx_err_release(err);
		return 0;
	}
	if (rc == 0)
		*found = 1;
	return rc;
}

static int file_lock_read(struct state_backend *b, struct state_lock **out, struct vx_err *err)
{
	struct file_backend *f = (struct file_backend *)b;
	struct vx_buf text = VX_BUF_INIT;
	int found, rc;

	*out = NULL;
	rc = read_text(f->lock_path, 64 << 10, &text, &found, err);
	if (rc < 0 || !found)
		goto done;
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_lock_from_json(*out, vx_buf_str(&text), text.len, err);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		vx_err_wrap(err, "%s", f->lock_path);
	}
done:
	vx_buf_release(&text);
	return rc;
}

/* The stored state (with its lock), or *found = 0. */
static int read_state(struct file_backend *f, struct state *out, int *found, struct vx_err *err)
{
	struct vx_buf text = VX_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_text(f->path, STATE_MAX_JSON, &text, found, err);
	if (rc < 0 || !*found)
		goto done;
	rc = state_from_json(out, vx_buf_str(&text), text.len, err);
	if (rc == 0 && strcmp(out->stack, f->base.stack) != 0)
		rc = vx_err_set(err, VX_EINVAL, "it belongs to stack \"%s\", not \"%s\"", out->stack,
				f->base.stack);
	if (rc == 0) {
		state_lock_free(out->lock);
		out->lock = NULL;
		rc = file_lock_read(&f->base, &out->lock, err);
	}
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "reading state file %s", f->path);
	}
done:
	vx_buf_release(&text);
	return rc;
}

/*
 * The file went back: FILE.serial says a newer serial of the same lineage
 * was written (an older copy put over FILE). An older state forgets the
 * jobs vx started since and would start them again, so a load refuses. A
 * marker that is missing or not of this form compares with nothing.
 */
static int refuse_if_rewound(struct file_backend *f, const struct state *st, struct vx_err *err)
{
	struct vx_buf text = VX_BUF_INIT;
	struct vx_err ignored = VX_ERR_INIT;
	char lineage[64];
	unsigned long long serial;
	int found = 0, rc = 0;

	if (read_text(f->serial_path, 256, &text, &found, &ignored) < 0 || !found ||
	    sscanf(vx_buf_str(&text), "%63s %llu", lineage, &serial) != 2 || !st->lineage ||
	    strcmp(lineage, st->lineage) != 0 || serial <= st->serial)
		goto done;
	rc = vx_err_set(err, VX_ECONFLICT,
			"state file %s went back: it holds serial %llu, but %s says serial %llu of the same "
			"state was written; an older state forgets the jobs vx started since, and would "
			"start them again. Put the newer file back (to keep the older state anyway, delete %s)",
			f->path, (unsigned long long)st->serial, f->serial_path, serial, f->serial_path);
done:
	vx_err_release(&ignored);
	vx_buf_release(&text);
	return rc;
}

static int file_load(struct state_backend *b, struct state *out, struct vx_err *err)
{
	struct file_backend *f = (struct file_backend *)b;
	int found, rc;

	rc = read_state(f, out, &found, err);
	if (rc == 0 && !found)
		rc = state_new(out, b->stack, b->ctx, err);
	else if (rc == 0 && (rc = refuse_if_rewound(f, out, err)) < 0)
		state_release(out);
	return rc;
}

static int file_write(struct state_backend *b, struct state *st, const char *message,
		      struct vx_err *err)
{
	struct file_backend *f = (struct file_backend *)b;
	struct state cur = STATE_INIT, out;
	char *text = NULL;
	int found, rc;

	(void)message; /* a file has no place for it; the git backend keeps it */
	if ((rc = read_state(f, &cur, &found, err)) < 0)
		goto done;
	if (!found) {
		/* No state yet, but maybe a lock (taken before the first write). */
		if ((rc = file_lock_read(b, &cur.lock, err)) < 0)
			goto done;
		if (cur.lock) {
			cur.stack = vx_strdup(b->stack);
			cur.lineage = vx_strdup(st->lineage ? st->lineage : "");
			if (!cur.stack || !cur.lineage) {
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
				goto done;
			}
			found = 1;
		}
	}
	if ((rc = state_backend_check_write(b, found ? &cur : NULL, st, err)) < 0)
		goto done;
	out = *st;
	out.serial = st->serial + 1;
	out.lock = NULL; /* the lock lives in FILE.lock */
	if ((rc = state_to_json(&out, &text, err)) < 0 ||
	    (rc = vx_file_put(f->path, text, strlen(text), 0, err)) < 0)
		goto done;
	st->serial = out.serial;
	/* After the state: a crash between the two leaves the marker behind,
	 * never ahead. Losing it loses the check, not the state. */
	free(text);
	if (!(text = vx_asprintf("%s %llu\n", out.lineage, (unsigned long long)out.serial)) ||
	    vx_file_put(f->serial_path, text, strlen(text), 0, err) < 0) {
		vx_log(b->ctx, VX_LOG_WARN, "state serial %llu written, but not %s: %s",
		       (unsigned long long)out.serial, f->serial_path, text ? vx_err_msg(err) : "out of memory");
		vx_err_release(err);
	}
done:
	free(text);
	state_release(&cur);
	return rc;
}

static int file_lock_swap(struct state_backend *b, const char *expect_id,
			  const struct state_lock *next, const char *message, struct vx_err *err)
{
	struct file_backend *f = (struct file_backend *)b;
	struct state_lock *cur = NULL;
	char *text = NULL;
	int rc = 0;

	(void)message;
	if (next && (rc = state_lock_to_json(next, &text, err)) < 0)
		goto done;
	if (!expect_id) {
		if (!next)
			goto done;
		rc = vx_file_put(f->lock_path, text, strlen(text), 1, err);
		goto done;
	}
	if ((rc = file_lock_read(b, &cur, err)) < 0)
		goto done;
	if (!cur || strcmp(cur->id, expect_id) != 0) {
		rc = vx_err_set(err, VX_ECONFLICT, "the state lock changed meanwhile");
		goto done;
	}
	if (next)
		rc = vx_file_put(f->lock_path, text, strlen(text), 0, err);
	else if (unlink(f->lock_path) < 0)
		rc = vx_err_set(err, errno == ENOENT ? VX_ECONFLICT : VX_EIO, "%s: %s", f->lock_path,
				strerror(errno));
done:
	state_lock_free(cur);
	free(text);
	return rc;
}

/* No history beyond the stored state: one entry per record (address NULL: every record). */
static int file_history(struct state_backend *b, const char *address, size_t max,
			struct state_history_entry **out, size_t *n,
			struct state_history_skips *skips, struct vx_err *err)
{
	struct state st = STATE_INIT;
	size_t i, cnt = 0;
	int rc;

	(void)skips; /* one version, which load has checked whole */
	rc = file_load(b, &st, err);
	if (rc < 0)
		return rc;
	*out = calloc(st.nrecords + 1, sizeof(**out));
	if (!*out) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (i = 0; i < st.nrecords && (max == 0 || cnt < max); i++) {
		struct state_history_entry *e = &(*out)[cnt];
		struct state_record *r = &st.records[i];

		if (address && strcmp(r->address, address) != 0)
			continue;
		e->address = vx_strdup(r->address);
		e->record = calloc(1, sizeof(*r));
		*n = ++cnt;
		if (!e->address || !e->record) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		/* Moved out of st: the record is not copied. */
		*e->record = *r;
		memset(r, 0, sizeof(*r));
	}
done:
	if (rc < 0) {
		state_history_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	state_release(&st);
	return rc;
}

static int file_revision(struct state_backend *b, char **out, struct vx_err *err)
{
	struct file_backend *f = (struct file_backend *)b;
	struct state st = STATE_INIT;
	int found, rc;

	rc = read_state(f, &st, &found, err);
	if (rc == 0 && found) {
		*out = vx_asprintf("serial %llu", (unsigned long long)st.serial);
		if (!*out)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	state_release(&st);
	return rc;
}

static int file_config_commit(struct state_backend *b, char **out, struct vx_err *err)
{
	(void)b;
	(void)err;
	*out = NULL;
	return 0;
}

static int file_config_changes(struct state_backend *b, const char *dir, char **out,
			       struct vx_err *err)
{
	(void)b;
	(void)dir;
	(void)err;
	*out = NULL;
	return 0;
}

static void file_free(struct state_backend *b)
{
	struct file_backend *f = (struct file_backend *)b;

	free(f->path);
	free(f->lock_path);
	free(f->serial_path);
	free(f);
}

static const struct state_backend_ops file_ops = {
	.name = "file",
	.load = file_load,
	.write = file_write,
	.lock_read = file_lock_read,
	.lock_swap = file_lock_swap,
	.history = file_history,
	.list = state_backend_list_loaded,
	.revision = file_revision,
	.config_commit = file_config_commit,
	.config_changes = file_config_changes,
	.free = file_free,
};

int state_file_open(struct state_backend **out, const struct vx_ctx *ctx,
		    const struct state_file_opts *opts, struct vx_err *err)
{
	struct file_backend *f;
	int rc;

	*out = NULL;
	if (!opts->path || !*opts->path)
		return vx_err_set(err, VX_EINVAL, "file state: no path given");
	/* Checked here, not at the first write, so the error names the state
	 * file's directory rather than a temporary file in it. */
	{
		const char *slash = strrchr(opts->path, '/');
		char *dir = slash ? vx_asprintf("%.*s", slash == opts->path ? 1 : (int)(slash - opts->path),
						opts->path)
				  : vx_strdup(".");
		struct stat sb;

		if (!dir)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		rc = 0;
		if (stat(dir, &sb) != 0)
			rc = errno == ENOENT || errno == ENOTDIR
				     ? vx_err_set(err, VX_ENOTFOUND, "the directory %s does not exist", dir)
				     : vx_err_set(err, VX_EIO, "the directory %s: %s", dir, strerror(errno));
		else if (!S_ISDIR(sb.st_mode))
			rc = vx_err_set(err, VX_ENOTFOUND, "%s is not a directory", dir);
		free(dir);
		if (rc < 0)
			return rc;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = state_backend_init(&f->base, &file_ops, ctx, opts->stack, err);
	if (rc < 0) {
		free(f);
		return rc;
	}
	f->path = vx_strdup(opts->path);
	f->lock_path = vx_asprintf("%s.lock", opts->path);
	f->serial_path = vx_asprintf("%s.serial", opts->path);
	if (!f->path || !f->lock_path || !f->serial_path) {
		free(f->base.stack);
		free(f->path);
		free(f->lock_path);
		free(f);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	*out = &f->base;
	return 0;
}
