/*
 * vx doctor [DIR]: where credentials come from, which project and endpoints
 * are used, and whether the caller holds what the stack needs and its APIs
 * are on (workflow/doctor.c). How a new user checks their setup, and how CI
 * checks its login.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "providers/gcp/auth.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/http.h"
#include "providers/gcp/iamtest.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/diag.h"
#include "workflow/doctor.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx doctor [DIR] [-plan-only] [-C DIR] [-debug]\n\n"
	"Shows where credentials come from (never the token), which project and endpoints\n"
	"are used, and asks Google, changing nothing, whether the caller may do what the\n"
	"stack in DIR needs: one testIamPermissions call on the project, one on the gcs state\n"
	"bucket, one on each job's service account (iam.serviceAccounts.actAs), each missing\n"
	"permission listed with the smallest role that grants it; and which APIs the stack\n"
	"calls are disabled, with the 'gcloud services enable' line. Without -plan-only it\n"
	"checks what plan, apply, watch and import need; with it, what plan needs.\n"
	"Exit 0 when all checks pass. DIR (default .) is a stack; without one, the project\n"
	"comes from the environment and every kind is assumed. docs/permissions.md lists\n"
	"every method, permission and role. -C DIR (or -chdir=DIR) is the same as DIR.\n"
	"Some endpoints overridden (CLOUDSDK_API_ENDPOINT_OVERRIDES_*) and others not fails\n"
	"the endpoints check, naming the APIs that would still go to Google.\n";

enum { OPT_PLAN_ONLY = 1 };

static const struct cmd_opt opts[] = {
	{ .name = "plan-only", .arg = CMD_ARG_NONE, .id = OPT_PLAN_ONLY },
	{ .name = NULL },
};

static int report(const char *what, int rc, struct vx_err *err, const char *detail)
{
	if (rc < 0)
		printf("  %-12s FAIL  %s\n", what, vx_err_msg(err));
	else
		printf("  %-12s ok    %s\n", what, detail ? detail : "");
	vx_err_release(err);
	return rc < 0;
}

/*
 * The endpoints line. Some overridden and others not is a failure: a sandbox or
 * a proxy that misses an API, whose calls then go to Google (with credentials
 * meant for the other place) or hang resolving it. Either every API has its
 * override or none does. 1 when mixed (said, naming the real ones).
 */
static int endpoints_line(const struct gcp_endpoints *ep)
{
	struct vx_buf names = VX_BUF_INIT, vars = VX_BUF_INIT;
	size_t nreal = 0, nvar = 0;
	int bad = 0;

	for (int api = 0; api < GCP_API_COUNT; api++) {
		const char *var = gcp_api_override_var((enum gcp_api)api);

		if (!var)
			continue; /* derived from another API's (the storage upload base) */
		nvar++;
		if (ep->overridden[api])
			continue;
		nreal++;
		if (vx_buf_printf(&names, "%s%s", names.len ? ", " : "", gcp_api_name((enum gcp_api)api)) < 0 ||
		    vx_buf_printf(&vars, "%s%s", vars.len ? ", " : "", var) < 0)
			bad = 1;
	}
	if (nreal == nvar)
		printf("  %-12s ok    Google's own\n", "endpoints");
	else if (nreal == 0)
		printf("  %-12s ok    every API overridden\n", "endpoints");
	else if (bad)
		printf("  %-12s FAIL  some APIs are overridden and others are not\n", "endpoints");
	else
		printf("  %-12s FAIL  %zu of the %zu APIs %s Google's own while the others are overridden: %s; "
		       "set %s too, or no override at all\n", "endpoints", nreal, nvar, nreal == 1 ? "is" : "are",
		       vx_buf_str(&names), vx_buf_str(&vars));
	vx_buf_release(&names);
	vx_buf_release(&vars);
	return nreal != 0 && nreal != nvar;
}

/* What the stack needs, asked of Google (workflow/doctor.c). 1 when a check failed. */
static int check_needs(struct vx_ctx *ctx, struct gcp_http *http, const struct gcp_endpoints *ep,
		       const struct stack *st, const char *project, int plan_only)
{
	struct iamtest_client c = { .http = http, .ctx = ctx, .ep = ep };
	struct doctor_opts o = { .plan_only = plan_only };
	struct doctor_report r = DOCTOR_REPORT_INIT;
	struct vx_err err = VX_ERR_INIT;
	int failed;

	if (doctor_check(&r, &c, st, project, &o, &err) < 0)
		return report("checks", -1, &err, NULL);
	for (size_t i = 0; i < r.n; i++) {
		printf("  %-12s %-5s %s\n", r.lines[i].name, r.lines[i].status == DOCTOR_OK ? "ok" : "FAIL",
		       r.lines[i].text);
		for (size_t k = 0; k < r.lines[i].nmore; k++)
			printf("  %-12s       %s\n", "", r.lines[i].more[k]);
	}
	failed = r.failed;
	doctor_report_release(&r);
	return failed;
}

/* The stack in dir, or NULL (said either way). */
static struct stack *doctor_stack(const char *dir)
{
	struct vx_err err = VX_ERR_INIT;
	struct vx_diags diags = VX_DIAGS_INIT;
	struct stack *st = NULL;

	if (stack_load_lenient(&st, dir, NULL, 0, NULL, &diags, &err) == 0) {
		printf("  %-12s ok    %s in %s\n", "stack", st->name, dir);
	} else {
		printf("  %-12s --    no valid stack in %s (run 'vx validate %s'); using the environment\n",
		       "stack", dir, dir);
		vx_err_release(&err);
	}
	vx_diags_release(&diags);
	return st;
}

