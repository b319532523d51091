#ifndef VX_TEST_FAKEGCS_H
#define VX_TEST_FAKEGCS_H

/*
 * The fake Google Cloud (tests/fakegcp/fakegcp.py, run with python3 from
 * the repository root, where make runs the unit tests) as a Cloud Storage
 * server for the state tests that run on the gcs backend: started once per
 * test binary, on a free loopback port, accepting the access token
 * "test-token" only; an HTTP layer on a real clock (its retries really
 * wait, a few ms) and a storage client on it.
 *
 * Each backend opened with fakegcs_open gets a prefix of its own unless
 * it asks for the same one as another (same), so tests need no reset.
 * Failures to start fail the test through cmocka's asserts.
 */

#include <sys/types.h>

#include "providers/gcp/storage.h"
#include "util/ctx.h"

struct blob_store;
struct gcp_http;
struct state_backend;

struct fakegcs {
	pid_t pid;
	char dir[64];           /* temporary directory: ready file, state file, log */
	char url[128];          /* http://127.0.0.1:PORT */
	char base[160];         /* url + "/storage/v1/" */
	char upload[176];       /* url + "/upload/storage/v1/" */
	struct vx_ctx ctx;      /* the HTTP layer's: real clock */
	struct gcp_http *http;
	struct storage_client sc;
	unsigned prefixes;      /* prefixes handed out so far */
};

/* Starts the fake and waits (polling for its ready file) until it listens. */
struct fakegcs *fakegcs_start(void);

/* Stops the fake (SIGTERM, then waits for it) and removes its directory. */
void fakegcs_stop(struct fakegcs *g);

/* A fresh object prefix "tN" (N counts up), in out (at least 16 bytes). */
void fakegcs_new_prefix(struct fakegcs *g, char *out, size_t n);

/* A new blob store (state/blobstore.h) on the fake's storage client. Free with blob_store_free,
 * or give it to state_gcs_open, which owns it from then on. */
struct blob_store *fakegcs_store(struct fakegcs *g);

/*
 * Opens the gcs backend of stack "research" in bucket "vx-unit" under
 * prefix on ctx (the test's clock; the HTTP layer keeps its own). Fails
 * the test when it cannot. Free with state_backend_free.
 */
struct state_backend *fakegcs_open(struct fakegcs *g, const struct vx_ctx *ctx,
				   const char *prefix);

#endif
