/*
 * Taking, renewing and releasing the lease, on top of a backend's
 * lock_read/lock_swap (a compare-and-swap on the lock).
 */
#include "state/lock.h"

#include <pwd.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state/backend.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

/* A swap that failed because the branch moved under us is tried again this often at once. */
#define MAX_RACES 5

/* The fence's margin never exceeds this: the time a request may take to
 * reach the server once sent, plus the clock skew allowed between runners. */
#define MAX_MARGIN_MS (60 * 1000)

/* Records a lease confirmed at monotonic time mono (see state_lock_fence). */
static void fence_set(struct state_backend *b, int64_t mono, int64_t lease_ms)
{
	atomic_store(&b->fence_confirmed_ms, mono);
	atomic_store(&b->fence_lease_ms, lease_ms);
}

/* The held lease is gone: the fence refuses from now on. */
static void forget_held(struct state_backend *b)
{
	atomic_store(&b->fence_lease_ms, 0);
	state_lock_free(b->held);
	b->held = NULL;
}

static void this_host(char *out, size_t n)
{
	if (gethostname(out, n) != 0 || !*out)
		snprintf(out, n, "localhost");
	out[n - 1] = '\0';
}

int state_lock_holder_dead(const struct state_lock *l)
{
	char host[256];

	if (!l || !l->host || l->pid <= 0 || l->pid > INT_MAX)
		return 0;
	this_host(host, sizeof(host));
	if (strcmp(host, l->host) != 0)
		return 0;
	/* EPERM means it exists but belongs to someone else: alive. */
	return kill((pid_t)l->pid, 0) == -1 && errno == ESRCH;
}

/* The hint is last and unquoted so it can be pasted whole, whatever unlock_args holds. */
static char *describe(const struct state_lock *l, const char *unlock_args)
{
	char since[STATE_TIME_MAX], until[STATE_TIME_MAX];
	const char *exp = until;

	state_time_format(l->started_ms, since);
	state_time_format(l->expires_ms, until);
	/* Same day: the expiry's time of day is enough. */
	if (strncmp(since, until, 11) == 0)
		exp = until + 11;
	return vx_asprintf("state is locked by %s@%s (pid %lld, %s) since %s, expires %s; "
			   "lock id %s; wait with -lock-timeout or clear it with: vx unlock %s%s%s",
			   l->user, l->host, (long long)l->pid, l->operation, since, exp, l->id,
			   l->id, unlock_args ? " " : "", unlock_args ? unlock_args : "");
}

char *state_lock_describe(const struct state_lock *l)
{
	return describe(l, NULL);
}

/* Who takes the lease: $USER, $LOGNAME, else the account of our uid (CI
 * runners often set neither), so the holder is never just "unknown". */
static const char *env_user(const struct vx_ctx *ctx)
{
	const char *u = vx_getenv(ctx, "USER");
	struct passwd *pw;

	if (!u || !*u)
		u = vx_getenv(ctx, "LOGNAME");
	if ((!u || !*u) && (pw = getpwuid(getuid())) != NULL)
		u = pw->pw_name;
	return u && *u ? u : "unknown";
}

/* Makes the lease we would take. */
static int make_lock(struct state_backend *b, const struct state_lock_opts *o,
		     const struct state_lock *prev, struct state_lock *out, struct vx_err *err)
{
	char host[256], id[33], *salt = NULL;
	int64_t now = vx_now_ms(b->ctx);
	int rc;

	memset(out, 0, sizeof(*out));
	this_host(host, sizeof(host));
	out->pid = o->pid ? o->pid : (int64_t)getpid();
	out->user = vx_strdup(o->user ? o->user : env_user(b->ctx));
	out->host = vx_strdup(o->host ? o->host : host);
	out->operation = vx_strdup(o->operation ? o->operation : "apply");
	salt = vx_asprintf("%s/%s/%lld/%s", prev ? prev->id : "", out->host ? out->host : "",
			   (long long)out->pid, b->stack);
	if (!out->user || !out->host || !out->operation || !salt) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_random_hex(b->ctx, salt, id, err);
	if (rc < 0)
		goto done;
	out->id = vx_strdup(id);
	if (!out->id) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	out->started_ms = now;
	out->expires_ms = now + (o->lease_ms > 0 ? o->lease_ms : STATE_LOCK_LEASE_MS);
done:
	free(salt);
	if (rc < 0)
		state_lock_release(out);
	return rc;
}

