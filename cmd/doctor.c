/*
 * vx doctor [DIR]: where credentials come from, which project and endpoints
 * are used, and one cheap read per API. How a new user checks their setup,
 * and how CI checks its login.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "providers/gcp/auth.h"
#include "providers/gcp/compute.h"
#include "providers/gcp/endpoints.h"
#include "providers/gcp/http.h"
#include "providers/gcp/quotas.h"
#include "providers/gcp/vertex.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/diag.h"

static const char usage[] =
	"usage: vx doctor [DIR] [-debug]\n\n"
	"Shows where credentials come from (never the token), which project and endpoints\n"
	"are used, and calls each API once with a cheap read: list the stack's jobs in its\n"
	"region, list reservations in a zone of it, list Vertex AI quota infos. One line per\n"
	"check. Exit 0 when all answer. DIR (default .) is a stack; without one, the project\n"
	"comes from the environment and the region from VX_REGION (default us-central1).\n";

static int report(const char *what, int rc, struct vx_err *err, const char *detail)
{
	if (rc < 0)
		printf("  %-12s FAIL  %s\n", what, vx_err_msg(err));
	else
		printf("  %-12s ok    %s\n", what, detail ? detail : "");
	vx_err_release(err);
	return rc < 0;
}

/* One cheap read per API: the stack's jobs, a zone's reservations, the quota infos. 1 when one failed. */
static int check_apis(struct vx_ctx *ctx, struct gcp_http *http, const struct gcp_endpoints *ep,
		      const char *project, const char *region, const char *zone, const char *stack_name)
{
	struct vx_err err = VX_ERR_INIT;
	char *detail = NULL;
	int failed = 0, r;

	{
		struct vertex_client vc = { http, ctx, ep->base[GCP_API_AIPLATFORM], NULL };
		struct vertex_job_list jobs = VERTEX_JOB_LIST_INIT;
		char *filter = NULL;
		struct vx_label by_stack = { (char *)(uintptr_t)"vx-stack", (char *)(uintptr_t)stack_name };

		if (stack_name)
			r = vertex_filter_labels(&filter, &by_stack, 1, &err);
		else
			r = 0;
		if (r == 0)
			r = vertex_list_jobs(&vc, project, region, filter, 100, 0, &jobs, &err);
		free(detail);
		detail = vx_asprintf("%zu job%s of this stack in %s", jobs.n, jobs.n == 1 ? "" : "s", region);
		failed |= report("vertex", r, &err, detail);
		vertex_job_list_release(&jobs);
		free(filter);
	}
	{
		struct compute_client cc = { http, ctx, ep->base[GCP_API_COMPUTE], NULL };
		struct compute_reservation_list res = COMPUTE_RESERVATION_LIST_INIT;

		r = compute_reservation_list(&cc, project, zone, NULL, &res, &err);
		free(detail);
		detail = vx_asprintf("%zu reservation%s in %s", res.n, res.n == 1 ? "" : "s", zone);
		failed |= report("compute", r, &err, detail);
		compute_reservation_list_release(&res);
	}
	{
		struct quotas_client qc = { http, ctx, ep->base[GCP_API_CLOUDQUOTAS], NULL };
		struct quota_info_list qi = QUOTA_INFO_LIST_INIT;

		r = quotas_list_infos(&qc, project, "aiplatform.googleapis.com", &qi, &err);
		free(detail);
		detail = vx_asprintf("%zu Vertex AI quota info%s", qi.n, qi.n == 1 ? "" : "s");
		failed |= report("cloudquotas", r, &err, detail);
		quota_info_list_release(&qi);
	}
	free(detail);
	vx_err_release(&err);
	return failed;
}

/* The stack in dir, or NULL (said either way); *region: the one to read jobs in. */
static struct stack *doctor_stack(const char *dir, const char **region)
{
	struct vx_err err = VX_ERR_INIT;
	struct vx_diags diags = VX_DIAGS_INIT;
	struct stack *st = NULL;

	*region = NULL;
	if (stack_load(&st, dir, NULL, &diags, &err) == 0) {
		*region = st->region;
		if (!*region && st->njobs)
			*region = st->jobs[0].region;
		printf("  %-12s ok    %s in %s\n", "stack", st->name, dir);
	} else {
		printf("  %-12s --    no valid stack in %s (run 'vx validate %s'); using the environment\n",
		       "stack", dir, dir);
		vx_err_release(&err);
	}
	if (!*region)
		*region = getenv("VX_REGION") ? getenv("VX_REGION") : "us-central1";
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
	const char *dir = args->npos ? args->pos[args->npos - 1] : ".", *region = NULL, *from = NULL,
		   *stack_name = NULL;
	char *project = NULL, *token = NULL, *zone = NULL, *detail = NULL;
	int failed = 0, rc = VX_EXIT_ERROR, r;

	cmd_ctx_init(&ctx, args->debug);
	printf("vx %s doctor\n", VX_VERSION);
	st = doctor_stack(dir, &region);
	stack_name = st ? st->name : NULL;
	zone = vx_asprintf("%s-a", region);

	r = gcp_endpoints_load(&ep, &err);
	if (report("endpoints", r, &err, NULL)) {
		failed = 1;
		goto done;
	}
	for (int api = 0; api < GCP_API_COUNT; api++)
		printf("  %-12s       %s%s\n", gcp_api_name((enum gcp_api)api), ep.base[api],
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
	failed |= check_apis(&ctx, http, &ep, project, region, zone, stack_name);
done:
	if (!failed)
		rc = VX_EXIT_OK;
	printf("%s\n", failed ? "Some checks failed." : "All checks passed.");
	free(detail);
	free(project);
	free(zone);
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
	.summary = "check credentials, project and API access",
	.usage = usage,
	.opts = NULL,
	.exec = doctor_exec,
};
