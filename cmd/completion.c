/*
 * vx completion bash|zsh|fish: the completion script, written from the
 * command table (util/completion.c), so a command or flag added to the table
 * completes with no other edit. vx __complete (hidden): what the scripts and
 * the tests ask the binary: a stack's addresses, the commands, a command's flags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "util/buf.h"
#include "util/completion.h"
#include "util/diag.h"
#include "util/err.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx completion bash|zsh|fish\n\n"
	"Prints the shell completion script for vx, vxplan and vxapply: commands,\n"
	"flags, the values of -format and the other flags that take a fixed set, and\n"
	"for -target and -replace the addresses of the stack being planned (the -C\n"
	"directory or DIR argument typed so far, else the current directory).\n"
	"  bash:  source <(vx completion bash)      (in ~/.bashrc)\n"
	"  zsh:   source <(vx completion zsh)       (in ~/.zshrc, after compinit)\n"
	"  fish:  vx completion fish | source       (in ~/.config/fish/config.fish)\n"
	"The Debian package installs all three where each shell looks.\n";

static enum completion_value value_of(enum cmd_value v)
{
	switch (v) {
	case CMD_VALUE_ADDRESS:
		return COMPLETION_VALUE_ADDRESS;
	case CMD_VALUE_DIR:
		return COMPLETION_VALUE_DIR;
	case CMD_VALUE_FILE:
		return COMPLETION_VALUE_FILE;
	default:
		return COMPLETION_VALUE_TEXT;
	}
}

static struct completion_flag flag_of(const struct cmd_opt *o)
{
	return (struct completion_flag){
		.name = o->name,
		.values = o->values,
		.value = value_of(o->value),
		.arg = o->arg == CMD_ARG_NONE ? COMPLETION_ARG_NONE
		     : o->arg == CMD_ARG_REQUIRED ? COMPLETION_ARG_REQUIRED : COMPLETION_ARG_OPTIONAL,
	};
}

/* The table as util/completion.h describes it, hidden commands left out: into
 * cmds (n of them), whose flags all point into *flags. Caller frees both. */
static int describe(struct completion_cmd **cmds, struct completion_flag **flags, size_t *n)
{
	size_t nt, nf = 0;
	const struct cmd_entry *const *t = cmd_table(&nt);
	struct completion_flag *f;

	for (size_t i = 0; i < nt; i++) {
		for (const struct cmd_opt *o = t[i]->opts; o && o->name; o++)
			nf++;
		for (const struct cmd_opt *o = cmd_stack_opts; t[i]->stack_dir && o->name; o++)
			nf++;
	}
	*n = 0;
	*cmds = calloc(nt + 1, sizeof(**cmds)); /* + 1: calloc(0) may return NULL */
	*flags = f = calloc(nf + 1, sizeof(**flags));
	if (!*cmds || !f)
		return VX_ENOMEM;
	for (size_t i = 0; i < nt; i++) {
		struct completion_cmd *c = &(*cmds)[*n];

		if (t[i]->hidden)
			continue;
		*c = (struct completion_cmd){ .name = t[i]->name, .alias = t[i]->alias, .summary = t[i]->summary,
					      .flags = f, .subcommands = t[i]->subcommands };
		for (const struct cmd_opt *o = t[i]->opts; o && o->name; o++, f++, c->nflags++)
			*f = flag_of(o);
		for (const struct cmd_opt *o = cmd_stack_opts; t[i]->stack_dir && o->name; o++, f++, c->nflags++)
			*f = flag_of(o);
		(*n)++;
	}
	return 0;
}

static int completion_exec(const struct cmd_args *args)
{
	struct completion_cmd *cmds = NULL;
	struct completion_flag *flags = NULL;
	struct vx_buf out = VX_BUF_INIT;
	size_t n = 0;
	int rc = VX_EXIT_USAGE, r;

	if (args->npos != 1 || (strcmp(args->pos[0], "bash") && strcmp(args->pos[0], "zsh") &&
				strcmp(args->pos[0], "fish"))) {
		cmd_error("completion: which shell? vx completion bash, zsh or fish");
		return rc;
	}
	r = describe(&cmds, &flags, &n);
	if (r == 0)
		r = completion_script(&out, args->pos[0], "vx", cmds, n);
	if (r < 0) {
		cmd_error("completion: %s", r == VX_ENOMEM ? "out of memory" : "a name in the command table "
			  "cannot be written into a script");
		rc = VX_EXIT_ERROR;
	} else {
		fputs(vx_buf_str(&out), stdout);
		rc = fflush(stdout) == 0 ? VX_EXIT_OK : VX_EXIT_ERROR;
	}
	free(flags);
	free(cmds);
	vx_buf_release(&out);
	return rc;
}

const struct cmd_entry cmd_completion_entry = {
	.name = "completion",
	.summary = "print the shell completion script (completion bash|zsh|fish)",
	.usage = usage,
	.exec = completion_exec,
	.subcommands = (const char *const[]){ "bash", "zsh", "fish", NULL },
};

/* The stack's addresses, one a line; nothing at all when it does not load. */
static int print_addresses(const char *dir)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf out = VX_BUF_INIT;
	struct stack *st = NULL;

	if (stack_load_lenient(&st, dir, NULL, 0, NULL, &diags, &err) == 0 && sweep_stack_addresses(&out, st) == 0)
		fputs(vx_buf_str(&out), stdout);
	vx_buf_release(&out);
	stack_free(st);
	vx_diags_release(&diags);
	vx_err_release(&err);
	return VX_EXIT_OK;
}

/* Every flag of e, as its -help must list it: the table's, and -C and -chdir
 * where it takes a stack (not -help and -debug, which every command has). */
static void print_flags(const struct cmd_entry *e)
{
	for (const struct cmd_opt *o = e->opts; o && o->name; o++)
		printf("-%s\n", o->name);
	for (const struct cmd_opt *o = cmd_stack_opts; e->stack_dir && o->name; o++)
		printf("-%s\n", o->name);
}

static int complete_exec(const struct cmd_args *args)
{
	const char *what = args->npos ? args->pos[0] : "";
	const struct cmd_entry *e;
	size_t n;

	if (!strcmp(what, "addresses") && args->npos <= 2)
		return print_addresses(args->npos == 2 ? args->pos[1] : ".");
	if (!strcmp(what, "commands") && args->npos == 1) {
		const struct cmd_entry *const *t = cmd_table(&n);

		for (size_t i = 0; i < n; i++)
			if (!t[i]->hidden)
				printf("%s\n", t[i]->name);
		return VX_EXIT_OK;
	}
	if (!strcmp(what, "flags") && args->npos == 2 && (e = cmd_find(args->pos[1]))) {
		print_flags(e);
		return VX_EXIT_OK;
	}
	cmd_error("__complete: usage: vx __complete addresses [DIR] | commands | flags COMMAND");
	return VX_EXIT_USAGE;
}

const struct cmd_entry cmd_complete_entry = {
	.name = "__complete",
	.summary = "what completion scripts ask",
	.usage = "usage: vx __complete addresses [DIR] | commands | flags COMMAND\n\n"
		 "For completion scripts and tests: a stack's addresses (silent when it does not\n"
		 "load), the commands, a command's flags. Reads no state, sends nothing.\n",
	.exec = complete_exec,
	.hidden = 1,
};
