/*
 * The job kind's declarations: its CustomJob documents read into its slot
 * of struct stack (the row's load_* slots; matrix:, ${{ }} and after: are
 * sweep.c's), their canonical hashes, the salt of their sensitive values,
 * release and lookups.
 */
#include "reconcile/kind_job_load.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"
#include "reconcile/kind_future.h"
#include "reconcile/kind_persistent.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/spec.h"
#include "reconcile/sweep.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/text.h"
#include "util/banned.h"

static const char *const job_keys[] = { "kind", "name", "region", "displayName", "labels", "spec",
					"persistentResource", "reservation",
					"run", "resubmit", "onChange", "protect", "stuckAfter", "onRemove",
					"matrix", "maxParallel", "maxFailed", "after", "maxHourlyUsd" };
/* onRemove's values, STATE_ON_REMOVE_CANCEL and _FORGET in order. */
static const char *const on_remove_names[] = { "cancel", "forget" };
static const char *const resubmit_keys[] = { "on", "maxAttempts", "fallback", "delay", "onExitCodes", "within",
					     "returnAfter", "maxQueued" };
static const char *const rung_keys[] = { "region", "scheduling", "machineSpec", "reservation" };

/* A rung's well-formed region against the regions vx knows, as PATH.region. */
static int rung_region_check(struct loader *L, const struct ynode *at, const char *path,
			     const char *region)
{
	char *field = vx_asprintf("%s.region", path);
	int rc;

	if (!field) {
		stack_oom(L);
		return -1;
	}
	rc = stack_regions_check(L, at, field, region, NULL);
	free(field);
	return rc;
}

void stack_job_release(struct stack_job *j)
{
	stack_decl_release(&j->d);
	free(j->region);
	free(j->display_name);
	stack_labels_release(&j->labels);
	job_spec_release(&j->spec);
	for (size_t i = 0; i < j->nrungs; i++) {
		free(j->rungs[i].region);
		job_spec_release(&j->rungs[i].spec);
	}
	free(j->rungs);
	for (size_t i = 0; i < j->nafter; i++)
		free(j->after[i]);
	free(j->after);
	free(j->output_dir);
	free(j->booking);
}

/* The largest of d, h, m, s that divides ms, for messages ("30d", "15m"). */
static int64_t dur_unit(int64_t ms)
{
	static const int64_t units[] = { 86400000, 3600000, 60000, 1000 };

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (ms && ms % units[i] == 0)
			return units[i];
	return 1000;
}

static const char *dur_name(int64_t ms)
{
	switch (dur_unit(ms)) {
	case 86400000:
		return "d";
	case 3600000:
		return "h";
	case 60000:
		return "m";
	default:
		return "s";
	}
}

/*
 * A duration field (30s, 2m, 6h) into *out when present and within
 * [min_ms, max_ms]; reported otherwise. path is "" at the top of a document.
 */
static void read_duration(struct loader *L, const struct ynode *map, const char *path, const char *key,
			  int64_t *out, int64_t min_ms, int64_t max_ms)
{
	const struct ynode *v;
	const char *s;
	int64_t ms;

	if (!stack_get_str(&s, &v, L, map, path, key, 0))
		return;
	if (spec_parse_duration(s, &ms) < 0)
		stack_err(L, v, "%s%s%s: \"%s\" is not a duration (like 30s, 15m or 6h)", path, *path ? "." : "",
			  key, s);
	else if (ms < min_ms || ms > max_ms)
		stack_err(L, v, "%s%s%s: must be from %lld%s to %lld%s, got \"%s\"", path, *path ? "." : "", key,
			  (long long)(min_ms / dur_unit(min_ms)), dur_name(min_ms),
			  (long long)(max_ms / dur_unit(max_ms)), dur_name(max_ms), s);
	else
		*out = ms;
}

/* resubmit.onExitCodes: exit statuses 1..255 (a replica's, as Google's sentence gives it). */
static void read_exit_codes(struct loader *L, struct stack_job *j, const struct ynode *m)
{
	const struct ynode *seq = stack_get_value(m, "onExitCodes");

	memset(j->on_exit_codes, 0, sizeof(j->on_exit_codes));
	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "resubmit.onExitCodes", "sequence");
		return;
	}
	for (size_t i = 0; i < seq->n; i++) {
		struct ynode_why why;
		int64_t c;

		if (ynode_int(&c, &why, seq->items[i], INT64_MIN, INT64_MAX) < 0)
			stack_err(L, seq->items[i], "resubmit.onExitCodes[%zu]: %s", i, why.s);
		else if (c < 1 || c > 255)
			stack_err(L, seq->items[i], "resubmit.onExitCodes[%zu]: an exit status is between 1 and 255, got %lld",
				  i, (long long)c);
		else
			j->on_exit_codes[c / 64] |= UINT64_C(1) << (c % 64);
	}
}

/*
 * A class of resubmit.on: its bit, 0 (said) when it is none. budget is its
 * number in the map form ({stockout: 6}), NULL in the list form.
 */
static unsigned read_on_class(struct loader *L, struct stack_job *j, const struct ynode *it,
			      const struct ynode *budget, const char *path)
{
	struct ynode_why why;
	unsigned bit;
	int64_t n;

	if (!stack_is_string(it)) {
		stack_wrong_type(L, it, path, "string");
		return 0;
	}
	bit = stack_fail_parse(it->str);
	if (!bit) {
		stack_unknown_word(L, it, path, "failure class", stack_fail_names, STACK_FAIL_NCLASSES);
		return 0;
	}
	if (!budget)
		return bit;
	if (ynode_int(&n, &why, budget, INT64_MIN, INT64_MAX) < 0)
		stack_err(L, budget, "resubmit.on.%s: %s", it->str, why.s);
	else if (n < 0 || n > STACK_MAX_ATTEMPTS)
		stack_err(L, budget, "resubmit.on.%s: resubmissions after a %s must be between 0 and %d, got %lld",
			  it->str, it->str, STACK_MAX_ATTEMPTS, (long long)n);
	for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
		if (bit == 1u << c)
			j->on_budget[c] = n >= 0 && n <= STACK_MAX_ATTEMPTS ? n : 0;
	return bit;
}

/* resubmit.on: a list of failure classes, or a map of each to its budget. */
static void read_on(struct loader *L, struct stack_job *j, const struct ynode *on)
{
	char path[48];

	memset(j->on_budget, 0, sizeof(j->on_budget));
	j->on_budgets = on && on->kind == YNODE_MAP;
	if (!on)
		return;
	if (on->kind != YNODE_SEQ && on->kind != YNODE_MAP) {
		stack_wrong_type(L, on, "resubmit.on", "sequence or mapping");
		return;
	}
	for (size_t i = 0; i < on->n; i++) {
		snprintf(path, sizeof(path), j->on_budgets ? "resubmit.on" : "resubmit.on[%zu]", i);
		j->resubmit_on |= j->on_budgets ? read_on_class(L, j, on->pairs[i].key, on->pairs[i].value, path)
						: read_on_class(L, j, on->items[i], NULL, path);
	}
}

