/* GitHub Actions' step summary, step outputs and annotations: see workflow/ghactions.h. */
#include "workflow/ghactions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "reconcile/apply.h"
#include "reconcile/plan.h"
#include "reconcile/out/render.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/diag.h"
#include "util/text.h"
#include "workflow/planning.h"
#include "util/rand.h"
#include "util/banned.h"

int gha_active(const struct vx_ctx *ctx)
{
	const char *v = vx_getenv(ctx, "GITHUB_ACTIONS");

	return v && !strcmp(v, "true");
}

/* Line breaks kept for the escape below; every other control '?'. */
static const struct vx_text_rules gha_rules = {
	.tab = VX_TEXT_MARK,
	.breaks = VX_TEXT_KEEP,
	.c0 = VX_TEXT_MARK,
	.c1 = VX_TEXT_KEEP,
};

int gha_escape(struct vx_buf *out, const char *s, int prop)
{
	struct vx_buf t = VX_BUF_INIT;
	int rc = vx_text_filter(&t, s, strlen(s), &gha_rules);

	for (const char *p = vx_buf_str(&t); *p && rc == 0; p++) {
		if (*p == '%')
			rc = vx_buf_adds(out, "%25");
		else if (*p == '\r')
			rc = vx_buf_adds(out, "%0D");
		else if (*p == '\n')
			rc = vx_buf_adds(out, "%0A");
		else if (prop && *p == ':')
			rc = vx_buf_adds(out, "%3A");
		else if (prop && *p == ',')
			rc = vx_buf_adds(out, "%2C");
		else
			rc = vx_buf_addc(out, *p);
	}
	vx_buf_release(&t);
	return rc < 0 ? VX_ENOMEM : 0;
}

int gha_annotations(struct vx_buf *out, const struct vx_diags *d)
{
	int rc = 0;

	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct vx_diag *di = &d->items[i];
		const char *sep = " ";

		rc = vx_buf_adds(out, "::error");
		if (rc == 0 && di->file) {
			rc = vx_buf_adds(out, " file=");
			if (rc == 0)
				rc = gha_escape(out, di->file, 1);
			sep = ",";
		}
		if (rc == 0 && di->file && di->line) {
			rc = vx_buf_printf(out, "%sline=%u", sep, di->line);
			if (rc == 0 && di->col)
				rc = vx_buf_printf(out, ",col=%u", di->col);
		}
		if (rc == 0)
			rc = vx_buf_adds(out, "::");
		if (rc == 0)
			rc = gha_escape(out, di->msg, 0);
		if (rc == 0)
			rc = vx_buf_addc(out, '\n');
	}
	if (rc == 0 && d->dropped)
		rc = vx_buf_printf(out, "::error::... and %zu more\n", d->dropped);
	return rc < 0 ? VX_ENOMEM : 0;
}

/* Appends len bytes of data to the file named by $var: 0 (also when it is unset), or VX_EIO. */
static int append_env_file(const struct vx_ctx *ctx, const char *var, const char *what,
			   const char *data, size_t len, struct vx_err *err)
{
	const char *path = vx_getenv(ctx, var);
	FILE *f;
	int ok;

	if (!path || !*path)
		return 0;
	f = fopen(path, "a");
	if (!f)
		return vx_err_set(err, VX_EIO, "cannot append to the %s %s ($%s): %s", what, path, var,
				  strerror(errno));
	ok = fwrite(data, 1, len, f) == len;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok)
		return vx_err_set(err, VX_EIO, "cannot append to the %s %s ($%s): %s", what, path, var,
				  strerror(errno));
	return 0;
}

int gha_summary_append(const struct vx_ctx *ctx, const char *text, struct vx_err *err)
{
	return append_env_file(ctx, "GITHUB_STEP_SUMMARY", "step summary", text, strlen(text), err);
}

