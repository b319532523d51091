#include "reconcile/capacity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/load/machines.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "reconcile/provider_reservation.h"
#include "reconcile/stack.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

#define AIPLATFORM "aiplatform.googleapis.com"

/* ---- prices ---- */

static const char *const class_keys[PRICES_NCLASSES] = { "on_demand", "spot", "flex_start" };

void prices_release(struct prices *p)
{
	for (size_t i = 0; p->items && i < p->n; i++) {
		free(p->items[i].region);
		free(p->items[i].name);
		free(p->items[i].key);
	}
	vx_hashmap_release(&p->index);
	free(p->items);
	free(p->source);
	free(p->date);
	free(p->currency);
	memset(p, 0, sizeof(*p));
}

static int dup_member(char **out, const cJSON *o, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	const char *s = cJSON_IsString(v) ? v->valuestring : def;

	*out = s ? vx_strdup(s) : NULL;
	return s && !*out ? VX_ENOMEM : 0;
}

/*
 * An entry's "src": the key in the table's "sources" its figures come from,
 * one for all of them or one per figure ({"on_demand": "ce", ...}). Optional
 * (tables written before it load unchanged); when there, it must name a source.
 */
static int check_src(const cJSON *e, const cJSON *sources, const char *rname, const char *section,
		     const char *what, struct vx_err *err)
{
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "src"), *k;

	if (!src)
		return 0;
	if (cJSON_IsString(src)) {
		if (!cJSON_GetObjectItemCaseSensitive(sources, src->valuestring))
			return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s.%s.src: \"%s\" is not in \"sources\"",
					  what, rname, section, e->string, src->valuestring);
		return 0;
	}
	if (!cJSON_IsObject(src))
		return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s.%s.src must be a string or an object", what,
				  rname, section, e->string);
	cJSON_ArrayForEach(k, src)
		if (!cJSON_IsString(k) || !cJSON_GetObjectItemCaseSensitive(sources, k->valuestring))
			return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s.%s.src.%s must name an entry of "
					  "\"sources\"", what, rname, section, e->string, k->string);
	return 0;
}

/* The entries of one section ("machines", ...) of one region. */
/*
 * An entry's key in the index: its two flags, then its name's length, so that
 * no name or region (the table's own member names, any bytes) makes two keys
 * alike. Written into buf when it fits, else allocated (*owned to free).
 */
static const char *price_key(char *buf, size_t size, char **owned, int accelerator, int vertex,
			     const char *name, const char *region, size_t *len)
{
	/* By hand, not snprintf: a plan of 10,000 jobs looks up 80,000 keys. */
	size_t nname = strlen(name), nregion = strlen(region), ndig = 1, n;
	char *o;

	for (size_t v = nname; v >= 10; v /= 10)
		ndig++;
	n = 2 + ndig + 1 + nname + nregion;
	*owned = NULL;
	if (n >= size) {
		if (!(*owned = malloc(n + 1)))
			return NULL;
		buf = *owned;
	}
	o = buf;
	*o++ = accelerator ? '1' : '0';
	*o++ = vertex ? '1' : '0';
	for (size_t v = nname, i = ndig; i > 0; v /= 10)
		o[--i] = (char)('0' + v % 10);
	o += ndig;
	*o++ = ':';
	memcpy(o, name, nname);
	memcpy(o + nname, region, nregion + 1);
	*len = n;
	return buf;
}

/* The region's first entry wins, and the last "*" entry: as the walk it replaces chose. */
static int index_entries(struct prices *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct prices_entry *e = &p->items[i];
		char buf[8];
		size_t len;
		int rc;

		if (!price_key(buf, 0, &e->key, e->accelerator, e->vertex, e->name, e->region, &len))
			return VX_ENOMEM;
		if (!strcmp(e->region, "*"))
			rc = vx_hashmap_set(&p->index, e->key, len, i);
		else
			rc = vx_hashmap_add(&p->index, e->key, len, i, NULL);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int parse_section(struct prices *out, const cJSON *region, const cJSON *sources, const char *rname,
			 const char *section, int accelerator, int vertex, const char *what, struct vx_err *err)
{
	const cJSON *sec = cJSON_GetObjectItemCaseSensitive(region, section), *e;
	int rc;

	if (!sec)
		return 0;
	if (!cJSON_IsObject(sec))
		return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s must be an object", what, rname, section);
	cJSON_ArrayForEach(e, sec) {
		struct prices_entry *pe;
		const cJSON *est;

		if (!cJSON_IsObject(e))
			return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s.%s must be an object", what, rname,
					  section, e->string);
		/* Doubling: the table has thousands of rows, and a realloc per row copied it
		 * over and over (a second of CPU per plan under ASan, which never grows in place). */
		if (VX_ALLOC_GROW(out->items, out->n + 1, out->cap) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		pe = &out->items[out->n];
		memset(pe, 0, sizeof(*pe));
		pe->accelerator = accelerator;
		pe->vertex = vertex;
		for (int c = 0; c < PRICES_NCLASSES; c++) {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, class_keys[c]);

			pe->rate[c] = -1;
			if (!r || cJSON_IsNull(r))
				continue;
			if (!cJSON_IsNumber(r) || !isfinite(r->valuedouble) || r->valuedouble < 0)
				return vx_err_set(err, VX_EINVAL, "%s: regions.%s.%s.%s.%s must be a number >= 0",
						  what, rname, section, e->string, class_keys[c]);
			pe->rate[c] = r->valuedouble;
		}
		if ((rc = check_src(e, sources, rname, section, what, err)) < 0)
			return rc;
		est = cJSON_GetObjectItemCaseSensitive(e, "estimate");
		if (cJSON_IsArray(est)) {
			const cJSON *k;

			cJSON_ArrayForEach(k, est)
				for (int c = 0; c < PRICES_NCLASSES; c++)
					if (cJSON_IsString(k) && !strcmp(k->valuestring, class_keys[c]))
						pe->estimate |= 1u << c;
		} else if (cJSON_IsTrue(est)) {
			pe->estimate = (1u << PRICES_NCLASSES) - 1;
		}
		if (!(pe->region = vx_strdup(rname)) || !(pe->name = vx_strdup(e->string))) {
			free(pe->region);
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		}
		out->n++;
	}
	return 0;
}

int prices_parse(struct prices *out, const char *json, size_t len, const char *what, struct vx_err *err)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *regions, *sources, *fee, *r;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!root || !cJSON_IsObject(root)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: not a JSON object", what);
		goto done;
	}
	if (dup_member(&out->source, root, "source", NULL) < 0 || dup_member(&out->date, root, "date", NULL) < 0 ||
	    dup_member(&out->currency, root, "currency", "USD") < 0) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	fee = cJSON_GetObjectItemCaseSensitive(root, "management_fee");
	out->fee_excluded = cJSON_IsString(fee) && !strcmp(fee->valuestring, "excluded");
	sources = cJSON_GetObjectItemCaseSensitive(root, "sources");
	if (sources && !cJSON_IsObject(sources)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: \"sources\" must be an object", what);
		goto done;
	}
	regions = cJSON_GetObjectItemCaseSensitive(root, "regions");
	if (!cJSON_IsObject(regions)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: \"regions\" must be an object", what);
		goto done;
	}
	cJSON_ArrayForEach(r, regions) {
		if (!cJSON_IsObject(r)) {
			rc = vx_err_set(err, VX_EINVAL, "%s: regions.%s must be an object", what, r->string);
			goto done;
		}
		if ((rc = parse_section(out, r, sources, r->string, "machines", 0, 0, what, err)) < 0 ||
		    (rc = parse_section(out, r, sources, r->string, "accelerators", 1, 0, what, err)) < 0 ||
		    (rc = parse_section(out, r, sources, r->string, "vertex_machines", 0, 1, what, err)) < 0 ||
		    (rc = parse_section(out, r, sources, r->string, "vertex_accelerators", 1, 1, what, err)) < 0)
			goto done;
	}
	if (index_entries(out) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	cJSON_Delete(root);
	if (rc < 0)
		prices_release(out);
	return rc;
}

