/*
 * The CustomJobSpec checker's schema walker: the YAML tree under `spec:`
 * against the generated schema tables (schema_tables.h), building the output
 * tree (spec_json.c) in the canonical form spec.c describes and noting in
 * struct chk what the machine rules (spec_machine.c) need.
 */
#include "reconcile/load/spec.h"
#include "reconcile/load/spec_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/schema_tables.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/suggest.h"
#include "util/banned.h"

#define RESERVATION_KEY "compute.googleapis.com/reservation-name"

static char *duration_text(int64_t ms)
{
	if (ms % 1000)
		return vx_asprintf("%lld.%03llds", (long long)(ms / 1000), (long long)(ms % 1000));
	return vx_asprintf("%llds", (long long)(ms / 1000));
}

/*
 * Appends ".key", or "[idx]" when key is NULL, to the path; returns the
 * length to pop back to. Every field of every job passes here, so the text
 * is put together by hand: formatting it with printf was a tenth of what
 * vx validate spends on a large stack.
 */
static size_t path_push(struct chk *c, const char *key, long idx)
{
	size_t len = c->path.len;
	char digits[24];
	size_t at = sizeof(digits);
	unsigned long u = idx < 0 ? 0 : (unsigned long)idx;
	int rc;

	if (key) {
		rc = vx_buf_addc(&c->path, '.');
		if (rc == 0)
			rc = vx_buf_adds(&c->path, key);
	} else {
		digits[--at] = ']';
		do
			digits[--at] = (char)('0' + u % 10);
		while ((u /= 10) != 0);
		digits[--at] = '[';
		rc = vx_buf_add(&c->path, digits + at, sizeof(digits) - at);
	}
	if (rc < 0)
		c->oom = 1;
	return len;
}

static void path_pop(struct chk *c, size_t len)
{
	if (c->path.data && len <= c->path.len) {
		c->path.len = len;
		c->path.data[len] = '\0';
	}
}

static const char *what(const struct ynode *n)
{
	return ynode_type_name(n);
}

static int is_plain(const struct ynode *n, const char *type)
{
	return n->kind == YNODE_SCALAR && n->style == YSTYLE_PLAIN && !strcmp(what(n), type);
}

/* A decimal integer as written: [+-]digits, whole string. */
static int parse_int(const char *s, long long *out)
{
	char *end = NULL;

	if (!*s || !((*s >= '0' && *s <= '9') || *s == '-' || *s == '+'))
		return VX_EINVAL;
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || !end || *end || end == s)
		return VX_EINVAL;
	return 0;
}

static const char *field_name(const struct schema_field *f)
{
	return f->json_name;
}

/* The text of a string field's value (refused unless YAML types it a string). */
static int scalar_text(struct chk *c, const struct ynode *n, const char **s)
{
	struct ynode_why why;

	if (ynode_want_string(&why, n) < 0) {
		spec_err(c, n, "%s", why.s);
		return VX_EINVAL;
	}
	*s = n->str;
	return 0;
}

/*
 * The GPU the machine of the pool being checked comes with, when n is its
 * acceleratorType and the machine type has fixed GPUs: what to suggest for
 * an unknown GPU there, rather than the nearest spelling (NVIDIA_A100_40GB
 * on a2-highgpu-8g means NVIDIA_TESLA_A100, not NVIDIA_A100_80GB). NULL
 * otherwise; *mt and *count say which machine and how many.
 */
static const char *machine_gpu(const struct chk *c, const struct schema_field *f, const char **mt,
			       int64_t *count)
{
	const struct ynode *m;
	const char *vertex = NULL;

	if (!c->pool || !c->pool->mspec || c->pool->mspec->kind != YNODE_MAP ||
	    strcmp(f->json_name, "acceleratorType"))
		return NULL;
	m = ynode_get(c->pool->mspec, "machineType");
	if (!m || m->kind != YNODE_SCALAR || !machines_fixed_gpus(m->str, &vertex, count) ||
	    schema_enum_index(f->enumt, vertex) < 0)
		return NULL;
	*mt = m->str;
	return vertex;
}

