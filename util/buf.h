#ifndef VX_UTIL_BUF_H
#define VX_UTIL_BUF_H

/*
 * A growable, always NUL-terminated byte buffer (after git's strbuf and
 * curl's dynbuf). 'cap' bounds the length: a write past it fails with
 * VX_EINVAL instead of growing, which is how everything read from the
 * network or from files is kept to a size we chose. cap 0 means the
 * default of 1 GiB.
 */

#include <stdarg.h>
#include <stddef.h>

#include "util/err.h"

struct vx_buf {
	char *data;   /* NULL until the first write; then NUL-terminated */
	size_t len;
	size_t alloc;
	size_t cap;   /* maximum len; 0 = VX_BUF_DEFAULT_CAP */
};

#define VX_BUF_DEFAULT_CAP ((size_t)1 << 30)
#define VX_BUF_INIT { NULL, 0, 0, 0 }

int vx_buf_add(struct vx_buf *b, const void *data, size_t len) VX_WUR;
int vx_buf_adds(struct vx_buf *b, const char *s) VX_WUR;
int vx_buf_addc(struct vx_buf *b, char c) VX_WUR;
int vx_buf_printf(struct vx_buf *b, const char *fmt, ...) VX_PRINTF(2, 3) VX_WUR;
int vx_buf_vprintf(struct vx_buf *b, const char *fmt, va_list ap) VX_PRINTF(2, 0) VX_WUR;
/*
 * Appends s as a JSON string, quotes included: '"' and '\\' escaped, \n \r \t
 * as such, other control characters as \u00XX, everything else (UTF-8
 * included) as it is. NULL is written as "". This exact form feeds the
 * spec and declaration hashes, so changing it changes every stored hash.
 */
int vx_buf_add_json_str(struct vx_buf *b, const char *s) VX_WUR;
/* Empties the buffer, keeping its memory. */
void vx_buf_reset(struct vx_buf *b);
/* Returns the data ("" when empty), owned by the caller, and resets b. NULL only on OOM. */
char *vx_buf_detach(struct vx_buf *b);
/* Never NULL: "" when empty. Borrowed. */
const char *vx_buf_str(const struct vx_buf *b);
void vx_buf_release(struct vx_buf *b);

/* Reads a whole file into b, failing with VX_EINVAL past b->cap (or max if given non-zero). */
int vx_buf_read_file(struct vx_buf *b, const char *path, size_t max, struct vx_err *err) VX_WUR;

/* strdup that returns NULL for NULL. */
char *vx_strdup(const char *s);
/* Formatted allocation; NULL on OOM. */
char *vx_asprintf(const char *fmt, ...) VX_PRINTF(1, 2);

#endif
