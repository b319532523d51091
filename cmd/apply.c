/*
 * vxapply / vx apply: make the cloud match the declaration.
 *
 * Like Terraform, apply takes the state lock first, then reads the state
 * and the live jobs, plans, shows the plan, asks (on a terminal), and
 * carries it out, writing state (a git commit) after each step.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/ci.h"
#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "cmd/planning.h"
#include "cmd/workspace.h"
#include "reconcile/apply.h"
#include "reconcile/plan.h"
#include "reconcile/render.h"
#include "reconcile/spec.h"
#include "reconcile/stack.h"
#include "reconcile/wait.h"
#include "state/backend.h"
#include "state/lock.h"
#include "state/state.h"
#include "state/state_git.h"
#include "util/buf.h"

static const char usage[] =
	"usage: vxapply [DIR | PLANFILE] [options]     (also: vx apply)\n\n"
	"Plans the stack in DIR (default .) and carries the plan out, or applies a plan\n"
	"saved by 'vxplan -out PLANFILE' exactly, refusing if the state or the declaration\n"
	"moved since. Every step is recorded in the state (a commit on vx/state/<stack>).\n"
	"A saved plan's stack is looked for at the same place in the git checkout of the\n"
	"current directory, then in that of PLANFILE, then where it was planned, so a plan\n"
	"made in one checkout applies in another of the same commit.\n\n"
	"options:\n"
	"  -auto-approve        do not ask; required when there is no terminal\n"
	"  -parallelism N       at most N API calls at once (default 8)\n"
	"  -wait[=running|done] follow the created jobs until RUNNING (default) or finished\n"
	"  -lock-timeout DUR    wait up to DUR (e.g. 5m) for a state lock held by another apply\n"
	"                       (saying on stderr whose lock it waits for); without it a held\n"
	"                       lock fails at once, naming the 'vx unlock' command to clear it\n"
	"  -target ADDR         apply only this address (repeatable); an address neither\n"
	"                       declared nor in the state is an error\n"
	"  -replace ADDR        start a new run of ADDR even if unchanged (repeatable)\n"
	"  -refresh=false       plan from the state alone\n"
	"  -fail-on=quota       a job that would not fit its GPU quota or reservation is\n"
	"                       a plan error (exit 1), not a warning; the Stack's\n"
	"                       failOn: [quota] does the same\n"
	"  -allow-other-lineage create jobs even where live jobs of this stack name from\n"
	"                       another state run them (by default a plan error: with\n"
	"                       no state found, that is this stack's own state lost)\n"		"  -no-color            no colour\n"
	"  -debug               log every request to stderr (tokens redacted)\n\n"
	"Ctrl-C stops starting new actions, lets the requests in flight finish, writes\n"
	"the state and releases the lock. A second Ctrl-C abandons the requests in\n"
	"flight: a create cut off stays journaled as unconfirmed, and the next apply\n"
	"adopts its job if it was made. A third ends vx at once.\n";

struct hooks_ud {
	struct workspace *ws;
	/* VX_TEST_PAUSE=before-send, a test hook (as git's GIT_TEST_*): the
	 * first fence check stops the process (SIGSTOP) until a SIGCONT, as a
	 * suspended laptop would, right before its first mutating request goes
	 * out. Checks wait on pause_lock meanwhile, so no other request slips
	 * out while the test thinks the apply is frozen. */
	int test_pause;
	int paused;
	pthread_mutex_t pause_lock;
};

static int hook_persist(void *ud, struct state *st, const char *message, struct vx_err *err)
{
	struct hooks_ud *h = ud;

	return state_write(h->ws->backend, st, message, err);
}

static void hook_progress(void *ud, const char *line)
{
	(void)ud;
	printf("%s\n", line);
	fflush(stdout);
}

/* Renews the lease when a third of it has passed since the last renewal. */
static int hook_heartbeat(void *ud, struct vx_err *err)
{
	struct hooks_ud *h = ud;

	return state_lock_heartbeat(h->ws->backend, err);
}

/* Right before each create or cancel is sent, from worker threads. */
static int hook_fence(void *ud, struct vx_err *err)
{
	struct hooks_ud *h = ud;
	int rc;

	if (!h->test_pause)
		return state_lock_fence(h->ws->backend, err);
	pthread_mutex_lock(&h->pause_lock);
	if (!h->paused) {
		h->paused = 1;
		raise(SIGSTOP);
	}
	rc = state_lock_fence(h->ws->backend, err);
	pthread_mutex_unlock(&h->pause_lock);
	return rc;
}

