/*
 * vx validate [DIR]...: loads each stack and reports every problem, without
 * touching the cloud. Diagnostics go to stderr as "FILE:LINE:COLUMN: ...",
 * one per line, then "... and N more" past the cap; a valid stack gets one
 * summary line on stdout. In GitHub Actions each diagnostic is also printed
 * as an ::error annotation after them (workflow/ghactions.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/notify.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"
#include "workflow/ghactions.h"
#include "util/banned.h"

static const char usage_head[] =
	"usage: vx validate [DIR]...\n\n"
	"Checks the stack in each DIR (default \".\"): every *.yaml and *.yml file,\n"
	"each kind (Stack, ";
/* ... the kinds' names (kind_table), then: */
static const char usage_tail[] =
	"), every field, and\n"
	"each job spec against the Vertex AI CustomJobSpec schema and machine rules.\n"
	"Nothing is sent to Google Cloud. Problems are printed as FILE:LINE:COLUMN:\n"
	"message on stderr (exit 1); a valid stack prints one summary line (exit 0).\n\n"
	"options:\n"
	"  -annotations=false   in GitHub Actions (GITHUB_ACTIONS=true), do not also print\n"
	"                       each problem as an ::error annotation on the diff\n"
	"  -C DIR               the stack directory, as DIR (also -chdir=DIR)\n"
	"  -debug               more detail on stderr\n";

/* -help: the usage with the name of every kind. */
static int usage_build(struct vx_buf *out)
{
	if (vx_buf_adds(out, usage_head) < 0 || kind_list_names(out) < 0 || vx_buf_adds(out, usage_tail) < 0)
		return VX_ENOMEM;
	return 0;
}

enum { VALIDATE_OPT_ANNOTATIONS = 1 };

static const struct cmd_opt validate_opts[] = {
	{ .name = "annotations", .arg = CMD_ARG_OPTIONAL, .id = VALIDATE_OPT_ANNOTATIONS, .values = cmd_bool_values },
	{ .name = NULL },
};

/* "stack NAME: 2 jobs, 1 reservation, 0 quota preferences: valid": the
 * declarations of each kind, jobs first (kind_table in reverse phase order);
 * a kind with summary_when_declared only when there are some. */
static void print_summary(const struct stack *st)
{
	int first = 1;

	printf("stack %s:", st->name);
	for (size_t k = kind_count; k-- > 0;) {
		const struct kind *kd = kind_table[k];
		size_t n = kind_count_decls(kd, st);

		if (n == 0 && kd->summary_if_declared)
			continue;
		printf("%s %zu %s", first ? "" : ",", n, n == 1 ? kd->noun : kd->noun_plural);
		first = 0;
	}
	printf(": valid\n");
}

/* Targets on this machine are sent nothing without VX_NOTIFY_ALLOW_LOOPBACK=1: said, not refused. */
static void warn_loopback(const struct stack *st)
{
	for (size_t i = 0; i < st->nnotify; i++) {
		struct notify_url nu;

		if (!st->notify[i].url || notify_url_parse(&nu, st->notify[i].url) || !nu.loopback ||
		    cmd_notify_loopback())
			continue;
		fprintf(stderr, "%s:%u:%u: warning: notify[%zu].url: a target on this machine (loopback): nothing is "
			"sent to it unless " NOTIFY_LOOPBACK_ENV "=1 is in the environment of vx watch and vxapply\n",
			st->d.file ? st->d.file : st->dir, st->notify[i].line, st->notify[i].col, i);
	}
}

/*
 * The limits set on prices (a job's maxHourlyUsd, the policy's rules.maxHourlyUsd)
 * against the price table in force, loaded only when one applies; problems printed as the
 * loader's are. An exit code.
 */
static int validate_prices(const struct stack *st, int annotate)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct prices p;
	int rc, code = VX_EXIT_OK;

	memset(&p, 0, sizeof(p));
	if (kind_check_prices(st, NULL, NULL) <= 0)
		return VX_EXIT_OK;
	if ((rc = prices_load_in_force(&p, st, NULL, &err)) < 0) {
		cmd_report(&err, "validate");
		code = VX_EXIT_ERROR;
	} else if ((rc = kind_check_prices(st, &p, &diags)) < 0) {
		cmd_error("validate: out of memory");
		code = VX_EXIT_ERROR;
	} else if (diags.n) {
		vx_diags_sort(&diags);
		cmd_print_diags(&diags, annotate);
		code = VX_EXIT_ERROR;
	}
	prices_release(&p);
	vx_diags_release(&diags);
	vx_err_release(&err);
	return code;
}

/* Validates one directory; returns an exit code. */
static int validate_dir(const char *dir, int annotate)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	int rc, code = VX_EXIT_OK;

	rc = stack_load(&st, dir, NULL, &diags, &err);
	if (rc == VX_EINVAL) {
		cmd_print_diags(&diags, annotate);
		if (diags.n == 0)
			fprintf(stderr, "vx: %s: the stack is not valid\n", dir);
		code = VX_EXIT_ERROR;
	} else if (rc < 0) {
		cmd_report(&err, "validate");
		code = VX_EXIT_ERROR;
	} else if ((code = validate_prices(st, annotate)) == VX_EXIT_OK) {
		cmd_print_warnings(&st->warnings);
		warn_loopback(st);
		print_summary(st);
	}
	stack_free(st);
	vx_diags_release(&diags);
	vx_err_release(&err);
	return code;
}

static int validate_exec(const struct cmd_args *args)
{
	const char *dir;
	int code = VX_EXIT_OK, annotate = 1;

	for (size_t i = 0; i < args->nopts; i++)
		if (args->opts[i].id == VALIDATE_OPT_ANNOTATIONS &&
		    cmd_annotate("validate", args->opts[i].value, &annotate) < 0)
			return VX_EXIT_USAGE;
	annotate = annotate && gha_active(NULL);
	/* -C DIR is one of the directories: the others must be it. */
	for (size_t i = 0; i < args->npos; i++)
		if (cmd_stack_dir(args, args->pos[i], &dir) < 0)
			return VX_EXIT_USAGE;
	if (args->dir && args->npos)
		return validate_dir(args->dir, annotate);
	for (size_t i = 0; i < args->npos; i++)
		if (validate_dir(args->pos[i], annotate) != VX_EXIT_OK)
			code = VX_EXIT_ERROR;
	if (args->npos == 0)
		code = validate_dir(args->dir ? args->dir : ".", annotate);
	return code;
}

const struct cmd_entry cmd_validate_entry = {
	.name = "validate",
	.summary = "check a stack's YAML without touching the cloud",
	.usage_build = usage_build,
	.opts = validate_opts,
	.exec = validate_exec,
	.stack_dir = 1,
};