static const struct prices_entry *find_one(const struct prices *p, const char *region, const char *name,
					   int accelerator, int vertex)
{
	char buf[160], *owned;
	const char *key;
	size_t len, at;
	int found;

	if (!(key = price_key(buf, sizeof(buf), &owned, accelerator, vertex, name, region, &len)))
		return NULL;
	found = vx_hashmap_get(&p->index, key, len, &at);
	free(owned);
	return found && at < p->n ? &p->items[at] : NULL;
}

static const struct prices_entry *find_entry(const struct prices *p, const char *region, const char *name,
					     int accelerator, int vertex)
{
	const struct prices_entry *e = NULL;

	if (!p || !name)
		return NULL;
	if (region)
		e = find_one(p, region, name, accelerator, vertex);
	return e ? e : find_one(p, "*", name, accelerator, vertex);
}

double prices_rate(const struct prices *p, const char *region, const char *name, int accelerator,
		   int want_vertex, enum prices_class c, int *upper_bound, int *estimate)
{
	const struct prices_entry *e = NULL;
	enum prices_class used = c;

	if (want_vertex)
		e = find_entry(p, region, name, accelerator, 1);
	if (!e)
		e = find_entry(p, region, name, accelerator, 0);
	if (!e)
		return -1;
	if (c == PRICES_FLEX_START && e->rate[c] < 0) {
		used = PRICES_ON_DEMAND;
		if (e->rate[used] >= 0 && upper_bound)
			*upper_bound = 1;
	}
	if (e->rate[used] >= 0 && estimate && (e->estimate & (1u << used)))
		*estimate = 1;
	return e->rate[used];
}

/* ---- capacity ---- */

const char *capacity_class_name(enum capacity_class c)
{
	switch (c) {
	case CAPACITY_PREEMPTIBLE: return "preemptible";
	case CAPACITY_RESERVATION: return "reservation";
	default: return "on-demand";
	}
}

void capacity_release(struct capacity_report *r)
{
	for (size_t i = 0; r->rows && i < r->nrows; i++) {
		free(r->rows[i].region);
		free(r->rows[i].accelerator);
		free(r->rows[i].display);
		free(r->rows[i].reservation);
		free(r->rows[i].quota_id);
		free(r->rows[i].unknown);
	}
	free(r->rows);
	for (size_t i = 0; r->costs && i < r->ncosts; i++) {
		free(r->costs[i].address);
		free(r->costs[i].note);
		free(r->costs[i].why);
	}
	free(r->costs);
	vx_diags_release(&r->misfits);
	memset(r, 0, sizeof(*r));
}

const struct capacity_cost *capacity_cost_of(const struct capacity_report *r, const char *address)
{
	for (size_t i = 0; r && address && i < r->ncosts; i++)
		if (!strcmp(r->costs[i].address, address))
			return &r->costs[i];
	return NULL;
}

int capacity_money(struct vx_buf *b, const char *currency, double v, int decimals)
{
	char digits[64];
	size_t len, intlen, i;
	const char *dot;
	int rc = 0;

	if (v < 0)
		return vx_buf_adds(b, "unknown");
	snprintf(digits, sizeof(digits), "%.*f", decimals, v);
	dot = strchr(digits, '.');
	len = strlen(digits);
	intlen = dot ? (size_t)(dot - digits) : len;
	if (!currency || !strcmp(currency, "USD"))
		rc = vx_buf_addc(b, '$');
	for (i = 0; rc == 0 && i < intlen; i++) {
		if (i && (intlen - i) % 3 == 0)
			rc = vx_buf_addc(b, ',');
		if (rc == 0)
			rc = vx_buf_addc(b, digits[i]);
	}
	if (rc == 0 && dot)
		rc = vx_buf_adds(b, dot);
	if (rc == 0 && currency && strcmp(currency, "USD") != 0)
		rc = vx_buf_printf(b, " %s", currency);
	return rc;
}

/* The GPU and GPUs per replica of a pool (fixed-GPU machine types included). */
static const struct machines_gpu *pool_gpu(const struct spec_pool *p, int64_t *per_replica)
{
	const char *vertex = p->accelerator_type;
	int64_t n = p->accelerator_count;

	*per_replica = 0;
	if (!p->machine_type)
		return NULL;
	if (!vertex && !machines_fixed_gpus(p->machine_type, &vertex, &n))
		return NULL;
	if (n <= 0 && !machines_fixed_gpus(p->machine_type, NULL, &n))
		n = 1;
	*per_replica = n;
	return machines_gpu_by_vertex(vertex);
}

static enum capacity_class strategy_class(const char *strategy)
{
	return strategy && (!strcmp(strategy, "SPOT") || !strcmp(strategy, "FLEX_START")) ? CAPACITY_PREEMPTIBLE
											   : CAPACITY_ON_DEMAND;
}

static enum prices_class strategy_price(const char *strategy)
{
	if (strategy && !strcmp(strategy, "SPOT"))
		return PRICES_SPOT;
	if (strategy && !strcmp(strategy, "FLEX_START"))
		return PRICES_FLEX_START;
	return PRICES_ON_DEMAND;
}

static struct capacity_row *row_get(struct capacity_report *r, const char *region, const struct machines_gpu *gpu,
				    enum capacity_class cls, const char *reservation)
{
	struct capacity_row *rows, *row;

	for (size_t i = 0; i < r->nrows; i++) {
		row = &r->rows[i];
		if (row->cls == cls && !strcmp(row->region, region) && !strcmp(row->accelerator, gpu->vertex) &&
		    (!reservation || (row->reservation && !strcmp(row->reservation, reservation))))
			return row;
	}
	if (!(rows = realloc(r->rows, (r->nrows + 1) * sizeof(*rows))))
		return NULL;
	r->rows = rows;
	row = &rows[r->nrows];
	memset(row, 0, sizeof(*row));
	row->cls = cls;
	if (!(row->region = vx_strdup(region)) || !(row->accelerator = vx_strdup(gpu->vertex)) ||
	    !(row->display = vx_strdup(gpu->display)) ||
	    (reservation && !(row->reservation = vx_strdup(reservation))) ||
	    (cls != CAPACITY_RESERVATION &&
	     !(row->quota_id = vx_strdup(machines_quota_id(gpu, cls == CAPACITY_PREEMPTIBLE ? "SPOT" : "STANDARD"))))) {
		free(row->region);
		free(row->accelerator);
		free(row->display);
		free(row->reservation);
		return NULL;
	}
	r->nrows++;
	return row;
}

