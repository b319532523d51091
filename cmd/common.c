#include "cmd/cmd.h"
#include "cmd/exitcode.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconcile/capacity.h"
#include "reconcile/notify.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"
#include "util/suggest.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "reconcile/kind.h"
#include "state/backend.h"
#include "workflow/ghactions.h"
#include "workflow/planning.h"
#include "workflow/workspace.h"
#include "util/banned.h"

static volatile sig_atomic_t cmd_interrupted;

/*
 * First interrupt: stop starting work, let requests already sent finish, so
 * the state learns of every job they made. Second: abandon those too (a create
 * cut off stays journaled as unconfirmed). Third: the default action, at once.
 */
static void on_sigint(int sig)
{
	static const char first[] = "\nvx: interrupted: finishing the requests already sent, then "
				    "stopping (interrupt again to abandon them)\n";
	static const char second[] = "\nvx: interrupted again: abandoning the requests in flight\n";
	struct sigaction sa;
	ssize_t wr;

	if (cmd_interrupted < 2)
		cmd_interrupted++;
	if (cmd_interrupted == 1) {
		wr = write(STDERR_FILENO, first, sizeof(first) - 1);
	} else {
		wr = write(STDERR_FILENO, second, sizeof(second) - 1);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		sigaction(sig, &sa, NULL);
	}
	(void)wr;
}

static void log_stderr(void *ud, int level, const char *msg)
{
	static const char *names[] = { "error", "warn", "info", "debug" };

	(void)ud;
	if (level < 0 || level > VX_LOG_DEBUG)
		level = VX_LOG_DEBUG;
	fprintf(stderr, "vx: %s: %s\n", names[level], msg);
}

/* Seconds; VX_TIMEOUT overrides, 0 there means no limit. See docs/design-notes.md. */
#define CMD_TIME_LIMIT_S 1800

void cmd_ctx_time_limit(struct vx_ctx *ctx)
{
	static int warned;
	const char *v = getenv("VX_TIMEOUT");
	long long secs = CMD_TIME_LIMIT_S;
	char *end = NULL;

	if (v && *v) {
		secs = strtoll(v, &end, 10);
		if (*end || secs < 0 || secs > 365LL * 86400) {
			if (!warned++)
				cmd_error("warning: VX_TIMEOUT must be a number of seconds (0 for no limit), "
					  "not '%s'; using %d", v, CMD_TIME_LIMIT_S);
			secs = CMD_TIME_LIMIT_S;
		}
	}
	ctx->time_limit_ms = secs * 1000;
	ctx->deadline_ms = secs ? vx_mono_ms(ctx) + ctx->time_limit_ms : 0;
}

void cmd_ctx_init(struct vx_ctx *ctx, int debug)
{
	const char *lv = getenv("VX_LOG");
	struct sigaction sa;

	vx_ctx_init(ctx);
	ctx->log = log_stderr;
	if (lv) {
		if (!strcasecmp(lv, "debug"))
			ctx->log_level = VX_LOG_DEBUG;
		else if (!strcasecmp(lv, "info"))
			ctx->log_level = VX_LOG_INFO;
		else if (!strcasecmp(lv, "warn"))
			ctx->log_level = VX_LOG_WARN;
		else if (!strcasecmp(lv, "error"))
			ctx->log_level = VX_LOG_ERROR;
	}
	if (debug)
		ctx->log_level = VX_LOG_DEBUG;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	/* Restart reads and writes (libgit2's among them) rather than fail them with
	 * EINTR; sleeps and poll() still wake early, as signal(7) says they do. */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ctx->interrupted = &cmd_interrupted;
	/* As ever: a number of seconds, anything else (0 too) no wait. */
	if ((lv = getenv("VX_RESERVATION_WAIT_SECONDS")) != NULL) {
		long long s = strtoll(lv, NULL, 10);

		ctx->reservation_wait_ms = s <= 0 ? -1 : s < INT64_MAX / 1000 ? (int64_t)s * 1000 : INT64_MAX;
	}
	if ((lv = getenv("VX_CANCEL_WAIT_SECONDS")) != NULL) {
		long long s = strtoll(lv, NULL, 10);

		ctx->cancel_wait_ms = s <= 0 ? -1 : s < INT64_MAX / 1000 ? (int64_t)s * 1000
									 : INT64_MAX;
	}
	cmd_ctx_time_limit(ctx);
}

