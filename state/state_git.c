/*
 * The git backend: see state_git.h. Every libgit2 object is created and
 * freed here; libgit2's errors become vx_err messages at this boundary.
 */
#include "state/state_git.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>

#include "state/backend.h"
#include "state/git_reflock.h"
#include "state/git_url.h"
#include "state/lock.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/digest.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/text.h"
#include "util/ctx.h"
#include "util/testhook.h"
#include "util/banned.h"

#define DEFAULT_NAME "vx"
#define DEFAULT_EMAIL "vx@localhost"

struct state_git {
	struct state_backend base; /* first: the backend pointer is this struct */
	git_repository *repo;
	char *branch;   /* vx/state/<stack> */
	char *ref;      /* refs/heads/<branch> */
	char *remote;   /* NULL: local only */
	char *url;      /* state.remote as a URL or path (absolute); NULL when it names a remote */
	char *tracking; /* refs/remotes/<remote>/<branch> (a URL's: refs/vx/remotes/url-<hash>/heads/<branch>) */
	char *lease_ref;      /* refs/vx/lease/<stack>: the lease, off the state's history */
	char *lease_tracking; /* refs/vx/remotes/<remote>/lease/<stack> */
	int ref_paused;	      /* the ref-update test pause has stopped this backend (util/testhook.h) */
	/*
	 * What a save need not redo: the count of this backend's loads and
	 * saves, and the tree its latest left. A state whose base (state.h) is
	 * this backend at that count, saved on that tree, has every unmarked
	 * record as the tip holds it: only the marked are written.
	 */
	uint64_t epoch;
	git_oid base_tree; /* the tip's tree then; zero: none */
	int check_marks;   /* VX_STATE_CHECK_MARKS: an unmarked record that changed is an error */
	struct vx_json_scratch *scratch; /* a load's, while it reads the records: reset after each */
};

/* A ref vx keeps in step with the remote: its name, tracking ref and what to call it. */
struct gref {
	const char *ref;
	const char *tracking;
	const char *name;
};

static int gerr(struct vx_err *err, int code, const char *what)
{
	const git_error *e = git_error_last();
	int rc = vx_err_set(err, code, "%s: %s", what,
			    e && e->message ? e->message : "unknown libgit2 error");

	/* A remote's URL may hold a token (docs/gitops.md); libgit2 quotes URLs. */
	if (err && err->msg)
		vx_text_redact_userinfo(err->msg);
	return rc;
}

static void oid_hex(const git_oid *id, char out[GIT_OID_HEXSZ + 1])
{
	git_oid_tostr(out, GIT_OID_HEXSZ + 1, id);
}

/* ---- remote ------------------------------------------------------------- */

/*
 * A writer holds a ref's lock file (refs/heads/X.lock) for milliseconds, so
 * vx waits up to REF_LOCK_WAIT_MS for one. It removes one only when proved
 * abandoned (state/git_reflock.h: left by a vx process that died while
 * writing), or when older than REF_LOCK_ABANDONED_MS: a git command or a vx
 * on another host that left it is not known to be dead, and a paused writer
 * resumes and renames its lock file into place (docs/leases.md).
 */
#define REF_LOCK_WAIT_MS 10000
#define REF_LOCK_POLL_MS 100
#define REF_LOCK_MAX_TRIES (REF_LOCK_WAIT_MS / REF_LOCK_POLL_MS)
#define REF_LOCK_ABANDONED_MS (10 * 60 * 1000)

struct remote_cb {
	int cred_tries;
	char *rejected; /* the first ref update the remote refused, with its reason */
};

static int cred_cb(git_credential **out, const char *url, const char *user_from_url,
		   unsigned int allowed, void *payload)
{
	struct remote_cb *cb = payload;

	(void)url;
	/* One try with the ssh agent; afterwards let libgit2 fail with its message. */
	if ((allowed & GIT_CREDENTIAL_SSH_KEY) && cb->cred_tries++ == 0)
		return git_credential_ssh_key_from_agent(out, user_from_url ? user_from_url : "git");
	return GIT_PASSTHROUGH;
}

static int push_ref_cb(const char *refname, const char *status, void *payload)
{
	struct remote_cb *cb = payload;

	if (status && !cb->rejected)
		cb->rejected = vx_asprintf("%s: %s", refname, status);
	return 0;
}

int git_url_is_local(const char *url)
{
	const char *slash = strchr(url, '/'), *colon = strchr(url, ':');

	return !strncmp(url, "file://", 7) || (!strstr(url, "://") && (!colon || (slash && slash < colon)));
}

/* url made absolute when it is a relative path: see git_url.h. */
static char *resolve_url(git_repository *repo, const char *url)
{
	const char *base = git_repository_workdir(repo);
	size_t n;

	if (!base)
		base = git_repository_path(repo);
	n = base ? strlen(base) : 0;
	if (url[0] != '/' && strncmp(url, "file://", 7) && git_url_is_local(url) && n)
		return vx_asprintf("%s%s%s", base, base[n - 1] == '/' ? "" : "/", url);
	return vx_strdup(url);
}

char *git_url_of_remote(git_repository *repo, const char *remote)
{
	git_config *cfg = NULL;
	const char *url = NULL;
	char *key = vx_asprintf("remote.%s.url", remote), *out = NULL;

	if (key && git_repository_config_snapshot(&cfg, repo) == 0 &&
	    git_config_get_string(&url, cfg, key) == 0 && url && *url)
		out = resolve_url(repo, url);
	git_error_clear();
	git_config_free(cfg);
	free(key);
	return out;
}

/* The URL vx fetches from and pushes to: state.remote itself when it is a
 * URL or a path, else its remote's. The caller frees it; NULL: none. */
static char *state_remote_url(struct state_git *g)
{
	return g->url ? vx_strdup(g->url) : git_url_of_remote(g->repo, g->remote);
}

/*
 * The remote's names: state.remote names a remote of the repository
 * ("origin"), or is itself a URL or a path (relative to the repository's top
 * directory, as git reads a remote's URL) when no remote has that name and it
 * looks like one. A URL's tracking refs go under refs/vx/remotes/url-HASH/,
 * HASH from the URL: it is no name git knows, and may hold a token.
 */
static int remote_names(struct state_git *g, const char *remote, const char *stack, struct vx_err *err)
{
	char *named = git_url_of_remote(g->repo, remote);
	char hex[VX_SHA256_HEX_LEN + 1];

	g->remote = vx_strdup(remote);
	if (!g->remote)
		goto oom;
	if (!named && (strchr(remote, '/') || strchr(remote, ':'))) {
		if (!(g->url = resolve_url(g->repo, remote)) ||
		    vx_digest_sha256_hex(hex, g->url, strlen(g->url)) < 0)
			goto oom;
		g->tracking = vx_asprintf("refs/vx/remotes/url-%.16s/heads/%s", hex, g->branch);
		g->lease_tracking = vx_asprintf("refs/vx/remotes/url-%.16s/lease/%s", hex, stack);
	} else {
		g->tracking = vx_asprintf("refs/remotes/%s/%s", remote, g->branch);
		g->lease_tracking = vx_asprintf("refs/vx/remotes/%s/lease/%s", remote, stack);
	}
	free(named);
	if (g->tracking && g->lease_tracking)
		return 0;
	return vx_err_set(err, VX_ENOMEM, "out of memory");
oom:
	free(named);
	return vx_err_set(err, VX_ENOMEM, "out of memory");
}

/*
 * The remote by its configured URL. An anonymous remote (rather than
 * git_remote_lookup) keeps to our explicit refspecs, and avoids a leak in
 * libgit2 1.5's regex-based config lookup.
 */
static int open_remote(struct state_git *g, git_remote **out, struct vx_err *err)
{
	char *url = state_remote_url(g);
	int rc = 0;

	*out = NULL;
	if (!url)
		return vx_err_set(err, VX_EINVAL, "remote \"%s\": no remote.%s.url in the repository's config",
				  g->remote, g->remote);
	if (git_remote_create_anonymous(out, g->repo, url) < 0)
		rc = gerr(err, VX_EINVAL, url);
	free(url);
	return rc;
}

/*
 * Opens the remote and makes specs the one refspec "<force>src:dst" (force
 * "+" or ""), allocated in *spec (the caller frees it and *remote, also on error).
 */
static int remote_spec(struct state_git *g, const char *force, const char *src, const char *dst,
		       git_remote **remote, char **spec, git_strarray *specs, struct vx_err *err)
{
	int rc;

	*spec = vx_asprintf("%s%s:%s", force, src, dst);
	if (!*spec) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = open_remote(g, remote, err)) < 0)
		goto done;
	specs->strings = spec;
	specs->count = 1;
done:
	return rc;
}

/* Pushes the local ref src to the remote's dst without force. VX_ECONFLICT when the remote refused it. */
static int push_ref_to(struct state_git *g, const struct gref *r, const char *src, const char *dst,
		       struct vx_err *err)
{
	git_remote *remote = NULL;
	git_push_options po;
	struct remote_cb cb = { 0, NULL };
	char *spec = NULL;
	git_strarray specs;
	int rc = 0, grc;

	if ((rc = remote_spec(g, "", src, dst, &remote, &spec, &specs, err)) < 0)
		goto done;
	if (git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION) < 0) {
		rc = gerr(err, VX_EIO, "pushing the state");
		goto done;
	}
	po.callbacks.credentials = cred_cb;
	po.callbacks.push_update_reference = push_ref_cb;
	po.callbacks.payload = &cb;
	grc = git_remote_push(remote, &specs, &po);
	if (grc == GIT_ENONFASTFORWARD) {
		rc = vx_err_set(err, VX_ECONFLICT,
				"pushing %s to %s was refused: someone else moved it first (%s)",
				r->name, g->remote,
				git_error_last() ? git_error_last()->message : "not a fast-forward");
	} else if (grc < 0) {
		rc = gerr(err, VX_EIO, "pushing the state");
		vx_err_wrap(err, "%s to %s", r->name, g->remote);
	} else if (cb.rejected) {
		rc = vx_err_set(err, VX_ECONFLICT, "pushing %s to %s was refused: %s", r->name,
				g->remote, cb.rejected);
	}
done:
	free(cb.rejected);
	free(spec);
	git_remote_free(remote);
	return rc;
}

/* Pushes r's local ref without force. */
static int push_ref(struct state_git *g, const struct gref *r, struct vx_err *err)
{
	return push_ref_to(g, r, r->ref, r->ref, err);
}

/*
 * Whether a libgit2 failure was a lock file another process holds (a ref's
 * "X.lock"): held for milliseconds, so worth waiting for. Fetch and the
 * local transport do not always pass GIT_ELOCKED up, only its message.
 */
static int lock_busy(int grc)
{
	const git_error *e = git_error_last();

	return grc == GIT_ELOCKED ||
	       (e && e->message && (strstr(e->message, "failed to lock file") ||
				    strstr(e->message, "failed to create locked file")));
}

/*
 * The remote's directory when it is on this machine (a path, or a file://
 * URL), as a string the caller frees; NULL for a network remote (or on
 * error: then the push reports it). libgit2 pushes to such a remote by
 * overwriting its ref with force once its own fast-forward check passed
 * (transports/local.c), so two pushes racing both "win": for those the
 * compare-and-swap is made in the remote repository itself. A network
 * remote's receive-pack compares the old id under the ref's lock.
 */
static char *local_remote_dir(struct state_git *g)
{
	char *url = state_remote_url(g), *out = NULL;

	if (url && !strncmp(url, "file://", 7))
		out = vx_strdup(url + 7);
	else if (url && git_url_is_local(url))
		return url;
	free(url);
	return out;
}

/* The remote on this machine: the objects go over by a push to a private
 * ref, then dst moves from *expect (NULL: absent) to id under its lock. */
static int push_local(struct state_git *g, const struct gref *r, const char *dir, const char *tmp,
		      const git_oid *id, const git_oid *expect, struct vx_err *err)
{
	git_repository *remote = NULL;
	git_oid zero;
	int rc, grc;

	memset(&zero, 0, sizeof(zero));
	if ((rc = push_ref_to(g, r, tmp, tmp, err)) < 0)
		return rc;
	if (git_repository_open_bare(&remote, dir) < 0) {
		rc = gerr(err, VX_EIO, "pushing the state");
		return vx_err_wrap(err, "%s to %s", r->name, g->remote);
	}
	for (int tries = 0;
	     (grc = git_reference_create_matching(NULL, remote, r->ref, id, 1, expect ? expect : &zero,
						  "vx: push")) < 0 && lock_busy(grc) && tries < REF_LOCK_MAX_TRIES;
	     tries++)
		vx_sleep_ms(g->base.ctx, REF_LOCK_POLL_MS);
	if (grc == GIT_EMODIFIED || grc == GIT_EEXISTS)
		rc = vx_err_set(err, VX_ECONFLICT, "pushing %s to %s was refused: someone else moved it first",
				r->name, g->remote);
	else if (grc < 0) {
		rc = gerr(err, VX_EIO, "pushing the state");
		vx_err_wrap(err, "%s to %s", r->name, g->remote);
	}
	if (git_reference_remove(remote, tmp) < 0)
		git_error_clear();
	git_repository_free(remote);
	return rc;
}

