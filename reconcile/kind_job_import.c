/*
 * The job kind's import slot (struct kind, reconcile/import.h): a Vertex AI
 * CustomJob, projects/P/locations/REGION/customJobs/ID, read by a get,
 * checked to be this stack's and this state's to take, its jobSpec compared
 * with the declaration's, and recorded as the run an apply that had
 * created it would have left. And the job refresh's hook that keeps an
 * imported job without vx's labels in sight.
 */
#include "reconcile/import.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/load/spec.h"
#include "reconcile/provider_job.h"
#include "reconcile/stack.h"
#include "reconcile/load/ynode.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/text.h"
#include "util/banned.h"

/* A JSON value as shown in a difference: strings bare, the rest compact, cut at 60 bytes. */
static char *shown(const cJSON *v)
{
	char *s, *cut;

	if (!v)
		return NULL;
	s = cJSON_IsString(v) ? vx_strdup(v->valuestring) : cJSON_PrintUnformatted(v);
	if (s && strlen(s) > 60) {
		cut = vx_asprintf("%.57s...", s);
		cJSON_free(s);
		return cut;
	}
	if (!s)
		return NULL;
	cut = vx_strdup(s);
	cJSON_free(s);
	return cut;
}

static void diff_value(struct import_diffs *d, const char *path, const cJSON *live, const cJSON *decl)
{
	char *l = shown(live), *w = shown(decl);

	if ((live && !l) || (decl && !w))
		d->oom = 1;
	else
		import_diff_add(d, *path ? path : "jobSpec", l, w);
	free(l);
	free(w);
}

/* spec_diff_walk's leaf: the live and declared values at path. */
static void diff_leaf(void *ud, const char *path, const cJSON *live, const cJSON *decl)
{
	diff_value(ud, path, live, decl);
}

/* "hmac-sha256:<hex>" of value under salt, as spec_json.c redacts a sensitive value. */
static char *hmac_of(const char *salt, const char *value)
{
	unsigned char key[32], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t keylen = 0;
	char hex[65];

	if (!salt || strlen(salt) != 64 ||
	    OPENSSL_hexstr2buf_ex(key, sizeof(key), &keylen, salt, '\0') != 1 || keylen != sizeof(key) ||
	    !HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)value, strlen(value), md, &mdlen) ||
	    mdlen != 32) {
		OPENSSL_cleanse(key, sizeof(key));
		ERR_clear_error();
		return NULL;
	}
	OPENSSL_cleanse(key, sizeof(key));
	vx_digest_hex(hex, md, 32);
	return vx_asprintf("hmac-sha256:%s", hex);
}

/* The env list of a pool's container or python package, or NULL. */
static cJSON *pool_env(const cJSON *pool, const char *which)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pool, which), "env");
}

/*
 * Makes the live jobSpec comparable with the declaration's redacted one and
 * fit for the state: an env value is kept in plain only where the
 * declaration has the same name with the same plain value; every other
 * value (a secret marked sensitive, or one the declaration does not know,
 * which may be a secret too) becomes its HMAC under the state's salt, so
 * an unchanged secret compares equal and none is stored. A diskSpec the
 * declaration does not give is Vertex's default (pd-ssd, 100 GB) and is
 * dropped when it is that default.
 */