static void read_resubmit(struct loader *L, struct stack_job *j, const struct ynode *doc)
{
	const struct ynode *m = stack_get_map(L, doc, "resubmit", "resubmit"), *v;
	int64_t x;

	j->max_attempts = 1;
	j->resubmit_on = 0;
	if (!m)
		return;
	stack_check_keys(L, m, "resubmit", resubmit_keys, ARRAY_SIZE(resubmit_keys));
	read_on(L, j, stack_get_value(m, "on"));
	if (stack_get_int(&x, &v, L, m, "resubmit", "maxAttempts", 0)) {
		if (x < 1 || x > STACK_MAX_ATTEMPTS)
			stack_err(L, v, "resubmit.maxAttempts: must be between 1 and %d, got %lld",
				  STACK_MAX_ATTEMPTS, (long long)x);
		else
			j->max_attempts = x;
	}
	read_duration(L, m, "resubmit", "delay", &j->resubmit_delay_ms, 0, STACK_MAX_RESUBMIT_DELAY_MS);
	read_exit_codes(L, j, m);
	read_duration(L, m, "resubmit", "within", &j->within_ms, STACK_MIN_WITHIN_MS, STACK_MAX_WITHIN_MS);
	read_duration(L, m, "resubmit", "returnAfter", &j->return_after_ms, STACK_MIN_RETURN_AFTER_MS,
		      STACK_MAX_RETURN_AFTER_MS);
	read_duration(L, m, "resubmit", "maxQueued", &j->max_queued_ms, STACK_MIN_MAX_QUEUED_MS,
		      STACK_MAX_MAX_QUEUED_MS);
}

static void check_spec(struct loader *L, struct job_spec *out, const struct ynode *spec,
		       const struct spec_env *env, const char *subpath, const struct ynode *rung);

/* ---------------------------------------------------------------------- */
/* Fallback ladders: each rung is the job's spec with the rung's overrides,
 * built as a YAML tree of its own (sharing the unchanged nodes, so every
 * diagnostic still points at the line that wrote the value) and checked by
 * spec_check like the job's spec. */

/* The nodes made for one rung's tree, freed once it is checked. */
struct synth {
	void **blocks;
	size_t n;
	int oom;
};

static void *synth_alloc(struct synth *sy, size_t size)
{
	void **nb;
	void *p;

	if (sy->oom)
		return NULL;
	nb = realloc(sy->blocks, (sy->n + 1) * sizeof(*nb));
	p = nb ? calloc(1, size) : NULL;
	if (nb)
		sy->blocks = nb;
	if (!p) {
		sy->oom = 1;
		return NULL;
	}
	sy->blocks[sy->n++] = p;
	return p;
}

static void synth_release(struct synth *sy)
{
	for (size_t i = 0; i < sy->n; i++)
		free(sy->blocks[i]);
	free(sy->blocks);
}

/* A scalar with text str at at's position. */
static struct ynode *synth_scalar(struct synth *sy, const struct ynode *at, const char *str)
{
	struct ynode *n = synth_alloc(sy, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = YNODE_SCALAR;
	n->file = at->file;
	n->line = at->line;
	n->col = at->col;
	n->str = str;
	n->len = strlen(str);
	n->style = YSTYLE_QUOTED;
	return n;
}

/* A shallow copy of map (its pairs copied, the nodes shared), with room for extra more pairs. */
static struct ynode *synth_map_copy(struct synth *sy, const struct ynode *map, size_t extra)
{
	struct ynode *n = synth_alloc(sy, sizeof(*n));
	struct ynode_pair *p = n ? synth_alloc(sy, (map->n + extra + 1) * sizeof(*p)) : NULL;

