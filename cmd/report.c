/*
 * vx report [DIR]: what ran and what it cost, from the state's history
 * (workflow/report.c builds it; reconcile/out/report.c holds the figures).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/out/report.h"
#include "reconcile/out/report_html.h"
#include "util/buf.h"
#include "util/file.h"
#include "workflow/report.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx report [DIR] [options]\n\n"
	"Shows what ran and what it cost, from the state's history: one row per attempt\n"
	"(created, started, ended, queue and running time, outcome, failure class, rung\n"
	"and region) with its estimated cost (list price x running hours x replicas, from\n"
	"the price table in force), the sums by job, ISO week, accelerator and strategy,\n"
	"the spend on attempts that ran and did not succeed (waste), reservations'\n"
	"VM-hours and their use, queue times per strategy and region (median and p90),\n"
	"and failures by class and message. Runs are counted when their time overlaps\n"
	"the window; running time and cost count only the part inside it. A stack with a\n"
	"budget: has its budget line, over the budget's own period (docs/budgets.md).\n\n"
	"DIR is a stack directory, or a directory holding stacks (each found up to three\n"
	"levels below is reported, together). Nothing is written to the state.\n"
	"See docs/report.md.\n\n"
	"options:\n"
	"  -since WHEN     start of the window: a duration before now (30d, 12h, 2w, 90m),\n"
	"                  a date (2026-11-01, midnight UTC) or an RFC 3339 time\n"
	"                  (default 30d)\n"
	"  -until WHEN     end of the window, in the same forms (default now)\n"
	"  -format FMT     json (default), csv (the runs, RFC 4180) or html (a\n"
	"                  self-contained page); with -o and no -format, the format\n"
	"                  of FILE's extension (.json, .csv, .html or .htm; json for\n"
	"                  any other)\n"
	"  -o FILE         write to FILE (replaced whole, never left half written)\n"
	"                  instead of standard output\n"
	"  -C DIR          the directory, as DIR (also -chdir=DIR)\n"
	"  -debug          log every request to stderr (tokens redacted)\n\n"
	"Environment: VX_PRICES (a price table, as for vxplan); VX_NOW (an RFC 3339\n"
	"time: vx's clock for the window, for reproducible output).\n";

enum { REPORT_OPT_SINCE = 2, REPORT_OPT_UNTIL, REPORT_OPT_FORMAT, REPORT_OPT_OUT };

static const char *const report_formats[] = { "json", "csv", "html", NULL };

static const struct cmd_opt report_opts[] = {
	{ .name = "since", .arg = CMD_ARG_REQUIRED, .id = REPORT_OPT_SINCE },
	{ .name = "until", .arg = CMD_ARG_REQUIRED, .id = REPORT_OPT_UNTIL },
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = REPORT_OPT_FORMAT, .values = report_formats },
	{ .name = "o", .arg = CMD_ARG_REQUIRED, .id = REPORT_OPT_OUT, .value = CMD_VALUE_FILE },
	{ .name = NULL },
};

/* The formats; html is the page reconcile/out/report_html.c renders from the JSON document. */
enum report_format { REPORT_JSON, REPORT_CSV, REPORT_HTML };

struct report_flags {
	struct report_opts o;
	enum report_format format;
	int format_given;   /* -format was on the command line */
	const char *out;
};

/*
 * The format a file name asks for by its extension (case-insensitive), when
 * -format is not given: report.html is a page, not JSON in an .html file.
 * Any other extension (or none) keeps the default, JSON.
 */
static enum report_format format_of_file(const char *path)
{
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');

	if (!dot || (slash && dot < slash))
		return REPORT_JSON;
	if (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"))
		return REPORT_HTML;
	if (!strcasecmp(dot, ".csv"))
		return REPORT_CSV;
	return REPORT_JSON;
}

static int parse_flags(struct report_flags *f, const struct cmd_args *args)
{
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case REPORT_OPT_SINCE: f->o.since = v; break;
		case REPORT_OPT_UNTIL: f->o.until = v; break;
		case REPORT_OPT_OUT: f->out = v; break;
		case REPORT_OPT_FORMAT:
			f->format_given = 1;
			if (!strcmp(v, "json"))
				f->format = REPORT_JSON;
			else if (!strcmp(v, "csv"))
				f->format = REPORT_CSV;
			else if (!strcmp(v, "html"))
				f->format = REPORT_HTML;
			else {
				cmd_error("report: -format must be json, csv or html, not \"%s\"", v);
				return -1;
			}
			break;
		}
	}
	if (args->npos > 1) {
		cmd_error("report: one directory, not %zu", args->npos);
		return -1;
	}
	if (f->out && !f->format_given)
		f->format = format_of_file(f->out);
	return cmd_stack_dir(args, args->npos ? args->pos[0] : NULL, &f->o.dir);
}

/* The document in the format asked for, into out. */
static int render(struct vx_buf *out, const struct report *r, enum report_format format, struct vx_err *err)
{
	cJSON *doc = NULL;
	char *text;
	int rc;

	if (format == REPORT_CSV)
		return report_to_csv(r, out, err);
	if ((rc = report_to_json(r, &doc, err)) < 0)
		return rc;
	if (format == REPORT_HTML) {
		rc = report_html(doc, out, err);
		cJSON_Delete(doc);
		return rc;
	}
	text = cJSON_Print(doc);
	rc = text && vx_buf_adds(out, text) == 0 && vx_buf_addc(out, '\n') == 0
		     ? 0
		     : vx_err_set(err, VX_ENOMEM, "report: out of memory");
	cJSON_free(text);
	cJSON_Delete(doc);
	return rc;
}

static int report_exec(const struct cmd_args *args)
{
	struct report_flags f;
	struct report_session s;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf out = VX_BUF_INIT;
	int rc = VX_EXIT_ERROR;

	memset(&f, 0, sizeof(f));
	memset(&s, 0, sizeof(s));
	if (parse_flags(&f, args) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	if (cmd_shown_now(&f.o.now_ms, &ctx, "report") < 0)
		return VX_EXIT_USAGE;
	f.o.prices_file = getenv("VX_PRICES");
	if (report_session_run(&s, &ctx, &f.o, &cmd_workspace_events, &err) < 0 ||
	    render(&out, &s.report, f.format, &err) < 0) {
		/* A bad -since or -until is the command line's fault (no stack read yet). */
		rc = err.code == VX_EINVAL && !s.nstacks ? VX_EXIT_USAGE : VX_EXIT_ERROR;
		cmd_report(&err, NULL);
		goto done;
	}
	for (size_t i = 0; i < s.nstacks; i++)
		cmd_warn_skips(s.stacks[i].name, &s.stacks[i].skips);
	if (f.out) { /* whole or not at all (util/file.h) */
		if (vx_file_put(f.out, out.data, out.len, 0, &err) < 0)
			cmd_report(&err, "report");
		else
			rc = VX_EXIT_OK;
	} else
		rc = fwrite(out.data, 1, out.len, stdout) == out.len && fflush(stdout) == 0 ? VX_EXIT_OK
											     : VX_EXIT_ERROR;
done:
	vx_buf_release(&out);
	report_session_release(&s);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_report_entry = {
	.name = "report",
	.summary = "what ran and what it cost, from the state's history",
	.usage = usage,
	.opts = report_opts,
	.exec = report_exec,
	.stack_dir = 1,
};