/*
 * Whether the lease cur (NULL: none) may be taken: 1, with *msg the commit
 * message that takes it (NULL when out of memory) and a takeover of an
 * expired lease or of a dead holder's said on the log; 0 while its holder
 * lives.
 */
static int lock_takeable(struct state_backend *b, const struct state_lock *cur,
			 const struct state_lock *next, char **msg)
{
	const char *why;

	*msg = NULL;
	if (!cur) {
		*msg = vx_asprintf("vx lock: %s by %s@%s (pid %lld)", next->operation, next->user,
				   next->host, (long long)next->pid);
		return 1;
	}
	if (!(cur->expires_ms <= vx_now_ms(b->ctx) || state_lock_holder_dead(cur)))
		return 0;
	why = cur->expires_ms <= vx_now_ms(b->ctx) ? "expired" : "dead";
	vx_log(b->ctx, VX_LOG_WARN, "taking over the %s lock %s of %s@%s (pid %lld, %s)", why, cur->id,
	       cur->user, cur->host, (long long)cur->pid, cur->operation);
	*msg = vx_asprintf("vx lock: %s by %s@%s (pid %lld), taking over the %s lock %s of %s@%s (pid %lld)",
			   next->operation, next->user, next->host, (long long)next->pid, why, cur->id,
			   cur->user, cur->host, (long long)cur->pid);
	return 1;
}

/*
 * Swaps next in where cur (NULL: no lease) is; on success next becomes b's
 * held lease (next is left empty), valid from the monotonic time confirmed.
 * VX_ECONFLICT when someone else moved first.
 */
static int lock_take(struct state_backend *b, const struct state_lock_opts *o,
		     const struct state_lock *cur, struct state_lock *next, const char *msg,
		     int64_t confirmed, struct vx_err *err)
{
	int rc = b->ops->lock_swap(b, cur ? cur->id : NULL, next, msg, err);

	if (rc != 0)
		return rc;
	b->held = malloc(sizeof(*b->held));
	if (!b->held)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	*b->held = *next;
	memset(next, 0, sizeof(*next));
	b->lease_ms = o->lease_ms > 0 ? o->lease_ms : STATE_LOCK_LEASE_MS;
	fence_set(b, confirmed, b->lease_ms);
	return 0;
}

/*
 * The lease cur is held by a live holder: gives up naming it (VX_ECONFLICT)
 * when no wait is allowed or the wait is over, stops on an interrupt, else
 * says once that it waits (o->on_wait) and sleeps until the next look.
 * 0 to look again.
 */
static int lock_wait(struct state_backend *b, const struct state_lock_opts *o,
		     const struct state_lock *cur, int64_t start, int *told, struct vx_err *err)
{
	int64_t retry = o->retry_ms > 0 ? o->retry_ms : STATE_LOCK_RETRY_MS, left;
	char *who = describe(cur, o->unlock_args);
	int rc = 0;

	if (o->timeout_ms <= 0 || vx_mono_ms(b->ctx) - start >= o->timeout_ms) {
		if (o->timeout_ms > 0)
			rc = vx_err_set(err, VX_ECONFLICT, "gave up after waiting %llds: %s",
					(long long)((vx_mono_ms(b->ctx) - start) / 1000),
					who ? who : "state is locked");
		else
			rc = vx_err_set(err, VX_ECONFLICT, "%s", who ? who : "state is locked");
		goto done;
	}
	if (vx_interrupted(b->ctx)) {
		rc = vx_err_set(err, VX_ECANCELED, "interrupted while waiting for the lock");
		goto done;
	}
	if (o->on_wait && !*told)
		o->on_wait(o->ud, cur, o->timeout_ms);
	*told = 1;
	vx_log(b->ctx, VX_LOG_DEBUG, "waiting for the lock: %s", who ? who : "");
	left = o->timeout_ms - (vx_mono_ms(b->ctx) - start);
	vx_sleep_ms(b->ctx, left < retry ? left : retry);
done:
	free(who);
	return rc;
}