/* ---- updating a ref ------------------------------------------------------ */


static int64_t mtime_ms(const struct stat *sb)
{
	return (int64_t)sb->st_mtim.tv_sec * 1000 + sb->st_mtim.tv_nsec / 1000000;
}

/* Whether a lock file age_ms old may be removed as abandoned, saying so. */
static int lock_abandoned(const struct vx_ctx *ctx, const char *lock, int64_t age)
{
	if (age < REF_LOCK_ABANDONED_MS)
		return 0;
	vx_log(ctx, VX_LOG_WARN, "removing %s: a lock file left %.0f min ago by a git or vx "
	       "process that did not finish writing", lock, (double)age / 60000.0);
	return 1;
}

/* The lock file a vx that died mid-update left (git_reflock_left_by_dead), removed. */
static void remove_dead_lock(struct state_git *g, const struct git_reflock *wl)
{
	const char *ref, *who;
	char *lock;

	if (!git_reflock_left_by_dead(wl, &ref, &who) ||
	    !(lock = vx_asprintf("%s%s.lock", git_repository_commondir(g->repo), ref)))
		return;
	if (unlink(lock) == 0)
		vx_log(g->base.ctx, VX_LOG_WARN, "removing %s: left by %s, which ended before it finished",
		       lock, who);
	free(lock);
}

/*
 * Points ref name at id: only if it is at *expect, or only if it does not
 * exist when expect is NULL. Returns libgit2's code (GIT_EMODIFIED when the
 * ref is elsewhere, or exists when it must not), GIT_ELOCKED (with
 * libgit2's error message saying who holds what) when the ref stayed locked
 * for REF_LOCK_WAIT_MS. Runs under the repository's vx writer lock
 * (state/git_reflock.h); removes a lock file only when a dead vx left it
 * (remove_dead_lock) or lock_abandoned allows, never because a live writer
 * took its time.
 */
static int ref_update(struct state_git *g, git_reference **out, const char *name,
		      const git_oid *id, const git_oid *expect, const char *log_message)
{
	const struct vx_ctx *ctx = g->base.ctx;
	struct git_reflock wl = GIT_REFLOCK_INIT;
	git_oid zero;
	char *lock = NULL, *msg = NULL;
	int64_t waited = 0;
	int grc = 0, tries;

	memset(&zero, 0, sizeof(zero));
	if (git_reflock_take(&wl, ctx, git_repository_commondir(g->repo), name, REF_LOCK_WAIT_MS,
			     &waited) < 0) {
		git_error_set_str(GIT_ERROR_REFERENCE, wl.busy ? wl.busy : "out of memory");
		grc = GIT_ELOCKED;
		goto done;
	}
	remove_dead_lock(g, &wl);
	/* A test hook (util/testhook.h): stop as a suspended laptop would,
	 * holding this ref update, until a SIGCONT; once. */
	if (!g->ref_paused)
		g->ref_paused = vx_test_hook(ctx, "ref-update");
	for (tries = 0; tries < REF_LOCK_MAX_TRIES + 2; tries++) {
		struct stat sb;

		/*
		 * Always compared under the ref's lock: "must not exist" is the
		 * zero id, which libgit2 matches only when the ref is absent.
		 * (git_reference_create without force checks that before taking
		 * the lock, so two processes creating the ref at once both won:
		 * two applies held a new stack's lease at once. make torture.)
		 */
		grc = git_reference_create_matching(out, g->repo, name, id, 1, expect ? expect : &zero,
						    log_message);
		if (grc != GIT_ELOCKED)
			break;
		if (!lock && !(lock = vx_asprintf("%s%s.lock", git_repository_commondir(g->repo), name)))
			break;
		if (stat(lock, &sb) != 0)
			continue; /* released meanwhile */
		if (lock_abandoned(ctx, lock, vx_now_ms(ctx) - mtime_ms(&sb))) {
			if (unlink(lock) != 0 && errno != ENOENT)
				break;
			continue;
		}
		if (waited >= REF_LOCK_WAIT_MS)
			break;
		vx_sleep_ms(ctx, REF_LOCK_POLL_MS);
		waited += REF_LOCK_POLL_MS;
	}
	if (grc == GIT_ELOCKED && lock &&
	    (msg = vx_asprintf("%s is still held after %lld s: a git or vx process is writing that "
			       "ref, perhaps paused, or one ended while writing it; if no git or vx "
			       "process is at work on this repository, remove that file",
			       lock, (long long)(waited / 1000))))
		git_error_set_str(GIT_ERROR_REFERENCE, msg);
done:
	git_reflock_release(&wl);
	free(msg);
	free(lock);
	return grc;
}

static int read_ref(struct state_git *g, const char *name, git_oid *id, int *exists,
		    struct vx_err *err)
{
	int grc = git_reference_name_to_id(id, g->repo, name);

	*exists = grc == 0;
	if (grc == 0 || grc == GIT_ENOTFOUND)
		return 0;
	return gerr(err, VX_EIO, name);
}

/* 1 when ref name exists and is at id (an error reads as no). */
static int ref_is(struct state_git *g, const char *name, const git_oid *id)
{
	git_oid cur;
	int exists = 0;
	struct vx_err e = VX_ERR_INIT;
	int same = read_ref(g, name, &cur, &exists, &e) == 0 && exists && git_oid_equal(&cur, id);

	vx_err_release(&e);
	return same;
}

/*
 * Fetches the branch and brings the local one up to date: created or
 * fast-forwarded from the remote's, pushed if only the local one moved
 * (an earlier push did not happen), refused if they diverged.
 */
static int sync_ref(struct state_git *g, const struct gref *r, struct vx_err *err)
{
	git_remote *remote = NULL;
	git_fetch_options fo;
	struct remote_cb cb = { 0, NULL };
	git_reference *ref = NULL;
	git_oid local, theirs;
	int has_local, has_theirs, rc = 0, grc;
	char *spec = NULL, a[GIT_OID_HEXSZ + 1], b[GIT_OID_HEXSZ + 1];
	git_strarray specs;

	if (!g->remote)
		return 0;
	if ((rc = remote_spec(g, "+", r->ref, r->tracking, &remote, &spec, &specs, err)) < 0)
		goto done;
	if (git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION) < 0) {
		rc = gerr(err, VX_EIO, "fetching the state");
		goto done;
	}
	fo.callbacks.credentials = cred_cb;
	fo.callbacks.payload = &cb;
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.update_fetchhead = 0;
	/* Two vx in one clone fetch into the same tracking ref: a lock file held
	 * by the other is waited for (a fetch holds it for milliseconds). */
	for (int tries = 0; (grc = git_remote_fetch(remote, &specs, &fo, NULL)) < 0 && lock_busy(grc) &&
			    tries < REF_LOCK_MAX_TRIES; tries++)
		vx_sleep_ms(g->base.ctx, REF_LOCK_POLL_MS);
	if (grc < 0) {
		rc = gerr(err, VX_EIO, "fetching the state");
		vx_err_wrap(err, "%s from %s", r->name, g->remote);
		goto done;
	}
	if ((rc = read_ref(g, r->tracking, &theirs, &has_theirs, err)) < 0 ||
	    (rc = read_ref(g, r->ref, &local, &has_local, err)) < 0)
		goto done;
	if (!has_theirs || (has_local && git_oid_equal(&local, &theirs)))
		goto done;
	/* Another vx in this repository may make the same update at the same
	 * time: losing that race to the same result is no conflict. */
	if (!has_local) {
		if (ref_update(g, &ref, r->ref, &theirs, NULL, "vx: state from remote") < 0 &&
		    !ref_is(g, r->ref, &theirs))
			rc = gerr(err, VX_ECONFLICT, "creating the local state branch");
		goto done;
	}
	if (git_graph_descendant_of(g->repo, &theirs, &local) == 1) {
		if (ref_update(g, &ref, r->ref, &theirs, &local, "vx: fast-forward state from remote") < 0 &&
		    !ref_is(g, r->ref, &theirs))
			rc = gerr(err, VX_ECONFLICT, "fast-forwarding the state branch");
		goto done;
	}
	if (git_graph_descendant_of(g->repo, &local, &theirs) == 1) {
		vx_log(g->base.ctx, VX_LOG_WARN, "%s is ahead of %s: pushing it",
		       r->name, g->remote);
		rc = push_ref(g, r, err);
		goto done;
	}
	oid_hex(&local, a);
	oid_hex(&theirs, b);
	rc = vx_err_set(err, VX_ECONFLICT,
			"%s (at %.12s) and %s/%s (at %.12s) have diverged; vx will not "
			"choose between them: inspect both and reset one by hand",
			r->name, a, g->remote, r->name, b);
done:
	git_reference_free(ref);
	git_remote_free(remote);
	free(spec);
	return rc;
}

static struct gref state_gref(const struct state_git *g)
{
	struct gref r = { g->ref, g->tracking, NULL };

	r.name = g->branch;
	return r;
}

static struct gref lease_gref(const struct state_git *g)
{
	struct gref r = { g->lease_ref, g->lease_tracking, g->lease_ref };

	return r;
}

static int sync_remote(struct state_git *g, struct vx_err *err)
{
	struct gref r = state_gref(g);

	return sync_ref(g, &r, err);
}

/* ---- reading ------------------------------------------------------------ */

/* Reads blob id (named path in messages) into *out, NUL-terminated, at most max bytes. */
static int read_blob_id(struct state_git *g, const git_oid *id, const char *path, size_t max,
			char **out, size_t *len, struct vx_err *err)
{
	git_blob *blob = NULL;
	int rc = 0;
	size_t n;

	*out = NULL;
	*len = 0;
	if (git_blob_lookup(&blob, g->repo, id) < 0) {
		rc = gerr(err, VX_EIO, path);
		goto done;
	}
	n = (size_t)git_blob_rawsize(blob);
	if (n > max) {
		rc = vx_err_set(err, VX_EINVAL, "%s: %zu bytes is over the limit of %zu", path, n, max);
		goto done;
	}
	*out = malloc(n + 1);
	if (!*out) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	memcpy(*out, git_blob_rawcontent(blob), n);
	(*out)[n] = '\0';
	*len = n;
done:
	git_blob_free(blob);
	return rc;
}

/* Reads the blob at path of tree; *found = 0 when absent. */
static int read_blob(struct state_git *g, const git_tree *tree, const char *path,
		     size_t max, char **out, size_t *len, int *found, struct vx_err *err)
{
	git_tree_entry *e = NULL;
	int rc = 0, grc;

	*out = NULL;
	*len = 0;
	*found = 0;
	grc = git_tree_entry_bypath(&e, tree, path);
	if (grc == GIT_ENOTFOUND)
		goto done;
	if (grc < 0) {
		rc = gerr(err, VX_EIO, path);
		goto done;
	}
	if (git_tree_entry_type(e) != GIT_OBJECT_BLOB) {
		rc = vx_err_set(err, VX_EINVAL, "%s: not a file", path);
		goto done;
	}
	rc = read_blob_id(g, git_tree_entry_id(e), path, max, out, len, err);
	*found = rc == 0;
done:
	git_tree_entry_free(e);
	return rc;
}

static int tip_tree(struct state_git *g, const git_oid *tip, git_commit **commit,
		    git_tree **tree, struct vx_err *err)
{
	char hex[GIT_OID_HEXSZ + 1];

	*commit = NULL;
	*tree = NULL;
	if (git_commit_lookup(commit, g->repo, tip) < 0 || git_commit_tree(tree, *commit) < 0) {
		oid_hex(tip, hex);
		return gerr(err, VX_EIO, hex);
	}
	return 0;
}

/* stack.json of tree into *hdr (no records). */
static int read_header(struct state_git *g, const git_tree *tree, struct state *hdr,
		       struct vx_err *err)
{
	char *text = NULL;
	size_t len;
	int found, rc;

