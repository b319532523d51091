/* vx doctor's permission and API checks. See doctor.h. */
#include "workflow/doctor.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "providers/gcp/iamtest.h"
#include "providers/gcp/permissions.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "util/banned.h"

#define MAX_ASKED 64

/* The service each API of the table is. */
static const struct {
	const char *api;
	const char *service;
} services[] = {
	{ "aiplatform", "aiplatform.googleapis.com" },
	{ "compute", "compute.googleapis.com" },
	{ "cloudquotas", "cloudquotas.googleapis.com" },
	{ "storage", "storage.googleapis.com" },
};

static const char *const cmd_names[] = { "plan", "apply", "watch", "import", "doctor" };

/* The enum provider_need bits of st (NULL: every kind): a kind's own bit for each kind it
 * declares, and GCP_NEED_* above them. */
static unsigned stack_needs(const struct stack *st)
{
	unsigned needs = 0;

	for (size_t k = 0; k < kind_count; k++)
		if (!st || kind_count_decls(kind_table[k], st))
			needs |= PROVIDER_NEED_KIND(k);
	if (!st)
		return needs;
	if (st->state.backend == STACK_BACKEND_GCS)
		needs |= GCP_NEED_GCS;
	return needs;
}

/* The distinct spec.serviceAccount of st's jobs, into *out (owned strings). 0 or VX_ENOMEM. */
static int job_accounts(const struct stack *st, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	for (size_t i = 0; st && i < stack_count(st, &kind_job); i++) {
		const char *json = stack_jobs(st, NULL)[i].spec.canonical_json;
		cJSON *root = json ? cJSON_Parse(json) : NULL;
		const cJSON *sa = cJSON_GetObjectItemCaseSensitive(root, "serviceAccount");
		size_t k;
		int rc = 0;

		if (cJSON_IsString(sa) && *sa->valuestring) {
			for (k = 0; k < *n && strcmp((*out)[k], sa->valuestring); k++)
				;
			if (k == *n) {
				char **grown = realloc(*out, (*n + 1) * sizeof(**out));

				if (!grown || !(grown[*n] = vx_strdup(sa->valuestring)))
					rc = VX_ENOMEM;
				if (grown) {
					*out = grown;
					if (rc == 0)
						(*n)++;
				}
			}
		}
		cJSON_Delete(root);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A new line at the end of r; NULL on OOM (r unchanged). text is taken. */
static struct doctor_line *add_line(struct doctor_report *r, const char *name, enum doctor_status st, char *text)
{
	struct doctor_line *grown;

	if (!text)
		return NULL;
	grown = realloc(r->lines, (r->n + 1) * sizeof(*grown));
	if (!grown) {
		free(text);
		return NULL;
	}
	r->lines = grown;
	memset(&r->lines[r->n], 0, sizeof(r->lines[r->n]));
	r->lines[r->n].name = vx_strdup(name);
	r->lines[r->n].status = st;
	r->lines[r->n].text = text;
	if (!r->lines[r->n].name) {
		free(text);
		return NULL;
	}
	if (st == DOCTOR_FAIL)
		r->failed = 1;
	return &r->lines[r->n++];
}

/* Appends text (taken) under l. 0 or VX_ENOMEM. */
static int add_more(struct doctor_line *l, char *text)
{
	char **grown;

	if (!text)
		return VX_ENOMEM;
	grown = realloc(l->more, (l->nmore + 1) * sizeof(*grown));
	if (!grown) {
		free(text);
		return VX_ENOMEM;
	}
	l->more = grown;
	l->more[l->nmore++] = text;
	return 0;
}

/* "apply and watch", "plan, apply and watch": the commands of cmds. Owned; NULL on OOM. */
static char *cmds_text(unsigned cmds)
{
	struct vx_buf b = VX_BUF_INIT;
	size_t i, n = 0, total = 0;

	for (i = 0; i < sizeof(cmd_names) / sizeof(cmd_names[0]); i++)
		total += (cmds >> i) & 1;
	for (i = 0; i < sizeof(cmd_names) / sizeof(cmd_names[0]); i++) {
		if (!((cmds >> i) & 1))
			continue;
		n++;
		if (vx_buf_printf(&b, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", cmd_names[i]) < 0) {
			vx_buf_release(&b);
			return NULL;
		}
	}
	return b.len ? vx_buf_detach(&b) : vx_strdup("");
}

/* Bits set in v. */
static size_t popcount(unsigned v)
{
	size_t n = 0;

	for (; v; v >>= 1)
		n += v & 1;
	return n;
}

/* Whether row r is called for a stack of needs (stack_needs): a kind it serves is declared, or
 * a fixed need of its. */
static int row_needed(const struct gcp_permission *r, unsigned needs)
{
	for (size_t k = 0; k < kind_count; k++)
		if ((needs & PROVIDER_NEED_KIND(k)) && gcp_permission_serves(r, kind_table[k]->name))
			return 1;
	return (r->needs & needs) != 0;
}

/*
 * One testIamPermissions call on name for the rows granted there (on) that
 * the stack needs, and its line: all held, or each missing one with its role.
 */
static int check_scope(struct doctor_report *r, const struct iamtest_client *c, enum gcp_perm_on on,
		       enum iamtest_on ion, const char *name, unsigned needs, unsigned cmds, struct vx_err *err)
{
	size_t n, i, k, nasked = 0, nmissing = 0;
	const struct gcp_permission *t = gcp_permissions(&n);
	const struct gcp_permission *rows[MAX_ASKED];
	const char *asked[MAX_ASKED];
	unsigned asked_cmds[MAX_ASKED];
	int held[MAX_ASKED];
	const char *label = ion == IAMTEST_PROJECT ? "project" : ion == IAMTEST_BUCKET ? "bucket" : "service account";
	struct vx_err e = VX_ERR_INIT;
	struct doctor_line *l;
	char *what = NULL;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if (t[i].on != on || !t[i].permission || !(t[i].cmds & cmds) || !row_needed(&t[i], needs))
			continue;
		for (k = 0; k < nasked && strcmp(asked[k], t[i].permission); k++)
			;
		if (k == nasked && nasked < MAX_ASKED) {
			rows[nasked] = &t[i];
			asked_cmds[nasked] = 0;
			asked[nasked++] = t[i].permission;
		}
		if (k < nasked)
			asked_cmds[k] |= t[i].cmds & cmds;
	}
	if (nasked == 0)
		return 0;
	if (iamtest_permissions(c, ion, name, asked, nasked, held, &e) < 0) {
		l = add_line(r, "iam", DOCTOR_FAIL, vx_asprintf("%s", vx_err_msg(&e)));
		vx_err_release(&e);
		return l ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	for (k = 0; k < nasked; k++)
		nmissing += !held[k];
	if (!(what = cmds_text(cmds)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (nmissing == 0)
		l = add_line(r, "iam", DOCTOR_OK, vx_asprintf("%s %s: holds the %zu permission%s that %s need%s", label,
							      name, nasked, nasked == 1 ? "" : "s", what,
							      popcount(cmds) == 1 ? "s" : ""));
	else
		l = add_line(r, "iam", DOCTOR_FAIL, vx_asprintf("%s %s: lacks %zu of the %zu permission%s that %s need%s",
								label, name, nmissing, nasked, nasked == 1 ? "" : "s",
								what, popcount(cmds) == 1 ? "s" : ""));
	free(what);
	if (!l)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (k = 0; k < nasked && rc == 0; k++) {
		char *by;

		if (held[k])
			continue;
		if (!(by = cmds_text(asked_cmds[k])))
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		rc = add_more(l, vx_asprintf("%s (%s): grant %s on %s", asked[k], by, rows[k]->role,
					     gcp_permission_on_name(rows[k]->on)));
		free(by);
	}
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

/* services.get for each API the rows the stack needs call; one line. */
static int check_services(struct doctor_report *r, const struct iamtest_client *c, const char *project,
			  unsigned needs, unsigned cmds, struct vx_err *err)
{
	size_t n, i, s, ndisabled = 0, nasked = 0;
	const struct gcp_permission *t = gcp_permissions(&n);
	const char *disabled[sizeof(services) / sizeof(services[0])];
	struct vx_buf on = VX_BUF_INIT;
	struct doctor_line *l;
	int rc = 0;

	for (s = 0; s < sizeof(services) / sizeof(services[0]) && rc == 0; s++) {
		struct vx_err e = VX_ERR_INIT;
		int used = 0, enabled = 0;

		for (i = 0; i < n && !used; i++)
			used = !strcmp(t[i].api, services[s].api) && (t[i].cmds & cmds) && row_needed(&t[i], needs);
		if (!used)
			continue;
		nasked++;
		if (iamtest_service_enabled(c, project, services[s].service, &enabled, &e) < 0) {
			/* Said once: the next API would be refused for the same reason. */
			l = add_line(r, "apis", DOCTOR_FAIL, vx_asprintf("%s", vx_err_msg(&e)));
			vx_err_release(&e);
			vx_buf_release(&on);
			return l ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
		}
		if (!enabled)
			disabled[ndisabled++] = services[s].service;
		else if (vx_buf_printf(&on, "%s%s", on.len ? ", " : "", services[s].service) < 0)
			rc = VX_ENOMEM;
	}
	if (rc == 0 && ndisabled) {
		l = add_line(r, "apis", DOCTOR_FAIL, vx_asprintf("%zu of the %zu API%s the stack calls %s disabled in %s",
								 ndisabled, nasked, nasked == 1 ? "" : "s",
								 ndisabled == 1 ? "is" : "are", project));
		for (i = 0; l && i < ndisabled && rc == 0; i++)
			rc = add_more(l, vx_asprintf("gcloud services enable %s --project %s", disabled[i], project));
		if (!l)
			rc = VX_ENOMEM;
	} else if (rc == 0 && on.len) {
		if (!add_line(r, "apis", DOCTOR_OK, vx_asprintf("enabled in %s: %s", project, vx_buf_str(&on))))
			rc = VX_ENOMEM;
	}
	vx_buf_release(&on);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

int doctor_check(struct doctor_report *out, const struct iamtest_client *c, const struct stack *st,
		 const char *project, const struct doctor_opts *o, struct vx_err *err)
{
	unsigned cmds = o && o->plan_only ? GCP_CMD_PLAN : GCP_CMD_PLAN | GCP_CMD_APPLY | GCP_CMD_WATCH | GCP_CMD_IMPORT;
	char **sas = NULL;
	size_t nsas = 0;
	unsigned needs = stack_needs(st);
	int rc;

	memset(out, 0, sizeof(*out));
	if (job_accounts(st, &sas, &nsas) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (nsas)
		needs |= GCP_NEED_JOB_SA;
	if ((rc = check_services(out, c, project, needs, cmds, err)) < 0 ||
	    (rc = check_scope(out, c, GCP_ON_PROJECT, IAMTEST_PROJECT, project, needs, cmds, err)) < 0)
		goto done;
	if ((needs & GCP_NEED_GCS) &&
	    (rc = check_scope(out, c, GCP_ON_BUCKET, IAMTEST_BUCKET, st->state.bucket, needs, cmds, err)) < 0)
		goto done;
	for (size_t i = 0; i < nsas && rc == 0; i++)
		rc = check_scope(out, c, GCP_ON_SERVICE_ACCOUNT, IAMTEST_SERVICE_ACCOUNT, sas[i], needs, cmds, err);
done:
	free_strings(sas, nsas);
	if (rc < 0)
		doctor_report_release(out);
	return rc;
}

void doctor_report_release(struct doctor_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->lines[i].name);
		free(r->lines[i].text);
		free_strings(r->lines[i].more, r->lines[i].nmore);
	}
	free(r->lines);
	memset(r, 0, sizeof(*r));
}
