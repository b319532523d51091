/* Unit tests for reconcile/kind.c's table: the one list of the kinds, and
 * what the rest of vx derives from it (the address parser, the stack's
 * declarations, the state layer's folders). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/permissions.h"
#include "reconcile/kind.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/kind_quota.h"
#include "reconcile/kind_job.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

/*
 * The state layer names no kind (it sits below reconcile/): it files a
 * record by one rule, its address prefix and an "s". Every kind of the
 * table goes through that rule to its folder, and back.
 */
static void test_state_folders_follow_the_rule(void **unused)
{
	(void)unused;
	for (size_t k = 0; k < kind_count; k++) {
		char address[64], folder[64], dir[STATE_DIR_SIZE];
		const char *name = NULL;

		snprintf(address, sizeof(address), "%s.x", kind_table[k]->prefix);
		snprintf(folder, sizeof(folder), "%ss", kind_table[k]->prefix);
		assert_true(state_prefix_ok(kind_table[k]->prefix, strlen(kind_table[k]->prefix)));
		assert_int_equal(state_address_split(address, dir, &name, NULL), 0);
		assert_string_equal(dir, folder);
		assert_string_equal(name, "x");
		assert_int_equal(state_dir_prefix(folder), strlen(kind_table[k]->prefix));
	}
}

/* Whether a row of the permission table serves kind: what vx doctor checks for it. */
static int has_permission_rows(const char *kind)
{
	size_t n;
	const struct gcp_permission *t = gcp_permissions(&n);

	for (size_t i = 0; i < n; i++)
		if (gcp_permission_serves(&t[i], kind))
			return 1;
	return 0;
}

/* Each row is whole, and names and prefixes are each one kind's. */
static void test_rows(void **unused)
{
	(void)unused;
	assert_true(kind_count > 0 && kind_count <= KIND_MAX);
	for (size_t k = 0; k < kind_count; k++) {
		const struct kind *a = kind_table[k];
		char address[64];

		assert_non_null(a->name);
		assert_non_null(a->prefix);
		/* its declarations: found through its own slots, or in its slot of the stack */
		assert_true(a->decl_size || (a->find_decl && a->count_decls && a->decl_at));
		assert_non_null(a->refresh);
		assert_non_null(a->plan);
		assert_non_null(a->apply);
		assert_non_null(a->noun);
		assert_non_null(a->noun_plural);
		assert_true(has_permission_rows(a->name));
		assert_ptr_equal(kind_by_name(a->name), a);
		snprintf(address, sizeof(address), "%s.x", a->prefix);
		assert_ptr_equal(kind_of_address(address), a);
		assert_null(kind_of_address(a->prefix));
	}
	assert_null(kind_of_address("bucket.x"));
	assert_null(kind_of_address("stack.x"));
	assert_null(kind_by_name("Stack"));
}

static struct stack *load(const char *yaml)
{
	struct stack_source src[] = { { "stack.yaml", yaml, strlen(yaml) } };
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;

	assert_int_equal(stack_load_mem(&st, "t", src, 1, NULL, &diags, &err), 0);
	assert_int_equal(vx_diags_count(&diags), 0);
	vx_diags_release(&diags);
	vx_err_release(&err);
	return st;
}

/* stack_find_decl goes through each row's find_decl, or the kind's slot. */
static void test_find_decl(void **unused)
{
	struct stack *st;

	(void)unused;
	st = load("kind: Stack\nname: s\nproject: my-proj\nregion: us-central1\n"
		  "---\nkind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
		  "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\n"
		  "dimensions: {region: us-central1}\npreferredValue: 16\n");
	assert_string_equal(stack_find_decl(st, "quota.l4")->name, "l4");
	assert_ptr_equal(stack_find_decl(st, "stack.s"), &st->d);
	assert_null(stack_find_decl(st, "quota.l5"));
	assert_null(stack_find_decl(st, "job.l4"));
	assert_null(stack_find_decl(st, "bucket.l4"));
	stack_free(st);
}