	if (!p)
		return NULL;
	*n = *map;
	if (map->n)
		memcpy(p, map->pairs, map->n * sizeof(*p));
	n->pairs = p;
	return n;
}

/* Sets key to value in a map made by synth_map_copy (with room left), keeping
 * the map's key node when it has the key. */
static void synth_set(struct ynode *map, struct ynode *key, struct ynode *value)
{
	for (size_t i = 0; i < map->n; i++)
		if (!strcmp(map->pairs[i].key->str, key->str)) {
			map->pairs[i].value = value;
			return;
		}
	map->pairs[map->n].key = key;
	map->pairs[map->n].value = value;
	map->n++;
}

/* Whether a worker pool's machineSpec names accelerators. */
static int pool_has_accelerators(const struct ynode *pool)
{
	const struct ynode *ms = ynode_get(pool, "machineSpec"), *t, *c;

	if (!ms || ms->kind != YNODE_MAP)
		return 0;
	t = ynode_get(ms, "acceleratorType");
	c = ynode_get(ms, "acceleratorCount");
	if (t && t->kind == YNODE_SCALAR && !ynode_is_null(t) &&
	    strcmp(t->str, "ACCELERATOR_TYPE_UNSPECIFIED") != 0)
		return 1;
	return c && c->kind == YNODE_SCALAR && !ynode_is_null(c) && strcmp(c->str, "0") != 0;
}

/*
 * The reservationAffinity a rung's `reservation: X` stands for: vx's
 * {reservation: X} for a reservation of the stack, or for a full name
 * projects/P/zones/Z/reservations/N the form Vertex documents
 * (SPECIFIC_RESERVATION, key compute.googleapis.com/reservation-name,
 * values [the name]), whose zone must be in the rung's region (spec_check
 * checks a declared one's zone itself). path is the rung's, or "" for the
 * job's own reservation: key.
 */
static struct ynode *rung_affinity(struct loader *L, struct synth *sy, struct ynode *res,
				   const char *region, const char *path)
{
	struct ynode *m = synth_alloc(sy, sizeof(*m));
	struct ynode_pair *p = m ? synth_alloc(sy, 3 * sizeof(*p)) : NULL;
	struct ynode **items;
	char zone[64];
	int end = 0;

	if (!p)
		return NULL;
	*m = *res;
	m->kind = YNODE_MAP;
	m->str = NULL;
	m->len = 0;
	m->tag = NULL;
	m->pairs = p;
	if (!strchr(res->str, '/')) {
		p[0].key = synth_scalar(sy, res, "reservation");
		p[0].value = res;
		m->n = 1;
		return p[0].key ? m : NULL;
	}
	if (sscanf(res->str, "projects/%*[^/]/zones/%63[^/]/reservations/%*[a-z0-9-]%n", zone, &end) != 1 ||
	    end <= 0 || res->str[end] != '\0' || !stack_names_zone_valid(zone)) {
		stack_err(L, res, "%s%sreservation: \"%s\" is neither a reservation of this stack nor a "
				  "full name projects/PROJECT/zones/ZONE/reservations/NAME",
			  path, *path ? "." : "", res->str);
		return NULL;
	}
	if (strncmp(zone, region, strlen(region)) != 0 || zone[strlen(region)] != '-' ||
	    strchr(zone + strlen(region) + 1, '-')) {
		stack_err(L, res, "%s%sreservation: \"%s\" is in zone %s, outside the %s's region %s",
			  path, *path ? "." : "", res->str, zone, *path ? "rung" : "job", region);
		return NULL;
	}
	items = synth_alloc(sy, sizeof(*items));
	p[2].value = items ? synth_alloc(sy, sizeof(struct ynode)) : NULL;
	if (!p[2].value)
		return NULL;
	*p[2].value = *res;
	p[2].value->kind = YNODE_SEQ;
	p[2].value->str = NULL;
	p[2].value->len = 0;
	p[2].value->tag = NULL;
	p[2].value->n = 1;
	p[2].value->items = items;
	items[0] = res;
	p[0].key = synth_scalar(sy, res, "reservationAffinityType");
	p[0].value = synth_scalar(sy, res, "SPECIFIC_RESERVATION");
	p[1].key = synth_scalar(sy, res, "key");
	p[1].value = synth_scalar(sy, res, "compute.googleapis.com/reservation-name");
	p[2].key = synth_scalar(sy, res, "values");
	m->n = 3;
	return p[0].key && p[0].value && p[1].key && p[1].value && p[2].key ? m : NULL;
}

/*
 * The rung's scheduling set over the spec's into top: the spec's scheduling
 * (if any), each of the rung's keys set over it. -1 when it cannot be built
 * (reported, or out of memory: sy->oom).
 */
static int rung_scheduling(struct loader *L, struct synth *sy, struct ynode *top,
			   const struct ynode *spec, const struct ynode *rung,
			   const struct ynode *sched, const char *path)
{
	const struct ynode *old = ynode_get(spec, "scheduling");
	struct ynode *m;
	char field[80];

	if (sched->kind != YNODE_MAP) {
		snprintf(field, sizeof(field), "%s.scheduling", path);
		stack_wrong_type(L, sched, field, "mapping");
		return -1;
	}
	m = synth_map_copy(sy, old && old->kind == YNODE_MAP ? old : sched,
			   old && old->kind == YNODE_MAP ? sched->n : 0);
	if (!m)
		return -1;
	for (size_t i = 0; old && old->kind == YNODE_MAP && i < sched->n; i++)
		synth_set(m, sched->pairs[i].key, sched->pairs[i].value);
	synth_set(top, ynode_get_key(rung, "scheduling"), m);
	return 0;
}

/*
 * The spec's workerPoolSpecs with the rung's machineSpec (ms) and
 * reservation (res, as the affinity aff) in each pool that has accelerators;
 * NULL when it cannot be built (reported, or out of memory: sy->oom).
 */
static struct ynode *rung_pools(struct loader *L, struct synth *sy, const struct ynode *spec,
				const struct ynode *rung, const struct ynode *ms,
				const struct ynode *res, struct ynode *aff, const char *path)
{
	const struct ynode *pools = ynode_get(spec, "workerPoolSpecs");
	struct ynode *np, **items;
	size_t hits = 0;
	char field[80];

	if (ms && ms->kind != YNODE_MAP) {
		snprintf(field, sizeof(field), "%s.machineSpec", path);
		stack_wrong_type(L, ms, field, "mapping");
		return NULL;
	}
	if (!pools || pools->kind != YNODE_SEQ)
		return NULL; /* spec_check reported it for the job */
	np = synth_alloc(sy, sizeof(*np));
	items = np ? synth_alloc(sy, (pools->n + 1) * sizeof(*items)) : NULL;
	if (!items)
		return NULL;
	*np = *pools;
	np->items = items;
	for (size_t i = 0; i < pools->n; i++) {
		const struct ynode *pool = pools->items[i];
		struct ynode *npool, *nms;

		items[i] = pools->items[i];
		if (pool->kind != YNODE_MAP || !pool_has_accelerators(pool))
			continue;
		hits++;
		npool = synth_map_copy(sy, pool, 1);
		nms = synth_map_copy(sy, ms ? ms : ynode_get(pool, "machineSpec"), 1);
		if (!npool || !nms)
			return NULL;
		if (aff) {
			struct ynode *k = synth_scalar(sy, res, "reservationAffinity");

			if (!k)
				return NULL;
			synth_set(nms, k, aff);
		}
		synth_set(npool, ms ? ynode_get_key(rung, "machineSpec") : ynode_get_key(pool, "machineSpec"), nms);
		items[i] = npool;
	}
	if (!hits) {
		stack_err(L, ms ? ms : res, "%s%s%s: no worker pool of the spec has accelerators "
					    "to %s",
			  path, *path ? "." : "", ms ? "machineSpec" : "reservation",
			  ms ? "replace the machineSpec of" : "reserve");
		return NULL;
	}
	return np;
}

/* The job's spec with rung's overrides (see struct stack_rung); NULL when it
 * cannot be built (reported, or out of memory: sy->oom). */
static const struct ynode *rung_tree(struct loader *L, struct synth *sy, const struct ynode *spec,
				     const struct ynode *rung, const char *region, const char *path)
{
	const struct ynode *sched = stack_get_value(rung, "scheduling");
	const struct ynode *ms = stack_get_value(rung, "machineSpec");
	struct ynode *res = stack_get_value(rung, "reservation") ? ynode_get(rung, "reservation") : NULL;
	struct ynode *top = synth_map_copy(sy, spec, 1), *aff = NULL, *np;
	char field[80];

	if (!top)
		return NULL;
	if (sched && rung_scheduling(L, sy, top, spec, rung, sched, path) < 0)
		return NULL;
	if (res) {
		if (!stack_is_string(res)) {
			snprintf(field, sizeof(field), "%s.reservation", path);
			stack_wrong_type(L, res, field, "string");
			return NULL;
		}
		if (!(aff = rung_affinity(L, sy, res, region, path)))
			return NULL;
	}
	if (ms || res) {
		if (!(np = rung_pools(L, sy, spec, rung, ms, res, aff, path)))
			return NULL;
		synth_set(top, ynode_get_key(spec, "workerPoolSpecs"), np);
	}
	return top;
}

/* resubmit.fallback: the ladder, each rung checked like the job's spec. */
static void read_fallback(struct loader *L, struct stack_job *j, const struct ynode *doc,
			  const struct ynode *spec, const struct spec_env *env_job)
{
	const struct ynode *m = stack_get_value(doc, "resubmit");
	const struct ynode *seq = m && m->kind == YNODE_MAP ? stack_get_value(m, "fallback") : NULL;

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		stack_wrong_type(L, seq, "resubmit.fallback", "sequence");
		return;
	}
	if (seq->n > STACK_MAX_RUNGS) {
		stack_err(L, seq, "resubmit.fallback: %zu rungs, at most %d", seq->n, STACK_MAX_RUNGS);
		return;
	}
	if (seq->n == 0)
		return;
	j->rungs = calloc(seq->n, sizeof(*j->rungs));
	if (!j->rungs) {
		stack_oom(L);
		return;
	}
	for (size_t i = 0; i < seq->n; i++) {
		const struct ynode *rung = seq->items[i], *rv, *tree;
		struct spec_env env = *env_job;
		struct synth sy = { NULL, 0, 0 };
		char path[48], sub[56];
		const char *s;
		size_t before = L->nerr;

		snprintf(path, sizeof(path), "resubmit.fallback[%zu]", i);
		snprintf(sub, sizeof(sub), "%s: ", path);
		if (rung->kind != YNODE_MAP) {
			stack_wrong_type(L, rung, path, "mapping");
			continue;
		}
		stack_check_keys(L, rung, path, rung_keys, ARRAY_SIZE(rung_keys));
		/* A rung of only misspelt keys has its error already. */
		if (L->nerr == before && !stack_get_value(rung, "region") &&
		    !stack_get_value(rung, "scheduling") && !stack_get_value(rung, "machineSpec") &&
		    !stack_get_value(rung, "reservation")) {
			stack_err(L, rung, "%s: a rung sets at least one of region, scheduling, "
					   "machineSpec, reservation",
				  path);
			continue;
		}
		if (stack_get_str(&s, &rv, L, rung, path, "region", 0)) {
			if (!stack_names_region_valid(s))
				stack_err(L, rv, "%s.region: \"%s\" is not a region (like \"us-central1\")",
					  path, s);
			else if (rung_region_check(L, rv, path, s) == 0)
				env.region = s;
		}
		/* The job's own spec must be valid first: its problems are reported
		 * once, for the job, not again for every rung. */
		if (L->nerr != before || !j->spec.canonical_json || !env.region)
			continue;
		tree = rung_tree(L, &sy, spec, rung, env.region, path);
		if (sy.oom)
			stack_oom(L);
		else if (tree)
			check_spec(L, &j->rungs[i].spec, tree, &env, sub, rung);
		synth_release(&sy);
		if (L->nerr != before || !j->rungs[i].spec.canonical_json)
			continue;
		j->rungs[i].region = stack_dup_opt(L, env.region);
	}
	j->nrungs = seq->n;
}

