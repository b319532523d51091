#include "util/ctx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"
#include "util/banned.h"

int64_t vx_clock_real_now_ms(void *ud)
{
	struct timespec ts;

	(void)ud;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * CLOCK_BOOTTIME where there is one (Linux): unlike CLOCK_MONOTONIC it goes
 * on counting while the machine is suspended, so a lease measured on it
 * runs out during a suspend as it does for the other runners (state_lock_fence).
 */
int64_t vx_clock_real_mono_ms(void *ud)
{
	struct timespec ts;

	(void)ud;
#ifdef CLOCK_BOOTTIME
	if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void vx_clock_real_sleep_ms(void *ud, int64_t ms)
{
	struct timespec ts;

	(void)ud;
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	/* EINTR (a signal) ends the sleep early; callers re-check vx_interrupted(). */
	nanosleep(&ts, NULL);
}

const char *vx_getenv(const struct vx_ctx *ctx, const char *name)
{
	/* The one getenv of library code: what cmd/ and the tests can replace. */
	return ctx && ctx->getenv ? ctx->getenv(ctx->env_ud, name) : getenv(name);
}

void vx_ctx_init(struct vx_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->clock.now_ms = vx_clock_real_now_ms;
	ctx->clock.mono_ms = vx_clock_real_mono_ms;
	ctx->clock.sleep_ms = vx_clock_real_sleep_ms;
	ctx->log_level = VX_LOG_WARN;
}

int64_t vx_now_ms(const struct vx_ctx *ctx)
{
	return ctx->clock.now_ms(ctx->clock.ud);
}

int64_t vx_mono_ms(const struct vx_ctx *ctx)
{
	return ctx->clock.mono_ms(ctx->clock.ud);
}

void vx_sleep_ms(const struct vx_ctx *ctx, int64_t ms)
{
	ctx->clock.sleep_ms(ctx->clock.ud, ms);
}

int vx_interrupted(const struct vx_ctx *ctx)
{
	return ctx->interrupted && *ctx->interrupted >= 1;
}

int vx_abandoning(const struct vx_ctx *ctx)
{
	return ctx->interrupted && *ctx->interrupted >= 2;
}

void vx_log(const struct vx_ctx *ctx, int level, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	if (!ctx || !ctx->log || level > ctx->log_level)
		return;
	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		ctx->log(ctx->log_ud, level, vx_buf_str(&b));
	vx_buf_release(&b);
}