/* VX_LEASE_SECONDS: the state lease (default 600 s); short ones are for tests. */
static int lease_from_env(int64_t *out)
{
	const char *v = getenv("VX_LEASE_SECONDS");
	char *end = NULL;
	long n;

	*out = 0;
	if (!v)
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < 1 || n > 86400) {
		cmd_error("apply: VX_LEASE_SECONDS must be a whole number of seconds from 1 to "
			  "86400, not '%s'", v);
		return -1;
	}
	*out = (int64_t)n * 1000;
	return 0;
}

/*
 * The fence refused: the lease may be another apply's by now. Give it back
 * if it is still ours (a compare-and-swap, so it never clears theirs); when
 * it is not, the fence's message has said all there is to say.
 */
static void drop_after_fence(struct workspace *ws)
{
	struct vx_err e = VX_ERR_INIT;
	int rc = state_lock_drop(ws->backend, &e);

	if (rc < 0 && rc != VX_ECONFLICT)
		cmd_report(&e, "releasing the state lock");
	vx_err_release(&e);
}

static int confirm(int auto_approve)
{
	char line[64];

	if (auto_approve)
		return 1;
	if (!isatty(0)) {
		cmd_error("apply: refusing to apply without -auto-approve: there is no terminal to ask on");
		return 0;
	}
	printf("\nDo you want to apply this plan? Only 'yes' will be accepted: ");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	line[strcspn(line, "\r\n")] = '\0';
	if (strcmp(line, "yes") != 0) {
		printf("Apply cancelled.\n");
		return 0;
	}
	return 1;
}


/* Whether a saved plan's dir_in_repo stays inside the repository: relative, no "..". */
static int inside_repo(const char *p)
{
	if (!*p || p[0] == '/')
		return 0;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2))
			return 0;
		if (!p[n])
			return 1;
		p += n + 1;
	}
}

/*
 * Where the saved plan's stack is in this checkout: dir_in_repo under the
 * work tree of the current directory's repository (a CI runner applying an
 * artifact from its checkout), else under that of the plan file's, else the
 * absolute dir it was planned in (plans from before dir_in_repo, stacks
 * outside git). The plan's own declaration hash then proves it is the same
 * stack. *out is owned by the caller.
 */
static int saved_plan_dir(char **out, const struct saved_plan *sp, const char *planfile,
			  struct vx_err *err)
{
	const char *slash = strrchr(planfile, '/');
	char *from[2] = { NULL, NULL }, *root = NULL, *cand = NULL;
	int rc = 0;

	*out = NULL;
	if (!sp->dir_in_repo)
		goto absolute;
	if (!inside_repo(sp->dir_in_repo))
		return vx_err_set(err, VX_EINVAL, "saved plan: \"dir_in_repo\" must be a relative path "
				  "inside the repository, not \"%s\"", sp->dir_in_repo);
	from[0] = strdup(".");
	from[1] = slash ? vx_asprintf("%.*s", slash == planfile ? 1 : (int)(slash - planfile), planfile)
			: strdup(".");
	if (!from[0] || !from[1]) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < 2; i++) {
		struct vx_err e = VX_ERR_INIT;

		free(root);
		root = NULL;
		if (state_git_workdir(&root, from[i], &e) < 0) {
			vx_err_release(&e);
			continue;
		}
		cand = !strcmp(sp->dir_in_repo, ".") ? strdup(root)
						      : vx_asprintf("%s/%s", root, sp->dir_in_repo);
		if (!cand) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		if (cmd_is_dir(cand)) {
			*out = cand;
			goto done;
		}
		free(cand);
		cand = NULL;
	}
	if (!cmd_is_dir(sp->dir)) {
		rc = vx_err_set(err, VX_ENOTFOUND, "the plan's stack directory %s is in no git checkout "
				"of the current directory or of the plan file, and %s (where it was "
				"planned) does not exist; run vxapply inside a checkout of the planned commit",
				sp->dir_in_repo, sp->dir);
		goto done;
	}
absolute:
	*out = strdup(sp->dir);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	free(root);
	free(from[0]);
	free(from[1]);
	return rc;
}

/*
 * The stack directory as the "vx unlock ID" hint should name it for a user
 * in the current directory: as they typed it, or (from a saved plan) relative
 * to here when below here; NULL when it is here. Shell-quoted; caller frees.
 */