/* The last line any node of n's tree starts on. */
static unsigned last_line(const struct ynode *n, size_t depth)
{
	unsigned max = n->line, l;

	for (size_t i = 0; depth < 64 && n->kind == YNODE_SEQ && i < n->n; i++)
		if ((l = last_line(n->items[i], depth + 1)) > max)
			max = l;
	for (size_t i = 0; depth < 64 && n->kind == YNODE_MAP && i < n->n; i++)
		if ((l = last_line(n->pairs[i].value, depth + 1)) > max)
			max = l;
	return max;
}

/*
 * Runs spec_check into out, giving each of its diagnostics this job's
 * prefix and then subpath (a rung's "resubmit.fallback[0]: ", or ""). For a
 * rung, a problem found in a value the rung took from the job's spec is
 * reported at the rung (which made it a problem), naming the spec's line.
 */
static void check_spec(struct loader *L, struct job_spec *out, const struct ynode *spec,
		       const struct spec_env *env, const char *subpath, const struct ynode *rung)
{
	struct vx_diags sub = VX_DIAGS_INIT;
	unsigned last = rung ? last_line(rung, 0) : 0;
	int rc;

	sub.cap = L->diags->cap;
	rc = spec_check(out, spec, env, &sub);
	if (rc == VX_ENOMEM) {
		stack_oom(L);
	} else {
		for (size_t i = 0; i < sub.n; i++) {
			const struct vx_diag *it = &sub.items[i];
			int outside = rung && (it->line < rung->line || it->line > last);

			L->nerr++;
			if (outside ? vx_diags_add(L->diags, rung->file, rung->line, rung->col,
						   "%s%s%s (the spec's line %u)", L->prefix, subpath,
						   it->msg, it->line) < 0
				    : vx_diags_add(L->diags, it->file, it->line, it->col, "%s%s%s",
						   L->prefix, subpath, it->msg) < 0)
				stack_oom(L);
		}
		L->nerr += sub.dropped;
		L->diags->dropped += sub.dropped;
		if (rc < 0 && sub.n == 0)
			stack_err(L, spec, "%sspec: not valid", subpath);
	}
	if (rc < 0)
		job_spec_release(out);
	vx_diags_release(&sub);
}

/* after: the addresses as written; their shape and names are checked over
 * the whole stack (stack_after_order). */
static void read_after(struct loader *L, struct stack_job *j, const struct ynode *doc)
{
	const struct ynode *v = stack_get_value(doc, "after");

	if (!v)
		return;
	if (v->kind != YNODE_SEQ) {
		stack_wrong_type(L, v, "after", "list of job addresses");
		return;
	}
	j->after = calloc(v->n + 1, sizeof(*j->after));
	if (!j->after) {
		stack_oom(L);
		return;
	}
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->kind == YNODE_SCALAR && !(j->after[j->nafter++] = strdup(v->items[i]->str)))
			stack_oom(L);
}

/* displayName: the job's name when absent (not when written wrong). */
static void read_display_name(struct loader *L, struct stack_job *j, const struct ynode *doc,
			      const char *name)
{
	const struct ynode *v;
	const char *s;

	if (stack_get_str(&s, &v, L, doc, "", "displayName", 0)) {
		if (!*s || stack_names_utf8_len(s) > STACK_MAX_DISPLAY_NAME)
			stack_err(L, v, "displayName: must be 1 to %d characters", STACK_MAX_DISPLAY_NAME);
		else
			j->display_name = stack_dup_opt(L, s);
	} else if (!v && name) {
		j->display_name = stack_dup_opt(L, name);
	}
}

