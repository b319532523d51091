#include "util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/banned.h"

static size_t buf_cap(const struct vx_buf *b)
{
	return b->cap ? b->cap : VX_BUF_DEFAULT_CAP;
}

static int buf_grow(struct vx_buf *b, size_t extra)
{
	size_t want, n;
	char *p;

	if (extra > buf_cap(b) || b->len > buf_cap(b) - extra)
		return VX_EINVAL;
	want = b->len + extra + 1;
	if (want <= b->alloc)
		return 0;
	n = b->alloc ? b->alloc : 64;
	while (n < want)
		n = n > ((size_t)-1) / 2 ? want : n * 2;
	p = realloc(b->data, n);
	if (!p)
		return VX_ENOMEM;
	b->data = p;
	b->alloc = n;
	return 0;
}

int vx_buf_add(struct vx_buf *b, const void *data, size_t len)
{
	int rc = buf_grow(b, len);

	if (rc < 0)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int vx_buf_adds(struct vx_buf *b, const char *s)
{
	return vx_buf_add(b, s, strlen(s));
}

int vx_buf_addc(struct vx_buf *b, char c)
{
	return vx_buf_add(b, &c, 1);
}

int vx_buf_vprintf(struct vx_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, rc;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return VX_EINVAL;
	rc = buf_grow(b, (size_t)n);
	if (rc < 0)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int vx_buf_printf(struct vx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void vx_buf_reset(struct vx_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *vx_buf_detach(struct vx_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = b->alloc = 0;
	return p;
}

const char *vx_buf_str(const struct vx_buf *b)
{
	return b->data ? b->data : "";
}

void vx_buf_release(struct vx_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->alloc = 0;
}

int vx_buf_read_file(struct vx_buf *b, const char *path, size_t max, struct vx_err *err)
{
	char chunk[65536];
	FILE *f = NULL;
	size_t n, saved = b->cap;
	int rc = 0;

	if (max)
		b->cap = max;
	f = fopen(path, "rb");
	if (!f) {
		rc = vx_err_set(err, errno == ENOENT ? VX_ENOTFOUND : VX_EIO,
				"%s: %s", path, strerror(errno));
		goto done;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		rc = vx_buf_add(b, chunk, n);
		if (rc == VX_EINVAL) {
			rc = vx_err_set(err, VX_EINVAL, "%s: file is larger than %zu bytes",
					path, buf_cap(b));
			goto done;
		}
		if (rc < 0) {
			rc = vx_err_set(err, rc, "%s: out of memory", path);
			goto done;
		}
	}
	if (ferror(f))
		rc = vx_err_set(err, VX_EIO, "%s: read error", path);
done:
	if (f)
		fclose(f);
	b->cap = saved;
	return rc;
}

/* Whether c goes into a JSON string as itself. */
static int json_plain(unsigned char c)
{
	return c >= 0x20 && c != '"' && c != '\\';
}

int vx_buf_add_json_str(struct vx_buf *b, const char *s)
{
	const unsigned char *p;
	int rc = vx_buf_addc(b, '"');

	for (p = (const unsigned char *)(s ? s : ""); rc == 0 && *p; p++) {
		size_t run = 0;

		/* A run of characters that need no escape in one copy, not one
		 * call per character: every state save and plan writes thousands. */
		while (json_plain(p[run]))
			run++;
		if (run) {
			rc = vx_buf_add(b, p, run);
			p += run - 1;
			continue;
		}
		switch (*p) {
		case '"': rc = vx_buf_adds(b, "\\\""); break;
		case '\\': rc = vx_buf_adds(b, "\\\\"); break;
		case '\n': rc = vx_buf_adds(b, "\\n"); break;
		case '\r': rc = vx_buf_adds(b, "\\r"); break;
		case '\t': rc = vx_buf_adds(b, "\\t"); break;
		default:
			if (*p < 0x20)
				rc = vx_buf_printf(b, "\\u%04x", *p);
			else
				rc = vx_buf_addc(b, (char)*p);
		}
	}
	return rc ? rc : vx_buf_addc(b, '"');
}

char *vx_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *vx_asprintf(const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}
