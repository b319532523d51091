/*
 * vx version [-format human|json]: vx's version, the commit it was built
 * from and the libraries it runs with (workflow/version.c finds them).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "util/buf.h"
#include "workflow/version.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx version [options]\n\n"
	"Prints vx's version, the git commit it was built from ('-dirty' when the\n"
	"tree had changes, 'unknown' outside git) and the versions of libcurl,\n"
	"libyaml, cJSON, OpenSSL and libgit2 it runs with, as the libraries report\n"
	"themselves. Also: vx -version.\n\n"
	"options:\n"
	"  -format FMT     human (default) or json\n"
	"  -debug          accepted, as by every command\n";

enum { VERSION_OPT_FORMAT = 1 };

static const struct cmd_opt version_opts[] = {
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = VERSION_OPT_FORMAT, .values = cmd_formats_status },
	{ .name = NULL },
};

static int version_exec(const struct cmd_args *args)
{
	struct version_info v;
	struct vx_buf out = VX_BUF_INIT;
	const char *format = "human";
	int rc = VX_EXIT_ERROR, r;

	for (size_t i = 0; args && i < args->nopts; i++)
		if (args->opts[i].id == VERSION_OPT_FORMAT)
			format = args->opts[i].value;
	if (args && args->npos) {
		cmd_error("version: takes no arguments (see 'vx version -help')");
		return VX_EXIT_USAGE;
	}
	if (!format || (strcmp(format, "human") && strcmp(format, "json"))) {
		cmd_error("version: -format must be human or json");
		return VX_EXIT_USAGE;
	}
	version_info_get(&v);
	if (!strcmp(format, "json"))
		r = version_render_json(&out, &v) < 0 || vx_buf_addc(&out, '\n') < 0 ? -1 : 0;
	else
		r = version_render_human(&out, &v);
	if (r < 0) {
		cmd_error("version: out of memory");
		goto done;
	}
	fputs(vx_buf_str(&out), stdout);
	rc = fflush(stdout) == 0 ? VX_EXIT_OK : VX_EXIT_ERROR;
done:
	vx_buf_release(&out);
	return rc;
}

const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.summary = "print the version, commit and library versions",
	.usage = usage,
	.opts = version_opts,
	.exec = version_exec,
};