/* The merged labels: the Stack's, overlaid by the job's own, within Vertex's cap. */
static void read_job_labels(struct loader *L, struct stack_job *j, const struct ynode *doc,
			    const struct stack *st)
{
	struct stack_labels own = { NULL, 0 };
	const struct ynode *v;

	for (size_t i = 0; i < st->labels.n; i++)
		if (stack_labels_set(&j->labels, st->labels.items[i].key, st->labels.items[i].value) < 0)
			stack_oom(L);
	stack_get_string_map(&own, L, doc, "labels", 1);
	for (size_t i = 0; i < own.n; i++)
		if (stack_labels_set(&j->labels, own.items[i].key, own.items[i].value) < 0)
			stack_oom(L);
	if (own.n <= STACK_MAX_USER_LABELS && j->labels.n > STACK_MAX_USER_LABELS) {
		v = stack_get_value(doc, "labels");
		stack_err(L, v ? v : doc, "labels: %zu labels with the Stack's, at most %d (vx adds %d "
					  "of its own to Vertex's 64)",
			  j->labels.n, STACK_MAX_USER_LABELS,
			  64 - STACK_MAX_USER_LABELS);
	}
	stack_labels_release(&own);
}

/*
 * persistentResource: NAME (issue 34): the spec is checked with
 * persistentResourceId set to the resource's id, then against the
 * resource's pools (stack_persistent_misfit), a problem reported at the
 * persistentResource line. 0 when the job names none (the caller checks the
 * spec), else 1 (checked here; a ladder is refused: its rungs would leave
 * the resource).
 */
/*
 * A job on declared resource d (at: its persistentResource value) runs in
 * d's network and with d's key, or Vertex AI refuses it: spec.network must
 * be d's, and d must have no CMEK (a CustomJob of vx sets no encryptionSpec).
 */
static void check_persistent_network(struct loader *L, const struct stack_persistent *d, const struct ynode *spec,
				     const struct ynode *at)
{
	const struct ynode *v = ynode_get(spec, "network");
	const char *net = v && v->kind == YNODE_SCALAR && !ynode_is_null(v) ? v->str : NULL;

	if (net && !vx_text_same(net, d->network))
		stack_err(L, v, "spec.network: \"%s\" is not the network of %s (%s%s%s): Vertex AI runs a job on a "
				"persistent resource only in its network",
			  net, d->d.address, d->network ? "\"" : "", d->network ? d->network : "none",
			  d->network ? "\"" : "");
	else if (!net && d->network)
		stack_err(L, at, "persistentResource: %s is in network \"%s\" and the job in none (spec.network): "
				 "Vertex AI runs a job on a persistent resource only in its network",
			  d->d.address, d->network);
	if (d->kms_key_name)
		stack_err(L, at, "persistentResource: %s is encrypted with %s (encryptionSpec.kmsKeyName) and Vertex "
				 "AI runs a job on it only with the same key, which a CustomJob of vx does not set",
			  d->d.address, d->kms_key_name);
}

static int read_on_persistent(struct loader *L, struct stack_job *j, const struct ynode *doc,
			      const struct ynode *spec, const struct stack *st, const struct spec_env *env)
{
	const struct stack_persistent *d;
	const struct ynode *at = NULL;
	struct ynode *copy;
	struct synth sy = { 0 };
	const char *id;
	char *why = NULL;
	int rc = stack_persistent_read_ref(L, doc, st, env->region, &id, &d, &at);

	if (rc == 0)
		return 0;
	if (rc > 0 && ynode_get_key(doc, "resubmit") && ynode_get(ynode_get(doc, "resubmit"), "fallback"))
		stack_err(L, at, "persistentResource: a job on a persistent resource takes no resubmit.fallback");
	if (rc < 0 || !(copy = synth_map_copy(&sy, spec, 1))) {
		synth_release(&sy);
		return 1;
	}
	synth_set(copy, synth_scalar(&sy, at, "persistentResourceId"), synth_scalar(&sy, at, id));
	if (sy.oom)
		stack_oom(L);
	else
		check_spec(L, &j->spec, copy, env, "", NULL);
	if (!sy.oom && j->spec.canonical_json && (rc = stack_persistent_misfit(&why, d, &j->spec, env->region)) != 0) {
		if (rc == VX_ENOMEM)
			stack_oom(L);
		else
			stack_err(L, at, "persistentResource: %s", why);
	}
	if (d)
		check_persistent_network(L, d, spec, at);
	free(why);
	synth_release(&sy);
	return 1;
}

/* reservation: a plain name that is neither a Reservation nor a FutureReservation of the stack. */
static int reservation_unknown(struct loader *L, const struct ynode *res, const struct spec_env *env)
{
	if (strchr(res->str, '/'))
		return 0; /* a full name: rung_affinity checks its form */
	for (size_t i = 0; i < env->nreservations; i++)
		if (!strcmp(env->reservations[i].name, res->str))
			return 0;
	stack_err(L, res, "reservation: \"%s\" is neither a Reservation nor a FutureReservation of this stack, "
			  "nor a full name projects/PROJECT/zones/ZONE/reservations/NAME",
		  res->str);
	return 1;
}

/*
 * What a job-level reservation: may not come with: a persistent resource
 * (Vertex AI training uses neither flex-start nor persistent resources with
 * a reservation), a reservationAffinity of its own in a pool, and for a
 * booking job_window_refused's. 1 when one was reported.
 */
static int reservation_refused(struct loader *L, const struct ynode *doc, const struct ynode *spec,
			       const struct ynode *res, const struct stack_future *f, const struct spec_env *env)
{
	const struct ynode *pools = ynode_get(spec, "workerPoolSpecs"), *v;
	size_t before = L->nerr;

	if ((v = stack_get_value(doc, "persistentResource")) != NULL)
		stack_err(L, v, "persistentResource: a job on a reservation (reservation: %s) cannot also run on a "
				"persistent resource; Vertex AI training does not use persistent resources with "
				"reservations",
			  res->str);
	for (size_t i = 0; pools && pools->kind == YNODE_SEQ && i < pools->n; i++) {
		const struct ynode *ms = ynode_get(pools->items[i], "machineSpec");

		if (ms && ms->kind == YNODE_MAP && (v = ynode_get(ms, "reservationAffinity")) != NULL)
			stack_err(L, v, "spec.workerPoolSpecs[%zu].machineSpec.reservationAffinity: the job's "
					"reservation: %s sets it; remove one of the two",
				  i, res->str);
	}
	if (f)
		(void)job_window_refused(L, doc, spec, f, res, env->region);
	else
		(void)reservation_unknown(L, res, env);
	return L->nerr != before;
}

/* A scalar at at's place holding a copy of text (kept in sy), or NULL. */
static struct ynode *synth_text(struct synth *sy, const struct ynode *at, char *text)
{
	char *copy = text ? synth_alloc(sy, strlen(text) + 1) : NULL;

	if (copy)
		memcpy(copy, text, strlen(text) + 1);
	free(text);
	return copy ? synth_scalar(sy, at, copy) : NULL;
}

/*
 * reservation: NAME on the job (issue 35). A Reservation of the stack or a
 * full name is set as the reservationAffinity of every worker pool with
 * accelerators, as a rung's is (the rungs inherit it; a rung's own
 * replaces it). A FutureReservation: the job runs in its window
 * (kind_job_window.c); its pools name the booking's own name, and the
 * create sends the reservation Google delivered. 0 when the job names
 * none (the caller checks the spec), else 1 (checked here).
 */
