/*
 * The CustomJobSpec checker: walks the YAML tree under a CustomJob's `spec:`
 * against the generated schema tables, applies the machine rules, and builds
 * the canonical JSON that is sent to Vertex and hashed.
 *
 * Canonical form (one fixed way, so equal meaning gives equal bytes):
 * - object keys sorted by byte order of their JSON (lowerCamelCase) names;
 *   proto snake_case names are accepted on input and renamed;
 * - int64 as JSON strings ("replicaCount":"1"), int32 as numbers, written
 *   without sign or leading zeros; enums as value names (integers accepted
 *   on input); durations as "<seconds>s", or "<seconds>.<3 digits>s" when
 *   they have milliseconds (as Google's JSON printer writes them);
 * - proto3 defaults are dropped: false, 0, "", empty lists and maps, an
 *   enum's zero value (*_UNSPECIFIED), messages left empty, and
 *   scheduling.strategy STANDARD (STRATEGY_UNSPECIFIED means STANDARD).
 *   Durations are messages, so "0s" (maxWaitDuration: wait forever) is kept;
 * - workerPoolSpecs[0].replicaCount is made explicit ("1" when not given);
 *   later pools keep what was written. Skipped pools stay as {} so indices
 *   keep their meaning;
 * - a repeated field given a single value (as gcloud's YAML reader allows)
 *   becomes a one-element list;
 * - vx's `reservationAffinity: {reservation: NAME}` is expanded to the
 *   SPECIFIC_RESERVATION form; EnvVar `sensitive` is dropped (and the value
 *   replaced by "hmac-sha256:<hex>" in redacted_json only: see job_spec_rehash).
 * Where the schema wants a string, a plain number or boolean is refused with
 * a hint to quote it (args: [--epochs, "3"]): gcloud's reader refuses it too,
 * and the text of a YAML number is not always what was meant (3.10, 0x10).
 * Booleans are accepted only as YAML booleans; integers only in decimal.
 *
 * This file holds the entry points, durations and the checker's error
 * reporting; the schema walker is in spec_walk.c, the machine rules in
 * spec_machine.c, the output tree and its JSON in spec_json.c, and
 * spec_diff_paths in spec_diff.c (what they share: spec_internal.h).
 */
#include "reconcile/load/spec.h"
#include "reconcile/load/spec_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/schema_tables.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/text.h"
#include "util/banned.h"

#define MAX_DURATION_MS (315576000000LL * 1000) /* google.protobuf.Duration's limit */
/* ---- durations ------------------------------------------------------------ */

/* Reads digits[.digits] at *p into whole and a fraction (frac / 10^fdigits). */
static int read_decimal(const char **p, long long *whole, long long *frac, int *fdigits)
{
	const char *s = *p;
	int nd = 0;

	*whole = 0;
	*frac = 0;
	*fdigits = 0;
	while (*s >= '0' && *s <= '9') {
		if (++nd > 15)
			return VX_EINVAL;
		*whole = *whole * 10 + (*s++ - '0');
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			if (++*fdigits > 9)
				return VX_EINVAL;
			*frac = *frac * 10 + (*s++ - '0');
		}
		if (*fdigits == 0)
			return VX_EINVAL;
	}
	if (nd == 0 && *fdigits == 0)
		return VX_EINVAL;
	*p = s;
	return 0;
}

int spec_parse_duration(const char *s, int64_t *out_ms)
{
	static const struct { const char *unit; long long ms; } units[] = {
		{ "ms", 1 }, { "d", 86400000LL }, { "h", 3600000LL }, { "m", 60000LL }, { "s", 1000LL },
	};
	long long total = 0, whole, frac, pow10;
	const char *p = s;
	int fdigits, i, parts = 0;
	size_t u;

	if (!s || !*s)
		return VX_EINVAL;
	while (*p) {
		if (read_decimal(&p, &whole, &frac, &fdigits) < 0)
			return VX_EINVAL;
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (!strncmp(p, units[u].unit, strlen(units[u].unit)))
				break;
		if (u == sizeof(units) / sizeof(units[0])) {
			if (*p || parts)
				return VX_EINVAL; /* a bare number is seconds, alone */
			u = 4;
		} else {
			p += strlen(units[u].unit);
		}
		for (pow10 = 1, i = 0; i < fdigits; i++)
			pow10 *= 10;
		/* sub-millisecond precision is refused rather than rounded */
		if ((frac * units[u].ms) % pow10)
			return VX_EINVAL;
		if (whole > MAX_DURATION_MS / units[u].ms)
			return VX_EINVAL;
		total += whole * units[u].ms + frac * units[u].ms / pow10;
		if (total > MAX_DURATION_MS)
			return VX_EINVAL;
		parts++;
	}
	*out_ms = total;
	return 0;
}