static int check_enum(struct chk *c, const struct schema_field *f, const struct ynode *n,
		      struct jv **out)
{
	const struct schema_enum *e = f->enumt;
	long long num;
	const char *near, *fits;
	size_t i;
	int idx = -1;

	if (n->kind != YNODE_SCALAR || (n->style == YSTYLE_PLAIN && (!strcmp(what(n), "boolean") ||
					!strcmp(what(n), "null") || !strcmp(what(n), "number")))) {
		spec_err(c, n, "expected one of the %s values, got %s", field_name(f), what(n));
		return VX_EINVAL;
	}
	if (is_plain(n, "integer") && parse_int(n->str, &num) == 0) {
		for (i = 0; i < e->n; i++)
			if (e->numbers[i] == num)
				idx = (int)i;
		if (idx < 0) {
			spec_err(c, n, "%lld is not a %s value", num, field_name(f));
			return VX_EINVAL;
		}
	} else {
		idx = schema_enum_index(e, n->str);
	}
	if (idx < 0) {
		const char *mt = NULL;
		int64_t count = 0;

		near = vx_suggest(n->str, e->values, e->n);
		if ((fits = machine_gpu(c, f, &mt, &count)))
			spec_err(c, n, "unknown value \"%s\" (did you mean \"%s\"? %s comes with %lld %s)", n->str,
				 fits, mt, (long long)count, fits);
		else if (near)
			spec_err(c, n, "unknown value \"%s\" (did you mean \"%s\"?)", n->str, near);
		else
			spec_err(c, n, "unknown value \"%s\"", n->str);
		return VX_EINVAL;
	}
	if (!strcmp(e->values[idx], "NVIDIA_TESLA_K80")) {
		spec_err(c, n, "NVIDIA_TESLA_K80 is retired (end of life) and refused");
		return VX_EINVAL;
	}
	*out = jv_new(JV_STR, e->values[idx]);
	return *out ? 0 : VX_ENOMEM;
}

/* Records what the job-level and pool-level rules need. */
static void note(struct chk *c, int msgid, const struct schema_field *f, const struct ynode *n,
		 const struct jv *v, int64_t num)
{
	struct pool_info *p = c->pool;
	const char *str = NULL;

	/* Keep only pointers that outlive v (which may be dropped as a default):
	 * the YAML text or the enum tables. */
	if (f->type == SCHEMA_STRING)
		str = n->str;
	else if (f->type == SCHEMA_ENUM)
		str = f->enumt->values[schema_enum_index(f->enumt, v->str)];

	if (msgid == SCHEMA_MSG_MachineSpec && p) {
		if (!strcmp(f->json_name, "machineType")) {
			p->machine_type = str;
			p->mt_node = n;
		} else if (!strcmp(f->json_name, "acceleratorType")) {
			p->accel = str;
			p->acc_node = n;
		} else if (!strcmp(f->json_name, "acceleratorCount")) {
			p->count = num;
			p->cnt_node = n;
		}
	} else if (msgid == SCHEMA_MSG_WorkerPoolSpec && p && !strcmp(f->json_name, "replicaCount")) {
		p->replicas = num;
		p->rep_node = n;
	} else if (msgid == SCHEMA_MSG_Scheduling) {
		if (!strcmp(f->json_name, "strategy")) {
			c->strategy = str;
			c->strategy_node = n;
		} else if (!strcmp(f->json_name, "timeout")) {
			c->timeout_ms = num;
			c->timeout_node = n;
		} else if (!strcmp(f->json_name, "maxWaitDuration")) {
			c->max_wait_ms = num;
		}
	} else if (msgid == SCHEMA_MSG_GcsDestination && !strcmp(f->json_name, "outputUriPrefix")) {
		c->output_uri = str;
	} else if (msgid == SCHEMA_MSG_CustomJobSpec && c->env && c->env->held_ref_field &&
		   c->env->held_ref_field(f->json_name)) {
		c->held_ref = str;
	}
}

