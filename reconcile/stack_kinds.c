/*
 * The stack loader's readers, one per kind: the Stack (with its state
 * backend), Reservation, QuotaPreference and CustomJob (whose spec
 * spec_check() checks). Each reports its problems through the loader
 * (stack_loader.h) and keeps reading, so one run reports all of them.
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/machines.h"
#include "reconcile/spec.h"
#include "reconcile/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

static const char *const stack_keys[] = { "kind", "name", "project", "region", "state", "labels",
					  "prices", "failOn" };
static const char *const fail_on_names[] = { "quota" };
static const char *const state_keys[] = { "backend", "path", "remote", "branch", "bucket" };
static const char *const job_keys[] = { "kind", "name", "region", "displayName", "labels", "spec",
					"run", "resubmit", "onChange", "protect" };
static const char *const resubmit_keys[] = { "on", "maxAttempts" };
static const char *const reservation_keys[] = { "kind", "name", "zone", "machineType",
						"accelerators", "count",
						"specificReservationRequired", "description", "protect" };
static const char *const accel_keys[] = { "type", "count" };
static const char *const quota_keys[] = { "kind", "name", "service", "quotaId", "dimensions",
					  "preferredValue", "contactEmail", "justification",
					  "ignoreSafetyChecks" };

/* ---------------------------------------------------------------------- */
/* Stack */

/*
 * The optional region of a Stack or a job: 1 when present as a string, with
 * *out its copy (left alone when not a region: reported); 0 otherwise. *node
 * is the value (NULL when absent).
 */
static int get_region(struct loader *L, const struct ynode *doc, const struct ynode **node,
		      char **out)
{
	const char *s;

	if (!stack_get_str(&s, node, L, doc, "", "region", 0))
		return 0;
	if (!stack_names_region_valid(s))
		stack_err(L, *node, "region: \"%s\" is not a region (like \"us-central1\")", s);
	else
		*out = stack_dup_opt(L, s);
	return 1;
}

static void read_state(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *m = stack_get_map(L, doc, "state", "state"), *v;
	struct stack_state_cfg *sc = &st->state;
	const char *s;
	int e;

	sc->backend = STACK_BACKEND_GIT;
	if (m) {
		stack_check_keys(L, m, "state", state_keys, ARRAY_SIZE(state_keys));
		v = stack_get_value(m, "backend");
		if (v) {
			if (!stack_is_string(v)) {
				stack_wrong_type(L, v, "state.backend", "string");
			} else {
				for (e = 0; e < (int)ARRAY_SIZE(stack_backend_names); e++)
					if (!strcmp(v->str, stack_backend_names[e]))
						break;
				if (e < (int)ARRAY_SIZE(stack_backend_names))
					sc->backend = (enum stack_backend)(e + 1);
				else
					stack_unknown_word(L, v, "state.backend", "value", stack_backend_names,
						     ARRAY_SIZE(stack_backend_names));
			}
		}
		if (stack_get_str(&s, &v, L, m, "state", "path", 0)) {
			if (!*s)
				stack_err(L, v, "state.path: empty");
			else
				sc->path = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "remote", 0)) {
			if (sc->backend != STACK_BACKEND_GIT)
				stack_err(L, v, "state.remote: only for backend git");
			else if (!*s || strchr(s, ' '))
				stack_err(L, v, "state.remote: \"%s\" is not a remote name or URL", s);
			else
				sc->remote = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "branch", 0)) {
			if (sc->backend != STACK_BACKEND_GIT)
				stack_err(L, v, "state.branch: only for backend git");
			else if (!strncmp(s, "refs/heads/", 11))
				/* vx adds refs/heads/ itself */
				stack_err(L, v, "state.branch: \"%s\" is a ref name: give the branch name "
				     "without refs/heads/ (\"%s\")", s, s + 11);
			else if (!strncmp(s, "refs/", 5))
				stack_err(L, v, "state.branch: \"%s\" is a ref name, not a branch name: give "
				     "the branch name without refs/heads/", s);
			else if (!stack_names_branch_valid(s))
				stack_err(L, v, "state.branch: \"%s\" is not a valid branch name", s);
			else
				sc->branch = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "bucket", 0)) {
			if (sc->backend != STACK_BACKEND_GCS)
				stack_err(L, v, "state.bucket: only for backend gcs");
			else if (!*s || !strncmp(s, "gs://", 5) || strchr(s, '/'))
				stack_err(L, v, "state.bucket: \"%s\" is not a bucket name (write it without "
				     "gs:// and without a path)", s);
			else
				sc->bucket = stack_dup_opt(L, s);
		}
	}
	/* Like Terraform's local backend and its terraform.tfstate: a file
	 * beside the stack, relative to the stack directory as any path is. */
	if (sc->backend == STACK_BACKEND_FILE && !sc->path && !(m && stack_get_value(m, "path"))) {
		sc->path = vx_strdup(STACK_STATE_FILE_DEFAULT);
		if (!sc->path)
			stack_oom(L);
	}
	if (sc->backend == STACK_BACKEND_GCS && !sc->bucket && !(m && ynode_get(m, "bucket")))
		stack_err(L, m ? m : doc, "state: backend gcs needs \"bucket\"");
	if (sc->backend == STACK_BACKEND_GIT && !sc->branch && st->name) {
		sc->branch = vx_asprintf("vx/state/%s", st->name);
		if (!sc->branch)
			stack_oom(L);
	}
}

