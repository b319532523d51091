#ifndef VX_UTIL_TESTHOOK_H
#define VX_UTIL_TESTHOOK_H

/*
 * The one seam for tests that must catch vx in the middle of something:
 * VX_TEST_PAUSE, read from ctx's environment (vx_getenv), names a point
 * where the process stops itself (SIGSTOP) until a SIGCONT, as a suspended
 * laptop would. The points:
 *
 *	before-send  an apply's first fence check, right before its first
 *	             mutating request (workflow/applying.c; vx apply, vx watch)
 *	ref-update   a git backend's first ref update, holding the repository's
 *	             writer lock (state/state_git.c; vx apply's lease)
 *
 * cmd/ refuses a value its command has no point for. Unset in real use:
 * then no point is armed and nothing here does anything.
 */

struct vx_ctx;

/* Whether VX_TEST_PAUSE (as ctx shows the environment) names point. */
int vx_test_hook_armed(const struct vx_ctx *ctx, const char *point);

/* At point: when it is armed, stops the process until a SIGCONT and returns 1; else 0.
 * Stopping once, not at every pass, is the caller's to keep. */
int vx_test_hook(const struct vx_ctx *ctx, const char *point);

#endif