void cmd_error(const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	/* An argument or a value quoted here is cut as in every error (util/text.h). */
	if (rc == 0 && b.len)
		vx_text_cap_echoes(b.data);
	fprintf(stderr, "vx: %s\n", rc == 0 ? vx_buf_str(&b) : "out of memory");
	vx_buf_release(&b);
}

/* KIND.NAME for a kind of the table (job., reservation., quota.). */
static int valid_address(const char *a)
{
	const char *dot = strchr(a, '.');

	return kind_of_address(a) && dot[1];
}

/* The error of -flag given v, which is no address: "-target takes an address such as job.NAME, ...". */
static void bad_address(struct vx_err *err, const char *flag, const char *v)
{
	struct vx_buf kinds = VX_BUF_INIT;

	if (kind_list_addresses(&kinds, ".NAME") < 0)
		vx_err_set(err, VX_ENOMEM, "out of memory");
	else
		vx_err_set(err, VX_EINVAL, "-%s takes an address such as %s, not '%s'", flag, vx_buf_str(&kinds), v);
	vx_buf_release(&kinds);
}

int cmd_planning_opt(struct planning_opts *o, int id, const char *v, struct vx_err *err)
{
	switch (id) {
	case CMD_OPT_FAIL_ON:
		if (!strcmp(v, "quota"))
			o->fail_on_quota = 1;
		else if (!strcmp(v, "budget"))
			o->fail_on_budget = 1;
		else
			vx_err_set(err, VX_EINVAL, "-fail-on takes quota or budget, not '%s'", v);
		return 1;
	case CMD_OPT_ALLOW_OTHER_LINEAGE:
		o->allow_other_lineage = 1;
		return 1;
	case CMD_OPT_ALLOW_RELEASED:
		o->allow_released = 1;
		return 1;
	case CMD_OPT_VERBOSE:
		o->verbose = 1;
		return 1;
	case CMD_OPT_REFRESH:
		if (!v || !strcmp(v, "true"))
			o->refresh = 1;
		else if (!strcmp(v, "false"))
			o->refresh = 0;
		else
			vx_err_set(err, VX_EINVAL, "-refresh takes true or false, not '%s'", v);
		return 1;
	case CMD_OPT_TARGET:
	case CMD_OPT_REPLACE:
		if (!valid_address(v))
			bad_address(err, id == CMD_OPT_TARGET ? "target" : "replace", v);
		else if ((id == CMD_OPT_TARGET ? planning_opts_add(&o->targets, &o->ntargets, v)
					       : planning_opts_add(&o->replaces, &o->nreplaces, v)) < 0)
			vx_err_set(err, VX_ENOMEM, "out of memory");
		return 1;
	default:
		return 0;
	}
}

void cmd_print_annotations(const struct vx_diags *d)
{
	struct vx_buf ann = VX_BUF_INIT;

	/* On stderr, where the runner reads workflow commands too: stdout stays
	 * what it is outside GitHub Actions. */
	if (gha_annotations(&ann, d) == 0)
		fputs(vx_buf_str(&ann), stderr);
	else
		cmd_error("GitHub Actions annotations: out of memory");
	vx_buf_release(&ann);
}

void cmd_print_diags(const struct vx_diags *d, int annotate)
{
	for (size_t i = 0; i < d->n; i++) {
		char *line = vx_diag_format(&d->items[i]);

		fprintf(stderr, "%s\n", line ? line : d->items[i].msg);
		free(line);
	}
	if (d->dropped)
		fprintf(stderr, "... and %zu more\n", d->dropped);
	if (annotate)
		cmd_print_annotations(d);
}

void cmd_print_warnings(const struct vx_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct vx_diag w = d->items[i];
		char *msg = vx_asprintf("warning: %s", w.msg), *line;

		w.msg = msg ? msg : d->items[i].msg;
		line = vx_diag_format(&w);
		fprintf(stderr, "%s\n", line ? line : w.msg);
		free(line);
		free(msg);
	}
}

int cmd_annotate(const char *cmd, const char *value, int *out)
{
	if (!value || !strcmp(value, "true"))
		*out = 1;
	else if (!strcmp(value, "false"))
		*out = 0;
	else {
		cmd_error("%s: -annotations takes true or false, not '%s'", cmd, value);
		return -1;
	}
	return 0;
}