static char *unlock_args(const char *typed, const char *abs_dir)
{
	char cwd[4096];
	size_t n;

	if (typed)
		return strcmp(typed, ".") && strcmp(typed, "./") ? cmd_shell_quote(typed) : NULL;
	if (!getcwd(cwd, sizeof(cwd)))
		return cmd_shell_quote(abs_dir);
	n = strlen(cwd);
	if (!strcmp(cwd, abs_dir))
		return NULL;
	if (!strncmp(cwd, abs_dir, n) && abs_dir[n] == '/')
		return cmd_shell_quote(abs_dir + n + 1);
	return cmd_shell_quote(abs_dir);
}

/* Said once, on stderr, when apply starts waiting for another's lock. */
static void on_lock_wait(void *ud, const struct state_lock *l, int64_t timeout_ms)
{
	const char *const *given = ud;
	char since[STATE_TIME_MAX];

	(void)timeout_ms;
	state_time_format(l->started_ms, since);
	fprintf(stderr, "vx: waiting for the state lock held by %s@%s (%s, pid %lld, since %s); up to %s\n",
		l->user, l->host, l->operation, (long long)l->pid, since, *given);
}

static int is_plan_file(const char *path)
{
	size_t n = strlen(path);

	return access(path, R_OK) == 0 && n > 0 && path[n - 1] != '/' && !cmd_is_dir(path);
}

/* -wait: the hooks of reconcile/wait.c, which decides; here it is printed. */
struct waiter {
	struct workspace *ws;
	int tty;
	int until_done;
};

static int wait_refresh(void *ud, const struct live_jobs **out, struct vx_err *err)
{
	struct waiter *w = ud;
	int rc = workspace_refresh(w->ws, err);

	*out = &w->ws->store.jobs;
	return rc;
}

static void wait_changed(void *ud, const char *name, const struct live_job *lj, const char *state,
			 int64_t secs)
{
	struct waiter *w = ud;
	struct vx_buf why = VX_BUF_INIT;

	if (w->tty)
		fputs("\r\033[K", stdout);
	/* Why it failed, in the job's own words (first line, cleaned). */
	if (lj && job_state_is_terminal(state) && (lj->error_code || lj->error_message) &&
	    (vx_buf_adds(&why, ": ") < 0 || render_error(&why, lj->error_code, lj->error_message) < 0))
		vx_buf_reset(&why);
	printf("  %s: %s (after %llds)%s\n", name, job_state_short(state), (long long)secs,
	       vx_buf_str(&why));
	vx_buf_release(&why);
	fflush(stdout);
}

static void wait_waiting(void *ud, size_t pending, size_t running, size_t done, int64_t secs)
{
	struct waiter *w = ud;

	if (!w->tty)
		return;
	printf("\r\033[K  waiting: %zu not yet %s, %zu running, %zu finished (%llds)", pending,
	       w->until_done ? "finished" : "running", running, done, (long long)secs);
	fflush(stdout);
}

/* Follows created jobs until they run (or finish). Returns 0, or 1 when one failed. */
static int follow_jobs(struct workspace *ws, const struct apply_result *res, int until_done)
{
	const char *poll_env = getenv("VX_WAIT_POLL_MS");
	long poll = poll_env ? strtol(poll_env, NULL, 10) : 10000;
	struct waiter w = { ws, isatty(1), until_done };
	struct wait_hooks h = { wait_refresh, wait_changed, wait_waiting, &w };
	struct vx_err err = VX_ERR_INIT;
	int rc = wait_jobs(ws->ctx, res->created, res->ncreated, until_done, poll > 0 ? poll : 10000, &h,
			   &err);

	if (w.tty)
		fputs("\r\033[K", stdout);
	fflush(stdout);
	if (rc < 0)
		cmd_report(&err, "waiting for jobs");
	vx_err_release(&err);
	return rc != 0;
}

/* Commits what the refresh saw about the runs (summary: one line per run changed). */
static int record_refresh(struct workspace *ws, size_t refreshed, size_t migrated, const char *summary)
{
	struct vx_err err = VX_ERR_INIT;
	/* The subject names the runs that changed and how ("vx refresh: job.a running → succeeded"). */
	char *subject = refreshed ? apply_subject("vx refresh: ", summary) : NULL;
	char *msg = refreshed
		? vx_asprintf("%s%s\n\n%s", subject ? subject : "vx refresh: runs changed",
			      migrated ? "; sensitive values re-keyed" : "", summary ? summary : "")
		: vx_asprintf("vx: %zu record%s re-keyed: sensitive values as HMAC-SHA-256 "
			      "with the state's salt\n", migrated, migrated == 1 ? "" : "s");
	int rc = msg ? state_write(ws->backend, &ws->state, msg, &err) : VX_ENOMEM;

	if (rc < 0) {
		if (!err.code)
			vx_err_set(&err, rc, "out of memory");
		cmd_report(&err, "recording the jobs' states");
	}
	free(subject);
	free(msg);
	vx_err_release(&err);
	return rc;
}

