#ifndef VX_CMD_CMD_H
#define VX_CMD_CMD_H

/*
 * The commands, in the manner of tmux's cmd-*.c: each cmd/<verb>.c defines
 * one struct cmd_entry (its name, usage and flag table) and a short exec
 * function that gets the parsed arguments and returns an exit code from
 * cmd/exitcode.h. cmd/main.c holds the table; cmd_run parses a command line
 * by the entry's flags (Terraform's style: -name, -name=value, -name value;
 * -- also accepted), answers -help, refuses an unknown flag, and runs exec.
 * Helpers shared by commands live in cmd/common.c.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/ctx.h"

struct planning_opts;
struct vx_buf;
struct vx_diags;
struct vx_err;
struct workspace_events;

enum cmd_arg {
	CMD_ARG_NONE,      /* -auto-approve */
	CMD_ARG_REQUIRED,  /* -parallelism 8, -parallelism=8 */
	CMD_ARG_OPTIONAL,  /* -wait, -wait=done (only with '=') */
};

/* What a flag's value is, beside a fixed list: for shell completion (vx completion). */
enum cmd_value {
	CMD_VALUE_TEXT,     /* anything: not completed */
	CMD_VALUE_ADDRESS,  /* an address of the stack (-target, -replace) */
	CMD_VALUE_DIR,      /* a directory (-C) */
	CMD_VALUE_FILE,     /* a file (-out, -metrics) */
};

/*
 * One flag of a command. Written with designated initialisers, so a field
 * added here needs no edit elsewhere. values and value only feed completion:
 * exec still checks what it is given.
 */
struct cmd_opt {
	const char *name;  /* without the dash */
	enum cmd_arg arg;
	int id;            /* what exec switches on; > 0 */
	const char *const *values; /* the values it takes (NULL-terminated), or NULL */
	enum cmd_value value;
};

/* The values of -format in plan (and vx show), status and watch. */
extern const char *const cmd_formats_plan[], *const cmd_formats_status[];

/* One option as given, in order. */
struct cmd_given {
	int id;
	const char *value; /* NULL without one */
};

struct cmd_args {
	const struct cmd_entry *entry;
	struct cmd_given *opts;  /* in the order given */
	size_t nopts;
	char **pos;              /* the positional arguments */
	size_t npos;
	int debug;               /* -debug, every command's */
	const char *dir;         /* -C DIR or -chdir=DIR (entry->stack_dir), NULL when not given */
};

struct cmd_entry {
	const char *name;        /* "apply": vx apply */
	const char *alias;       /* the binary that is this command ("vxapply"), or NULL */
	const char *summary;     /* one line for vx help */
	const char *usage;       /* the -help text */
	const struct cmd_opt *opts; /* ends with { NULL }; -help and -debug are every command's */
	int (*exec)(const struct cmd_args *args);
	const char *const *subcommands; /* what the first argument may be ("list", ...), for completion */
	int hidden;              /* not in vx help nor completed: vx __complete */
	/* 1: the command works on a stack directory, and takes it as -C DIR or
	 * -chdir=DIR (cmd_stack_opts: cmd_run parses them into args->dir) as
	 * well as a positional DIR; exec merges the two with cmd_stack_dir. */
	int stack_dir;
	/* The -help text when part of it is written at run time (the kinds,
	 * from kind_table), instead of usage (then NULL): appended to out, 0
	 * or VX_ENOMEM. */
	int (*usage_build)(struct vx_buf *out);
};

extern const struct cmd_entry cmd_plan_entry, cmd_apply_entry, cmd_validate_entry, cmd_doctor_entry,
	cmd_log_entry, cmd_status_entry, cmd_state_entry, cmd_unlock_entry, cmd_import_entry, cmd_watch_entry,
	cmd_report_entry, cmd_version_entry, cmd_completion_entry, cmd_complete_entry,
	cmd_help_entry, cmd_show_entry, cmd_logs_entry, cmd_endpoints_entry;

/* The table of commands (cmd/main.c), n of them. */
const struct cmd_entry *const *cmd_table(size_t *n);
/* The command called name in the table, or NULL. */
const struct cmd_entry *cmd_find(const char *name);

/* -C DIR and -chdir=DIR: the flags of every command with .stack_dir, which
 * cmd_run parses into args->dir (ends with { NULL }). */
enum { CMD_OPT_DIR = 1 };
extern const struct cmd_opt cmd_stack_opts[];

/*
 * The stack directory of a command with .stack_dir: -C's (args->dir), or the
 * one given as an argument (positional, NULL when none), else ".". Both given
 * is fine when they name the same directory; when they differ it is a usage
 * error naming both: -1 after saying so.
 */
int cmd_stack_dir(const struct cmd_args *args, const char *positional, const char **dir);

/* The flags plan and apply share (workflow/planning.h), for their flag tables. */
enum {
	CMD_OPT_TARGET = 100,
	CMD_OPT_REPLACE,
	CMD_OPT_REFRESH,
	CMD_OPT_FAIL_ON,
	CMD_OPT_ALLOW_OTHER_LINEAGE,
	CMD_OPT_ALLOW_RELEASED,
	CMD_OPT_VERBOSE,
};
extern const char *const cmd_bool_values[], *const cmd_fail_on_values[];
#define CMD_PLANNING_OPTS \
	{ .name = "target", .arg = CMD_ARG_REQUIRED, .id = CMD_OPT_TARGET, .value = CMD_VALUE_ADDRESS }, \
	{ .name = "replace", .arg = CMD_ARG_REQUIRED, .id = CMD_OPT_REPLACE, .value = CMD_VALUE_ADDRESS }, \
	{ .name = "refresh", .arg = CMD_ARG_OPTIONAL, .id = CMD_OPT_REFRESH, .values = cmd_bool_values }, \
	{ .name = "fail-on", .arg = CMD_ARG_REQUIRED, .id = CMD_OPT_FAIL_ON, .values = cmd_fail_on_values }, \
	{ .name = "allow-other-lineage", .arg = CMD_ARG_NONE, .id = CMD_OPT_ALLOW_OTHER_LINEAGE }, \
	{ .name = "allow-released", .arg = CMD_ARG_NONE, .id = CMD_OPT_ALLOW_RELEASED }, \
	{ .name = "verbose", .arg = CMD_ARG_NONE, .id = CMD_OPT_VERBOSE }