/*
 * The check_value of each type that needs more than a few lines: 0 with *out
 * set (NULL when out of memory), VX_EINVAL when reported, VX_ENOMEM. *num is
 * the value note() records, where it has one.
 */

/* An int32 or int64 (int64 in JSON as a string, as proto3 writes it). */
static int check_int(struct chk *c, const struct schema_field *f, const struct ynode *n,
		     struct jv **out, long long *num)
{
	struct ynode_why why;
	char text[24];
	int64_t x;

	if (ynode_int(&x, &why, n, f->type == SCHEMA_INT32 ? INT32_MIN : INT64_MIN,
		      f->type == SCHEMA_INT32 ? INT32_MAX : INT64_MAX) < 0) {
		spec_err(c, n, "%s", why.s);
		return VX_EINVAL;
	}
	*num = x;
	snprintf(text, sizeof(text), "%lld", *num);
	*out = jv_new(f->type == SCHEMA_INT64 ? JV_STR : JV_NUM, text);
	return 0;
}

/* A double: a plain number, or a quoted text strtod reads whole. */
static int check_double(struct chk *c, const struct ynode *n, struct jv **out)
{
	char *end = NULL, *text;
	double d;

	if (n->kind != YNODE_SCALAR || (n->style == YSTYLE_PLAIN && !is_plain(n, "integer") &&
					!is_plain(n, "number"))) {
		spec_err(c, n, "expected a number, got %s", what(n));
		return VX_EINVAL;
	}
	errno = 0;
	d = strtod(n->str, &end);
	if (errno || !end || *end || end == n->str) {
		spec_err(c, n, "expected a number, got \"%s\"", n->str);
		return VX_EINVAL;
	}
	text = vx_asprintf("%.17g", d);
	if (!text)
		return VX_ENOMEM;
	*out = jv_new(JV_NUM, text);
	free(text);
	return 0;
}

/* A duration (1800s, 30m, 1h30m, 7d), written in JSON as seconds; *num in ms. */
static int check_duration(struct chk *c, const struct ynode *n, struct jv **out, long long *num)
{
	int64_t ms = 0;
	char *text;

	if (n->kind != YNODE_SCALAR || (n->style == YSTYLE_PLAIN && !is_plain(n, "integer") &&
					!is_plain(n, "number") && !is_plain(n, "string"))) {
		spec_err(c, n, "expected a duration (1800s, 30m, 1h30m, 7d), got %s", what(n));
		return VX_EINVAL;
	}
	if (spec_parse_duration(n->str, &ms) < 0) {
		spec_err(c, n, "invalid duration \"%s\" (use 1800s, 30m, 1h30m, 7d; at most "
			       "millisecond precision)",
			 n->str);
		return VX_EINVAL;
	}
	*num = ms;
	text = duration_text(ms);
	if (!text)
		return VX_ENOMEM;
	*out = jv_new(JV_STR, text);
	free(text);
	return 0;
}

/* A map of strings; each value that is not a string is reported at its key's path. */
static int check_map(struct chk *c, const struct ynode *n, struct jv **out)
{
	const char *s = NULL;
	size_t i, len;
	int rc = 0;

	if (n->kind != YNODE_MAP) {
		spec_err(c, n, "expected a mapping, got %s", what(n));
		return VX_EINVAL;
	}
	if (!(*out = jv_new(JV_OBJ, NULL)))
		return VX_ENOMEM;
	for (i = 0; i < n->n; i++) {
		len = path_push(c, n->pairs[i].key->str, 0);
		if (scalar_text(c, n->pairs[i].value, &s) == 0 &&
		    jv_add(*out, n->pairs[i].key->str, jv_new(JV_STR, s)) < 0)
			rc = VX_ENOMEM;
		path_pop(c, len);
	}
	if (rc < 0) {
		jv_free(*out);
		*out = NULL;
	}
	return rc;
}