/* ---- the checker ---------------------------------------------------------- */

static void diag_v(struct chk *c, const struct ynode *n, const char *path, const char *fmt,
		   va_list ap)
{
	struct vx_buf m = VX_BUF_INIT;

	c->nerr++;
	if (vx_buf_vprintf(&m, fmt, ap) < 0 ||
	    vx_diags_add(c->diags, n ? n->file : NULL, n ? n->line : 0, n ? n->col : 0, "%s: %s",
			 path, vx_buf_str(&m)) < 0)
		c->oom = 1;
	vx_buf_release(&m);
}

/* An error at node n about the field at the current path. */
void spec_err(struct chk *c, const struct ynode *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_v(c, n, vx_buf_str(&c->path), fmt, ap);
	va_end(ap);
}

/* An error at node n with an explicit path. */
void spec_err_at(struct chk *c, const struct ynode *n, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_v(c, n, path, fmt, ap);
	va_end(ap);
}

static int fill_out(struct chk *c, struct job_spec *out)
{
	size_t i;

	if (c->npools && !(out->pools = calloc(c->npools, sizeof(*out->pools))))
		return VX_ENOMEM;
	out->npools = c->npools;
	for (i = 0; i < c->npools; i++) {
		const struct pool_info *p = &c->pools[i];
		struct spec_pool *o = &out->pools[i];

		if (!p->machine_type)
			continue;
		o->accelerator_count = p->accel ? p->count : 0;
		o->replica_count = p->rep_node && p->replicas > 0 ? p->replicas : 1;
		if (!(o->machine_type = vx_strdup(p->machine_type)) ||
		    (p->accel && !(o->accelerator_type = vx_strdup(p->accel))))
			return VX_ENOMEM;
		if (p->res && !out->reservation && !(out->reservation = vx_strdup(p->res->name)))
			return VX_ENOMEM;
	}
	if (!(out->strategy = vx_strdup(c->strategy && strcmp(c->strategy, "STRATEGY_UNSPECIFIED")
					? c->strategy : "STANDARD")))
		return VX_ENOMEM;
	out->max_wait_s = c->max_wait_ms >= 0 ? c->max_wait_ms / 1000 : -1;
	out->timeout_s = c->timeout_ms >= 0 ? c->timeout_ms / 1000 : -1;
	if (c->output_uri && !(out->output_uri = vx_strdup(c->output_uri)))
		return VX_ENOMEM;
	if (c->held_ref && !(out->held_ref = vx_strdup(c->held_ref)))
		return VX_ENOMEM;
	return 0;
}

/*
 * The checked spec's forms: canonical JSON (sorted) and its hash, and with
 * sensitive values the redacted form and its hash; then *root is kept in
 * out->tree (job_spec_rehash renders it again with the salt) and set NULL.
 * 0, or VX_ENOMEM / VX_EIO.
 */
static int spec_render(struct job_spec *out, struct jv **root)
{
	struct vx_buf b = VX_BUF_INIT;
	struct redact unsalted = { NULL, 0 };
	int rc;

	jv_sort(*root);
	if (spec_json_write(&b, *root, NULL) < 0 || !(out->canonical_json = vx_buf_detach(&b))) {
		vx_buf_release(&b);
		return VX_ENOMEM;
	}
	if (vx_digest_sha256_hex(out->legacy_hash, out->canonical_json,
				 strlen(out->canonical_json)) < 0)
		return VX_EIO;
	out->nsensitive = jv_count_sensitive(*root);
	if (out->nsensitive == 0) {
		/* Nothing to hide: the hash is what it always was, so upgrading vx
		 * replaces no job. */
		memcpy(out->hash, out->legacy_hash, sizeof(out->hash));
		return (out->redacted_json = vx_strdup(out->canonical_json)) ? 0 : VX_ENOMEM;
	}
	if ((rc = spec_json_redact_and_hash(out, *root, &unsalted)) < 0)
		return rc;
	out->tree = *root;
	*root = NULL;
	return 0;
}

