/*
 * vx import ADDR RESOURCE [DIR]: adopt a resource that exists in the cloud
 * into the state under a declared address (reconcile/import.h says what is
 * checked and recorded).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/import.h"
#include "reconcile/kind.h"
#include "workflow/ci.h"
#include "workflow/importing.h"
#include "util/buf.h"
#include "util/banned.h"

static const char usage_head[] =
	"usage: vx import ADDR RESOURCE [DIR] [-check] [-C DIR]\n\n"
	"Adopts a resource that already exists into the state of the stack in DIR\n"
	"(default .), under the declared address ADDR, as Terraform's import does:\n";
static const char usage_tail[] =
	"It must be in the declared project and region or zone, carry the address's\n"
	"name (reservations, quota preferences), be tracked by no address of this\n"
	"state, by no other state beside it (the repository's vx/state/* branches,\n"
	"the bucket's other states) and by no other stack or state (vx labels, a\n"
	"reservation's description marker). A job without vx labels cannot be given\n"
	"them (a warning says so). A job is imported whatever its state; one that\n"
	"has ended is its record's last run. Once imported, vx owns it: a plan may\n"
	"cancel, replace, resize or delete it as it would one it made.\n\n"
	"What differs from the declaration does not stop the import: the resource is\n"
	"recorded as it is, the differences are listed (live -> declared), and the\n"
	"next plan shows what it will do about them. The state gets one commit.\n\n"
	"options:\n"
	"  -check    only read the resource and say what importing would find;\n"
	"            changes nothing, takes no lock\n"
	"  -C DIR    the stack directory (also -chdir=DIR)\n"
	"  -debug    log every request to stderr (tokens redacted)\n";

/*
 * -help: the usage with each kind's address and the form of the cloud's
 * name it takes (its row's import_form), jobs first (kind_table in reverse
 * phase order); an address too long for the column gets a line of its own.
 */
static int usage_build(struct vx_buf *out)
{
	int rc = vx_buf_adds(out, usage_head);

	for (size_t i = kind_count; rc == 0 && i-- > 0;) {
		const struct kind *k = kind_table[i];
		size_t len = strlen(k->prefix) + strlen(".NAME");

		if (!k->import_form)
			continue;
		if (len <= 16)
			rc = vx_buf_printf(out, "  %s.NAME%*s  %s\n", k->prefix, (int)(16 - len), "", k->import_form);
		else
			rc = vx_buf_printf(out, "  %s.NAME\n%20s%s\n", k->prefix, "", k->import_form);
	}
	if (rc == 0)
		rc = vx_buf_adds(out, usage_tail);
	return rc < 0 ? VX_ENOMEM : 0;
}

enum { IMPORT_OPT_CHECK = 2 };

static const struct cmd_opt import_opts[] = {
	{ .name = "check", .arg = CMD_ARG_NONE, .id = IMPORT_OPT_CHECK },
	{ .name = NULL },
};

/*
 * "job.NAME, reservation.NAME or quota.NAME": an address of each kind, in
 * the reverse of kind_table's phase order (jobs first, as vx has always
 * listed them), cut short at len.
 */
static void address_forms(char *out, size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = kind_count; i-- > 0 && at < len;) {
		/* Before the first none, before the last " or ", else ", ". */
		const char *sep = i + 1 == kind_count ? "" : (i ? ", " : " or ");
		int n = snprintf(out + at, len - at, "%s%s.NAME", sep, kind_table[i]->prefix);

		if (n < 0)
			break;
		at += (size_t)n;
	}
}

/* ADDR RESOURCE [DIR] and the options; VX_EXIT_OK, or VX_EXIT_USAGE after saying why. */
static int import_args(const struct cmd_args *args, const char **address, const char **resource,
		       const char **dir, int *check)
{
	const struct kind *k;
	char forms[256];
	int dir_given = 0;

	*dir = NULL;
	for (size_t i = 0; i < args->nopts; i++)
		if (args->opts[i].id == IMPORT_OPT_CHECK)
			*check = 1;
	for (size_t i = 0; i < args->npos; i++) {
		if (!*address)
			*address = args->pos[i];
		else if (!*resource)
			*resource = args->pos[i];
		else if (cmd_dir_arg("import", dir, &dir_given, args->pos[i]) < 0)
			return VX_EXIT_USAGE;
	}
	if (!*resource) {
		cmd_error("import: usage: vx import ADDR RESOURCE [DIR]");
		return VX_EXIT_USAGE;
	}
	if (cmd_stack_dir(args, *dir, dir) < 0)
		return VX_EXIT_USAGE;
	k = kind_of_address(*address);
	if (!k || !strchr(*address, '.')[1]) {
		address_forms(forms, sizeof(forms));
		cmd_error("import: ADDR is an address such as %s, not '%s'", forms, *address);
		return VX_EXIT_USAGE;
	}
	return VX_EXIT_OK;
}

static int import_exec(const struct cmd_args *args)
{
	struct importing im;
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	struct ci ci = { NULL, 0, NULL, NULL };
	const char *dir = ".", *address = NULL, *resource = NULL;
	int rc, check = 0;

	memset(&im, 0, sizeof(im));
	if ((rc = import_args(args, &address, &resource, &dir, &check)) != VX_EXIT_OK)
		return rc;
	rc = VX_EXIT_ERROR;
	cmd_ctx_init(&ctx, args->debug);
	/* Who imports is recorded as apply records who launches: the same actor and trailers. */
	if (ci_read(&ci, &ctx, cmd_warn, NULL, &err) < 0 ||
	    importing_run(&im, &ctx, dir, address, resource, check, &ci, &cmd_workspace_events, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (im.out.warning)
		cmd_error("warning: %s", im.out.warning);
	if (im.out.differs)
		printf("%s: %s %s (%s); differs from the declaration: %s; %s\n", address,
		       check ? "would import" : "imported", im.out.resource, im.out.status, im.out.differs,
		       im.out.next);
	else
		printf("%s: %s %s (%s); it matches the declaration\n", address, check ? "would import" : "imported",
		       im.out.resource, im.out.status);
	rc = VX_EXIT_OK;
done:
	importing_close(&im);
	ci_release(&ci);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_import_entry = {
	.name = "import",
	.summary = "adopt an existing job, reservation or quota preference (import ADDR RESOURCE)",
	.usage_build = usage_build,
	.opts = import_opts,
	.exec = import_exec,
	.stack_dir = 1,
};