/* One value of field f (one element for repeated fields). */
static int check_value(struct chk *c, int msgid, const struct schema_field *f,
		       const struct ynode *n, struct jv **out)
{
	const char *s = NULL;
	long long num = 0;
	int rc = 0;

	*out = NULL;
	switch (f->type) {
	case SCHEMA_STRING:
		if (scalar_text(c, n, &s) < 0)
			return VX_EINVAL;
		if (f->required && !*s) {
			spec_err(c, n, "must not be empty");
			return VX_EINVAL;
		}
		*out = jv_new(JV_STR, s);
		break;
	case SCHEMA_BOOL:
		if (!is_plain(n, "boolean")) {
			spec_err(c, n, "expected a boolean (true or false), got %s", what(n));
			return VX_EINVAL;
		}
		if ((*out = jv_new(JV_BOOL, NULL)))
			(*out)->b = n->str[0] == 't' || n->str[0] == 'T';
		break;
	case SCHEMA_INT32:
	case SCHEMA_INT64:
		rc = check_int(c, f, n, out, &num);
		break;
	case SCHEMA_DOUBLE:
		rc = check_double(c, n, out);
		break;
	case SCHEMA_ENUM:
		rc = check_enum(c, f, n, out);
		break;
	case SCHEMA_DURATION:
		rc = check_duration(c, n, out, &num);
		break;
	case SCHEMA_MESSAGE:
		rc = spec_walk_message(c, f->message, n, out);
		break;
	case SCHEMA_MAP:
		rc = check_map(c, n, out);
		break;
	case SCHEMA_TIMESTAMP:
	case SCHEMA_ANY:
	default:
		spec_err(c, n, "cannot be declared");
		return VX_EINVAL;
	}
	if (rc < 0)
		return rc;
	if (!*out)
		return VX_ENOMEM;
	note(c, msgid, f, n, *out, (int64_t)num);
	return 0;
}

/* Whether a checked value is its proto3 default, dropped from the canonical form. */
static int is_default(int msgid, const struct schema_field *f, const struct jv *v)
{
	if (f->repeated || f->type == SCHEMA_MAP)
		return v->n == 0;
	switch (f->type) {
	case SCHEMA_STRING:
		return v->str[0] == '\0';
	case SCHEMA_BOOL:
		return !v->b;
	case SCHEMA_INT32:
	case SCHEMA_INT64:
	case SCHEMA_DOUBLE:
		return !strcmp(v->str, "0");
	case SCHEMA_ENUM:
		if (msgid == SCHEMA_MSG_Scheduling && !strcmp(f->json_name, "strategy") &&
		    !strcmp(v->str, "STANDARD"))
			return 1;
		return !strcmp(v->str, f->enumt->values[0]);
	case SCHEMA_MESSAGE:
		return v->n == 0;
	default:
		return 0;
	}
}

static int check_pool(struct chk *c, size_t idx, const struct ynode *n, struct jv **out);

