#ifndef VX_STATE_BACKEND_H
#define VX_STATE_BACKEND_H

/*
 * Where the state lives: one interface, several backends.
 *
 *	git  (state/state_git.h): branch vx/state/<stack> of the stack's repository
 *	file (state/state_file.h): one JSON file plus FILE.lock
 *	gcs  (state/state_gcs.h): objects in a Cloud Storage bucket, compare-and-swapped
 *
 * Open a backend with state_git_open(), state_file_open() or state_gcs_open(), then:
 *
 *	state_lock_acquire()   (state/lock.h) before any mutating call
 *	state_load()           read the state (again, after taking the lock)
 *	state_write()          after each step of an apply (journal, results)
 *	state_lock_heartbeat() between steps while applying (renews when a third of the lease passed)
 *	state_lock_fence()     right before each mutating call: is the lease still ours?
 *	state_lock_drop()       give the lease back
 *	state_backend_free()
 *
 * A write is a compare-and-swap: it succeeds only if the stored state is
 * still at st->serial with the same lineage, and is either unlocked or
 * locked by the lease this backend holds; otherwise VX_ECONFLICT with a
 * message saying who moved. The lease is not part of the state (git keeps
 * it on its own ref) and never changes the serial: bind saved plans to
 * (lineage, serial), not to the git commit id.
 *
 * A backend is not thread-safe: a caller that renews the lock from another
 * thread must serialise calls with its own mutex. The one exception is
 * state_lock_fence(), which any thread may call at any time.
 */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_ctx;
struct state;
struct state_lock;
struct state_record;
struct state_backend;

/* One version of one record, as `vx log` reads them, newest first. */
struct state_history_entry {
	char *address;                /* the record's address ("job.a") */
	char *commit;                 /* 40 hex digits; NULL for backends without history (file) */
	int64_t time_ms;              /* the commit's time; 0 when unknown */
	char *message;                /* the whole commit message; NULL when unknown */
	struct state_record *record;  /* the record as of that commit; NULL: removed (forgotten) there */
};

/* Frees what one entry holds (not the entry itself). */
void state_history_entry_release(struct state_history_entry *e);
void state_history_free(struct state_history_entry *h, size_t n);

/*
 * The versions a history walk could not read (a record that does not
 * parse, a history object that is not one) and so left out: the history
 * is append-only, so one bad version must not stop `vx log` or `vx report`
 * for good. One entry per version, oldest last.
 */
struct state_history_skip {
	char *version;        /* git: the commit's first 12 hex digits; gcs: "serial 3" */
	char *why;            /* "jobs/a.json: invalid state record JSON: 1:2: not valid JSON" */
};

struct state_history_skips {
	const char *noun;     /* "commit" (git), "version" (gcs); static */
	struct state_history_skip *list;
	size_t n;
};

#define STATE_HISTORY_SKIPS_INIT { "version", NULL, 0 }

void state_history_skips_release(struct state_history_skips *s);

/*
 * For backends: adds why to the skip of version (a new one unless the last
 * skip is of the same version; then why is appended). VX_ENOMEM.
 */
int state_history_skips_add(struct state_history_skips *s, const char *version,
			    const char *why) VX_WUR;

/*
 * The warning a command prints for s (s->n > 0): "1 state commit skipped
 * (abc123def456: jobs/a.json: ...)", the first few versions named, then
 * "and N more". *out is owned by the caller; NULL when out of memory.
 */
char *state_history_skips_text(const struct state_history_skips *s);

/* What a backend implements. Every op returns 0 or a negative VX_E*, filling err. */
struct state_backend_ops {
	const char *name;
	/* 1: write itself makes no new version when the content is unchanged
	 * (git compares trees), so state_write need not hash the state. */
	int detects_noop;
	/* The whole state; an empty one (serial 0, a fresh lineage) when none exists yet. */
	int (*load)(struct state_backend *b, struct state *out, struct vx_err *err);
	/* Stores st as serial st->serial + 1 (see state_write). */
	int (*write)(struct state_backend *b, struct state *st, const char *message,
		     struct vx_err *err);
	/* The current lock, or *out = NULL. */
	int (*lock_read)(struct state_backend *b, struct state_lock **out, struct vx_err *err);
	/* Atomically replaces the lock if it is still expect_id (NULL: unlocked) with next
	 * (NULL: unlock). VX_ECONFLICT when the lock changed meanwhile. */
	int (*lock_swap)(struct state_backend *b, const char *expect_id,
			 const struct state_lock *next, const char *message, struct vx_err *err);
	/* skips is never NULL here (state_history passes one of its own). */
	int (*history)(struct state_backend *b, const char *address, size_t max,
		       struct state_history_entry **out, size_t *n,
		       struct state_history_skips *skips, struct vx_err *err);
	int (*list)(struct state_backend *b, char ***out, size_t *n, struct vx_err *err);
	/* A short id of the stored version (git: the tip commit), or *out = NULL when none. */
	int (*revision)(struct state_backend *b, char **out, struct vx_err *err);
	/* The config commit (HEAD of the stack's repository), or *out = NULL. */
	int (*config_commit)(struct state_backend *b, char **out, struct vx_err *err);
	/* The stack files of dir that differ from the config commit, or *out = NULL. */
	int (*config_changes)(struct state_backend *b, const char *dir, char **out,
			      struct vx_err *err);
	/* Writes a deleted state back from its history (state_restore); NULL: no history to
	 * restore from (file). */
	int (*restore)(struct state_backend *b, uint64_t serial, char **what, struct vx_err *err);
	void (*free)(struct state_backend *b);
};

