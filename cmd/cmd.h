#ifndef VX_CMD_CMD_H
#define VX_CMD_CMD_H

/*
 * The commands. Each cmd/<verb>.c defines one int cmd_<verb>(int argc, char **argv)
 * returning an exit code from cmd/exitcode.h; argv[0] is the verb itself.
 * cmd/main.c holds the table. Helpers shared by commands live in cmd/common.c.
 */

#include "util/ctx.h"

struct vx_err;

int cmd_help(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_unlock(int argc, char **argv);

/*
 * Sets up the context every command uses: real clock, log sink on stderr,
 * log level from VX_LOG (error|warn|info|debug) or -debug, SIGINT flag.
 */
void cmd_ctx_init(struct vx_ctx *ctx, int debug);
/*
 * (Re)starts the command's time limit (ctx->deadline_ms): VX_TIMEOUT seconds
 * from now, default 1800, 0 = none. cmd_ctx_init starts it; a command that
 * waited for something other than a server (a lock, a person) starts it again.
 */
void cmd_ctx_time_limit(struct vx_ctx *ctx);

/* Prints "vx: <msg>" on stderr. */
void cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the error's message as "vx: <context>: <msg>" and releases it. */
void cmd_report(struct vx_err *err, const char *context);

/*
 * Matches a Go/Terraform-style flag: "-name", "--name", "-name=value", "--name=value".
 * Returns 1 and sets *value (NULL when no "=") on a match, else 0.
 */
int cmd_flag(const char *arg, const char *name, const char **value);

/* Whether path is a directory. */
int cmd_is_dir(const char *path);

/*
 * Whether a positional argument is an address (job.NAME, reservation.NAME,
 * quota.NAME) rather than a stack directory: how log and state tell
 * "vx log job.a stack" apart. A directory so named needs "./" or -C.
 */
int cmd_is_address(const char *arg);

/* Records arg as the stack directory of command cmd (positional or -C); prints
 * a usage error and returns -1 when one was already given. */
int cmd_dir_arg(const char *cmd, const char **dir, int *given, const char *arg);

/* s as one shell word (quoted only when needed), for hints users paste;
 * NULL on OOM. Caller frees. */
char *cmd_shell_quote(const char *s);

/* Whether colour may be used on stream fd (a terminal, no NO_COLOR, not disabled). */
int cmd_use_color(int fd, int no_color_flag);

#endif
