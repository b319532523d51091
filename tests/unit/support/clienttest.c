/* The REST client tests' shared fixture: see clienttest.h. */
#include "tests/unit/support/clienttest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "tests/unit/support/httpd.h"
#include "util/buf.h"
#include "util/err.h"

#include "util/banned.h"

static int64_t fx_now(void *ud)
{
	return vx_clock_real_now_ms(NULL) + ((struct clienttest *)ud)->offset;
}

static int64_t fx_mono(void *ud)
{
	return vx_clock_real_mono_ms(NULL) + ((struct clienttest *)ud)->offset;
}

static void fx_sleep(void *ud, int64_t ms)
{
	struct clienttest *t = ud;

	if (t->nsleeps < 64)
		t->sleeps[t->nsleeps++] = ms;
	t->offset += ms;
}

static int tok_get(void *ud, char **out, struct vx_err *err)
{
	(void)ud;
	(void)err;
	*out = strdup("test-token");
	return *out ? 0 : VX_ENOMEM;
}

static void tok_invalidate(void *ud)
{
	(void)ud;
}

static const struct gcp_token_source tokens = { tok_get, tok_invalidate, NULL };

static void log_sink(void *ud, int level, const char *msg)
{
	struct clienttest *t = ud;
	char *line = vx_asprintf("%s%s: %s\n", t->log ? t->log : "", level == VX_LOG_ERROR ? "error" : "warn", msg);

	assert_non_null(line);
	free(t->log);
	t->log = line;
}

void *clienttest_new(size_t size, const char *base_path)
{
	struct clienttest *t;
	struct gcp_http_options o;
	struct vx_err err = VX_ERR_INIT;

	assert_true(size >= sizeof(*t));
	t = calloc(1, size);
	assert_non_null(t);
	assert_int_equal(httpd_start(&t->s), 0);
	vx_ctx_init(&t->ctx);
	t->ctx.clock.now_ms = fx_now;
	t->ctx.clock.mono_ms = fx_mono;
	t->ctx.clock.sleep_ms = fx_sleep;
	t->ctx.clock.ud = t;
	t->ctx.seed = 7;
	t->ctx.log = log_sink;
	t->ctx.log_ud = t;
	memset(&o, 0, sizeof(o));
	o.max_attempts = 3;
	o.backoff_initial_ms = 1;
	o.backoff_max_ms = 2;
	o.timeout_ms = 5000;
	o.rate_per_minute = -1;
	o.create_rate_per_minute = -1;
	assert_int_equal(gcp_http_new(&t->h, &t->ctx, &o, &tokens, &err), 0);
	snprintf(t->base, sizeof(t->base), "%s%s", httpd_url(t->s), base_path);
	return t;
}

int clienttest_teardown(void **state)
{
	struct clienttest *t = *state;

	gcp_http_free(t->h);
	httpd_stop(t->s);
	free(t->log);
	free(t);
	return 0;
}

const struct httpd_request *clienttest_req(struct clienttest *t, size_t i)
{
	const struct httpd_request *r = httpd_request(t->s, i);

	assert_non_null(r);
	return r;
}
