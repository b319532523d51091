/*
 * vx import: one resource into the state under a declared address
 * (reconcile/import.h). Each kind has its function here rather than in its
 * kind_*.c: import reads one resource, while a kind's table entry plans and
 * applies many, and the two share nothing but the state record they write.
 */
#include "reconcile/import.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/plan.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/spec.h"
#include "reconcile/stack.h"
#include "reconcile/ynode.h"
#include "state/state.h"
#include "state/state_scan.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/text.h"
#include "util/banned.h"

#define DIFF_MAX 6

void import_outcome_release(struct import_outcome *o)
{
	free(o->resource);
	free(o->status);
	free(o->differs);
	free(o->next);
	free(o->warning);
	memset(o, 0, sizeof(*o));
}

/*
 * Splits "projects/P/<coll1>/A/<coll2>/B" into P, A and B (copied into the
 * buffers, len bytes each). 0, or -1 when name has another shape or a
 * segment that is empty, too long or not made of [A-Za-z0-9_.-].
 */
static int split_name(const char *name, const char *coll1, const char *coll2, char *p, char *a, char *b,
		      size_t len)
{
	const char *want[6] = { "projects", NULL, coll1, NULL, coll2, NULL };
	char *out[6] = { NULL, p, NULL, a, NULL, b };
	const char *s = name;

	for (int i = 0; i < 6; i++) {
		size_t n = strcspn(s, "/");

		if (n == 0 || n >= len || (i < 5 && s[n] != '/') || (i == 5 && s[n]))
			return -1;
		for (size_t k = 0; k < n; k++)
			if (!isalnum((unsigned char)s[k]) && !strchr("_.-", s[k]))
				return -1;
		if (want[i] && (strlen(want[i]) != n || strncmp(s, want[i], n)))
			return -1;
		if (out[i]) {
			memcpy(out[i], s, n);
			out[i][n] = '\0';
		}
		s += n + (i < 5);
	}
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* The address that already records resource (current or past run), or NULL. */
static const char *tracked_as(const struct state *state, const char *resource)
{
	for (size_t i = 0; i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];

		if (r->current && r->current->resource && !strcmp(r->current->resource, resource))
			return r->address;
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource && !strcmp(r->history[h].resource, resource))
				return r->address;
	}
	return NULL;
}

/*
 * VX_ECONFLICT when another state beside this one records resource: a
 * plan of either stack would cancel, replace or delete it under the other.
 */
static int tracked_elsewhere(const struct import_request *req, const char *resource, struct vx_err *err)
{
	struct state_scan_hit hit;
	int rc;

	if (!req->others)
		return 0;
	rc = state_scan_find(&hit, req->others, resource, err);
	if (rc == 0 && hit.address)
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked by stack %s, as %s in %s: a resource "
				"belongs to one stack, and a plan of either would cancel or replace it under the "
				"other; import it into one stack only", req->address, resource, hit.stack,
				hit.address, hit.where);
	else if (rc < 0)
		rc = vx_err_wrap(err, "%s", req->address);
	state_scan_hit_release(&hit);
	return rc;
}

/* ---- differences, live -> declared ----------------------------------------- */

struct diffs {
	struct vx_buf out;
	size_t n;
	int oom;
};

/* Adds "what live -> declared"; both are shown cleaned of control characters. */
static void diff_add(struct diffs *d, const char *what, const char *live, const char *decl)
{
	char *l, *w;

	d->n++;
	if (d->n > DIFF_MAX)
		return;
	l = vx_text_clean(live ? live : "(none)");
	w = vx_text_clean(decl ? decl : "(none)");
	if (!l || !w || vx_buf_printf(&d->out, "%s%s %s -> %s", d->n > 1 ? ", " : "", what, l, w) < 0)
		d->oom = 1;
	free(l);
	free(w);
}

/* d's text, "and N more" added past DIFF_MAX; NULL with no difference (or out of memory). */
static char *diff_text(struct diffs *d)
{
	if (!d->n || d->oom)
		return NULL;
	if (d->n > DIFF_MAX && vx_buf_printf(&d->out, " and %zu more", d->n - DIFF_MAX) < 0)
		return NULL;
	return vx_buf_detach(&d->out);
}

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

