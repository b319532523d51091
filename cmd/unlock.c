/*
 * vx unlock ID [DIR]: clear a stuck state lock.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "state/lock.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx unlock ID [DIR] [-debug]\n\n"
	"Clears the state lock with this id (shown in the 'state is locked by' message,\n"
	"whose hint is the whole command to paste), for when an apply died without\n"
	"releasing it. Refused for any other id. DIR is the stack directory\n"
	"(default .; -C DIR and -chdir=DIR also work). -debug logs every request.\n";

static int unlock_exec(const struct cmd_args *args)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = NULL, *id = NULL;
	int rc = VX_EXIT_ERROR, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (size_t i = 0; i < args->npos; i++) {
		if (!id)
			id = args->pos[i];
		else if (cmd_dir_arg("unlock", &dir, &dir_given, args->pos[i]) < 0)
			return VX_EXIT_USAGE;
	}
	if (!id) {
		cmd_error("unlock: usage: vx unlock ID [DIR]");
		return VX_EXIT_USAGE;
	}
	if (cmd_stack_dir(args, dir, &dir) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open_lenient(&ws, &ctx, dir, &cmd_workspace_events, &err) < 0 ||
	    state_unlock(ws.backend, id, &err) < 0) {
		cmd_report(&err, "unlock");
		goto done;
	}
	printf("Lock %s cleared.\n", id);
	rc = VX_EXIT_OK;
done:
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_unlock_entry = {
	.name = "unlock",
	.summary = "clear a stuck apply lock (unlock ID [DIR])",
	.usage = usage,
	.exec = unlock_exec,
	.stack_dir = 1,
};
