/*
 * vx state list [DIR] | vx state show ADDR [DIR]: what the state holds.
 * vx state rm ADDR... | vx state mv OLD NEW: stop managing, or rename, an address.
 * vx state restore [-serial N] [DIR]: put a deleted state back from its history.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "workflow/ci.h"
#include "workflow/stateedit.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx state list [DIR] [-debug]\n"
	"       vx state show ADDR [DIR] [-debug]\n"
	"       vx state rm ADDR... [DIR] [-reason TEXT] [-dry-run] [-debug]\n"
	"       vx state mv OLD NEW [DIR] [-reason TEXT] [-dry-run] [-debug]\n"
	"       vx state restore [-serial N] [DIR] [-debug]\n\n"
	"list: every address in the state with its current run and last seen state.\n"
	"show: one record as stored (JSON; secrets are never stored).\n"
	"rm: vx stops managing ADDR (a sweep's address or slice names its runs): its\n"
	"  record leaves the state, under the state lease, in a state commit naming who\n"
	"  and why (-reason; 'vx log' shows it). The live job is left running; Vertex\n"
	"  cannot relabel a job, so its name is kept in the state as released: no plan\n"
	"  adopts or cancels it again, and one that still declares ADDR creates a new\n"
	"  job. A reservation or quota preference is left as it is too, but Google\n"
	"  names it by NAME, so a plan that still declares it adopts it again.\n"
	"mv: a job renamed in the YAML keeps its runs: the record moves from OLD to NEW\n"
	"  (no cancel, no create; the live job keeps its labels and vx follows it by\n"
	"  name). Refused when OLD is not in the state, NEW is, either is no job's\n"
	"  address, or one is a sweep's run and the other a job.\n"
	"restore: when the state was deleted (gcs: state.json is gone; git: the state\n"
	"  branch is gone) but its history is still there, plan and apply refuse to\n"
	"  start a new state (that would create every job again) and name the newest\n"
	"  version. restore puts that version (or serial N's) back as it was: same\n"
	"  lineage, serial and records, under the state lease. gcs: state.json from\n"
	"  history/N.json; git: the branch at the commit its remote-tracking ref or\n"
	"  its reflog names. It refuses when a state exists.\n\n"
	"options:\n"
	"  -reason TEXT   rm, mv: why, recorded in the state's history (at most 500)\n"
	"  -dry-run       rm, mv: say what would be done, change nothing\n"
	"  -serial N      restore: the version to restore (default: the newest)\n"
	"DIR is the stack directory (default .; -C DIR and -chdir=DIR also work).\n"
	"-debug logs every request to stderr (tokens redacted).\n";

enum { STATE_OPT_SERIAL = 2, STATE_OPT_REASON, STATE_OPT_DRY_RUN };

static const struct cmd_opt state_opts[] = {
	{ .name = "serial", .arg = CMD_ARG_REQUIRED, .id = STATE_OPT_SERIAL },
	{ .name = "reason", .arg = CMD_ARG_REQUIRED, .id = STATE_OPT_REASON },
	{ .name = "dry-run", .arg = CMD_ARG_NONE, .id = STATE_OPT_DRY_RUN },
	{ .name = NULL },
};

/* What vx state was asked, from its arguments. */
struct state_args {
	const char *verb, *dir, *reason;
	const char **addrs;       /* show's, rm's and mv's addresses, in order */
	size_t naddrs;
	int dir_given, dry_run;
	uint64_t serial;
};

/* vx state restore: the lease, the backend's restore, what it did. */
static int state_restore_exec(struct workspace *ws, uint64_t serial)
{
	struct state_lock_opts lo;
	struct vx_err err = VX_ERR_INIT;
	char *what = NULL;
	int rc = VX_EXIT_ERROR;

	memset(&lo, 0, sizeof(lo));
	lo.operation = "restore";
	if (state_lock_acquire(ws->backend, &lo, &err) < 0) {
		cmd_report(&err, "state restore");
		return rc;
	}
	if (state_restore(ws->backend, serial, &what, &err) < 0)
		cmd_report(&err, NULL);
	else
		rc = VX_EXIT_OK;
	if (state_lock_drop(ws->backend, &err) < 0) {
		cmd_report(&err, "state restore: releasing the lease");
		rc = VX_EXIT_ERROR;
	}
	if (what)
		printf("%s\n", what);
	free(what);
	return rc;
}

/* -serial N: a positive decimal number. */
static int parse_serial(const char *v, uint64_t *out)
{
	char *end = NULL;
	unsigned long long n;

	errno = 0;
	n = v && *v >= '1' && *v <= '9' ? strtoull(v, &end, 10) : 0;
	if (!n || errno || *end) {
		cmd_error("state restore: -serial wants a serial number (1 or more), not '%s'",
			  v ? v : "");
		return -1;
	}
	*out = n;
	return 0;
}

/* vx state list: one line per record, then the pending intents. */
static void print_list(const struct state *st)
{
	for (size_t i = 0; i < st->nrecords; i++) {
		const struct state_record *r = &st->records[i];

		printf("%-32s %s %s\n", r->address,
		       r->current && r->current->resource ? r->current->resource : "-",
		       !r->current ? "" : r->current->has_value && r->current->state
		       ? r->current->state : job_state_short(r->current->state));
	}
	for (size_t i = 0; i < st->njournal; i++)
		printf("%-32s (pending intent: %s not confirmed)\n", st->journal[i].address,
		       st->journal[i].op);
}

