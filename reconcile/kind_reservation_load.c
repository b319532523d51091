/*
 * The reservation kind's declarations: its Reservation documents read into
 * its slot of struct stack (the row's load_* slots), their canonical
 * hashes, release and lookups.
 */
#include "reconcile/kind_reservation.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/machines.h"
#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

static const char *const reservation_keys[] = { "kind", "name", "zone", "machineType",
						"accelerators", "count",
						"specificReservationRequired", "description", "protect" };
static const char *const accel_keys[] = { "type", "count" };

static void reservation_release(struct stack_reservation *r)
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
							 "mean \"%s\"?)",
						  path, type, hint);
				else
					stack_err(L, tv, "%s.type: unknown accelerator type \"%s\" (Compute "
							 "Engine names, like \"nvidia-h100-80gb\")",
						  path, type);
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

/* A well-formed zone's region against the regions vx knows (stack_regions_check). */
static int zone_region_check(struct loader *L, const struct ynode *at, const char *zone)
{
	size_t n = strlen(zone);
	char *region = vx_asprintf("%.*s", (int)(n - 2), zone);
	int rc;

	if (!region) {
		stack_oom(L);
		return -1;
	}
	rc = stack_regions_check(L, at, "zone", region, zone + n - 1);
	free(region);
	return rc;
}

static int read_reservation(struct stack_reservation *r, struct loader *L,
			    const struct ynode *doc, struct seen *seen, size_t *nseen)
{
	const struct ynode *v, *mv = NULL;
	const char *name, *s;
	size_t before = L->nerr;
	int64_t x;

	name = stack_read_name(L, doc, &kind_reservation);
	stack_check_keys(L, doc, "", reservation_keys, ARRAY_SIZE(reservation_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&r->d, L, "reservation", name, doc) < 0)
		return -1;
	if (stack_get_str(&s, &v, L, doc, "", "zone", 1)) {
		if (!stack_names_zone_valid(s))
			stack_err(L, v, "zone: \"%s\" is not a zone (like \"us-central1-a\")", s);
		else if (zone_region_check(L, v, s) == 0)
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
/* The row's loader slots and the accessors */

static size_t slot_index(void)
{
	return kind_index(&kind_reservation);
}

const struct stack_reservation *stack_reservations(const struct stack *st, size_t *n)
{
	const struct stack_kind_decls *s = &st->of[slot_index()];

	if (n)
		*n = s->n;
	return s->items;
}

const struct stack_reservation *stack_find_reservation(const struct stack *st, const char *name)
{
	return (const struct stack_reservation *)stack_find_in(st, &kind_reservation, name);
}

/* Room for the reservations and for what jobs may name of them. */
int kind_reservation_load_alloc(struct load_pass *B, size_t n)
{
	struct stack_kind_decls *s = &B->st->of[slot_index()];

	s->items = calloc(n + 1, sizeof(struct stack_reservation));
	B->sres = calloc(n + 1, sizeof(*B->sres));
	return s->items && B->sres ? 0 : -1;
}

/* A reservation, kept for the jobs when it is whole enough to be named. */
int kind_reservation_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct stack_kind_decls *slot = &B->st->of[slot_index()];
	struct stack_reservation *r = (struct stack_reservation *)slot->items + slot->n++;
	struct spec_reservation *s = &B->sres[B->nsres];

	if (read_reservation(r, B->L, doc, B->seen, &B->nseen) < 0)
		return -1;
	if (r->d.name && r->zone && r->machine_type) {
		s->name = r->d.name;
		s->zone = r->zone;
		s->machine_type = r->machine_type;
		if (r->naccelerators) {
			s->accelerator = r->accelerators[0].type;
			s->accelerator_count = r->accelerators[0].count;
		}
		B->nsres++;
	}
	return 0;
}

void kind_reservation_decl_release(struct stack_kind_decls *slot)
{
	struct stack_reservation *r = slot->items;

	for (size_t i = 0; i < slot->n; i++)
		reservation_release(&r[i]);
	free(slot->items);
}

static int hash_reservation(struct vx_buf *b, struct stack_reservation *r)
{
	int rc = vx_buf_adds(b, "{\"accelerators\":[");

	for (size_t i = 0; i < r->naccelerators && rc == 0; i++) {
		rc = vx_buf_printf(b, "%s{\"count\":\"%lld\",\"type\":", i ? "," : "",
				   (long long)r->accelerators[i].count);
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->accelerators[i].type);
		if (rc == 0)
			rc = vx_buf_addc(b, '}');
	}
	if (rc == 0)
		rc = vx_buf_adds(b, "],\"address\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->d.address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"count\":\"%lld\"", (long long)r->count);
	if (rc == 0)
		rc = stack_json_kv(b, "description", r->description);
	if (rc == 0)
		rc = stack_json_kv(b, "machineType", r->machine_type);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"specificReservationRequired\":%s",
				   r->specific_required ? "true" : "false");
	if (rc == 0)
		rc = stack_json_kv(b, "zone", r->zone);
	/* Added later: hashed only when set, so earlier declarations keep their hash. */
	if (rc == 0 && r->protect)
		rc = vx_buf_adds(b, ",\"protect\":true");
	return rc ? rc : stack_decl_hash(b, &r->d);
}

int kind_reservation_decl_hash(struct stack *st)
{
	struct stack_kind_decls *slot = &st->of[slot_index()];
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < slot->n && rc == 0; i++)
		rc = hash_reservation(&b, (struct stack_reservation *)slot->items + i);
	vx_buf_release(&b);
	return rc;
}
