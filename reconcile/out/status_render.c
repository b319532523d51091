/*
 * vx status's table and JSON (reconcile/out/status_render.h): how the rows
 * reconcile/status.c builds are shown. An output: nothing below it includes it.
 */
#include "reconcile/out/status_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/status.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

/* ---- rendering ---- */

enum { COL_ADDRESS, COL_STATE, COL_ATTEMPT, COL_RUNG, COL_REGION, COL_QUEUED, COL_RUNNING, COL_COST, COL_NOTE,
       NCOLS };

static const char *const col_titles[NCOLS] = {
	"ADDRESS", "STATE", "ATTEMPT", "RUNG", "REGION", "QUEUED", "RUNNING", "COST SO FAR", "NOTE",
};

/* What comes of a failed run: it gave up, the budget applied holds it, or it resubmits. */
static const char *failure_next(const struct status_row *r)
{
	if (r->gave_up)
		return "gave up";
	return r->held ? r->held : "resubmits on the next apply";
}

/* The note column: why it failed and what comes of it, what is untracked, a value. */
static int row_note(struct vx_buf *b, const struct status_row *r)
{
	int rc = 0;

	if (r->tracking == STATUS_UNTRACKED || r->tracking == STATUS_FOREIGN)
		rc = vx_buf_printf(b, "%s: %s", r->tracking == STATUS_UNTRACKED
			       ? "untracked (not in the state)" : "foreign (another state's job)",
			       r->resource ? r->resource : "?");
	else if (r->refused)
		rc = vx_buf_printf(b, "create refused%s%s%s%s%s; %s%s", strcmp(r->failure, "refused") ? " (" : "",
				   strcmp(r->failure, "refused") ? r->failure : "",
				   strcmp(r->failure, "refused") ? ")" : "", r->message ? ": " : "",
				   r->message ? r->message : "", r->gave_up ? "fix the cause, then vxapply -replace "
				   : "asked again on the next apply", r->gave_up ? r->address : "");
	else if (r->failure)
		rc = vx_buf_printf(b, "%s: %s%s%s", failure_next(r), r->failure, r->message ? ": " : "",
				   r->message ? r->message : "");
	else if (r->values && r->has_value)
		rc = r->has_value2 ? vx_buf_printf(b, "%s %" PRId64 ", %s %" PRId64, r->values->name, r->value,
						   r->values->name2, r->value2)
				   : vx_buf_printf(b, "%s %" PRId64, r->values->name, r->value);
	if (rc == 0 && r->tracking == STATUS_TRACKED && !r->listed)
		rc = vx_buf_printf(b, "%snot listed: as last seen", b->len ? "; " : "");
	if (rc == 0 && r->tracking == STATUS_TRACKED && !r->declared && r->runs)
		rc = vx_buf_printf(b, "%sno longer declared", b->len ? "; " : "");
	return rc;
}

/* The cells of one row (each cell a NUL-terminated string in cells[i]). */
static int row_cells(struct vx_buf cells[NCOLS], const struct status_row *r, const char *currency)
{
	char d[24];
	int job = r->runs, rc;

	rc = vx_buf_adds(&cells[COL_ADDRESS], r->address);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_STATE], r->tracking == STATUS_NOT_APPLIED ? "not applied"
						   : r->state ? r->state : "-");
	if (rc == 0)
		rc = job && r->attempt ? (r->max_attempts ? vx_buf_printf(&cells[COL_ATTEMPT], "%" PRId64 "/%" PRId64,
									   r->attempt, r->max_attempts)
						  : vx_buf_printf(&cells[COL_ATTEMPT], "%" PRId64 "/-", r->attempt))
				       : vx_buf_adds(&cells[COL_ATTEMPT], "-");
	if (rc == 0)
		rc = job && r->attempt ? vx_buf_printf(&cells[COL_RUNG], "%" PRId64, r->rung)
				       : vx_buf_adds(&cells[COL_RUNG], "-");
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_REGION], r->region ? r->region : "-");
	status_duration(d, r->queued_ms);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_QUEUED], d);
	status_duration(d, r->running_ms);
	if (rc == 0)
		rc = vx_buf_adds(&cells[COL_RUNNING], d);
	if (rc == 0)
		rc = !job || r->tracking == STATUS_NOT_APPLIED ? vx_buf_adds(&cells[COL_COST], "-")
		     : r->cost_known ? capacity_money(&cells[COL_COST], currency, r->cost, 2)
				     : vx_buf_adds(&cells[COL_COST], "unknown");
	if (rc == 0)
		rc = row_note(&cells[COL_NOTE], r);
	return rc;
}