/* An EnvVar name: a C identifier, as Vertex requires ([A-Za-z_][A-Za-z0-9_]*). */
static int env_name_valid(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/*
 * Two entries of one env list with the same name: the container would get
 * one of them, and which is not ours to guess. Reported at the second, naming
 * the line of the first. Only valid names are compared (the rest are
 * reported already).
 */
static void check_env_duplicates(struct chk *c, const struct ynode *seq)
{
	size_t i, j, len;

	if (seq->kind != YNODE_SEQ)
		return;
	for (i = 1; i < seq->n; i++) {
		const struct ynode *a = seq->items[i]->kind == YNODE_MAP ?
					ynode_get(seq->items[i], "name") : NULL;

		if (!a || a->kind != YNODE_SCALAR || !env_name_valid(a->str))
			continue;
		for (j = 0; j < i; j++) {
			const struct ynode *b = seq->items[j]->kind == YNODE_MAP ?
						ynode_get(seq->items[j], "name") : NULL;

			if (b && b->kind == YNODE_SCALAR && !strcmp(a->str, b->str))
				break;
		}
		if (j == i)
			continue;
		len = path_push(c, NULL, (long)i);
		path_push(c, "name", 0);
		spec_err(c, a, "duplicate: \"%s\" is already set by env[%zu] at line %u", a->str, j,
		    ynode_get(seq->items[j], "name")->line);
		path_pop(c, len);
	}
}

/* A field's value: a list for repeated fields (a single value becomes a list). */
static int check_field(struct chk *c, int msgid, const struct schema_field *f,
		       const struct ynode *n, struct jv **out)
{
	struct jv *item = NULL;
	size_t i, count, len;
	int rc = 0, r;

	if (!f->repeated)
		return check_value(c, msgid, f, n, out);
	if (!(*out = jv_new(JV_ARR, NULL)))
		return VX_ENOMEM;
	count = n->kind == YNODE_SEQ ? n->n : 1;
	for (i = 0; i < count; i++) {
		const struct ynode *it = n->kind == YNODE_SEQ ? n->items[i] : n;

		len = path_push(c, NULL, (long)i);
		if (f->type == SCHEMA_MESSAGE && f->message == SCHEMA_MSG_WorkerPoolSpec)
			r = check_pool(c, i, it, &item);
		else if (ynode_is_null(it) && f->type != SCHEMA_MESSAGE) {
			spec_err(c, it, "expected a value, got null");
			r = VX_EINVAL;
		} else
			r = check_value(c, msgid, f, it, &item);
		path_pop(c, len);
		if (r == VX_ENOMEM || (r == 0 && jv_add_static(*out, NULL, item) < 0)) {
			rc = VX_ENOMEM;
			break;
		}
		if (r < 0)
			rc = VX_EINVAL;
		item = NULL;
	}
	if (rc != VX_ENOMEM && f->type == SCHEMA_MESSAGE && f->message == SCHEMA_MSG_EnvVar)
		check_env_duplicates(c, n);
	if (rc == VX_ENOMEM) {
		jv_free(*out);
		*out = NULL;
	}
	return rc == VX_ENOMEM ? rc : 0;
}

/* vx's {reservation: NAME} under machineSpec.reservationAffinity. */
static int expand_reservation(struct chk *c, const struct ynode *n, struct jv **out)
{
	const struct ynode *name = ynode_get(n, "reservation");
	const struct spec_env *env = c->env;
	const char **names = NULL;
	const char *near;
	struct jv *vals = NULL;
	char *full = NULL;
	size_t i, len;
	int rc = 0;

	*out = NULL;
	for (i = 0; i < n->n; i++)
		if (strcmp(n->pairs[i].key->str, "reservation"))
			spec_err(c, n->pairs[i].key, "\"reservation\" cannot be combined with \"%s\"",
			    n->pairs[i].key->str);
	len = path_push(c, "reservation", 0);
	if (name->kind != YNODE_SCALAR || (name->style == YSTYLE_PLAIN && strcmp(what(name), "string"))) {
		spec_err(c, name, "expected the name of a Reservation in this stack, got %s", what(name));
		goto done;
	}
	for (i = 0; env && i < env->nreservations; i++)
		if (!strcmp(env->reservations[i].name, name->str))
			break;
	if (!env || i == env->nreservations) {
		if (env && env->nreservations) {
			names = calloc(env->nreservations, sizeof(*names));
			if (!names) {
				rc = VX_ENOMEM;
				goto done;
			}
			for (i = 0; i < env->nreservations; i++)
				names[i] = env->reservations[i].name;
		}
		near = names ? vx_suggest(name->str, names, env->nreservations) : NULL;
		if (near)
			spec_err(c, name, "no Reservation named \"%s\" in this stack (did you mean \"%s\"?)",
			    name->str, near);
		else
			spec_err(c, name, "no Reservation named \"%s\" in this stack", name->str);
		goto done;
	}
	if (c->pool) {
		c->pool->res = &env->reservations[i];
		c->pool->res_node = name;
	}
	full = vx_asprintf("projects/%s/zones/%s/reservations/%s", env->project ? env->project : "",
			   env->reservations[i].zone ? env->reservations[i].zone : "", name->str);
	if (!full || !(*out = jv_new(JV_OBJ, NULL)) || !(vals = jv_new(JV_ARR, NULL)) ||
	    jv_add_static(vals, NULL, jv_new(JV_STR, full)) < 0) {
		rc = VX_ENOMEM;
		goto done;
	}
	if (jv_add_static(*out, "reservationAffinityType", jv_new(JV_STR, "SPECIFIC_RESERVATION")) < 0 ||
	    jv_add_static(*out, "key", jv_new(JV_STR, RESERVATION_KEY)) < 0 ||
	    jv_add_static(*out, "values", vals) < 0) {
		vals = NULL;
		rc = VX_ENOMEM;
		goto done;
	}
	vals = NULL;
done:
	path_pop(c, len);
	if (rc < 0) {
		jv_free(*out);
		*out = NULL;
	}
	jv_free(vals);
	free(full);
	free(names);
	return rc;
}

/* Whether a reservationAffinity map asks for a reservation: vx's
 * {reservation: NAME}, or any type but NO_RESERVATION (1 in the enum). */
static int uses_reservation(const struct ynode *n)
{
	const struct ynode *t = ynode_get(n, "reservationAffinityType");

	if (ynode_get(n, "reservation"))
		return 1;
	return !t || t->kind != YNODE_SCALAR ||
	       (strcmp(t->str, "NO_RESERVATION") != 0 && strcmp(t->str, "1") != 0);
}

/* The real SPECIFIC_RESERVATION form naming a reservation of this stack. */
static void note_real_reservation(struct chk *c, const struct ynode *n)
{
	const struct ynode *vals = ynode_get(n, "values");
	const struct spec_env *env = c->env;
	const struct ynode *v;
	size_t i, plen;

	if (!c->pool || !env || !env->project || !vals)
		return;
	v = vals->kind == YNODE_SEQ ? (vals->n ? vals->items[0] : NULL) : vals;
	if (!v || v->kind != YNODE_SCALAR)
		return;
	plen = strlen(env->project);
	if (strncmp(v->str, "projects/", 9) || strncmp(v->str + 9, env->project, plen))
		return;
	for (i = 0; i < env->nreservations; i++) {
		const struct spec_reservation *r = &env->reservations[i];
		char *full = vx_asprintf("projects/%s/zones/%s/reservations/%s", env->project,
					 r->zone ? r->zone : "", r->name);

		if (!full) {
			c->oom = 1;
			return;
		}
		if (!strcmp(full, v->str)) {
			c->pool->res = r;
			c->pool->res_node = v;
		}
		free(full);
	}
}

/*
 * A key of msg that is no field of it: an EnvVar's vx-only `sensitive: true`
 * (noted in *sensitive), or an unknown field reported with the nearest name.
 */
static void unknown_key(struct chk *c, int msgid, const struct schema_message *msg,
			const char **names, const struct ynode *key, const struct ynode *val,
			const struct ynode **sensitive)
{
	const char *near;
	size_t len;

	if (msgid == SCHEMA_MSG_EnvVar && !strcmp(key->str, "sensitive")) {
		len = path_push(c, "sensitive", 0);
		if (!is_plain(val, "boolean"))
			spec_err(c, val, "expected a boolean (true or false), got %s", what(val));
		else if (val->str[0] == 't' || val->str[0] == 'T')
			*sensitive = val;
		path_pop(c, len);
		return;
	}
	near = vx_suggest(key->str, names, msg->nfields);
	if (near)
		spec_err(c, key, "unknown field \"%s\" (did you mean \"%s\"?)", key->str, near);
	else
		spec_err(c, key, "unknown field \"%s\"", key->str);
}

/*
 * Field f of msg written at key: recorded in seen, and checked that it is
 * not given twice, not output-only, and not set with another of its oneof.
 * 0 when its value is not to be read.
 */
static int claim_field(struct chk *c, const struct schema_message *msg, const struct ynode **seen,
		       const struct schema_field *f, const struct ynode *key)
{
	size_t fi = (size_t)(f - msg->fields);

	if (seen[fi]) {
		spec_err(c, key, "field \"%s\" given twice (also at line %u)", f->json_name,
			 seen[fi]->line);
		return 0;
	}
	seen[fi] = key;
	if (f->output_only) {
		spec_err(c, key, "\"%s\" is output-only and cannot be declared", f->json_name);
		return 0;
	}
	if (f->oneof) {
		for (size_t j = 0; j < msg->nfields; j++)
			if (j != fi && seen[j] && msg->fields[j].oneof &&
			    !strcmp(msg->fields[j].oneof, f->oneof))
				spec_err(c, key, "\"%s\" and \"%s\" cannot both be set (one of \"%s\")",
					 msg->fields[j].json_name, f->json_name, f->oneof);
	}
	return 1;
}

/*
 * The value of field f of message msgid, at its path: vx's
 * {reservation: NAME} expanded, the rest checked by the schema, and what the
 * pool checks need noted in c->pool. Returns check_field's result.
 */
static int walk_field(struct chk *c, int msgid, const struct schema_field *f,
		      const struct ynode *val, struct jv **child)
{
	size_t len = path_push(c, f->json_name, 0), nerr;
	int affinity = msgid == SCHEMA_MSG_MachineSpec && !strcmp(f->json_name, "reservationAffinity") &&
		       val->kind == YNODE_MAP;
	int r;

	if (affinity && c->pool && uses_reservation(val))
		c->pool->affinity_node = val;
	if (affinity && ynode_get(val, "reservation")) {
		r = expand_reservation(c, val, child);
		path_pop(c, len);
		return r;
	}
	if (affinity)
		note_real_reservation(c, val);
	if (msgid == SCHEMA_MSG_WorkerPoolSpec && f->oneof && c->pool)
		c->pool->has_task = 1;
	if (msgid == SCHEMA_MSG_WorkerPoolSpec && !strcmp(f->json_name, "machineSpec") && c->pool)
		c->pool->mspec = val;
	nerr = (size_t)c->nerr;
	r = check_field(c, msgid, f, val, child);
	if (r == 0 && *child && msgid == SCHEMA_MSG_EnvVar && !strcmp(f->json_name, "name") &&
	    !env_name_valid((*child)->str)) {
		spec_err(c, val, "\"%s\" is not a valid environment variable name: use "
				 "letters, digits and \"_\", not starting with a digit",
			 (*child)->str);
		jv_free(*child);
		*child = NULL;
		r = VX_EINVAL;
	}
	if (msgid == SCHEMA_MSG_WorkerPoolSpec && c->pool && (size_t)c->nerr != nerr &&
	    !strcmp(f->json_name, "machineSpec"))
		c->pool->mspec_bad = 1;
	path_pop(c, len);
	return r;
}

/* msg's field names, for the suggestion after an unknown key; NULL when out of memory. */
static const char **field_names(const struct schema_message *msg)
{
	const char **names = calloc(msg->nfields + 1, sizeof(*names));

	for (size_t i = 0; names && i < msg->nfields; i++)
		names[i] = msg->fields[i].json_name;
	return names;
}

#define SEEN_MAX 64

int spec_walk_message(struct chk *c, int msgid, const struct ynode *n, struct jv **out)
{
	const struct schema_message *msg = &schema_messages[msgid];
	const struct ynode *seen_buf[SEEN_MAX];
	const struct ynode **seen = NULL;
	const char **names = NULL;
	const struct ynode *key, *val, *sensitive = NULL;
	const struct schema_field *f;
	struct jv *child = NULL, *value;
	size_t i;
	int rc = 0, r;

	*out = NULL;
	if (ynode_is_null(n))
		return (*out = jv_new(JV_OBJ, NULL)) ? 0 : VX_ENOMEM;
	if (n->kind != YNODE_MAP) {
		spec_err(c, n, "expected a mapping, got %s", what(n));
		return VX_EINVAL;
	}
	/* Every message of every job passes here: seen is on the stack when the
	 * message is small (all of the schema's are), names made only when asked. */
	seen = msg->nfields < SEEN_MAX ? seen_buf : calloc(msg->nfields + 1, sizeof(*seen));
	if (!seen || !(*out = jv_new(JV_OBJ, NULL))) {
		rc = VX_ENOMEM;
		goto done;
	}
	memset(seen, 0, (msg->nfields + 1) * sizeof(*seen));
	for (i = 0; i < n->n; i++) {
		key = n->pairs[i].key;
		val = n->pairs[i].value;
		f = schema_field_find(msg, key->str);
		if (!f && !names && !(names = field_names(msg))) {
			rc = VX_ENOMEM;
			goto done;
		}
		if (!f) {
			unknown_key(c, msgid, msg, names, key, val, &sensitive);
			continue;
		}
		if (!claim_field(c, msg, seen, f, key))
			continue;
		if (ynode_is_null(val))
			continue; /* `key:` with nothing: not set */
		r = walk_field(c, msgid, f, val, &child);
		if (r == VX_ENOMEM) {
			rc = r;
			goto done;
		}
		if (r < 0 || !child)
			continue;
		if (is_default(msgid, f, child)) {
			jv_free(child);
			child = NULL;
			continue;
		}
		r = jv_add_static(*out, f->json_name, child);
		child = NULL;
		if (r < 0) {
			rc = r;
			goto done;
		}
	}
	for (i = 0; i < msg->nfields; i++) {
		f = &msg->fields[i];
		if (f->required && !seen[i])
			spec_err(c, n, "missing required field \"%s\"", f->json_name);
	}
	if (sensitive && (value = jv_get(*out, "value")))
		value->sensitive = 1;
done:
	if (rc < 0) {
		jv_free(*out);
		*out = NULL;
	}
	if (seen != seen_buf)
		free(seen);
	free(names);
	return rc;
}

/* One worker pool: the schema, then what a used pool needs. */
static int check_pool(struct chk *c, size_t idx, const struct ynode *n, struct jv **out)
{
	struct pool_info *p;
	char *path = NULL;
	int rc;

	p = &c->pools[idx];
	memset(p, 0, sizeof(*p));
	p->node = n;
	c->pool = p;
	rc = spec_walk_message(c, SCHEMA_MSG_WorkerPoolSpec, n, out);
	c->pool = NULL;
	if (rc < 0 || !*out)
		return rc;
	if ((*out)->n == 0) {
		/* a skipped pool: allowed after the first */
		if (idx == 0)
			spec_err(c, n, "the first worker pool must not be empty");
		return 0;
	}
	if (!p->has_task)
		spec_err(c, n, "needs containerSpec or pythonPackageSpec");
	if (!p->mspec)
		spec_err(c, n, "missing required field \"machineSpec\"");
	else if (!p->machine_type && !p->mspec_bad) {
		path = vx_asprintf("%s.machineSpec", vx_buf_str(&c->path));
		if (!path)
			return VX_ENOMEM;
		spec_err_at(c, p->mspec, path, "missing required field \"machineType\"");
		free(path);
	}
	if (p->rep_node && p->replicas < 1) {
		path = vx_asprintf("%s.replicaCount", vx_buf_str(&c->path));
		if (!path)
			return VX_ENOMEM;
		spec_err_at(c, p->rep_node, path, "must be at least 1, got %lld", (long long)p->replicas);
		free(path);
		path = NULL;
	}
	if (idx == 0 && !p->rep_node && jv_add_static(*out, "replicaCount", jv_new(JV_STR, "1")) < 0)
		return VX_ENOMEM;
	if (p->machine_type && !p->mspec_bad)
		spec_machine_check_pool(c, idx, p);
	return 0;
}