static void diff_value(struct diffs *d, const char *path, const cJSON *live, const cJSON *decl)
{
	char *l = shown(live), *w = shown(decl);

	if ((live && !l) || (decl && !w))
		d->oom = 1;
	else
		diff_add(d, *path ? path : "jobSpec", l, w);
	free(l);
	free(w);
}

/* spec_diff_walk's leaf: the live and declared values at path. */
static void diff_leaf(void *ud, const char *path, const cJSON *live, const cJSON *decl)
{
	diff_value(ud, path, live, decl);
}

/* ---- jobs ------------------------------------------------------------------ */

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

	cJSON_ArrayForEach(pool, pools) {
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

			cJSON_ArrayForEach(e, env) {
				const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
				cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
				const cJSON *de, *same = NULL;
				char *h;

				if (!cJSON_IsString(value))
					continue;
				cJSON_ArrayForEach(de, denv) {
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
	struct spec_reservation *sres = calloc(st->nreservations + 1, sizeof(*sres));
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err e = VX_ERR_INIT;
	struct yfile *yf = NULL;
	struct spec_env env;
	struct job_spec js;
	char *res = NULL;

	memset(&js, 0, sizeof(js));
	if (!sres)
		return NULL;
	for (size_t i = 0; i < st->nreservations; i++) {
		const struct stack_reservation *r = &st->reservations[i];

		sres[i].name = r->d.name;
		sres[i].zone = r->zone;
		sres[i].machine_type = r->machine_type;
		sres[i].accelerator = r->naccelerators ? r->accelerators[0].type : NULL;
		sres[i].accelerator_count = r->naccelerators ? r->accelerators[0].count : 0;
	}
	env.project = st->project;
	env.region = d->region;
	env.reservations = sres;
	env.nreservations = st->nreservations;
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

static int import_job(struct import_outcome *out, struct state *state, struct provider *p,
		      const struct stack *st, const struct import_request *req, int check_only,
		      struct vx_err *err)
{
	const char *name = strchr(req->address, '.') + 1, *other;
	const struct stack_job *d = stack_find_job(st, name);
	char proj[128], region[64], id[32], lineage[13], hash[65];
	char *asked = NULL, *spec = NULL, *canon = NULL, *redacted = NULL;
	struct live_job lj;
	struct state_record *r = NULL;
	struct state_run run;
	cJSON *live = NULL, *decl = NULL;
	const char *v;
	struct diffs df = { VX_BUF_INIT, 0, 0 };
	int rc = 0, same;

	memset(&lj, 0, sizeof(lj));
	memset(&run, 0, sizeof(run));
	if (split_name(req->resource, "locations", "customJobs", proj, region, id, sizeof(proj)) < 0 ||
	    !all_digits(id))
		return vx_err_set(err, VX_EINVAL, "%s takes a Vertex AI CustomJob, "
				  "projects/PROJECT/locations/REGION/customJobs/ID, not '%s'", req->address,
				  req->resource);
	/* A project number cannot be compared with the declared id without another API: the job is
	 * read in the declared project, where another project's job is not found. */
	if (strcmp(proj, st->project) && !all_digits(proj))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(region, d->region))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in region %s, but %s is declared in region %s",
				  req->address, req->resource, region, req->address, d->region);
	if (!PROVIDER_HAS(p, jobs, get))
		return vx_err_set(err, VX_EINVAL, "this provider cannot read one job");
	if (!(asked = vx_asprintf("projects/%s/locations/%s/customJobs/%s", st->project, region, id)))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	rc = p->jobs->get(p, asked, &lj, &spec, err);
	if (rc == VX_ENOTFOUND) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist in project %s", req->address,
				req->resource, st->project);
		goto done;
	}
	if (rc < 0)
		goto done;
	if ((other = tracked_as(state, lj.name))) {
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked as %s", req->address, lj.name, other);
		goto done;
	}
	if ((rc = tracked_elsewhere(req, lj.name, err)) < 0)
		goto done;
	plan_lineage_label(lineage, state->lineage);
	/* Labels name whose it is: another stack's, or another state's of this stack, is theirs. */
	if ((v = live_job_label(&lj, "vx-stack")) && strcmp(v, st->name)) {
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s belongs to stack %s (its vx-stack label), not %s",
				req->address, lj.name, v, st->name);
		goto done;
	}
	/* A state not written yet has a lineage only in memory, a new one each
	 * run: naming it would send the user looking for a state that is not there. */
	if ((v = live_job_label(&lj, "vx-lineage")) && strcmp(v, lineage)) {
		if (state->serial == 0)
			rc = vx_err_set(err, VX_ECONFLICT, "%s: %s belongs to another state of stack %s (its "
					"vx-lineage is %s; stack %s has no state yet)", req->address, lj.name,
					st->name, v, st->name);
		else
			rc = vx_err_set(err, VX_ECONFLICT, "%s: %s belongs to another state of stack %s (its "
					"vx-lineage is %s, this state's %s)", req->address, lj.name, st->name, v,
					lineage);
		goto done;
	}
	if ((v = live_job_label(&lj, "vx-job")) && strcmp(v, name)) {
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is a run of job.%s (its vx-job label)", req->address,
				lj.name, v);
		goto done;
	}
	canon = spec ? live_canonical(spec, st, d) : NULL;
	live = spec ? cJSON_Parse(canon ? canon : spec) : NULL;
	decl = cJSON_Parse(d->spec.redacted_json);
	if (!live || !decl) {
		rc = vx_err_set(err, spec && decl ? VX_EINVAL : VX_ENOMEM, "%s: %s: %s", req->address, lj.name,
				spec ? "out of memory" : "the answer has no jobSpec");
		goto done;
	}
	if ((rc = live_redact(live, decl, state->salt)) < 0) {
		rc = vx_err_set(err, rc, "out of memory");
		goto done;
	}
	same = cJSON_Compare(live, decl, 1);
	if (!same) {
		if (!(redacted = cJSON_PrintUnformatted(live)) ||
		    vx_digest_sha256_hex(hash, redacted, strlen(redacted)) < 0 ||
		    spec_diff_walk(live, decl, 1, diff_leaf, &df) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		if (!(out->differs = diff_text(&df)) || !(out->next = job_next(d, &lj))) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
	}
	out->resource = vx_strdup(lj.name);
	out->status = vx_strdup(job_state_short(lj.state));
	/* Labels prove a job is vx's; Vertex AI cannot add them to one already made. */
	if (!live_job_label(&lj, "vx-lineage") &&
	    !(out->warning = vx_asprintf("%s: %s has no vx labels, and Vertex AI cannot add labels to an existing "
					 "CustomJob (it has no update method): only this state's record shows it "
					 "is vx's, so no other stack or state can tell from the job itself",
					 req->address, lj.name))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (!out->resource || !out->status) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (check_only)
		goto done;

	/* The record as an apply that had created this job would leave it, but
	 * with the live spec's hash and form when they differ, so the next plan
	 * sees the difference exactly. */
	run.resource = vx_strdup(lj.name);
	run.project = vx_strdup(st->project);
	run.region = vx_strdup(lj.region ? lj.region : region);
	run.action = vx_strdup("import");
	run.spec_hash = vx_strdup(same ? d->spec.hash : hash);
	run.run = d->run;
	run.attempt = 1;
	run.state = vx_strdup(lj.state);
	{
		struct failure_input fin = {
			.state = lj.state, .error_code = lj.error_code, .message = lj.error_message,
			.scheduling = d->spec.strategy, .started = lj.start_ms > 0,
		};

		run.failure = vx_strdup(failure_classify(&fin));
	}
	run.error_code = lj.error_code;
	run.error_message = vx_strdup(lj.error_message);
	run.created_ms = lj.create_ms ? lj.create_ms : req->now_ms;
	run.ended_ms = lj.end_ms;
	run.config_commit = vx_strdup(req->config_commit);
	run.launched_by = vx_strdup(req->launched_by);
	if (vx_labels_copy(&run.labels, &run.nlabels, lj.labels, lj.nlabels) < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (!(r = state_find(state, req->address)) &&
	    (rc = state_add_record(state, req->address, "CustomJob", &r, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(same ? d->spec.hash : hash);
	r->spec_json = vx_strdup(same ? d->spec.redacted_json : redacted);
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
	live_job_release(&lj);
	cJSON_Delete(live);
	cJSON_Delete(decl);
	cJSON_free(redacted);
	vx_buf_release(&df.out);
	free(spec);
	free(canon);
	free(asked);
	return rc;
}

int import_refresh_jobs(struct live_jobs *live, struct provider *p, const struct state *state,
			struct vx_err *err)
{
	for (size_t i = 0; state && PROVIDER_HAS(p, jobs, get) && i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];

		if (strcmp(r->kind, "CustomJob"))
			continue;
		for (size_t h = 0; h <= r->nhistory; h++) {
			const struct state_run *run = h < r->nhistory ? &r->history[h] : r->current;
			struct live_job lj;
			size_t k;
			int rc;

			if (!run || !run->resource || !run->action || strcmp(run->action, "import") ||
			    (h < r->nhistory && job_state_is_terminal(run->state)))
				continue;
			for (k = 0; k < live->n && (!live->items[k].name ||
						    strcmp(live->items[k].name, run->resource)); k++)
				;
			if (k < live->n)
				continue;
			rc = p->jobs->get(p, run->resource, &lj, NULL, err);
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

/* ---- reservations ------------------------------------------------------------ */

static int import_reservation(struct import_outcome *out, struct state *state, struct provider *p,
			      const struct stack *st, const struct import_request *req, int check_only,
			      struct vx_err *err)
{
	const char *name = strchr(req->address, '.') + 1, *other, *mk;
	const struct stack_reservation *d = stack_find_reservation(st, name);
	const char *daccel = d->naccelerators ? d->accelerators[0].type : NULL;
	int64_t dcount = d->naccelerators ? d->accelerators[0].count : 0;
	char proj[128], zone[64], rname[128], lineage[13], *mark = NULL, *resource = NULL;
	struct live_reservations rs = { 0 };
	const struct live_reservation *l = NULL;
	struct diffs df = { VX_BUF_INIT, 0, 0 };
	struct state_record *r = NULL;
	struct state_run run;
	char a[64], b[64];
	int rc, immutable = 0;

	memset(&run, 0, sizeof(run));
	if (split_name(req->resource, "zones", "reservations", proj, zone, rname, sizeof(proj)) < 0)
		return vx_err_set(err, VX_EINVAL, "%s takes a Compute Engine reservation, "
				  "projects/PROJECT/zones/ZONE/reservations/NAME, not '%s'", req->address,
				  req->resource);
	if (strcmp(proj, st->project))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(zone, d->zone))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in zone %s, but %s is declared in zone %s",
				  req->address, req->resource, zone, req->address, d->zone);
	/* vx finds a reservation by the address's name: another name could not be found again. */
	if (strcmp(rname, name))
		return vx_err_set(err, VX_EINVAL, "%s: the reservation must be named %s, as the address is, "
				  "not %s", req->address, name, rname);
	if (!PROVIDER_HAS(p, reservations, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list reservations");
	if ((rc = p->reservations->list(p, st->project, zone, &rs, err)) < 0) {
		rc = vx_err_wrap(err, "%s: reading reservations in %s", req->address, zone);
		goto done;
	}
	for (size_t i = 0; i < rs.n && !l; i++)
		if (rs.items[i].name && !strcmp(rs.items[i].name, name) && rs.items[i].zone &&
		    !strcmp(rs.items[i].zone, zone))
			l = &rs.items[i];
	if (!l) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
		goto done;
	}
	if (!(resource = vx_asprintf("projects/%s/zones/%s/reservations/%s", st->project, zone, name))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if ((other = tracked_as(state, resource))) {
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked as %s", req->address, resource, other);
		goto done;
	}
	if ((rc = tracked_elsewhere(req, resource, err)) < 0)
		goto done;
	/* The description marker names the stack and state that made it; another's is theirs. */
	plan_lineage_label(lineage, state->lineage);
	if (!(mark = vx_asprintf("vx: stack=%s lineage=%s", st->name, lineage))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (l->description && (mk = strstr(l->description, "vx: stack=")) && strcmp(mk, mark)) {
		char *said = vx_text_clean(mk);

		if (state->serial == 0) /* as for jobs: no lineage written, no marker to name */
			rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is marked as another stack's or state's "
					"(its description says \"%s\"; stack %s has no state yet, so no marker "
					"of its own)", req->address, resource, said ? said : "?", st->name);
		else
			rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is marked as another stack's or state's "
					"(its description says \"%s\", this state's marker is \"%s\")",
					req->address, resource, said ? said : "?", mark);
		free(said);
		goto done;
	}
	if (!l->machine_type || !d->machine_type || strcmp(l->machine_type, d->machine_type)) {
		diff_add(&df, "machineType", l->machine_type, d->machine_type);
		immutable = 1;
	}
	if ((!l->accelerator_type) != (!daccel) || (daccel && strcmp(l->accelerator_type, daccel)) ||
	    l->accelerator_count != dcount) {
		snprintf(a, sizeof(a), "%" PRId64 "x%s", l->accelerator_count,
			 l->accelerator_type ? l->accelerator_type : "none");
		snprintf(b, sizeof(b), "%" PRId64 "x%s", dcount, daccel ? daccel : "none");
		diff_add(&df, "accelerators", a, b);
		immutable = 1;
	}
	if (!l->specific_required != !d->specific_required) {
		diff_add(&df, "specificReservationRequired", l->specific_required ? "true" : "false",
			 d->specific_required ? "true" : "false");
		immutable = 1;
	}
	if (l->count != d->count) {
		snprintf(a, sizeof(a), "%" PRId64, l->count);
		snprintf(b, sizeof(b), "%" PRId64, d->count);
		diff_add(&df, "count", a, b);
	}
	if (df.oom) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	out->differs = diff_text(&df);
	if (out->differs)
		out->next = immutable
			? vx_asprintf("the next plan refuses it, as Compute cannot change that in place, "
				      "unless planned with -replace %s", req->address)
			: vx_strdup("the next plan will resize it in place");
	out->resource = vx_strdup(resource);
	out->status = vx_text_clean(l->status ? l->status : "unknown");
	if (!out->resource || !out->status || (out->differs && !out->next)) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (check_only)
		goto done;
	run.resource = vx_strdup(resource);
	run.project = vx_strdup(st->project);
	run.region = vx_strdup(zone);
	run.action = vx_strdup("import");
	run.spec_hash = vx_strdup(d->d.hash);
	run.attempt = 1;
	run.state = vx_strdup(out->status);
	run.created_ms = l->create_ms ? l->create_ms : req->now_ms;
	run.config_commit = vx_strdup(req->config_commit);
	run.launched_by = vx_strdup(req->launched_by);
	run.has_value = 1;
	run.value = l->count;
	if (!(r = state_find(state, req->address)) &&
	    (rc = state_add_record(state, req->address, "Reservation", &r, err)) < 0)
		goto done;
	free(r->spec_hash);
	free(r->spec_json);
	r->spec_hash = vx_strdup(d->d.hash);
	r->protect = d->protect;
	/* What is live, in the form an apply records the declaration in. Compute
	 * names are [a-z0-9-]: nothing to escape, but they came from a server. */
	r->spec_json = NULL;
	{
		struct vx_buf js = VX_BUF_INIT;

		if (vx_buf_adds(&js, "{\"zone\":") < 0 || vx_buf_add_json_str(&js, zone) < 0 ||
		    vx_buf_adds(&js, ",\"machineType\":") < 0 ||
		    vx_buf_add_json_str(&js, l->machine_type ? l->machine_type : "") < 0 ||
		    vx_buf_adds(&js, ",\"acceleratorType\":") < 0 ||
		    (l->accelerator_type ? vx_buf_add_json_str(&js, l->accelerator_type)
					 : vx_buf_adds(&js, "null")) < 0 ||
		    vx_buf_printf(&js, ",\"acceleratorCount\":%" PRId64 ",\"count\":%" PRId64
				  ",\"specificReservationRequired\":%s}", l->accelerator_count, l->count,
				  l->specific_required ? "true" : "false") < 0) {
			vx_buf_release(&js);
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		r->spec_json = vx_buf_detach(&js);
		vx_buf_release(&js);
	}
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	live_reservations_release(&rs);
	vx_buf_release(&df.out);
	free(mark);
	free(resource);
	return rc;
}

/* ---- quota preferences --------------------------------------------------------- */

static int import_quota(struct import_outcome *out, struct state *state, struct provider *p,
			const struct stack *st, const struct import_request *req, int check_only,
			struct vx_err *err)
{
	const char *name = strchr(req->address, '.') + 1, *other;
	const struct stack_quota *d = stack_find_quota(st, name);
	char proj[128], loc[64], id[128], a[32], b[32];
	struct live_quotas qs = { 0 };
	const struct live_quota *l = NULL;
	struct diffs df = { VX_BUF_INIT, 0, 0 };
	struct vx_buf ld = VX_BUF_INIT, dd = VX_BUF_INIT;
	struct state_record *r = NULL;
	struct state_run run;
	int rc, dims_differ = 0;

	memset(&run, 0, sizeof(run));
	if (split_name(req->resource, "locations", "quotaPreferences", proj, loc, id, sizeof(proj)) < 0 ||
	    strcmp(loc, "global"))
		return vx_err_set(err, VX_EINVAL, "%s takes a Cloud Quotas preference, "
				  "projects/PROJECT/locations/global/quotaPreferences/ID, not '%s'", req->address,
				  req->resource);
	/* Cloud Quotas names by project number; the preference is read in the declared project. */
	if (strcmp(proj, st->project) && !all_digits(proj))
		return vx_err_set(err, VX_EINVAL, "%s: %s is in project %s, but %s is declared in project %s",
				  req->address, req->resource, proj, req->address, st->project);
	if (strcmp(id, name))
		return vx_err_set(err, VX_EINVAL, "%s: the preference must have the id %s, as the address has, "
				  "not %s", req->address, name, id);
	if (!PROVIDER_HAS(p, quotas, list))
		return vx_err_set(err, VX_EINVAL, "this provider cannot list quota preferences");
	if ((rc = p->quotas->list(p, st->project, &qs, err)) < 0) {
		rc = vx_err_wrap(err, "%s: reading quota preferences of %s", req->address, st->project);
		goto done;
	}
	for (size_t i = 0; i < qs.n && !l; i++)
		if (qs.items[i].id && !strcmp(qs.items[i].id, name))
			l = &qs.items[i];
	if (!l) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: %s does not exist", req->address, req->resource);
		goto done;
	}
	if ((other = tracked_as(state, l->name))) {
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked as %s", req->address, l->name, other);
		goto done;
	}
	if ((rc = tracked_elsewhere(req, l->name, err)) < 0)
		goto done;
	/* A preference cannot change its quota: the next plan could only refuse. */
	if (!l->service || !l->quota_id || strcmp(l->service, d->service) || strcmp(l->quota_id, d->quota_id)) {
		char *s = vx_text_clean(l->service ? l->service : "?"), *q = vx_text_clean(l->quota_id ? l->quota_id : "?");

		rc = vx_err_set(err, VX_EINVAL, "%s: %s is a preference for %s %s, but %s declares %s %s; a "
				"preference cannot change its quota", req->address, l->name, s ? s : "?",
				q ? q : "?", req->address, d->service, d->quota_id);
		free(s);
		free(q);
		goto done;
	}
	for (size_t i = 0; i < l->ndimensions; i++)
		if (vx_buf_printf(&ld, "%s%s=%s", i ? "," : "", l->dimensions[i].key, l->dimensions[i].value) < 0)
			df.oom = 1;
	for (size_t i = 0; i < d->dimensions.n; i++)
		if (vx_buf_printf(&dd, "%s%s=%s", i ? "," : "", d->dimensions.items[i].key,
				  d->dimensions.items[i].value) < 0)
			df.oom = 1;
	if (strcmp(vx_buf_str(&ld), vx_buf_str(&dd))) {
		diff_add(&df, "dimensions", ld.len ? vx_buf_str(&ld) : "(none)", dd.len ? vx_buf_str(&dd) : "(none)");
		dims_differ = 1;
	}
	if (l->preferred != d->preferred_value) {
		snprintf(a, sizeof(a), "%" PRId64, l->preferred);
		snprintf(b, sizeof(b), "%" PRId64, d->preferred_value);
		diff_add(&df, "preferredValue", a, b);
	}
	if (d->contact_email && l->contact_email && strcmp(l->contact_email, d->contact_email))
		diff_add(&df, "contactEmail", l->contact_email, d->contact_email);
	if (df.oom) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	out->differs = diff_text(&df);
	if (out->differs)
		out->next = dims_differ
			? vx_strdup("Cloud Quotas cannot change a preference's dimensions: the next plan "
				    "does not either")
			: vx_strdup("the next plan will update it");
	out->resource = vx_strdup(l->name);
	if (l->has_granted)
		out->status = vx_asprintf("granted %" PRId64 "%s", l->granted, l->reconciling ? ", reconciling" : "");
	else
		out->status = vx_strdup(l->reconciling ? "reconciling" : "active");
	if (!out->resource || !out->status || (out->differs && !out->next)) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	if (check_only)
		goto done;
	run.resource = vx_strdup(l->name);
	run.project = vx_strdup(st->project);
	run.region = vx_strdup("global");
	run.action = vx_strdup("import");
	run.spec_hash = vx_strdup(d->d.hash);
	run.attempt = 1;
	run.state = vx_strdup(l->reconciling ? "RECONCILING" : "ACTIVE");
	run.error_message = vx_text_clean(l->state_detail ? l->state_detail : "");
	if (run.error_message && !*run.error_message) {
		free(run.error_message);
		run.error_message = NULL;
	}
	run.created_ms = req->now_ms;
	run.config_commit = vx_strdup(req->config_commit);
	run.launched_by = vx_strdup(req->launched_by);
	run.has_value = 1;
	run.value = l->preferred;
	if (!(r = state_find(state, req->address)) &&
	    (rc = state_add_record(state, req->address, "QuotaPreference", &r, err)) < 0)
		goto done;
	free(r->spec_hash);
	r->spec_hash = vx_strdup(d->d.hash);
	rc = state_record_start_run(r, &run, err);
done:
	state_run_release(&run);
	live_quotas_release(&qs);
	vx_buf_release(&df.out);
	vx_buf_release(&ld);
	vx_buf_release(&dd);
	return rc;
}

/* ---- the entry point ------------------------------------------------------------ */

int import_resource(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err)
{
	const struct kind *k = kind_of_address(req->address);
	const struct state_record *r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!k || !stack_find_decl(st, req->address))
		return vx_err_set(err, VX_EINVAL, "%s is not declared in the stack: import adopts a resource "
				  "into a declared address; declare it first", req->address);
	r = state_find(state, req->address);
	if (r && r->current)
		return vx_err_set(err, VX_ECONFLICT, "%s is already in the state (%s); import only adds a "
				  "resource to an address that has none", req->address,
				  r->current->resource ? r->current->resource : "a create that never answered");
	if (k == &kind_job)
		rc = import_job(out, state, p, st, req, check_only, err);
	else if (k == &kind_reservation)
		rc = import_reservation(out, state, p, st, req, check_only, err);
	else
		rc = import_quota(out, state, p, st, req, check_only, err);
	if (rc < 0)
		import_outcome_release(out);
	return rc;
}