/* Display width of UTF-8 text: one column per character (the table's texts are narrow). */
static size_t text_width(const char *s)
{
	return vx_utf8_count(s);
}

static const char *state_color(const char *state)
{
	if (!state)
		return NULL;
	if (!strcmp(state, "RUNNING") || !strcmp(state, "SUCCEEDED") || !strcmp(state, "READY") ||
	    !strcmp(state, "GRANTED"))
		return "\033[32m";
	if (!strcmp(state, "FAILED") || !strcmp(state, "CANCELLED") || !strcmp(state, "EXPIRED"))
		return "\033[31m";
	return "\033[33m";
}

static int render_line(struct vx_buf *b, struct vx_buf cells[NCOLS], const size_t width[NCOLS],
		       const char *color)
{
	int rc = 0, last = NCOLS - 1;

	/* The note, when empty, leaves no trailing spaces behind the cost. */
	while (last > 0 && !cells[last].len)
		last--;
	for (int c = 0; c <= last && rc == 0; c++) {
		const char *text = vx_buf_str(&cells[c]);
		size_t pad = c < last ? width[c] - text_width(text) + 2 : 0;

		if (c == COL_STATE && color)
			rc = vx_buf_printf(b, "%s%s\033[0m", color, text);
		else
			rc = vx_buf_adds(b, text);
		for (; rc == 0 && pad > 0; pad--)
			rc = vx_buf_addc(b, ' ');
	}
	return rc == 0 ? vx_buf_addc(b, '\n') : rc;
}

static int render_header(struct vx_buf *b, const struct status_report *r)
{
	char now[STATE_TIME_MAX];
	int rc;

	state_time_format(r->now_ms, now);
	rc = vx_buf_printf(b, "Stack %s, project %s, state serial %" PRIu64 ", as of %s\n", r->stack,
			   r->project ? r->project : "?", r->serial, now);
	if (rc == 0 && r->nlisted)
		rc = vx_buf_adds(b, "Jobs listed in ");
	for (size_t i = 0; rc == 0 && i < r->nlisted; i++)
		rc = vx_buf_printf(b, "%s%s", i ? ", " : "", r->listed[i]);
	if (rc == 0 && r->nlisted)
		rc = vx_buf_addc(b, '\n');
	return rc == 0 ? vx_buf_addc(b, '\n') : rc;
}

int status_render_human(struct vx_buf *b, const struct status_report *r, int color)
{
	struct vx_buf *cells = calloc((r->n + 1) * NCOLS, sizeof(*cells));
	size_t width[NCOLS];
	int rc;

	if (!cells)
		return VX_ENOMEM;
	rc = render_header(b, r);
	if (rc == 0 && !r->n)
		rc = vx_buf_adds(b, "Nothing declared, recorded or listed.\n");
	for (int c = 0; c < NCOLS && rc == 0 && r->n; c++) {
		rc = vx_buf_adds(&cells[c], col_titles[c]);
		width[c] = text_width(col_titles[c]);
	}
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		rc = row_cells(&cells[(i + 1) * NCOLS], &r->rows[i], r->currency);
		for (int c = 0; c < NCOLS && rc == 0; c++) {
			size_t w = text_width(vx_buf_str(&cells[(i + 1) * NCOLS + c]));

			width[c] = w > width[c] ? w : width[c];
		}
	}
	for (size_t i = 0; i <= r->n && rc == 0 && r->n; i++)
		rc = render_line(b, &cells[i * NCOLS], width,
				 i && color ? state_color(r->rows[i - 1].state) : NULL);
	for (size_t i = 0; i < (r->n + 1) * NCOLS; i++)
		vx_buf_release(&cells[i]);
	free(cells);
	return rc;
}

