#ifndef VX_CMD_EXITCODE_H
#define VX_CMD_EXITCODE_H

/* Exit codes of every vx command (DESIGN.md section 7), in one place. */
enum {
	VX_EXIT_OK = 0,      /* success; with -detailed-exitcode: no changes */
	VX_EXIT_ERROR = 1,   /* any error: bad config, API failure, failed action */
	VX_EXIT_CHANGES = 2, /* with -detailed-exitcode: the plan has changes */
	VX_EXIT_STALE = 3,   /* vx show: the saved plan no longer applies */
	VX_EXIT_USAGE = 64,  /* bad command line (sysexits' EX_USAGE) */
};

#endif
