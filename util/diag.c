#include "util/alloc.h"
#include "util/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

int vx_diags_add(struct vx_diags *d, const char *file, unsigned line, unsigned col,
		 const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_diag *di;
	size_t cap = d->cap ? d->cap : VX_DIAGS_DEFAULT_CAP;
	va_list ap;
	int rc;

	if (d->n >= cap) {
		d->dropped++;
		return 0;
	}
	if (VX_ALLOC_GROW(d->items, d->n + 1, d->alloc) < 0)
		return VX_ENOMEM;
	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		vx_buf_release(&b);
		return rc;
	}
	di = &d->items[d->n];
	di->file = file ? strdup(file) : NULL;
	di->line = line;
	di->col = col;
	di->msg = vx_buf_detach(&b);
	vx_text_cap_echoes(di->msg);
	di->seq = d->n;
	if ((file && !di->file) || !di->msg) {
		free(di->file);
		free(di->msg);
		return VX_ENOMEM;
	}
	d->n++;
	return 0;
}

static int diag_cmp(const void *a, const void *b)
{
	const struct vx_diag *x = a, *y = b;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

void vx_diags_sort(struct vx_diags *d)
{
	if (d->n > 1)
		qsort(d->items, d->n, sizeof(*d->items), diag_cmp);
}

char *vx_diag_format(const struct vx_diag *di)
{
	if (di->file && di->line && di->col)
		return vx_asprintf("%s:%u:%u: %s", di->file, di->line, di->col, di->msg);
	if (di->file && di->line)
		return vx_asprintf("%s:%u: %s", di->file, di->line, di->msg);
	if (di->file)
		return vx_asprintf("%s: %s", di->file, di->msg);
	return vx_strdup(di->msg);
}

size_t vx_diags_count(const struct vx_diags *d)
{
	return d->n + d->dropped;
}

void vx_diags_release(struct vx_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->items[i].file);
		free(d->items[i].msg);
	}
	free(d->items);
	d->items = NULL;
	d->n = d->alloc = d->dropped = 0;
}
