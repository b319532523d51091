/*
 * vx watch: the stack kept reconciled, a cycle every -interval
 * (workflow/watch.h decides; here the flags, the log lines, the metrics
 * file and the time between cycles).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/exitcode.h"
#include "reconcile/load/spec.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/rand.h"
#include "workflow/ci.h"
#include "workflow/watch.h"
#include "util/banned.h"

static const char usage[] =
	"usage: vx watch [DIR] [options]\n\n"
	"Keeps the stack in DIR (default .) reconciled: every -interval it refreshes\n"
	"as vxplan does and applies what the applied configuration already authorises:\n"
	"resubmissions by each job's resubmit policy and ladder, a killed apply's\n"
	"intents, and recording how runs ended. A declaration that differs from what\n"
	"was applied is reported once and left to vxapply (unless -sync). The state\n"
	"lease is taken only to act, with a short wait; a lease another apply or\n"
	"watcher holds skips the cycle. Notifications go to the Stack's notify:\n"
	"targets, each delivered once. SIGTERM or Ctrl-C ends the cycle in flight\n"
	"safely, releases the lease and exits 0.\n\n"
	"options:\n"
	"  -interval DUR        time between cycles, e.g. 30s or 2m (default 30s), with\n"
	"                       a little jitter; after an error, longer (up to 5m)\n"
	"  -once                one cycle, then exit: 0 nothing to do, 2 it did\n"
	"                       something, 1 error (for a CI schedule or a CronJob)\n"
	"  -cycles N            N cycles, then exit 0 (1 if the last one failed)\n"
	"  -sync                apply the whole plan each cycle (merge = apply)\n"
	"  -follow REMOTE/BRANCH  fetch that branch each cycle and reconcile the stack as\n"
	"                       it holds it (no work tree touched); a commit that does\n"
	"                       not load is reported and the last good one kept\n"
	"  -metrics FILE        write Prometheus text format to FILE after each cycle\n"
	"                       (atomically: for node_exporter's textfile collector)\n"
	"  -format FMT          human (default) or json: one JSON object per line\n"
	"  -C DIR               the stack's directory (as DIR; also -chdir=DIR)\n"
	"  -debug               log every request to stderr (tokens redacted)\n";

enum {
	WATCH_OPT_INTERVAL = 10,
	WATCH_OPT_ONCE,
	WATCH_OPT_SYNC,
	WATCH_OPT_METRICS,
	WATCH_OPT_FORMAT,
	WATCH_OPT_CYCLES,
	WATCH_OPT_FOLLOW,
};

static const struct cmd_opt watch_opts[] = {
	{ .name = "interval", .arg = CMD_ARG_REQUIRED, .id = WATCH_OPT_INTERVAL },
	{ .name = "once", .arg = CMD_ARG_NONE, .id = WATCH_OPT_ONCE },
	{ .name = "sync", .arg = CMD_ARG_NONE, .id = WATCH_OPT_SYNC },
	{ .name = "metrics", .arg = CMD_ARG_REQUIRED, .id = WATCH_OPT_METRICS, .value = CMD_VALUE_FILE },
	{ .name = "format", .arg = CMD_ARG_REQUIRED, .id = WATCH_OPT_FORMAT, .values = cmd_formats_status },
	{ .name = "cycles", .arg = CMD_ARG_REQUIRED, .id = WATCH_OPT_CYCLES },
	{ .name = "follow", .arg = CMD_ARG_REQUIRED, .id = WATCH_OPT_FOLLOW },
	{ .name = NULL },
};

/* What the loop keeps between cycles, for the log and the metrics. */
struct watcher {
	struct vx_ctx ctx;
	struct cmd_clock clock;     /* VX_NOW: where the clock starts */
	int json;
	const char *metrics;
	int64_t interval_ms;
	int once, sync;
	uint64_t max_cycles;        /* -cycles N; 0 = until stopped */
	uint64_t rng;               /* the pause's jitter (util/rand.h): VX seed pins it */
	const char *dir;
	const char *follow;
	uint64_t cycles, errors, skipped, acted_cycles;
	uint64_t done, failed, resubmitted, notified;
	uint64_t full_lists, active_lists, gets;
	int64_t last_good_ms;
	double cycle_seconds;
	struct watch_result last;
	int streak;                 /* cycles in a row that failed */
};

static void when(char out[STATE_TIME_MAX], const struct vx_ctx *ctx)
{
	state_time_format(vx_now_ms(ctx) / 1000 * 1000, out);
}