	memset(hdr, 0, sizeof(*hdr));
	rc = read_blob(g, tree, "stack.json", STATE_MAX_FILE, &text, &len, &found, err);
	if (rc == 0 && !found)
		rc = vx_err_set(err, VX_EINVAL, "it has no stack.json");
	if (rc == 0)
		rc = state_header_from_json(hdr, text, len, err);
	if (rc == 0 && strcmp(hdr->stack, g->base.stack) != 0)
		rc = vx_err_set(err, VX_EINVAL, "it belongs to stack \"%s\", not \"%s\"", hdr->stack,
				g->base.stack);
	if (rc < 0) {
		state_release(hdr);
		vx_err_wrap(err, "reading stack.json of state branch %s", g->branch);
	}
	free(text);
	return rc;
}

static int record_cmp(const void *a, const void *b)
{
	return strcmp(((const struct state_record *)a)->address,
		      ((const struct state_record *)b)->address);
}

/* The length of the address prefix of a folder's records: "job" of "jobs" (state.h's rule). */
static int prefix_len(const char *dir)
{
	return (int)strlen(dir) - 1;
}

/*
 * A folder of records is flat (dir/NAME.json) or, past FAN_AT records,
 * fanned out: dir/BB/NAME.json, BB the bucket of NAME (fan_bucket), so a
 * save rewrites the few small trees on the paths of the records it
 * changed rather than one tree of every record (docs/state.md, "The git
 * layout"). A fanned folder goes back to flat only at FAN_KEEP records or
 * fewer, so one record more or less at the line does not rewrite it all.
 */
#define FAN_AT 256
#define FAN_KEEP 128

/* The bucket of the record NAME (n bytes): the top byte of its 64-bit FNV-1a, as two lowercase hex digits. */
static void fan_bucket(const char *name, size_t n, char out[3])
{
	snprintf(out, 3, "%02x", (unsigned)(vx_fnv1a64(name, n) >> 56));
}

/* Whether name is a bucket's: two lowercase hex digits. */
static int is_bucket(const char *name)
{
	return strlen(name) == 2 && strspn(name, "0123456789abcdef") == 2;
}

/*
 * Whether the folder tree t is fanned out: its entries are buckets (trees),
 * not files. An empty or absent folder is flat.
 */
static int is_fanned(const git_tree *t)
{
	return t && git_tree_entrycount(t) > 0 &&
	       git_tree_entry_type(git_tree_entry_byindex(t, 0)) == GIT_OBJECT_TREE;
}

/*
 * One record file of folder dir (bucket sub of it, or NULL when flat), the
 * entry ent, into st->records[st->nrecords] (which has room): NAME.json
 * must be a file holding the record whose address is "<dir's prefix>.NAME",
 * in NAME's bucket.
 */
static int read_record(struct state_git *g, const git_tree_entry *ent, const char *dir, const char *sub,
		       struct state *st, struct vx_err *err)
{
	const char *name = git_tree_entry_name(ent);
	size_t nname = strlen(name), len;
	char *text = NULL, *path = NULL, *want = NULL, bucket[3];
	int rc;

	path = sub ? vx_asprintf("%s/%s/%s", dir, sub, name) : vx_asprintf("%s/%s", dir, name);
	if (!path)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (nname < 6 || strcmp(name + nname - 5, ".json") != 0) {
		rc = vx_err_set(err, VX_EINVAL, "%s: not a NAME.json file", path);
		goto done;
	}
	want = vx_asprintf("%.*s.%.*s", prefix_len(dir), dir, (int)(nname - 5), name);
	if (!want) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	/*
	 * From the entry in hand: a lookup by path from the root would
	 * read the whole folder's tree again for every record (libgit2
	 * does not cache trees this large), which made loading quadratic.
	 */
	if (git_tree_entry_type(ent) != GIT_OBJECT_BLOB) {
		rc = vx_err_set(err, VX_EINVAL, "%s: not a file", path);
		goto done;
	}
	/* A record out of its bucket would be missed by a save, which looks only there. */
	if (sub)
		fan_bucket(name, nname - 5, bucket);
	if (sub && strcmp(sub, bucket) != 0) {
		rc = vx_err_set(err, VX_EINVAL, "%s: in the wrong folder (its place is %s/%s/)", path, dir, bucket);
		goto done;
	}
	rc = read_blob_id(g, git_tree_entry_id(ent), path, STATE_MAX_FILE, &text, &len, err);
	if (rc < 0)
		goto done;
	rc = state_record_from_json(&st->records[st->nrecords], text, len, err);
	if (g->scratch)
		vx_json_scratch_reset(g->scratch);
	if (rc < 0) {
		vx_err_wrap(err, "%s", path);
		goto done;
	}
	st->nrecords++;
	if (strcmp(st->records[st->nrecords - 1].address, want) != 0)
		rc = vx_err_set(err, VX_EINVAL, "%s: holds %s, expected %s", path,
				st->records[st->nrecords - 1].address, want);
done:
	free(text);
	free(path);
	free(want);
	return rc;
}

/*
 * The record folders of a state tree: each top-level tree whose name is a
 * prefix and an "s" (state.h), whatever kind it holds, so a kind this vx
 * does not know is read and written back like the others. stack.json and
 * anything else not so named is no folder. Sorted by name.
 */
struct dir {
	char name[STATE_DIR_SIZE];
	git_tree *tree;
};

struct dirset {
	struct dir *d;
	size_t n;
};

static void dirset_release(struct dirset *s)
{
	for (size_t i = 0; i < s->n; i++)
		git_tree_free(s->d[i].tree);
	free(s->d);
	s->d = NULL;
	s->n = 0;
}

static int dir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dir *)a)->name, ((const struct dir *)b)->name);
}

/* The folder named name in s, or NULL. */
static git_tree *dirset_find(const struct dirset *s, const char *name)
{
	struct dir key = { "", NULL }, *hit;

	if (!s->n || strlen(name) >= sizeof(key.name))
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	hit = bsearch(&key, s->d, s->n, sizeof(*s->d), dir_cmp);
	return hit ? hit->tree : NULL;
}

/* The record folders of root (NULL: none) into *out; a folder's name on a file is refused. */
static int dirset_read(struct state_git *g, const git_tree *root, struct dirset *out,
		       struct vx_err *err)
{
	size_t n = root ? git_tree_entrycount(root) : 0;
	int rc = 0;

	out->d = NULL;
	out->n = 0;
	if (n && !(out->d = calloc(n, sizeof(*out->d))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(root, i);
		const char *name = git_tree_entry_name(e);
		struct dir *d = &out->d[out->n];

		if (!state_dir_prefix(name))
			continue;
		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			rc = vx_err_set(err, VX_EINVAL, "%s: not a directory", name);
		else if (git_tree_lookup(&d->tree, g->repo, git_tree_entry_id(e)) < 0)
			rc = gerr(err, VX_EIO, name);
		else {
			snprintf(d->name, sizeof(d->name), "%s", name);
			out->n++;
		}
	}
	if (rc < 0)
		dirset_release(out);
	else if (out->n > 1)
		qsort(out->d, out->n, sizeof(*out->d), dir_cmp);
	return rc;
}

/* Room in st for cnt more records. */
static int records_room(struct state *st, size_t cnt, struct vx_err *err)
{
	struct state_record *grown;

	if (st->nrecords + cnt > STATE_MAX_RECORDS)
		return vx_err_set(err, VX_EINVAL, "more than %d records", STATE_MAX_RECORDS);
	grown = realloc(st->records, (st->nrecords + cnt + 1) * sizeof(*grown));
	if (!grown)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	st->records = grown;
	return 0;
}

/* Appends every record of the tree t (folder dir, bucket sub or NULL) to st. */
static int read_leaf(struct state_git *g, const git_tree *t, const char *dir, const char *sub,
		     struct state *st, struct vx_err *err)
{
	size_t cnt = git_tree_entrycount(t);
	int rc = records_room(st, cnt, err);

	for (size_t i = 0; rc == 0 && i < cnt; i++)
		rc = read_record(g, git_tree_entry_byindex(t, i), dir, sub, st, err);
	return rc;
}

/* Appends every record of the folder d to st, flat or fanned out (every entry a bucket). */
static int read_dir(struct state_git *g, const struct dir *d, struct state *st, struct vx_err *err)
{
	size_t cnt = git_tree_entrycount(d->tree);
	int rc = 0;

	if (!is_fanned(d->tree))
		return read_leaf(g, d->tree, d->name, NULL, st, err);
	for (size_t i = 0; rc == 0 && i < cnt; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(d->tree, i);
		const char *name = git_tree_entry_name(e);
		git_tree *sub = NULL;

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE || !is_bucket(name))
			rc = vx_err_set(err, VX_EINVAL, "%s/%s: a fanned-out folder holds only its buckets "
							"(00/ to ff/)",
					d->name, name);
		else if (git_tree_lookup(&sub, g->repo, git_tree_entry_id(e)) < 0)
			rc = gerr(err, VX_EIO, name);
		else
			rc = read_leaf(g, sub, d->name, name, st, err);
		git_tree_free(sub);
	}
	return rc;
}

/* Reads every record of tree, of every folder, into st, sorted by address. */
static int read_records(struct state_git *g, const git_tree *tree, struct state *st,
			struct vx_err *err)
{
	struct vx_json_scratch scratch;
	struct dirset dirs;
	int rc = dirset_read(g, tree, &dirs, err);

	/* Each record's cJSON tree in one arena, dropped whole after it is read. */
	vx_json_scratch_begin(&scratch);
	g->scratch = &scratch;
	for (size_t d = 0; rc == 0 && d < dirs.n; d++)
		rc = read_dir(g, &dirs.d[d], st, err);
	g->scratch = NULL;
	vx_json_scratch_end(&scratch);
	dirset_release(&dirs);
	if (rc == 0 && st->nrecords > 1)
		qsort(st->records, st->nrecords, sizeof(*st->records), record_cmp);
	return rc;
}

static int lease_read_ref(struct state_git *g, git_oid *tip, int *exists, struct state_lock **out,
			  struct vx_err *err);

/*
 * The branch is absent: a first run, or a branch deleted while its history
 * is still reachable, by the remote-tracking ref (the remote's branch was
 * deleted; our last fetch kept it) or by the branch's own reflog (the ref
 * went without git's help, which would have removed the reflog too): the
 * newest commit either names that still exists. *where (owned) says which.
 * Returns 1 when found, 0 when not, or an error.
 */
static int lost_tip(struct state_git *g, git_oid *tip, char **where, struct vx_err *err)
{
	git_reflog *log = NULL;
	git_commit *c = NULL;
	int exists = 0, found = 0, rc;

	*where = NULL;
	if (g->tracking && (rc = read_ref(g, g->tracking, tip, &exists, err)) < 0)
		return rc;
	if (exists && git_commit_lookup(&c, g->repo, tip) == 0) {
		*where = vx_strdup(g->tracking);
		found = 1;
	}
	if (!found && git_reflog_read(&log, g->repo, g->ref) == 0) {
		for (size_t i = 0; !found && i < git_reflog_entrycount(log); i++) {
			const git_oid *id = git_reflog_entry_id_new(git_reflog_entry_byindex(log, i));

			if (!id || git_oid_is_zero(id) || git_commit_lookup(&c, g->repo, id) < 0)
				continue;
			git_oid_cpy(tip, id);
			*where = vx_asprintf("the reflog of %s", g->ref);
			found = 1;
		}
	}
	git_reflog_free(log);
	git_commit_free(c);
	if (found && !*where)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return found;
}

/* The serial of the state at commit id, or 0 when it cannot be read. */
static uint64_t serial_at(struct state_git *g, const git_oid *id)
{
	git_commit *c = NULL;
	git_tree *t = NULL;
	struct state hdr = STATE_INIT;
	struct vx_err e = VX_ERR_INIT;
	uint64_t serial = 0;

	if (tip_tree(g, id, &c, &t, &e) == 0 && read_header(g, t, &hdr, &e) == 0)
		serial = hdr.serial;
	state_release(&hdr);
	vx_err_release(&e);
	git_tree_free(t);
	git_commit_free(c);
	return serial;
}

/* The branch is absent: VX_ENOTFOUND when its history is still there (see lost_tip). */
static int refuse_if_lost(struct state_git *g, struct vx_err *err)
{
	git_oid tip;
	char *where = NULL, hex[GIT_OID_HEXSZ + 1];
	int rc = lost_tip(g, &tip, &where, err);

	if (rc <= 0)
		return rc;
	oid_hex(&tip, hex);
	rc = vx_err_set(err, VX_ENOTFOUND,
			"state branch %s does not exist, but its history does: %s names commit %s "
			"(serial %llu), so the branch was deleted; starting a new state would create "
			"every job again. Restore it with: vx state restore (or by hand: git branch %s %s)",
			g->branch, where, hex, (unsigned long long)serial_at(g, &tip), g->branch, hex);
	free(where);
	return rc;
}

