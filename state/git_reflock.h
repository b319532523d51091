#ifndef VX_STATE_GIT_REFLOCK_H
#define VX_STATE_GIT_REFLOCK_H
/*
 * vx's own lock around each ref update in a repository (state/state_git.c).
 *
 * libgit2 updates a ref under a lock file (refs/heads/X.lock) that it holds
 * for milliseconds. A writer killed in that moment leaves the file behind
 * and every later write fails until someone removes it; a writer that is
 * only paused (SIGSTOP, a suspended laptop, a swapping VM) still holds it
 * and, once resumed, renames it into place. Removing such a file "because
 * it is old" lets a second writer move the ref while the first one is
 * half-way through its update: the two can then both believe they won.
 *
 * So vx proves a lock file abandoned before removing it. Every vx ref
 * update runs under an flock(2) on COMMONDIR/vx-ref-writer, and that file
 * records who holds it (pid, host, boot id, process start time, ref),
 * cleared when the update ends. The kernel drops an flock when its process
 * dies, never while it is only stopped. So:
 *
 *  - the flock is busy: another vx process is in the middle of a ref
 *    update, alive (perhaps paused). Wait for it, never take over.
 *  - the flock is free but a record is left: its writer died mid-update.
 *    If the record is from this host and boot and that process is gone
 *    (or its pid now names a process started at another time), a lock
 *    file of the ref it names is its leftover and may be removed.
 *
 * A lock file no dead vx process left (a git command's, or a vx on
 * another host sharing the repository over a network file system) is
 * removed only when older than REF_LOCK_ABANDONED_MS (state_git.c).
 *
 * On a file system without flock (the call fails with ENOLCK, EOPNOTSUPP
 * or EINVAL) nothing can be proved: the update goes on without it.
 */
#include <stdint.h>

struct vx_ctx;

struct git_reflock {
	int fd;          /* COMMONDIR/vx-ref-writer, -1 when it could not be opened */
	int locked;      /* we hold its flock (and our record is in it) */
	char *left;      /* the record a dead writer left (owned), or NULL */
	char *left_ref;  /* the ref that writer was updating (owned), or NULL */
	char *busy;      /* why git_reflock_take gave up (owned), or NULL */
};

#define GIT_REFLOCK_INIT { -1, 0, NULL, NULL, NULL }

/*
 * Takes the writer lock of the repository whose common directory is
 * commondir (git_repository_commondir, with its trailing slash) before
 * updating ref, waiting up to wait_ms (ctx's clock) while another vx
 * process holds it; *waited_ms is increased by the time waited. 0 when
 * taken, or when locking is not available there (then l->locked is 0);
 * -1 when another process held it all along: l->busy then says who (a
 * sentence, no trailing period).
 */
int git_reflock_take(struct git_reflock *l, const struct vx_ctx *ctx, const char *commondir,
		     const char *ref, int64_t wait_ms, int64_t *waited_ms);

/*
 * Whether the last vx holder died while updating a ref (see above): 1,
 * with *ref the ref it was updating (a valid name under refs/; a record
 * naming anything else proves nothing) and *who a description ("vx (pid
 * 123 on host) updating refs/..."), both borrowed from l; 0 when not
 * proved. Its lock file of that ref, if any, is its leftover, whichever
 * ref the caller updates: taking the writer lock replaced the record.
 */
int git_reflock_left_by_dead(const struct git_reflock *l, const char **ref, const char **who);

/* Clears our record, drops the flock and frees what l holds; l is reusable. */
void git_reflock_release(struct git_reflock *l);

/*
 * Whether the process described by (pid, host, boot id, start time) is
 * provably gone: on this host, and either booted since (another boot id),
 * no process has that pid, or the one that has it started at another time.
 * An empty boot or start (unknown) does not prove anything either way.
 * Exposed for tests.
 */
int git_reflock_process_dead(long long pid, const char *host, const char *boot,
			     unsigned long long start);

#endif