static void line(void *ud, const char *kind, const char *address, const char *msg)
{
	struct watcher *wr = ud;
	struct vx_buf b = VX_BUF_INIT;
	char t[STATE_TIME_MAX];
	int bad = !strcmp(kind, "error") || !strcmp(kind, "failed");

	when(t, &wr->ctx);
	if (!wr->json) {
		fprintf(bad ? stderr : stdout, "%s %s: %s\n", t, kind, msg);
		fflush(bad ? stderr : stdout);
		return;
	}
	if (vx_buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"address\":", t,
			  bad ? "error" : !strcmp(kind, "warn") ? "warn" : "info", kind) < 0 ||
	    (address ? vx_buf_add_json_str(&b, address) : vx_buf_adds(&b, "null")) < 0 ||
	    vx_buf_adds(&b, ",\"message\":") < 0 || vx_buf_add_json_str(&b, msg) < 0 || vx_buf_adds(&b, "}\n") < 0) {
		vx_buf_release(&b);
		return;
	}
	fputs(b.data, stdout);
	fflush(stdout);
	vx_buf_release(&b);
}

/* The APIs vx_watch_api_errors_total counts: each from the start, at 0, as
 * Prometheus asks of a labelled counter (a series that appears only at its
 * first error breaks rate() and alerts on it). */
static const char *const metric_apis[] = { "aiplatform", "compute", "cloudquotas", "storage", "oauth", "webhook" };
#define METRIC_APIS (sizeof(metric_apis) / sizeof(metric_apis[0]))

static int api_errors_text(struct vx_buf *b, struct watch *w)
{
	const char *apis[8];
	uint64_t errs[8], all[METRIC_APIS];
	size_t napis = watch_api_errors(w, apis, errs, 8);
	int rc = vx_buf_adds(b, "# HELP vx_watch_api_errors_total Requests that failed, by API (no answer, or "
				"401, 403, 429, 5xx after retries).\n# TYPE vx_watch_api_errors_total counter\n");

	memset(all, 0, sizeof(all));
	for (size_t i = 0; i < napis; i++)
		for (size_t k = 0; k < METRIC_APIS; k++)
			if (!strcmp(apis[i], metric_apis[k]))
				all[k] += errs[i];
	for (size_t k = 0; k < METRIC_APIS && rc == 0; k++)
		rc = vx_buf_printf(b, "vx_watch_api_errors_total{service=\"%s\"} %" PRIu64 "\n", metric_apis[k], all[k]);
	return rc;
}

/* The metrics in Prometheus text format (0.0.4). */
static int metrics_text(struct vx_buf *b, const struct watcher *wr, struct watch *w)
{
	int rc = api_errors_text(b, w);

	if (rc == 0)
		rc = vx_buf_adds(b, "# HELP vx_watch_jobs The stack's live jobs by state, as last listed.\n"
				    "# TYPE vx_watch_jobs gauge\n");

	for (int i = 0; i < 8 && rc == 0; i++)
		rc = vx_buf_printf(b, "vx_watch_jobs{state=\"%s\"} %zu\n", watch_job_states[i],
				   wr->last.jobs_by_state[i]);
	if (rc == 0)
		rc = vx_buf_printf(b,
			"# HELP vx_watch_cycles_total Cycles run, by result.\n# TYPE vx_watch_cycles_total counter\n"
			"vx_watch_cycles_total{result=\"ok\"} %" PRIu64 "\nvx_watch_cycles_total{result=\"error\"} %" PRIu64
			"\nvx_watch_cycles_total{result=\"skipped\"} %" PRIu64 "\n"
			"# HELP vx_watch_actions_total Actions carried out, by result.\n# TYPE vx_watch_actions_total counter\n"
			"vx_watch_actions_total{result=\"done\"} %" PRIu64 "\nvx_watch_actions_total{result=\"failed\"} %" PRIu64 "\n"
			"# HELP vx_watch_resubmissions_total Runs resubmitted.\n# TYPE vx_watch_resubmissions_total counter\n"
			"vx_watch_resubmissions_total %" PRIu64 "\n"
			"# HELP vx_watch_notifications_total Notifications delivered.\n"
			"# TYPE vx_watch_notifications_total counter\nvx_watch_notifications_total %" PRIu64 "\n"
			"# HELP vx_watch_list_calls_total The refresh's calls: whole lists, active lists, gets.\n"
			"# TYPE vx_watch_list_calls_total counter\n"
			"vx_watch_list_calls_total{call=\"full\"} %" PRIu64 "\nvx_watch_list_calls_total{call=\"active\"} %" PRIu64
			"\nvx_watch_list_calls_total{call=\"get\"} %" PRIu64 "\n"
			"# HELP vx_watch_cycle_seconds How long the last cycle took.\n# TYPE vx_watch_cycle_seconds gauge\n"
			"vx_watch_cycle_seconds %.3f\n"
			"# HELP vx_watch_last_good_cycle_timestamp_seconds When a cycle last ran without an error.\n"
			"# TYPE vx_watch_last_good_cycle_timestamp_seconds gauge\n"
			"vx_watch_last_good_cycle_timestamp_seconds %" PRId64 "\n",
			wr->cycles - wr->errors - wr->skipped, wr->errors, wr->skipped, wr->done, wr->failed,
			wr->resubmitted, wr->notified, wr->full_lists, wr->active_lists, wr->gets, wr->cycle_seconds,
			wr->last_good_ms / 1000);
	return rc;
}

