/*
 * The future reservation kind's declarations: its FutureReservation
 * documents read into its slot of struct stack (the row's load_* slots),
 * their canonical hashes, release and lookups. The request's fields under
 * spec: are written as Google names them (docs/format.md).
 */
#include "reconcile/kind_future.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/timefmt.h"
#include "util/banned.h"

#define DAY_MS (24 * 3600 * INT64_C(1000))

static const char *const future_keys[] = { "kind", "name", "zone", "mode", "window", "spec",
					   "description", "protect" };
static const char *const window_keys[] = { "start", "duration", "end", "closingLead" };
static const char *const spec_keys[] = { "specificSkuProperties" };
static const char *const sku_keys[] = { "totalCount", "instanceProperties" };
static const char *const props_keys[] = { "machineType", "guestAccelerators" };
static const char *const accel_keys[] = { "acceleratorType", "acceleratorCount" };
static const char *const modes[] = { "calendar", "default" };

static void future_release(struct stack_future *f)
{
	stack_decl_release(&f->d);
	free(f->zone);
	free(f->machine_type);
	free(f->accelerator);
	free(f->description);
}

/* A duration key of map ("5d", "12h"): 1 with *ms set, else 0 (reported when wrong). */
static int read_duration(struct loader *L, const struct ynode *map, const char *path, const char *key,
			 int64_t *ms, const struct ynode **at)
{
	const char *s;

	if (!stack_get_str(&s, at, L, map, path, key, 0))
		return 0;
	if (spec_parse_duration(s, ms) < 0 || *ms <= 0) {
		stack_err(L, *at, "%s.%s: \"%s\" is not a duration (like \"5d\" or \"36h\")", path, key, s);
		return 0;
	}
	return 1;
}

/* A time key of map in RFC 3339: 1 with *ms set, else 0 (reported when wrong). */
static int read_time(struct loader *L, const struct ynode *map, const char *path, const char *key, int required,
		     int64_t *ms, const struct ynode **at)
{
	const char *s;

	if (!stack_get_str(&s, at, L, map, path, key, required))
		return 0;
	if (vx_time_parse(ms, s, 0) < 0) {
		stack_err(L, *at, "%s.%s: \"%s\" is not an RFC 3339 time (like \"2026-12-08T09:00:00Z\")", path,
			  key, s);
		return 0;
	}
	return 1;
}

/*
 * window: {start, duration | end, closingLead}. Calendar mode books 1 to 90
 * days (Google's create page). A start in the past is the plan's to refuse:
 * the declaration stays valid once its window has begun.
 */
static void read_window(struct loader *L, struct stack_future *f, const struct ynode *doc)
{
	const struct ynode *w = stack_get_map(L, doc, "window", ""), *dv = NULL, *ev = NULL, *cv = NULL, *sv;
	int64_t dur = 0, end = 0;
	int has_dur, has_end;

	if (!w) {
		if (!stack_get_value(doc, "window"))
			stack_get_missing(L, doc, "", "window");
		return;
	}
	stack_check_keys(L, w, "window", window_keys, ARRAY_SIZE(window_keys));
	if (!read_time(L, w, "window", "start", 1, &f->start_ms, &sv))
		return;
	has_dur = read_duration(L, w, "window", "duration", &dur, &dv);
	has_end = read_time(L, w, "window", "end", 0, &end, &ev);
	f->closing_lead_ms = 2 * 3600 * INT64_C(1000);
	(void)read_duration(L, w, "window", "closingLead", &f->closing_lead_ms, &cv);
	if (has_dur && has_end) {
		stack_err(L, ev, "window: give duration or end, not both");
		return;
	}
	if (!has_dur && !has_end) {
		if (!dv && !ev)
			stack_err(L, w, "window: needs duration (like \"5d\") or end");
		return;
	}
	f->end_ms = has_end ? end : f->start_ms + dur;
	if (f->end_ms <= f->start_ms)
		stack_err(L, ev, "window.end: must be after window.start");
	else if (f->calendar && (f->end_ms - f->start_ms < DAY_MS || f->end_ms - f->start_ms > 90 * DAY_MS))
		stack_err(L, has_end ? ev : dv, "window: a calendar-mode booking lasts 1 to 90 days, this one "
						"%.1f days",
			  (double)(f->end_ms - f->start_ms) / (double)DAY_MS);
	if (cv && f->end_ms > f->start_ms && f->closing_lead_ms >= f->end_ms - f->start_ms)
		stack_err(L, cv, "window.closingLead: must be shorter than the window");
}

