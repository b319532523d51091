/*
 * vx: one binary, dispatching on argv[0] (vxplan, vxapply) or on the first
 * argument (vx plan, vx apply, ...). The table below is the list of commands;
 * each entry (name, usage, flags, exec) lives in its cmd/<verb>.c.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "util/json.h"
#include "util/suggest.h"
#include "util/banned.h"

static const struct cmd_entry *const commands[] = {
	&cmd_plan_entry, &cmd_apply_entry, &cmd_validate_entry, &cmd_doctor_entry, &cmd_log_entry, &cmd_logs_entry,
	&cmd_status_entry, &cmd_show_entry, &cmd_state_entry, &cmd_unlock_entry, &cmd_import_entry, &cmd_watch_entry,
	&cmd_report_entry, &cmd_version_entry, &cmd_help_entry, &cmd_completion_entry, &cmd_complete_entry,
	&cmd_endpoints_entry,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char help_usage[] = "usage: vx help\n\nLists the commands.\n";

static int help_exec(const struct cmd_args *args)
{
	(void)args;
	printf("usage: vx <command> [arguments]\n"
	       "       vxplan [DIR] ...   (same as 'vx plan')\n"
	       "       vxapply [DIR|PLANFILE] ...   (same as 'vx apply')\n\n"
	       "vx reconciles Vertex AI training jobs, Compute Engine GPU reservations and\n"
	       "Cloud Quotas preferences declared as YAML in git.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!commands[i]->hidden)
			printf("  %-10s %s\n", commands[i]->name, commands[i]->summary);
	printf("\n'vx <command> -help' shows a command's options.\n"
	       "Environment: VX_LOG=debug logs each request to stderr (tokens redacted);\n"
	       "NO_COLOR turns colour off.\n");
	return VX_EXIT_OK;
}

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.summary = "show this help",
	.usage = help_usage,
	.exec = help_exec,
};

const struct cmd_entry *const *cmd_table(size_t *n)
{
	*n = NCOMMANDS;
	return commands;
}

/* The command called name, or (as_binary) whose binary is name: vxplan. */
static const struct cmd_entry *find_command(const char *name, int as_binary)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (as_binary ? commands[i]->alias && !strcmp(commands[i]->alias, name)
			      : !strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

const struct cmd_entry *cmd_find(const char *name)
{
	return find_command(name, 0);
}

/*
 * A 10,000-job plan grows the heap to about 150 MiB in waves (the YAML tree,
 * the state's records, each list page). glibc grew it 128 KiB past each
 * request, so the kernel was asked again and again and the plan spent a
 * sixth of its CPU there: a 32 MiB pad (address space; a page costs only
 * once touched). Not also a high trim threshold: with both, a 4,000-create
 * apply took 2.4 times the CPU (docs/measurements.md).
 */
static void heap_tuning(void)
{
	mallopt(M_TOP_PAD, 32 << 20);
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	const struct cmd_entry *c;

	base = base ? base + 1 : argv[0];
	vx_json_hooks_install(); /* before any thread: util/json.h */
	heap_tuning();
	/* Completion scripts ask whichever binary was typed, vxplan too. */
	if (argc >= 2 && !strcmp(argv[1], cmd_complete_entry.name))
		return cmd_run(&cmd_complete_entry, argc - 1, argv + 1);
	if ((c = find_command(base, 1)))
		return cmd_run(c, argc, argv);
	if (argc < 2) {
		help_exec(NULL);
		return VX_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "-help") || !strcmp(argv[1], "--help"))
		return help_exec(NULL);
	if (!strcmp(argv[1], "-v") || !strcmp(argv[1], "-version") || !strcmp(argv[1], "--version"))
		return cmd_version_entry.exec(NULL);
	c = find_command(argv[1], 0);
	if (!c) {
		const char *names[NCOMMANDS];
		const char *near;
		size_t n = 0;

		for (size_t i = 0; i < NCOMMANDS; i++)
			if (!commands[i]->hidden)
				names[n++] = commands[i]->name;
		near = vx_suggest(argv[1], names, n);
		if (near)
			fprintf(stderr, "vx: unknown command \"%s\" (did you mean \"%s\"?)\n", argv[1], near);
		else
			fprintf(stderr, "vx: unknown command \"%s\" (see 'vx help')\n", argv[1]);
		return VX_EXIT_USAGE;
	}
	return cmd_run(c, argc - 1, argv + 1);
}
