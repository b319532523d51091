/*
 * vx status: the state's records joined with the live listing, one row per
 * address (reconcile/status.h). Nothing here reads the network or writes.
 */
#include "reconcile/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/errtext.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

const char *status_tracking_name(enum status_tracking t)
{
	switch (t) {
	case STATUS_TRACKED:
		return "tracked";
	case STATUS_NOT_APPLIED:
		return "not applied";
	case STATUS_UNTRACKED:
		return "untracked";
	case STATUS_FOREIGN:
		return "foreign";
	}
	return "tracked";
}

static void row_release(struct status_row *r)
{
	free(r->address);
	free(r->state);
	free(r->resource);
	free(r->region);
	free(r->failure);
	free(r->message);
	free(r->held);
}

void status_release(struct status_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		row_release(&r->rows[i]);
	free(r->rows);
	for (size_t i = 0; i < r->nlisted; i++)
		/* nlisted counts only names stored in listed, so listed is set when it is > 0.
		 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		free(r->listed[i]);
	free(r->listed);
	free(r->stack);
	free(r->project);
	free(r->currency);
	memset(r, 0, sizeof(*r));
}

struct status_row *status_row_add(struct status_report *r, const char *kind, const char *address)
{
	struct status_row *row;

	if (VX_ALLOC_GROW(r->rows, r->n + 1, r->cap) < 0)
		return NULL;
	row = &r->rows[r->n];
	memset(row, 0, sizeof(*row));
	row->kind = kind;
	row->queued_ms = -1;
	row->running_ms = -1;
	if (!(row->address = vx_text_clean(address)))
		return NULL;
	r->n++;
	return row;
}

char *status_clean_message(const char *msg)
{
	struct vx_buf b = VX_BUF_INIT;
	char *out;

	if (!msg || !*msg)
		return NULL;
	if (render_error_first_line(&b, msg) < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	out = vx_text_clean(vx_buf_str(&b));
	vx_buf_release(&b);
	if (out)
		vx_text_redact_userinfo(out);
	return out;
}

enum status_tracking status_declared_tracking(const struct status_input *in, const char *address)
{
	return in->state && state_find(in->state, address) ? STATUS_TRACKED : STATUS_NOT_APPLIED;
}

/*
 * The kinds' rows come in the reverse of kind_table's phase order: jobs,
 * then reservations, then quota preferences, as vx status has always
 * listed them.
 */
static int kind_rank(const char *kind)
{
	for (size_t i = 0; i < kind_count; i++)
		if (!strcmp(kind_table[i]->prefix, kind))
			return (int)(kind_count - 1 - i);
	return (int)kind_count;
}

static int cmp_rows(const void *x, const void *y)
{
	const struct status_row *a = x, *b = y;
	int ka = kind_rank(a->kind), kb = kind_rank(b->kind), c;

	if (ka != kb)
		return ka - kb;
	if ((c = strcmp(a->address, b->address)))
		return c;
	if ((int)a->tracking != (int)b->tracking)
		return (int)a->tracking - (int)b->tracking;
	return strcmp(a->resource ? a->resource : "", b->resource ? b->resource : "");
}

int status_build(struct status_report *out, const struct status_input *in, struct vx_err *err)
{
	memset(out, 0, sizeof(*out));
	out->now_ms = in->now_ms;
	out->serial = in->state ? in->state->serial : 0;
	if (!(out->stack = vx_strdup(in->st->name)) || !(out->project = vx_strdup(in->st->project)) ||
	    (in->prices && in->prices->currency && !(out->currency = vx_strdup(in->prices->currency))))
		goto oom;
	if (in->nlisted && !(out->listed = calloc(in->nlisted, sizeof(*out->listed))))
		goto oom;
	for (; out->nlisted < in->nlisted; out->nlisted++)
		if (!(out->listed[out->nlisted] = vx_strdup(in->listed[out->nlisted])))
			goto oom;
	for (size_t k = kind_count; k-- > 0;)
		if (kind_table[k]->status_rows && kind_table[k]->status_rows(out, in) < 0)
			goto oom;
	if (out->n)
		qsort(out->rows, out->n, sizeof(*out->rows), cmp_rows);
	return 0;
oom:
	status_release(out);
	return vx_err_set(err, VX_ENOMEM, "out of memory");
}

void status_duration(char out[24], int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		snprintf(out, 24, "-");
	else if (s < 60)
		snprintf(out, 24, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(out, 24, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, 24, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(out, 24, "%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
}