/* failOn: [quota]: what turns a plan warning into a plan error, as -fail-on does. */
static void read_fail_on(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *on = stack_get_value(doc, "failOn");

	if (on && on->kind != YNODE_SEQ) {
		stack_wrong_type(L, on, "failOn", "sequence");
		return;
	}
	for (size_t i = 0; on && i < on->n; i++) {
		const struct ynode *it = on->items[i];
		char path[48];

		snprintf(path, sizeof(path), "failOn[%zu]", i);
		if (!stack_is_string(it))
			stack_wrong_type(L, it, path, "string");
		else if (!strcmp(it->str, fail_on_names[0]))
			st->fail_on_quota = 1;
		else
			stack_unknown_word(L, it, path, "value", fail_on_names, ARRAY_SIZE(fail_on_names));
	}
}

void stack_kinds_read_stack(struct stack *st, struct loader *L, const struct ynode *doc)
{
	const struct ynode *v;
	const char *name, *s;

	name = stack_read_name(L, doc, KIND_STACK);
	stack_check_keys(L, doc, "", stack_keys, ARRAY_SIZE(stack_keys));
	if (name) {
		if (stack_decl_init(&st->d, L, "stack", name, doc) < 0)
			return;
		st->name = stack_dup_opt(L, name);
	}
	if (stack_get_str(&s, &v, L, doc, "", "project", 1)) {
		if (!stack_names_project_valid(s))
			stack_err(L, v, "project: \"%s\" is not a project ID (6 to 30 lowercase letters, "
			     "digits and \"-\", starting with a letter)", s);
		else
			st->project = stack_dup_opt(L, s);
	}
	L->stack_region = stack_get_value(doc, "region") != NULL;
	(void)get_region(L, doc, &v, &st->region);
	read_state(L, st, doc);
	stack_get_string_map(&st->labels, L, doc, "labels", 1);
	if (stack_get_str(&s, &v, L, doc, "", "prices", 0)) {
		if (!*s)
			stack_err(L, v, "prices: an empty path; leave it out for the table shipped with vx");
		else
			st->prices = stack_dup_opt(L, s);
	}
	read_fail_on(L, st, doc);
}

/* ---------------------------------------------------------------------- */
/* Reservation */

void stack_reservation_release(struct stack_reservation *r)
{
	stack_decl_release(&r->d);
	free(r->zone);
	free(r->machine_type);
	for (size_t i = 0; i < r->naccelerators; i++)
		free(r->accelerators[i].type);
	free(r->accelerators);
	free(r->description);
}

