#ifndef VX_WORKFLOW_CI_H
#define VX_WORKFLOW_CI_H

/*
 * Who runs vx, and from which CI run and pull request: read from the
 * environment, for the state's commit trailers, the
 * runs' launchedBy/plannedBy/pullRequest and saved plans.
 *
 * The actor is the first set and valid of VX_ACTOR, GITHUB_TRIGGERING_ACTOR,
 * GITHUB_ACTOR, GITLAB_USER_LOGIN, else "user@host" as the state lease
 * names its holder ($USER, $LOGNAME or the uid's account; gethostname). The pull request: GitHub when
 * GITHUB_EVENT_NAME is pull_request or pull_request_target and GITHUB_REF
 * is refs/pull/N/merge or refs/pull/N/head (URL
 * $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/pull/N); GitLab from
 * CI_MERGE_REQUEST_IID (URL $CI_MERGE_REQUEST_PROJECT_URL/-/merge_requests/N).
 * The CI run: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID,
 * or $CI_JOB_URL.
 *
 * The environment is untrusted (a branch name or a fork's settings can end
 * up in it), and these values reach commit messages and terminals: an actor
 * is 1-100 printable ASCII characters without spaces, a number is 1-9
 * digits, a URL is http:// or https:// and printable ASCII without spaces,
 * at most 512 bytes. A value that is set but invalid is ignored, with one
 * warning to the caller naming the variable (never echoing the value).
 */

#include <stdint.h>

#include "util/err.h"

#define CI_ACTOR_MAX 100
#define CI_URL_MAX 512

struct vx_ctx;

struct ci {
	char *actor;     /* never NULL once read: "user@host" when no variable is set and valid */
	int64_t pr;      /* the pull (merge) request's number, 0 when not in one */
	char *pr_url;    /* its URL, or NULL */
	char *run_url;   /* the CI run's (job's) URL, or NULL */
};

/*
 * Fills *out from the environment as ctx shows it (vx_getenv). Each invalid value is ignored and told to
 * warn (when not NULL) as "ignoring NAME: what a valid one is", the
 * variable's name only. Returns 0, or VX_ENOMEM (err set; *out then holds
 * nothing to release).
 */
int ci_read(struct ci *out, const struct vx_ctx *ctx, void (*warn)(void *ud, const char *msg),
	    void *ud, struct vx_err *err) VX_WUR;
void ci_release(struct ci *ci);

/* Whether s is a valid actor (also used for a saved plan's, which is a file
 * someone handed us). */
int ci_actor_ok(const char *s);
/* Whether s is a valid URL as above. */
int ci_url_ok(const char *s);

#endif