static struct capacity_cost *cost_add(struct capacity_report *r, const char *address)
{
	struct capacity_cost *c = realloc(r->costs, (r->ncosts + 1) * sizeof(*c));

	if (!c)
		return NULL;
	r->costs = c;
	c = &c[r->ncosts];
	memset(c, 0, sizeof(*c));
	if (!(c->address = vx_strdup(address)))
		return NULL;
	r->ncosts++;
	return c;
}

static int action_starts(const struct plan_action *a)
{
	return a->op == PLAN_CREATE || a->op == PLAN_REPLACE || a->op == PLAN_RERUN ||
	       a->op == PLAN_RESUBMIT;
}

/* A job run that is active and stays (not cancelled nor replaced by this plan). */
static int action_stays_running(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	return (a->op == PLAN_NOOP || a->op == PLAN_UPDATE || a->op == PLAN_ADOPT) && ja->live_state &&
	       job_state_is_active(ja->live_state);
}

/*
 * Part part of the i-th declaration of held kind k in the stack, as held
 * (with what was listed of it); a kind that gives no range holds count.
 */
static void held_at(const struct capacity_input *in, const struct kind *k, size_t i, size_t part,
		    struct kind_held *h)
{
	memset(h, 0, sizeof(*h));
	h->part = part;
	k->held(in->st, in->live, i, h);
	if (!h->count_min && !h->count_max)
		h->count_min = h->count_max = h->count;
}

/* How many parts the declaration h (its part 0) holds VMs in. */
static size_t held_parts(const struct kind_held *h)
{
	return h->nparts ? h->nparts : 1;
}

/* The declaration named name of a kind that holds machines (a job's reservation): 1 with *h, else 0. */
static int held_named(const struct capacity_input *in, const char *name, struct kind_held *h)
{
	for (size_t k = 0; k < kind_count; k++)
		for (size_t i = 0; kind_table[k]->held && i < kind_count_decls(kind_table[k], in->st); i++) {
			held_at(in, kind_table[k], i, 0, h);
			for (size_t part = 1; !(h->name && !strcmp(h->name, name)) && part < held_parts(h); part++)
				held_at(in, kind_table[k], i, part, h);
			if (h->name && !strcmp(h->name, name))
				return 1;
		}
	return 0;
}

/* Whether the plan deletes what is at address. */
static int plan_deletes(const struct plan *p, const char *address)
{
	for (size_t k = 0; k < p->n; k++)
		if (!strcmp(p->actions[k].address, address) && p->actions[k].op == PLAN_DELETE)
			return 1;
	return 0;
}

/* Whether st declares anything that holds machines (a reservation). */
static int any_held(const struct stack *st)
{
	for (size_t k = 0; k < kind_count; k++)
		if (kind_table[k]->held && kind_count_decls(kind_table[k], st))
			return 1;
	return 0;
}

/* The GPU of what h holds and how many each VM has, or NULL (none). */
static const struct machines_gpu *held_gpu(const struct kind_held *h, int64_t *per_vm)
{
	const struct machines_gpu *gpu = NULL;

	*per_vm = 0;
	if (h->accelerator) {
		/* Compute Engine's name (nvidia-l4), or Vertex AI's (NVIDIA_L4) for regional VMs. */
		gpu = machines_gpu_by_compute(h->accelerator);
		if (!gpu)
			gpu = machines_gpu_by_vertex(h->accelerator);
		*per_vm = h->accelerator_count;
	} else if (h->machine_type) {
		const char *vertex = NULL;

		if (machines_fixed_gpus(h->machine_type, &vertex, per_vm))
			gpu = machines_gpu_by_vertex(vertex);
	}
	return gpu && *per_vm > 0 ? gpu : NULL;
}

/* The row of a declaration that holds machines (none for one without GPUs). A
 * booking holds its VMs only inside its window: outside it, none. */
static int held_row(struct capacity_report *out, const struct capacity_input *in, const struct kind_held *h)
{
	const struct machines_gpu *gpu;
	struct capacity_row *row;
	int64_t per_vm;

	if (!(gpu = held_gpu(h, &per_vm)) || !h->zone)
		return 0;
	if (!(row = row_get(out, h->zone, gpu, CAPACITY_RESERVATION, h->address)))
		return VX_ENOMEM;
	row->has_limit = 1;
	row->limit = h->count * per_vm;
	row->in_use = h->in_use * per_vm;
	row->window_start_ms = h->window_start_ms;
	row->window_end_ms = h->window_end_ms;
	if (h->window_end_ms && in->now_ms && (in->now_ms < h->window_start_ms || in->now_ms >= h->window_end_ms))
		row->limit = row->in_use = 0;
	return 0;
}

/* The rate per hour of one replica set of a pool: machine, and GPUs unless the
 * machine type bundles them. -1 when unknown, with *missing (when not NULL)
 * the machine type or GPU the table has no figure for. */
static double pool_rate(const struct prices *p, const char *region, const struct spec_pool *pool, int vertex,
			enum prices_class c, int *upper, int *estimate, const char **missing)
{
	double m, g;
	int64_t n;

	if (!pool->machine_type)
		return 0;
	if (missing)
		*missing = pool->machine_type;
	m = prices_rate(p, region, pool->machine_type, 0, vertex, c, upper, estimate);
	if (m < 0)
		return -1;
	if (missing)
		*missing = pool->accelerator_type;
	if (machines_fixed_gpus(pool->machine_type, NULL, NULL) || !pool->accelerator_type)
		return m * (double)pool->replica_count;
	if (!pool_gpu(pool, &n))
		n = pool->accelerator_count;
	g = prices_rate(p, region, pool->accelerator_type, 1, vertex, c, upper, estimate);
	if (g < 0)
		return -1;
	return (m + g * (double)n) * (double)pool->replica_count;
}

double prices_machine_rate(const struct prices *p, const char *region, const char *machine_type,
			   const char *accel, int64_t accel_count, int vertex, int *estimate)
{
	double m, g;

	if (!p || !region || !machine_type)
		return -1;
	m = prices_rate(p, region, machine_type, 0, vertex, PRICES_ON_DEMAND, NULL, estimate);
	if (m < 0 || !accel || accel_count <= 0 || machines_fixed_gpus(machine_type, NULL, NULL))
		return m;
	g = prices_rate(p, region, accel, 1, vertex, PRICES_ON_DEMAND, NULL, estimate);
	return g < 0 ? -1 : m + g * (double)accel_count;
}

/* Why c is unknown: the table has no figure for name in region ("no published
 * Spot price" when only the Spot figure is missing). */
static int price_missing(struct capacity_cost *c, const struct prices *p, const char *region, const char *name,
			 int accelerator, enum prices_class pc)
{
	int only_spot = pc == PRICES_SPOT &&
			prices_rate(p, region, name, accelerator, 1, PRICES_ON_DEMAND, NULL, NULL) >= 0;

	c->why = vx_asprintf("no published %sprice for %s in %s", only_spot ? "Spot " : "", name, region);
	return c->why ? 0 : VX_ENOMEM;
}

