/*
 * The persistent resource kind's declarations: its PersistentResource
 * documents read into its slot of struct stack (the row's load_* slots),
 * their canonical spec and hash, release and lookups.
 */
#include "reconcile/kind_persistent.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind_job.h"
#include "reconcile/load/machines.h"
#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "util/banned.h"

static const char *const doc_keys[] = { "kind", "name", "region", "spec", "labels",
					"protect", "deletionPolicy", "onError" };
static const char *const spec_keys[] = { "resourcePools", "network", "encryptionSpec" };
static const char *const encryption_keys[] = { "kmsKeyName" };
static const char *const pool_keys[] = { "id", "machineSpec", "replicaCount", "autoscalingSpec", "diskSpec" };
static const char *const machine_keys[] = { "machineType", "acceleratorType", "acceleratorCount" };
static const char *const autoscaling_keys[] = { "minReplicaCount", "maxReplicaCount" };
static const char *const disk_keys[] = { "bootDiskType", "bootDiskSizeGb" };
static const char *const deletion_words[] = { "delete", "abandon" };
static const char *const on_error_words[] = { "keep", "replace" };

static void pool_release(struct stack_persistent_pool *p)
{
	free(p->id);
	free(p->machine_type);
	free(p->accelerator_type);
	free(p->boot_disk_type);
}

static void persistent_release(struct stack_persistent *r)
{
	stack_decl_release(&r->d);
	free(r->region);
	for (size_t i = 0; i < r->npools; i++)
		pool_release(&r->pools[i]);
	free(r->pools);
	stack_labels_release(&r->labels);
	free(r->spec_json);
	free(r->network);
	free(r->kms_key_name);
}

/* machineSpec of one pool, checked as a job's worker pool's is (the machine table). */
static void read_machine(struct loader *L, struct stack_persistent_pool *p, const struct ynode *pool,
			 const char *path)
{
	const struct ynode *m, *mv = NULL, *av = NULL, *cv = NULL;
	char at[96];
	const char *s;
	enum machines_field f = MACHINES_FIELD_MACHINE_TYPE;
	char *msg = NULL;
	size_t before = L->nerr;
	int rc;

	snprintf(at, sizeof(at), "%s.machineSpec", path);
	if (!(m = stack_get_map(L, pool, "machineSpec", at))) {
		if (!stack_get_value(pool, "machineSpec"))
			stack_get_missing(L, pool, path, "machineSpec");
		return;
	}
	stack_check_keys(L, m, at, machine_keys, ARRAY_SIZE(machine_keys));
	if (stack_get_str(&s, &mv, L, m, at, "machineType", 1))
		p->machine_type = stack_dup_opt(L, s);
	if (stack_get_str(&s, &av, L, m, at, "acceleratorType", 0))
		p->accelerator_type = stack_dup_opt(L, s);
	if (stack_get_int(&p->accelerator_count, &cv, L, m, at, "acceleratorCount", 0) && p->accelerator_count < 0)
		stack_err(L, cv, "%s.acceleratorCount: must not be negative, got %" PRId64, at, p->accelerator_count);
	if (!p->machine_type || L->nerr != before)
		return;
	rc = machines_check(p->machine_type, p->accelerator_type, p->accelerator_count, &msg, &f);
	if (rc == VX_ENOMEM)
		stack_oom(L);
	else if (rc < 0 && f == MACHINES_FIELD_ACCELERATOR_TYPE && av)
		stack_err(L, av, "%s.acceleratorType: %s", at, msg ? msg : "does not fit the machine type");
	else if (rc < 0 && f == MACHINES_FIELD_ACCELERATOR_COUNT && cv)
		stack_err(L, cv, "%s.acceleratorCount: %s", at, msg ? msg : "does not fit the machine type");
	else if (rc < 0)
		stack_err(L, mv, "%s.machineType: %s", at, msg ? msg : "does not fit the accelerators");
	free(msg);
}