static int json_time(struct vx_buf *b, const char *key, int64_t ms)
{
	char t[STATE_TIME_MAX];

	if (!ms)
		return vx_buf_printf(b, ",\"%s\":null", key);
	state_time_format(ms, t);
	return vx_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

static int json_str(struct vx_buf *b, const char *key, const char *v)
{
	int rc = vx_buf_printf(b, ",\"%s\":", key);

	if (rc == 0)
		rc = v ? vx_buf_add_json_str(b, v) : vx_buf_adds(b, "null");
	return rc;
}

static int json_seconds(struct vx_buf *b, const char *key, int64_t ms)
{
	return ms < 0 ? vx_buf_printf(b, ",\"%s\":null", key) : vx_buf_printf(b, ",\"%s\":%" PRId64, key, ms / 1000);
}

static int json_int(struct vx_buf *b, const char *key, int has, int64_t v)
{
	return has ? vx_buf_printf(b, ",\"%s\":%" PRId64, key, v) : vx_buf_printf(b, ",\"%s\":null", key);
}

/* ,"budgets":{"stockout":{"allowed":2,"used":1}}: only for a job with per-class budgets. */
static int json_budgets(struct vx_buf *b, const struct status_row *r)
{
	int rc = vx_buf_adds(b, ",\"budgets\":{");

	for (size_t i = 0; i < r->nbudgets && rc == 0; i++) {
		rc = vx_buf_adds(b, i ? "," : "");
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->budgets[i].cls);
		if (rc == 0)
			rc = vx_buf_printf(b, ":{\"allowed\":%" PRId64 ",\"used\":%" PRId64 "}", r->budgets[i].allowed,
					   r->budgets[i].used);
	}
	return rc == 0 ? vx_buf_addc(b, '}') : rc;
}

static int json_row(struct vx_buf *b, const struct status_row *r)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"kind\":\"%s\",\"tracking\":\"%s\",\"declared\":%s,\"listed\":%s", r->kind,
				   status_tracking_name(r->tracking), r->declared ? "true" : "false",
				   r->listed ? "true" : "false");
	if (rc == 0)
		rc = json_str(b, "state", r->state);
	if (rc == 0)
		rc = json_str(b, "resource", r->resource);
	if (rc == 0)
		rc = json_str(b, "region", r->region);
	if (rc == 0 && !r->runs) {
		if (r->values)
			rc = json_int(b, r->values->key, r->has_value, r->value);
		if (rc == 0 && r->values)
			rc = json_int(b, r->values->key2, r->has_value2, r->value2);
		return rc == 0 ? vx_buf_addc(b, '}') : rc;
	}
	if (rc == 0)
		rc = json_int(b, "attempt", r->attempt > 0, r->attempt);
	if (rc == 0)
		rc = json_int(b, "max_attempts", r->max_attempts > 0, r->max_attempts);
	if (rc == 0)
		rc = json_int(b, "rung", r->attempt > 0, r->rung);
	if (rc == 0 && r->nbudgets)
		rc = json_budgets(b, r);
	if (rc == 0)
		rc = json_time(b, "create_time", r->create_ms);
	if (rc == 0)
		rc = json_time(b, "start_time", r->start_ms);
	if (rc == 0)
		rc = json_time(b, "end_time", r->end_ms);
	if (rc == 0)
		rc = json_seconds(b, "queued_seconds", r->queued_ms);
	if (rc == 0)
		rc = json_seconds(b, "running_seconds", r->running_ms);
	if (rc == 0)
		rc = r->cost_known ? vx_buf_printf(b, ",\"cost_so_far\":%.2f", r->cost)
				   : vx_buf_adds(b, ",\"cost_so_far\":null");
	if (rc == 0 && !r->failure)
		return vx_buf_adds(b, ",\"failure\":null}");
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"failure\":{\"class\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->failure);
	if (rc == 0)
		rc = json_str(b, "message", r->message);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"resubmits\":%s,\"gave_up\":%s", r->resubmits ? "true" : "false",
				   r->gave_up ? "true" : "false");
	/* Only when the budget applied holds it, so other outputs keep their bytes. */
	if (rc == 0 && r->held)
		rc = json_str(b, "held", r->held);
	return rc ? rc : vx_buf_adds(b, "}}");
}

int status_render_json(struct vx_buf *b, const struct status_report *r)
{
	char now[STATE_TIME_MAX];
	int rc;

	state_time_format(r->now_ms, now);
	rc = vx_buf_adds(b, "{\"format_version\":1,\"stack\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->stack);
	if (rc == 0)
		rc = json_str(b, "project", r->project);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"state_serial\":\"%" PRIu64 "\",\"as_of\":\"%s\"", r->serial, now);
	if (rc == 0)
		rc = json_str(b, "currency", r->currency);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"regions\":[");
	for (size_t i = 0; rc == 0 && i < r->nlisted; i++) {
		if (i)
			rc = vx_buf_addc(b, ',');
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->listed[i]);
	}
	if (rc == 0)
		rc = vx_buf_adds(b, "],\"addresses\":[");
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		if (i)
			rc = vx_buf_addc(b, ',');
		if (rc == 0)
			rc = json_row(b, &r->rows[i]);
	}
	return rc == 0 ? vx_buf_adds(b, "]}") : rc;
}