/* The common part every backend embeds first. */
struct state_backend {
	const struct state_backend_ops *ops;
	const struct vx_ctx *ctx;  /* borrowed; must outlive the backend */
	char *stack;               /* owned */
	struct state_lock *held;   /* the lease this backend holds (owned), or NULL */
	int64_t lease_ms;          /* lease length of held */
	/*
	 * What state_lock_fence() reads, from worker threads while the main
	 * thread may renew: the monotonic time taken just before the acquire or
	 * renewal that succeeded, and the lease length then (0: no lease held).
	 * Atomic so the fence needs no lock of its own.
	 */
	_Atomic int64_t fence_confirmed_ms;
	_Atomic int64_t fence_lease_ms;
	char *dirty_decl_hash;     /* set by state_config_dirty (owned), or NULL */
	/* Set by state_audit (owned), or NULL: the trailers of every write. */
	char *audit_actor;
	char *audit_pr_url;
	char *audit_run_url;
	char *policy_commit; /* set by state_policy_commit (owned), or NULL */
	/* Set by state_audit_over_budget (owned), or NULL: "Vx-Allow-Over-Budget: " of every write. */
	char *audit_over_budget;
	/*
	 * What state_write compares a new state with, so that a write that
	 * changes nothing writes nothing: the SHA-256 of the last state loaded
	 * or written (its JSON without serial and lock), and its serial; 0 when
	 * none is known.
	 */
	uint64_t stored_serial;
	char stored_hash[65];
};

/* Loads the state into *out (released by the caller with state_release). */
int state_load(struct state_backend *b, struct state *out, struct vx_err *err) VX_WUR;

/*
 * Writes st and, on success, sets st->serial to the new serial. message
 * is a summary line and one line per action ("+ job.a create
 * projects/p/locations/us-central1/customJobs/123"). Here, for every
 * backend, the trailers are appended, in this order and each only when
 * known: "Vx-Config-Commit: <HEAD>", "Vx-Policy-Commit: <commit>"
 * (state_policy_commit), those of state_config_dirty,
 * "Vx-Actor: ", "Vx-Pull-Request: ", "Vx-CI-Run: " (state_audit),
 * "Vx-Allow-Over-Budget: " (state_audit_over_budget), and
 * "Vx-Serial: N"; the backend gets the whole message.
 *
 * A state whose content equals the one last loaded or written through
 * this backend at the same serial (serial and lock aside) is not written
 * at all: no commit, st->serial unchanged, 0. So an apply that changes
 * nothing leaves no trace in the history, and a plan saved before it
 * still applies.
 *
 * VX_ECONFLICT: the state moved since st was loaded, the lock is held by
 * someone else, or (git with a remote) the push was rejected.
 */
int state_write(struct state_backend *b, struct state *st, const char *message,
		struct vx_err *err) VX_WUR;

/*
 * The history of one address, newest first: each version of the record
 * that differs from the one before (git: commits changing jobs/NAME.json),
 * at most max entries (0: all). *out is freed with state_history_free().
 * address NULL: the history of every address that ever had a record, the
 * forgotten ones included, in one walk (git: each commit's entries in
 * address order).
 *
 * A version that cannot be read (a record that is not valid, a gcs history
 * object that is not one) is left out, and named in *skips (released and
 * filled; NULL: not reported), for the command to warn about: the stored
 * history cannot be repaired, and one bad version must not hide the rest.
 * Errors reading the repository or the bucket still fail the walk.
 */
int state_history(struct state_backend *b, const char *address, size_t max,
		  struct state_history_entry **out, size_t *n,
		  struct state_history_skips *skips, struct vx_err *err) VX_WUR;