/*
 * The branch moved back: the newest entry of its reflog, the move to tip,
 * came from a commit of the same lineage at a higher serial (`git
 * update-ref` or `git branch -f` to an older commit). A state moved back
 * forgets what vx started since and would start it again, so a load
 * refuses, as it does for a deleted branch (refuse_if_lost). Nothing to
 * compare without a reflog, or when the ref moved since without one (a
 * fresh clone; docs/state.md says so); vx's own writes only move forward.
 */
static int refuse_if_rewound(struct state_git *g, const git_oid *tip, const struct state *st,
			     struct vx_err *err)
{
	git_reflog *log = NULL;
	const git_reflog_entry *e;
	const git_oid *was;
	git_commit *c = NULL;
	git_tree *t = NULL;
	struct state hdr = STATE_INIT;
	struct vx_err ignored = VX_ERR_INIT;
	char now_hex[GIT_OID_HEXSZ + 1], was_hex[GIT_OID_HEXSZ + 1];
	int rc = 0;

	if (git_reflog_read(&log, g->repo, g->ref) < 0 || git_reflog_entrycount(log) == 0)
		goto done;
	e = git_reflog_entry_byindex(log, 0);
	was = git_reflog_entry_id_old(e);
	if (!git_oid_equal(git_reflog_entry_id_new(e), tip) || !was || git_oid_is_zero(was) ||
	    tip_tree(g, was, &c, &t, &ignored) < 0 || read_header(g, t, &hdr, &ignored) < 0 ||
	    !hdr.lineage || !st->lineage || strcmp(hdr.lineage, st->lineage) != 0 ||
	    hdr.serial <= st->serial)
		goto done;
	oid_hex(tip, now_hex);
	oid_hex(was, was_hex);
	rc = vx_err_set(err, VX_ECONFLICT,
			"state branch %s went back: it is at commit %.12s (serial %llu), but its reflog "
			"says it was at commit %.12s (serial %llu) before; an older state forgets the jobs "
			"vx started since, and would start them again. Put it back with: git update-ref "
			"%s %s %s (to keep the older state anyway, drop that reflog entry: git reflog "
			"delete %s@{0})",
			g->branch, now_hex, (unsigned long long)st->serial, was_hex,
			(unsigned long long)hdr.serial, g->ref, was_hex, now_hex, g->ref);
done:
	vx_err_release(&ignored);
	state_release(&hdr);
	git_tree_free(t);
	git_commit_free(c);
	git_reflog_free(log);
	return rc;
}

static int state_git_load(struct state_backend *b, struct state *out, struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	struct state_lock *lease = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid tip, lease_tip;
	int exists, lease_exists, rc;
	char hex[GIT_OID_HEXSZ + 1];

	if ((rc = sync_remote(g, err)) < 0 || (rc = read_ref(g, g->ref, &tip, &exists, err)) < 0)
		goto done;
	if (!exists) {
		if ((rc = refuse_if_lost(g, err)) == 0)
			rc = state_new(out, b->stack, b->ctx, err);
	} else if ((rc = tip_tree(g, &tip, &commit, &tree, err)) == 0 &&
		   (rc = read_header(g, tree, out, err)) == 0 &&
		   (rc = read_records(g, tree, out, err)) < 0) {
		oid_hex(&tip, hex);
		vx_err_wrap(err, "reading state branch %s at %.12s", g->branch, hex);
	} else if (rc == 0) {
		rc = refuse_if_rewound(g, &tip, out, err);
	}
	/* The lease as the local lease ref has it (informational, as documented);
	 * without one, the old-style lock stack.json may hold. */
	if (rc < 0 || (rc = lease_read_ref(g, &lease_tip, &lease_exists, &lease, err)) < 0)
		goto done;
	if (lease_exists) {
		state_lock_free(out->lock);
		out->lock = lease;
		lease = NULL;
	}
	/* Where the lease lives is this backend's business: written with each
	 * commit, not carried in memory. */
	free(out->lease_ref);
	out->lease_ref = NULL;
	/* Every record as that tree holds it. */
	memset(&g->base_tree, 0, sizeof(g->base_tree));
	if (tree)
		git_oid_cpy(&g->base_tree, git_tree_id(tree));
	state_saved(out, g, ++g->epoch);
done:
	if (rc < 0)
		state_release(out);
	state_lock_free(lease);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

/* ---- writing ------------------------------------------------------------ */

static int insert_blob(struct state_git *g, git_treebuilder *tb, const char *name,
		       const char *text, struct vx_err *err)
{
	git_oid id;

	if (git_blob_create_from_buffer(&id, g->repo, text, strlen(text)) < 0 ||
	    git_treebuilder_insert(NULL, tb, name, &id, GIT_FILEMODE_BLOB) < 0)
		return gerr(err, VX_EIO, name);
	return 0;
}

/*
 * Puts record r into tb as file (NAME.json) unless old's blob already holds
 * its bytes. *changed = 1 when written.
 */
static int put_record(struct state_git *g, git_treebuilder *tb, const git_tree *old,
		      const struct state_record *r, const char *file, int *changed, struct vx_err *err)
{
	const git_tree_entry *e = old ? git_tree_entry_byname(old, file) : NULL;
	int same_mode = e && git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB;
	char *text = NULL;
	git_oid id;
	size_t tlen;
	int rc;

	if ((rc = state_record_to_json(r, &text, err)) < 0)
		return rc;
	tlen = strlen(text);
	if (git_odb_hash(&id, text, tlen, GIT_OBJECT_BLOB) < 0) {
		rc = gerr(err, VX_EIO, file);
	} else if (same_mode && git_oid_equal(git_tree_entry_id(e), &id)) {
		/* As stored. */
	} else if (git_blob_create_from_buffer(&id, g->repo, text, tlen) < 0 ||
		   git_treebuilder_insert(NULL, tb, file, &id, GIT_FILEMODE_BLOB) < 0) {
		rc = gerr(err, VX_EIO, file);
	} else {
		*changed = 1;
	}
	free(text);
	return rc;
}

/*
 * VX_STATE_CHECK_MARKS (the tests set it): a record a save skips because it
 * is not marked must hold the bytes stored. One that does not was changed
 * without its mark, which a save would lose: an error naming it.
 */
static int check_unmarked(const git_tree *old, const struct state_record *r, const char *file,
			  struct vx_err *err)
{
	const git_tree_entry *e = old ? git_tree_entry_byname(old, file) : NULL;
	char *text = NULL;
	git_oid id;
	int rc;

	if ((rc = state_record_to_json(r, &text, err)) < 0)
		return rc;
	if (git_odb_hash(&id, text, strlen(text), GIT_OBJECT_BLOB) < 0)
		rc = gerr(err, VX_EIO, file);
	else if (!e || !git_oid_equal(git_tree_entry_id(e), &id))
		rc = vx_err_set(err, VX_EIO, "state: %s changed but was not marked changed, so a save would "
					     "lose it (a bug in vx)",
				r->address);
	free(text);
	return rc;
}

/* A record a save looks at, and its bucket when its folder is fanned out. */
struct folder_rec {
	const struct state_record *r;
	char bucket[3];
};

/* The records of one folder a save looks at, and how. */
struct folder_save {
	struct state_git *g;
	const struct state *st;
	const char *dir;	 /* "jobs" */
	size_t nprefix;		 /* 3: "job" */
	int whole;		 /* every record, else only the marked ones (the rest are as stored) */
	struct folder_rec *recs; /* the folder's records looked at, in order */
	size_t n;
};

/* Removes from tb what old holds and st does not (a removed record, or no record at all). */
static int prune_leaf(const struct folder_save *fs, git_treebuilder *tb, const git_tree *old, int *changed,
		      struct vx_err *err)
{
	size_t n = old ? git_tree_entrycount(old) : 0;
	char *address = NULL;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *name = git_tree_entry_name(git_tree_entry_byindex(old, i));
		size_t len = strlen(name);
		int keep = 0;

		if (len > 5 && strcmp(name + len - 5, ".json") == 0) {
			free(address);
			address = vx_asprintf("%.*s.%.*s", (int)fs->nprefix, fs->dir, (int)(len - 5), name);
			if (!address) {
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
				break;
			}
			keep = state_find(fs->st, address) != NULL;
		}
		if (!keep) {
			if (git_treebuilder_remove(tb, name) < 0)
				rc = gerr(err, VX_EIO, name);
			*changed = 1;
		}
	}
	free(address);
	return rc;
}

/*
 * One tree of record files (a flat folder, or one bucket): old (NULL: none)
 * with recs[from..to) put in (when whole, also without what st no longer
 * has). An unchanged tree keeps old's id. *empty = 1 (and *out untouched)
 * when it holds no record.
 */
static int build_leaf(const struct folder_save *fs, const git_tree *old, size_t from, size_t to,
		      git_oid *out, int *empty, struct vx_err *err)
{
	git_treebuilder *tb = NULL;
	char *file = NULL;
	int rc = 0, changed = 0;

	*empty = 0;
	if (git_treebuilder_new(&tb, fs->g->repo, old) < 0) {
		rc = gerr(err, VX_EIO, "building the state tree");
		goto done;
	}
	if (fs->whole && (rc = prune_leaf(fs, tb, old, &changed, err)) < 0)
		goto done;
	for (size_t i = from; i < to && rc == 0; i++) {
		const struct state_record *r = fs->recs[i].r;

		free(file);
		if (!(file = vx_asprintf("%s.json", r->address + fs->nprefix + 1)))
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		else if (fs->whole || r->mark)
			rc = put_record(fs->g, tb, old, r, file, &changed, err);
		else
			rc = check_unmarked(old, r, file, err);
	}
	if (rc < 0)
		goto done;
	if (git_treebuilder_entrycount(tb) == 0)
		*empty = 1;
	else if (old && !changed)
		git_oid_cpy(out, git_tree_id(old));
	else if (git_treebuilder_write(out, tb) < 0)
		rc = gerr(err, VX_EIO, fs->dir);
done:
	git_treebuilder_free(tb);
	free(file);
	return rc;
}