static int name_ok(const char *s)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (n >= GHA_NAME_MAX || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
					   (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return 0;
	return n > 0;
}

static int value_ok(const char *s)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (n >= GHA_VALUE_MAX || (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

int gha_outputs_write(const struct vx_ctx *ctx, const struct gha_output *o, size_t n, struct vx_err *err)
{
	struct vx_buf out = VX_BUF_INIT;
	unsigned char r[16];
	char delim[sizeof("ghadelimiter_") + 2 * sizeof(r)];
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (!name_ok(o[i].name))
			return vx_err_set(err, VX_EINVAL, "step output %zu: a name is 1-%d letters, digits, "
					  "_ or -", i + 1, GHA_NAME_MAX);
		if (!o[i].value || !value_ok(o[i].value))
			return vx_err_set(err, VX_EINVAL, "step output %s: a value is at most %d printable "
					  "ASCII characters", o[i].name, GHA_VALUE_MAX);
	}
	/* The value could not hold a line break anyway; the random delimiter is
	 * GitHub's own rule, kept should a value ever be free text. */
	if (vx_rand_bytes(NULL, NULL, r, sizeof(r), NULL) < 0)
		return vx_err_set(err, VX_EIO, "step outputs: no random bytes for the delimiter");
	memcpy(delim, "ghadelimiter_", sizeof("ghadelimiter_") - 1);
	vx_rand_hex(delim + sizeof("ghadelimiter_") - 1, r, sizeof(r));
	for (size_t i = 0; i < n && rc == 0; i++)
		if (vx_buf_printf(&out, "%s<<%s\n%s\n%s\n", o[i].name, delim, o[i].value, delim) < 0)
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
	if (rc == 0)
		rc = append_env_file(ctx, "GITHUB_OUTPUT", "step outputs file", vx_buf_str(&out), strlen(vx_buf_str(&out)),
				     err);
	vx_buf_release(&out);
	return rc;
}

/* Tells warn err's message, and releases it; VX_ENOMEM passes through. */
static int warned(int rc, struct vx_err *err, void (*warn)(void *ud, const char *msg), void *ud)
{
	if (rc < 0 && rc != VX_ENOMEM && warn)
		warn(ud, vx_err_msg(err));
	vx_err_release(err);
	return rc == VX_ENOMEM ? VX_ENOMEM : 0;
}

/* The plan's markdown to the step summary (with an apply's result line when res). */
static int summary(const struct vx_ctx *ctx, const struct planning *pl, const struct apply_result *res, int applied,
		   void (*warn)(void *ud, const char *msg), void *ud)
{
	struct vx_buf md = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	int rc;

	rc = render_plan_markdown(&md, &pl->planner.plan, &pl->header);
	if (rc == 0 && res)
		rc = vx_buf_printf(&md, "\n**Apply %s**: %zu done, %zu failed%s.\n",
				   res->interrupted ? "interrupted" : "complete", res->ok, res->failed,
				   res->skipped ? ", some not started" : "");
	else if (rc == 0 && applied)
		rc = vx_buf_adds(&md, "\n**Apply complete**: no changes.\n");
	if (rc < 0) {
		vx_buf_release(&md);
		return VX_ENOMEM;
	}
	rc = gha_summary_append(ctx, vx_buf_str(&md), &err);
	vx_buf_release(&md);
	return warned(rc, &err, warn, ud);
}

/* exitcode, and changes and cost_per_hour when pl, to the step outputs. */
static int outputs(const struct vx_ctx *ctx, const struct planning *pl, int exitcode, void (*warn)(void *ud, const char *msg), void *ud)
{
	struct vx_err err = VX_ERR_INIT;
	char code[16], changes[24] = "", cost[40] = "";
	struct gha_output o[3] = {
		{ .name = "changes", .value = changes },
		{ .name = "exitcode", .value = code },
		{ .name = "cost_per_hour", .value = cost },
	};

	snprintf(code, sizeof(code), "%d", exitcode);
	if (pl) {
		const struct plan *p = &pl->planner.plan;
		const struct capacity_report *c = &pl->capacity;
		size_t quiet = p->counts[PLAN_NOOP] + p->counts[PLAN_PENDING] + p->counts[PLAN_WAIT];
		double v = c->delta_per_hour;

		snprintf(changes, sizeof(changes), "%zu", p->n - quiet);
		/* Within what a snprintf of %.2f keeps short: a figure past a
		 * billion an hour is not a price, and stays unknown. Nothing
		 * rounds to "-0.00". */
		if (v > -0.005 && v < 0.005)
			v = 0;
		if (c->delta_known && v > -1e9 && v < 1e9)
			snprintf(cost, sizeof(cost), "%.2f", v);
	}
	return warned(gha_outputs_write(ctx, o, 3, &err), &err, warn, ud);
}

int gha_plan_report(const struct vx_ctx *ctx, const struct planning *pl, int exitcode,
		    void (*warn)(void *ud, const char *msg), void *ud)
{
	if (pl && summary(ctx, pl, NULL, 0, warn, ud) < 0)
		return VX_ENOMEM;
	return outputs(ctx, pl, exitcode, warn, ud);
}

int gha_apply_report(const struct vx_ctx *ctx, const struct planning *pl, const struct apply_result *res,
		     int exitcode, void (*warn)(void *ud, const char *msg), void *ud)
{
	struct vx_err err = VX_ERR_INIT;
	char code[16];
	struct gha_output o = { .name = "exitcode", .value = code };

	if (pl && summary(ctx, pl, res, 1, warn, ud) < 0)
		return VX_ENOMEM;
	snprintf(code, sizeof(code), "%d", exitcode);
	return warned(gha_outputs_write(ctx, &o, 1, &err), &err, warn, ud);
}