/* What a asks of capacity, through its kind (struct kind's capacity slot). */
static void action_capacity(const struct plan_action *a, struct kind_capacity *out)
{
	memset(out, 0, sizeof(*out));
	if (a->kind_of && a->kind_of->capacity)
		a->kind_of->capacity(a, out);
}

double prices_job_rate(const struct prices *p, const char *region, const struct job_spec *spec, int *upper,
		       int *estimate, const char **missing)
{
	enum prices_class pc = strategy_price(spec->strategy);
	double rate = 0;

	if (missing)
		*missing = NULL;
	/* Its machines are the reservation's (or the persistent resource's), priced there. */
	if (spec->reservation || spec->held_ref)
		return 0;
	for (size_t i = 0; i < spec->npools; i++) {
		double r = pool_rate(p, region, &spec->pools[i], 1, pc, upper, estimate, missing);

		if (r < 0 || !p)
			return -1;
		rate += r;
	}
	return rate;
}

/* Whether name, which the table lacks, is one of spec's machine types (else a GPU). */
static int missing_machine(const struct job_spec *spec, const char *name)
{
	for (size_t i = 0; i < spec->npools; i++)
		if (spec->pools[i].machine_type == name)
			return 1;
	return 0;
}

/*
 * A run whose later attempts may fall back to other rungs: its at most is
 * per attempt left the priciest rung it may reach (never below the rung it
 * starts on), unknown when a rung's price is.
 */
static int ladder_cost(struct capacity_cost *c, const struct capacity_input *in, const struct plan_action *a,
		       const struct kind_capacity *kc)
{
	double most = kc->attempts_most(a, in->prices, c->attempts_left, &c->why);

	if (most < 0) {
		c->known = 0;
		if (!c->why && !(c->why = vx_strdup("price unknown on a rung of the fallback ladder")))
			return VX_ENOMEM;
		return 0;
	}
	/* Cents apart at most from the plain figure: the same rungs, summed another way. */
	if (most > c->usd_max + 0.005) {
		c->usd_max = most;
		c->ladder = 1;
	}
	return 0;
}

static int job_cost(struct capacity_report *out, const struct capacity_input *in, const struct plan_action *a,
		    const struct kind_capacity *kc, int starts)
{
	const struct job_action *ja = job_action_of(a);
	struct capacity_cost *c = cost_add(out, a->address);
	/* The rung the run starts (or runs) on: its machines, strategy and region. */
	const struct job_spec *spec = kc->run;
	const char *region = kc->region;
	enum prices_class pc = strategy_price(spec->strategy);
	const char *missing = NULL;
	double rate, hours;
	int64_t attempts, attempt;

	if (!c)
		return VX_ENOMEM;
	c->starts = starts;
	c->running = !starts;
	c->known = 1;
	for (size_t i = 0; i < spec->npools; i++)
		if (in->prices && in->prices->fee_excluded && spec->pools[i].machine_type &&
		    machines_fixed_gpus(spec->pools[i].machine_type, NULL, NULL))
			out->fee_excluded = 1;
	rate = prices_job_rate(in->prices, region, spec, &c->upper_bound, &c->estimate, &missing);
	if (rate < 0) {
		c->known = 0;
		if (in->prices && missing && region)
			return price_missing(c, in->prices, region, missing, !missing_machine(spec, missing), pc);
		return 0;
	}
	if (spec->reservation || spec->held_ref) {
		c->usd_per_hour = 0;
		return 0;
	}
	/* The attempt that starts, or (a run that stays) the one that runs: the
	 * state's, so a running attempt 2 counts what its resubmission counted. */
	attempt = ja->attempt > 0							  ? ja->attempt
		  : ja->record && ja->record->current && ja->record->current->attempt > 0 ? ja->record->current->attempt
											  : 1;
	attempts = kc->max_attempts - attempt + 1;
	if (attempts < 1)
		attempts = 1;
	c->default_timeout = spec->timeout_s <= 0;
	c->timeout_s = c->default_timeout ? CAPACITY_DEFAULT_TIMEOUT_S : spec->timeout_s;
	c->attempts_left = attempts;
	hours = (double)c->timeout_s / 3600.0;
	c->usd_per_hour = rate;
	c->usd_max = rate * hours * (double)attempts;
	return kc->attempts_most ? ladder_cost(c, in, a, kc) : 0;
}

/* A cJSON integer: a number, or a decimal string (Vertex writes int64 fields as strings); def when absent. */
static int64_t json_int(const cJSON *o, const char *key, int64_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	char *end;
	long long x;

	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	if (!cJSON_IsString(v))
		return def;
	x = strtoll(v->valuestring, &end, 10);
	return *end || end == v->valuestring ? def : (int64_t)x;
}

double prices_vm_rate(const struct prices *p, const char *zone, const char *machine_type,
		      const char *accel_compute, int64_t accel_count, int *estimate)
{
	/* Prices are per region: the zone's region. */
	char region[64];
	const char *dash = zone ? strrchr(zone, '-') : NULL;
	double rate, g;

	if (!zone || !machine_type)
		return -1;
	snprintf(region, sizeof(region), "%.*s", dash ? (int)(dash - zone) : (int)strlen(zone), zone);
	rate = prices_rate(p, region, machine_type, 0, 0, PRICES_ON_DEMAND, NULL, estimate);
	if (rate >= 0 && accel_compute && accel_count > 0 && !machines_fixed_gpus(machine_type, NULL, NULL)) {
		const struct machines_gpu *gpu = machines_gpu_by_compute(accel_compute);

		g = gpu ? prices_rate(p, region, gpu->vertex, 1, 0, PRICES_ON_DEMAND, NULL, estimate) : -1;
		rate = g < 0 ? -1 : rate + g * (double)accel_count;
	}
	return rate;
}

/* Whether a stops a run that is active now: a cancel, or the cancel half of a replace. */
static int action_stops(const struct plan_action *a)
{
	const struct job_action *ja = job_action_of(a);

	return (a->op == PLAN_CANCEL || a->op == PLAN_REPLACE) && ja->cancel_name && ja->live_state &&
	       job_state_is_active(ja->live_state);
}