/* guestAccelerators: one entry (a GPU machine type takes one type). */
static void read_accelerators(struct loader *L, struct stack_future *f, const struct ynode *props,
			      const char *path)
{
	const struct ynode *seq = stack_get_value(props, "guestAccelerators"), *a, *tv, *cv;
	const char *type;
	char at[128];

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ || seq->n != 1) {
		stack_err(L, seq, "%s.guestAccelerators: a sequence of one accelerator", path);
		return;
	}
	a = seq->items[0];
	snprintf(at, sizeof(at), "%s.guestAccelerators[0]", path);
	if (a->kind != YNODE_MAP) {
		stack_wrong_type(L, a, at, "mapping");
		return;
	}
	stack_check_keys(L, a, at, accel_keys, ARRAY_SIZE(accel_keys));
	if (stack_get_str(&type, &tv, L, a, at, "acceleratorType", 1)) {
		const char *hint = machines_gpu_by_compute(type) ? NULL : machines_suggest_compute(type);

		if (machines_gpu_by_compute(type))
			f->accelerator = stack_dup_opt(L, type);
		else if (hint)
			stack_err(L, tv, "%s.acceleratorType: unknown accelerator type \"%s\" (did you mean \"%s\"?)",
				  at, type, hint);
		else
			stack_err(L, tv, "%s.acceleratorType: unknown accelerator type \"%s\" (Compute Engine "
					 "names, like \"nvidia-h100-80gb\")",
				  at, type);
	}
	if (stack_get_int(&f->accelerator_count, &cv, L, a, at, "acceleratorCount", 1) && f->accelerator_count < 1)
		stack_err(L, cv, "%s.acceleratorCount: must be at least 1", at);
}

/* The machine and its GPUs must be a shape Vertex AI runs (the machine table). */
static void check_shape(struct loader *L, struct stack_future *f, const struct ynode *mv, const struct ynode *props)
{
	const struct machines_gpu *gpu = f->accelerator ? machines_gpu_by_compute(f->accelerator) : NULL;
	enum machines_field fld = MACHINES_FIELD_MACHINE_TYPE;
	const struct ynode *acc = stack_get_value(props, "guestAccelerators");
	char *msg = NULL;
	int rc = machines_check(f->machine_type, gpu ? gpu->vertex : NULL, f->accelerator ? f->accelerator_count : 0,
				&msg, &fld);

	if (rc == VX_ENOMEM)
		stack_oom(L);
	else if (rc < 0)
		stack_err(L, fld == MACHINES_FIELD_MACHINE_TYPE || !acc ? mv : acc, "spec.specificSkuProperties."
										    "instanceProperties.%s: %s",
			  fld == MACHINES_FIELD_MACHINE_TYPE || !acc ? "machineType"
								     : "guestAccelerators",
			  msg ? msg : "machine type and accelerators do not match");
	free(msg);
}

/* spec: {specificSkuProperties: {totalCount, instanceProperties: {machineType, guestAccelerators}}}. */
static void read_spec(struct loader *L, struct stack_future *f, const struct ynode *doc)
{
	static const char path[] = "spec.specificSkuProperties.instanceProperties";
	const struct ynode *spec = stack_get_map(L, doc, "spec", ""), *sku, *props, *v, *mv;
	const char *s;
	size_t before = L->nerr;

	if (!spec) {
		if (!stack_get_value(doc, "spec"))
			stack_get_missing(L, doc, "", "spec");
		return;
	}
	stack_check_keys(L, spec, "spec", spec_keys, ARRAY_SIZE(spec_keys));
	if (!(sku = stack_get_map(L, spec, "specificSkuProperties", "spec"))) {
		if (!stack_get_value(spec, "specificSkuProperties"))
			stack_get_missing(L, spec, "spec", "specificSkuProperties");
		return;
	}
	stack_check_keys(L, sku, "spec.specificSkuProperties", sku_keys, ARRAY_SIZE(sku_keys));
	if (stack_get_int(&f->total_count, &v, L, sku, "spec.specificSkuProperties", "totalCount", 1) &&
	    (f->total_count < 1 || f->total_count > (f->calendar ? 80 : 1000)))
		stack_err(L, v, "spec.specificSkuProperties.totalCount: must be between 1 and %d%s, got %" PRId64,
			  f->calendar ? 80 : 1000, f->calendar ? " in calendar mode" : "", f->total_count);
	if (!(props = stack_get_map(L, sku, "instanceProperties", "spec.specificSkuProperties"))) {
		if (!stack_get_value(sku, "instanceProperties"))
			stack_get_missing(L, sku, "spec.specificSkuProperties", "instanceProperties");
		return;
	}
	stack_check_keys(L, props, path, props_keys, ARRAY_SIZE(props_keys));
	if (stack_get_str(&s, &mv, L, props, path, "machineType", 1)) {
		if (!stack_names_rfc1035_valid(s))
			stack_err(L, mv, "%s.machineType: \"%s\" is not a machine type (like \"a3-highgpu-8g\")", path, s);
		else
			f->machine_type = stack_dup_opt(L, s);
	}
	read_accelerators(L, f, props, path);
	if (f->machine_type && L->nerr == before)
		check_shape(L, f, mv, props);
}

