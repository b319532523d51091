/* The CI context: see cmd/ci.h. */
#include "cmd/ci.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "util/buf.h"
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

int cmd_ci_actor_ok(const char *s)
{
	return s && printable(s, CMD_CI_ACTOR_MAX);
}

int cmd_ci_url_ok(const char *s)
{
	return s && (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) &&
	       printable(s, CMD_CI_URL_MAX);
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

/* getenv that treats "" as unset. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static void invalid(const char *name, const char *what)
{
	cmd_error("warning: ignoring %s: %s", name, what);
}

/* A URL variable, or NULL (with a warning when set but invalid). */
static const char *env_url(const char *name)
{
	const char *v = env(name);

	if (v && !cmd_ci_url_ok(v)) {
		invalid(name, "not an http(s) URL of at most 512 printable characters without spaces");
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
static const char *env_repository(void)
{
	const char *v = env("GITHUB_REPOSITORY"), *slash;

	if (!v)
		return NULL;
	slash = strchr(v, '/');
	if (!printable(v, 200) || !slash || slash == v || !slash[1] || strchr(slash + 1, '/')) {
		invalid("GITHUB_REPOSITORY", "not OWNER/NAME");
		return NULL;
	}
	return v;
}

/* "user@host", as state/lock.c names a lease's holder. */
static char *user_at_host(void)
{
	const char *u = env("USER");
	struct passwd *pw;
	char host[256];

	if (!u)
		u = env("LOGNAME");
	if (!u && (pw = getpwuid(getuid())) != NULL && pw->pw_name && *pw->pw_name)
		u = pw->pw_name;
	if (gethostname(host, sizeof(host)) != 0 || !*host)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	return vx_asprintf("%s@%s", u ? u : "unknown", host);
}

int cmd_ci_read(struct cmd_ci *out)
{
	static const char *const actors[] = { "VX_ACTOR", "GITHUB_TRIGGERING_ACTOR", "GITHUB_ACTOR",
					      "GITLAB_USER_LOGIN" };
	const char *event = env("GITHUB_EVENT_NAME"), *server = NULL, *repo = NULL, *v;
	int oom = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(actors) / sizeof(actors[0]) && !out->actor; i++) {
		v = env(actors[i]);
		if (!v)
			continue;
		if (!cmd_ci_actor_ok(v)) {
			invalid(actors[i], "an actor is at most 100 printable characters without spaces");
			continue;
		}
		oom |= !(out->actor = strdup(v));
	}
	if (!out->actor)
		oom |= !(out->actor = user_at_host());
	if (env("GITHUB_RUN_ID") || (event && (!strcmp(event, "pull_request") ||
					       !strcmp(event, "pull_request_target")))) {
		server = env_url("GITHUB_SERVER_URL");
		repo = env_repository();
	}
	if (event && (!strcmp(event, "pull_request") || !strcmp(event, "pull_request_target"))) {
		out->pr = github_pr(env("GITHUB_REF"));
		if (!out->pr && env("GITHUB_REF"))
			invalid("GITHUB_REF", "not refs/pull/N/merge or refs/pull/N/head");
		if (out->pr && server && repo)
			oom |= !(out->pr_url = vx_asprintf("%s/%s/pull/%lld", server, repo,
							   (long long)out->pr));
	} else if ((v = env("CI_MERGE_REQUEST_IID")) != NULL) {
		const char *project = env_url("CI_MERGE_REQUEST_PROJECT_URL");

		out->pr = number(v, strlen(v));
		if (!out->pr)
			invalid("CI_MERGE_REQUEST_IID", "not a number");
		if (out->pr && project)
			oom |= !(out->pr_url = vx_asprintf("%s/-/merge_requests/%lld", project,
							   (long long)out->pr));
	}
	if ((v = env("GITHUB_RUN_ID")) != NULL) {
		if (strlen(v) > 20 || strspn(v, "0123456789") != strlen(v))
			invalid("GITHUB_RUN_ID", "not a number");
		else if (server && repo)
			oom |= !(out->run_url = vx_asprintf("%s/%s/actions/runs/%s", server, repo, v));
	} else if ((v = env_url("CI_JOB_URL")) != NULL) {
		oom |= !(out->run_url = strdup(v));
	}
	/* A URL made of valid parts can still be too long for the caps readers apply. */
	if (out->pr_url && !cmd_ci_url_ok(out->pr_url)) {
		free(out->pr_url);
		out->pr_url = NULL;
	}
	if (out->run_url && !cmd_ci_url_ok(out->run_url)) {
		free(out->run_url);
		out->run_url = NULL;
	}
	if (oom) {
		cmd_error("out of memory");
		cmd_ci_release(out);
		return -1;
	}
	return 0;
}

void cmd_ci_release(struct cmd_ci *ci)
{
	free(ci->actor);
	free(ci->pr_url);
	free(ci->run_url);
	memset(ci, 0, sizeof(*ci));
}