/* replicaCount and autoscalingSpec: min >= 1, min < max, min <= replicaCount <= max. */
static void read_replicas(struct loader *L, struct stack_persistent_pool *p, const struct ynode *pool,
			  const char *path)
{
	const struct ynode *rv = NULL, *a, *nv = NULL, *xv = NULL;
	char at[96];

	if (stack_get_int(&p->replica_count, &rv, L, pool, path, "replicaCount", 1) && p->replica_count < 1)
		stack_err(L, rv, "%s.replicaCount: must be at least 1, got %" PRId64, path, p->replica_count);
	snprintf(at, sizeof(at), "%s.autoscalingSpec", path);
	if (!(a = stack_get_map(L, pool, "autoscalingSpec", at)))
		return;
	stack_check_keys(L, a, at, autoscaling_keys, ARRAY_SIZE(autoscaling_keys));
	if (!stack_get_int(&p->min_replica_count, &nv, L, a, at, "minReplicaCount", 1) ||
	    !stack_get_int(&p->max_replica_count, &xv, L, a, at, "maxReplicaCount", 1))
		return;
	if (p->min_replica_count < 1)
		stack_err(L, nv, "%s.minReplicaCount: must be at least 1 for a persistent resource, got %" PRId64,
			  at, p->min_replica_count);
	else if (p->max_replica_count <= p->min_replica_count)
		stack_err(L, xv, "%s.maxReplicaCount: must be more than minReplicaCount (%" PRId64 "), got %" PRId64,
			  at, p->min_replica_count, p->max_replica_count);
	else if (rv && p->replica_count >= 1 &&
		 (p->replica_count < p->min_replica_count || p->replica_count > p->max_replica_count))
		stack_err(L, rv, "%s.replicaCount: must be within autoscalingSpec's %" PRId64 "..%" PRId64 ", got %" PRId64,
			  path, p->min_replica_count, p->max_replica_count, p->replica_count);
	else
		p->has_autoscaling = 1;
}

static void read_disk(struct loader *L, struct stack_persistent_pool *p, const struct ynode *pool, const char *path)
{
	const struct ynode *d, *v = NULL;
	char at[96];
	const char *s;

	snprintf(at, sizeof(at), "%s.diskSpec", path);
	if (!(d = stack_get_map(L, pool, "diskSpec", at)))
		return;
	stack_check_keys(L, d, at, disk_keys, ARRAY_SIZE(disk_keys));
	if (stack_get_str(&s, NULL, L, d, at, "bootDiskType", 0))
		p->boot_disk_type = stack_dup_opt(L, s);
	if (stack_get_int(&p->boot_disk_size_gb, &v, L, d, at, "bootDiskSizeGb", 0) &&
	    (p->boot_disk_size_gb < 100 || p->boot_disk_size_gb > 64000))
		stack_err(L, v, "%s.bootDiskSizeGb: must be between 100 and 64000, got %" PRId64, at,
			  p->boot_disk_size_gb);
}

/* One resource pool; its id unique among the resource's. */
static void read_pool(struct loader *L, struct stack_persistent *r, const struct ynode *pool, size_t i)
{
	struct stack_persistent_pool *p = &r->pools[r->npools];
	const struct ynode *iv = NULL;
	const char *s;
	char path[64];

	snprintf(path, sizeof(path), "spec.resourcePools[%zu]", i);
	if (pool->kind != YNODE_MAP) {
		stack_wrong_type(L, pool, path, "mapping");
		return;
	}
	stack_check_keys(L, pool, path, pool_keys, ARRAY_SIZE(pool_keys));
	if (stack_get_str(&s, &iv, L, pool, path, "id", 1)) {
		if (!stack_names_rfc1035_valid(s))
			stack_err(L, iv, "%s.id: \"%s\" is not a pool id (lowercase letters, digits and '-', "
					 "a letter first, at most 63)",
				  path, s);
		else if (stack_persistent_pool(r, s))
			stack_err(L, iv, "%s.id: \"%s\" is another pool's id too", path, s);
		else
			p->id = stack_dup_opt(L, s);
	}
	read_machine(L, p, pool, path);
	read_replicas(L, p, pool, path);
	read_disk(L, p, pool, path);
	r->npools++;
}

