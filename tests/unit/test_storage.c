/* Unit tests for providers/gcp/storage: read (metadata, then the media at that
 * generation), multipart write and delete with ifGenerationMatch, 412 as a
 * conflict, compose, escaped object names, and the metadata parser on hostile JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "providers/gcp/storage.h"
#include "tests/unit/support/clienttest.h"
#include "tests/unit/support/httpd.h"
#include "util/ctx.h"
#include "util/err.h"

/* ---- fixture: support/clienttest.h, with the client under test ---- */

struct fx {
	struct clienttest t; /* first: clienttest_teardown frees the fixture */
	struct storage_client c;
	char upload[160];
};

static int setup(void **state)
{
	struct fx *f = clienttest_new(sizeof(*f), "/storage/v1/");

	snprintf(f->upload, sizeof(f->upload), "%s/upload/storage/v1/", httpd_url(f->t.s));
	f->c.http = f->t.h;
	f->c.ctx = &f->t.ctx;
	f->c.base_url = f->t.base;
	f->c.upload_url = f->upload;
	*state = f;
	return 0;
}

static const char meta17[] =
	"{\"kind\":\"storage#object\",\"id\":\"bkt/state/x.json/17\",\"name\":\"state/x.json\",\"bucket\":\"bkt\","
	"\"generation\":\"17\",\"metageneration\":\"1\",\"contentType\":\"application/json\",\"size\":\"11\","
	"\"md5Hash\":\"abc=\",\"crc32c\":\"def=\",\"etag\":\"CBE=\"}";

static void test_read_metadata_then_media(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *data = NULL;
	size_t len = 0;
	int64_t gen = 0;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, meta17, 0);
	httpd_respond(f->t.s, 200, "Content-Type: application/octet-stream\r\n", "{\"serial\":1}", 0);
	assert_int_equal(storage_object_read(&f->c, "bkt", "state/x.json", &data, &len, &gen, &err), 0);
	assert_int_equal(gen, 17);
	assert_int_equal(len, 12);
	assert_string_equal(data, "{\"serial\":1}");
	assert_string_equal(httpd_request(f->t.s, 0)->method, "GET");
	assert_string_equal(httpd_request(f->t.s, 0)->target, "/storage/v1/b/bkt/o/state%2Fx.json");
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/storage/v1/b/bkt/o/state%2Fx.json?alt=media&ifGenerationMatch=17");
	assert_string_equal(httpd_header(httpd_request(f->t.s, 1), "Authorization"), "Bearer test-token");
	free(data);
	vx_err_release(&err);
}

static void test_read_starts_over_when_replaced(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	char *data = NULL;
	size_t len = 0;
	int64_t gen = 0;

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, meta17, 0);
	httpd_respond(f->t.s, 412, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":412,\"message\":\"At least one of the pre-conditions you specified did not hold.\"}}", 0);
	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"state/x.json\",\"generation\":\"18\"}", 0);
	httpd_respond(f->t.s, 200, NULL, "", 0);
	assert_int_equal(storage_object_read(&f->c, "bkt", "state/x.json", &data, &len, &gen, &err), 0);
	assert_int_equal(gen, 18);
	assert_int_equal(len, 0);
	assert_string_equal(data, "");
	assert_string_equal(httpd_request(f->t.s, 3)->target,
			    "/storage/v1/b/bkt/o/state%2Fx.json?alt=media&ifGenerationMatch=18");
	free(data);

	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"No such object: bkt/state/missing.json\"}}", 0);
	assert_int_equal(storage_object_read(&f->c, "bkt", "state/missing.json", &data, &len, &gen, &err), VX_ENOTFOUND);
	assert_null(data);
	assert_non_null(strstr(err.msg, "storage: reading gs://bkt/state/missing.json: NOT_FOUND: No such object"));
	assert_int_equal(storage_object_read(&f->c, "B!", "x", &data, &len, &gen, &err), VX_EINVAL);
	assert_int_equal(httpd_request_count(f->t.s), 5);
	vx_err_release(&err);
}

