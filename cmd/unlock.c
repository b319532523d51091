/*
 * vx unlock ID [DIR]: clear a stuck state lock.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/workspace.h"
#include "state/lock.h"

int cmd_unlock(int argc, char **argv)
{
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	const char *dir = ".", *id = NULL, *v;
	int rc = VX_EXIT_ERROR, debug = 0, dir_given = 0;

	memset(&ws, 0, sizeof(ws));
	for (int i = 1; i < argc; i++) {
		if (cmd_flag(argv[i], "help", &v) || cmd_flag(argv[i], "h", &v)) {
			printf("usage: vx unlock ID [DIR] [-debug]\n\n"
			       "Clears the state lock with this id (shown in the 'state is locked by' message,\n"
			       "whose hint is the whole command to paste), for when an apply died without\n"
			       "releasing it. Refused for any other id. DIR is the stack directory\n"
			       "(default .; -C DIR also works).\n");
			return VX_EXIT_OK;
		} else if (workspace_dir_flag(argc, argv, &i, &v)) {
			if (cmd_dir_arg("unlock", &dir, &dir_given, v) < 0)
				return VX_EXIT_USAGE;
		} else if (cmd_flag(argv[i], "debug", &v)) {
			debug = 1;
		} else if (argv[i][0] == '-') {
			cmd_error("unlock: usage: vx unlock ID [DIR]");
			return VX_EXIT_USAGE;
		} else if (!id) {
			id = argv[i];
		} else if (cmd_dir_arg("unlock", &dir, &dir_given, argv[i]) < 0) {
			return VX_EXIT_USAGE;
		}
	}
	if (!id) {
		cmd_error("unlock: usage: vx unlock ID [DIR]");
		return VX_EXIT_USAGE;
	}
	cmd_ctx_init(&ctx, debug);
	if (workspace_open(&ws, &ctx, dir, &err) < 0 || state_unlock(ws.backend, id, &err) < 0) {
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