/* spec.network and spec.encryptionSpec: where the machines live and their key, which the jobs on it must share. */
static void read_network(struct loader *L, struct stack_persistent *r, const struct ynode *spec)
{
	const struct ynode *e, *v = NULL;
	const char *s;

	if (stack_get_str(&s, &v, L, spec, "spec", "network", 0)) {
		if (*s)
			r->network = stack_dup_opt(L, s);
		else
			stack_err(L, v, "spec.network: empty; leave it out for no network");
	}
	if (!(e = stack_get_map(L, spec, "encryptionSpec", "spec.encryptionSpec")))
		return;
	stack_check_keys(L, e, "spec.encryptionSpec", encryption_keys, ARRAY_SIZE(encryption_keys));
	if (stack_get_str(&s, &v, L, e, "spec.encryptionSpec", "kmsKeyName", 1)) {
		if (*s)
			r->kms_key_name = stack_dup_opt(L, s);
		else
			stack_err(L, v, "spec.encryptionSpec.kmsKeyName: empty");
	}
}

static void read_spec(struct loader *L, struct stack_persistent *r, const struct ynode *doc)
{
	const struct ynode *spec = stack_get_map(L, doc, "spec", "spec"), *seq;

	if (!spec) {
		if (!stack_get_value(doc, "spec"))
			stack_get_missing(L, doc, "", "spec");
		return;
	}
	stack_check_keys(L, spec, "spec", spec_keys, ARRAY_SIZE(spec_keys));
	read_network(L, r, spec);
	if (!(seq = stack_get_value(spec, "resourcePools"))) {
		stack_get_missing(L, spec, "spec", "resourcePools");
		return;
	}
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "spec.resourcePools", "sequence");
		return;
	}
	if (seq->n == 0) {
		stack_err(L, seq, "spec.resourcePools: at least one pool");
		return;
	}
	if (!(r->pools = calloc(seq->n, sizeof(*r->pools)))) {
		stack_oom(L);
		return;
	}
	for (size_t i = 0; i < seq->n; i++)
		read_pool(L, r, seq->items[i], i);
}