static void print_diags(void *ud, const struct vx_diags *d)
{
	(void)ud;
	cmd_print_diags(d, 0);
}

static void print_diags_annotated(void *ud, const struct vx_diags *d)
{
	(void)ud;
	cmd_print_diags(d, 1);
}

static void print_problem(void *ud, const char *doing, const struct vx_err *e)
{
	(void)ud;
	fprintf(stderr, "vx: %s: %s\n", doing, vx_err_msg(e));
}

/* A stack that breaks its policy, opened by a command that only reads it: said, not refused. */
static void print_violations(void *ud, const char *dir, const struct vx_diags *d)
{
	(void)ud;
	cmd_print_warnings(d);
	fprintf(stderr, "vx: warning: %s: the stack breaks its policy (%zu violation%s): vxplan and vxapply refuse "
			"it, and vx watch holds what the policy forbids\n",
		dir, vx_diags_count(d),
		vx_diags_count(d) == 1 ? "" : "s");
}

const struct workspace_events cmd_workspace_events = {
	.diags = print_diags,
	.problem = print_problem,
	.violations = print_violations,
};

const struct workspace_events cmd_workspace_events_annotated = {
	.diags = print_diags_annotated,
	.problem = print_problem,
	.violations = print_violations,
};

void cmd_warn(void *ud, const char *msg)
{
	(void)ud;
	fprintf(stderr, "vx: warning: %s\n", msg);
}

void cmd_warn_skips(const char *stack, const struct state_history_skips *skips)
{
	char *text, *clean;

	if (!skips->n)
		return;
	text = state_history_skips_text(skips);
	/* The reasons quote stored text, which anyone who can push may have written. */
	clean = text ? vx_text_clean(text) : NULL;
	fprintf(stderr, "vx: warning: %s%s%s%s\n", stack ? "stack " : "", stack ? stack : "",
		stack ? ": " : "", clean ? clean : "state versions skipped (out of memory)");
	free(clean);
	free(text);
}

void cmd_report(struct vx_err *err, const char *context)
{
	/* Cut here, where it is shown, not where it is made: a module may still
	 * scrub secrets from its message then (util/text.h). */
	if (err && err->msg)
		vx_text_cap_echoes(err->msg);
	if (context)
		fprintf(stderr, "vx: %s: %s\n", context, vx_err_msg(err));
	else
		fprintf(stderr, "vx: %s\n", vx_err_msg(err));
	vx_err_release(err);
}

int cmd_flag(const char *arg, const char *name, const char **value)
{
	size_t n = strlen(name);

	if (arg[0] != '-')
		return 0;
	arg++;
	if (arg[0] == '-')
		arg++;
	if (strncmp(arg, name, n) != 0)
		return 0;
	if (arg[n] == '\0') {
		*value = NULL;
		return 1;
	}
	if (arg[n] == '=') {
		*value = arg + n + 1;
		return 1;
	}
	return 0;
}

const char *const cmd_formats_plan[] = { "human", "json", "markdown", NULL };
const char *const cmd_formats_status[] = { "human", "json", NULL };
const char *const cmd_bool_values[] = { "true", "false", NULL };
const char *const cmd_fail_on_values[] = { "quota", "budget", NULL };

const struct cmd_opt cmd_stack_opts[] = {
	{ .name = "C", .arg = CMD_ARG_REQUIRED, .id = CMD_OPT_DIR, .value = CMD_VALUE_DIR },
	{ .name = "chdir", .arg = CMD_ARG_REQUIRED, .id = CMD_OPT_DIR, .value = CMD_VALUE_DIR },
	{ .name = NULL },
};

