#ifndef VX_UTIL_CTX_H
#define VX_UTIL_CTX_H

/*
 * The context passed down from cmd/ to every module: no hidden globals.
 * It carries the clock (so tests can control time), the log sink (library
 * code never writes to stdout/stderr itself: it logs through here and cmd/
 * decides where lines go), and the interrupt flag set by SIGINT.
 */

#include <signal.h>
#include <stdint.h>

#include "util/err.h"

enum vx_log_level { VX_LOG_ERROR = 0, VX_LOG_WARN = 1, VX_LOG_INFO = 2, VX_LOG_DEBUG = 3 };

struct vx_clock {
	/* Wall-clock time in milliseconds since the Unix epoch. */
	int64_t (*now_ms)(void *ud);
	/* Monotonic milliseconds, for timeouts, rate limits and the state lease;
	 * the real one counts through a suspend (CLOCK_BOOTTIME). */
	int64_t (*mono_ms)(void *ud);
	/* Sleeps; may return early when interrupted. */
	void (*sleep_ms)(void *ud, int64_t ms);
	void *ud;
};

struct vx_ctx {
	struct vx_clock clock;
	int log_level; /* messages above this level are dropped */
	void (*log)(void *ud, int level, const char *msg);
	void *log_ud;
	/*
	 * Counted up by cmd/'s SIGINT handler. 1: stop starting new work, but let
	 * requests already sent finish (a create cut off mid-flight may still
	 * make a job). 2 or more: abandon requests in flight too.
	 */
	volatile sig_atomic_t *interrupted;
	/* Deterministic randomness for tests (backoff jitter, request ids); 0 = seed from the OS. */
	uint64_t seed;
	/*
	 * The command's time limit: a monotonic time (vx_mono_ms) after which
	 * the HTTP layer sends nothing more and cuts what is in flight, so a
	 * server that answers slowly forever cannot hold a command forever.
	 * 0 = none. time_limit_ms is the limit it came from, for messages.
	 */
	int64_t deadline_ms;
	int64_t time_limit_ms;
	/*
	 * The environment library code sees, read with vx_getenv: NULL (as
	 * vx_ctx_init leaves it) for the process's; a test sets its own.
	 */
	const char *(*getenv)(void *ud, const char *name);
	void *env_ud;
	/*
	 * How long an apply waits for a reservation whose jobs it cancelled to
	 * have no VM left before deleting it (cmd/ reads VX_RESERVATION_WAIT_SECONDS).
	 * 0: the default, 300 s; below 0: no wait (one look).
	 */
	int64_t reservation_wait_ms;
	/*
	 * How long an apply waits for a run it cancelled after resubmit.maxQueued
	 * to end before it creates the next attempt (cmd/ reads
	 * VX_CANCEL_WAIT_SECONDS). 0: the default, 120 s; below 0: no wait (one
	 * look). Still cancelling then: the next apply or watch cycle creates it.
	 */
	int64_t cancel_wait_ms;
};

/* Fills ctx with the real clock, no log sink (logs dropped), level WARN. */
void vx_ctx_init(struct vx_ctx *ctx);

int64_t vx_now_ms(const struct vx_ctx *ctx);
int64_t vx_mono_ms(const struct vx_ctx *ctx);
void vx_sleep_ms(const struct vx_ctx *ctx, int64_t ms);
/* Asked to stop: start nothing new. */
int vx_interrupted(const struct vx_ctx *ctx);
/* Asked twice: abandon requests in flight as well. */
int vx_abandoning(const struct vx_ctx *ctx);

/* The environment variable name as ctx shows it (ctx NULL: the process's), or NULL when unset. */
const char *vx_getenv(const struct vx_ctx *ctx, const char *name);

/* Logs a line (no trailing newline needed) if level <= ctx->log_level. */
void vx_log(const struct vx_ctx *ctx, int level, const char *fmt, ...) VX_PRINTF(3, 4);

/* The system clock functions, for code that builds its own struct vx_clock. */
int64_t vx_clock_real_now_ms(void *ud);
int64_t vx_clock_real_mono_ms(void *ud);
void vx_clock_real_sleep_ms(void *ud, int64_t ms);

#endif