static int read_on_reservation(struct loader *L, struct stack_job *j, const struct ynode *doc,
			       const struct ynode *spec, const struct stack *st, const struct spec_env *env)
{
	struct ynode *res = stack_get_value(doc, "reservation") ? ynode_get(doc, "reservation") : NULL;
	const struct stack_future *f;
	struct ynode *at, *aff, *np, *top;
	struct synth sy = { 0 };

	if (!res)
		return 0;
	f = stack_is_string(res) ? stack_find_future(st, res->str) : NULL;
	if (!stack_is_string(res) || reservation_refused(L, doc, spec, res, f, env)) {
		if (!stack_is_string(res))
			stack_wrong_type(L, res, "reservation", "string");
		check_spec(L, &j->spec, spec, env, "", NULL);
		return 1;
	}
	at = f ? synth_text(&sy, res, job_window_planned_name(st->project, f)) : res;
	aff = at ? rung_affinity(L, &sy, at, env->region, "") : NULL;
	np = aff ? rung_pools(L, &sy, spec, doc, NULL, at, aff, "") : NULL;
	top = np ? synth_map_copy(&sy, spec, 1) : NULL;
	if (top) {
		synth_set(top, ynode_get_key(spec, "workerPoolSpecs"), np);
		check_spec(L, &j->spec, top, env, "", NULL);
		if (f && j->spec.canonical_json) {
			j->booking = stack_dup_opt(L, f->d.name);
			job_window_check(L, j, spec, f, res);
		} else if (!f) {
			read_fallback(L, j, doc, top, env);
		}
	}
	if (sy.oom)
		stack_oom(L);
	synth_release(&sy);
	return 1;
}

int stack_kinds_read_job(struct stack_job *j, struct loader *L, const struct ynode *doc,
			 const struct stack *st, const struct spec_env *env_base, struct seen *seen,
			 size_t *nseen)
{
	struct spec_env env = *env_base;
	const struct ynode *v, *spec;
	const char *name;
	int e = 0;
	int64_t x;

	name = stack_read_name(L, doc, &kind_job);
	stack_check_keys(L, doc, "", job_keys, ARRAY_SIZE(job_keys));
	/* A sweep's run (seen NULL): the sweep checked its name once. */
	if (name && (!seen || stack_check_unique(L, seen, nseen, name, doc)) &&
	    stack_decl_init(&j->d, L, "job", name, doc) < 0)
		return -1;
	if (seen && (v = ynode_get_key(doc, "maxParallel")) != NULL)
		stack_err(L, v, "maxParallel: only a job with matrix: has runs to cap; add a matrix or "
				"remove maxParallel");
	if (seen && (v = ynode_get_key(doc, "maxFailed")) != NULL)
		stack_err(L, v, "maxFailed: only a job with matrix: has runs to count; add a matrix or "
				"remove maxFailed");
	if (!stack_get_region(L, doc, &v, &j->region) && !v) {
		if (st->region)
			j->region = stack_dup_opt(L, st->region);
		else if (st->d.name && !L->stack_region)
			stack_err(L, doc, "region: not set, and the Stack sets no default region");
	}
	read_display_name(L, j, doc, name);
	read_job_labels(L, j, doc, st);
	j->run = 1;
	if (stack_get_int(&x, &v, L, doc, "", "run", 0)) {
		if (x < 1)
			stack_err(L, v, "run: must be at least 1, got %lld", (long long)x);
		else
			j->run = x;
	}
	j->resubmit_delay_ms = STACK_RESUBMIT_DELAY_DEFAULT_MS;
	j->stuck_after_ms = STACK_STUCK_AFTER_DEFAULT_MS;
	read_resubmit(L, j, doc);
	read_duration(L, doc, "", "stuckAfter", &j->stuck_after_ms, 60000, STACK_MAX_STUCK_AFTER_MS);
	j->on_change = STACK_ON_CHANGE_REPLACE;
	if (stack_get_enum(&e, L, doc, "onChange", stack_on_change_names, ARRAY_SIZE(stack_on_change_names)))
		j->on_change = (enum stack_on_change)e;
	(void)stack_get_bool(&j->protect, L, doc, "", "protect");
	if (stack_get_enum(&e, L, doc, "onRemove", on_remove_names, ARRAY_SIZE(on_remove_names)))
		j->on_remove = e;
	read_after(L, j, doc);
	if (stack_get_usd(&j->max_hourly_usd, &v, L, doc, "", "maxHourlyUsd")) {
		j->max_hourly_line = v->line;
		j->max_hourly_col = v->col;
	}
	spec = stack_get_value(doc, "spec");
	v = spec ? ynode_get(ynode_get(spec, "baseOutputDirectory"), "outputUriPrefix") : NULL;
	if (v && v->kind == YNODE_SCALAR && !ynode_is_null(v))
		j->output_dir = stack_dup_opt(L, v->str);
	if (!spec) {
		stack_get_missing(L, doc, "", "spec");
	} else if (spec->kind != YNODE_MAP) {
		stack_wrong_type(L, spec, "spec", "mapping");
	} else {
		env.region = j->region ? j->region : st->region;
		if (!read_on_reservation(L, j, doc, spec, st, &env) && !read_on_persistent(L, j, doc, spec, st, &env)) {
			check_spec(L, &j->spec, spec, &env, "", NULL);
			read_fallback(L, j, doc, spec, &env);
		}
	}
	kind_job_policy_check(L, st, j, doc);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The accessors */

static size_t slot_index(void)
{
	return kind_index(&kind_job);
}

struct stack_kind_decls *stack_job_slot(struct stack *st)
{
	return &st->of[slot_index()];
}

struct stack_job_more *stack_job_more(struct stack *st)
{
	struct stack_kind_decls *s = stack_job_slot(st);

	if (!s->more)
		s->more = calloc(1, sizeof(struct stack_job_more));
	return s->more;
}

const struct stack_job *stack_jobs(const struct stack *st, size_t *n)
{
	const struct stack_kind_decls *s = &st->of[slot_index()];

	if (n)
		*n = s->n;
	return s->items;
}

const struct stack_sweep *stack_sweeps(const struct stack *st, size_t *n)
{
	const struct stack_job_more *m = st->of[slot_index()].more;

	if (n)
		*n = m ? m->nsweeps : 0;
	return m ? m->sweeps : NULL;
}

size_t stack_nsweeps(const struct stack *st)
{
	size_t n;

	(void)stack_sweeps(st, &n);
	return n;
}

/* Past the last rung, attempts stay on it (docs/format.md). */
static size_t rung_index(const struct stack_job *j, int64_t rung)
{
	if (rung <= 0)
		return 0;
	return (uint64_t)rung > j->nrungs ? j->nrungs : (size_t)rung;
}

const char *stack_job_rung_region(const struct stack_job *j, int64_t rung)
{
	size_t k = rung_index(j, rung);

	return k ? j->rungs[k - 1].region : j->region;
}

const struct job_spec *stack_job_rung_spec(const struct stack_job *j, int64_t rung)
{
	size_t k = rung_index(j, rung);

	return k ? &j->rungs[k - 1].spec : &j->spec;
}

static int job_key_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct stack_job *const *)elem)->d.name);
}

