#ifndef VX_STATE_LOCK_H
#define VX_STATE_LOCK_H

/*
 * The lease that lets one apply at a time mutate a stack.
 *
 * In the git backend the lease is a commit on its own ref,
 * refs/vx/lease/<stack> (lease.json: the holder, or null once released),
 * made by a compare-and-swap of that ref and, with a remote, a fetch before
 * and a non-force push after, so two runners cannot both win; a release is
 * a commit too, so the ref only ever fast-forwards. The state branch's
 * history then holds no lease commits. A branch written before the lease
 * ref kept the lease as "lock" in stack.json: while no lease ref exists,
 * that lock is the lease (honoured, and cleared by `vx unlock ID`), and the
 * next write drops it. In the file backend the lease is FILE.lock, created
 * with O_EXCL; in the gcs backend the object PATH/lease.json, created,
 * renewed and deleted with ifGenerationMatch.
 *
 * Which check closes which race: the lease's compare-and-swap keeps two
 * runners from holding it at once; state_lock_fence() keeps a holder
 * paused past its lease from sending; the state's own compare-and-swap
 * (on serial and lineage, and a write checks the lease is still ours)
 * keeps a stale holder from overwriting what the next one wrote.
 *
 * A lease names its holder (user, host, pid, operation), its start and its
 * expiry (default 10 minutes). The caller MUST call state_lock_heartbeat()
 * between steps while it holds the lease, or another apply will take it
 * over once it expires; and it MUST call state_lock_fence() right before
 * each mutating call, because a process paused past its lease (SIGSTOP, a
 * suspended laptop) learns of it only when it runs again: see
 * docs/leases.md. A lease whose holder is a dead process on this host (same
 * hostname, kill(pid, 0) fails with ESRCH) is taken over at once.
 */

#include <stdint.h>

#include "util/err.h"

struct state_backend;
struct state_lock;

#define STATE_LOCK_LEASE_MS (10 * 60 * 1000) /* vx apply: VX_LEASE_SECONDS */
#define STATE_LOCK_RETRY_MS 2000

struct state_lock_opts {
	const char *operation; /* "apply"; NULL: "apply" */
	int64_t lease_ms;      /* 0: STATE_LOCK_LEASE_MS */
	int64_t timeout_ms;    /* how long to wait for a held lock (-lock-timeout); 0: not at all */
	int64_t retry_ms;      /* how often to look again while waiting; 0: STATE_LOCK_RETRY_MS */
	/* The holder's identity; NULL/0: this process ($USER, gethostname(), getpid()). */
	const char *user;
	const char *host;
	int64_t pid;
	/* Appended to the "vx unlock ID" hint of the "state is locked" message:
	 * the stack directory as the user named it, already shell-quoted, so the
	 * hint works pasted where they ran vx. NULL: none (they ran it in the stack). */
	const char *unlock_args;
	/* Called once, before the first wait for a held lock (only with a
	 * timeout), with the holder (borrowed) and the timeout, so the command
	 * can say what it waits for. NULL: wait silently. */
	void (*on_wait)(void *ud, const struct state_lock *holder, int64_t timeout_ms);
	void *ud;
};

/*
 * Takes the lease. VX_ECONFLICT when someone else holds it (past the
 * timeout), with a message naming the holder:
 *   state is locked by alice@ci-runner-3 (pid 4242, apply) since
 *   2026-11-22T10:02:00Z, expires 10:17:00Z; lock id ID; wait with
 *   -lock-timeout or clear it with: vx unlock ID [UNLOCK_ARGS]
 * VX_ECANCELED when ctx->interrupted was set while waiting; VX_EINVAL if
 * this backend already holds a lease. Afterwards, load the state again.
 */
int state_lock_acquire(struct state_backend *b, const struct state_lock_opts *opts,
		       struct vx_err *err) VX_WUR;

/* Extends the held lease to now + lease. VX_ECONFLICT (and the lease is
 * forgotten) when it was taken over or cleared meanwhile. */
int state_lock_renew(struct state_backend *b, struct vx_err *err) VX_WUR;

/* Renews the held lease when more than a third of it has passed since the
 * last acquire or renewal that succeeded (so a renewal that fails has two
 * more chances before the lease runs out); otherwise does nothing. Errors
 * as state_lock_renew; VX_EINVAL when no lease is held. */
int state_lock_heartbeat(struct state_backend *b, struct vx_err *err) VX_WUR;

/*
 * Whether this holder may still send a mutating call: 0 while the
 * monotonic clock (vx_mono_ms) is before
 *
 *	confirmed + lease - margin,   margin = min(60 s, lease / 4)
 *
 * where confirmed is the monotonic time taken just before the acquire or
 * renewal that succeeded. Otherwise VX_ECONFLICT:
 *   the state lease expired while this apply was paused (last renewed 5s
 *   ago, lease 2s): stopping without sending; another apply may hold it now
 * (or "...: no state lease is held" when there is none). It reads only
 * atomics and the clock, so worker threads may call it while the main
 * thread renews; it never touches the store.
 */
int state_lock_fence(const struct state_backend *b, struct vx_err *err) VX_WUR;

/* The margin of state_lock_fence() for a lease of lease_ms. */
int64_t state_lock_margin_ms(int64_t lease_ms);

/* Clears the held lease (no-op without one). VX_ECONFLICT when it was
 * already taken over (the lease is forgotten); on other errors it is kept
 * so the caller may retry. */
int state_lock_drop(struct state_backend *b, struct vx_err *err) VX_WUR;

/* `vx unlock ID`: clears the current lock only if its id is id.
 * VX_ENOTFOUND: not locked; VX_ECONFLICT: another id (named in the message). */
int state_unlock(struct state_backend *b, const char *id, struct vx_err *err) VX_WUR;

/* The current lock (a copy the caller frees with state_lock_free), or *out = NULL. */
int state_lock_current(struct state_backend *b, struct state_lock **out,
		       struct vx_err *err) VX_WUR;

/* The lease held by this backend, or NULL. Borrowed. */
const struct state_lock *state_lock_held(const struct state_backend *b);

/* The "state is locked by ..." text for l, owned by the caller; NULL on OOM. */
char *state_lock_describe(const struct state_lock *l);

/* 1 if l is held by a process on this host that no longer exists. */
int state_lock_holder_dead(const struct state_lock *l);

#endif