/* Reads the lease, takes it when free, expired or its holder dead, else
 * waits for it; a lost race (someone swapped first) looks again, at most
 * MAX_RACES times in a row. */
int state_lock_acquire(struct state_backend *b, const struct state_lock_opts *opts,
		       struct vx_err *err)
{
	static const struct state_lock_opts defaults = { 0 };
	const struct state_lock_opts *o = opts ? opts : &defaults;
	struct state_lock *cur = NULL, next = { 0 };
	int64_t start = vx_mono_ms(b->ctx), confirmed;
	char *msg = NULL;
	int races = 0, rc, told = 0;

	if (b->held)
		return vx_err_set(err, VX_EINVAL, "locking state: lock %s is already held",
				  b->held->id);
	for (;;) {
		state_lock_free(cur);
		cur = NULL;
		state_lock_release(&next);
		free(msg);
		msg = NULL;
		rc = b->ops->lock_read(b, &cur, err);
		if (rc < 0)
			goto done;
		/* Before make_lock reads the wall clock for the expiry, so the
		 * validity we count from it is never later than the expiry others see. */
		confirmed = vx_mono_ms(b->ctx);
		rc = make_lock(b, o, cur, &next, err);
		if (rc < 0)
			goto done;
		if (lock_takeable(b, cur, &next, &msg)) {
			if (!msg) {
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
				goto done;
			}
			rc = lock_take(b, o, cur, &next, msg, confirmed, err);
			if (rc != VX_ECONFLICT || ++races >= MAX_RACES)
				goto done;
			continue; /* someone moved first: look at what they did */
		}
		if ((rc = lock_wait(b, o, cur, start, &told, err)) < 0)
			goto done;
		races = 0;
	}
done:
	state_lock_free(cur);
	state_lock_release(&next);
	free(msg);
	return rc;
}

/* Why a swap on our lease failed: what holds the state now. */
static int lost(struct state_backend *b, const char *what, struct vx_err *err)
{
	struct state_lock *cur = NULL;
	struct vx_err e2 = VX_ERR_INIT;
	char *who = NULL;
	int rc;

	if (b->ops->lock_read(b, &cur, &e2) == 0 && cur)
		who = state_lock_describe(cur);
	rc = vx_err_set(err, VX_ECONFLICT, "%s: lock %s was lost: %s", what, b->held->id,
			who ? who : "the state is no longer locked");
	free(who);
	state_lock_free(cur);
	vx_err_release(&e2);
	forget_held(b);
	return rc;
}