/* Every address in the stored state, sorted. Free each string and the array. */
int state_list(struct state_backend *b, char ***out, size_t *n, struct vx_err *err) VX_WUR;

/* See the ops. *out is owned by the caller (free()), NULL when there is none. */
int state_revision(struct state_backend *b, char **out, struct vx_err *err) VX_WUR;
int state_config_commit(struct state_backend *b, char **out, struct vx_err *err) VX_WUR;

/*
 * Whether the stack's files in dir (the *.yaml and *.yml read by
 * stack_load) differ from the config commit: modified, staged, deleted, or
 * untracked and not ignored. *out = NULL when they do not (or when the
 * backend knows no config commit: file), else the changed files relative to
 * the repository ("stack/jobs.yaml, stack/new.yaml"; at most a few, then
 * "and N more"), owned by the caller.
 */
int state_config_changes(struct state_backend *b, const char *dir, char **out,
			 struct vx_err *err) VX_WUR;

/*
 * Says that what is applied is not the config commit's tree but
 * uncommitted changes whose declaration hash is decl_hash: every later
 * commit of the git backend then carries the trailers "Vx-Config-Dirty:
 * true" and "Vx-Decl-Hash: <decl_hash>". VX_ENOMEM.
 */
int state_config_dirty(struct state_backend *b, const char *decl_hash, struct vx_err *err) VX_WUR;

/*
 * Who writes and from where, for the trailers of every later write: the
 * actor ("alice", or "user@host"), the pull request's URL and the CI run's
 * URL, each NULL when unknown. The caller validates them (workflow/ci.h): they
 * must hold no newline. VX_ENOMEM.
 */
int state_audit(struct state_backend *b, const char *actor, const char *pr_url,
		const char *run_url, struct vx_err *err) VX_WUR;

/*
 * The commit of the `kind: Policy` in force (docs/policy.md), for the
 * "Vx-Policy-Commit: " trailer of every later write; NULL: none. VX_ENOMEM.
 */
int state_policy_commit(struct state_backend *b, const char *commit, struct vx_err *err) VX_WUR;

/*
 * An apply allowed past the Stack's budget (vxapply -allow-over-budget): every
 * later write carries "Vx-Allow-Over-Budget: <what>" ("by $1,500"), beside the
 * actor, so the history says who spent past the budget and by how much. what
 * must hold no newline. VX_ENOMEM.
 */
int state_audit_over_budget(struct state_backend *b, const char *what, struct vx_err *err) VX_WUR;

/*
 * `vx state restore`: when the stored state was deleted but its history
 * is still there (state_load then refuses with VX_ENOTFOUND, naming the
 * newest version), puts back the version of serial `serial` (0: the
 * newest) as it was, with its lineage, serial, records and journal, so
 * that nothing it recorded is created again. gcs: state.json is created
 * from history/N.json (ifGenerationMatch=0); git: the branch is created at
 * the commit its remote-tracking ref or its reflog names. Requires the
 * lease (state_lock_acquire). *what (owned by the caller) says what was
 * restored, for the command to print. VX_ECONFLICT: a state exists
 * (nothing to restore, or someone restored it first); VX_ENOTFOUND: no
 * history (or not that serial); VX_EINVAL: no lease held, or a backend
 * without history (file).
 */
int state_restore(struct state_backend *b, uint64_t serial, char **what,
		  struct vx_err *err) VX_WUR;

/* Frees the backend. It does NOT release a held lock (call state_lock_drop first). */
void state_backend_free(struct state_backend *b);

/*
 * For backend implementations: checks that st may replace the stored
 * state cur (NULL: nothing stored yet): same stack, serial and lineage,
 * and a lock that is ours or absent (or expired). Returns 0 or VX_ECONFLICT /
 * VX_EINVAL with the message to show.
 */
int state_backend_check_write(struct state_backend *b, const struct state *cur,
			      const struct state *st, struct vx_err *err) VX_WUR;

/*
 * For implementations whose load op reads and validates every record: the
 * list op. Loads the state (so a list of a broken state fails loudly, with
 * the load's error) and moves its addresses into *out, sorted, *n of them
 * (*out and *n are as state_list set them when there are none).
 * VX_ENOMEM, or the load's error.
 */
int state_backend_list_loaded(struct state_backend *b, char ***out, size_t *n,
			      struct vx_err *err) VX_WUR;

/* For implementations: fills the common part. VX_ENOMEM / VX_EINVAL (bad stack name). */
int state_backend_init(struct state_backend *b, const struct state_backend_ops *ops,
		       const struct vx_ctx *ctx, const char *stack, struct vx_err *err) VX_WUR;

#endif
