/*
 * vx show PLANFILE: a plan saved by `vxplan -out`, printed as vxplan printed
 * it, from the file alone, and whether `vxapply PLANFILE` would still take it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/out/render.h"
#include "util/buf.h"
#include "workflow/applying.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx show PLANFILE [-format human|json|markdown] [-debug]\n\n"
	"Prints the plan saved by 'vxplan -out PLANFILE' as vxplan printed it (human: as\n"
	"without colour; json: as -format json printed it), without calling the cloud,\n"
	"then says whether it still applies: the state it was made against (its lineage\n"
	"and serial) and the declaration are still the stack's. It reads the state as\n"
	"vxapply does (the git branch; gcs: the state object), not the live jobs, so\n"
	"vxapply still plans again and refuses a plan the world moved away from.\n\n"
	"options:\n"
	"  -format FMT   human (default), json or markdown\n\n"
	"exit status: 0 the plan still applies; 3 it is stale (the line on stderr says\n"
	"why: run vxplan again); 1 an error (not a saved plan, its stack or state not\n"
	"found: the plan is printed when it could be read); 64 a bad command line.\n";

enum { SHOW_OPT_FORMAT = 1 };

static const struct cmd_opt show_opts[] = {
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = SHOW_OPT_FORMAT, .values = cmd_formats_plan },
	{ .name = NULL },
};

/* Prints the plan in format: 0, or -1 after saying why not. */
static int show_print(const struct applying *ap, const char *planfile, const char *format)
{
	struct vx_buf out = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	int rc = 0;

	if (saved_plan_text(&out, ap->file.data, ap->file.len, format, &err) < 0) {
		cmd_report(&err, planfile);
		rc = -1;
	} else {
		fputs(vx_buf_str(&out), stdout);
		fflush(stdout);
	}
	vx_buf_release(&out);
	return rc;
}

static int show_exec(const struct cmd_args *args)
{
	struct applying ap;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	const char *format = "human";
	char *stale = NULL;
	int rc = VX_EXIT_ERROR, r;

	for (size_t i = 0; i < args->nopts; i++)
		format = args->opts[i].value; /* -format, the only flag */
	if (strcmp(format, "human") && strcmp(format, "json") && strcmp(format, "markdown")) {
		cmd_error("show: -format must be human, json or markdown");
		return VX_EXIT_USAGE;
	}
	if (args->npos != 1) {
		fputs(usage, stderr);
		return VX_EXIT_USAGE;
	}
	cmd_ctx_init(&ctx, args->debug);
	applying_init(&ap);
	r = applying_saved_stale(&ap, &ctx, args->pos[0], &cmd_workspace_events, &stale, &err);
	/* The plan is shown whenever the file is one, even when its stack is not here. */
	if (ap.not_a_plan) {
		cmd_report(&err, "show");
		fprintf(stderr, "vx: vx show takes a plan saved by 'vxplan -out FILE'\n");
		goto done;
	}
	if (show_print(&ap, args->pos[0], format) < 0)
		goto done;
	if (r < 0) {
		cmd_report(&err, "show: cannot tell whether the plan still applies");
	} else if (stale) {
		cmd_error("this plan is stale: %s", stale);
		rc = VX_EXIT_STALE;
	} else {
		if (!strcmp(format, "human"))
			printf("\nThis plan still applies to the state (serial %llu) and the declaration: "
			       "vxapply %s\n", (unsigned long long)ap.sp.state_serial, args->pos[0]);
		rc = VX_EXIT_OK;
	}
done:
	free(stale);
	vx_err_release(&err);
	applying_close(&ap);
	return rc;
}

const struct cmd_entry cmd_show_entry = {
	.name = "show",
	.summary = "print a saved plan and whether it still applies (show PLANFILE)",
	.usage = usage,
	.opts = show_opts,
	.exec = show_exec,
};