double prices_spec_rate(const struct prices *p, const char *region, const char *spec_json, int *upper,
			int *estimate)
{
	const cJSON *pools, *pool, *sched, *strategy;
	cJSON *spec;
	double rate = 0;

	if (!spec_json || !p || !region)
		return -1;
	if (!(spec = cJSON_Parse(spec_json)))
		return -1;
	sched = cJSON_GetObjectItemCaseSensitive(spec, "scheduling");
	strategy = cJSON_GetObjectItemCaseSensitive(sched, "strategy");
	pools = cJSON_GetObjectItemCaseSensitive(spec, "workerPoolSpecs");
	if (!cJSON_IsArray(pools))
		rate = -1;
	/* A run on a persistent resource: the resource's machines, priced there. */
	if (kind_spec_held_ref(spec))
		pools = NULL, rate = 0;
	cJSON_ArrayForEach(pool, pools) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(pool, "machineSpec");
		const cJSON *mt = cJSON_GetObjectItemCaseSensitive(ms, "machineType");
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(ms, "acceleratorType");
		const cJSON *ra = cJSON_GetObjectItemCaseSensitive(ms, "reservationAffinity");
		const cJSON *rt = cJSON_GetObjectItemCaseSensitive(ra, "reservationAffinityType");
		struct spec_pool sp;
		double r;

		if (cJSON_IsString(rt) && !strcmp(rt->valuestring, "SPECIFIC_RESERVATION")) {
			rate = 0;
			break;
		}
		if (!cJSON_IsString(mt))
			continue; /* an empty pool */
		memset(&sp, 0, sizeof(sp));
		sp.machine_type = mt->valuestring;
		sp.accelerator_type = cJSON_IsString(at) ? at->valuestring : NULL;
		sp.accelerator_count = json_int(ms, "acceleratorCount", 0);
		sp.replica_count = json_int(pool, "replicaCount", 1);
		r = pool_rate(p, region, &sp, 1,
			      strategy_price(cJSON_IsString(strategy) ? strategy->valuestring : NULL), upper, estimate,
			      NULL);
		if (r < 0) {
			rate = -1;
			break;
		}
		rate += r;
	}
	cJSON_Delete(spec);
	return rate;
}

/*
 * The rate per hour of the run a stops, priced from the spec recorded for it
 * (the run may differ from what is declared now): -1 when unknown (no
 * recorded spec, as for a job vx does not track; a price not in the table).
 * A run on a reservation is 0: the reservation keeps costing.
 */
static double stopped_rate(const struct capacity_input *in, const struct plan_action *a, int *upper, int *estimate)
{
	const struct job_action *ja = job_action_of(a);
	char project[128], region[64];
	const char *json = ja->record ? ja->record->spec_json : NULL;

	if (!json || !in->prices)
		return -1;
	if (a->region)
		snprintf(region, sizeof(region), "%s", a->region);
	else if (plan_resource_place(ja->cancel_name, project, region, sizeof(region)) < 0)
		return -1;
	return prices_spec_rate(in->prices, region, json, upper, estimate);
}

/* The on-demand rate of one VM of what an action holds (part of it): -1 when unknown. */
static double held_vm_rate(const struct capacity_input *in, const struct kind_capacity *kc, int *estimate)
{
	if (!kc->vertex_rates)
		return prices_vm_rate(in->prices, kc->zone, kc->machine_type, kc->accelerator, kc->accelerator_count,
				      estimate);
	return prices_machine_rate(in->prices, kc->region, kc->machine_type, kc->accelerator, kc->accelerator_count,
				   1, estimate);
}

/*
 * What action a, if it holds VMs, changes in the hourly spend: for each
 * part, (VMs after - VMs before) x the VM's rate. A booking changes no
 * hourly spend: what it books, for its whole window, goes to bookings[0],
 * and what a cancel before its window saves to bookings[1].
 */
static double held_delta(const struct capacity_input *in, const struct plan_action *a, int *known, int *estimate,
			 double bookings[2])
{
	double sum = 0;
	size_t nparts = 1;

	for (size_t part = 0; part < nparts; part++) {
		struct kind_capacity kc;
		int64_t before, after;
		double rate;

		memset(&kc, 0, sizeof(kc));
		kc.part = part;
		if (a->kind_of && a->kind_of->capacity)
			a->kind_of->capacity(a, &kc);
		if (!kc.holds || (!kc.has_counts && !a->has_values))
			return sum;
		nparts = kc.nparts ? kc.nparts : 1;
		before = kc.old_count;
		after = kc.new_count;
		if (!kc.has_counts) {
			before = a->old_value > 0 ? a->old_value : 0;
			after = a->op == PLAN_DELETE || a->new_value < 0 ? 0 : a->new_value;
		}
		if (kc.window_end_ms && (a->op == PLAN_CANCEL || a->op == PLAN_DELETE) && before > 0 && in->now_ms > 0 &&
		    in->now_ms < kc.window_start_ms) {
			rate = held_vm_rate(in, &kc, estimate);
			if (rate >= 0 && in->prices)
				bookings[1] += rate * (double)before *
					       (double)(kc.window_end_ms - kc.window_start_ms) / 3600000.0;
			continue;
		}
		if (kc.window_end_ms && !(a->op == PLAN_CREATE || a->op == PLAN_REPLACE))
			continue;
		if (!kc.window_end_ms && (before == after || (a->op != PLAN_CREATE && a->op != PLAN_UPDATE &&
							      a->op != PLAN_DELETE)))
			continue;
		rate = held_vm_rate(in, &kc, estimate);
		if (rate < 0 || !in->prices)
			*known = 0;
		else if (kc.window_end_ms)
			bookings[0] += rate * (double)after * (double)(kc.window_end_ms - kc.window_start_ms) / 3600000.0;
		else
			sum += rate * (double)(after - before);
	}
	return sum;
}

/*
 * What this plan's actions that hold VMs (a reservation's, a persistent
 * resource's) change in the hourly spend, what the bookings it makes cost
 * for their windows (bookings[0]) and what those it cancels before their
 * windows save (bookings[1]). Returns the change; *known 0 when a price is
 * unknown.
 */
static double reservations_delta(const struct capacity_input *in, int *known, int *estimate, double bookings[2])
{
	double sum = 0;

	for (size_t i = 0; i < in->plan->n; i++)
		sum += held_delta(in, &in->plan->actions[i], known, estimate, bookings);
	return sum;
}

static int cmp_row(const void *x, const void *y)
{
	const struct capacity_row *a = x, *b = y;
	int c = strcmp(a->region, b->region);

	if (!c)
		c = strcmp(a->accelerator, b->accelerator);
	if (!c)
		c = (int)a->cls - (int)b->cls;
	if (!c && a->reservation && b->reservation)
		c = strcmp(a->reservation, b->reservation);
	return c;
}

static void row_fits(struct capacity_row *row, int limits_read)
{
	if (row->cls != CAPACITY_RESERVATION && !limits_read)
		row->has_limit = 0;
	row->fits = row->has_limit && (row->limit < 0 || row->in_use + row->adds <= row->limit);
}

/* The declared request for row's quota (and region), from the kinds' rows
 * (limit_request: a quota preference): 1 with *req (what the cloud says of
 * it when listed), 0 when none. */
static int row_quota(const struct capacity_input *in, const struct capacity_row *row,
		     struct kind_limit_request *req)
{
	for (size_t k = 0; row->quota_id && k < kind_count; k++) {
		memset(req, 0, sizeof(*req));
		if (kind_table[k]->limit_request &&
		    kind_table[k]->limit_request(in->st, in->live, AIPLATFORM, row->quota_id, row->region, req))
			return 1;
	}
	return 0;
}

/*
 * That request when Google has not decided it: reconciling, and no
 * grantedValue (Cloud Quotas gives none until it decides).
 */
static int undecided(const struct capacity_input *in, const struct capacity_row *row,
		     struct kind_limit_request *req)
{
	return row_quota(in, row, req) && req->listed && req->reconciling && !req->has_granted;
}

/*
 * A job that passes the limit in force, or the value a pending preference
 * asks for, but not both: whether it fits waits on Google's decision.
 * Returns 1 (and notes why on the row and in misfits) when so, 0 when the
 * answer is known, VX_ENOMEM.
 */