int spec_check(struct job_spec *out, const struct ynode *spec, const struct spec_env *env,
	       struct vx_diags *diags)
{
	struct chk c;
	const struct ynode *wps;
	struct jv *root = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->max_wait_s = -1;
	out->timeout_s = -1;
	memset(&c, 0, sizeof(c));
	c.diags = diags;
	c.env = env;
	c.out = out;
	c.timeout_ms = -1;
	c.max_wait_ms = -1;
	if (vx_buf_adds(&c.path, "spec") < 0) {
		rc = VX_ENOMEM;
		goto done;
	}
	if (!spec || ynode_is_null(spec)) {
		spec_err(&c, spec, "missing: a CustomJobSpec with workerPoolSpecs");
		rc = VX_EINVAL;
		goto done;
	}
	wps = spec->kind == YNODE_MAP ? ynode_get(spec, "workerPoolSpecs") : NULL;
	if (!wps && spec->kind == YNODE_MAP)
		wps = ynode_get(spec, "worker_pool_specs");
	c.npools = !wps || ynode_is_null(wps) ? 0 : wps->kind == YNODE_SEQ ? wps->n : 1;
	if (c.npools && !(c.pools = calloc(c.npools, sizeof(*c.pools)))) {
		rc = VX_ENOMEM;
		goto done;
	}
	rc = spec_walk_message(&c, SCHEMA_MSG_CustomJobSpec, spec, &root);
	if (rc < 0 || c.oom) {
		rc = VX_ENOMEM;
		goto done;
	}
	if (wps && !ynode_is_null(wps) && c.npools == 0)
		spec_err_at(&c, wps, "spec.workerPoolSpecs", "needs at least one worker pool");
	spec_machine_check_strategy(&c);
	if (c.oom) {
		rc = VX_ENOMEM;
		goto done;
	}
	if (c.nerr) {
		rc = VX_EINVAL;
		goto done;
	}
	if ((rc = spec_render(out, &root)) < 0)
		goto done;
	rc = fill_out(&c, out);
done:
	jv_free(root);
	vx_buf_release(&c.path);
	free(c.pools);
	return rc;
}

void job_spec_release(struct job_spec *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->npools; i++) {
		free(s->pools[i].machine_type);
		free(s->pools[i].accelerator_type);
	}
	free(s->pools);
	if (s->nsensitive && s->canonical_json)
		OPENSSL_cleanse(s->canonical_json, strlen(s->canonical_json));
	free(s->canonical_json);
	free(s->redacted_json);
	jv_free(s->tree);
	free(s->strategy);
	free(s->output_uri);
	free(s->reservation);
	free(s->held_ref);
	memset(s, 0, sizeof(*s));
	s->max_wait_s = -1;
	s->timeout_s = -1;
}

int job_spec_same_shape(const struct job_spec *a, const struct job_spec *b)
{
	if (a->npools != b->npools || !vx_text_same(a->strategy, b->strategy))
		return 0;
	for (size_t i = 0; i < a->npools; i++) {
		const struct spec_pool *x = &a->pools[i], *y = &b->pools[i];

		if (!vx_text_same(x->machine_type, y->machine_type) || x->replica_count != y->replica_count ||
		    !vx_text_same(x->accelerator_type, y->accelerator_type) ||
		    x->accelerator_count != y->accelerator_count)
			return 0;
	}
	return 1;
}

char *job_spec_shape(const struct job_spec *s)
{
	struct vx_buf b = VX_BUF_INIT;
	const struct machines_gpu *gpu;
	size_t i;
	int rc = 0, first = 1;

	for (i = 0; rc == 0 && i < s->npools; i++) {
		const struct spec_pool *p = &s->pools[i];

		if (!p->machine_type)
			continue;
		if (!first)
			rc = vx_buf_adds(&b, " + ");
		first = 0;
		if (rc == 0)
			rc = vx_buf_printf(&b, "%s \xc3\x97%lld", p->machine_type,
					   (long long)p->replica_count);
		if (rc == 0 && p->accelerator_type) {
			gpu = machines_gpu_by_vertex(p->accelerator_type);
			rc = vx_buf_printf(&b, ", %lld\xc3\x97%s", (long long)p->accelerator_count,
					   gpu ? gpu->display : p->accelerator_type);
		}
	}
	if (rc == 0 && s->strategy)
		rc = vx_buf_printf(&b, "%s%s", first ? "" : ", ", s->strategy);
	if (rc < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