/* Whether a and b name one directory: the same words, or the same path once resolved. */
static int same_dir(const char *a, const char *b)
{
	char *ra, *rb;
	int same;

	/* b is an argv[i] with i < argc, or the text after '=' in one: never NULL, which the
	 * analyzer does not know of argv. NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	if (!strcmp(a, b))
		return 1;
	ra = realpath(a, NULL);
	rb = realpath(b, NULL);
	same = ra && rb && !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

int cmd_stack_dir(const struct cmd_args *args, const char *positional, const char **dir)
{
	if (args->dir && positional && !same_dir(args->dir, positional)) {
		cmd_error("%s: the stack directory is given twice ('%s' by -C and '%s')", args->entry->name,
			  args->dir, positional);
		return -1;
	}
	*dir = args->dir ? args->dir : positional ? positional : ".";
	return 0;
}

const char *cmd_called(const struct cmd_entry *e)
{
	static char buf[64];

	if (e->alias)
		return e->alias;
	snprintf(buf, sizeof(buf), "vx %s", e->name);
	return buf;
}

/* The option named by arg ("-name", "--name", "-name=value"), its value in *value. */
static const struct cmd_opt *find_opt(const struct cmd_entry *e, const char *arg, const char **value)
{
	for (const struct cmd_opt *o = e->opts; o && o->name; o++)
		if (cmd_flag(arg, o->name, value))
			return o;
	for (const struct cmd_opt *o = cmd_stack_opts; e->stack_dir && o->name; o++)
		if (cmd_flag(arg, o->name, value))
			return o;
	return NULL;
}

/* -C given again: the same directory is fine, another a usage error. 0 or -1 after saying so. */
static int stack_opt(struct cmd_args *args, const char *v)
{
	if (args->dir && !same_dir(args->dir, v)) {
		cmd_error("%s: the stack directory is given twice ('%s' and '%s')", args->entry->name, args->dir, v);
		return -1;
	}
	args->dir = v;
	return 0;
}

/*
 * An unknown flag: the nearest of the command's (util/suggest.h), as
 * "did you mean -target?", else where to look. What follows '=' is not
 * part of the name. -help and -debug are candidates too.
 */
static void unknown_opt(const struct cmd_entry *e, const char *arg)
{
	const char *names[64], *near;
	const char *name = arg + 1 + (arg[1] == '-');
	char *word = vx_strdup(name);
	size_t n = 0;

	names[n++] = "help";
	names[n++] = "debug";
	for (const struct cmd_opt *o = e->opts; o && o->name && n < 62; o++)
		names[n++] = o->name;
	for (const struct cmd_opt *o = cmd_stack_opts; e->stack_dir && o->name && n < 64; o++)
		names[n++] = o->name;
	if (word)
		word[strcspn(word, "=")] = '\0';
	near = word && *word ? vx_suggest(word, names, n) : NULL;
	/* Not for a word too short to have been meant as one of them: -x is not -C. */
	if (near && vx_edit_distance(word, near) >= strlen(word))
		near = NULL;
	if (near)
		cmd_error("%s: unknown option '%s' (did you mean -%s?)", e->name, arg, near);
	else
		cmd_error("%s: unknown option '%s' (see '%s -help')", e->name, arg, cmd_called(e));
	free(word);
}

/* -help: e's usage, or the text its usage_build writes. An exit code. */
static int print_usage(const struct cmd_entry *e)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc;

	if (!e->usage_build) {
		fputs(e->usage, stdout);
		return VX_EXIT_OK;
	}
	if ((rc = e->usage_build(&b)) < 0)
		cmd_error("%s: out of memory", e->name);
	else
		fputs(vx_buf_str(&b), stdout);
	vx_buf_release(&b);
	return rc < 0 ? VX_EXIT_ERROR : VX_EXIT_OK;
}