static void test_write_multipart_exact(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;
	const char *ct, *b;
	char want[512];
	int64_t gen = 0;
	static const char data[] = "{\"serial\":2}";

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"state/x.json\",\"generation\":\"1700000000000001\"}", 0);
	assert_int_equal(storage_object_write(&f->c, "bkt", "state/x.json", data, strlen(data), NULL, 0, &gen, &err), 0);
	assert_int_equal(gen, 1700000000000001LL);
	r = httpd_request(f->t.s, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/upload/storage/v1/b/bkt/o?uploadType=multipart&name=state%2Fx.json&ifGenerationMatch=0");
	ct = httpd_header(r, "Content-Type");
	assert_non_null(ct);
	assert_memory_equal(ct, "multipart/related; boundary=", 28);
	b = ct + 28;
	snprintf(want, sizeof(want),
		 "--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{\"contentType\":\"application/json\"}\r\n"
		 "--%s\r\nContent-Type: application/json\r\n\r\n{\"serial\":2}\r\n--%s--\r\n", b, b, b);
	assert_string_equal(r->body, want);

	/* Compare-and-swap lost: 412 is a conflict. */
	httpd_respond(f->t.s, 412, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":412,\"message\":\"precondition\"}}", 0);
	assert_int_equal(storage_object_write(&f->c, "bkt", "state/x.json", data, strlen(data), "text/plain", 5, NULL,
					      &err), VX_ECONFLICT);
	assert_string_equal(httpd_request(f->t.s, 1)->target,
			    "/upload/storage/v1/b/bkt/o?uploadType=multipart&name=state%2Fx.json&ifGenerationMatch=5");
	assert_non_null(strstr(httpd_request(f->t.s, 1)->body, "\r\nContent-Type: text/plain\r\n"));
	assert_non_null(strstr(err.msg, "storage: writing gs://bkt/state/x.json: "));

	/* No precondition: no query parameter, and never resent. */
	httpd_respond(f->t.s, 503, CLIENTTEST_JSON_HDR, "{}", 0);
	httpd_set_default(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"generation\":\"3\"}", 0);
	assert_int_equal(storage_object_write(&f->c, "bkt", "a b", "x", 1, NULL, STORAGE_ANY_GENERATION, &gen, &err),
			 VX_EUNCERTAIN);
	assert_string_equal(httpd_request(f->t.s, 2)->target, "/upload/storage/v1/b/bkt/o?uploadType=multipart&name=a%20b");
	assert_int_equal(httpd_request_count(f->t.s), 3);
	vx_err_release(&err);
}

static void test_compose_exact(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;
	const struct httpd_request *r;
	int64_t gen = 0;
	const struct storage_compose_source src[] = {
		{ .name = "p/parts/h", .generation = 12 },
		{ .name = "p/state.json", .generation = 1700000000000001LL },
		{ .name = "p/parts/tail", .generation = 0 },
	};

	httpd_respond(f->t.s, 200, CLIENTTEST_JSON_HDR, "{\"name\":\"p/history/0000000002.json\",\"generation\":\"99\"}", 0);
	assert_int_equal(storage_object_compose(&f->c, "bkt", "p/history/0000000002.json", src, 3, NULL, 0, &gen,
						&err), 0);
	assert_int_equal(gen, 99);
	r = httpd_request(f->t.s, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->target, "/storage/v1/b/bkt/o/p%2Fhistory%2F0000000002.json/compose?ifGenerationMatch=0");
	assert_string_equal(httpd_header(r, "Content-Type"), "application/json");
	/* Each source at its generation (0: its current one); the destination's type. */
	assert_string_equal(r->body, "{\"sourceObjects\":[{\"name\":\"p/parts/h\",\"generation\":\"12\"},"
			    "{\"name\":\"p/state.json\",\"generation\":\"1700000000000001\"},"
			    "{\"name\":\"p/parts/tail\"}],\"destination\":{\"contentType\":\"application/json\"}}");
	/* It exists already: a conflict; a source gone: not found. */
	httpd_respond(f->t.s, 412, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":412,\"message\":\"precondition\"}}", 0);
	assert_int_equal(storage_object_compose(&f->c, "bkt", "d", src, 3, NULL, 0, &gen, &err), VX_ECONFLICT);
	vx_err_release(&err);
	httpd_respond(f->t.s, 404, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":404,\"message\":\"Object p/state.json "
		      "(generation: 1700000000000001) not found.\"}}", 0);
	assert_int_equal(storage_object_compose(&f->c, "bkt", "d", src, 3, NULL, 0, &gen, &err), VX_ENOTFOUND);
	assert_non_null(strstr(err.msg, "storage: composing gs://bkt/d: "));
	vx_err_release(&err);
	/* Checked before anything is sent: no source, too many, a bad name. */
	assert_int_equal(storage_object_compose(&f->c, "bkt", "d", src, 0, NULL, 0, &gen, &err), VX_EINVAL);
	vx_err_release(&err);
	assert_int_equal(storage_object_compose(&f->c, "bkt", "d", src, 33, NULL, 0, &gen, &err), VX_EINVAL);
	vx_err_release(&err);
	assert_int_equal(httpd_request_count(f->t.s), 3);
}

