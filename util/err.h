#ifndef VX_UTIL_ERR_H
#define VX_UTIL_ERR_H

/*
 * One error type for all of vx. Library functions return 0 on success or one
 * of the negative VX_E* codes below, and fill a caller-provided struct vx_err
 * with a message built as "context: cause". Only cmd/ prints it.
 *
 *	struct vx_err err = VX_ERR_INIT;
 *	if (thing_do(..., &err) < 0)
 *		fprintf(stderr, "vx: %s\n", err.msg);
 *	vx_err_release(&err);
 */

#include <stdarg.h>

#define VX_WUR __attribute__((warn_unused_result))
#define VX_PRINTF(f, a) __attribute__((format(printf, f, a)))

enum {
	VX_OK = 0,
	VX_EINVAL = -1,     /* bad input (config, arguments, a response we cannot parse) */
	VX_ENOTFOUND = -2,  /* the thing asked for does not exist */
	VX_ECONFLICT = -3,  /* someone else moved first: lock held, ref moved, etag/generation mismatch */
	VX_EAUTH = -4,      /* no credentials, or they were refused */
	VX_ERETRY = -5,     /* transient: worth trying again later */
	VX_EUNCERTAIN = -6, /* a mutation was sent and its outcome is unknown */
	VX_EIO = -7,        /* local I/O or a library failure */
	VX_ENOMEM = -8,
	VX_EAPI = -9,       /* the API answered with a non-retryable error */
	VX_ECANCELED = -10, /* interrupted by the user */
	VX_EDENIED = -11,   /* the API refused the caller (HTTP 403): a permission is
			     * missing or the API is not enabled in the project */
};

struct vx_err {
	int code;  /* one of VX_E*, 0 when unset */
	char *msg; /* owned; NULL when unset */
};

#define VX_ERR_INIT { 0, NULL }

/* Sets err (if not NULL) and returns code, so callers can write
 * 'return vx_err_set(err, VX_EINVAL, "...")'. Replaces an earlier message. */
int vx_err_set(struct vx_err *err, int code, const char *fmt, ...) VX_PRINTF(3, 4);
int vx_err_setv(struct vx_err *err, int code, const char *fmt, va_list ap) VX_PRINTF(3, 0);
#if defined(__clang_analyzer__) && !defined(VX_ERR_IMPL)
/* clang-tidy's analyzer sees one file at a time: tell it that vx_err_set returns its code,
 * so that after 'return vx_err_set(err, VX_ENOMEM, ...)' it does not follow the caller on
 * as if that were a success (make lint; never in a build). */
#define vx_err_set(err, code, ...) (vx_err_set((err), (code), __VA_ARGS__), (code))
#endif

/* Prefixes the current message with context: "context: old message". Keeps
 * the code. Returns err->code (or VX_EIO if none was set). */
int vx_err_wrap(struct vx_err *err, const char *fmt, ...) VX_PRINTF(2, 3);

/* Returns the message, or a generic text for the code when none was set. */
const char *vx_err_msg(const struct vx_err *err);

/* Frees the message and resets to VX_ERR_INIT. */
void vx_err_release(struct vx_err *err);

/* A short English name for a code ("not found", "conflict", ...). */
const char *vx_err_code_name(int code);

#endif