/*
 * Written whole or not at all (util/file.h: a new temporary file created
 * exclusively, then renamed over FILE), so a reader never sees half of it
 * and nothing planted at a fixed temporary name (a symlink) is followed.
 */
static void write_metrics(struct watcher *wr, struct watch *w)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;

	if (metrics_text(&b, wr, w) < 0)
		line(wr, "warn", NULL, "cannot write the metrics file: out of memory");
	else if (vx_file_put(wr->metrics, b.data, b.len, 0, &err) < 0)
		line(wr, "warn", NULL, vx_err_msg(&err));
	vx_err_release(&err);
	vx_buf_release(&b);
}

/* After a cycle: counters, the error line, the metrics. */
static void account(struct watcher *wr, struct watch *w, const struct watch_result *res, int rc,
		    struct vx_err *err, int64_t started_mono)
{
	wr->cycles++;
	wr->cycle_seconds = (double)(vx_mono_ms(&wr->ctx) - started_mono) / 1000.0;
	wr->last = *res;
	wr->full_lists += res->full_lists;
	wr->active_lists += res->active_lists;
	wr->gets += res->gets;
	/* A cycle cut short by SIGTERM or Ctrl-C is no error: the stop line says it. */
	if (rc < 0 && vx_interrupted(&wr->ctx))
		rc = 0;
	if (rc < 0) {
		wr->errors++;
		wr->streak++;
		line(wr, "error", NULL, vx_err_msg(err));
	} else {
		wr->streak = 0;
		wr->last_good_ms = vx_now_ms(&wr->ctx);
		wr->skipped += res->skipped != 0;
		wr->acted_cycles += res->acted != 0;
		wr->done += res->done;
		wr->failed += res->failed;
		wr->resubmitted += res->resubmitted;
		wr->notified += res->notified;
	}
	if (wr->metrics)
		write_metrics(wr, w);
}

/*
 * Until the next cycle: the interval with a tenth of jitter either way, so
 * watchers started together do not call in step; after errors, doubled per
 * error up to 5 minutes, or as long as a server's Retry-After asked. Wakes
 * within half a second of SIGTERM or Ctrl-C.
 */
static void pause_between(struct watcher *wr, struct watch *w)
{
	int64_t wait = wr->interval_ms, cap = 5 * 60 * 1000, end, asked;

	for (int i = 0; i < wr->streak && wait < cap; i++)
		wait *= 2;
	if (wr->streak && wait > cap)
		wait = cap > wr->interval_ms ? cap : wr->interval_ms;
	wait += (int64_t)((double)wait * 0.2 * ((double)(vx_rand_next(&wr->rng) >> 11) / 0x1p53 - 0.5));
	/* A server's Retry-After on a request given up is honoured, whatever the interval. */
	asked = watch_retry_after(w) - vx_now_ms(&wr->ctx);
	if (wr->streak && asked > wait)
		wait = asked;
	end = vx_mono_ms(&wr->ctx) + wait;
	while (!vx_interrupted(&wr->ctx)) {
		int64_t left = end - vx_mono_ms(&wr->ctx);

		if (left <= 0)
			break;
		vx_sleep_ms(&wr->ctx, left < 500 ? left : 500);
	}
}