/* kind_count_decls and kind_decl_at list each kind's declarations, as kind_find_decl finds them. */
static void test_decls(void **unused)
{
	struct stack *st;
	size_t seen = 0;

	(void)unused;
	st = load("kind: Stack\nname: s\nproject: my-proj\nregion: us-central1\n"
		  "---\nkind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
		  "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\n"
		  "dimensions: {region: us-central1}\npreferredValue: 16\n"
		  "---\nkind: QuotaPreference\nname: h100\nservice: aiplatform.googleapis.com\n"
		  "quotaId: CustomModelTrainingH100GPUsPerProjectPerRegion\n"
		  "dimensions: {region: us-central1}\npreferredValue: 8\n");
	for (size_t k = 0; k < kind_count; k++) {
		const struct kind *a = kind_table[k];

		for (size_t i = 0; i < kind_count_decls(a, st); i++) {
			const struct stack_decl *d = kind_decl_at(a, st, i);

			assert_ptr_equal(kind_of_address(d->address), a);
			assert_ptr_equal(kind_find_decl(a, st, d->name), d);
			seen++;
		}
	}
	assert_int_equal(kind_count_decls(&kind_quota, st), 2);
	assert_int_equal(kind_count_decls(&kind_job, st), 0);
	assert_int_equal(seen, 2);
	stack_free(st);
}

/*
 * Every row reads its own documents (the loader goes through the table, and
 * struct stack has no member per kind): a reader, a hash, a release, a pass
 * of its own, and the stack's slot of the kind counts what the row lists.
 */
static void test_loader_rows(void **unused)
{
	struct stack *st;

	(void)unused;
	st = load("kind: Stack\nname: s\nproject: my-proj\nregion: us-central1\n"
		  "---\nkind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
		  "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\n"
		  "dimensions: {region: us-central1}\npreferredValue: 16\n");
	for (size_t k = 0; k < kind_count; k++) {
		const struct kind *a = kind_table[k];

		assert_non_null(a->load_read);
		assert_non_null(a->decl_hash);
		assert_non_null(a->decl_release);
		assert_int_equal(stack_count(st, a), kind_count_decls(a, st));
		assert_ptr_equal(stack_slot(st, a), &st->of[kind_index(a)]);
	}
	/* What jobs name is read first: reservations (reservationAffinity). */
	assert_true(kind_index(&kind_reservation) < kind_index(&kind_job));
	assert_int_equal(stack_count(st, &kind_quota), 1);
	assert_null(stack_slot(st, NULL));
	stack_free(st);
}

/* The lists the help texts print, jobs first; an address's NAME by its kind. */
static void test_lists(void **unused)
{
	struct vx_buf b = VX_BUF_INIT;

	(void)unused;
	assert_int_equal(kind_count, 5); /* a new kind: its place in these lists */
	assert_int_equal(kind_list_addresses(&b, ".NAME"), 0);
	assert_string_equal(vx_buf_str(&b), "job.NAME, persistent_resource.NAME, future_reservation.NAME, reservation.NAME or quota.NAME");
	vx_buf_reset(&b);
	assert_int_equal(kind_list_names(&b), 0);
	assert_string_equal(vx_buf_str(&b), "CustomJob, PersistentResource, FutureReservation, Reservation, QuotaPreference");
	vx_buf_release(&b);
	assert_string_equal(kind_address_name(&kind_job, "job.a[k=1]"), "a[k=1]");
	assert_string_equal(kind_address_name(&kind_reservation, "reservation."), "");
	assert_null(kind_address_name(&kind_job, "jobs.a"));
	assert_null(kind_address_name(&kind_job, "job"));
	assert_null(kind_address_name(&kind_job, "quota.a"));
	assert_null(kind_address_name(&kind_job, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_folders_follow_the_rule),
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_find_decl),
		cmocka_unit_test(test_decls),
		cmocka_unit_test(test_loader_rows),
		cmocka_unit_test(test_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
