/*
 * vx import: one resource into the state under a declared address
 * (reconcile/import.h). What is the same for every kind is here: the
 * checks of the address and the state, the steps a kind's reader shares
 * (a resource name's parts, whether a resource is tracked, the list of
 * differences, the run an import records). What a kind's resource is, and
 * how it is read, checked and recorded, is its kind's import slot
 * (reconcile/kind.h), in its kind file.
 */
#include "reconcile/import.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "state/state_scan.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/banned.h"

#define DIFF_MAX 6

void import_outcome_release(struct import_outcome *o)
{
	free(o->resource);
	free(o->status);
	free(o->differs);
	free(o->next);
	free(o->warning);
	memset(o, 0, sizeof(*o));
}

int import_split_name(const char *name, const char *coll1, const char *coll2, char *p, char *a, char *b,
		      size_t len)
{
	const char *want[6] = { "projects", NULL, coll1, NULL, coll2, NULL };
	char *out[6] = { NULL, p, NULL, a, NULL, b };
	const char *s = name;

	for (int i = 0; i < 6; i++) {
		size_t n = strcspn(s, "/");

		if (n == 0 || n >= len || (i < 5 && s[n] != '/') || (i == 5 && s[n]))
			return -1;
		for (size_t k = 0; k < n; k++)
			if (!isalnum((unsigned char)s[k]) && !strchr("_.-", s[k]))
				return -1;
		if (want[i] && (strlen(want[i]) != n || strncmp(s, want[i], n)))
			return -1;
		if (out[i]) {
			memcpy(out[i], s, n);
			out[i][n] = '\0';
		}
		s += n + (i < 5);
	}
	return 0;
}

int import_all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* The address that already records resource (current or past run), or NULL. */
static const char *tracked_as(const struct state *state, const char *resource)
{
	for (size_t i = 0; i < state->nrecords; i++) {
		const struct state_record *r = &state->records[i];

		if (r->current && r->current->resource && !strcmp(r->current->resource, resource))
			return r->address;
		for (size_t h = 0; h < r->nhistory; h++)
			if (r->history[h].resource && !strcmp(r->history[h].resource, resource))
				return r->address;
	}
	return NULL;
}

/*
 * VX_ECONFLICT when another state beside this one records resource: a
 * plan of either stack would cancel, replace or delete it under the other.
 */
static int tracked_elsewhere(const struct import_request *req, const char *resource, struct vx_err *err)
{
	struct state_scan_hit hit;
	int rc;

	if (!req->others)
		return 0;
	rc = state_scan_find(&hit, req->others, resource, err);
	if (rc == 0 && hit.address)
		rc = vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked by stack %s, as %s in %s: a resource "
				"belongs to one stack, and a plan of either would cancel or replace it under the "
				"other; import it into one stack only", req->address, resource, hit.stack,
				hit.address, hit.where);
	else if (rc < 0)
		rc = vx_err_wrap(err, "%s", req->address);
	state_scan_hit_release(&hit);
	return rc;
}

int import_check_untracked(const struct state *state, const struct import_request *req, const char *resource,
			   struct vx_err *err)
{
	const char *other = tracked_as(state, resource);

	if (other)
		return vx_err_set(err, VX_ECONFLICT, "%s: %s is already tracked as %s", req->address, resource,
				  other);
	return tracked_elsewhere(req, resource, err);
}

/* ---- differences, live -> declared ----------------------------------------- */

void import_diff_add(struct import_diffs *d, const char *what, const char *live, const char *decl)
{
	char *l, *w;

	d->n++;
	if (d->n > DIFF_MAX)
		return;
	l = vx_text_clean(live ? live : "(none)");
	w = vx_text_clean(decl ? decl : "(none)");
	if (!l || !w || vx_buf_printf(&d->out, "%s%s %s -> %s", d->n > 1 ? ", " : "", what, l, w) < 0)
		d->oom = 1;
	free(l);
	free(w);
}

char *import_diff_text(struct import_diffs *d)
{
	if (!d->n || d->oom)
		return NULL;
	if (d->n > DIFF_MAX && vx_buf_printf(&d->out, " and %zu more", d->n - DIFF_MAX) < 0)
		return NULL;
	return vx_buf_detach(&d->out);
}

/* ---- what an import records ------------------------------------------------ */

int import_run_init(struct state_run *run, const struct import_request *req, const char *resource,
		    const char *project, const char *region, const char *spec_hash, int64_t created_ms,
		    struct vx_err *err)
{
	memset(run, 0, sizeof(*run));
	run->resource = vx_strdup(resource);
	run->project = vx_strdup(project);
	run->region = vx_strdup(region);
	run->action = vx_strdup("import");
	run->spec_hash = vx_strdup(spec_hash);
	run->attempt = 1;
	run->created_ms = created_ms ? created_ms : req->now_ms;
	run->config_commit = vx_strdup(req->config_commit);
	run->launched_by = vx_strdup(req->launched_by);
	if (!run->resource || !run->project || !run->region || !run->action || !run->spec_hash ||
	    (req->config_commit && !run->config_commit) || (req->launched_by && !run->launched_by))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return 0;
}

int import_record_of(struct state_record **out, struct state *state, const struct import_request *req,
		     struct vx_err *err)
{
	if ((*out = state_edit(state, req->address)))
		return 0;
	return state_add_record(state, req->address, kind_of_address(req->address)->name, out, err);
}

/* ---- the entry point ------------------------------------------------------------ */

int import_resource(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err)
{
	const struct kind *k = kind_of_address(req->address);
	const struct state_record *r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!k || !stack_find_decl(st, req->address))
		return vx_err_set(err, VX_EINVAL, "%s is not declared in the stack: import adopts a resource "
				  "into a declared address; declare it first", req->address);
	r = state_find(state, req->address);
	if (r && r->current)
		return vx_err_set(err, VX_ECONFLICT, "%s is already in the state (%s); import only adds a "
				  "resource to an address that has none", req->address,
				  r->current->resource ? r->current->resource : "a create that never answered");
	if (!k->import)
		return vx_err_set(err, VX_EINVAL, "%s: vx cannot import a %s", req->address, k->name);
	rc = k->import(out, state, p, st, req, check_only, err);
	if (rc < 0)
		import_outcome_release(out);
	return rc;
}