const struct stack_job *stack_find_job(const struct stack *st, const char *name)
{
	const struct stack_kind_decls *s = &st->of[slot_index()];
	const struct stack_job_more *m = s->more;

	if (m && m->by_name) {
		const struct stack_job *const *j = s->n ? bsearch(name, m->by_name, s->n,
								  sizeof(*m->by_name), job_key_cmp)
							: NULL;

		return j ? *j : NULL;
	}
	return (const struct stack_job *)stack_find_in(st, &kind_job, name);
}

/* ---------------------------------------------------------------------- */
/* The row's loader slots */

/* Room for n job documents' jobs (a sweep grows it by its runs). */
int kind_job_load_alloc(struct load_pass *B, size_t n)
{
	struct stack_kind_decls *s = stack_job_slot(B->st);

	s->items = calloc(n + 1, sizeof(struct stack_job));
	return s->items ? 0 : -1;
}

/*
 * The jobs see the reservations for reservationAffinity by name, and are read
 * in an order where each comes after those its after: names, so
 * ${{ jobs.NAME.outputDir }} has its value when the job is read.
 */
int kind_job_load_prepare(struct load_pass *B)
{
	B->env.project = B->st->project;
	B->env.region = B->st->region;
	B->env.reservations = B->sres;
	B->env.nreservations = B->nsres;
	B->env.held_ref_field = kind_is_job_ref_field;
	return stack_after_order(B->L, B->docs, B->ndocs, B->order);
}

/* A job: a sweep when it has a matrix, read with the earlier jobs' values when it has ${{ }}.
 * A sweep may grow the jobs by as many as there are job documents (this pass's). */
int kind_job_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct stack *st = B->st;
	struct stack_kind_decls *s;

	if (ynode_get(doc, "matrix"))
		return stack_sweep_read(st, B->L, doc, &B->env, B->seen, &B->nseen, B->ndocs);
	if (stack_doc_has_expr(doc))
		return stack_expr_read(st, B->L, doc, &B->env, B->seen, &B->nseen);
	s = stack_job_slot(st);
	return stack_kinds_read_job((struct stack_job *)s->items + s->n++, B->L, doc, st, &B->env,
				    B->seen, &B->nseen);
}

/*
 * A sweep's run is labelled "SWEEP--HASH" (reconcile/sweep.h): a job declared
 * alone with that very name would carry the same vx-job label, and a live
 * job could no longer be traced to one address. Only names with "--" can.
 */
static void check_sweep_labels(struct loader *L, const struct stack *st)
{
	char label[SWEEP_LABEL_MAX + 1];

	size_t njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);

	for (size_t i = 0; i < njobs; i++) {
		const struct stack_job *p = &jobs[i];

		if (p->sweep || !p->d.name || !strstr(p->d.name, "--"))
			continue;
		for (size_t k = 0; k < njobs; k++) {
			const struct stack_job *r = &jobs[k];

			if (!r->sweep || !r->d.name)
				continue;
			sweep_job_label(label, r->d.name);
			if (strcmp(label, p->d.name))
				continue;
			L->prefix[0] = '\0';
			stack_err_at(L, p->d.file, NULL, "CustomJob \"%s\" at line %u: its name is the vx-job "
							 "label of %s (a sweep's run); rename the job",
				     p->d.name, p->d.line,
				     r->d.address);
		}
	}
}

/* What holds between the jobs once all are read: labels, and after: slices. */
void kind_job_load_finish(struct load_pass *B)
{
	check_sweep_labels(B->L, B->st);
	stack_after_check(B->L, B->st, B->docs, B->ndocs);
	kind_job_policy_active(B->L, B->st);
}

static int job_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct stack_job *const *)a)->d.name,
		      (*(const struct stack_job *const *)b)->d.name);
}

/* The jobs sorted by name for stack_find_job (names are unique by now: stack_check_unique). */
int kind_job_load_index(struct stack *st)
{
	struct stack_kind_decls *s = stack_job_slot(st);
	struct stack_job_more *m = stack_job_more(st);

	if (!m || !(m->by_name = calloc(s->n + 1, sizeof(*m->by_name))))
		return VX_ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		m->by_name[i] = (const struct stack_job *)s->items + i;
	if (s->n > 1)
		qsort(m->by_name, s->n, sizeof(*m->by_name), job_ptr_cmp);
	return 0;
}

/* Keys the redaction of every job's (and rung's) sensitive values with salt. */
int kind_job_decl_salt(struct stack *st, const char *salt, size_t *nsalted, struct vx_err *err)
{
	struct stack_kind_decls *s = stack_job_slot(st);
	struct stack_job *jobs = s->items;
	int rc;

	for (size_t i = 0; i < s->n; i++) {
		if (!jobs[i].spec.nsensitive)
			continue;
		rc = job_spec_rehash(&jobs[i].spec, salt, err);
		if (rc < 0)
			return vx_err_wrap(err, "%s", jobs[i].d.address);
		for (size_t k = 0; k < jobs[i].nrungs; k++) {
			rc = job_spec_rehash(&jobs[i].rungs[k].spec, salt, err);
			if (rc < 0)
				return vx_err_wrap(err, "%s: rung %zu", jobs[i].d.address, k + 1);
		}
		(*nsalted)++;
	}
	return 0;
}

void kind_job_decl_release(struct stack_kind_decls *slot)
{
	struct stack_job *jobs = slot->items;
	struct stack_job_more *m = slot->more;

	for (size_t i = 0; i < slot->n; i++)
		stack_job_release(&jobs[i]);
	free(slot->items);
	for (size_t i = 0; m && i < m->nsweeps; i++) {
		free(m->sweeps[i].name);
		free(m->sweeps[i].address);
		free(m->sweeps[i].file);
		free(m->sweeps[i].output_dir);
	}
	if (m) {
		free(m->sweeps);
		free(m->by_name);
	}
	free(m);
}

/*
 * resubmit's onExitCodes, per-class budgets (the map form of on), within,
 * returnAfter and maxQueued, each only when set, so a declaration without
 * them keeps its hash.
 */