static int read_future(struct stack_future *f, struct loader *L, const struct ynode *doc, struct seen *seen,
		       size_t *nseen)
{
	const struct ynode *v;
	const char *name, *s;
	int mode = 1;

	name = stack_read_name(L, doc, &kind_future);
	stack_check_keys(L, doc, "", future_keys, ARRAY_SIZE(future_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&f->d, L, kind_future.prefix, name, doc) < 0)
		return -1;
	if (stack_get_str(&s, &v, L, doc, "", "zone", 1)) {
		if (!stack_names_zone_valid(s))
			stack_err(L, v, "zone: \"%s\" is not a zone (like \"us-central1-a\")", s);
		else
			f->zone = stack_dup_opt(L, s);
	}
	if (!stack_get_value(doc, "mode"))
		stack_get_missing(L, doc, "", "mode");
	else
		(void)stack_get_enum(&mode, L, doc, "mode", modes, ARRAY_SIZE(modes));
	f->calendar = mode == 1;
	read_window(L, f, doc);
	read_spec(L, f, doc);
	(void)stack_get_bool(&f->protect, L, doc, "", "protect");
	if (stack_get_str(&s, &v, L, doc, "", "description", 0))
		f->description = stack_dup_opt(L, s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The row's loader slots and the accessors */

const struct stack_future *stack_futures(const struct stack *st, size_t *n)
{
	const struct stack_kind_decls *s = stack_slot_c(st, &kind_future);

	if (n)
		*n = s->n;
	return s->items;
}

const struct stack_future *stack_find_future(const struct stack *st, const char *name)
{
	return (const struct stack_future *)stack_find_in(st, &kind_future, name);
}

int kind_future_load_alloc(struct load_pass *B, size_t n)
{
	struct stack_kind_decls *s = stack_slot(B->st, &kind_future);

	s->items = calloc(n + 1, sizeof(struct stack_future));
	return s->items ? 0 : -1;
}

int kind_future_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct stack_kind_decls *slot = stack_slot(B->st, &kind_future);
	struct stack_future *f = (struct stack_future *)slot->items + slot->n++;

	return read_future(f, B->L, doc, B->seen, &B->nseen);
}

void kind_future_decl_release(struct stack_kind_decls *slot)
{
	struct stack_future *f = slot->items;

	for (size_t i = 0; i < slot->n; i++)
		future_release(&f[i]);
	free(slot->items);
}

/* The canonical form: keys sorted, times as ms, counts as strings. */
static int hash_future(struct vx_buf *b, struct stack_future *f)
{
	int rc = vx_buf_adds(b, "{\"accelerator\":");

	if (rc == 0)
		rc = f->accelerator ? vx_buf_add_json_str(b, f->accelerator) : vx_buf_adds(b, "null");
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"acceleratorCount\":\"%" PRId64 "\",\"address\":", f->accelerator_count);
	if (rc == 0)
		rc = vx_buf_add_json_str(b, f->d.address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"closingLeadMs\":\"%" PRId64 "\"", f->closing_lead_ms);
	if (rc == 0)
		rc = stack_json_kv(b, "description", f->description);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"endMs\":\"%" PRId64 "\"", f->end_ms);
	if (rc == 0)
		rc = stack_json_kv(b, "machineType", f->machine_type);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"mode\":\"%s\",\"protect\":%s,\"startMs\":\"%" PRId64 "\",\"totalCount\":\"%" PRId64 "\"", f->calendar ? "calendar" : "default",
				   f->protect ? "true" : "false", f->start_ms, f->total_count);
	if (rc == 0)
		rc = stack_json_kv(b, "zone", f->zone);
	return rc ? rc : stack_decl_hash(b, &f->d);
}

int kind_future_decl_hash(struct stack *st)
{
	struct stack_kind_decls *slot = stack_slot(st, &kind_future);
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < slot->n && rc == 0; i++)
		rc = hash_future(&b, (struct stack_future *)slot->items + i);
	vx_buf_release(&b);
	return rc;
}