static int fit_undecided(struct capacity_report *out, const struct capacity_input *in, struct capacity_row *row,
			 const char *address, int64_t before, int64_t need)
{
	struct kind_limit_request req;
	int now_fits, after_fits;
	char *why;

	if (!undecided(in, row, &req))
		return 0;
	now_fits = row->limit < 0 || before + need <= row->limit;
	after_fits = req.preferred < 0 || before + need <= req.preferred;
	if (now_fits == after_fits)
		return 0;
	why = vx_asprintf("%s asks for %lld and Google has not decided (no grantedValue yet)", req.address,
			  (long long)req.preferred);
	if (!why)
		return VX_ENOMEM;
	free(row->unknown);
	row->unknown = why;
	if (vx_diags_add(&out->misfits, NULL, 0, 0,
			 "%s: fit unknown: needs %lld %s %s in %s, limit %lld in force, %lld in use or started "
			 "before it; %s", address, (long long)need, capacity_class_name(row->cls), row->display,
			 row->region, (long long)row->limit, (long long)before, why) < 0)
		return VX_ENOMEM;
	return 1;
}

/* The declared QuotaPreference for row's quota and region, and what Cloud Quotas says of it. */
static void row_request(struct capacity_row *row, const struct capacity_input *in)
{
	struct kind_limit_request req;

	if (!row_quota(in, row, &req))
		return;
	row->has_request = 1;
	row->requested = req.requested;
	row->pending = 1;
	if (req.listed) {
		row->has_granted = req.has_granted;
		row->granted = req.granted;
		row->pending = req.reconciling || (row->has_granted && row->granted != req.preferred);
	}
}

/* Whether st has a job with GPUs or a reservation: the sections are shown only then. */
static int any_gpus(const struct stack *st)
{
	int any = any_held(st);
	size_t njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);

	for (size_t i = 0; i < njobs && !any; i++)
		for (size_t k = 0; k < jobs[i].spec.npools && !any; k++) {
			int64_t n;

			any = pool_gpu(&jobs[i].spec.pools[k], &n) != NULL;
		}
	return any;
}

/* A run that starts passes its row's limit in force, or the size of the reservation it runs on. */
static int pool_misfit(struct capacity_report *out, const char *address, const struct capacity_row *row,
		       const struct machines_gpu *gpu, int on_reservation, int64_t before, int64_t need)
{
	long long left = row->limit > before ? row->limit - before : 0;

	if (!row->has_limit || row->limit < 0 || before + need <= row->limit)
		return 0;
	if (on_reservation)
		return vx_diags_add(&out->misfits, NULL, 0, 0,
				    "%s: does not fit: needs %lld %s on %s (%s), which holds %lld, "
				    "%lld in use or taken by declared jobs before it: %lld free",
				    address, (long long)need, gpu->display, row->reservation, row->region,
				    (long long)row->limit, (long long)before, left);
	return vx_diags_add(&out->misfits, NULL, 0, 0,
			    "%s: does not fit: needs %lld %s %s in %s, limit %lld, %lld in use "
			    "or started before it: %lld free",
			    address, (long long)need, capacity_class_name(row->cls), gpu->display, row->region,
			    (long long)row->limit, (long long)before, left);
}

/*
 * One pool of a run in its row (its reservation's, else its region's and
 * class's): a run that stays counts as in use (pass 0); one that starts
 * adds to the row (pass 1) and is checked against what the row allows.
 */
static int pool_count(struct capacity_report *out, const struct capacity_input *in, const struct plan_action *a,
		      const struct kind_capacity *kc, const struct spec_pool *pool, int pass)
{
	const struct job_spec *spec = kc->run;
	struct kind_held held;
	const struct kind_held *sr = NULL;
	const struct machines_gpu *gpu;
	struct capacity_row *row;
	int64_t per, need, before;
	int rc;

	/* A run on a persistent resource uses its machines, which the resource's row counts. */
	if (spec->held_ref || !(gpu = pool_gpu(pool, &per)))
		return 0;
	need = per * pool->replica_count;
	if (spec->reservation && held_named(in, spec->reservation, &held))
		sr = &held;
	if (sr)
		row = row_get(out, sr->zone, gpu, CAPACITY_RESERVATION, sr->address);
	else
		row = row_get(out, kc->region, gpu, strategy_class(spec->strategy), NULL);
	if (!row)
		return VX_ENOMEM;
	if (!sr && pass == 0)
		row->in_use += need;
	if (pass == 0)
		return 0;
	before = row->in_use + row->adds;
	row->adds += need;
	if (!sr && !row->has_limit && in->limits &&
	    live_quota_limits_find(in->limits, AIPLATFORM, row->quota_id, row->region, &row->limit) == 0)
		row->has_limit = 1;
	if (!sr && row->has_limit && (rc = fit_undecided(out, in, row, a->address, before, need)) != 0)
		return rc < 0 ? rc : 0;
	return pool_misfit(out, a->address, row, gpu, sr != NULL, before, need);
}

/*
 * Part of a declaration whose VMs count against its region's on-demand
 * training quota from create to delete (a persistent resource's): what
 * the refresh listed is in use, what the declaration may grow to
 * (autoscaling's max) beyond it the plan adds, checked against the limit
 * as a starting run is. Counted after the runs that stay, before those
 * that start.
 */
static int quota_held(struct capacity_report *out, const struct capacity_input *in, const struct kind_held *h)
{
	const struct machines_gpu *gpu;
	struct capacity_row *row;
	int64_t per, now, need, before;
	int rc;

	if (!(gpu = held_gpu(h, &per)) || !h->region || plan_deletes(in->plan, h->address))
		return 0;
	if (!(row = row_get(out, h->region, gpu, CAPACITY_ON_DEMAND, NULL)))
		return VX_ENOMEM;
	now = h->listed ? h->listed_max * per : 0;
	need = h->count_max * per - now;
	row->in_use += now;
	if (need <= 0)
		return 0;
	before = row->in_use + row->adds;
	row->adds += need;
	if (!row->has_limit && in->limits &&
	    live_quota_limits_find(in->limits, AIPLATFORM, row->quota_id, row->region, &row->limit) == 0)
		row->has_limit = 1;
	if (row->has_limit && (rc = fit_undecided(out, in, row, h->address, before, need)) != 0)
		return rc < 0 ? rc : 0;
	return pool_misfit(out, h->address, row, gpu, 0, before, need);
}

/*
 * The run a starts (pass 1) or keeps (pass 0), if it has one: its cost, and
 * its pools in their rows. A started run's cost adds to the change of spend.
 */
static int count_run(struct capacity_report *out, const struct capacity_input *in, const struct plan_action *a,
		     int pass)
{
	struct kind_capacity kc;
	int starts, rc;

	action_capacity(a, &kc);
	if (!kc.run)
		return 0;
	starts = action_starts(a);
	if (pass == 0 ? !action_stays_running(a) : !starts)
		return 0;
	if ((rc = job_cost(out, in, a, &kc, starts)) < 0)
		return rc;
	for (size_t k = 0; k < kc.run->npools && rc == 0; k++)
		rc = pool_count(out, in, a, &kc, &kc.run->pools[k], pass);
	if (rc == 0 && pass == 1) {
		const struct capacity_cost *c = &out->costs[out->ncosts - 1];

		if (!c->known)
			out->delta_known = 0;
		out->started_per_hour += c->usd_per_hour;
		out->max_total += c->usd_max;
		out->delta_upper_bound |= c->upper_bound;
	}
	return rc;
}