static void test_delete_exact(void **state)
{
	struct fx *f = *state;
	struct vx_err err = VX_ERR_INIT;

	httpd_respond(f->t.s, 204, NULL, NULL, 0);
	assert_int_equal(storage_object_delete(&f->c, "bkt", "state/x.json", 1700000000000001LL, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 0)->method, "DELETE");
	assert_string_equal(httpd_request(f->t.s, 0)->target,
			    "/storage/v1/b/bkt/o/state%2Fx.json?ifGenerationMatch=1700000000000001");
	httpd_respond(f->t.s, 412, CLIENTTEST_JSON_HDR, "{\"error\":{\"code\":412,\"message\":\"precondition\"}}", 0);
	assert_int_equal(storage_object_delete(&f->c, "bkt", "state/x.json", 3, &err), VX_ECONFLICT);
	httpd_respond(f->t.s, 204, NULL, NULL, 0);
	assert_int_equal(storage_object_delete(&f->c, "bkt", "x", STORAGE_ANY_GENERATION, &err), 0);
	assert_string_equal(httpd_request(f->t.s, 2)->target, "/storage/v1/b/bkt/o/x");
	vx_err_release(&err);
}

static void test_parse_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "null", "[]", "{", "{}", "{\"generation\":17}", "{\"generation\":\"-1\"}", "{\"generation\":\"1x\"}",
		"{\"generation\":\"99999999999999999999\"}", "{\"generation\":1e300}", "{\"generation\":{}}",
		"{\"generation\":\"5\",\"name\":[],\"size\":\"big\",\"metageneration\":-3}",
	};
	struct storage_object o = STORAGE_OBJECT_INIT;
	struct vx_err err = VX_ERR_INIT;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		rc = storage_object_parse_json(bodies[i], strlen(bodies[i]), &o, &err);
		assert_true(rc == 0 || rc == VX_EINVAL);
		storage_object_release(&o);
	}
	assert_int_equal(storage_object_parse_json(bodies[4], 2, &o, &err), VX_EINVAL);
	assert_string_equal(err.msg, "storage: reading object metadata: no valid generation");
	assert_int_equal(storage_object_parse_json(bodies[5], strlen(bodies[5]), &o, &err), 0);
	assert_int_equal(o.generation, 17);
	storage_object_release(&o);
	assert_int_equal(storage_object_parse_json(bodies[8], strlen(bodies[8]), &o, &err), VX_EINVAL);
	assert_int_equal(storage_object_parse_json(bodies[11], strlen(bodies[11]), &o, &err), 0);
	assert_int_equal(o.generation, 5);
	assert_null(o.name);
	assert_int_equal(o.size, 0);
	assert_int_equal(o.metageneration, 0);
	storage_object_release(&o);
	vx_err_release(&err);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, clienttest_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_read_metadata_then_media),
		T(test_read_starts_over_when_replaced),
		T(test_write_multipart_exact),
		T(test_delete_exact),
		T(test_compose_exact),
		cmocka_unit_test(test_parse_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
