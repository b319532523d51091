#define VX_ERR_IMPL /* the definitions below, not the analyzer's model of them (err.h) */
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

int vx_err_setv(struct vx_err *err, int code, const char *fmt, va_list ap)
{
	struct vx_buf b = VX_BUF_INIT;

	if (!err)
		return code;
	if (vx_buf_vprintf(&b, fmt, ap) < 0) {
		vx_buf_release(&b);
		free(err->msg);
		err->msg = NULL;
		err->code = code;
		return code;
	}
	free(err->msg);
	err->msg = vx_buf_detach(&b);
	err->code = code;
	return code;
}

int vx_err_set(struct vx_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vx_err_setv(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int vx_err_wrap(struct vx_err *err, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int code;

	if (!err)
		return VX_EIO;
	code = err->code ? err->code : VX_EIO;
	va_start(ap, fmt);
	if (vx_buf_vprintf(&b, fmt, ap) == 0 &&
	    vx_buf_printf(&b, ": %s", vx_err_msg(err)) == 0) {
		free(err->msg);
		err->msg = vx_buf_detach(&b);
	}
	va_end(ap);
	vx_buf_release(&b);
	err->code = code;
	return code;
}

const char *vx_err_code_name(int code)
{
	switch (code) {
	case VX_OK: return "ok";
	case VX_EINVAL: return "invalid input";
	case VX_ENOTFOUND: return "not found";
	case VX_ECONFLICT: return "conflict";
	case VX_EAUTH: return "authentication failed";
	case VX_ERETRY: return "temporary failure";
	case VX_EUNCERTAIN: return "outcome unknown";
	case VX_EIO: return "input/output error";
	case VX_ENOMEM: return "out of memory";
	case VX_EAPI: return "API error";
	case VX_ECANCELED: return "interrupted";
	case VX_EDENIED: return "permission denied";
	default: return "error";
	}
}

const char *vx_err_msg(const struct vx_err *err)
{
	if (!err)
		return "error";
	if (err->msg)
		return err->msg;
	return vx_err_code_name(err->code);
}

void vx_err_release(struct vx_err *err)
{
	if (!err)
		return;
	free(err->msg);
	err->msg = NULL;
	err->code = 0;
}