static int read_persistent(struct stack_persistent *r, struct loader *L, const struct ynode *doc,
			   const struct stack *st, struct seen *seen, size_t *nseen)
{
	const struct ynode *v = NULL;
	const char *name = stack_read_name(L, doc, &kind_persistent);
	int e = 0;

	stack_check_keys(L, doc, "", doc_keys, ARRAY_SIZE(doc_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&r->d, L, kind_persistent.prefix, name, doc) < 0)
		return -1;
	if (!stack_get_region(L, doc, &v, &r->region) && st->region)
		r->region = stack_dup_opt(L, st->region);
	else if (!v && !st->region)
		stack_err(L, doc, "region: required (the Stack sets no region)");
	read_spec(L, r, doc);
	stack_get_string_map(&r->labels, L, doc, "labels", 1);
	(void)stack_get_bool(&r->protect, L, doc, "", "protect");
	if (stack_get_enum(&e, L, doc, "deletionPolicy", deletion_words, ARRAY_SIZE(deletion_words)))
		r->abandon = e == 2;
	if (stack_get_enum(&e, L, doc, "onError", on_error_words, ARRAY_SIZE(on_error_words)))
		r->on_error = e == 2 ? STACK_PERSISTENT_ON_ERROR_REPLACE : STACK_PERSISTENT_ON_ERROR_KEEP;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The canonical spec (keys sorted, int64 as strings, int32 as numbers) */

static int pool_json(struct vx_buf *b, const struct stack_persistent_pool *p)
{
	int rc = vx_buf_addc(b, '{');

	if (rc == 0 && p->has_autoscaling)
		rc = vx_buf_printf(b, "\"autoscalingSpec\":{\"maxReplicaCount\":\"%" PRId64 "\",\"minReplicaCount\":\"%" PRId64 "\"},",
				   p->max_replica_count, p->min_replica_count);
	if (rc == 0 && (p->boot_disk_type || p->boot_disk_size_gb)) {
		rc = vx_buf_adds(b, "\"diskSpec\":{");
		if (rc == 0 && p->boot_disk_size_gb)
			rc = vx_buf_printf(b, "\"bootDiskSizeGb\":%" PRId64 "%s", p->boot_disk_size_gb,
					   p->boot_disk_type ? "," : "");
		if (rc == 0 && p->boot_disk_type)
			rc = vx_buf_adds(b, "\"bootDiskType\":") < 0 ? -1 : vx_buf_add_json_str(b, p->boot_disk_type);
		if (rc == 0)
			rc = vx_buf_adds(b, "},");
	}
	if (rc == 0)
		rc = vx_buf_adds(b, "\"id\":") < 0 ? -1 : vx_buf_add_json_str(b, p->id);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"machineSpec\":{");
	if (rc == 0 && p->accelerator_type)
		rc = vx_buf_printf(b, "\"acceleratorCount\":%" PRId64 ",\"acceleratorType\":", p->accelerator_count) < 0
			     ? -1
		     : vx_buf_add_json_str(b, p->accelerator_type) < 0 ? -1
								       : vx_buf_addc(b, ',');
	if (rc == 0)
		rc = vx_buf_adds(b, "\"machineType\":") < 0 ? -1 : vx_buf_add_json_str(b, p->machine_type);
	if (rc == 0)
		rc = vx_buf_printf(b, "},\"replicaCount\":\"%" PRId64 "\"}", p->replica_count);
	return rc < 0 ? VX_ENOMEM : 0;
}

static char *spec_json(const struct stack_persistent *r)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc = vx_buf_addc(&b, '{');

	/* Keys sorted: encryptionSpec, network, resourcePools. */
	if (rc == 0 && r->kms_key_name)
		rc = vx_buf_adds(&b, "\"encryptionSpec\":{\"kmsKeyName\":") < 0 ||
				     vx_buf_add_json_str(&b, r->kms_key_name) < 0 || vx_buf_adds(&b, "},") < 0
			     ? -1
			     : 0;
	if (rc == 0 && r->network)
		rc = vx_buf_adds(&b, "\"network\":") < 0 || vx_buf_add_json_str(&b, r->network) < 0 ||
				     vx_buf_addc(&b, ',') < 0
			     ? -1
			     : 0;
	if (rc == 0)
		rc = vx_buf_adds(&b, "\"resourcePools\":[");

	for (size_t i = 0; i < r->npools && rc == 0; i++)
		rc = (i && vx_buf_addc(&b, ',') < 0) ? -1 : pool_json(&b, &r->pools[i]);
	if (rc == 0)
		rc = vx_buf_adds(&b, "]}");
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

/* ---------------------------------------------------------------------- */
/* The row's loader slots and the accessors */

static size_t slot_index(void)
{
	return kind_index(&kind_persistent);
}

const struct stack_persistent *stack_persistents(const struct stack *st, size_t *n)
{
	const struct stack_kind_decls *s = &st->of[slot_index()];

	if (n)
		*n = s->n;
	return s->items;
}

const struct stack_persistent *stack_find_persistent(const struct stack *st, const char *name)
{
	return (const struct stack_persistent *)stack_find_in(st, &kind_persistent, name);
}

const struct stack_persistent_pool *stack_persistent_pool(const struct stack_persistent *d, const char *id)
{
	for (size_t i = 0; d && id && i < d->npools; i++)
		if (d->pools[i].id && !strcmp(d->pools[i].id, id))
			return &d->pools[i];
	return NULL;
}