/* A row's limit (read now if no run of it started), its request, and whether it fits. */
static int row_finish(struct capacity_report *out, const struct capacity_input *in, struct capacity_row *row)
{
	if (row->cls != CAPACITY_RESERVATION && !row->has_limit && in->limits &&
	    live_quota_limits_find(in->limits, AIPLATFORM, row->quota_id, row->region, &row->limit) == 0)
		row->has_limit = 1;
	row_fits(row, out->limits_read);
	row_request(row, in);
	if (row->cls != CAPACITY_RESERVATION && !row->has_limit && in->limits_error && !row->unknown &&
	    !(row->unknown = vx_asprintf("quota limits not read: %s", in->limits_error)))
		return VX_ENOMEM;
	if (row->unknown)
		row->fits = 0;
	if (row->cls != CAPACITY_RESERVATION && !row->has_limit && row->adds && in->limits)
		return vx_diags_add(&out->misfits, NULL, 0, 0,
				    "%s %s GPUs in %s: Cloud Quotas returned no limit for %s: unknown, not "
				    "counted as fitting",
				    capacity_class_name(row->cls), row->display, row->region,
				    row->quota_id);
	return 0;
}

/*
 * "16 H100 held, 8 used by declared jobs: $X/h idle" on c, the cost of sr
 * whose row is row: the GPUs of the declared runs on it that stay running
 * or start, when they leave some of it idle.
 */
static int idle_note(struct capacity_report *out, const struct capacity_input *in,
		     const struct kind_held *sr, const struct capacity_row *row, struct capacity_cost *c)
{
	const struct plan *p = in->plan;
	int64_t held = row->limit, used = row->adds;
	struct vx_buf note = VX_BUF_INIT;
	double idle;
	int rc;

	for (size_t k = 0; k < p->n; k++) {
		const struct plan_action *a = &p->actions[k];
		struct kind_capacity kc;
		const struct job_spec *js;

		action_capacity(a, &kc);
		js = kc.run;
		if (!js || !js->reservation || strcmp(js->reservation, sr->name) != 0 || !action_stays_running(a))
			continue;
		for (size_t q = 0; q < js->npools; q++) {
			int64_t per;

			if (pool_gpu(&js->pools[q], &per))
				used += per * js->pools[q].replica_count;
		}
	}
	if (used >= held)
		return 0;
	idle = c->known && held ? c->usd_per_hour * (double)(held - used) / (double)held : -1;
	rc = vx_buf_printf(&note, "%lld %s held, %lld used by declared jobs: ", (long long)held, row->display,
			   (long long)used);
	if (rc == 0)
		rc = capacity_money(&note, out->currency, idle, 2);
	if (rc == 0)
		rc = vx_buf_adds(&note, "/h idle");
	if (rc == 0 && !(c->note = vx_strdup(vx_buf_str(&note))))
		rc = VX_ENOMEM;
	vx_buf_release(&note);
	return rc;
}

/* "us-central1": where h's VMs are priced (its region, or its zone's), into buf. */
static const char *held_region(const struct kind_held *h, char *buf, size_t size)
{
	const char *dash;

	if (h->region)
		return h->region;
	if (!h->zone)
		return "?";
	dash = strrchr(h->zone, '-');
	snprintf(buf, size, "%.*s", dash ? (int)(dash - h->zone) : (int)strlen(h->zone), h->zone);
	return buf;
}

/* One part of what a declaration holds, priced into c (its VMs at the declared count, and their range). */
static int held_part_cost(const struct capacity_input *in, const struct kind_held *h, struct capacity_cost *c)
{
	char region[64];
	int64_t per;
	const struct machines_gpu *gpu = held_gpu(h, &per);
	double rate;

	if (h->vertex_rates)
		rate = prices_machine_rate(in->prices, h->region, h->machine_type, h->accelerator,
					   h->accelerator_count, 1, &c->estimate);
	else
		rate = prices_vm_rate(in->prices, h->zone, h->machine_type, h->accelerator,
				      h->accelerator ? h->accelerator_count : 0, &c->estimate);
	c->vms += h->count;
	c->vms_min += h->count_min;
	c->vms_max += h->count_max;
	c->window_start_ms = h->window_start_ms;
	c->window_end_ms = h->window_end_ms;
	if (gpu) {
		c->gpus += h->count * per;
		c->gpu = gpu->display;
	}
	if (rate >= 0 && in->prices) {
		c->usd_per_hour += rate * (double)h->count;
		c->usd_min += rate * (double)h->count_min;
		c->usd_max_per_hour += rate * (double)h->count_max;
		return 0;
	}
	if (c->known && in->prices && h->machine_type && (h->zone || h->region) &&
	    !(c->why = vx_asprintf("no published price for %s%s%s in %s", h->machine_type,
				   h->accelerator ? " with " : "", h->accelerator ? h->accelerator : "",
				   held_region(h, region, sizeof(region)))))
		return VX_ENOMEM;
	c->known = 0;
	return 0;
}

/* Whether a declared job runs on what h holds (its spec names h's job_ref). */
static int held_named_by_job(const struct capacity_input *in, const struct kind_held *h)
{
	size_t njobs;
	const struct stack_job *jobs = stack_jobs(in->st, &njobs);

	for (size_t i = 0; i < njobs; i++)
		if (jobs[i].spec.held_ref && !strcmp(jobs[i].spec.held_ref, h->job_ref))
			return 1;
	return 0;
}

/*
 * What what a declaration holds (each of its parts) costs held, none when it
 * is or will be gone; with a booking's window, what the window costs; and
 * how much of it is idle, or that no declared job runs on it.
 */
static int held_cost(struct capacity_report *out, const struct capacity_input *in, const struct kind *k, size_t i)
{
	struct kind_held h;
	struct capacity_cost *c;
	const struct capacity_row *row = NULL;
	int64_t vms = 0;
	size_t nparts;
	int rc = 0;

	held_at(in, k, i, 0, &h);
	nparts = held_parts(&h);
	for (size_t part = 0; part < nparts; part++) {
		held_at(in, k, i, part, &h);
		vms += h.count;
	}
	if (!vms || plan_deletes(in->plan, h.address))
		return 0;
	if (!(c = cost_add(out, h.address)))
		return VX_ENOMEM;
	c->running = c->held = c->known = 1;
	for (size_t part = 0; part < nparts && rc == 0; part++) {
		held_at(in, k, i, part, &h);
		rc = held_part_cost(in, &h, c);
	}
	if (rc < 0)
		return rc;
	c->has_range = c->vms_min != c->vms || c->vms_max != c->vms;
	if (c->window_end_ms > c->window_start_ms) {
		c->window_hours = (double)(c->window_end_ms - c->window_start_ms) / 3600000.0;
		c->usd_window = c->known ? c->usd_per_hour * c->window_hours : 0;
		c->estimate = 1;
		return 0;
	}
	if (!c->known)
		c->usd_per_hour = c->usd_min = c->usd_max_per_hour = 0;
	if (h.job_ref)
		return held_named_by_job(in, &h) || (c->note = vx_strdup("no declared job runs on it")) ? 0 : VX_ENOMEM;
	for (size_t r = 0; nparts == 1 && r < out->nrows; r++)
		if (out->rows[r].reservation && !strcmp(out->rows[r].reservation, h.address))
			row = &out->rows[r];
	return row ? idle_note(out, in, &h, row, c) : 0;
}