/* Handles a given shared flag (-target, -replace, -refresh[=bool], -fail-on,
 * -allow-other-lineage, -allow-released, -verbose):
 * 1 when id is one (err set when its value is bad), else 0. */
int cmd_planning_opt(struct planning_opts *o, int id, const char *value, struct vx_err *err);

/* Parses argv (argv[0] is the command) by e's flags and runs it: the exit code. */
int cmd_run(const struct cmd_entry *e, int argc, char **argv);
/* "vx NAME" or the alias, for messages. */
const char *cmd_called(const struct cmd_entry *e);

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

/* Whether VX_NOTIFY_ALLOW_LOOPBACK=1 lets notifications go to this machine
 * (127.0.0.0/8, ::1, localhost): 1 or 0. */
int cmd_notify_loopback(void);
/* getenv, as the notify targets' variables are read (applying_opts.getenv). */
const char *cmd_getenv(const char *name);
/* VX_LEASE_SECONDS (the state lease; short ones are for tests) into *out in ms,
 * 0 when unset; -1 after saying why when it is not 1 to 86400 seconds. */
int cmd_lease_from_env(const char *cmd, int64_t *out);
/* VX_INFLIGHT_SECONDS (how long a journaled create may be in flight,
 * reconcile/apply.h) into *out in ms, 0 when unset; -1 after saying why. */
int cmd_inflight_from_env(const char *cmd, int64_t *out);

/*
 * The time a command shows ages against ("as of", how long a quota request
 * has waited): the clock's, or VX_NOW's (an RFC 3339 time: tests,
 * reproducible output). Only the times shown: the context's clock stays
 * real, since credentials are signed and checked with it. 0, or -1 after
 * saying why (cmd names the command).
 */
int cmd_shown_now(int64_t *now, const struct vx_ctx *ctx, const char *cmd);

/*
 * A clock that starts at VX_NOW (an RFC 3339 time) and runs on from there
 * at the real clock's pace: a long-running command's clock, so a test can
 * put it where the fake's virtual clock is. Nothing when VX_NOW is unset;
 * -1 (said) when it is not such a time. c must outlive ctx's use.
 */
struct cmd_clock {
	int64_t offset_ms;
};
int cmd_clock_from_env(struct vx_ctx *ctx, struct cmd_clock *c, const char *cmd);

/* Prints "vx: <msg>" on stderr. */
void cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * What every command does with a workspace's events (workflow/workspace.h):
 * a stack's diagnostics, one a line on stderr ("... and N more" when some
 * were dropped); a problem as "vx: <doing>: <msg>".
 */
extern const struct workspace_events cmd_workspace_events;
/* The same, each diagnostic also printed as a GitHub Actions annotation
 * (workflow/ghactions.h) after the plain lines. */
extern const struct workspace_events cmd_workspace_events_annotated;
/* Prints d on stderr, one "FILE:LINE:COLUMN: message" line each, then (annotate)
 * each as a GitHub Actions "::error file=...::" line. */
void cmd_print_diags(const struct vx_diags *d, int annotate);
/* Prints each of a stack's warnings as "FILE:LINE:COLUMN: warning: message" on stderr. */
void cmd_print_warnings(const struct vx_diags *d);
/* Prints d as GitHub Actions "::error file=F,line=L,col=C::message" lines on stderr. */
void cmd_print_annotations(const struct vx_diags *d);
/* -annotations[=true|false] of cmd: *out set; -1 after saying what is wrong. */
int cmd_annotate(const char *cmd, const char *value, int *out);

/* Prints "vx: warning: <msg>" on stderr: a library's warn callback (ud unused). */
void cmd_warn(void *ud, const char *msg);
/*
 * Prints "vx: warning: [stack NAME: ]N state commits skipped (...)" on
 * stderr when a history walk left versions out (state/backend.h); nothing
 * when skips holds none. stack NULL: not named.
 */
struct state_history_skips;
void cmd_warn_skips(const char *stack, const struct state_history_skips *skips);
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

/*
 * 1 in a build with AddressSanitizer, whose LeakSanitizer checks at exit
 * that everything was freed; 0 otherwise. A command that is done may then
 * leave its memory to exit (cmd_done) instead of freeing it block by block.
 */
#if defined(__SANITIZE_ADDRESS__)
#define VX_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VX_LEAK_CHECKED 1
#endif
#endif
#ifndef VX_LEAK_CHECKED
#define VX_LEAK_CHECKED 0
#endif

/*
 * Ends the process with rc when nothing is left to do but free memory:
 * exit(3) flushes the output and the OS takes the memory back at once,
 * where freeing a 10,000-job plan's few hundred thousand blocks took 30 ms
 * (git's UNLEAK is the same idea). Returns (and the caller frees as
 * usual) in a leak-checked build, so LeakSanitizer still sees every path.
 */
void cmd_done(int rc);

#endif