int64_t stack_persistent_pool_max(const struct stack_persistent_pool *p)
{
	return p->has_autoscaling && p->max_replica_count > p->replica_count ? p->max_replica_count
									     : p->replica_count;
}

int kind_persistent_load_alloc(struct load_pass *B, size_t n)
{
	struct stack_kind_decls *s = &B->st->of[slot_index()];

	s->items = calloc(n + 1, sizeof(struct stack_persistent));
	return s->items ? 0 : -1;
}

int kind_persistent_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct stack_kind_decls *slot = &B->st->of[slot_index()];
	struct stack_persistent *r = (struct stack_persistent *)slot->items + slot->n++;
	size_t before = B->L->nerr;

	if (read_persistent(r, B->L, doc, B->st, B->seen, &B->nseen) < 0)
		return -1;
	if (B->L->nerr == before && r->d.name && !(r->spec_json = spec_json(r))) {
		stack_oom(B->L);
		return -1;
	}
	return 0;
}

void kind_persistent_decl_release(struct stack_kind_decls *slot)
{
	struct stack_persistent *r = slot->items;

	for (size_t i = 0; i < slot->n; i++)
		persistent_release(&r[i]);
	free(slot->items);
}

static int hash_persistent(struct vx_buf *b, struct stack_persistent *r)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->d.address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"deletionPolicy\":\"%s\"", r->abandon ? "abandon" : "delete");
	if (rc == 0)
		rc = stack_json_map(b, "labels", &r->labels);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"onError\":\"%s\",\"protect\":%s", r->on_error ? "replace" : "keep",
				   r->protect ? "true" : "false");
	if (rc == 0)
		rc = stack_json_kv(b, "region", r->region);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"spec\":%s", r->spec_json ? r->spec_json : "null");
	return rc ? rc : stack_decl_hash(b, &r->d);
}