/* vx state rm / mv: the lease, the change, what it did. */
static int state_edit_exec(struct workspace *ws, const struct state_args *a)
{
	struct stateedit_opts o;
	struct ci ci = { NULL, 0, NULL, NULL };
	struct vx_err err = VX_ERR_INIT;
	char *report = NULL;
	int rc = VX_EXIT_ERROR, r;

	memset(&o, 0, sizeof(o));
	o.ci = &ci;
	o.reason = a->reason;
	o.dry_run = a->dry_run;
	if (cmd_lease_from_env("state", &o.lease_ms) < 0)
		return rc;
	if (ci_read(&ci, ws->ctx, cmd_warn, NULL, &err) < 0) {
		cmd_report(&err, NULL);
		return rc;
	}
	r = !strcmp(a->verb, "rm") ? stateedit_rm(ws, a->addrs, a->naddrs, &o, &report, &err)
				   : stateedit_mv(ws, a->addrs[0], a->addrs[1], &o, &report, &err);
	if (r < 0) {
		cmd_report(&err, a->verb[0] == 'r' ? "state rm" : "state mv");
	} else {
		fputs(report, stdout);
		rc = VX_EXIT_OK;
	}
	free(report);
	ci_release(&ci);
	return rc;
}

/* vx state list / show ADDR: 0 or an exit code. */
static int state_read_exec(struct workspace *ws, const struct state_args *a)
{
	struct vx_err err = VX_ERR_INIT;
	const struct state_record *r;
	char *json = NULL;

	if (workspace_load_state(ws, &err) < 0) {
		cmd_report(&err, NULL);
		return VX_EXIT_ERROR;
	}
	if (!strcmp(a->verb, "list")) {
		print_list(&ws->state);
		return VX_EXIT_OK;
	}
	if (!(r = state_find(&ws->state, a->addrs[0]))) {
		cmd_error("state show: %s is not in the state", a->addrs[0]);
		return VX_EXIT_ERROR;
	}
	if (state_record_to_json(r, &json, &err) < 0) {
		cmd_report(&err, NULL);
		return VX_EXIT_ERROR;
	}
	fputs(json, stdout);
	free(json);
	return VX_EXIT_OK;
}

/* Whether the arguments fit the verb (else the usage is printed). */
static int state_args_fit(const struct state_args *a)
{
	const char *v = a->verb;
	int rm = v && !strcmp(v, "rm"), mv = v && !strcmp(v, "mv"), show = v && !strcmp(v, "show");

	if (!v || (!rm && !mv && !show && strcmp(v, "list") && strcmp(v, "restore")))
		return 0;
	if ((show && a->naddrs != 1) || (rm && !a->naddrs) || (mv && a->naddrs != 2) ||
	    (!rm && !mv && !show && a->naddrs))
		return 0;
	return !(a->serial && strcmp(v, "restore")) && !((a->reason || a->dry_run) && !rm && !mv);
}

/* Parses the arguments into *a: 0, or an exit code after saying what is wrong. */
static int state_parse(struct state_args *a, const struct cmd_args *args)
{
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		if (args->opts[i].id == STATE_OPT_SERIAL) {
			if (parse_serial(v, &a->serial) < 0)
				return VX_EXIT_USAGE;
		} else if (args->opts[i].id == STATE_OPT_REASON) {
			a->reason = v;
		} else if (args->opts[i].id == STATE_OPT_DRY_RUN) {
			a->dry_run = 1;
		}
	}
	if (!(a->addrs = calloc(args->npos + 1, sizeof(*a->addrs)))) {
		cmd_error("state: out of memory");
		return VX_EXIT_ERROR;
	}
	for (size_t i = 0; i < args->npos; i++) {
		const char *p = args->pos[i];

		if (!a->verb)
			a->verb = p;
		else if ((!strcmp(a->verb, "show") && !a->naddrs) || cmd_is_address(p))
			a->addrs[a->naddrs++] = p; /* show's first argument is the address, whatever it looks like */
		else if (cmd_dir_arg("state", &a->dir, &a->dir_given, p) < 0)
			return VX_EXIT_USAGE;
	}
	if (!state_args_fit(a)) {
		fputs(usage, stderr);
		return VX_EXIT_USAGE;
	}
	return cmd_stack_dir(args, a->dir, &a->dir) < 0 ? VX_EXIT_USAGE : 0;
}

static int state_exec(const struct cmd_args *args)
{
	struct state_args a;
	struct vx_ctx ctx;
	struct workspace ws;
	struct vx_err err = VX_ERR_INIT;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&ws, 0, sizeof(ws));
	if ((rc = state_parse(&a, args)) != 0)
		goto done;
	rc = VX_EXIT_ERROR;
	cmd_ctx_init(&ctx, args->debug);
	if (workspace_open_lenient(&ws, &ctx, a.dir, &cmd_workspace_events, &err) < 0)
		cmd_report(&err, NULL);
	else if (!strcmp(a.verb, "restore"))
		rc = state_restore_exec(&ws, a.serial);
	else if (!strcmp(a.verb, "rm") || !strcmp(a.verb, "mv"))
		rc = state_edit_exec(&ws, &a);
	else
		rc = state_read_exec(&ws, &a);
done:
	free(a.addrs);
	workspace_close(&ws);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_state_entry = {
	.name = "state",
	.summary = "list, show, remove or move state records, or restore a deleted state "
		   "(state list | show ADDR | rm ADDR... | mv OLD NEW | restore)",
	.usage = usage,
	.opts = state_opts,
	.exec = state_exec,
	.stack_dir = 1,
	.subcommands = (const char *const[]){ "list", "show", "rm", "mv", "restore", NULL },
};