/* The index of the first record of st whose address is at or after key (st is sorted). */
static size_t records_from(const struct state *st, const char *key)
{
	size_t lo = 0, hi = st->nrecords;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(st->records[mid].address, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A fanned folder's records by bucket, then address. */
static int by_bucket(const void *x, const void *y)
{
	const struct folder_rec *a = x, *b = y;
	int c = strcmp(a->bucket, b->bucket);

	return c ? c : strcmp(a->r->address, b->r->address);
}

/*
 * fs->recs: the folder's records a save looks at, [lo, hi) of st: all when
 * whole or VX_STATE_CHECK_MARKS is set, else the marked ones. Fanned out
 * (fan): with their buckets, sorted by bucket.
 */
static int folder_records(struct folder_save *fs, size_t lo, size_t hi, int fan, int check)
{
	fs->recs = calloc(hi - lo + 1, sizeof(*fs->recs));
	if (!fs->recs)
		return VX_ENOMEM;
	for (size_t i = lo; i < hi; i++) {
		const struct state_record *r = &fs->st->records[i];
		struct folder_rec *f = &fs->recs[fs->n];

		if (!fs->whole && !check && !r->mark)
			continue;
		f->r = r;
		if (fan)
			fan_bucket(r->address + fs->nprefix + 1, strlen(r->address + fs->nprefix + 1), f->bucket);
		fs->n++;
	}
	if (fan && fs->n > 1)
		qsort(fs->recs, fs->n, sizeof(*fs->recs), by_bucket);
	return 0;
}

/* The bucket tree name of the fanned folder old into *out (NULL when absent or none). */
static int bucket_tree(struct state_git *g, const git_tree *old, const char *name, git_tree **out,
		       struct vx_err *err)
{
	const git_tree_entry *e = old ? git_tree_entry_byname(old, name) : NULL;

	*out = NULL;
	if (!e)
		return 0;
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
		return vx_err_set(err, VX_EINVAL, "%s: not a directory", name);
	return git_tree_lookup(out, g->repo, git_tree_entry_id(e)) < 0 ? gerr(err, VX_EIO, name) : 0;
}

/* Puts the built bucket (or its absence, when empty) into the folder's tb; *changed when it moved. */
static int put_bucket(git_treebuilder *tb, const git_tree *old, const char *name, const git_oid *id,
		      int empty, int *changed)
{
	const git_tree_entry *e = old ? git_tree_entry_byname(old, name) : NULL;

	if (empty) {
		if (!e)
			return 0;
		*changed = 1;
		return git_treebuilder_remove(tb, name);
	}
	if (e && git_oid_equal(git_tree_entry_id(e), id))
		return 0;
	*changed = 1;
	return git_treebuilder_insert(NULL, tb, name, id, GIT_FILEMODE_TREE);
}

/*
 * A fanned-out folder: old (NULL: none) with each bucket that holds one of
 * fs->recs rebuilt by build_leaf; when whole, a bucket of old none of st's
 * records falls in goes. The other buckets keep their trees.
 */
static int build_fanned(const struct folder_save *fs, const git_tree *old, git_oid *out, int *empty,
			struct vx_err *err)
{
	git_treebuilder *tb = NULL;
	git_tree *sub = NULL;
	int rc = 0, changed = 0;

	if (git_treebuilder_new(&tb, fs->g->repo, old) < 0)
		return gerr(err, VX_EIO, "building the state tree");
	for (size_t i = 0, j; i < fs->n && rc == 0; i = j) {
		git_oid id;
		int none;

		for (j = i + 1; j < fs->n && !strcmp(fs->recs[j].bucket, fs->recs[i].bucket); j++)
			;
		if ((rc = bucket_tree(fs->g, old, fs->recs[i].bucket, &sub, err)) == 0 &&
		    (rc = build_leaf(fs, sub, i, j, &id, &none, err)) == 0 &&
		    put_bucket(tb, old, fs->recs[i].bucket, &id, none, &changed) < 0)
			rc = gerr(err, VX_EIO, fs->dir);
		git_tree_free(sub);
		sub = NULL;
	}
	/* Whole: a bucket none of the records is in any more goes. */
	for (size_t i = 0; fs->whole && rc == 0 && old && i < git_tree_entrycount(old); i++) {
		const char *name = git_tree_entry_name(git_tree_entry_byindex(old, i));
		int used = 0;

		for (size_t k = 0; k < fs->n && !used; k++)
			used = !strcmp(fs->recs[k].bucket, name);
		if (!used && put_bucket(tb, old, name, NULL, 1, &changed) < 0)
			rc = gerr(err, VX_EIO, name);
	}
	if (rc == 0 && git_treebuilder_entrycount(tb) == 0)
		*empty = 1;
	else if (rc == 0 && old && !changed)
		git_oid_cpy(out, git_tree_id(old));
	else if (rc == 0 && git_treebuilder_write(out, tb) < 0)
		rc = gerr(err, VX_EIO, fs->dir);
	git_treebuilder_free(tb);
	return rc;
}

/*
 * The folder dir of the new tree: old (the parent commit's folder, or
 * NULL) with every record of st whose address is dir's prefix and a dot,
 * and nothing else. Not whole: only the marked records are written, the
 * others being as old holds them, so a save costs the records that
 * changed, not the whole state. Flat or fanned out by the count (FAN_AT);
 * a change of layout builds it from nothing. The result is the tree a
 * build from nothing gives (git trees are canonical; but for FAN_KEEP's
 * hysteresis), which test_incremental_write_is_a_full_write checks. The
 * records are sorted by address, so a folder's are one run of them, found
 * by a binary search. *empty = 1 (and *out untouched) when it has no record.
 */
static int build_dir(struct state_git *g, const git_tree *old, const struct state *st,
		     const char *dir, int whole, git_oid *out, int *empty, struct vx_err *err)
{
	struct folder_save fs = { g, st, dir, (size_t)prefix_len(dir), whole, NULL, 0 };
	char key[STATE_DIR_SIZE + 1];
	size_t lo, hi;
	int fan, rc;

	*empty = 0;
	snprintf(key, sizeof(key), "%.*s.", (int)fs.nprefix, dir);
	lo = records_from(st, key);
	key[fs.nprefix] = '.' + 1; /* the first address past the folder's */
	hi = records_from(st, key);
	fan = hi - lo > FAN_AT || (is_fanned(old) && hi - lo > FAN_KEEP);
	if (fan != is_fanned(old)) {
		old = NULL; /* a new layout: built from nothing */
		fs.whole = 1;
	}
	if (hi == lo) {
		*empty = 1;
		return 0;
	}
	if ((rc = folder_records(&fs, lo, hi, fan, g->check_marks)) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	else if (fan)
		rc = build_fanned(&fs, old, out, empty, err);
	else
		rc = build_leaf(&fs, old, 0, fs.n, out, empty, err);
	free(fs.recs);
	return rc;
}

typedef char dir_name[STATE_DIR_SIZE];

static int dir_name_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b); /* a dir_name is its chars */
}

/*
 * Every record's address well-formed, and the records in order: build_dir
 * finds a folder's records by a binary search, so a record out of order
 * would be left out of the commit. Checked when a state is written whole
 * (one not loaded by this backend: the mutators keep the order).
 */
static int records_check(const struct state *st, struct vx_err *err)
{
	int rc;

	for (size_t i = 0; i < st->nrecords; i++) {
		const struct state_record *r = &st->records[i];

		if ((rc = state_address_split(r->address, NULL, NULL, err)) < 0)
			return rc;
		if (i && strcmp(r[-1].address, r->address) >= 0)
			return vx_err_set(err, VX_EINVAL, "state: records not sorted at %s", r->address);
	}
	return 0;
}

/*
 * The folders the new tree may hold, each once, sorted: the parent's
 * (read by dirset_read) and those of st's records. A folder of the parent
 * no record of st is in any more goes (build_dir finds it empty); one of a
 * kind this vx does not know keeps its records, which the load read into
 * st. The records are sorted, so a folder's are one run, skipped by a
 * binary search: a few steps per folder, not one per record.
 */
static int folders_of(const struct dirset *parent, const struct state *st, dir_name **out,
		      size_t *n, struct vx_err *err)
{
	dir_name *f = NULL, one;
	size_t k = 0, alloc = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < parent->n + st->nrecords && rc == 0;) {
		const struct state_record *r = i >= parent->n ? &st->records[i - parent->n] : NULL;
		size_t next = i + 1;

		if (r && (rc = state_address_split(r->address, one, NULL, err)) < 0)
			break;
		if (r) {
			char key[STATE_DIR_SIZE + 1];

			/* Past the last address of the folder: "job/" follows every "job.NAME". */
			snprintf(key, sizeof(key), "%.*s/", (int)strcspn(r->address, "."), r->address);
			next = parent->n + records_from(st, key);
			if (next <= i)
				next = i + 1;
		}
		if (VX_ALLOC_GROW(f, k + 1, alloc) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		else
			memcpy(f[k++], r ? one : parent->d[i].name, sizeof(one));
		i = next;
	}
	if (rc == 0 && k > 1)
		qsort(f, k, sizeof(*f), dir_name_cmp);
	for (size_t i = 0; rc == 0 && i < k; i++)
		if (*n == 0 || strcmp(f[i], f[*n - 1]) != 0)
			memmove(f[(*n)++], f[i], sizeof(*f));
	*out = f;
	return rc;
}

/*
 * The whole tree: stack.json from hdr, one file per record of st in its
 * folder, built on parent (the tip's tree, or NULL for a first write) by
 * build_dir, folder by folder.
 */
static int build_tree(struct state_git *g, const git_tree *parent, const struct state *hdr,
		      const struct state *st, int whole, git_oid *out, struct vx_err *err)
{
	git_treebuilder *root = NULL;
	struct dirset old = { NULL, 0 };
	dir_name *dirs = NULL;
	char *text = NULL;
	size_t ndirs = 0;
	int rc;

	if ((whole && (rc = records_check(st, err)) < 0) || (rc = dirset_read(g, parent, &old, err)) < 0 ||
	    (rc = folders_of(&old, st, &dirs, &ndirs, err)) < 0)
		goto done;
	if (git_treebuilder_new(&root, g->repo, NULL) < 0) {
		rc = gerr(err, VX_EIO, "building the state tree");
		goto done;
	}
	if ((rc = state_header_to_json(hdr, &text, err)) < 0 ||
	    (rc = insert_blob(g, root, "stack.json", text, err)) < 0)
		goto done;
	for (size_t d = 0; d < ndirs; d++) {
		git_oid id;
		int empty;

		if ((rc = build_dir(g, dirset_find(&old, dirs[d]), st, dirs[d], whole, &id, &empty, err)) < 0)
			goto done;
		if (!empty && git_treebuilder_insert(NULL, root, dirs[d], &id, GIT_FILEMODE_TREE) < 0) {
			rc = gerr(err, VX_EIO, dirs[d]);
			goto done;
		}
	}
	if (git_treebuilder_write(out, root) < 0)
		rc = gerr(err, VX_EIO, "writing the state tree");
done:
	dirset_release(&old);
	git_treebuilder_free(root);
	free(dirs);
	free(text);
	return rc;
}

static int signature(struct state_git *g, git_signature **out, struct vx_err *err)
{
	git_config *cfg = NULL;
	const char *name = NULL, *email = NULL;
	int64_t secs = vx_now_ms(g->base.ctx) / 1000;
	int rc = 0;

	if (git_repository_config_snapshot(&cfg, g->repo) == 0) {
		if (git_config_get_string(&name, cfg, "user.name") < 0 || !name || !*name)
			name = DEFAULT_NAME;
		if (git_config_get_string(&email, cfg, "user.email") < 0 || !email || !*email)
			email = DEFAULT_EMAIL;
	} else {
		name = DEFAULT_NAME;
		email = DEFAULT_EMAIL;
	}
	git_error_clear();
	if (git_signature_new(out, name, email, (git_time_t)secs, 0) < 0)
		rc = gerr(err, VX_EINVAL, "making the commit signature");
	git_config_free(cfg);
	return rc;
}

static int state_git_config_commit(struct state_backend *b, char **out, struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid id;

	(void)err;
	*out = NULL;
	/* An unborn HEAD (a repository with no commit yet) has no config commit. */
	if (git_reference_name_to_id(&id, g->repo, "HEAD") < 0) {
		git_error_clear();
		return 0;
	}
	oid_hex(&id, hex);
	*out = vx_strdup(hex);
	return *out ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

/* A file stack_load reads: NAME.yaml or NAME.yml, not hidden (see reconcile/stack.c). */
static int stack_file_name(const char *s)
{
	size_t n = strlen(s);

	if (s[0] == '.' || strchr(s, '/'))
		return 0;
	return (n > 5 && !strcmp(s + n - 5, ".yaml")) || (n > 4 && !strcmp(s + n - 4, ".yml"));
}

#define CHANGES_SHOWN 3

static int state_git_config_changes(struct state_backend *b, const char *dir, char **out,
			      struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	git_status_options so;
	git_status_list *list = NULL;
	struct vx_buf names = VX_BUF_INIT;
	const char *workdir = git_repository_workdir(g->repo);
	char root[PATH_MAX], here[PATH_MAX], *spec = NULL;
	const char *rel;
	size_t nroot, shown = 0, more = 0;
	int rc = 0;

	*out = NULL;
	/* A bare repository, or a stack outside the work tree: nothing to compare. */
	if (!workdir || !realpath(workdir, root) || !realpath(dir, here))
		return 0;
	nroot = strlen(root);
	if (strncmp(here, root, nroot) != 0 || (here[nroot] != '/' && here[nroot] != '\0'))
		return 0;
	rel = here[nroot] == '/' ? here + nroot + 1 : "";
	if (git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION) < 0) {
		rc = gerr(err, VX_EIO, "reading the stack's git status");
		goto done;
	}
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (*rel) {
		spec = vx_strdup(rel);
		if (!spec) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		so.pathspec.strings = &spec;
		so.pathspec.count = 1;
	}
	if (git_status_list_new(&list, g->repo, &so) < 0) {
		rc = gerr(err, VX_EIO, "reading the stack's git status");
		goto done;
	}
	for (size_t i = 0; i < git_status_list_entrycount(list); i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
		const char *path;
		size_t nrel = strlen(rel);

		if (!d || e->status == GIT_STATUS_CURRENT || (e->status & GIT_STATUS_IGNORED))
			continue;
		path = d->new_file.path ? d->new_file.path : d->old_file.path;
		/* The pathspec is a prefix match: keep only the files directly in dir. */
		if (!path || (nrel && (strncmp(path, rel, nrel) != 0 || path[nrel] != '/')) ||
		    !stack_file_name(path + (nrel ? nrel + 1 : 0)))
			continue;
		if (shown == CHANGES_SHOWN) {
			more++;
			continue;
		}
		if (vx_buf_printf(&names, "%s%s", shown ? ", " : "", path) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		shown++;
	}
	if (more && vx_buf_printf(&names, " and %zu more", more) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (shown && !(*out = vx_buf_detach(&names)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	vx_buf_release(&names);
	free(spec);
	git_status_list_free(list);
	return rc;
}

/*
 * Commits tree on top of parent (NULL: a first commit) and moves the
 * branch from parent to it with a compare-and-swap, then pushes. On any
 * failure after the ref moved, it is moved back.
 */
/*
 * With a remote: the remote's ref is the truth, and the push its
 * compare-and-swap (non-force: it must fast-forward from parent). The new
 * commit is pushed from a private ref, and only then does the local ref
 * follow, so the local ref never holds a commit the remote refused: two vx
 * in one clone (racing for the lease, say) cannot make it diverge from the
 * remote's, which would need a person to reset one (make torture).
 */
static int push_new(struct state_git *g, const struct gref *r, const git_oid *id, const git_oid *parent,
		    struct vx_err *err)
{
	git_reference *tmp = NULL, *ref = NULL;
	git_oid local;
	char name[96], *dir;
	int exists, rc;

	snprintf(name, sizeof(name), "refs/vx/tmp/%ld-%lld", (long)getpid(), (long long)vx_mono_ms(g->base.ctx));
	if (git_reference_create(&tmp, g->repo, name, id, 1, "vx: to push") < 0)
		return gerr(err, VX_EIO, "writing the state commit");
	dir = local_remote_dir(g);
	rc = dir ? push_local(g, r, dir, name, id, parent, err) : push_ref_to(g, r, name, r->ref, err);
	free(dir);
	if (git_reference_delete(tmp) < 0)
		git_error_clear();
	git_reference_free(tmp);
	if (rc < 0)
		return rc;
	/* Pushed: the local ref follows, unless another vx here has already
	 * moved it past id (a later sync brings it along either way). */
	{
		struct vx_err e = VX_ERR_INIT;

		if (read_ref(g, r->ref, &local, &exists, &e) == 0 &&
		    (!exists || (parent && git_oid_equal(&local, parent)) ||
		     git_graph_descendant_of(g->repo, id, &local) == 1) &&
		    ref_update(g, &ref, r->ref, id, exists ? &local : NULL, "vx: state") < 0)
			git_error_clear();
		vx_err_release(&e);
	}
	git_reference_free(ref);
	return 0;
}

static int commit_tree(struct state_git *g, const struct gref *r, const git_oid *parent,
		       const git_oid *tree_id, const char *message, struct vx_err *err)
{
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_commit *pc = NULL;
	git_reference *ref = NULL;
	const git_commit *parents[1];
	git_oid id;
	int rc = 0, grc;

	if ((rc = signature(g, &sig, err)) < 0)
		goto done;
	if (git_tree_lookup(&tree, g->repo, tree_id) < 0 ||
	    (parent && git_commit_lookup(&pc, g->repo, parent) < 0)) {
		rc = gerr(err, VX_EIO, "writing the state commit");
		goto done;
	}
	parents[0] = pc;
	if (git_commit_create(&id, g->repo, NULL, sig, sig, NULL, message, tree, parent ? 1 : 0,
			      parents) < 0) {
		rc = gerr(err, VX_EIO, "writing the state commit");
		goto done;
	}
	if (g->remote) {
		rc = push_new(g, r, &id, parent, err);
		goto done;
	}
	grc = ref_update(g, &ref, r->ref, &id, parent, "vx: state");
	if (grc == GIT_EMODIFIED || grc == GIT_EEXISTS) {
		rc = vx_err_set(err, VX_ECONFLICT,
				"%s%s moved while this write was prepared (another vx "
				"wrote it); load the state again",
				r->ref == g->ref ? "state branch " : "", r->name);
		goto done;
	}
	if (grc < 0) {
		rc = gerr(err, VX_EIO, r->ref == g->ref ? "updating the state branch" : "updating the lease");
		goto done;
	}
done:
	git_reference_free(ref);
	git_commit_free(pc);
	git_tree_free(tree);
	git_signature_free(sig);
	return rc;
}

/* ---- the lease ------------------------------------------------------------ */

/*
 * The lease lives on its own ref, refs/vx/lease/<stack>: a chain of commits
 * whose tree holds lease.json, the holder (state_lock_to_json) or "null"
 * once released. A release is a commit too, never a deletion, so every move
 * of the ref is a fast-forward and a non-force push is the same
 * compare-and-swap on the remote as on the state branch. The state branch's
 * history then holds only what vx did, not who held the lease.
 *
 * States written before this kept the lease as "lock" in stack.json, with a
 * commit per lock. While the lease ref does not exist, that lock is the
 * lease (a running older vx keeps it held); the first lease operation
 * creates the ref, which from then on is the only lease, and the next
 * write drops the old field.
 */

#define LEASE_FILE "lease.json"

/*
 * The holder on the lease ref (*out, NULL when released), its tip and
 * whether the ref exists (*exists = 0: *out NULL, tip untouched).
 */
static int lease_read_ref(struct state_git *g, git_oid *tip, int *exists, struct state_lock **out,
			  struct vx_err *err)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	char *text = NULL;
	size_t len, n;
	int found, rc;

	*out = NULL;
	if ((rc = read_ref(g, g->lease_ref, tip, exists, err)) < 0 || !*exists)
		return rc;
	if ((rc = tip_tree(g, tip, &commit, &tree, err)) < 0 ||
	    (rc = read_blob(g, tree, LEASE_FILE, 64 << 10, &text, &len, &found, err)) < 0)
		goto done;
	for (n = len; n && (text[n - 1] == '\n' || text[n - 1] == ' '); n--)
		;
	if (!found || (n == 4 && !memcmp(text, "null", 4)))
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
	}
done:
	if (rc < 0)
		vx_err_wrap(err, "reading %s of %s", LEASE_FILE, g->lease_ref);
	free(text);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

/* The old-style lock in stack.json of the state branch's tip, or *out = NULL. */
static int lease_read_legacy(struct state_git *g, struct state_lock **out, struct vx_err *err)
{
	struct state hdr = STATE_INIT;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid tip;
	int exists, rc;

	*out = NULL;
	if ((rc = read_ref(g, g->ref, &tip, &exists, err)) < 0 || !exists)
		goto done;
	if ((rc = tip_tree(g, &tip, &commit, &tree, err)) < 0 ||
	    (rc = read_header(g, tree, &hdr, err)) < 0)
		goto done;
	*out = hdr.lock;
	hdr.lock = NULL;
done:
	state_release(&hdr);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

/* The current lease: the lease ref's holder, or (no lease ref yet) the old-style lock. */
static int lease_current(struct state_git *g, git_oid *tip, int *exists, struct state_lock **out,
			 struct vx_err *err)
{
	int rc = lease_read_ref(g, tip, exists, out, err);

	if (rc == 0 && !*exists)
		rc = lease_read_legacy(g, out, err);
	return rc;
}

/* Fetches the lease ref from the remote (if any) and brings the local one up to date. */
static int lease_sync(struct state_git *g, struct vx_err *err)
{
	struct gref r = lease_gref(g);

	return sync_ref(g, &r, err);
}

static int state_git_lock_read(struct state_backend *b, struct state_lock **out, struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	git_oid tip;
	int exists, rc;

	*out = NULL;
	if ((rc = lease_sync(g, err)) < 0)
		return rc;
	if ((rc = lease_read_ref(g, &tip, &exists, out, err)) < 0 || exists)
		return rc;
	/* The old-style lock is on the state branch: bring that up to date too. */
	if ((rc = sync_remote(g, err)) < 0)
		return rc;
	return lease_read_legacy(g, out, err);
}

static int state_git_lock_swap(struct state_backend *b, const char *expect_id,
			       const struct state_lock *next, const char *message,
			       struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	struct gref r = lease_gref(g);
	struct state_lock *cur = NULL;
	git_treebuilder *tb = NULL;
	git_oid tip, tree_id;
	char *text = NULL;
	int exists, rc;

	if ((rc = lease_current(g, &tip, &exists, &cur, err)) < 0)
		goto done;
	if ((expect_id == NULL) != (cur == NULL) || (expect_id && strcmp(expect_id, cur->id) != 0)) {
		rc = vx_err_set(err, VX_ECONFLICT, "the state lock changed meanwhile");
		goto done;
	}
	if (next ? state_lock_to_json(next, &text, err) < 0 : !(text = vx_strdup("null\n"))) {
		rc = err->code ? err->code : vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (git_treebuilder_new(&tb, g->repo, NULL) < 0) {
		rc = gerr(err, VX_EIO, "building the lease tree");
		goto done;
	}
	if ((rc = insert_blob(g, tb, LEASE_FILE, text, err)) < 0)
		goto done;
	if (git_treebuilder_write(&tree_id, tb) < 0) {
		rc = gerr(err, VX_EIO, "writing the lease tree");
		goto done;
	}
	/* A compare-and-swap of the lease ref from tip (absent: create), then a non-force push. */
	rc = commit_tree(g, &r, exists ? &tip : NULL, &tree_id, message, err);
done:
	free(text);
	git_treebuilder_free(tb);
	state_lock_free(cur);
	return rc;
}

/* ---- writing the state ------------------------------------------------------ */

/*
 * 1 when the tree new_id (built from the header st) holds what old holds:
 * every folder the same tree, and stack.json the same bytes once given
 * the stored serial back. 0 when something changed, < 0 on error.
 * Cheap: the folders' ids are compared, and only the header is printed.
 */
static int same_content(struct state_git *g, const git_tree *old, git_oid new_id,
			const struct state *st, uint64_t stored_serial, struct vx_err *err)
{
	git_tree *nt = NULL;
	struct state hdr = *st; /* shallow: only printed */
	char *text = NULL;
	git_oid id;
	size_t n;
	int rc = 1;

	if (git_tree_lookup(&nt, g->repo, &new_id) < 0)
		return gerr(err, VX_EIO, "reading the state tree");
	n = git_tree_entrycount(nt);
	if (n != git_tree_entrycount(old))
		rc = 0;
	for (size_t i = 0; i < n && rc == 1; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(nt, i);
		const git_tree_entry *o = git_tree_entry_byname(old, git_tree_entry_name(e));

		if (!o)
			rc = 0;
		else if (strcmp(git_tree_entry_name(e), "stack.json") != 0)
			rc = git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(o));
		else {
			hdr.serial = stored_serial;
			if (state_header_to_json(&hdr, &text, err) < 0)
				rc = err->code;
			else if (git_odb_hash(&id, text, strlen(text), GIT_OBJECT_BLOB) < 0)
				rc = gerr(err, VX_EIO, "stack.json");
			else
				rc = git_oid_equal(&id, git_tree_entry_id(o));
		}
	}
	free(text);
	git_tree_free(nt);
	return rc;
}

/*
 * Whether st's unmarked records are as tree (the tip's, NULL: none) holds
 * them: st was loaded or last saved by g, nothing of g's came between, and
 * the tip is still what g left (no other writer since).
 */
static int saved_on(const struct state_git *g, const struct state *st, const git_tree *tree)
{
	return tree && st->base == g && st->base_epoch == g->epoch &&
	       git_oid_equal(git_tree_id(tree), &g->base_tree);
}

static int state_git_write(struct state_backend *b, struct state *st, const char *message,
			   struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	struct gref r = state_gref(g);
	struct state cur = STATE_INIT, hdr;
	struct state_lock *lease = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid tip, tree_id, lease_tip;
	int exists, lease_exists, found, rc;

	if ((rc = read_ref(g, g->ref, &tip, &exists, err)) < 0)
		goto done;
	if (exists && ((rc = tip_tree(g, &tip, &commit, &tree, err)) < 0 ||
		       (rc = read_header(g, tree, &cur, err)) < 0))
		goto done;
	/*
	 * Is the lease still ours? Asked of the lease ref as the remote has it,
	 * right before the commit: the state's own compare-and-swap below then
	 * closes the rest (a write from a holder that lost the lease since).
	 */
	if ((rc = lease_sync(g, err)) < 0 ||
	    (rc = lease_read_ref(g, &lease_tip, &lease_exists, &lease, err)) < 0)
		goto done;
	if (lease_exists) {
		state_lock_free(cur.lock);
		cur.lock = lease;
		lease = NULL;
	}
	found = exists;
	if (!exists && cur.lock && st->serial == 0) {
		/* No state yet, but a lease (taken before the first write): check that alone. */
		cur.stack = vx_strdup(b->stack);
		cur.lineage = vx_strdup(st->lineage ? st->lineage : "");
		if (!cur.stack || !cur.lineage) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		found = 1;
	}
	if ((rc = state_backend_check_write(b, found ? &cur : NULL, st, err)) < 0)
		goto done;
	/* The header as stored: the new serial, and no lock (an old-style one is dropped). */
	hdr = *st;
	hdr.serial = st->serial + 1;
	hdr.lock = NULL;
	hdr.lease_ref = g->lease_ref;
	if ((rc = build_tree(g, tree, &hdr, st, !saved_on(g, st, tree), &tree_id, err)) < 0)
		goto done;
	if (exists && cur.serial == st->serial &&
	    (rc = same_content(g, tree, tree_id, &hdr, st->serial, err)) != 0) {
		/* Nothing changed: no commit, and the serial stays. */
		if (rc > 0) {
			rc = 0;
			git_oid_cpy(&g->base_tree, git_tree_id(tree));
			state_saved(st, g, ++g->epoch);
		}
		goto done;
	}
	rc = commit_tree(g, &r, exists ? &tip : NULL, &tree_id, message, err);
	if (rc == 0) {
		st->serial = hdr.serial;
		git_oid_cpy(&g->base_tree, &tree_id);
		state_saved(st, g, ++g->epoch);
	}
done:
	state_lock_free(lease);
	git_tree_free(tree);
	git_commit_free(commit);
	state_release(&cur);
	return rc;
}

/* ---- history, list, revision ---------------------------------------------- */

/* The id of the entry at path in commit c (a blob or a tree), or zero when absent. */
static int entry_at(const git_commit *c, const char *path, git_oid *id, struct vx_err *err)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int rc = 0, grc;

	memset(id, 0, sizeof(*id));
	if (git_commit_tree(&tree, c) < 0)
		return gerr(err, VX_EIO, "reading a state commit");
	grc = git_tree_entry_bypath(&e, tree, path);
	if (grc == 0)
		git_oid_cpy(id, git_tree_entry_id(e));
	else if (grc != GIT_ENOTFOUND)
		rc = gerr(err, VX_EIO, path);
	git_tree_entry_free(e);
	git_tree_free(tree);
	return rc;
}

/* The blob id of a record in commit c, at flat (its folder flat) or at fanned; zero when absent. */
static int record_at(const git_commit *c, const char *flat, const char *fanned, git_oid *id,
		     struct vx_err *err)
{
	int rc = entry_at(c, flat, id, err);

	if (rc == 0 && git_oid_is_zero(id))
		rc = entry_at(c, fanned, id, err);
	return rc;
}

/* Collects history entries, newest commit first. */
struct history {
	struct state_git *g;
	struct state_history_entry *list;
	size_t n, max, cap;
	struct state_history_skips *skips;
};

/*
 * The last entry's record (at commit hex, from path) does not parse: it is
 * left out and named in h->skips, so one bad commit does not hide the
 * rest of an append-only history. err holds why.
 */
static int history_skip_last(struct history *h, const char *hex, struct vx_err *err)
{
	char version[13];
	int rc;

	snprintf(version, sizeof(version), "%.12s", hex);
	state_history_entry_release(&h->list[--h->n]);
	rc = state_history_skips_add(h->skips, version, vx_err_msg(err));
	vx_err_release(err);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

/*
 * Adds the entry for address at commit c: the record in blob (zero: removed
 * there). path names the file in messages.
 */
static int history_add(struct history *h, const git_commit *c, const char *address,
		       const char *path, const git_oid *blob, struct vx_err *err)
{
	struct state_history_entry *e;
	git_blob *b = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	size_t len;
	int rc = 0;

	if (VX_ALLOC_GROW(h->list, h->n + 1, h->cap) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	e = &h->list[h->n++];
	memset(e, 0, sizeof(*e));
	oid_hex(git_commit_id(c), hex);
	e->commit = vx_strdup(hex);
	e->address = vx_strdup(address);
	e->message = vx_strdup(git_commit_message(c));
	e->time_ms = (int64_t)git_commit_time(c) * 1000;
	if (!e->commit || !e->address || !e->message)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (git_oid_is_zero(blob))
		return 0; /* removed (forgotten) in this commit */
	if (git_blob_lookup(&b, h->g->repo, blob) < 0) {
		rc = gerr(err, VX_EIO, path);
		goto done;
	}
	len = (size_t)git_blob_rawsize(b);
	if (len > STATE_MAX_FILE) {
		vx_err_set(err, VX_EINVAL, "%s: %zu bytes is over the limit of %zu", path, len,
			   STATE_MAX_FILE);
		rc = history_skip_last(h, hex, err);
		goto done;
	}
	e->record = calloc(1, sizeof(*e->record));
	if (!e->record) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = state_record_from_json(e->record, git_blob_rawcontent(b), len, err)) < 0) {
		free(e->record);
		e->record = NULL;
		if (rc == VX_EINVAL) {
			vx_err_wrap(err, "%s", path);
			rc = history_skip_last(h, hex, err);
		}
	}
done:
	git_blob_free(b);
	return rc;
}

/* The record files of a folder or bucket, sorted by name, with the trees they live in. */
struct entries {
	const git_tree_entry **e;
	size_t n, cap;
	git_tree **trees;
	size_t ntrees;
};

static void entries_release(struct entries *x)
{
	for (size_t i = 0; i < x->ntrees; i++)
		git_tree_free(x->trees[i]);
	free(x->trees);
	free(x->e);
	memset(x, 0, sizeof(*x));
}

static int entry_name_cmp(const void *a, const void *b)
{
	return strcmp(git_tree_entry_name(*(const git_tree_entry *const *)a),
		      git_tree_entry_name(*(const git_tree_entry *const *)b));
}

/* Appends the entries of t (not fanned out) to x. */
static int entries_add(struct entries *x, const git_tree *t)
{
	for (size_t i = 0; t && i < git_tree_entrycount(t); i++) {
		if (VX_ALLOC_GROW(x->e, x->n + 1, x->cap) < 0)
			return VX_ENOMEM;
		x->e[x->n++] = git_tree_entry_byindex(t, i);
	}
	return 0;
}

/*
 * The record files of the folder t (NULL: none) into x, sorted by name:
 * its own entries when flat; when fanned out, every bucket's.
 */
static int entries_of(struct state_git *g, const git_tree *t, struct entries *x, struct vx_err *err)
{
	size_t n = is_fanned(t) ? git_tree_entrycount(t) : 0;

	memset(x, 0, sizeof(*x));
	if (!n)
		return entries_add(x, t) < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
	if (!(x->trees = calloc(n, sizeof(*x->trees))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(t, i);

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			continue; /* not a bucket: load refuses it, log passes it over */
		if (git_tree_lookup(&x->trees[x->ntrees], g->repo, git_tree_entry_id(e)) < 0)
			return gerr(err, VX_EIO, git_tree_entry_name(e));
		if (entries_add(x, x->trees[x->ntrees++]) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	if (x->n > 1)
		qsort(x->e, x->n, sizeof(*x->e), entry_name_cmp);
	return 0;
}

/*
 * Every record file of dir that differs between c's entries ec and its
 * parent's ep (both sorted by name): added, changed or removed, found by
 * one merge pass.
 */
static int history_merge(struct history *h, const git_commit *c, const struct entries *ec,
			 const struct entries *ep, const char *dir, struct vx_err *err)
{
	size_t i = 0, j = 0, nc = ec->n, np = ep->n;
	char *address = NULL, *path = NULL;
	int rc = 0;

	while (rc == 0 && (i < nc || j < np) && (h->max == 0 || h->n < h->max)) {
		const git_tree_entry *ecur = i < nc ? ec->e[i] : NULL;
		const git_tree_entry *epar = j < np ? ep->e[j] : NULL;
		const git_tree_entry *e;
		git_oid zero;
		const char *name;
		size_t len;
		int cmp = !ecur ? 1 : !epar ? -1
					    : strcmp(git_tree_entry_name(ecur), git_tree_entry_name(epar));

		memset(&zero, 0, sizeof(zero));
		e = cmp <= 0 ? ecur : epar;
		i += cmp <= 0;
		j += cmp >= 0;
		if (cmp == 0 && git_oid_equal(git_tree_entry_id(ecur), git_tree_entry_id(epar)))
			continue;
		name = git_tree_entry_name(e);
		len = strlen(name);
		/* Only NAME.json files are records; load refuses anything else, log skips it. */
		if (len < 6 || strcmp(name + len - 5, ".json") != 0 ||
		    git_tree_entry_type(e) != GIT_OBJECT_BLOB)
			continue;
		free(address);
		free(path);
		address = vx_asprintf("%.*s.%.*s", prefix_len(dir), dir, (int)(len - 5), name);
		path = vx_asprintf("%s/%s", dir, name);
		if (!address || !path) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		rc = history_add(h, c, address, path, cmp > 0 ? &zero : git_tree_entry_id(ecur), err);
	}
	free(address);
	free(path);
	return rc;
}

/* history_merge of two trees' record files (entries_of each). */
static int history_trees(struct history *h, const git_commit *c, const git_tree *tc, const git_tree *tp,
			 const char *dir, struct vx_err *err)
{
	struct entries ec, ep;
	int rc;

	memset(&ep, 0, sizeof(ep));
	if ((rc = entries_of(h->g, tc, &ec, err)) == 0 && (rc = entries_of(h->g, tp, &ep, err)) == 0)
		rc = history_merge(h, c, &ec, &ep, dir, err);
	entries_release(&ec);
	entries_release(&ep);
	return rc;
}

/* Both folders fanned out: only the buckets whose trees differ are read. */
static int history_buckets(struct history *h, const git_commit *c, const git_tree *tc, const git_tree *tp,
			   const char *dir, struct vx_err *err)
{
	size_t i = 0, j = 0, nc = git_tree_entrycount(tc), np = git_tree_entrycount(tp);
	int rc = 0;

	while (rc == 0 && (i < nc || j < np) && (h->max == 0 || h->n < h->max)) {
		const git_tree_entry *ecur = i < nc ? git_tree_entry_byindex(tc, i) : NULL;
		const git_tree_entry *epar = j < np ? git_tree_entry_byindex(tp, j) : NULL;
		int cmp = !ecur ? 1 : !epar ? -1
					    : strcmp(git_tree_entry_name(ecur), git_tree_entry_name(epar));
		git_tree *bc = NULL, *bp = NULL;

		i += cmp <= 0;
		j += cmp >= 0;
		if (cmp == 0 && git_oid_equal(git_tree_entry_id(ecur), git_tree_entry_id(epar)))
			continue;
		if ((cmp <= 0 && git_tree_entry_type(ecur) == GIT_OBJECT_TREE &&
		     git_tree_lookup(&bc, h->g->repo, git_tree_entry_id(ecur)) < 0) ||
		    (cmp >= 0 && git_tree_entry_type(epar) == GIT_OBJECT_TREE &&
		     git_tree_lookup(&bp, h->g->repo, git_tree_entry_id(epar)) < 0))
			rc = gerr(err, VX_EIO, dir);
		else
			rc = history_trees(h, c, bc, bp, dir, err);
		git_tree_free(bc);
		git_tree_free(bp);
	}
	return rc;
}

/*
 * Every record file of dir that differs between commit c and its parent p
 * (NULL: c is the first commit), from c's folder tc and p's tp (NULL:
 * none), flat or fanned out. An unchanged folder (the same tree id) costs
 * one comparison, and so does an unchanged bucket of two fanned folders; a
 * commit that changed the layout compares every record by name.
 */
static int history_dir(struct history *h, const git_commit *c, const git_tree *tc,
		       const git_tree *tp, const char *dir, struct vx_err *err)
{
	if ((!tc && !tp) || (tc && tp && git_oid_equal(git_tree_id(tc), git_tree_id(tp))))
		return 0;
	if (is_fanned(tc) && is_fanned(tp))
		return history_buckets(h, c, tc, tp, dir, err);
	return history_trees(h, c, tc, tp, dir, err);
}

/*
 * The next commit of the walk, id, into *c and its first parent into *p.
 * carried: id is the previous step's parent, which *p still holds, so it
 * is not read again.
 */
static int history_step(struct state_git *g, const git_oid *id, int carried, git_commit **c,
			git_commit **p, struct vx_err *err)
{
	git_commit_free(*c);
	*c = *p;
	if (!carried) {
		git_commit_free(*c);
		*c = NULL;
	}
	*p = NULL;
	if ((!*c && git_commit_lookup(c, g->repo, id) < 0) ||
	    (git_commit_parentcount(*c) > 0 && git_commit_parent(p, *c, 0) < 0))
		return gerr(err, VX_EIO, "reading a state commit");
	return 0;
}

/* The record folders of commit c (none when c is NULL) into *out (dirset_read). */
static int commit_dirs(struct state_git *g, const git_commit *c, struct dirset *out,
		       struct vx_err *err)
{
	git_tree *root = NULL;
	int rc;

	out->d = NULL;
	out->n = 0;
	if (!c)
		return 0;
	if (git_commit_tree(&root, c) < 0)
		return gerr(err, VX_EIO, "reading a state commit");
	rc = dirset_read(g, root, out, err);
	git_tree_free(root);
	return rc;
}

/*
 * What commit c changed in every folder, of every kind, against its parent
 * p (NULL: none): the folders of either, merged by name. prev holds the
 * parent's folders read last step, used for c when carried, and receives
 * p's for the next step.
 */
static int history_dirs(struct history *h, const git_commit *c, const git_commit *p, int carried,
			struct dirset *prev, struct vx_err *err)
{
	struct dirset dc = { NULL, 0 }, dp = { NULL, 0 };
	size_t i = 0, j = 0;
	int rc;

	if (carried) {
		dc = *prev;
		prev->d = NULL;
		prev->n = 0;
	}
	dirset_release(prev);
	if ((!carried && (rc = commit_dirs(h->g, c, &dc, err)) < 0) ||
	    (rc = commit_dirs(h->g, p, &dp, err)) < 0)
		goto done;
	while (rc == 0 && (i < dc.n || j < dp.n)) {
		/* Merged by name: a folder of one commit only is compared with none. */
		int cmp = i == dc.n ? 1 : -1;

		if (i < dc.n && j < dp.n)
			cmp = strcmp(dc.d[i].name, dp.d[j].name);
		rc = history_dir(h, c, cmp <= 0 ? dc.d[i].tree : NULL, cmp >= 0 ? dp.d[j].tree : NULL,
				 cmp <= 0 ? dc.d[i].name : dp.d[j].name, err);
		i += cmp <= 0;
		j += cmp >= 0;
	}
	if (rc == 0) {
		*prev = dp;
		dp.d = NULL;
		dp.n = 0;
	}
done:
	dirset_release(&dc);
	dirset_release(&dp);
	return rc;
}

/* The revision walk of the state branch from tip, newest first. */
static int history_walk(struct state_git *g, const git_oid *tip, git_revwalk **walk,
			struct vx_err *err)
{
	if (git_revwalk_new(walk, g->repo) < 0 ||
	    git_revwalk_sorting(*walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME) < 0 ||
	    git_revwalk_push(*walk, tip) < 0)
		return gerr(err, VX_EIO, "walking the state branch");
	return 0;
}

/* The commits that changed address's record (NULL: any record), newest first, at most max (0: all). */
static int state_git_history(struct state_backend *b, const char *address, size_t max,
			     struct state_history_entry **out, size_t *n,
			     struct state_history_skips *skips, struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	struct history h = { g, NULL, 0, max, 0, skips };
	git_revwalk *walk = NULL;
	git_commit *c = NULL, *p = NULL;
	char *path = NULL, *fanned = NULL;
	const char *name;
	char dir[STATE_DIR_SIZE];
	struct dirset prev = { NULL, 0 };
	git_oid tip, id, mine, before, prev_parent;
	int exists, rc, have_prev = 0;

	memset(&before, 0, sizeof(before));
	skips->noun = "commit";
	if ((address && (rc = state_address_split(address, dir, &name, err)) < 0) ||
	    (rc = sync_remote(g, err)) < 0 || (rc = read_ref(g, g->ref, &tip, &exists, err)) < 0 ||
	    !exists)
		goto done;
	if (address) {
		char bucket[3];

		fan_bucket(name, strlen(name), bucket);
		path = vx_asprintf("%s/%s.json", dir, name);
		fanned = vx_asprintf("%s/%s/%s.json", dir, bucket, name);
		if (!path || !fanned) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
	}
	if ((rc = history_walk(g, &tip, &walk, err)) < 0)
		goto done;
	/*
	 * The walk is mostly linear: a commit's parent is the next commit, so
	 * what was read of the parent (its folders, the record's blob id) is
	 * kept for it rather than read again: a folder of 10,000 records costs
	 * a parse per commit, not two.
	 */
	while ((max == 0 || h.n < max) && git_revwalk_next(&id, walk) == 0) {
		int carried = have_prev && git_oid_equal(&id, &prev_parent);

		if ((rc = history_step(g, &id, carried, &c, &p, err)) < 0)
			goto done;
		have_prev = p != NULL;
		if (p)
			git_oid_cpy(&prev_parent, git_commit_id(p));
		if (!address) {
			if ((rc = history_dirs(&h, c, p, carried, &prev, err)) < 0)
				goto done;
			continue;
		}
		/* One record: its blob id in c against the parent's. */
		if (carried)
			git_oid_cpy(&mine, &before);
		memset(&before, 0, sizeof(before));
		if ((!carried && (rc = record_at(c, path, fanned, &mine, err)) < 0) ||
		    (p && (rc = record_at(p, path, fanned, &before, err)) < 0))
			goto done;
		if (!git_oid_equal(&mine, &before) &&
		    (rc = history_add(&h, c, address, path, &mine, err)) < 0)
			goto done;
	}
done:
	if (rc < 0) {
		state_history_free(h.list, h.n);
		h.list = NULL;
		h.n = 0;
	}
	*out = h.list;
	*n = h.n;
	free(path);
	free(fanned);
	dirset_release(&prev);
	git_commit_free(p);
	git_commit_free(c);
	git_revwalk_free(walk);
	return rc;
}

static int state_git_restore(struct state_backend *b, uint64_t serial, char **what,
			     struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	struct gref r = state_gref(g);
	git_reference *ref = NULL;
	git_commit *c = NULL;
	git_oid tip;
	char *where = NULL, hex[GIT_OID_HEXSZ + 1];
	uint64_t at;
	int exists = 0, rc;

	if ((rc = sync_remote(g, err)) < 0 || (rc = read_ref(g, g->ref, &tip, &exists, err)) < 0)
		goto done;
	if (exists) {
		rc = vx_err_set(err, VX_ECONFLICT, "state restore: state branch %s exists; there is "
				"nothing to restore", g->branch);
		goto done;
	}
	if ((rc = lost_tip(g, &tip, &where, err)) < 0)
		goto done;
	if (!rc) {
		rc = vx_err_set(err, VX_ENOTFOUND, "state restore: state branch %s is gone and "
				"neither a remote-tracking ref nor its reflog names a commit of it",
				g->branch);
		goto done;
	}
	/* An older serial: down the first parents (each commit is one serial). */
	while ((at = serial_at(g, &tip)) != serial && serial && at > serial) {
		git_commit_free(c);
		c = NULL;
		if (git_commit_lookup(&c, g->repo, &tip) < 0 || git_commit_parentcount(c) == 0)
			break;
		git_oid_cpy(&tip, git_commit_parent_id(c, 0));
	}
	if (serial && at != serial) {
		rc = vx_err_set(err, VX_ENOTFOUND, "state restore: no commit of serial %llu below %s",
				(unsigned long long)serial, where);
		goto done;
	}
	oid_hex(&tip, hex);
	if (ref_update(g, &ref, g->ref, &tip, NULL, "vx: state restored") < 0) {
		rc = gerr(err, VX_ECONFLICT, "state restore: creating the state branch");
		goto done;
	}
	if (g->remote && (rc = push_ref(g, &r, err)) < 0)
		goto done;
	if (!(*what = vx_asprintf("state branch %s restored at commit %s (serial %llu) from %s",
				  g->branch, hex, (unsigned long long)at, where)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	git_reference_free(ref);
	git_commit_free(c);
	free(where);
	return rc < 0 ? rc : 0;
}

static int state_git_revision(struct state_backend *b, char **out, struct vx_err *err)
{
	struct state_git *g = (struct state_git *)b;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid tip;
	int exists, rc;

	*out = NULL;
	rc = read_ref(g, g->ref, &tip, &exists, err);
	if (rc < 0 || !exists)
		return rc;
	oid_hex(&tip, hex);
	*out = vx_strdup(hex);
	return *out ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

static void state_git_free(struct state_backend *b)
{
	struct state_git *g = (struct state_git *)b;

	git_repository_free(g->repo);
	free(g->branch);
	free(g->ref);
	free(g->remote);
	free(g->url);
	free(g->tracking);
	free(g->lease_ref);
	free(g->lease_tracking);
	free(g);
	git_libgit2_shutdown();
}

static const struct state_backend_ops state_git_ops = {
	.name = "git",
	.detects_noop = 1,
	.load = state_git_load,
	.write = state_git_write,
	.lock_read = state_git_lock_read,
	.lock_swap = state_git_lock_swap,
	.history = state_git_history,
	.list = state_backend_list_loaded,
	.revision = state_git_revision,
	.config_commit = state_git_config_commit,
	.config_changes = state_git_config_changes,
	.restore = state_git_restore,
	.free = state_git_free,
};

/*
 * Objects are read as git reads them: inflated (zlib checks each stream's
 * own checksum), not hashed again. libgit2 re-hashes every object it reads
 * by default, most of a load's git time; git hashes what it receives
 * (index-pack, as libgit2's fetch does) and what fsck checks, not what a
 * plain read returns (docs/design-notes.md, "The state load"). Set once,
 * before any thread of this process reads an object.
 */
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static void hash_on_read_off(void)
{
	if (git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0) < 0)
		git_error_clear(); /* only slower */
}

int state_git_open(struct state_backend **out, const struct vx_ctx *ctx,
		   const struct state_git_opts *opts, struct vx_err *err)
{
	struct state_git *g = NULL;
	const char *where = opts->repo_path ? opts->repo_path : opts->stack_dir;
	int rc, grc, inited = 0;

	*out = NULL;
	if (!where)
		return vx_err_set(err, VX_EINVAL, "git state: no stack directory given");
	if (git_libgit2_init() < 0)
		return gerr(err, VX_EIO, "initialising libgit2");
	inited = 1;
	pthread_once(&hash_once, hash_on_read_off);
	g = calloc(1, sizeof(*g));
	if (!g) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = state_backend_init(&g->base, &state_git_ops, ctx, opts->stack, err)) < 0)
		goto done;
	g->check_marks = vx_getenv(ctx, "VX_STATE_CHECK_MARKS") != NULL;
	g->branch = opts->branch ? vx_strdup(opts->branch) : vx_asprintf("vx/state/%s", opts->stack);
	g->ref = g->branch ? vx_asprintf("refs/heads/%s", g->branch) : NULL;
	g->lease_ref = vx_asprintf("refs/vx/lease/%s", opts->stack);
	if (!g->ref || !g->lease_ref) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (!git_reference_is_valid_name(g->ref)) {
		rc = vx_err_set(err, VX_EINVAL, "git state: \"%s\" is not a valid branch name",
				g->branch);
		goto done;
	}
	grc = opts->repo_path ? git_repository_open(&g->repo, opts->repo_path)
			      : git_repository_open_ext(&g->repo, opts->stack_dir, 0, NULL);
	if (grc < 0) {
		rc = gerr(err, grc == GIT_ENOTFOUND ? VX_ENOTFOUND : VX_EIO, "git state");
		vx_err_wrap(err, "opening the repository of %s (the git state backend needs the "
				 "stack inside a git repository, or state: {backend: file})",
			    where);
		goto done;
	}
	if (opts->remote && (rc = remote_names(g, opts->remote, opts->stack, err)) < 0)
		goto done;
	if (g->remote) {
		git_remote *r = NULL;

		if ((rc = open_remote(g, &r, err)) < 0) {
			vx_err_wrap(err, "git state");
			goto done;
		}
		git_remote_free(r);
	}
	*out = &g->base;
	g = NULL;
	inited = 0;
	rc = 0;
done:
	if (g) {
		git_repository_free(g->repo);
		free(g->branch);
		free(g->ref);
		free(g->remote);
		free(g->url);
		free(g->tracking);
		free(g->lease_ref);
		free(g->lease_tracking);
		free(g->base.stack);
		free(g);
	}
	if (inited)
		git_libgit2_shutdown();
	return rc;
}

int state_git_workdir(char **out, const char *dir, struct vx_err *err)
{
	git_repository *repo = NULL;
	const char *wd;
	char *real = NULL;
	int grc, rc = 0;

	*out = NULL;
	if (git_libgit2_init() < 0)
		return gerr(err, VX_EIO, "initialising libgit2");
	grc = git_repository_open_ext(&repo, dir, 0, NULL);
	if (grc < 0) {
		rc = gerr(err, grc == GIT_ENOTFOUND ? VX_ENOTFOUND : VX_EIO, "opening the repository");
		vx_err_wrap(err, "%s", dir);
		goto done;
	}
	wd = git_repository_workdir(repo);
	if (!wd) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: the repository has no work tree", dir);
		goto done;
	}
	/* libgit2 gives the path it walked to, with a trailing '/'; callers
	 * compare it with realpath()s, so resolve symbolic links the same way. */
	real = realpath(wd, NULL);
	if (!real) {
		rc = vx_err_set(err, VX_EIO, "%s: %s", wd, strerror(errno));
		goto done;
	}
	*out = real;
done:
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc;
}