int kind_persistent_decl_hash(struct stack *st)
{
	struct stack_kind_decls *slot = &st->of[slot_index()];
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < slot->n && rc == 0; i++)
		rc = hash_persistent(&b, (struct stack_persistent *)slot->items + i);
	vx_buf_release(&b);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* A job on a persistent resource (the job kind's reader asks) */

const struct stack_persistent_pool *stack_persistent_pool_for(const struct stack_persistent *d,
							      const struct spec_pool *w)
{
	for (size_t i = 0; i < d->npools; i++) {
		const struct stack_persistent_pool *p = &d->pools[i];

		if (p->machine_type && !strcmp(p->machine_type, w->machine_type) &&
		    vx_text_same(p->accelerator_type, w->accelerator_type) &&
		    p->accelerator_count == (w->accelerator_type ? w->accelerator_count : 0))
			return p;
	}
	return NULL;
}

/* Whether d's pools take every worker pool of spec, the replicas on one pool added up. */
static char *pools_misfit(const struct stack_persistent *d, const struct job_spec *spec)
{
	for (size_t i = 0; i < spec->npools; i++) {
		const struct spec_pool *w = &spec->pools[i];
		const struct stack_persistent_pool *p;
		int64_t want = 0;

		if (!w->machine_type)
			continue;
		if (!(p = stack_persistent_pool_for(d, w)))
			return vx_asprintf("spec.workerPoolSpecs[%zu] (%s, %" PRId64 "\u00d7%s) fits no pool of %s "
					   "(machine type, accelerator type and count must equal a pool's)",
					   i, w->machine_type, w->accelerator_type ? w->accelerator_count : 0,
					   w->accelerator_type ? w->accelerator_type : "no accelerator", d->d.address);
		for (size_t k = 0; k < spec->npools; k++)
			if (spec->pools[k].machine_type && stack_persistent_pool_for(d, &spec->pools[k]) == p)
				want += spec->pools[k].replica_count;
		if (want > stack_persistent_pool_max(p))
			return vx_asprintf("spec.workerPoolSpecs[%zu]: %" PRId64 " replicas on pool %s of %s, which "
					   "has at most %" PRId64,
					   i, want, p->id, d->d.address,
					   stack_persistent_pool_max(p));
	}
	return NULL;
}

int stack_persistent_named_in(const char *spec_json, const char *id)
{
	static const char key[] = "\"persistentResourceId\":\"";
	size_t n = strlen(id);

	/* Canonical and redacted specs are compact JSON, keys sorted: the key appears once. */
	for (const char *at = spec_json ? strstr(spec_json, key) : NULL; at; at = strstr(at + 1, key))
		if (!strncmp(at + sizeof(key) - 1, id, n) && at[sizeof(key) - 1 + n] == '"')
			return 1;
	return 0;
}

int stack_persistent_of_job(const struct stack_persistent *d, const struct stack_job *j)
{
	return vx_text_same(j->region, d->region) && stack_persistent_named_in(j->spec.canonical_json, d->d.name);
}

const char *persistent_undeclared_of_job(const struct stack *st, const struct stack_job *j)
{
	const char *id = j->spec.held_ref;
	const struct stack_persistent *d = id ? stack_find_persistent(st, id) : NULL;

	return id && !(d && stack_persistent_of_job(d, j)) ? id : NULL;
}

int stack_persistent_misfit(char **why, const struct stack_persistent *d, const struct job_spec *spec,
			    const char *job_region)
{
	*why = NULL;
	if (spec->strategy && (!strcmp(spec->strategy, "SPOT") || !strcmp(spec->strategy, "FLEX_START")))
		*why = vx_asprintf("scheduling.strategy %s: a job on a persistent resource runs on its machines, "
				   "which are held already",
				   spec->strategy);
	else if (spec->reservation || (spec->canonical_json && strstr(spec->canonical_json, "\"reservationAffinity\"")))
		*why = vx_strdup("reservationAffinity: not supported on a persistent resource (\"Reservation "
				 "affinity is not supported yet for persistent clusters\")");
	else if (d && job_region && d->region && strcmp(job_region, d->region) != 0)
		*why = vx_asprintf("%s is in %s, the job in %s", d->d.address, d->region, job_region);
	else if (d)
		return (*why = pools_misfit(d, spec)) ? 1 : 0;
	else
		return 0;
	return *why ? 1 : VX_ENOMEM;
}

int stack_persistent_read_ref(struct loader *L, const struct ynode *doc, const struct stack *st, const char *region,
			      const char **id, const struct stack_persistent **d, const struct ynode **at)
{
	char proj[128], reg[64], rid[64];
	const char *s;
	int end = 0;

	*id = NULL;
	*d = NULL;
	if (!stack_get_str(&s, at, L, doc, "", "persistentResource", 0))
		return *at ? -1 : 0;
	if ((*d = stack_find_persistent(st, s)) != NULL) {
		*id = (*d)->d.name;
		return 1;
	}
	if (sscanf(s, "projects/%127[^/]/locations/%63[^/]/persistentResources/%63[a-z0-9-]%n", proj, reg, rid,
		   &end) != 3 ||
	    s[end] || !stack_names_rfc1035_valid(rid)) {
		stack_err(L, *at, "persistentResource: \"%s\" is neither a persistent resource of this stack nor a "
				  "full name projects/PROJECT/locations/REGION/persistentResources/ID",
			  s);
		return -1;
	}
	if ((st->project && strcmp(proj, st->project) != 0) || !region || strcmp(reg, region) != 0) {
		stack_err(L, *at, "persistentResource: \"%s\" is not in the job's project and region (%s, %s): "
				  "a job runs only on a persistent resource of its own",
			  s,
			  st->project ? st->project : "?", region ? region : "?");
		return -1;
	}
	*id = s + end - strlen(rid);
	return 1;
}
