/* The CI context: see workflow/ci.h. */
#include "workflow/ci.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

/* Printable ASCII without spaces: nothing that could fake a trailer line or
 * move a terminal's cursor. */
static int printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (n >= max || (unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return n > 0;
}

int ci_actor_ok(const char *s)
{
	return s && printable(s, CI_ACTOR_MAX);
}

int ci_url_ok(const char *s)
{
	return s && (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) &&
	       printable(s, CI_URL_MAX);
}

/* 1-9 digits, not 0: a pull request's number. */
static int64_t number(const char *s, size_t n)
{
	int64_t v = 0;

	if (n == 0 || n > 9)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* vx_getenv that treats "" as unset. */
static const char *env(const struct vx_ctx *ctx, const char *name)
{
	const char *v = vx_getenv(ctx, name);

	return v && *v ? v : NULL;
}

/* ci_read's environment (ctx) and where its warnings go (warn and ud). */
struct warner {
	const struct vx_ctx *ctx;
	void (*warn)(void *ud, const char *msg);
	void *ud;
};

static void invalid(const struct warner *w, const char *name, const char *what)
{
	char *msg;

	if (!w->warn)
		return;
	msg = vx_asprintf("ignoring %s: %s", name, what);
	w->warn(w->ud, msg ? msg : "ignoring an invalid CI variable");
	free(msg);
}

/* A URL variable, or NULL (with a warning when set but invalid). */
static const char *env_url(const struct warner *w, const char *name)
{
	const char *v = env(w->ctx, name);

	if (v && !ci_url_ok(v)) {
		invalid(w, name, "not an http(s) URL of at most 512 printable characters without spaces");
		return NULL;
	}
	return v;
}

/* "refs/pull/N/merge" or "refs/pull/N/head": N, else 0. */
static int64_t github_pr(const char *ref)
{
	const char *p, *slash;

	if (!ref || strncmp(ref, "refs/pull/", 10) != 0)
		return 0;
	p = ref + 10;
	slash = strchr(p, '/');
	if (!slash || (strcmp(slash, "/merge") != 0 && strcmp(slash, "/head") != 0))
		return 0;
	return number(p, (size_t)(slash - p));
}

/* owner/name: printable, one slash. */
static const char *env_repository(const struct warner *w)
{
	const char *v = env(w->ctx, "GITHUB_REPOSITORY"), *slash;

	if (!v)
		return NULL;
	slash = strchr(v, '/');
	if (!printable(v, 200) || !slash || slash == v || !slash[1] || strchr(slash + 1, '/')) {
		invalid(w, "GITHUB_REPOSITORY", "not OWNER/NAME");
		return NULL;
	}
	return v;
}

/* "user@host", as state/lock.c names a lease's holder. */
static char *user_at_host(const struct vx_ctx *ctx)
{
	const char *u = env(ctx, "USER");
	struct passwd *pw;
	char host[256];

	if (!u)
		u = env(ctx, "LOGNAME");
	if (!u && (pw = getpwuid(getuid())) != NULL && pw->pw_name && *pw->pw_name)
		u = pw->pw_name;
	if (gethostname(host, sizeof(host)) != 0 || !*host)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	return vx_asprintf("%s@%s", u ? u : "unknown", host);
}

int ci_read(struct ci *out, const struct vx_ctx *ctx, void (*warn)(void *ud, const char *msg),
	    void *ud, struct vx_err *err)
{
	const struct warner wr = { ctx, warn, ud }, *w = &wr;
	static const char *const actors[] = { "VX_ACTOR", "GITHUB_TRIGGERING_ACTOR", "GITHUB_ACTOR",
					      "GITLAB_USER_LOGIN" };
	const char *event = env(ctx, "GITHUB_EVENT_NAME"), *server = NULL, *repo = NULL, *v;
	int oom = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(actors) / sizeof(actors[0]) && !out->actor; i++) {
		v = env(ctx, actors[i]);
		if (!v)
			continue;
		if (!ci_actor_ok(v)) {
			invalid(w, actors[i], "an actor is at most 100 printable characters without spaces");
			continue;
		}
		oom |= !(out->actor = strdup(v));
	}
	if (!out->actor)
		oom |= !(out->actor = user_at_host(ctx));
	if (env(ctx, "GITHUB_RUN_ID") || (event && (!strcmp(event, "pull_request") ||
					       !strcmp(event, "pull_request_target")))) {
		server = env_url(w, "GITHUB_SERVER_URL");
		repo = env_repository(w);
	}
	if (event && (!strcmp(event, "pull_request") || !strcmp(event, "pull_request_target"))) {
		out->pr = github_pr(env(ctx, "GITHUB_REF"));
		if (!out->pr && env(ctx, "GITHUB_REF"))
			invalid(w, "GITHUB_REF", "not refs/pull/N/merge or refs/pull/N/head");
		if (out->pr && server && repo)
			oom |= !(out->pr_url = vx_asprintf("%s/%s/pull/%lld", server, repo,
							   (long long)out->pr));
	} else if ((v = env(ctx, "CI_MERGE_REQUEST_IID")) != NULL) {
		const char *project = env_url(w, "CI_MERGE_REQUEST_PROJECT_URL");

		out->pr = number(v, strlen(v));
		if (!out->pr)
			invalid(w, "CI_MERGE_REQUEST_IID", "not a number");
		if (out->pr && project)
			oom |= !(out->pr_url = vx_asprintf("%s/-/merge_requests/%lld", project,
							   (long long)out->pr));
	}
	if ((v = env(ctx, "GITHUB_RUN_ID")) != NULL) {
		if (strlen(v) > 20 || strspn(v, "0123456789") != strlen(v))
			invalid(w, "GITHUB_RUN_ID", "not a number");
		else if (server && repo)
			oom |= !(out->run_url = vx_asprintf("%s/%s/actions/runs/%s", server, repo, v));
	} else if ((v = env_url(w, "CI_JOB_URL")) != NULL) {
		oom |= !(out->run_url = strdup(v));
	}
	/* A URL made of valid parts can still be too long for the caps readers apply. */
	if (out->pr_url && !ci_url_ok(out->pr_url)) {
		free(out->pr_url);
		out->pr_url = NULL;
	}
	if (out->run_url && !ci_url_ok(out->run_url)) {
		free(out->run_url);
		out->run_url = NULL;
	}
	if (oom) {
		ci_release(out);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	return 0;
}

void ci_release(struct ci *ci)
{
	free(ci->actor);
	free(ci->pr_url);
	free(ci->run_url);
	memset(ci, 0, sizeof(*ci));
}