static void read_accelerators(struct loader *L, struct stack_reservation *r,
			      const struct ynode *doc)
{
	const struct ynode *seq = stack_get_value(doc, "accelerators");

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "accelerators", "sequence");
		return;
	}
	if (seq->n > 1) {
		stack_err(L, seq->items[1], "accelerators: one accelerator type per reservation "
		     "(GPU machine types take one)");
		return;
	}
	if (seq->n == 0)
		return;
	r->accelerators = calloc(1, sizeof(*r->accelerators));
	if (!r->accelerators) {
		stack_oom(L);
		return;
	}
	for (size_t i = 0; i < seq->n; i++) {
		const struct ynode *a = seq->items[i], *tv, *cv;
		const char *type;
		int64_t count = 0;
		char path[48];
		int ok = 1;

		snprintf(path, sizeof(path), "accelerators[%zu]", i);
		if (a->kind != YNODE_MAP) {
			stack_wrong_type(L, a, path, "mapping");
			continue;
		}
		stack_check_keys(L, a, path, accel_keys, ARRAY_SIZE(accel_keys));
		if (stack_get_str(&type, &tv, L, a, path, "type", 1)) {
			if (!machines_gpu_by_compute(type)) {
				const char *hint = machines_suggest_compute(type);

				if (hint)
					stack_err(L, tv, "%s.type: unknown accelerator type \"%s\" (did you "
					     "mean \"%s\"?)", path, type, hint);
				else
					stack_err(L, tv, "%s.type: unknown accelerator type \"%s\" (Compute "
					     "Engine names, like \"nvidia-h100-80gb\")", path, type);
				ok = 0;
			}
		} else {
			ok = 0;
		}
		if (stack_get_int(&count, &cv, L, a, path, "count", 1)) {
			if (count < 1) {
				stack_err(L, cv, "%s.count: must be at least 1, got %lld", path,
				     (long long)count);
				ok = 0;
			}
		} else {
			ok = 0;
		}
		if (!ok)
			continue;
		r->accelerators[r->naccelerators].type = stack_dup_opt(L, type);
		r->accelerators[r->naccelerators].count = count;
		r->naccelerators++;
	}
}

int stack_kinds_read_reservation(struct stack_reservation *r, struct loader *L,
				 const struct ynode *doc, struct seen *seen, size_t *nseen)
{
	const struct ynode *v, *mv = NULL;
	const char *name, *s;
	size_t before = L->nerr;
	int64_t x;

	name = stack_read_name(L, doc, KIND_RESERVATION);
	stack_check_keys(L, doc, "", reservation_keys, ARRAY_SIZE(reservation_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&r->d, L, "reservation", name, doc) < 0)
		return -1;
	if (stack_get_str(&s, &v, L, doc, "", "zone", 1)) {
		if (!stack_names_zone_valid(s))
			stack_err(L, v, "zone: \"%s\" is not a zone (like \"us-central1-a\")", s);
		else
			r->zone = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &mv, L, doc, "", "machineType", 1)) {
		if (!stack_names_rfc1035_valid(s))
			stack_err(L, mv, "machineType: \"%s\" is not a machine type (like \"a3-highgpu-8g\")",
			     s);
		else
			r->machine_type = stack_dup_opt(L, s);
	}
	read_accelerators(L, r, doc);
	/* The reservation's shape must be one Vertex can run: reuse the machine table. */
	if (r->machine_type && L->nerr == before) {
		const struct machines_gpu *gpu =
			r->naccelerators ? machines_gpu_by_compute(r->accelerators[0].type) : NULL;
		enum machines_field f = MACHINES_FIELD_MACHINE_TYPE;
		char *msg = NULL;
		int rc = machines_check(r->machine_type, gpu ? gpu->vertex : NULL,
					r->naccelerators ? r->accelerators[0].count : 0, &msg, &f);

		if (rc == VX_ENOMEM) {
			stack_oom(L);
		} else if (rc < 0) {
			const struct ynode *acc = stack_get_value(doc, "accelerators");

			stack_err(L, f == MACHINES_FIELD_MACHINE_TYPE || !acc ? mv : acc, "%s: %s",
			     f == MACHINES_FIELD_MACHINE_TYPE || !acc ? "machineType" : "accelerators",
			     msg ? msg : "machine type and accelerators do not match");
		}
		free(msg);
	}
	r->count = 0;
	if (stack_get_int(&x, &v, L, doc, "", "count", 1)) {
		if (x < 1 || x > 1000)
			stack_err(L, v, "count: must be between 1 and 1000, got %lld", (long long)x);
		else
			r->count = x;
	}
	r->specific_required = 1;
	(void)stack_get_bool(&r->specific_required, L, doc, "", "specificReservationRequired");
	(void)stack_get_bool(&r->protect, L, doc, "", "protect");
	if (stack_get_str(&s, &v, L, doc, "", "description", 0))
		r->description = stack_dup_opt(L, s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* QuotaPreference */

void stack_quota_release(struct stack_quota *q)
{
	stack_decl_release(&q->d);
	free(q->service);
	free(q->quota_id);
	stack_labels_release(&q->dimensions);
	free(q->contact_email);
	free(q->justification);
}

int stack_kinds_read_quota(struct stack_quota *q, struct loader *L, const struct ynode *doc,
			   struct seen *seen, size_t *nseen)
{
	const struct ynode *v;
	const char *name, *s;
	int64_t x;

	name = stack_read_name(L, doc, KIND_QUOTA);
	stack_check_keys(L, doc, "", quota_keys, ARRAY_SIZE(quota_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&q->d, L, "quota", name, doc) < 0)
		return -1;
	if (stack_get_str(&s, &v, L, doc, "", "service", 1)) {
		size_t n = strlen(s), suf = strlen(".googleapis.com");

		if (n <= suf || strcmp(s + n - suf, ".googleapis.com"))
			stack_err(L, v, "service: \"%s\" is not a service name (like "
			     "\"aiplatform.googleapis.com\")", s);
		else
			q->service = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &v, L, doc, "", "quotaId", 1)) {
		if (!stack_names_quota_id_valid(s))
			stack_err(L, v, "quotaId: \"%s\" is not a quota ID (like "
			     "\"CustomModelTrainingH100GPUsPerProjectPerRegion\")", s);
		else
			q->quota_id = stack_dup_opt(L, s);
	}
	stack_get_string_map(&q->dimensions, L, doc, "dimensions", 0);
	if (stack_get_int(&x, &v, L, doc, "", "preferredValue", 1)) {
		if (x < -1)
			stack_err(L, v, "preferredValue: must be -1 (unlimited) or more, got %lld",
			     (long long)x);
		else
			q->preferred_value = x;
	}
	if (stack_get_str(&s, &v, L, doc, "", "contactEmail", 0)) {
		if (!stack_names_email_valid(s))
			stack_err(L, v, "contactEmail: \"%s\" is not an email address", s);
		else
			q->contact_email = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &v, L, doc, "", "justification", 0))
		q->justification = stack_dup_opt(L, s);
	(void)stack_get_bool(&q->ignore_safety_checks, L, doc, "", "ignoreSafetyChecks");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* CustomJob */

