/*
 * vx: one binary, dispatching on argv[0] (vxplan, vxapply) or on the first
 * argument (vx plan, vx apply, ...). The table below is the list of commands.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "util/suggest.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "plan", cmd_plan, "show what apply would create, cancel, resubmit or change" },
	{ "apply", cmd_apply, "make the cloud match the declaration, recording it in git" },
	{ "validate", cmd_validate, "check a stack's YAML without touching the cloud" },
	{ "doctor", cmd_doctor, "check credentials, project and API access" },
	{ "log", cmd_log, "show the history of runs from the state branch" },
	{ "state", cmd_state, "list or show state records (state list | state show ADDR)" },
	{ "unlock", cmd_unlock, "clear a stuck apply lock (unlock ID [DIR])" },
	{ "version", cmd_version, "print the version" },
	{ "help", cmd_help, "show this help" },
};

int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("usage: vx <command> [arguments]\n"
	       "       vxplan [DIR] ...   (same as 'vx plan')\n"
	       "       vxapply [DIR|PLANFILE] ...   (same as 'vx apply')\n\n"
	       "vx reconciles Vertex AI training jobs, Compute Engine GPU reservations and\n"
	       "Cloud Quotas preferences declared as YAML in git.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].summary);
	printf("\n'vx <command> -help' shows a command's options.\n"
	       "Environment: VX_LOG=debug logs each request to stderr (tokens redacted);\n"
	       "NO_COLOR turns colour off.\n");
	return VX_EXIT_OK;
}

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("vx %s\n", VX_VERSION);
	return VX_EXIT_OK;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	const struct command *c;

	base = base ? base + 1 : argv[0];
	if (!strcmp(base, "vxplan") || !strcmp(base, "vxapply")) {
		c = find_command(base + 2);
		return c->fn(argc, argv);
	}
	if (argc < 2) {
		cmd_help(argc, argv);
		return VX_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "-help") || !strcmp(argv[1], "--help"))
		return cmd_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-v") || !strcmp(argv[1], "-version") || !strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	c = find_command(argv[1]);
	if (!c) {
		const char *names[sizeof(commands) / sizeof(commands[0])];
		const char *near;

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			names[i] = commands[i].name;
		near = vx_suggest(argv[1], names, sizeof(names) / sizeof(names[0]));
		if (near)
			fprintf(stderr, "vx: unknown command \"%s\" (did you mean \"%s\"?)\n", argv[1], near);
		else
			fprintf(stderr, "vx: unknown command \"%s\" (see 'vx help')\n", argv[1]);
		return VX_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