static int live_redact(cJSON *live, const cJSON *decl, const char *salt)
{
	static const char *const tasks[] = { "containerSpec", "pythonPackageSpec" };
	cJSON *pools = cJSON_GetObjectItemCaseSensitive(live, "workerPoolSpecs");
	const cJSON *dpools = cJSON_GetObjectItemCaseSensitive(decl, "workerPoolSpecs");
	cJSON *pool;
	int i = 0;

	cJSON_ArrayForEach(pool, pools)
	{
		const cJSON *dpool = cJSON_GetArrayItem(dpools, i++);
		cJSON *disk = cJSON_GetObjectItemCaseSensitive(pool, "diskSpec");

		if (disk && !cJSON_GetObjectItemCaseSensitive(dpool, "diskSpec")) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(disk, "bootDiskType");
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(disk, "bootDiskSizeGb");

			if (cJSON_GetArraySize(disk) == 2 && cJSON_IsString(t) && !strcmp(t->valuestring, "pd-ssd") &&
			    ((cJSON_IsNumber(g) && g->valuedouble == 100) ||
			     (cJSON_IsString(g) && !strcmp(g->valuestring, "100"))))
				cJSON_DeleteItemFromObjectCaseSensitive(pool, "diskSpec");
		}
		for (size_t t = 0; t < sizeof(tasks) / sizeof(tasks[0]); t++) {
			cJSON *env = pool_env(pool, tasks[t]), *e;
			const cJSON *denv = pool_env(dpool, tasks[t]);

			cJSON_ArrayForEach(e, env)
			{
				const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
				cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
				const cJSON *de, *same = NULL;
				char *h;

				if (!cJSON_IsString(value))
					continue;
				cJSON_ArrayForEach(de, denv)
				{
					const cJSON *dn = cJSON_GetObjectItemCaseSensitive(de, "name");

					if (cJSON_IsString(name) && cJSON_IsString(dn) &&
					    !strcmp(dn->valuestring, name->valuestring))
						same = cJSON_GetObjectItemCaseSensitive(de, "value");
				}
				/* cJSON_IsString(NULL) is false, which the analyzer cannot see in the library.
				 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
				if (cJSON_IsString(same) && strncmp(same->valuestring, "hmac-sha256:", 12) &&
				    !strcmp(same->valuestring, value->valuestring))
					continue;
				if (!(h = hmac_of(salt, value->valuestring)))
					return VX_ENOMEM;
				if (!cJSON_ReplaceItemInObjectCaseSensitive(e, "value", cJSON_CreateString(h))) {
					free(h);
					return VX_ENOMEM;
				}
				free(h);
			}
		}
	}
	return 0;
}

/*
 * The live jobSpec in the declaration's canonical form (spec_check, as the
 * loader runs it: JSON is YAML), so defaults, number quoting and key order
 * compare as they would between two declarations. NULL when the live spec
 * does not pass the declaration's checks (a field vx does not accept, a
 * reservation given by full name): it is then compared as it came.
 */
static char *live_canonical(const char *spec_json, const struct stack *st, const struct stack_job *d)
{
	struct spec_reservation *sres = calloc(stack_count(st, &kind_reservation) + 1, sizeof(*sres));
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err e = VX_ERR_INIT;
	struct yfile *yf = NULL;
	struct spec_env env;
	struct job_spec js;
	char *res = NULL;

	memset(&js, 0, sizeof(js));
	if (!sres)
		return NULL;
	for (size_t i = 0; i < stack_count(st, &kind_reservation); i++) {
		const struct stack_reservation *r = &stack_reservations(st, NULL)[i];

		sres[i].name = r->d.name;
		sres[i].zone = r->zone;
		sres[i].machine_type = r->machine_type;
		sres[i].accelerator = r->naccelerators ? r->accelerators[0].type : NULL;
		sres[i].accelerator_count = r->naccelerators ? r->accelerators[0].count : 0;
	}
	env.project = st->project;
	env.region = d->region;
	env.reservations = sres;
	env.nreservations = stack_count(st, &kind_reservation);
	env.held_ref_field = kind_is_job_ref_field;
	if (ynode_load_mem(&yf, "jobSpec", spec_json, strlen(spec_json), NULL, &diags, &e) == 0 &&
	    yf->ndocs == 1 && yf->docs[0] && spec_check(&js, yf->docs[0], &env, &diags) == 0)
		res = vx_strdup(js.canonical_json);
	job_spec_release(&js);
	yfile_free(yf);
	vx_diags_release(&diags);
	vx_err_release(&e);
	free(sres);
	return res;
}

/* What the next plan does with a job that differs from its declaration. */
static char *job_next(const struct stack_job *d, const struct live_job *lj)
{
	if (!lj->state || !job_state_is_active(lj->state))
		return vx_strdup("the next plan will start a new run as declared");
	switch (d->on_change) {
	case STACK_ON_CHANGE_REPLACE:
		return vx_strdup("the next plan will replace it");
	case STACK_ON_CHANGE_AFTER_FINISH:
		return vx_strdup("the next plan will start a new run once it has finished (onChange: after-finish)");
	default:
		return vx_strdup("the next plan leaves it running (onChange: ignore)");
	}
}

/* What one job import has read and worked out, step by step. */
struct job_import {
	const struct import_request *req;
	const char *name; /* the address's NAME */
	const struct stack_job *d;
	/* The resource's parts as the user named it: each as long as the whole may be. */
	char proj[128], region[128], id[128];
	struct live_job lj;
	char *spec;	/* the live jobSpec as JSON, or NULL */
	int same;	/* the live jobSpec is the declared one */
	char hash[65];	/* else the live spec's hash, */
	char *redacted; /* and the live spec in the state's form (cJSON_free) */
};

/* Checks the resource name against the declaration and reads the job (a get). */
static int job_read(struct job_import *ji, struct provider *p, const struct stack *st, struct vx_err *err)
{
	const struct import_request *req = ji->req;
	char *asked;
	int rc;

	rc = import_split_name(req->resource, "locations", "customJobs", ji->proj, ji->region, ji->id,
			       sizeof(ji->proj));
	if (rc < 0 || !import_all_digits(ji->id))
		return vx_err_set(err, VX_EINVAL,
				  "%s takes a Vertex AI CustomJob, projects/PROJECT/locations/REGION/customJobs/ID, not '%s'",
				  req->address, req->resource);
	/* A project number cannot be compared with the declared id without another API: the job is
	 * read in the declared project, where another project's job is not found. */
	if (strcmp(ji->proj, st->project) && !import_all_digits(ji->proj))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, ji->proj, req->address, st->project);
	if (strcmp(ji->region, ji->d->region))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in region %s, but %s is declared in region %s",
				  req->address, req->resource, ji->region, req->address, ji->d->region);
	if (!PROVIDER_HAS(p, job, get))
		return vx_err_set(err, VX_EINVAL, "this provider cannot read one job");
	if (!(asked = vx_asprintf("projects/%s/locations/%s/customJobs/%s", st->project, ji->region, ji->id)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = provider_job_get(p, asked, &ji->lj, &ji->spec, err);
	if (rc == VX_ENOTFOUND)
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist in project %s", req->address,
				req->resource, st->project);
	free(asked);
	return rc < 0 ? rc : 0;
}

/*
 * Whether the job may be this address's: tracked nowhere yet, and its
 * labels, when it has vx's, naming this stack, this state and this job.
 */
static int job_check_owner(const struct job_import *ji, const struct state *state, const struct stack *st,
			   struct vx_err *err)
{
	const struct import_request *req = ji->req;
	const struct live_job *lj = &ji->lj;
	char lineage[13];
	const char *v;
	int rc;

	if ((rc = import_check_untracked(state, req, lj->name, err)) < 0)
		return rc;
	plan_lineage_label(lineage, state->lineage);
	/* Labels name whose it is: another stack's, or another state's of this stack, is theirs. */
	if ((v = live_job_label(lj, "vx-stack")) && strcmp(v, st->name))
		return vx_err_set(err, VX_ECONFLICT, "%s: %s belongs to stack %s (its vx-stack label), not %s",
				  req->address, lj->name, v, st->name);
	/* A state not written yet has a lineage only in memory, a new one each
	 * run: naming it would send the user looking for a state that is not there. */
	if ((v = live_job_label(lj, "vx-lineage")) && strcmp(v, lineage)) {
		if (state->serial == 0)
			return vx_err_set(err, VX_ECONFLICT,
					  "%s: %s belongs to another state of stack %s (its vx-lineage is %s; "
					  "stack %s has no state yet)",
					  req->address, lj->name, st->name, v, st->name);
		return vx_err_set(err, VX_ECONFLICT,
				  "%s: %s belongs to another state of stack %s (its vx-lineage is %s, "
				  "this state's %s)",
				  req->address, lj->name, st->name, v, lineage);
	}
	if ((v = live_job_label(lj, "vx-job")) && strcmp(v, ji->name))
		return vx_err_set(err, VX_ECONFLICT, "%s: %s is a run of job.%s (its vx-job label)", req->address,
				  lj->name, v);
	return 0;
}

/*
 * Compares the live jobSpec with the declaration's, both redacted and in
 * canonical form; when they differ, says how (out->differs, out->next) and
 * keeps the live spec's form and hash for the record.
 */
static int job_compare(struct job_import *ji, struct import_outcome *out, const struct state *state,
		       const struct stack *st, struct vx_err *err)
{
	struct import_diffs df = { 0 };
	char *canon = ji->spec ? live_canonical(ji->spec, st, ji->d) : NULL;
	cJSON *live = ji->spec ? cJSON_Parse(canon ? canon : ji->spec) : NULL;
	cJSON *decl = cJSON_Parse(ji->d->spec.redacted_json);
	int rc = 0;

	if (!live || !decl) {
		rc = vx_err_set(err, ji->spec && decl ? VX_EINVAL : VX_ENOMEM, "%s: %s: %s", ji->req->address,
				ji->lj.name, ji->spec ? "out of memory" : "the answer has no jobSpec");
		goto done;
	}
	if ((rc = live_redact(live, decl, state->salt)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	ji->same = cJSON_Compare(live, decl, 1);
	if (ji->same)
		goto done;
	if (!(ji->redacted = cJSON_PrintUnformatted(live)) ||
	    vx_digest_sha256_hex(ji->hash, ji->redacted, strlen(ji->redacted)) < 0 ||
	    spec_diff_walk(live, decl, 1, diff_leaf, &df) < 0 || !(out->differs = import_diff_text(&df)) ||
	    !(out->next = job_next(ji->d, &ji->lj)))
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	cJSON_Delete(live);
	cJSON_Delete(decl);
	vx_buf_release(&df.out);
	free(canon);
	return rc;
}

/* What import says of the job: its name, its state, and that it has no vx labels. */
static int job_outcome(const struct job_import *ji, struct import_outcome *out, struct vx_err *err)
{
	const struct live_job *lj = &ji->lj;

	out->resource = vx_strdup(lj->name);
	out->status = vx_strdup(job_state_short(lj->state));
	/* Labels prove a job is vx's; Vertex AI cannot add them to one already made. */
	if (!live_job_label(lj, "vx-lineage") &&
	    !(out->warning = vx_asprintf("%s: %s has no vx labels, and Vertex AI cannot add labels to an existing "
					 "CustomJob (it has no update method): only this state's record shows it "
					 "is vx's, so no other stack or state can tell from the job itself",
					 ji->req->address, lj->name)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!out->resource || !out->status)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

/*
 * The record as an apply that had created this job would leave it, but
 * with the live spec's hash and form when they differ, so the next plan
 * sees the difference exactly.
 */
static int job_record(const struct job_import *ji, struct state *state, const struct stack *st,
		      struct vx_err *err)
{
	const struct live_job *lj = &ji->lj;
	const struct stack_job *d = ji->d;
	const char *hash = ji->same ? d->spec.hash : ji->hash;
	struct failure_input fin = {
		.state = lj->state,
		.error_code = lj->error_code,
		.message = lj->error_message,
		.scheduling = d->spec.strategy,
		.started = lj->start_ms > 0,
	};
	struct state_record *r = NULL;
	struct state_run run;
	int rc;

	if ((rc = import_run_init(&run, ji->req, lj->name, st->project, lj->region ? lj->region : ji->region,
				  hash, lj->create_ms, err)) < 0)
		goto done;
	run.run = d->run;
	run.state = vx_strdup(lj->state);
	run.failure = vx_strdup(failure_classify(&fin));
	run.error_code = lj->error_code;
	run.error_message = vx_strdup(lj->error_message);
	run.ended_ms = lj->end_ms;
	if (vx_labels_copy(&run.labels, &run.nlabels, lj->labels, lj->nlabels) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = import_record_of(&r, state, ji->req, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(hash);
	r->spec_json = vx_strdup(ji->same ? d->spec.redacted_json : ji->redacted);
	r->run = d->run;
	r->attempts = 1;
	r->protect = d->protect;
	/* As an apply records it: the policy must be known once the declaration is gone. */
	r->on_remove = d->on_remove;
	/* And the declaration's policy: importing applies it (docs/watch.md). */
	if (policy_record(r, st, d) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	return rc;
}

const struct stack_decl *kind_job_decl_at(const struct stack *st, size_t i)
{
	size_t n;
	const struct stack_job *jobs = stack_jobs(st, &n);

	return i < n ? &jobs[i].d : NULL;
}

int kind_job_import(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err)
{
	struct job_import ji;
	int rc;

	memset(&ji, 0, sizeof(ji));
	ji.req = req;
	ji.name = strchr(req->address, '.') + 1;
	ji.d = stack_find_job(st, ji.name);
	if ((rc = job_read(&ji, p, st, err)) == 0 && (rc = job_check_owner(&ji, state, st, err)) == 0 &&
	    (rc = job_compare(&ji, out, state, st, err)) == 0 && (rc = job_outcome(&ji, out, err)) == 0 &&
	    !check_only)
		rc = job_record(&ji, state, st, err);
	live_job_release(&ji.lj);
	cJSON_free(ji.redacted);
	free(ji.spec);
	return rc;
}

/* Whether live holds a job named name. */
static int live_has(const struct live_jobs *live, const char *name)
{
	for (size_t k = 0; k < live->n; k++)
		if (live->items[k].name && !strcmp(live->items[k].name, name))
			return 1;
	return 0;
}

int import_refresh_jobs(struct live_jobs *live, struct provider *p, const struct state *state,
			struct vx_err *err)
{
	for (size_t i = 0; state && PROVIDER_HAS(p, job, get) && i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];

		if (strcmp(r->kind, "CustomJob"))
			continue;
		for (size_t h = 0; h <= r->nhistory; h++) {
			const struct state_run *run = h < r->nhistory ? &r->history[h] : r->current;
			struct live_job lj;
			int rc;

			if (!run || !run->resource || !run->action || strcmp(run->action, "import") ||
			    (h < r->nhistory && job_state_is_terminal(run->state)))
				continue;
			if (live_has(live, run->resource))
				continue;
			rc = provider_job_get(p, run->resource, &lj, NULL, err);
			if (rc == VX_ENOTFOUND) {
				vx_err_release(err);
				continue;
			}
			if (rc < 0)
				return vx_err_wrap(err, "reading imported job %s", r->address);
			rc = live_jobs_push(live, &lj);
			live_job_release(&lj);
			if (rc < 0)
				return vx_err_set(err, VX_ENOMEM, "out of memory");
		}
	}
	return 0;
}