/* The change in hourly spend: runs started, minus runs stopped, plus reservations made, resized, deleted. */
static void spend_change(struct capacity_report *out, const struct capacity_input *in)
{
	int known = 1, est = 0;
	double bookings[2] = { 0, 0 };

	for (size_t i = 0; i < in->plan->n; i++) {
		const struct plan_action *a = &in->plan->actions[i];
		int upper = 0, stop_est = 0;
		double r;

		if (!action_stops(a))
			continue;
		r = stopped_rate(in, a, &upper, &stop_est);
		if (r < 0)
			out->delta_known = 0;
		else
			out->stopped_per_hour += r;
	}
	out->reservations_per_hour = reservations_delta(in, &known, &est, bookings);
	out->bookings_total = bookings[0];
	out->bookings_saved = bookings[1];
	if (!known)
		out->delta_known = 0;
	out->delta_per_hour = out->started_per_hour - out->stopped_per_hour + out->reservations_per_hour;
}

/* What each_held does with a declaration that holds machines. */
enum held_step {
	HELD_ROWS,  /* a reservation's row: what jobs naming it draw on */
	HELD_QUOTA, /* regional VMs in their region's quota row */
	HELD_COST,  /* what it costs */
};

/* Every declaration of the kinds that hold machines, in table order, each part of it: one step. */
static int each_held(struct capacity_report *out, const struct capacity_input *in, enum held_step step)
{
	int rc = 0;

	for (size_t k = 0; k < kind_count && rc == 0; k++)
		for (size_t i = 0; kind_table[k]->held && i < kind_count_decls(kind_table[k], in->st) && rc == 0; i++) {
			struct kind_held h;
			size_t nparts = 1;

			if (step == HELD_COST) {
				rc = held_cost(out, in, kind_table[k], i);
				continue;
			}
			for (size_t part = 0; part < nparts && rc == 0; part++) {
				held_at(in, kind_table[k], i, part, &h);
				nparts = held_parts(&h);
				if (h.draws_quota)
					rc = step == HELD_QUOTA ? quota_held(out, in, &h) : 0;
				else
					rc = step == HELD_ROWS ? held_row(out, in, &h) : 0;
			}
		}
	return rc;
}

int capacity_build(struct capacity_report *out, const struct capacity_input *in, struct vx_err *err)
{
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->limits_read = in->limits != NULL;
	out->delta_known = 1;
	if (in->prices) {
		out->currency = in->prices->currency;
		out->price_source = in->prices->source;
		out->price_date = in->prices->date;
	}
	if (!(out->any = any_gpus(in->st) || capacity_releases_held(in->plan)) && !in->price_all)
		return 0;
	/* What is held first (reservations): their rows exist (held, in use) whether or not a job uses them. */
	rc = each_held(out, in, HELD_ROWS);
	/* Two passes over the runs in address order: what stays running, then what
	 * starts, so a job that does not fit is the one the count passes the limit at.
	 * Regional VMs held from create to delete (a persistent resource's) count
	 * between them: they stay as a running run does, or start before the jobs. */
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		if (pass == 1)
			rc = each_held(out, in, HELD_QUOTA);
		for (size_t i = 0; i < in->plan->n && rc == 0; i++)
			rc = count_run(out, in, &in->plan->actions[i], pass);
	}
	for (size_t i = 0; i < out->nrows && rc == 0; i++)
		rc = row_finish(out, in, &out->rows[i]);
	/* What is held: what it costs, and how much of it declared jobs use. */
	if (rc == 0)
		rc = each_held(out, in, HELD_COST);
	if (rc == 0)
		spend_change(out, in);
	if (rc == 0 && out->nrows > 1)
		qsort(out->rows, out->nrows, sizeof(*out->rows), cmp_row);
	if (rc < 0) {
		capacity_release(out);
		return vx_err_set(err, VX_ENOMEM, "capacity: out of memory");
	}
	return 0;
}

int capacity_releases_held(const struct plan *p)
{
	for (size_t i = 0; p && i < p->n; i++)
		if ((p->actions[i].op == PLAN_DELETE || p->actions[i].op == PLAN_CANCEL) && p->actions[i].kind_of &&
		    p->actions[i].kind_of->cost == KIND_COST_HELD)
			return 1;
	return 0;
}

int capacity_wanted(const struct stack *st)
{
	size_t njobs;
	const struct stack_job *jobs = stack_jobs(st, &njobs);

	if (any_held(st))
		return 1;
	for (size_t i = 0; i < njobs; i++)
		for (size_t k = 0; k < jobs[i].spec.npools; k++) {
			const struct spec_pool *p = &jobs[i].spec.pools[k];

			if (p->accelerator_type ||
			    (p->machine_type && machines_fixed_gpus(p->machine_type, NULL, NULL)))
				return 1;
		}
	return 0;
}

size_t capacity_limit_services(const struct stack *st, const char **out)
{
	size_t n = 0;

	for (size_t i = kind_count; i-- > 0;) {
		const struct kind *k = kind_table[i];

		if (k->limits_service && (k->limits_always || kind_count_decls(k, st)))
			out[n++] = k->limits_service;
	}
	return n;
}

int prices_load_in_force(struct prices *out, const struct stack *st, const struct vx_ctx *ctx,
			 struct vx_err *err)
{
	/* VX_PRICES beats the Stack's prices:, as an environment variable beats a
	 * file setting elsewhere (git's GIT_* over its config): a one-off look at
	 * other prices without editing the reviewed stack. */
	return prices_load(out, st, vx_getenv(ctx, "VX_PRICES"), err);
}

int prices_load(struct prices *out, const struct stack *st, const char *env_file, struct vx_err *err)
{
	struct vx_buf text = VX_BUF_INIT;
	const char *file = env_file && *env_file ? env_file : NULL;
	char *path = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!file && st->prices) {
		if (st->prices[0] == '/' || !st->dir || !strcmp(st->dir, "."))
			path = vx_strdup(st->prices);
		else
			path = vx_asprintf("%s/%s", st->dir, st->prices);
		if (!path)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		file = path;
	}
	if (!file) {
		rc = prices_parse(out, prices_default_json, strlen(prices_default_json), "built-in price table", err);
		goto done;
	}
	rc = vx_buf_read_file(&text, file, 16u << 20, err);
	if (rc == 0)
		rc = prices_parse(out, vx_buf_str(&text), text.len, file, err);
	if (rc < 0 && path)
		(void)vx_err_wrap(err, "%s: prices", st->d.address);
done:
	vx_buf_release(&text);
	free(path);
	return rc;
}
