#ifndef VX_UTIL_COMPLETION_H
#define VX_UTIL_COMPLETION_H

/*
 * Shell completion scripts (bash, zsh, fish) written from a description of
 * the commands and their flags: `vx completion SHELL` passes its command
 * table in, so a command or flag added to the table is completed with no
 * other edit. The scripts complete commands, flags, a flag's listed values,
 * directories and files where a flag takes one, and stack addresses by
 * running `PROGRAM __complete addresses [DIR]` (one address a line).
 */

#include <stddef.h>

struct vx_buf;

enum completion_arg {
	COMPLETION_ARG_NONE,      /* -verbose */
	COMPLETION_ARG_REQUIRED,  /* -format json, -format=json */
	COMPLETION_ARG_OPTIONAL,  /* -refresh, -refresh=false: a value only after '=' */
};

enum completion_value {
	COMPLETION_VALUE_TEXT,     /* not completed */
	COMPLETION_VALUE_ADDRESS,  /* an address of the stack */
	COMPLETION_VALUE_DIR,
	COMPLETION_VALUE_FILE,
};

struct completion_flag {
	const char *name;              /* without the dash: "target" */
	enum completion_arg arg;
	const char *const *values;     /* NULL-terminated, or NULL */
	enum completion_value value;
};

struct completion_cmd {
	const char *name;              /* "plan": vx plan */
	const char *alias;             /* the binary that is this command ("vxplan"), or NULL */
	const char *summary;           /* one line (fish shows it) */
	const struct completion_flag *flags;
	size_t nflags;
	const char *const *subcommands; /* words the first argument may be (NULL-terminated), or NULL */
};

/*
 * Appends the completion script for shell ("bash", "zsh" or "fish") of
 * program (the name users type, "vx") to out. 0, VX_EINVAL for another
 * shell, VX_ENOMEM. Every name in cmds must be made of letters, digits and
 * '-' (they are written into the script unquoted): VX_EINVAL otherwise.
 */
int completion_script(struct vx_buf *out, const char *shell, const char *program,
		      const struct completion_cmd *cmds, size_t ncmds);

#endif
