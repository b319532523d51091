#ifndef VX_CMD_PLANNING_H
#define VX_CMD_PLANNING_H

/* The part of plan and apply that reads the world and plans. */

#include <stddef.h>

#include "reconcile/capacity.h"
#include "reconcile/kind.h"
#include "reconcile/planner.h"
#include "reconcile/render.h"
#include "util/err.h"

struct workspace;

struct planning_opts {
	const char **targets;
	size_t ntargets;
	const char **replaces;
	size_t nreplaces;
	int refresh;
	int fail_on_quota;       /* -fail-on=quota: a job that does not fit is a plan error */
	int allow_other_lineage; /* -allow-other-lineage */
};

struct planning {
	struct live_set live;    /* what planner borrows of the workspace's live store */
	struct planner planner;
	struct render_header header;
	struct live_quota_limits limits;  /* Cloud Quotas limits, read once per service */
	int limits_read;
	struct prices prices;
	struct capacity_report capacity;
	char serial_buf[24];
};

/* The flags plan and apply share, for their cmd_entry's flag table. */
enum {
	PLANNING_OPT_TARGET = 100,
	PLANNING_OPT_REPLACE,
	PLANNING_OPT_REFRESH,
	PLANNING_OPT_FAIL_ON,
	PLANNING_OPT_ALLOW_OTHER_LINEAGE,
};
#define PLANNING_OPTS \
	{ "target", CMD_ARG_REQUIRED, PLANNING_OPT_TARGET }, \
	{ "replace", CMD_ARG_REQUIRED, PLANNING_OPT_REPLACE }, \
	{ "refresh", CMD_ARG_OPTIONAL, PLANNING_OPT_REFRESH }, \
	{ "fail-on", CMD_ARG_REQUIRED, PLANNING_OPT_FAIL_ON }, \
	{ "allow-other-lineage", CMD_ARG_NONE, PLANNING_OPT_ALLOW_OTHER_LINEAGE }

/* Handles a given shared flag (-target, -replace, -refresh[=bool], -fail-on,
 * -allow-other-lineage):
 * 1 when id is one (err set when its value is bad), else 0. */
int planning_opt(struct planning_opts *o, int id, const char *value, struct vx_err *err);
void planning_opts_release(struct planning_opts *o);

/* Refreshes (unless off) and plans ws's stack against its loaded state. */
int planning_run(struct planning *pl, struct workspace *ws, const struct planning_opts *o,
		 struct vx_err *err) VX_WUR;
int planning_has_changes(const struct planning *pl);
void planning_release(struct planning *pl);

#endif