static int parse(struct watcher *wr, const struct cmd_args *args)
{
	const char *format = "human";
	int given = 0;

	wr->interval_ms = 30000;
	wr->dir = NULL;
	for (size_t i = 0; i < args->nopts; i++) {
		const char *v = args->opts[i].value;

		switch (args->opts[i].id) {
		case WATCH_OPT_INTERVAL:
			if (spec_parse_duration(v, &wr->interval_ms) < 0 || wr->interval_ms < 0 ||
			    wr->interval_ms > 24 * 3600 * 1000) {
				cmd_error("watch: -interval takes a duration up to 24h, such as 30s or 2m, not '%s'", v);
				return -1;
			}
			break;
		case WATCH_OPT_ONCE:
			wr->once = 1;
			break;
		case WATCH_OPT_SYNC:
			wr->sync = 1;
			break;
		case WATCH_OPT_METRICS:
			wr->metrics = v;
			break;
		case WATCH_OPT_FOLLOW:
			wr->follow = v;
			break;
		case WATCH_OPT_FORMAT:
			format = v;
			break;
		case WATCH_OPT_CYCLES: {
			char *end = NULL;
			long long n = strtoll(v, &end, 10);

			if (!*v || *end || n < 1 || n > 1000000000) {
				cmd_error("watch: -cycles takes a number from 1, not '%s'", v);
				return -1;
			}
			wr->max_cycles = (uint64_t)n;
			break;
		}
		}
	}
	for (size_t i = 0; i < args->npos; i++)
		if (cmd_dir_arg("watch", &wr->dir, &given, args->pos[i]) < 0)
			return -1;
	if (cmd_stack_dir(args, wr->dir, &wr->dir) < 0)
		return -1;
	/* Below a second only for a bounded run (a test, a benchmark): a watcher that
	 * runs for days must not ask the APIs several times a second. */
	if (wr->interval_ms < 1000 && !wr->max_cycles && !wr->once) {
		cmd_error("watch: -interval below 1s only with -cycles N");
		return -1;
	}
	if (strcmp(format, "human") && strcmp(format, "json")) {
		cmd_error("watch: -format must be human or json, not '%s'", format);
		return -1;
	}
	wr->json = !strcmp(format, "json");
	return 0;
}

/* -once: 0 nothing to do, 2 it did something, 1 error. */
static int once_code(int rc, const struct watch_result *res)
{
	if (rc < 0 || res->failed)
		return VX_EXIT_ERROR;
	return res->acted ? VX_EXIT_CHANGES : VX_EXIT_OK;
}

static int watch_exec(const struct cmd_args *args)
{
	struct watcher wr;
	struct ci ci = { NULL, 0, NULL, NULL };
	struct watch *w = NULL;
	struct watch_opts wo;
	struct watch_events ev = { line, &wr };
	struct watch_result res;
	struct vx_err err = VX_ERR_INIT;
	const char *pause;
	int rc = VX_EXIT_ERROR, crc = 0;

	memset(&wr, 0, sizeof(wr));
	memset(&res, 0, sizeof(res));
	if (parse(&wr, args) < 0)
		return VX_EXIT_USAGE;
	/* The test hook vxapply has too (util/testhook.h): stop before the first
	 * mutating request. Only that point is watch's. */
	if ((pause = getenv("VX_TEST_PAUSE")) != NULL) {
		if (strcmp(pause, "before-send")) {
			cmd_error("watch: VX_TEST_PAUSE takes before-send, not '%s'", pause);
			return VX_EXIT_ERROR;
		}
	}
	cmd_ctx_init(&wr.ctx, args->debug);
	if (cmd_clock_from_env(&wr.ctx, &wr.clock, "watch") < 0)
		return VX_EXIT_ERROR;
	wr.rng = vx_rand_seed(&wr.ctx);
	memset(&wo, 0, sizeof(wo));
	wo.dir = wr.dir;
	wo.sync = wr.sync;
	wo.follow = wr.follow;
	wo.ci = &ci;
	wo.getenv = cmd_getenv;
	wo.notify_loopback = cmd_notify_loopback();
	if (cmd_lease_from_env("watch", &wo.lease_ms) < 0 || cmd_inflight_from_env("watch", &wo.inflight_ms) < 0)
		goto done;
	if (ci_read(&ci, &wr.ctx, cmd_warn, NULL, &err) < 0 || watch_new(&w, &wr.ctx, &wo, &ev, &err) < 0) {
		cmd_report(&err, "watch");
		goto done;
	}
	while (!vx_interrupted(&wr.ctx)) {
		int64_t t0 = vx_mono_ms(&wr.ctx);

		cmd_ctx_time_limit(&wr.ctx);
		crc = watch_cycle(w, &res, &err);
		account(&wr, w, &res, crc, &err, t0);
		vx_err_release(&err);
		if (wr.once || (wr.max_cycles && wr.cycles >= wr.max_cycles))
			break;
		pause_between(&wr, w);
	}
	rc = wr.once ? once_code(crc, &res) : crc < 0 && wr.max_cycles ? VX_EXIT_ERROR : VX_EXIT_OK;
	if (!wr.once && vx_interrupted(&wr.ctx))
		line(&wr, "stop", NULL, "stopped: the lease is released");
done:
	watch_free(w);
	ci_release(&ci);
	vx_err_release(&err);
	return rc;
}

const struct cmd_entry cmd_watch_entry = {
	.name = "watch",
	.alias = NULL,
	.summary = "keep the stack reconciled: resubmit, record and notify on a timer",
	.usage = usage,
	.opts = watch_opts,
	.exec = watch_exec,
	.stack_dir = 1,
};
