/* Unit tests for reconcile/provider.c: how a call finds the provider that implements an
 * operation, through providers that wrap others (struct provider's inner). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/provider_quota.h"
#include "util/err.h"

/* Which provider a call reached, and as which p. */
static struct provider *called_on;
static const char *called_fn;

static int base_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
		       struct vx_err *err)
{
	(void)name;
	(void)fence;
	(void)err;
	called_on = p;
	called_fn = "base_cancel";
	return 0;
}

static int base_get(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		    struct vx_err *err)
{
	(void)name;
	(void)out;
	(void)spec_json;
	(void)err;
	called_on = p;
	called_fn = "base_get";
	return 0;
}

static int wrap_get(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		    struct vx_err *err)
{
	(void)name;
	(void)out;
	(void)spec_json;
	(void)err;
	called_on = p;
	called_fn = "wrap_get";
	return 0;
}

static int wrap_create(struct provider *p, const struct provider_job_request *req, struct live_job *out,
		       struct vx_err *err)
{
	(void)req;
	(void)out;
	(void)err;
	called_on = p;
	called_fn = "wrap_create";
	return 0;
}

/* The base serves jobs (cancel, get) only; the wrapper changes get and names a create the base
 * lacks; the outer wrapper changes nothing. */
static const struct provider_job_ops base_jobs = { .cancel = base_cancel, .get = base_get };
static const struct provider_table base_tables[] = { { &provider_kind_job, &base_jobs } };
static const struct provider_job_ops wrap_jobs = { .get = wrap_get, .create = wrap_create };
static const struct provider_table wrap_tables[] = { { &provider_kind_job, &wrap_jobs } };

static void chain(struct provider *base, struct provider *wrap, struct provider *outer)
{
	memset(base, 0, sizeof(*base));
	memset(wrap, 0, sizeof(*wrap));
	memset(outer, 0, sizeof(*outer));
	PROVIDER_SET_TABLES(base, base_tables);
	PROVIDER_SET_TABLES(wrap, wrap_tables);
	wrap->inner = base;
	outer->inner = wrap;
}

/* An operation a wrapper changes runs on that wrapper; one it leaves is the wrapped one's,
 * called with the wrapped provider as p, through any number of wrappers. */
static void test_calls_reach_the_implementing_provider(void **unused)
{
	struct provider base, wrap, outer;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	chain(&base, &wrap, &outer);
	assert_int_equal(provider_job_get(&outer, "n", NULL, NULL, &err), 0);
	assert_ptr_equal(called_on, &wrap);
	assert_string_equal(called_fn, "wrap_get");
	assert_int_equal(provider_job_cancel(&outer, "n", NULL, &err), 0);
	assert_ptr_equal(called_on, &base);
	assert_string_equal(called_fn, "base_cancel");
	assert_int_equal(provider_job_get(&base, "n", NULL, NULL, &err), 0);
	assert_ptr_equal(called_on, &base);
	assert_string_equal(called_fn, "base_get");
}

/* A wrapper lacks what it wraps lacks, whatever its own table says; a kind no provider of the
 * chain serves is lacking too, and calling it is an error, not a crash. */
static void test_what_inner_lacks_the_wrapper_lacks(void **unused)
{
	struct provider base, wrap, outer, *impl = &base;
	struct vx_err err = VX_ERR_INIT;
	struct live_quotas qs;

	(void)unused;
	chain(&base, &wrap, &outer);
	assert_true(PROVIDER_HAS(&outer, job, get));
	assert_true(PROVIDER_HAS(&outer, job, cancel));
	assert_false(PROVIDER_HAS(&wrap, job, create));
	assert_false(PROVIDER_HAS(&outer, job, create));
	assert_false(PROVIDER_HAS(&outer, job, list));
	assert_false(PROVIDER_HAS(&outer, quota, list));
	assert_null(provider_find(&outer, &provider_kind_job, offsetof(struct provider_job_ops, create), &impl));
	assert_null(impl);
	called_fn = NULL;
	assert_int_equal(provider_job_create(&outer, NULL, NULL, &err), VX_EINVAL);
	assert_null(called_fn);
	assert_string_equal(vx_err_msg(&err), "the provider has no create operation for jobs");
	vx_err_release(&err);
	memset(&qs, 0, sizeof(qs));
	assert_int_equal(provider_quota_list(&outer, "p", &qs, &err), VX_EINVAL);
	assert_string_equal(vx_err_msg(&err), "the provider has no list operation for quota preferences");
	vx_err_release(&err);
	assert_false(PROVIDER_HAS((struct provider *)NULL, job, get));
}

/* A wrapper whose inner changes (a provider made anew) calls the new one. */
static void test_inner_may_change(void **unused)
{
	struct provider base, wrap, outer, base2;
	struct vx_err err = VX_ERR_INIT;

	(void)unused;
	chain(&base, &wrap, &outer);
	memset(&base2, 0, sizeof(base2));
	PROVIDER_SET_TABLES(&base2, base_tables);
	wrap.inner = &base2;
	assert_int_equal(provider_job_cancel(&outer, "n", NULL, &err), 0);
	assert_ptr_equal(called_on, &base2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_reach_the_implementing_provider),
		cmocka_unit_test(test_what_inner_lacks_the_wrapper_lacks),
		cmocka_unit_test(test_inner_may_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
