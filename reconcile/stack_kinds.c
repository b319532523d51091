/*
 * The stack loader's reader of the Stack document (with its state backend);
 * each kind's documents are read by its own load_* slots (struct kind), in
 * its kind files. Problems are reported through the loader (stack_loader.h)
 * and reading goes on, so one run reports all of them.
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

static const char *const stack_keys[] = { "kind", "name", "project", "region", "state", "labels",
					  "prices", "failOn", "notify", "budget" };
static const char *const fail_on_names[] = { "quota", "budget" };
static const char *const state_keys[] = { "backend", "path", "remote", "branch", "bucket" };

/* ---------------------------------------------------------------------- */
/* Stack */

/* stack_loader.h */
int stack_get_region(struct loader *L, const struct ynode *doc, const struct ynode **node,
		     char **out)
{
	const char *s;

	if (!stack_get_str(&s, node, L, doc, "", "region", 0))
		return 0;
	if (!stack_names_region_valid(s))
		stack_err(L, *node, "region: \"%s\" is not a region (like \"us-central1\")", s);
	else if (stack_regions_check(L, *node, "region", s, NULL) == 0)
		*out = stack_dup_opt(L, s);
	return 1;
}

static void read_state(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *m = stack_get_map(L, doc, "state", "state"), *v;
	struct stack_state_cfg *sc = &st->state;
	const char *s;
	int e;

	sc->backend = STACK_BACKEND_GIT;
	if (m) {
		stack_check_keys(L, m, "state", state_keys, ARRAY_SIZE(state_keys));
		v = stack_get_value(m, "backend");
		if (v) {
			if (!stack_is_string(v)) {
				stack_wrong_type(L, v, "state.backend", "string");
			} else {
				for (e = 0; e < (int)ARRAY_SIZE(stack_backend_names); e++)
					if (!strcmp(v->str, stack_backend_names[e]))
						break;
				if (e < (int)ARRAY_SIZE(stack_backend_names))
					sc->backend = (enum stack_backend)(e + 1);
				else
					stack_unknown_word(L, v, "state.backend", "value", stack_backend_names,
						     ARRAY_SIZE(stack_backend_names));
			}
		}
		if (stack_get_str(&s, &v, L, m, "state", "path", 0)) {
			if (!*s)
				stack_err(L, v, "state.path: empty");
			else
				sc->path = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "remote", 0)) {
			if (sc->backend != STACK_BACKEND_GIT)
				stack_err(L, v, "state.remote: only for backend git");
			else if (!*s || strchr(s, ' '))
				stack_err(L, v, "state.remote: \"%s\" is not a remote name or URL", s);
			else
				sc->remote = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "branch", 0)) {
			if (sc->backend != STACK_BACKEND_GIT)
				stack_err(L, v, "state.branch: only for backend git");
			else if (!strncmp(s, "refs/heads/", 11))
				/* vx adds refs/heads/ itself */
				stack_err(L, v, "state.branch: \"%s\" is a ref name: give the branch name "
				     "without refs/heads/ (\"%s\")", s, s + 11);
			else if (!strncmp(s, "refs/", 5))
				stack_err(L, v, "state.branch: \"%s\" is a ref name, not a branch name: give "
				     "the branch name without refs/heads/", s);
			else if (!stack_names_branch_valid(s))
				stack_err(L, v, "state.branch: \"%s\" is not a valid branch name", s);
			else
				sc->branch = stack_dup_opt(L, s);
		}
		if (stack_get_str(&s, &v, L, m, "state", "bucket", 0)) {
			if (sc->backend != STACK_BACKEND_GCS)
				stack_err(L, v, "state.bucket: only for backend gcs");
			else if (!*s || !strncmp(s, "gs://", 5) || strchr(s, '/'))
				stack_err(L, v, "state.bucket: \"%s\" is not a bucket name (write it without "
				     "gs:// and without a path)", s);
			else
				sc->bucket = stack_dup_opt(L, s);
		}
	}
	/* Like Terraform's local backend and its terraform.tfstate: a file
	 * beside the stack, relative to the stack directory as any path is. */
	if (sc->backend == STACK_BACKEND_FILE && !sc->path && !(m && stack_get_value(m, "path"))) {
		sc->path = vx_strdup(STACK_STATE_FILE_DEFAULT);
		if (!sc->path)
			stack_oom(L);
	}
	if (sc->backend == STACK_BACKEND_GCS && !sc->bucket && !(m && ynode_get(m, "bucket")))
		stack_err(L, m ? m : doc, "state: backend gcs needs \"bucket\"");
	if (sc->backend == STACK_BACKEND_GIT && !sc->branch && st->name) {
		sc->branch = vx_asprintf("vx/state/%s", st->name);
		if (!sc->branch)
			stack_oom(L);
	}
}

/* failOn: [quota, budget]: what turns a plan warning into a plan error, as -fail-on does. */
static void read_fail_on(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *on = stack_get_value(doc, "failOn");

	if (on && on->kind != YNODE_SEQ) {
		stack_wrong_type(L, on, "failOn", "sequence");
		return;
	}
	for (size_t i = 0; on && i < on->n; i++) {
		const struct ynode *it = on->items[i];
		char path[48];

		snprintf(path, sizeof(path), "failOn[%zu]", i);
		if (!stack_is_string(it))
			stack_wrong_type(L, it, path, "string");
		else if (!strcmp(it->str, fail_on_names[0]))
			st->fail_on_quota = 1;
		else if (!strcmp(it->str, fail_on_names[1]))
			st->fail_on_budget = 1;
		else
			stack_unknown_word(L, it, path, "value", fail_on_names, ARRAY_SIZE(fail_on_names));
	}
}

void stack_kinds_read_stack(struct stack *st, struct loader *L, const struct ynode *doc)
{
	const struct ynode *v;
	const char *name, *s;

	name = stack_read_name(L, doc, &stack_doc_kind);
	stack_check_keys(L, doc, "", stack_keys, ARRAY_SIZE(stack_keys));
	if (name) {
		if (stack_decl_init(&st->d, L, "stack", name, doc) < 0)
			return;
		st->name = stack_dup_opt(L, name);
	}
	if (stack_get_str(&s, &v, L, doc, "", "project", 1)) {
		if (!stack_names_project_valid(s))
			stack_err(L, v, "project: \"%s\" is not a project ID (6 to 30 lowercase letters, "
			     "digits and \"-\", starting with a letter)", s);
		else
			st->project = stack_dup_opt(L, s);
	}
	L->stack_region = stack_get_value(doc, "region") != NULL;
	(void)stack_get_region(L, doc, &v, &st->region);
	read_state(L, st, doc);
	stack_get_string_map(&st->labels, L, doc, "labels", 1);
	if (stack_get_str(&s, &v, L, doc, "", "prices", 0)) {
		if (!*s)
			stack_err(L, v, "prices: an empty path; leave it out for the table shipped with vx");
		else
			st->prices = stack_dup_opt(L, s);
	}
	read_fail_on(L, st, doc);
	stack_notify_read(st, L, doc);
	stack_budget_read(st, L, doc);
}