void stack_job_release(struct stack_job *j)
{
	stack_decl_release(&j->d);
	free(j->region);
	free(j->display_name);
	stack_labels_release(&j->labels);
	job_spec_release(&j->spec);
}

static void read_resubmit(struct loader *L, struct stack_job *j, const struct ynode *doc)
{
	const struct ynode *m = stack_get_map(L, doc, "resubmit", "resubmit"), *on, *v;
	int64_t x;

	j->max_attempts = 1;
	j->resubmit_on = 0;
	if (!m)
		return;
	stack_check_keys(L, m, "resubmit", resubmit_keys, ARRAY_SIZE(resubmit_keys));
	on = stack_get_value(m, "on");
	if (on && on->kind != YNODE_SEQ) {
		stack_wrong_type(L, on, "resubmit.on", "sequence");
	} else if (on) {
		for (size_t i = 0; i < on->n; i++) {
			const struct ynode *it = on->items[i];
			char path[48];
			unsigned bit;

			snprintf(path, sizeof(path), "resubmit.on[%zu]", i);
			if (!stack_is_string(it)) {
				stack_wrong_type(L, it, path, "string");
				continue;
			}
			bit = stack_fail_parse(it->str);
			if (!bit)
				stack_unknown_word(L, it, path, "failure class", stack_fail_names,
					     STACK_FAIL_NCLASSES);
			j->resubmit_on |= bit;
		}
	}
	if (stack_get_int(&x, &v, L, m, "resubmit", "maxAttempts", 0)) {
		if (x < 1 || x > STACK_MAX_ATTEMPTS)
			stack_err(L, v, "resubmit.maxAttempts: must be between 1 and %d, got %lld",
			     STACK_MAX_ATTEMPTS, (long long)x);
		else
			j->max_attempts = x;
	}
}