int state_lock_renew(struct state_backend *b, struct vx_err *err)
{
	struct state_lock next;
	char until[STATE_TIME_MAX], *msg = NULL;
	int64_t confirmed;
	int rc;

	if (!b->held)
		return vx_err_set(err, VX_EINVAL, "renewing the lock: no lock is held");
	if (state_lock_copy(&next, b->held) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* Taken before the wall clock that makes the new expiry: see acquire. */
	confirmed = vx_mono_ms(b->ctx);
	next.expires_ms = vx_now_ms(b->ctx) + b->lease_ms;
	state_time_format(next.expires_ms, until);
	msg = vx_asprintf("vx lock: renewed %s until %s", next.id, until);
	if (!msg) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = b->ops->lock_swap(b, b->held->id, &next, msg, err);
	if (rc == VX_ECONFLICT) {
		rc = lost(b, "renewing the lock", err);
		goto done;
	}
	if (rc < 0)
		goto done;
	b->held->expires_ms = next.expires_ms;
	fence_set(b, confirmed, b->lease_ms);
done:
	free(msg);
	state_lock_release(&next);
	return rc;
}

int state_lock_drop(struct state_backend *b, struct vx_err *err)
{
	char *msg;
	int rc;

	if (!b->held)
		return 0;
	msg = vx_asprintf("vx unlock: released %s", b->held->id);
	if (!msg)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = b->ops->lock_swap(b, b->held->id, NULL, msg, err);
	free(msg);
	if (rc == VX_ECONFLICT)
		return lost(b, "releasing the lock", err);
	if (rc == 0)
		forget_held(b);
	return rc;
}

int state_unlock(struct state_backend *b, const char *id, struct vx_err *err)
{
	struct state_lock *cur = NULL;
	char *msg = NULL;
	int rc;

	rc = b->ops->lock_read(b, &cur, err);
	if (rc < 0)
		goto done;
	if (!cur) {
		rc = vx_err_set(err, VX_ENOTFOUND, "unlocking: the state of stack %s is not locked",
				b->stack);
		goto done;
	}
	if (!id || strcmp(cur->id, id) != 0) {
		rc = vx_err_set(err, VX_ECONFLICT,
				"unlocking: lock id %.64s does not match the current lock %s held by "
				"%s@%s (pid %lld, %s); nothing was changed",
				id ? id : "(none)", cur->id, cur->user, cur->host, (long long)cur->pid,
				cur->operation);
		goto done;
	}
	msg = vx_asprintf("vx unlock: cleared lock %s of %s@%s (pid %lld, %s)", cur->id, cur->user,
			  cur->host, (long long)cur->pid, cur->operation);
	if (!msg) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = b->ops->lock_swap(b, cur->id, NULL, msg, err);
	if (rc == 0 && b->held && strcmp(b->held->id, id) == 0)
		forget_held(b);
done:
	free(msg);
	state_lock_free(cur);
	return rc;
}

int state_lock_current(struct state_backend *b, struct state_lock **out, struct vx_err *err)
{
	*out = NULL;
	return b->ops->lock_read(b, out, err);
}

const struct state_lock *state_lock_held(const struct state_backend *b)
{
	return b->held;
}

int64_t state_lock_margin_ms(int64_t lease_ms)
{
	return lease_ms / 4 < MAX_MARGIN_MS ? lease_ms / 4 : MAX_MARGIN_MS;
}

int state_lock_heartbeat(struct state_backend *b, struct vx_err *err)
{
	int64_t age;

	if (!b->held)
		return vx_err_set(err, VX_EINVAL, "renewing the lock: no lock is held");
	age = vx_mono_ms(b->ctx) - atomic_load(&b->fence_confirmed_ms);
	if (age >= 0 && age <= b->lease_ms / 3)
		return 0;
	return state_lock_renew(b, err);
}

int state_lock_fence(const struct state_backend *b, struct vx_err *err)
{
	int64_t lease = atomic_load(&b->fence_lease_ms);
	int64_t age = vx_mono_ms(b->ctx) - atomic_load(&b->fence_confirmed_ms);

	if (lease <= 0)
		return vx_err_set(err, VX_ECONFLICT, "no state lease is held: stopping without sending");
	/* A clock that went backwards (age < 0) cannot be: a monotonic clock
	 * never does, and a test clock that does proves nothing. Refuse. */
	if (age >= 0 && age < lease - state_lock_margin_ms(lease))
		return 0;
	return vx_err_set(err, VX_ECONFLICT, "the state lease expired while this apply was paused "
			  "(last renewed %" PRId64 "s ago, lease %" PRId64 "s): stopping without "
			  "sending; another apply may hold it now", age / 1000, lease / 1000);
}
