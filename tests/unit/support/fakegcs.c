/* The fake's Cloud Storage for the state tests: see fakegcs.h. */
#include "tests/unit/support/fakegcs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "providers/gcp/http.h"
#include "state/backend.h"
#include "state/state_gcs.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/banned.h"

/* The one token the fake accepts: loaded from its state file at start. */
static const char fake_state[] =
	"{\"services\":{\"oauth\":{\"tokens\":{\"test-token\":"
	"{\"exp\":null,\"principal\":\"test-token\",\"kind\":\"access\"}}}}}\n";

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

static void put(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

struct fakegcs *fakegcs_start(void)
{
	struct fakegcs *g = calloc(1, sizeof(*g));
	char ready[96], state[96], logp[96];
	struct gcp_http_options o;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf url = VX_BUF_INIT;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int i, st;

	assert_non_null(g);
	snprintf(g->dir, sizeof(g->dir), "/tmp/vx-fakegcs-XXXXXX");
	assert_non_null(mkdtemp(g->dir));
	snprintf(ready, sizeof(ready), "%s/ready", g->dir);
	snprintf(state, sizeof(state), "%s/state.json", g->dir);
	snprintf(logp, sizeof(logp), "%s/fake.log", g->dir);
	put(state, fake_state);
	g->pid = fork();
	assert_true(g->pid >= 0);
	if (g->pid == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("python3", "python3", "tests/fakegcp/fakegcp.py", "--port", "0", "--ready-file",
		       ready, "--state", state, (char *)NULL);
		_exit(127);
	}
	/* Written whole (renamed into place) once the fake listens. */
	for (i = 0; i < 1500; i++) {
		if (vx_buf_read_file(&url, ready, 256, &err) == 0)
			break;
		vx_err_release(&err);
		if (waitpid(g->pid, &st, WNOHANG) == g->pid)
			fail_msg("the fake exited at start: see %s", logp);
		nanosleep(&pause, NULL);
	}
	if (!url.len)
		fail_msg("the fake did not start within 30 s: see %s", logp);
	snprintf(g->url, sizeof(g->url), "%.*s", (int)strcspn(vx_buf_str(&url), "\n"),
		 vx_buf_str(&url));
	vx_buf_release(&url);
	snprintf(g->base, sizeof(g->base), "%s/storage/v1/", g->url);
	snprintf(g->upload, sizeof(g->upload), "%s/upload/storage/v1/", g->url);
	vx_ctx_init(&g->ctx);
	memset(&o, 0, sizeof(o));
	o.max_attempts = 3;
	o.backoff_initial_ms = 1;
	o.backoff_max_ms = 5;
	o.timeout_ms = 30000;
	o.rate_per_minute = -1;
	o.create_rate_per_minute = -1;
	if (gcp_http_new(&g->http, &g->ctx, &o, &tokens, &err) != 0)
		fail_msg("http: %s", err.msg);
	g->sc.http = g->http;
	g->sc.ctx = &g->ctx;
	g->sc.base_url = g->base;
	g->sc.upload_url = g->upload;
	return g;
}

void fakegcs_stop(struct fakegcs *g)
{
	char path[96];
	int st;

	if (!g)
		return;
	gcp_http_free(g->http);
	kill(g->pid, SIGTERM);
	while (waitpid(g->pid, &st, 0) < 0 && errno == EINTR)
		;
	snprintf(path, sizeof(path), "%s/ready", g->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.json", g->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.json.tmp", g->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/fake.log", g->dir);
	unlink(path);
	rmdir(g->dir);
	free(g);
}

void fakegcs_new_prefix(struct fakegcs *g, char *out, size_t n)
{
	snprintf(out, n, "t%u", ++g->prefixes);
}

struct blob_store *fakegcs_store(struct fakegcs *g)
{
	struct blob_store *s = NULL;
	struct vx_err err = VX_ERR_INIT;

	if (storage_blob_store(&s, &g->sc, &err) != 0)
		fail_msg("a blob store on the fake: %s", err.msg);
	vx_err_release(&err);
	return s;
}

struct state_backend *fakegcs_open(struct fakegcs *g, const struct vx_ctx *ctx, const char *prefix)
{
	struct state_gcs_opts o = { "research", "vx-unit", prefix, fakegcs_store(g), NULL };
	struct state_backend *b = NULL;
	struct vx_err err = VX_ERR_INIT;

	if (state_gcs_open(&b, ctx, &o, &err) != 0)
		fail_msg("opening the gcs backend: %s", err.msg);
	vx_err_release(&err);
	return b;
}