int cmd_run(const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd_args args;
	int rc = VX_EXIT_USAGE, dashdash = 0;

	memset(&args, 0, sizeof(args));
	args.entry = e;
	args.opts = calloc((size_t)argc + 1, sizeof(*args.opts));
	args.pos = calloc((size_t)argc + 1, sizeof(*args.pos));
	if (!args.opts || !args.pos) {
		cmd_error("%s: out of memory", e->name);
		rc = VX_EXIT_ERROR;
		goto done;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		const struct cmd_opt *o;

		if (dashdash || a[0] != '-' || !a[1]) {
			args.pos[args.npos++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = 1;
			continue;
		}
		if (cmd_flag(a, "help", &v) || cmd_flag(a, "h", &v)) {
			rc = print_usage(e);
			goto done;
		}
		if (cmd_flag(a, "debug", &v) && !v) {
			args.debug = 1;
			continue;
		}
		if (!(o = find_opt(e, a, &v))) {
			unknown_opt(e, a);
			goto done;
		}
		if (o->arg == CMD_ARG_NONE && v) {
			cmd_error("%s: -%s takes no value (see '%s -help')", e->name, o->name, cmd_called(e));
			goto done;
		}
		if (o->arg == CMD_ARG_REQUIRED && !v) {
			if (i + 1 >= argc) {
				cmd_error("%s: -%s needs a value (see '%s -help')", e->name, o->name, cmd_called(e));
				goto done;
			}
			v = argv[++i];
		}
		if (o == &cmd_stack_opts[0] || o == &cmd_stack_opts[1]) {
			if (stack_opt(&args, v) < 0)
				goto done;
			continue;
		}
		args.opts[args.nopts].id = o->id;
		args.opts[args.nopts++].value = v;
	}
	rc = e->exec(&args);
done:
	free(args.opts);
	free(args.pos);
	return rc;
}

int cmd_use_color(int fd, int no_color_flag)
{
	const char *nc = getenv("NO_COLOR");

	if (no_color_flag || (nc && *nc))
		return 0;
	return isatty(fd);
}

int cmd_is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int cmd_is_address(const char *arg)
{
	const struct kind *k = kind_of_address(arg);

	return k && arg[strlen(k->prefix) + 1] && !strchr(arg, '/');
}

int cmd_dir_arg(const char *cmd, const char **dir, int *given, const char *arg)
{
	if (*given) {
		cmd_error("%s: the stack directory is given twice ('%s' and '%s')", cmd, *dir, arg);
		return -1;
	}
	*dir = arg;
	*given = 1;
	return 0;
}

char *cmd_shell_quote(const char *s)
{
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				   "_-./:@%+=,";
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	/* A leading '-' would read as an option. */
	if (s[0] == '-')
		rc = vx_buf_adds(&b, "./");
	if (*s && strspn(s, safe) == strlen(s)) {
		rc |= vx_buf_adds(&b, s);
	} else {
		rc |= vx_buf_addc(&b, '\'');
		for (; *s && rc == 0; s++)
			rc = *s == '\'' ? vx_buf_adds(&b, "'\\''") : vx_buf_addc(&b, *s);
		rc |= vx_buf_addc(&b, '\'');
	}
	if (rc) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

void cmd_done(int rc)
{
	if (VX_LEAK_CHECKED)
		return;
	exit(rc);
}

const char *cmd_getenv(const char *name)
{
	return getenv(name);
}

int cmd_notify_loopback(void)
{
	const char *v = getenv(NOTIFY_LOOPBACK_ENV);

	return v && !strcmp(v, "1");
}

int cmd_lease_from_env(const char *cmd, int64_t *out)
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
		cmd_error("%s: VX_LEASE_SECONDS must be a whole number of seconds from 1 to 86400, not '%s'", cmd, v);
		return -1;
	}
	*out = (int64_t)n * 1000;
	return 0;
}

int cmd_inflight_from_env(const char *cmd, int64_t *out)
{
	const char *inflight = getenv("VX_INFLIGHT_SECONDS");
	char *end = NULL;
	double secs = inflight ? strtod(inflight, &end) : 0;

	*out = 0;
	if (inflight && (!*inflight || *end || secs < 0 || secs > 86400)) {
		cmd_error("%s: VX_INFLIGHT_SECONDS must be a number of seconds, not '%s'", cmd, inflight);
		return -1;
	}
	if (inflight)
		*out = secs > 0 ? (int64_t)(secs * 1000) : 1;
	return 0;
}

static int64_t clock_now(void *ud)
{
	return vx_clock_real_now_ms(NULL) + ((const struct cmd_clock *)ud)->offset_ms;
}

int cmd_clock_from_env(struct vx_ctx *ctx, struct cmd_clock *c, const char *cmd)
{
	const char *set;
	int64_t at;

	if (cmd_shown_now(&at, ctx, cmd) < 0)
		return -1;
	set = getenv("VX_NOW");
	if (!set || !*set)
		return 0;
	c->offset_ms = at - vx_clock_real_now_ms(NULL);
	ctx->clock.now_ms = clock_now;
	ctx->clock.ud = c;
	return 0;
}

int cmd_shown_now(int64_t *now, const struct vx_ctx *ctx, const char *cmd)
{
	const char *v = getenv("VX_NOW");

	*now = vx_now_ms(ctx);
	if (!v || !*v)
		return 0;
	if (vx_time_parse(now, v, 0) < 0) {
		cmd_error("%s: VX_NOW must be an RFC 3339 time such as 2026-01-01T00:00:00Z, not '%s'", cmd, v);
		return -1;
	}
	return 0;
}