enum {
	APPLY_OPT_AUTO_APPROVE = 1,
	APPLY_OPT_NO_COLOR,
	APPLY_OPT_WAIT,
	APPLY_OPT_PARALLELISM,
	APPLY_OPT_LOCK_TIMEOUT,
};

static const struct cmd_opt apply_opts[] = {
	{ "auto-approve", CMD_ARG_NONE, APPLY_OPT_AUTO_APPROVE },
	{ "no-color", CMD_ARG_NONE, APPLY_OPT_NO_COLOR },
	{ "wait", CMD_ARG_OPTIONAL, APPLY_OPT_WAIT },
	{ "parallelism", CMD_ARG_REQUIRED, APPLY_OPT_PARALLELISM },
	{ "lock-timeout", CMD_ARG_REQUIRED, APPLY_OPT_LOCK_TIMEOUT },
	PLANNING_OPTS,
	{ NULL, CMD_ARG_NONE, 0 },
};

static int apply_exec(const struct cmd_args *args)
{
	struct planning_opts po;
	struct state_lock_opts lo;
	struct vx_ctx ctx;
	struct workspace ws;
	struct planning pl;
	struct saved_plan sp;
	struct apply_result res;
	struct apply_options ao;
	struct apply_hooks hooks;
	struct hooks_ud hud;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf out = VX_BUF_INIT, file = VX_BUF_INIT;
	const char *target = ".", *lock_timeout_arg = NULL, *pause;
	char *refresh_summary = NULL, *plan_dir = NULL, *hint = NULL;
	struct cmd_ci ci = { NULL, 0, NULL, NULL };
	const char *pr_url = NULL;
	int64_t pr = 0;
	int auto_approve = 0, no_color = 0, wait = 0, parallelism = 8, color;
	int rc = VX_EXIT_ERROR, from_file = 0;
	int64_t lock_timeout = 0;
	size_t refreshed;

	memset(&po, 0, sizeof(po));
	po.refresh = 1;
	memset(&lo, 0, sizeof(lo));
	memset(&ws, 0, sizeof(ws));
	memset(&pl, 0, sizeof(pl));
	memset(&sp, 0, sizeof(sp));
	memset(&res, 0, sizeof(res));
	memset(&hud, 0, sizeof(hud));
	pthread_mutex_init(&hud.pause_lock, NULL);
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case APPLY_OPT_AUTO_APPROVE:
			auto_approve = 1;
			break;
		case APPLY_OPT_NO_COLOR:
			no_color = 1;
			break;
		case APPLY_OPT_WAIT:
			if (!v || !strcmp(v, "running"))
				wait = 1;
			else if (!strcmp(v, "done"))
				wait = 2;
			else {
				cmd_error("apply: -wait takes running or done, not '%s'", v);
				rc = VX_EXIT_USAGE;
				goto done;
			}
			break;
		case APPLY_OPT_PARALLELISM: {
			char *end = NULL;
			long n = strtol(v, &end, 10);

			if (!*v || *end || n < 1 || n > 256) {
				cmd_error("apply: -parallelism takes a number from 1 to 256, not '%s'", v);
				rc = VX_EXIT_USAGE;
				goto done;
			}
			parallelism = (int)n;
			break;
		}
		case APPLY_OPT_LOCK_TIMEOUT:
			lock_timeout_arg = v;
			if (spec_parse_duration(v, &lock_timeout) < 0) {
				cmd_error("apply: -lock-timeout takes a duration such as 30s or 5m, not '%s'", v);
				rc = VX_EXIT_USAGE;
				goto done;
			}
			break;
		default:
			if (planning_opt(&po, args->opts[i].id, v, &err) && err.code) {
				cmd_report(&err, NULL);
				rc = VX_EXIT_USAGE;
				goto done;
			}
		}
	}
	for (size_t i = 0; i < args->npos; i++)
		target = args->pos[i];
	cmd_ctx_init(&ctx, args->debug);
	color = cmd_use_color(1, no_color);
	if (lease_from_env(&lo.lease_ms) < 0 || cmd_ci_read(&ci) < 0)
		goto done;
	pause = getenv("VX_TEST_PAUSE");
	if (pause && strcmp(pause, "before-send") != 0) {
		cmd_error("apply: VX_TEST_PAUSE takes before-send, not '%s'", pause);
		goto done;
	}
	hud.test_pause = pause != NULL;

	if (is_plan_file(target)) {
		from_file = 1;
		if (vx_buf_read_file(&file, target, 16u << 20, &err) < 0 ||
		    saved_plan_parse(&sp, file.data, file.len, &err) < 0) {
			cmd_report(&err, target);
			fprintf(stderr, "vx: vxapply takes a stack directory, or a plan saved by 'vxplan -out FILE'\n");
			goto done;
		}
		po.refresh = sp.refresh;
		/* The plan is a file someone handed us: who it names reaches commits and terminals. */
		if (sp.planned_by && (!cmd_ci_actor_ok(sp.planned_by) ||
				      (sp.pr_url && !cmd_ci_url_ok(sp.pr_url)))) {
			cmd_error("apply: %s: \"planned_by\" names no valid actor or pull request URL "
				  "(printable, no spaces, at most %d and %d characters)", target,
				  CMD_CI_ACTOR_MAX, CMD_CI_URL_MAX);
			goto done;
		}
		if (saved_plan_dir(&plan_dir, &sp, target, &err) < 0) {
			cmd_report(&err, target);
			goto done;
		}
		if (workspace_open(&ws, &ctx, plan_dir, &err) < 0) {
			cmd_report(&err, NULL);
			goto done;
		}
		/* The saved plan's own -target list, so the plan is remade with the same scope. */
		for (size_t i = 0; i < sp.ntargets; i++) {
			const char **p = realloc(po.targets, (po.ntargets + 1) * sizeof(*p));

			if (!p)
				goto done;
			po.targets = p;
			p[po.ntargets++] = sp.targets[i];
		}
		po.allow_other_lineage |= sp.allow_other_lineage;
	} else if (workspace_open(&ws, &ctx, target, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (workspace_config_status(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	/*
	 * A CI job applies what was reviewed and merged: uncommitted YAML there
	 * is a build step gone wrong, and the runs would name a commit that does
	 * not hold what was applied.
	 */
	if (ws.config_changes && getenv("CI") && *getenv("CI")) {
		cmd_error("apply: the stack has uncommitted changes (%s); CI is set, and in CI vx "
			  "applies only committed configuration: commit them first", ws.config_changes);
		goto done;
	}

	lo.operation = "apply";
	lo.timeout_ms = lock_timeout;
	lo.on_wait = on_lock_wait;
	lo.ud = &lock_timeout_arg;
	hint = unlock_args(from_file ? NULL : target, ws.dir);
	lo.unlock_args = hint;
	if (state_lock_acquire(ws.backend, &lo, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	/* Only now: lists made before the lease was ours could miss what the
	 * apply that held it last created. */
	if (po.refresh)
		workspace_prefetch(&ws);
	if (workspace_load_state(&ws, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	cmd_ctx_time_limit(&ctx); /* the wait for the lock does not count */
	/* The pull request is the saved plan's (reviewed there), else this pipeline's own. */
	pr = from_file && sp.pr_number ? sp.pr_number : ci.pr;
	pr_url = from_file && sp.pr_number ? sp.pr_url : ci.pr_url;
	if (state_audit(ws.backend, ci.actor, pr_url, ci.run_url, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	/* From here on every state commit says the configuration applied is not HEAD's. */
	if (ws.config_changes && state_config_dirty(ws.backend, ws.st->decl_hash, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (from_file && (ws.state.serial != sp.state_serial ||
			  (sp.state_serial && sp.state_lineage && strcmp(sp.state_lineage, ws.state.lineage)))) {
		cmd_error("apply: %s: the state moved since the plan was made (serial %llu then, %llu now); "
			  "run vxplan again", target, (unsigned long long)sp.state_serial,
			  (unsigned long long)ws.state.serial);
		goto done;
	}
	/* The declaration hash covers sensitive values by their HMAC under the
	 * state's salt, so it is compared once the same state is loaded. */
	if (from_file) {
		if (workspace_salt(&ws, sp.state_salt, &err) < 0) {
			cmd_report(&err, target);
			goto done;
		}
		if (strcmp(sp.decl_hash, ws.st->decl_hash) != 0) {
			cmd_error("apply: %s: the declaration changed since the plan was made; "
				  "run vxplan again", target);
			goto done;
		}
	}
	if (planning_run(&pl, &ws, &po, &err) < 0) {
		cmd_report(&err, NULL);
		goto done;
	}
	if (from_file && saved_plan_matches(&sp, &pl.planner.plan, &err) < 0) {
		cmd_report(&err, target);
		goto done;
	}
	if (!from_file) {
		if (render_plan_human(&out, &pl.planner.plan, &pl.header, color) < 0) {
			cmd_error("apply: out of memory");
			goto done;
		}
		fputs(vx_buf_str(&out), stdout);
	}
	if (pl.planner.plan.errors.n) {
		cmd_error("apply: the plan has errors; nothing was changed");
		goto done;
	}
	refreshed = po.refresh ? apply_refresh_state(&ws.state, &ws.store.jobs, &refresh_summary) : 0;
	/*
	 * How runs ended is recorded before anything else happens, in its own
	 * commit: a run that failed and is now forgotten, or a job cancelled,
	 * keeps its final state in the history. Records migrated to salted
	 * hashes are written now too, or a stack that never changes would keep
	 * its plain hashes forever.
	 */
	if ((refreshed || ws.migrated) && record_refresh(&ws, refreshed, ws.migrated, refresh_summary) < 0)
		goto done;
	if (!planning_has_changes(&pl)) {
		printf("\nNo changes. The cloud matches the declaration.\n");
		rc = VX_EXIT_OK;
		goto done;
	}
	if (!from_file && !confirm(auto_approve))
		goto done;
	cmd_ctx_time_limit(&ctx); /* nor the time a person took to answer */

	memset(&ao, 0, sizeof(ao));
	ao.parallelism = parallelism;
	ao.project = ws.st->project;
	ao.config_commit = ws.config_commit;
	ao.config_dirty = ws.config_changes != NULL;
	ao.decl_hash = ws.st->decl_hash;
	ao.launched_by = ci.actor;
	ao.planned_by = from_file ? sp.planned_by : NULL;
	ao.pr_number = pr;
	ao.pr_url = pr_url;
	{
		const char *inflight = getenv("VX_INFLIGHT_SECONDS");
		char *end = NULL;
		double secs = inflight ? strtod(inflight, &end) : 0;

		if (inflight && (!*inflight || *end || secs < 0 || secs > 86400)) {
			cmd_error("apply: VX_INFLIGHT_SECONDS must be a number of seconds, not '%s'", inflight);
			goto done;
		}
		if (inflight)
			ao.inflight_ms = secs > 0 ? (int64_t)(secs * 1000) : 1;
	}
	hud.ws = &ws;
	hooks.persist = hook_persist;
	hooks.progress = hook_progress;
	hooks.heartbeat = hook_heartbeat;
	hooks.fence = hook_fence;
	hooks.ud = &hud;
	printf("\n");
	if (apply_run(&res, &ctx, &pl.planner.plan, ws.st, &ws.state, ws.prov, &ao, &hooks, &err) < 0) {
		if (res.fenced) {
			cmd_report(&err, NULL);
			drop_after_fence(&ws);
		} else {
			cmd_report(&err, "apply stopped: writing the state failed");
		}
		goto done;
	}
	printf("\nApply %s: %zu done, %zu failed%s.\n", res.interrupted ? "interrupted" : "complete",
	       res.ok, res.failed, res.skipped ? ", some not started" : "");
	for (size_t i = 0; i < res.failures.n; i++)
		fprintf(stderr, "vx: failed: %s\n", res.failures.items[i].msg);
	if (res.failed || res.interrupted)
		goto done;
	if (wait && res.ncreated) {
		printf("\nWaiting for %zu job%s to %s:\n", res.ncreated, res.ncreated == 1 ? "" : "s",
		       wait == 2 ? "finish" : "run");
		if (follow_jobs(&ws, &res, wait == 2))
			goto done;
	}
	rc = VX_EXIT_OK;
done:
	free(refresh_summary);
	cmd_ci_release(&ci);
	free(plan_dir);
	free(hint);
	vx_buf_release(&out);
	vx_buf_release(&file);
	saved_plan_release(&sp);
	apply_result_release(&res);
	planning_release(&pl);
	planning_opts_release(&po);
	workspace_close(&ws);
	pthread_mutex_destroy(&hud.pause_lock);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_apply_entry = {
	.name = "apply",
	.alias = "vxapply",
	.summary = "make the cloud match the declaration, recording it in git",
	.usage = usage,
	.opts = apply_opts,
	.exec = apply_exec,
};