static int hash_resubmit_rules(struct vx_buf *b, const struct stack_job *j)
{
	int rc = 0;

	for (int c = 1, first = 1; c < 256 && rc == 0; c++)
		if (j->on_exit_codes[c / 64] & (UINT64_C(1) << (c % 64))) {
			rc = vx_buf_printf(b, "%s%d", first ? ",\"onExitCodes\":[" : ",", c);
			first = 0;
		}
	if (rc == 0 && (j->on_exit_codes[0] | j->on_exit_codes[1] | j->on_exit_codes[2] | j->on_exit_codes[3]))
		rc = vx_buf_addc(b, ']');
	for (unsigned c = 0, first = 1; c < STACK_FAIL_NCLASSES && j->on_budgets && rc == 0; c++)
		if (j->resubmit_on & (1u << c)) {
			rc = vx_buf_printf(b, "%s\"%s\":%lld", first ? ",\"resubmitBudgets\":{" : ",", stack_fail_names[c],
					   (long long)j->on_budget[c]);
			first = 0;
		}
	if (rc == 0 && j->on_budgets && j->resubmit_on)
		rc = vx_buf_addc(b, '}');
	if (rc == 0 && j->within_ms)
		rc = vx_buf_printf(b, ",\"withinMs\":\"%lld\"", (long long)j->within_ms);
	if (rc == 0 && j->return_after_ms)
		rc = vx_buf_printf(b, ",\"returnAfterMs\":\"%lld\"", (long long)j->return_after_ms);
	if (rc == 0 && j->max_queued_ms)
		rc = vx_buf_printf(b, ",\"maxQueuedMs\":\"%lld\"", (long long)j->max_queued_ms);
	return rc;
}

/*
 * ,"key":"v": a hash's integer field as printf wrote it ("%lld"), by hand:
 * every job's hash has a few, and printf was most of what hashing cost.
 */
static int hash_int(struct vx_buf *b, const char *key, long long v)
{
	char digits[24];
	size_t at = sizeof(digits);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	int rc;

	digits[--at] = '"';
	do
		digits[--at] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		digits[--at] = '-';
	digits[--at] = '"';
	rc = vx_buf_add(b, ",\"", 2);
	if (rc == 0)
		rc = vx_buf_adds(b, key);
	if (rc == 0)
		rc = vx_buf_add(b, "\":", 2);
	return rc ? rc : vx_buf_add(b, digits + at, sizeof(digits) - at);
}

static int hash_job(struct vx_buf *b, struct stack_job *j)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, j->d.address);
	if (rc == 0)
		rc = stack_json_kv(b, "displayName", j->display_name);
	if (rc == 0)
		rc = stack_json_map(b, "labels", &j->labels);
	if (rc == 0)
		rc = hash_int(b, "maxAttempts", (long long)j->max_attempts);
	/* Only when set (in cents, as the budget), so other jobs keep their hash. */
	if (rc == 0 && j->max_hourly_usd > 0)
		rc = vx_buf_printf(b, ",\"maxHourlyUsdCents\":\"%lld\"", (long long)llround(j->max_hourly_usd * 100.0));
	if (rc == 0)
		rc = stack_json_kv(b, "onChange", stack_on_change_name(j->on_change));
	/* Only when set, so a stack without it keeps its declaration hash. */
	if (rc == 0 && j->on_remove)
		rc = stack_json_kv(b, "onRemove", j->on_remove == 1 ? "cancel" : "forget");
	if (rc == 0)
		rc = vx_buf_adds(b, j->protect ? ",\"protect\":true" : ",\"protect\":false");
	if (rc == 0)
		rc = stack_json_kv(b, "region", j->region);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"resubmitOn\":[");
	for (unsigned i = 0, first = 1; i < STACK_FAIL_NCLASSES && rc == 0; i++) {
		if (!(j->resubmit_on & (1u << i)))
			continue;
		rc = first ? 0 : vx_buf_addc(b, ',');
		if (rc == 0)
			rc = vx_buf_add_json_str(b, stack_fail_names[i]);
		first = 0;
	}
	if (rc == 0)
		rc = vx_buf_addc(b, ']');
	if (rc == 0)
		rc = hash_int(b, "run", (long long)j->run);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"spec\":");
	/* The redacted form: a changed secret changes its HMAC there too, and
	 * without the salt the hash is no oracle for a guessed secret. */
	if (rc == 0)
		rc = vx_buf_adds(b, j->spec.redacted_json    ? j->spec.redacted_json
				    : j->spec.canonical_json ? j->spec.canonical_json
							     : "null");
	/* Only a job with a ladder hashes one, so the hashes of every other
	 * declaration (and the saved plans bound to them) stay as they were. */
	for (size_t i = 0; i < j->nrungs && rc == 0; i++) {
		const struct stack_rung *r = &j->rungs[i];

		rc = vx_buf_adds(b, i ? ",{\"region\":" : ",\"fallback\":[{\"region\":");
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->region ? r->region : "");
		if (rc == 0)
			rc = vx_buf_adds(b, ",\"spec\":");
		if (rc == 0)
			rc = vx_buf_adds(b, r->spec.redacted_json ? r->spec.redacted_json : "null");
		if (rc == 0)
			rc = vx_buf_adds(b, i + 1 == j->nrungs ? "}]" : "}");
	}
	/* The same for the watcher's timings: only when not the default. */
	if (rc == 0 && j->resubmit_delay_ms != STACK_RESUBMIT_DELAY_DEFAULT_MS)
		rc = vx_buf_printf(b, ",\"resubmitDelayMs\":\"%lld\"", (long long)j->resubmit_delay_ms);
	if (rc == 0 && j->stuck_after_ms != STACK_STUCK_AFTER_DEFAULT_MS)
		rc = vx_buf_printf(b, ",\"stuckAfterMs\":\"%lld\"", (long long)j->stuck_after_ms);
	if (rc == 0)
		rc = hash_resubmit_rules(b, j);
	/* after: as written, only when set: a saved plan is refused once it is
	 * edited. The job's spec hash leaves it out: which dependency runs a
	 * run followed is its follow record's (reconcile/sweep_plan.c). */
	for (size_t i = 0; i < j->nafter && rc == 0; i++) {
		rc = vx_buf_adds(b, i ? "," : ",\"after\":[");
		if (rc == 0)
			rc = vx_buf_add_json_str(b, j->after[i]);
		if (rc == 0 && i + 1 == j->nafter)
			rc = vx_buf_adds(b, "]");
	}
	return rc ? rc : stack_decl_hash(b, &j->d);
}

int kind_job_decl_hash(struct stack *st)
{
	struct stack_kind_decls *slot = stack_job_slot(st);
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < slot->n && rc == 0; i++)
		rc = hash_job(&b, (struct stack_job *)slot->items + i);
	vx_buf_release(&b);
	return rc;
}
