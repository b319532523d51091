#ifndef VX_TEST_CLIENTTEST_H
#define VX_TEST_CLIENTTEST_H

/*
 * The fixture the REST client tests share (test_vertex, test_compute,
 * test_quotas, test_storage): a scripted server (support/httpd.h), an HTTP
 * layer that authenticates with the token "test-token", makes at most 3
 * attempts with 1-2 ms backoff, 5 s per attempt and no rate limit, and a
 * ctx (seed 7, logging warnings and errors into log) whose clock is the real one plus an offset: sleeps do not
 * wait, they advance the offset and are recorded in sleeps[].
 *
 * A test's fixture starts with a struct clienttest and adds its client;
 * CLIENTTEST_FIXTURE(struct vertex_client, "/v1/") defines both that
 * struct fx and its setup:
 *
 *	CLIENTTEST_FIXTURE(struct vertex_client, "/v1/")
 *	... cmocka_unit_test_setup_teardown(test_x, setup, clienttest_teardown) ...
 *
 * Failures to set up fail the test through cmocka's asserts.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/ctx.h"

struct gcp_http;
struct httpd;
struct httpd_request;

/* The header line a JSON answer carries, for httpd_respond. */
#define CLIENTTEST_JSON_HDR "Content-Type: application/json\r\n"

struct clienttest {
	struct httpd *s;
	struct gcp_http *h;
	struct vx_ctx ctx;
	char base[160];      /* httpd_url(s) + the base path given to clienttest_new */
	int64_t offset;      /* virtual time added to the real clock, in ms */
	int64_t sleeps[64];  /* the first 64 sleeps asked for, in ms */
	int nsleeps;
	char *log;           /* every line logged at WARN or above, "warn: msg\n" each; NULL when none */
};

/*
 * Allocates a zeroed fixture of size bytes (at least a struct clienttest,
 * which it must start with), starts the server and the HTTP layer and sets
 * base. Never returns NULL. Free with clienttest_teardown.
 */
void *clienttest_new(size_t size, const char *base_path);

/*
 * struct fx { struct clienttest t; client_type c; } and a cmocka setup()
 * that makes one with the client's http, ctx and base_url (base_path under
 * the server) filled in. client_type has those three members.
 */
#define CLIENTTEST_FIXTURE(client_type, base_path)                        \
	struct fx {                                                       \
		struct clienttest t; /* first: clienttest_teardown frees the fixture */ \
		client_type c;                                            \
	};                                                                \
                                                                          \
	static int setup(void **state)                                    \
	{                                                                 \
		struct fx *f = clienttest_new(sizeof(*f), base_path);     \
                                                                          \
		f->c.http = f->t.h;                                       \
		f->c.ctx = &f->t.ctx;                                     \
		f->c.base_url = f->t.base;                                \
		*state = f;                                               \
		return 0;                                                 \
	}

/* A cmocka teardown: stops what clienttest_new started and frees *state. */
int clienttest_teardown(void **state);

/* The i-th request the server recorded; fails the test when there is none. */
const struct httpd_request *clienttest_req(struct clienttest *t, size_t i);

#endif