/* Runs spec_check, giving each of its diagnostics this job's prefix. */
static void check_spec(struct loader *L, struct stack_job *j, const struct ynode *spec,
		       const struct spec_env *env)
{
	struct vx_diags sub = VX_DIAGS_INIT;
	int rc;

	sub.cap = L->diags->cap;
	rc = spec_check(&j->spec, spec, env, &sub);
	if (rc == VX_ENOMEM) {
		stack_oom(L);
	} else {
		for (size_t i = 0; i < sub.n; i++) {
			L->nerr++;
			if (vx_diags_add(L->diags, sub.items[i].file, sub.items[i].line,
					 sub.items[i].col, "%s%s", L->prefix, sub.items[i].msg) < 0)
				stack_oom(L);
		}
		L->nerr += sub.dropped;
		L->diags->dropped += sub.dropped;
		if (rc < 0 && sub.n == 0)
			stack_err(L, spec, "spec: not valid");
	}
	if (rc < 0)
		job_spec_release(&j->spec);
	vx_diags_release(&sub);
}

int stack_kinds_read_job(struct stack_job *j, struct loader *L, const struct ynode *doc,
			 const struct stack *st, const struct spec_env *env_base, struct seen *seen,
			 size_t *nseen)
{
	struct stack_labels own = { NULL, 0 };
	struct spec_env env = *env_base;
	const struct ynode *v, *spec;
	const char *name, *s;
	int e = 0;
	int64_t x;

	name = stack_read_name(L, doc, KIND_JOB);
	stack_check_keys(L, doc, "", job_keys, ARRAY_SIZE(job_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&j->d, L, "job", name, doc) < 0)
		return -1;
	if (!get_region(L, doc, &v, &j->region) && !v) {
		if (st->region)
			j->region = stack_dup_opt(L, st->region);
		else if (st->d.name && !L->stack_region)
			stack_err(L, doc, "region: not set, and the Stack sets no default region");
	}
	if (stack_get_str(&s, &v, L, doc, "", "displayName", 0)) {
		if (!*s || stack_names_utf8_len(s) > STACK_MAX_DISPLAY_NAME)
			stack_err(L, v, "displayName: must be 1 to %d characters", STACK_MAX_DISPLAY_NAME);
		else
			j->display_name = stack_dup_opt(L, s);
	} else if (!v && name) {
		j->display_name = stack_dup_opt(L, name);
	}
	/* merged labels: the Stack's, overlaid by the job's own */
	for (size_t i = 0; i < st->labels.n; i++)
		if (stack_labels_set(&j->labels, st->labels.items[i].key, st->labels.items[i].value) < 0)
			stack_oom(L);
	stack_get_string_map(&own, L, doc, "labels", 1);
	for (size_t i = 0; i < own.n; i++)
		if (stack_labels_set(&j->labels, own.items[i].key, own.items[i].value) < 0)
			stack_oom(L);
	if (own.n <= STACK_MAX_USER_LABELS && j->labels.n > STACK_MAX_USER_LABELS) {
		v = stack_get_value(doc, "labels");
		stack_err(L, v ? v : doc, "labels: %zu labels with the Stack's, at most %d (vx adds 6 "
		     "of its own to Vertex's 64)", j->labels.n, STACK_MAX_USER_LABELS);
	}
	stack_labels_release(&own);
	j->run = 1;
	if (stack_get_int(&x, &v, L, doc, "", "run", 0)) {
		if (x < 1)
			stack_err(L, v, "run: must be at least 1, got %lld", (long long)x);
		else
			j->run = x;
	}
	read_resubmit(L, j, doc);
	j->on_change = STACK_ON_CHANGE_REPLACE;
	if (stack_get_enum(&e, L, doc, "onChange", stack_on_change_names, ARRAY_SIZE(stack_on_change_names)))
		j->on_change = (enum stack_on_change)e;
	(void)stack_get_bool(&j->protect, L, doc, "", "protect");
	spec = stack_get_value(doc, "spec");
	if (!spec) {
		stack_get_missing(L, doc, "", "spec");
	} else if (spec->kind != YNODE_MAP) {
		stack_wrong_type(L, spec, "spec", "mapping");
	} else {
		env.region = j->region ? j->region : st->region;
		check_spec(L, j, spec, &env);
	}
	return 0;
}