static int doctor_exec(const struct cmd_args *args)
{
	struct vx_ctx ctx;
	struct vx_err err = VX_ERR_INIT;
	struct gcp_endpoints ep = GCP_ENDPOINTS_INIT;
	struct gcp_auth *auth = NULL;
	struct gcp_http *auth_http = NULL, *http = NULL;
	struct gcp_http_options ho;
	struct stack *st = NULL;
	const char *dir = ".", *from = NULL;
	char *project = NULL, *token = NULL, *detail = NULL;
	int failed = 0, rc = VX_EXIT_ERROR, r, plan_only = 0;

	for (size_t i = 0; i < args->nopts; i++)
		plan_only |= args->opts[i].id == OPT_PLAN_ONLY;
	if (cmd_stack_dir(args, args->npos ? args->pos[args->npos - 1] : NULL, &dir) < 0)
		return VX_EXIT_USAGE;
	cmd_ctx_init(&ctx, args->debug);
	printf("vx %s doctor\n", VX_VERSION);
	st = doctor_stack(dir);

	if (gcp_endpoints_load(&ep, &ctx, &err) < 0) {
		failed = report("endpoints", -1, &err, NULL);
		goto done;
	}
	failed |= endpoints_line(&ep);
	for (int api = 0; api < GCP_API_COUNT; api++)
		printf("  %-18s %s%s\n", gcp_api_name((enum gcp_api)api), ep.base[api],
		       ep.overridden[api] ? " (override)" : "");

	r = gcp_auth_new(&auth, &ctx, NULL, &err);
	if (report("credentials", r, &err, r == 0 ? gcp_auth_describe(auth) : NULL)) {
		failed = 1;
		goto done;
	}
	memset(&ho, 0, sizeof(ho));
	ho.quota_project = gcp_auth_quota_project(auth);
	if (gcp_http_new(&auth_http, &ctx, NULL, NULL, &err) < 0 ||
	    gcp_http_new(&http, &ctx, &ho, gcp_auth_token_source(auth), &err) < 0) {
		report("http", -1, &err, NULL);
		failed = 1;
		goto done;
	}
	gcp_auth_set_http(auth, auth_http);
	r = gcp_auth_token(auth, &token, &err);
	failed |= report("token", r, &err, "obtained (never shown)");
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
		token = NULL;
	}
	if (r < 0)
		goto done;
	r = gcp_auth_project(auth, st ? st->project : NULL, &project, &from, &err);
	if (r == 0) {
		detail = vx_asprintf("%s (from %s)", project, from ? from : "?");
		failed |= report("project", 0, &err, detail);
	} else {
		failed |= report("project", r, &err, NULL);
		goto done;
	}
	failed |= check_needs(&ctx, http, &ep, st, project, plan_only);
done:
	if (!failed)
		rc = VX_EXIT_OK;
	printf("%s\n", failed ? "Some checks failed." : "All checks passed.");
	free(detail);
	free(project);
	gcp_http_free(http);
	gcp_http_free(auth_http);
	gcp_auth_free(auth);
	gcp_endpoints_release(&ep);
	stack_free(st);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.summary = "check credentials, and the permissions and APIs the stack needs",
	.usage = usage,
	.opts = opts,
	.exec = doctor_exec,
	.stack_dir = 1,
};

/*
 * vx __endpoints (hidden): the table of every API vx can call, its override
 * variable and the URL in force, as JSON, so a tool that points vx elsewhere (the
 * sandbox, its test) can check it sets them all without reading vx's sources.
 */
static int endpoints_exec(const struct cmd_args *args)
{
	struct gcp_endpoints ep = GCP_ENDPOINTS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct vx_ctx ctx;
	cJSON *doc = NULL, *list;
	char *text = NULL;
	int rc = VX_EXIT_ERROR;

	(void)args;
	vx_ctx_init(&ctx);
	if (gcp_endpoints_load(&ep, &ctx, &err) < 0) {
		cmd_error("%s", vx_err_msg(&err));
		goto done;
	}
	if (!(doc = cJSON_CreateObject()) || !(list = cJSON_AddArrayToObject(doc, "endpoints")))
		goto nomem;
	for (int api = 0; api < GCP_API_COUNT; api++) {
		const char *var = gcp_api_override_var((enum gcp_api)api);
		cJSON *one = cJSON_CreateObject();

		if (!one)
			goto nomem;
		if (!cJSON_AddItemToArray(list, one)) {
			cJSON_Delete(one);
			goto nomem;
		}
		if (!cJSON_AddStringToObject(one, "api", gcp_api_name((enum gcp_api)api)) ||
		    !(var ? cJSON_AddStringToObject(one, "variable", var) : cJSON_AddNullToObject(one, "variable")) ||
		    !cJSON_AddStringToObject(one, "url", ep.base[api]) ||
		    !cJSON_AddBoolToObject(one, "overridden", ep.overridden[api]))
			goto nomem;
	}
	if (!(text = cJSON_PrintUnformatted(doc)))
		goto nomem;
	printf("%s\n", text);
	rc = VX_EXIT_OK;
	goto done;
nomem:
	cmd_error("__endpoints: out of memory");
done:
	free(text);
	cJSON_Delete(doc);
	gcp_endpoints_release(&ep);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_endpoints_entry = {
	.name = "__endpoints",
	.summary = "the APIs vx calls and their endpoints, as JSON",
	.usage = "usage: vx __endpoints\n\n"
		 "For tools and tests: each API vx can call ({\"endpoints\": [{\"api\", \"variable\",\n"
		 "\"url\", \"overridden\"}]}), \"variable\" the CLOUDSDK_API_ENDPOINT_OVERRIDES_ one that\n"
		 "sets it (null for one derived from another's), \"url\" the one in force. Sends nothing.\n",
	.exec = endpoints_exec,
	.hidden = 1,
};
