/* Unit tests for reconcile/kind_quota.c's plan: what a recorded preference
 * plans as from what Cloud Quotas says of it. Cloud Quotas gives no
 * grantedValue while a request is reconciling: such a preference is
 * pending, never done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/kind.h"
#include "reconcile/kind_quota.h"
#include "reconcile/plan.h"
#include "reconcile/planner.h"
#include "reconcile/provider.h"
#include "reconcile/provider_quota.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/diag.h"
#include "util/err.h"

/* 2026-01-01T00:00:00Z */
#define T0 1767225600000LL
#define MIN 60000LL

static const char STACK[] = "kind: Stack\nname: s\nproject: my-proj\nregion: us-central1\n";
static const char QUOTA[] =
	"---\nkind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
	"quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: us-central1}\n"
	"preferredValue: 16\ncontactEmail: ml@example.com\n";

struct fx {
	struct stack *st;
	struct state state;
	struct live_quotas quotas;
	struct live_quota *l;     /* the live preference, as the test sets it */
	struct planner pl;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct stack_source src[] = { { "q.yaml", QUOTA, sizeof(QUOTA) - 1 }, { "stack.yaml", STACK, sizeof(STACK) - 1 } };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct state_record *r;
	struct state_run run;
	struct live_quota l;

	assert_non_null(f);
	assert_int_equal(stack_load_mem(&f->st, "t", src, 2, NULL, &d, &err), 0);
	vx_diags_release(&d);
	f->state.stack = strdup("s");
	f->state.lineage = strdup("0123456789abcdef-0000-4000-8000-000000000000");
	f->state.serial = 3;
	/* applied before: the record's current run asked for 16 */
	assert_int_equal(state_add_record(&f->state, "quota.l4", "QuotaPreference", &r, &err), 0);
	memset(&run, 0, sizeof(run));
	run.resource = strdup("projects/1/locations/global/quotaPreferences/l4");
	run.region = strdup("global");
	run.action = strdup("create");
	run.state = strdup("RECONCILING");
	run.value = 16;
	run.has_value = 1;
	assert_int_equal(state_record_start_run(r, &run, &err), 0);
	memset(&l, 0, sizeof(l));
	l.name = (char *)(uintptr_t)"projects/1/locations/global/quotaPreferences/l4";
	l.id = (char *)(uintptr_t)"l4";
	l.service = (char *)(uintptr_t)"aiplatform.googleapis.com";
	l.quota_id = (char *)(uintptr_t)"CustomModelTrainingL4GPUsPerProjectPerRegion";
	l.preferred = 16;
	assert_int_equal(live_quotas_push(&f->quotas, &l), 0);
	f->l = &f->quotas.items[0];
	vx_err_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	planner_release(&f->pl);
	live_quotas_release(&f->quotas);
	state_release(&f->state);
	stack_free(f->st);
	free(f);
	return 0;
}

/* Plans at now_ms; the one action, for quota.l4. */
static const struct plan_action *plan(struct fx *f, int64_t now_ms)
{
	struct live_set live;
	struct planner_options o;
	struct vx_err err = VX_ERR_INIT;

	memset(&live, 0, sizeof(live));
	live.of[kind_index(&kind_quota)] = &f->quotas;
	memset(&o, 0, sizeof(o));
	o.now_ms = now_ms;
	planner_release(&f->pl);
	assert_int_equal(planner_run(&f->pl, f->st, &f->state, &live, &o, &err), 0);
	assert_int_equal(f->pl.plan.errors.n, 0);
	assert_int_equal(f->pl.plan.n, 1);
	assert_string_equal(f->pl.plan.actions[0].address, "quota.l4");
	vx_err_release(&err);
	return &f->pl.plan.actions[0];
}

/* Reconciling without grantedValue: pending, with what was asked and since when. */
static void test_reconciling_without_grant_is_pending(void **state)
{
	struct fx *f = *state;
	const struct plan_action *a;

	f->l->reconciling = 1;
	f->l->requested_ms = T0;
	a = plan(f, T0 + 125 * MIN);
	assert_int_equal(a->op, PLAN_PENDING);
	assert_string_equal(a->reason, "16 requested, pending for 2h05m: nothing granted yet (Google has not decided)");
	assert_int_equal(a->old_value, 16);
	assert_int_equal(a->new_value, 16);
	assert_false(plan_has_changes(&f->pl.plan));
	/* no clock, or no time from Google: the wait is left out, not made up */
	a = plan(f, 0);
	assert_string_equal(a->reason, "16 requested, pending: nothing granted yet (Google has not decided)");
	f->l->requested_ms = 0;
	a = plan(f, T0);
	assert_string_equal(a->reason, "16 requested, pending: nothing granted yet (Google has not decided)");
}

/* Reconciling with less granted: pending, both values; decided short: noop with the values; in full: noop. */
static void test_granted_and_decided(void **state)
{
	struct fx *f = *state;
	const struct plan_action *a;

	f->l->reconciling = 1;
	f->l->has_granted = 1;
	f->l->granted = 8;
	f->l->requested_ms = T0;
	a = plan(f, T0 + 3 * MIN);
	assert_int_equal(a->op, PLAN_PENDING);
	assert_string_equal(a->reason, "8 granted, 16 requested, pending for 3m00s");
	f->l->reconciling = 0;
	f->l->state_detail = (char *)(uintptr_t)"partially approved";
	a = plan(f, T0);
	assert_int_equal(a->op, PLAN_NOOP);
	assert_string_equal(a->reason, "8 granted, 16 requested, not granted in full: partially approved");
	f->l->state_detail = NULL;
	f->l->granted = 16;
	a = plan(f, T0);
	assert_int_equal(a->op, PLAN_NOOP);
	assert_null(a->reason);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reconciling_without_grant_is_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_granted_and_decided, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
