/*
 * Unit tests for reconcile/stack: loading good stacks (every field and
 * default), the label merge, the declaration hashes, and every rule of the
 * loader with its exact message and position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <git2.h>

#include "reconcile/kind_job.h"
#include "reconcile/kind_reservation.h"
#include "reconcile/kind_quota.h"
#include "reconcile/planner.h"
#include "reconcile/policy_rules.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "reconcile/notify.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

#define STACK_DOC "kind: Stack\nname: research\nproject: my-project\nregion: us-central1\n"
#define SPEC "spec:\n  workerPoolSpecs:\n    - machineSpec: {machineType: n1-standard-4}\n" \
	"      replicaCount: 1\n      containerSpec: {imageUri: gcr.io/p/i:1}\n"
#define JOB(name) "kind: CustomJob\nname: " name "\n" SPEC

/* The data directory: VX_SRCDIR when set (tests run from elsewhere), else the repository root. */
static char *data_dir(const char *sub)
{
	const char *root = getenv("VX_SRCDIR");

	return vx_asprintf("%s%stests/data/stacks/%s", root ? root : "", root ? "/" : "", sub);
}

/* Every diagnostic, formatted, one per line (plus "... and N more"). Caller frees. */
static char *all_diags(const struct vx_diags *d)
{
	struct vx_buf b = VX_BUF_INIT;

	for (size_t i = 0; i < d->n; i++) {
		char *s = vx_diag_format(&d->items[i]);

		assert_non_null(s);
		assert_int_equal(vx_buf_printf(&b, "%s\n", s), 0);
		free(s);
	}
	if (d->dropped)
		assert_int_equal(vx_buf_printf(&b, "... and %zu more\n", d->dropped), 0);
	return vx_buf_detach(&b);
}

/* Loads files (name, text, name, text, ..., NULL) from memory as directory "t". */
static int load_files(struct stack **st, struct vx_diags *d, ...)
{
	struct stack_source src[16];
	struct vx_err err = VX_ERR_INIT;
	size_t n = 0;
	va_list ap;
	int rc;

	va_start(ap, d);
	for (;;) {
		const char *name = va_arg(ap, const char *);

		if (!name)
			break;
		assert_true(n < 16);
		src[n].name = name;
		src[n].data = va_arg(ap, const char *);
		src[n].len = strlen(src[n].data);
		n++;
	}
	va_end(ap);
	rc = stack_load_mem(st, "t", src, n, NULL, d, &err);
	assert_null(err.msg);
	return rc;
}

/* Loads one file t/s.yaml and expects exactly the diagnostics in want. */
static void expect_errors(const char *yaml, const char *want)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	char *got;

	assert_int_equal(load_files(&st, &d, "s.yaml", yaml, NULL), VX_EINVAL);
	assert_null(st);
	got = all_diags(&d);
	assert_string_equal(got, want);
	free(got);
	vx_diags_release(&d);
}

/* Loads one file and expects it valid. */
static struct stack *expect_valid(const char *yaml)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	char *got;
	int rc = load_files(&st, &d, "s.yaml", yaml, NULL);

	got = all_diags(&d);
	assert_string_equal(got, "");
	free(got);
	assert_int_equal(rc, 0);
	assert_non_null(st);
	vx_diags_release(&d);
	return st;
}

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!strchr("0123456789abcdef", *s))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------------- */

static void test_good_dir(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	const struct stack_job *a, *b;
	const struct stack_reservation *r;
	const struct stack_quota *q;
	char *dir = data_dir("good"), *file;

	(void)state;
	assert_int_equal(stack_load(&st, dir, NULL, &d, &err), 0);
	assert_int_equal(d.n, 0);
	assert_non_null(st);
	assert_string_equal(st->name, "research");
	assert_string_equal(st->d.address, "stack.research");
	assert_string_equal(st->project, "my-project");
	assert_string_equal(st->region, "us-central1");
	assert_int_equal(st->state.backend, STACK_BACKEND_GIT);
	assert_string_equal(st->state.remote, "origin");
	assert_string_equal(st->state.branch, "vx/state/research");
	assert_null(st->state.path);
	assert_int_equal(st->labels.n, 2);
	assert_string_equal(stack_labels_get(&st->labels, "team"), "nlp");
	assert_true(is_hex64(st->decl_hash));

	assert_int_equal(stack_count(st, &kind_job), 2);
	assert_int_equal(stack_count(st, &kind_reservation), 1);
	assert_int_equal(stack_count(st, &kind_quota), 1);
	a = &stack_jobs(st, NULL)[0];
	b = &stack_jobs(st, NULL)[1];
	assert_string_equal(a->d.address, "job.train-a");
	file = vx_asprintf("%s/jobs.yml", dir);
	assert_string_equal(a->d.file, file);
	free(file);
	assert_int_equal(a->d.line, 1);
	assert_int_equal(a->d.col, 1);
	assert_int_equal(b->d.line, 14);
	assert_string_equal(a->region, "us-central1");
	assert_string_equal(a->display_name, "train-a");
	/* labels: the Stack's (team: nlp, env: prod) overlaid by the job's (env: dev, model) */
	assert_int_equal(a->labels.n, 3);
	assert_string_equal(a->labels.items[0].key, "env");
	assert_string_equal(a->labels.items[0].value, "dev");
	assert_string_equal(a->labels.items[1].key, "model");
	assert_string_equal(a->labels.items[2].key, "team");
	assert_string_equal(a->labels.items[2].value, "nlp");
	assert_int_equal(a->run, 2);
	assert_int_equal(a->resubmit_on,
			 STACK_FAIL_STOCKOUT | STACK_FAIL_PREEMPTED | STACK_FAIL_WAIT_TIMEOUT);
	assert_int_equal(a->max_attempts, 3);
	assert_int_equal(a->on_change, STACK_ON_CHANGE_AFTER_FINISH);
	assert_int_equal(a->protect, 1);
	assert_true(is_hex64(a->spec.hash));
	assert_non_null(a->spec.canonical_json);
	assert_non_null(a->spec.reservation);
	assert_string_equal(a->spec.reservation, "h100-pool");
	assert_non_null(strstr(a->spec.canonical_json,
			       "projects/my-project/zones/us-central1-a/reservations/h100-pool"));
	assert_true(is_hex64(a->d.hash));

	/* defaults */
	assert_string_equal(b->region, "europe-west4");
	assert_string_equal(b->display_name, "Train B");
	assert_int_equal(b->labels.n, 2);
	assert_int_equal(b->run, 1);
	assert_int_equal(b->resubmit_on, 0);
	assert_int_equal(b->max_attempts, 1);
	assert_int_equal(b->on_change, STACK_ON_CHANGE_REPLACE);
	assert_int_equal(b->protect, 0);

	r = stack_find_reservation(st, "h100-pool");
	assert_ptr_equal(r, &stack_reservations(st, NULL)[0]);
	assert_string_equal(r->d.address, "reservation.h100-pool");
	assert_string_equal(r->zone, "us-central1-a");
	assert_string_equal(r->machine_type, "a3-highgpu-8g");
	assert_int_equal(r->naccelerators, 1);
	assert_string_equal(r->accelerators[0].type, "nvidia-h100-80gb");
	assert_int_equal(r->accelerators[0].count, 8);
	assert_int_equal(r->count, 2);
	assert_int_equal(r->specific_required, 1);
	assert_null(r->description);

	q = stack_find_quota(st, "h100");
	assert_non_null(q);
	assert_string_equal(q->d.address, "quota.h100");
	assert_string_equal(q->service, "aiplatform.googleapis.com");
	assert_string_equal(q->quota_id, "CustomModelTrainingH100GPUsPerProjectPerRegion");
	assert_string_equal(stack_labels_get(&q->dimensions, "region"), "us-central1");
	assert_int_equal(q->preferred_value, 16);
	assert_string_equal(q->contact_email, "infra@example.com");
	assert_string_equal(q->justification, "training");

	assert_ptr_equal(stack_find_job(st, "train-b"), b);
	assert_ptr_equal(stack_find_decl(st, "job.train-a"), &a->d);
	assert_ptr_equal(stack_find_decl(st, "reservation.h100-pool"), &r->d);
	assert_ptr_equal(stack_find_decl(st, "quota.h100"), &q->d);
	assert_ptr_equal(stack_find_decl(st, "stack.research"), &st->d);
	assert_null(stack_find_decl(st, "job.nope"));
	assert_null(stack_find_decl(st, "train-a"));
	assert_null(stack_find_job(st, "h100-pool"));
	stack_free(st);
	free(dir);
	vx_diags_release(&d);
}

static void test_missing_dir(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;

	(void)state;
	assert_int_equal(stack_load(&st, "/nonexistent/vx-stack", NULL, &d, &err), VX_ENOTFOUND);
	assert_null(st);
	assert_string_equal(err.msg, "reading /nonexistent/vx-stack: No such file or directory");
	assert_int_equal(d.n, 0);
	vx_err_release(&err);
}

static void test_bad_dirs(void **state)
{
	static const struct {
		const char *dir, *want;
		int prefix; /* the YAML layer's own message: check the position only */
	} cases[] = {
		{ "no-yaml", "DIR: no *.yaml or *.yml files: a stack is a directory of YAML files "
			     "with one \"kind: Stack\"\n", 0 },
		{ "no-stack", "DIR: no Stack: one document must be \"kind: Stack\" (with name "
			      "and project)\n", 0 },
		{ "empty", "DIR: no Stack: one document must be \"kind: Stack\" (with name and "
			   "project)\nDIR/stack.yaml:1:1: empty file: no YAML document in it\n", 0 },
		{ "two-stacks", "DIR/stack.yaml:5:1: a second Stack: this directory's Stack is "
				"declared at DIR/stack.yaml:1:1 (one Stack per directory)\n", 0 },
		{ "unknown-field", "DIR/stack.yaml:5:1: Stack \"s\": unknown field \"lables\" (did "
				   "you mean \"labels\"?)\n", 0 },
		{ "tab", "DIR/stack.yaml:5:1: ", 1 },
		{ "dupkey", "DIR/stack.yaml:4:1: ", 1 },
		{ "utf8", "DIR/stack.yaml:4:12: ", 1 },
		{ "bomb", "DIR/stack.yaml:", 1 },
		{ "syntax", "DIR/stack.yaml:5:1: ", 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vx_diags d = VX_DIAGS_INIT;
		struct vx_err err = VX_ERR_INIT;
		struct stack *st = NULL;
		char *dir = data_dir(cases[i].dir), *got, *want;
		struct vx_buf w = VX_BUF_INIT;
		const char *p;

		/* replace DIR in the expectation with the real directory */
		for (p = cases[i].want; *p; p++) {
			if (!strncmp(p, "DIR", 3)) {
				assert_int_equal(vx_buf_adds(&w, dir), 0);
				p += 2;
			} else {
				assert_int_equal(vx_buf_addc(&w, *p), 0);
			}
		}
		want = vx_buf_detach(&w);
		assert_int_equal(stack_load(&st, dir, NULL, &d, &err), VX_EINVAL);
		assert_null(st);
		assert_null(err.msg);
		got = all_diags(&d);
		if (cases[i].prefix) {
			if (strncmp(got, want, strlen(want)))
				fail_msg("%s: got %s", cases[i].dir, got);
			assert_int_equal(d.n, 1);
		} else {
			assert_string_equal(got, want);
		}
		free(got);
		free(want);
		free(dir);
		vx_diags_release(&d);
	}
}

/* The example in the brief, to the character. */
/*
 * The Stack read ahead (stack_peek): the Stack's own fields, which the
 * whole load agrees with (stack_same_home); whether any file holds a job;
 * and no answer, never a report, when the Stack has a problem.
 */
static void test_peek(void **state)
{
	static const char *const none[] = { "no-yaml", "no-stack", "empty", "unknown-field", "tab",
					     "syntax", "utf8" };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *peek = NULL, *st = NULL, other;
	char *dir = data_dir("good");
	int jobs = -1;

	(void)state;
	assert_int_equal(stack_peek(&peek, &jobs, dir, &err), 0);
	assert_int_equal(jobs, 1);
	assert_string_equal(peek->name, "research");
	assert_string_equal(peek->project, "my-project");
	assert_int_equal(stack_count(peek, &kind_job), 0);
	assert_int_equal(stack_load(&st, dir, NULL, &d, &err), 0);
	assert_true(stack_same_home(peek, st));
	other = *st;
	other.region = (char *)(uintptr_t)"europe-west4";
	assert_false(stack_same_home(peek, &other));
	other = *st;
	other.state.branch = (char *)(uintptr_t)"elsewhere";
	assert_false(stack_same_home(peek, &other));
	stack_free(peek);
	stack_free(st);
	free(dir);

	/* Without jobs: two Stacks read ahead as the first (the load reports the second). */
	dir = data_dir("two-stacks");
	assert_int_equal(stack_peek(&peek, &jobs, dir, &err), 0);
	assert_int_equal(jobs, 0);
	stack_free(peek);
	free(dir);

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		dir = data_dir(none[i]);
		peek = NULL;
		if (stack_peek(&peek, &jobs, dir, &err) != VX_ENOTFOUND)
			fail_msg("%s: a Stack read ahead", none[i]);
		assert_null(peek);
		vx_err_release(&err);
		free(dir);
	}
	vx_diags_release(&d);
	vx_err_release(&err);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static char *joined(const char *a, const char *b)
{
	char *s = vx_asprintf("%s/%s", a, b);

	assert_non_null(s);
	return s;
}

/*
 * The regions a plan lists before the stack loads (stack_peek_regions): a
 * top-level "region: NAME" of a job document, plain or quoted, with or
 * without a comment, whichever of kind and region comes first; not an
 * indented one (a fallback rung's), an expression, another kind's (a
 * Stack's, a persistent resource's), or a name that is not a region's.
 */
static void test_peek_regions(void **state)
{
	char tmpl[] = "/tmp/vx-test-peek-regions-XXXXXX", **got = NULL, *f;
	struct vx_err err = VX_ERR_INIT;
	size_t n = 0;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	f = joined(tmpl, "stack.yaml");
	put(f, STACK_DOC);
	free(f);
	f = joined(tmpl, "jobs.yaml");
	put(f, JOB("a") "region: us-east4\n"
		"---\nregion: \"europe-west4\"  # quoted, before its kind\n" JOB("b")
		"---\n" JOB("c") "region: us-east4\n"
		"---\n" JOB("d") "fallback:\n  - region: asia-east1\n"
		"---\n" JOB("e") "region: ${{ matrix.r }}\n"
		"---\n" JOB("f") "region: Us-west1\n"
		"---\nkind: PersistentResource\nname: p\nregion: us-west4\n"
		"...\n" JOB("g") "region: 'us-south1' # last\r\n");
	free(f);
	assert_int_equal(stack_peek_regions(&got, &n, tmpl, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(got[0], "us-east4");
	assert_string_equal(got[1], "europe-west4");
	assert_string_equal(got[2], "us-south1");
	for (size_t i = 0; i < n; i++)
		free(got[i]);
	free(got);
	f = joined(tmpl, "stack.yaml");
	assert_int_equal(unlink(f), 0);
	free(f);
	f = joined(tmpl, "jobs.yaml");
	assert_int_equal(unlink(f), 0);
	free(f);
	assert_int_equal(rmdir(tmpl), 0);
}

/*
 * The declaration hash of a stack whose jobs set every field the hash
 * writes as a number or a flag (run, maxAttempts, protect, resubmitOn), as
 * the hash was before it was written without printf: a saved plan and a
 * state name it, so its bytes must not move.
 */
static void test_decl_hash_pinned(void **state)
{
	static const char stack_yaml[] =
		"kind: Stack\n"
		"name: pin\n"
		"project: vx-e2e\n"
		"region: us-central1\n"
		"labels: {team: e2e}\n";
	static const char jobs_yaml[] =
		"---\n"
		"kind: CustomJob\n"
		"name: a\n"
		"spec:\n"
		"  workerPoolSpecs:\n"
		"    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
		"      replicaCount: 1\n"
		"      containerSpec:\n"
		"        imageUri: \"us-docker.pkg.dev/p/r/trainer:1.0\"\n"
		"        args: [\"--epochs\", \"3\"]\n"
		"  scheduling: {strategy: STANDARD}\n"
		"  baseOutputDirectory: {outputUriPrefix: \"gs://e2e-bucket/a\"}\n"
		"run: 7\n"
		"resubmit: {on: [stockout, preempted], maxAttempts: 12}\n"
		"onChange: replace\n"
		"protect: true\n"
		"---\n"
		"kind: CustomJob\n"
		"name: b\n"
		"spec:\n"
		"  workerPoolSpecs:\n"
		"    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
		"      replicaCount: 1\n"
		"      containerSpec:\n"
		"        imageUri: \"us-docker.pkg.dev/p/r/trainer:1.0\"\n"
		"        args: [\"--epochs\", \"3\"]\n"
		"  scheduling: {strategy: STANDARD}\n"
		"  baseOutputDirectory: {outputUriPrefix: \"gs://e2e-bucket/b\"}\n"
		"run: 1\n"
		"resubmit: {on: [preempted], maxAttempts: 3}\n"
		"onChange: replace\n"
		"protect: false\n";
	char tmpl[] = "/tmp/vx-test-decl-hash-XXXXXX", *s, *j;
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	s = joined(tmpl, "stack.yaml");
	j = joined(tmpl, "jobs.yaml");
	put(s, stack_yaml);
	put(j, jobs_yaml);
	assert_int_equal(stack_load(&st, tmpl, NULL, &d, &err), 0);
	assert_string_equal(st->decl_hash, "24e24e6ed1cf42f1104e2a66501038d7997adbf7ec0fabd1ed5a3edf9168e450");
	stack_free(st);
	vx_diags_release(&d);
	assert_int_equal(unlink(s), 0);
	assert_int_equal(unlink(j), 0);
	assert_int_equal(rmdir(tmpl), 0);
	free(s);
	free(j);
}

/* The one diagnostic of a load that must refuse dir; caller frees. */
static char *refusal(const char *dir)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	char *got;

	assert_int_equal(stack_load(&st, dir, NULL, &d, &err), VX_EINVAL);
	assert_null(st);
	assert_null(err.msg);
	assert_int_equal(d.n, 1);
	got = all_diags(&d);
	vx_diags_release(&d);
	return got;
}

/*
 * A stack file that resolves outside the repository holding the stack (the
 * nearest of the directory and its parents with a .git, by name) is refused at
 * FILE:1:1, with the directory named as given (relative, with "..", with a
 * trailing slash); without a repository, outside the stack directory. The read
 * ahead reads nothing from it. A link inside the repository is read.
 */
static void test_links_out(void **state)
{
	char tmpl[] = "/tmp/vx-test-links-XXXXXX", cwd[PATH_MAX], *top, *repo, *stack, *sub, *out;
	char *common, *git, *nogit, *link, *target, *want, *got, *dir;
	struct vx_err err = VX_ERR_INIT;
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	int jobs = 0;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_non_null(mkdtemp(tmpl));
	top = realpath(tmpl, NULL);
	assert_non_null(top);
	repo = joined(top, "repo");
	stack = joined(repo, "stack");
	sub = joined(repo, "sub");
	common = joined(repo, "common");
	git = joined(repo, ".git");
	nogit = joined(repo, "not-git");
	out = joined(top, "out");
	for (char *const *p = (char *const[]){ repo, stack, sub, common, git, out, NULL }; *p; p++)
		assert_int_equal(mkdir(*p, 0700), 0);
	link = joined(stack, "x.yaml");
	target = joined(out, "x.yaml");
	{
		char *s = joined(stack, "stack.yaml"), *c = joined(common, "x.yaml");

		put(s, STACK_DOC);
		put(target, JOB("x"));
		put(c, JOB("x"));
		free(s);
		free(c);
	}
	assert_int_equal(symlink(target, link), 0);

	dir = vx_asprintf("%s/sub/../stack/", repo);
	want = vx_asprintf("%sx.yaml:1:1: this stack file resolves to %s, outside the repository %s: "
			   "git versions only the link, so the declaration could change with no "
			   "change in git while the plan names a clean commit; copy the file into "
			   "the repository instead of linking to it\n", dir, target, repo);
	got = refusal(dir);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(stack_peek(&st, &jobs, dir, &err), VX_ENOTFOUND);
	assert_null(st);
	vx_err_release(&err);
	free(dir);

	/* Relative to the working directory. */
	assert_int_equal(chdir(repo), 0);
	want = vx_asprintf("stack/x.yaml:1:1: this stack file resolves to %s, outside the "
			   "repository %s: git versions only the link, so the declaration could "
			   "change with no change in git while the plan names a clean commit; copy "
			   "the file into the repository instead of linking to it\n", target, repo);
	got = refusal("stack");
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(got, want);
	free(got);
	free(want);

	/* The checkout itself reached through a link: still that repository. */
	dir = vx_asprintf("%s/alias/stack", top);
	got = vx_asprintf("%s/alias", top);
	assert_int_equal(symlink(repo, got), 0);
	free(got);
	want = vx_asprintf("%s/x.yaml:1:1: this stack file resolves to %s, outside the repository "
			   "%s: git versions only the link, so the declaration could change with no "
			   "change in git while the plan names a clean commit; copy the file into "
			   "the repository instead of linking to it\n", dir, target, repo);
	got = refusal(dir);
	assert_string_equal(got, want);
	free(got);
	free(want);

	/* Linked inside the repository: read, by either path. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("../common/x.yaml", link), 0);
	assert_int_equal(stack_load(&st, stack, NULL, &d, &err), 0);
	assert_int_equal(stack_count(st, &kind_job), 1);
	stack_free(st);
	st = NULL;
	assert_int_equal(stack_load(&st, dir, NULL, &d, &err), 0);
	assert_int_equal(stack_count(st, &kind_job), 1);
	stack_free(st);
	st = NULL;
	free(dir);

	/* No repository: the stack directory is the bound. */
	assert_int_equal(rename(git, nogit), 0);
	want = vx_asprintf("%s:1:1: this stack file resolves to %s/x.yaml, outside the stack "
			   "directory %s, and no git repository holds the stack; copy the file into "
			   "the stack directory instead of linking to it\n", link, common, stack);
	got = refusal(stack);
	assert_string_equal(got, want);
	free(got);
	free(want);

	{
		char *rm = vx_asprintf("rm -rf '%s'", top);

		assert_int_equal(system(rm), 0);
		free(rm);
	}
	vx_diags_release(&d);
	vx_err_release(&err);
	free(top);
	free(repo);
	free(stack);
	free(sub);
	free(common);
	free(git);
	free(nogit);
	free(out);
	free(link);
	free(target);
}

static void test_enum_did_you_mean(void **state)
{
	(void)state;
	expect_errors(STACK_DOC "---\n" JOB("a") "onChange: replce\n",
		      "t/s.yaml:13:11: CustomJob \"a\": onChange: unknown value \"replce\" (did you "
		      "mean \"replace\"?)\n");
	expect_errors(STACK_DOC "---\n" JOB("a") "onChange: whatever\n",
		      "t/s.yaml:13:11: CustomJob \"a\": onChange: unknown value \"whatever\" (one "
		      "of replace, after-finish, ignore)\n");
}

static void test_unknown_keys(void **state)
{
	(void)state;
	expect_errors(STACK_DOC "regoin: x\n",
		      "t/s.yaml:5:1: Stack \"research\": unknown field \"regoin\" (did you mean "
		      "\"region\"?)\n");
	expect_errors(STACK_DOC "---\n" JOB("a") "resubmit: {on: [stockout], maxAtempts: 2}\n",
		      "t/s.yaml:13:28: CustomJob \"a\": resubmit: unknown field \"maxAtempts\" (did "
		      "you mean \"maxAttempts\"?)\n");
	expect_errors(STACK_DOC "state: {backend: git, brnch: x}\n",
		      "t/s.yaml:5:23: Stack \"research\": state: unknown field \"brnch\" (did you "
		      "mean \"branch\"?)\n");
	/* the spec's own checker, with the job's prefix */
	expect_errors(STACK_DOC "---\nkind: CustomJob\nname: a\nspec:\n  workerPoolSpec: []\n",
		      "t/s.yaml:9:3: CustomJob \"a\": spec: unknown field \"workerPoolSpec\" (did "
		      "you mean \"workerPoolSpecs\"?)\n"
		      "t/s.yaml:9:3: CustomJob \"a\": spec: missing required field "
		      "\"workerPoolSpecs\"\n");
}

/* kind: Policy (reconcile/policy_rules.h): read, held, hashed, and only tightening the repository's. */
#define POLICY_DOC(rules) "---\nkind: Policy\nname: team\nrules:\n" rules

static void test_policy(void **state)
{
	struct stack *plain, *held;

	(void)state;
	expect_errors(STACK_DOC POLICY_DOC("  regions: [europe-west4]\n") "---\n" JOB("a"),
		      "t/s.yaml:11:1: CustomJob \"a\": region: us-central1 (the Stack's) is not allowed by policy "
		      "\"team\" (rules.regions, t/s.yaml:9)\n");
	expect_errors(STACK_DOC POLICY_DOC("  regions: [us-central1]\n") POLICY_DOC("  maxGpusPerJob: 1\n"),
		      "t/s.yaml:11:1: a second Policy: this stack's Policy is declared at t/s.yaml:6:1 (one Policy "
		      "per stack)\n");
	expect_errors(STACK_DOC POLICY_DOC("  maxGpusPerJob: -1\n  regionz: []\n"),
		      "t/s.yaml:9:18: Policy \"team\": rules.maxGpusPerJob: -1 is out of range (at least 0)\n"
		      "t/s.yaml:10:3: Policy \"team\": rules: unknown field \"regionz\" (did you mean \"regions\"?)\n");
	/* a Policy is part of the declaration hash; one that holds changes nothing else */
	plain = expect_valid(STACK_DOC "---\n" JOB("a"));
	held = expect_valid(STACK_DOC POLICY_DOC("  regions: [us-central1]\n") "---\n" JOB("a"));
	assert_non_null(held->policy);
	assert_null(plain->policy);
	assert_string_not_equal(plain->decl_hash, held->decl_hash);
	stack_free(plain);
	stack_free(held);
}

static void test_policy_repository(void **state)
{
	static const char repo[] = "kind: Policy\nname: org\nrules:\n  maxGpusPerJob: 8\n  reservations: {allow: false}\n";
	static const char own[] = STACK_DOC POLICY_DOC("  maxGpusPerJob: 16\n  reservations: {allow: false}\n");
	struct stack_source files[] = { { "s.yaml", own, sizeof(own) - 1 } };
	struct stack_source policy = { ".vx/policy.yaml", repo, sizeof(repo) - 1 };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	char *got;

	(void)state;
	assert_int_equal(stack_load_mem_policy(&st, "t", files, 1, &policy, NULL, &d, &err), VX_EINVAL);
	got = all_diags(&d);
	assert_string_equal(got, "t/s.yaml:9:18: Policy \"team\": rules.maxGpusPerJob: 16 is more than the "
				 "repository's policy \"org\" (rules.maxGpusPerJob, .vx/policy.yaml:4) allows (8): a "
				 "stack's Policy may only tighten it\n");
	free(got);
	vx_diags_release(&d);
	/* without the repository's, the same stack holds */
	assert_int_equal(stack_load_mem_policy(&st, "t", files, 1, NULL, NULL, &d, &err), 0);
	assert_non_null(st->policy);
	assert_int_equal(policy_rules_count(st->policy), 2);
	stack_free(st);
	vx_diags_release(&d);
}

/*
 * A stack that breaks its policy: refused by every load but the lenient one,
 * which keeps each violation with its address; with any other problem, the
 * lenient load refuses it too, with every problem sorted.
 */
static void test_policy_lenient(void **state)
{
	static const char ok[] = STACK_DOC POLICY_DOC("  regions: [europe-west4]\n") "---\n" JOB("a") "---\nkind: CustomJob\nname: b\nregion: europe-west4\n" SPEC;
	static const char bad[] = STACK_DOC "bogus: 1\n" POLICY_DOC("  regions: [europe-west4]\n") "---\n" JOB("a");
	static const char why[] = "t/s.yaml:11:1: CustomJob \"a\": region: us-central1 (the Stack's) is not allowed "
				  "by policy \"team\" (rules.regions, t/s.yaml:9)\n";
	struct stack_source files[] = { { "s.yaml", ok, sizeof(ok) - 1 } };
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	const struct policy_violation *v;
	char *got;

	(void)state;
	assert_int_equal(stack_load_mem_policy(&st, "t", files, 1, NULL, NULL, &d, &err), VX_EINVAL);
	got = all_diags(&d);
	assert_string_equal(got, why);
	free(got);
	vx_diags_release(&d);
	assert_int_equal(stack_load_lenient(&st, "t", files, 1, NULL, &d, &err), 0);
	assert_int_equal(vx_diags_count(&d), 0);
	assert_int_equal(st->policy->nviolations, 1);
	v = policy_rules_violation_of(st->policy, "job.a");
	assert_non_null(v);
	assert_string_equal(v->address, "job.a");
	assert_string_equal(v->file, "t/s.yaml");
	assert_int_equal(v->line, 11);
	assert_int_equal(v->col, 1);
	assert_string_equal(v->msg, "CustomJob \"a\": region: us-central1 (the Stack's) is not allowed by policy "
				    "\"team\" (rules.regions, t/s.yaml:9)");
	assert_null(policy_rules_violation_of(st->policy, "job.b"));
	stack_free(st);
	files[0].data = bad;
	files[0].len = sizeof(bad) - 1;
	assert_int_equal(stack_load_lenient(&st, "t", files, 1, NULL, &d, &err), VX_EINVAL);
	assert_null(st);
	got = all_diags(&d);
	assert_string_equal(got, "t/s.yaml:5:1: Stack \"research\": unknown field \"bogus\" (one of kind, name, "
				 "project, region, state, labels, prices, failOn, notify, budget)\n"
				 "t/s.yaml:12:1: CustomJob \"a\": region: us-central1 (the Stack's) is not allowed by "
				 "policy \"team\" (rules.regions, t/s.yaml:10)\n");
	free(got);
	vx_diags_release(&d);
	vx_err_release(&err);
}

static void test_kinds(void **state)
{
	(void)state;
	expect_errors(STACK_DOC "---\nkind: CustomJobs\nname: a\n",
		      "t/s.yaml:6:7: kind: unknown value \"CustomJobs\" (did you mean "
		      "\"CustomJob\"?)\n");
	expect_errors(STACK_DOC "---\nname: a\n",
		      "t/s.yaml:6:1: document has no \"kind\" (one of Stack, CustomJob, "
		      "PersistentResource, FutureReservation, Reservation, QuotaPreference, Policy)\n");
	expect_errors(STACK_DOC "---\n- a\n",
		      "t/s.yaml:6:1: a document must be a mapping with a \"kind\", got a "
		      "sequence\n");
	expect_errors(STACK_DOC "---\nkind: 3\n",
		      "t/s.yaml:6:7: kind: expected a string, got the number 3; quote it: \"3\"\n");
	expect_errors(JOB("a"),
		      "t: no Stack: one document must be \"kind: Stack\" (with name and "
		      "project)\n");
}

static void test_types(void **state)
{
	(void)state;
	expect_errors(STACK_DOC "---\n" JOB("a") "run: three\nprotect: yes\nlabels: [a]\n",
		      "t/s.yaml:13:6: CustomJob \"a\": run: expected an integer, got \"three\"\n"
		      "t/s.yaml:14:10: CustomJob \"a\": protect: expected a boolean, got a string\n"
		      "t/s.yaml:15:9: CustomJob \"a\": labels: expected a mapping, got a sequence\n");
	/* integers: decimal only, in range, one wording for every field */
	expect_errors(STACK_DOC "---\n" JOB("a") "run: 0x10\nresubmit: {maxAttempts: 0o7}\n"
		      "---\nkind: Reservation\nname: r\nzone: us-central1-a\n"
		      "machineType: n1-standard-4\ncount: \" 5\"\n"
		      "---\nkind: QuotaPreference\nname: q\nservice: aiplatform.googleapis.com\n"
		      "quotaId: Q\npreferredValue: 18446744073709551616\n"
		      "---\n" JOB("b") "run: -99999999999999999999\n---\n" JOB("c") "run: 1.5\n"
		      "---\n" JOB("d") "run: true\n",
		      "t/s.yaml:13:6: CustomJob \"a\": run: expected a decimal integer, got \"0x10\"\n"
		      "t/s.yaml:14:25: CustomJob \"a\": resubmit.maxAttempts: expected a decimal "
		      "integer, got \"0o7\"\n"
		      "t/s.yaml:20:8: Reservation \"r\": count: expected an integer, got \" 5\"\n"
		      "t/s.yaml:26:17: QuotaPreference \"q\": preferredValue: 18446744073709551616 is "
		      "out of range (at most 9223372036854775807)\n"
		      "t/s.yaml:35:6: CustomJob \"b\": run: -99999999999999999999 is out of range (at "
		      "least -9223372036854775808)\n"
		      "t/s.yaml:44:6: CustomJob \"c\": run: expected an integer, got \"1.5\"\n"
		      "t/s.yaml:53:6: CustomJob \"d\": run: expected an integer, got the boolean "
		      "true\n");
	expect_errors("kind: Stack\nname: s\nproject: [a]\n",
		      "t/s.yaml:3:10: Stack \"s\": project: expected a string, got a sequence\n");
	expect_errors("kind: Stack\nname: s\n",
		      "t/s.yaml:1:1: Stack \"s\": missing required field \"project\"\n");
	expect_errors("kind: Stack\nname: s\nproject:\n",
		      "t/s.yaml:3:9: Stack \"s\": project: a value is required\n");
	expect_errors(STACK_DOC "---\nkind: CustomJob\nname: a\n",
		      "t/s.yaml:6:1: CustomJob \"a\": missing required field \"spec\"\n");
	expect_errors(STACK_DOC "---\nkind: CustomJob\nname: a\nspec: [x]\n",
		      "t/s.yaml:8:7: CustomJob \"a\": spec: expected a mapping, got a sequence\n");
}

static void test_names(void **state)
{
	static const char long_name[] =
		"a123456789012345678901234567890123456789012345678901234567890123"; /* 64 */

	(void)state;
	assert_true(stack_name_valid("a"));
	assert_true(stack_name_valid("gemma2-lora_v1"));
	assert_true(stack_name_valid(long_name + 1) == 0); /* starts with a digit */
	assert_false(stack_name_valid(long_name));
	assert_true(stack_name_valid("a12345678901234567890123456789012345678901234567890123456789012"));
	assert_false(stack_name_valid("Gemma"));
	assert_false(stack_name_valid("a.b"));
	assert_false(stack_name_valid(""));
	expect_errors("kind: Stack\nname: Research\nproject: my-project\nregion: us-central1\n",
		      "t/s.yaml:2:7: Stack \"Research\": name: \"Research\" is not a valid name: use "
		      "lowercase letters, digits, \"-\" and \"_\", starting with a letter, at most "
		      "63 characters\n");
	expect_errors(STACK_DOC "---\n" JOB("9lives"),
		      "t/s.yaml:7:7: CustomJob \"9lives\": name: \"9lives\" is not a valid name: "
		      "use lowercase letters, digits, \"-\" and \"_\", starting with a letter, at "
		      "most 63 characters\n");
	expect_errors(STACK_DOC "---\nkind: Reservation\nname: h100_pool\nzone: us-central1-a\n"
		      "machineType: n1-standard-4\ncount: 1\n",
		      "t/s.yaml:7:7: Reservation \"h100_pool\": name: \"h100_pool\" is not a valid "
		      "name: use lowercase letters, digits and \"-\", starting with a letter and not "
		      "ending with \"-\", at most 63 characters\n");
	expect_errors(STACK_DOC "---\nkind: CustomJob\n" SPEC,
		      "t/s.yaml:6:1: CustomJob: missing required field \"name\"\n");
}

static void test_duplicates(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	char *got;

	(void)state;
	assert_int_equal(load_files(&st, &d, "a.yaml", STACK_DOC "---\n" JOB("train"),
				    "b.yaml", "# another\n" JOB("other") "---\n" JOB("train"), NULL),
			 VX_EINVAL);
	got = all_diags(&d);
	assert_string_equal(got, "t/b.yaml:11:7: CustomJob \"train\": name: duplicate: \"train\" "
			    "is already declared at t/a.yaml:7:7\n");
	free(got);
	vx_diags_release(&d);
	/* the same name in two kinds is fine: each kind has its own addresses */
	stack_free(expect_valid(STACK_DOC "---\n" JOB("x") "---\nkind: Reservation\nname: x\n"
				"zone: us-central1-a\nmachineType: n1-standard-4\ncount: 1\n"));
}

static void test_labels(void **state)
{
	struct stack *st;
	char *v65 = NULL, *doc = NULL;
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	expect_errors(STACK_DOC "labels: {Team: a, vx-stack: b, ok: Bad, version: 2}\n",
		      "t/s.yaml:5:10: Stack \"research\": labels: key \"Team\" is not valid: use "
		      "lowercase letters, digits, \"_\" and \"-\", starting with a letter, at most "
		      "64 characters\n"
		      "t/s.yaml:5:19: Stack \"research\": labels: key \"vx-stack\" is reserved: keys "
		      "starting with \"vx-\" belong to vx\n"
		      "t/s.yaml:5:36: Stack \"research\": labels.ok: value \"Bad\" is not valid: use "
		      "lowercase letters, digits, \"_\" and \"-\", at most 64 characters\n");
	v65 = calloc(66, 1);
	memset(v65, 'x', 65);
	assert_int_equal(vx_buf_printf(&b, STACK_DOC "labels: {k: %s}\n", v65), 0);
	doc = vx_buf_detach(&b);
	expect_errors(doc, "t/s.yaml:5:13: Stack \"research\": labels.k: value \"xxxxxxxxxxxxxxxxx"
		      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" is not valid: use lowercase "
		      "letters, digits, \"_\" and \"-\", at most 64 characters\n");
	free(doc);
	free(v65);
	/* a label written with no value is refused, not taken as "" */
	expect_errors(STACK_DOC "labels: {team: null}\n---\n" JOB("a") "labels:\n  team:\n",
		      "t/s.yaml:5:16: Stack \"research\": labels.team: expected a string, got null "
		      "(write \"\" for an empty value)\n"
		      "t/s.yaml:15:8: CustomJob \"a\": labels.team: expected a string, got null "
		      "(write \"\" for an empty value)\n");
	/* 64 characters are fine; integers are taken as written; empty values are allowed */
	st = expect_valid(STACK_DOC "labels: {version: 2, empty: \"\", "
			  "k: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx}\n"
			  "---\n" JOB("a") "labels: {version: \"3\", own: x}\n");
	assert_string_equal(stack_labels_get(&st->labels, "version"), "2");
	assert_string_equal(stack_labels_get(&st->labels, "empty"), "");
	assert_int_equal(stack_jobs(st, NULL)[0].labels.n, 4);
	assert_string_equal(stack_labels_get(&stack_jobs(st, NULL)[0].labels, "version"), "3");
	assert_string_equal(stack_labels_get(&stack_jobs(st, NULL)[0].labels, "own"), "x");
	assert_null(stack_labels_get(&stack_jobs(st, NULL)[0].labels, "nope"));
	stack_free(st);
}

static void test_too_many_labels(void **state)
{
	struct vx_buf b = VX_BUF_INIT;
	char *doc;

	(void)state;
	assert_int_equal(vx_buf_adds(&b, STACK_DOC "labels:\n"), 0);
	for (int i = 0; i < 40; i++)
		assert_int_equal(vx_buf_printf(&b, "  s%d: x\n", i), 0);
	assert_int_equal(vx_buf_adds(&b, "---\n" JOB("a") "labels:\n"), 0);
	/* 58 fit before vx-rung: 64 - 7 now. */
	for (int i = 0; i < 18; i++)
		assert_int_equal(vx_buf_printf(&b, "  j%d: x\n", i), 0);
	doc = vx_buf_detach(&b);
	expect_errors(doc, "t/s.yaml:55:3: CustomJob \"a\": labels: 58 labels with the Stack's, "
		      "at most 57 (vx adds 7 of its own to Vertex's 64)\n");
	free(doc);
}

#define LADDER_STACK STACK_DOC "---\nkind: Reservation\nname: east-pool\nzone: us-east5-a\n" \
	"machineType: a3-highgpu-8g\naccelerators: [{type: nvidia-h100-80gb, count: 8}]\ncount: 1\n"
#define LADDER_JOB "---\nkind: CustomJob\nname: a\nspec:\n  workerPoolSpecs:\n" \
	"    - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n" \
	"      replicaCount: 1\n      containerSpec: {imageUri: gcr.io/p/i:1}\n" \
	"    - machineSpec: {machineType: n1-standard-4}\n" \
	"      replicaCount: 1\n      containerSpec: {imageUri: gcr.io/p/i:1}\n" \
	"  scheduling: {strategy: SPOT, timeout: 2h}\n" \
	"  baseOutputDirectory: {outputUriPrefix: gs://b/a}\n" \
	"resubmit:\n  on: [stockout, wait-timeout]\n  maxAttempts: 6\n  fallback:\n"

static void test_ladder_loads(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	const struct stack_job *j;
	const char *yaml = LADDER_STACK LADDER_JOB
		"    - scheduling: {strategy: STANDARD}\n"
		"    - {region: us-east5, reservation: east-pool}\n"
		"    - machineSpec: {machineType: a2-ultragpu-8g, acceleratorType: NVIDIA_A100_80GB, "
		"acceleratorCount: 8}\n"
		"    - {region: us-east5, reservation: projects/other-proj/zones/us-east5-b/reservations/shared}\n";

	(void)state;
	assert_int_equal(load_files(&st, &d, "s.yaml", yaml, NULL), 0);
	j = &stack_jobs(st, NULL)[0];
	assert_int_equal(j->nrungs, 4);
	/* rung 0 is the declared job, unchanged */
	assert_ptr_equal(stack_job_rung_spec(j, 0), &j->spec);
	assert_string_equal(stack_job_rung_region(j, 0), "us-central1");
	assert_string_equal(j->spec.strategy, "SPOT");
	assert_null(strstr(j->spec.canonical_json, "reservationAffinity"));
	/* rung 1: scheduling merged over the spec's (timeout kept) */
	assert_string_equal(stack_job_rung_region(j, 1), "us-central1");
	assert_string_equal(j->rungs[0].spec.strategy, "STANDARD");
	assert_int_equal(j->rungs[0].spec.timeout_s, 2 * 3600);
	/* rung 2: its region, the reservation in the GPU pool only, in Vertex's form */
	assert_string_equal(stack_job_rung_region(j, 2), "us-east5");
	assert_string_equal(j->rungs[1].spec.reservation, "east-pool");
	assert_non_null(strstr(j->rungs[1].spec.canonical_json,
			       "\"reservationAffinity\":{\"key\":\"compute.googleapis.com/reservation-name\","
			       "\"reservationAffinityType\":\"SPECIFIC_RESERVATION\",\"values\":"
			       "[\"projects/my-project/zones/us-east5-a/reservations/east-pool\"]}"));
	assert_string_equal(j->rungs[1].spec.strategy, "SPOT");
	/* rung 3: the GPU pool's machineSpec replaced, the CPU pool's kept */
	assert_int_equal(j->rungs[2].spec.npools, 2);
	assert_string_equal(j->rungs[2].spec.pools[0].machine_type, "a2-ultragpu-8g");
	assert_string_equal(j->rungs[2].spec.pools[0].accelerator_type, "NVIDIA_A100_80GB");
	assert_string_equal(j->rungs[2].spec.pools[1].machine_type, "n1-standard-4");
	/* rung 4: a reservation by full name, in Vertex's form as written */
	assert_non_null(strstr(j->rungs[3].spec.canonical_json,
			       "\"reservationAffinity\":{\"key\":\"compute.googleapis.com/reservation-name\","
			       "\"reservationAffinityType\":\"SPECIFIC_RESERVATION\",\"values\":"
			       "[\"projects/other-proj/zones/us-east5-b/reservations/shared\"]}"));
	/* past the last rung: the last */
	assert_ptr_equal(stack_job_rung_spec(j, 7), &j->rungs[3].spec);
	assert_string_equal(stack_job_rung_region(j, 7), "us-east5");
	/* every rung keeps baseOutputDirectory */
	for (size_t k = 0; k < j->nrungs; k++)
		assert_non_null(strstr(j->rungs[k].spec.canonical_json,
				       "\"baseOutputDirectory\":{\"outputUriPrefix\":\"gs://b/a\"}"));
	stack_free(st);
	vx_diags_release(&d);
}

static void test_ladder_changes_decl_hash(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *a = NULL, *b = NULL;

	(void)state;
	assert_int_equal(load_files(&a, &d, "s.yaml", LADDER_STACK LADDER_JOB
				    "    - region: us-east5\n", NULL), 0);
	assert_int_equal(load_files(&b, &d, "s.yaml", LADDER_STACK LADDER_JOB
				    "    - region: us-west1\n", NULL), 0);
	assert_string_not_equal(stack_jobs(a, NULL)[0].d.hash, stack_jobs(b, NULL)[0].d.hash);
	assert_string_not_equal(a->decl_hash, b->decl_hash);
	stack_free(a);
	stack_free(b);
	vx_diags_release(&d);
}

/* A rung's scheduling on a spec that sets none is the rung's alone. */
static void test_ladder_scheduling_without_spec_scheduling(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;

	(void)state;
	assert_int_equal(load_files(&st, &d, "s.yaml", STACK_DOC "---\n" JOB("a")
				    "resubmit:\n  on: [stockout]\n  fallback:\n"
				    "    - scheduling: {strategy: SPOT, timeout: 1h}\n", NULL), 0);
	assert_int_equal(stack_jobs(st, NULL)[0].nrungs, 1);
	assert_string_equal(stack_jobs(st, NULL)[0].spec.strategy, "STANDARD");
	assert_string_equal(stack_jobs(st, NULL)[0].rungs[0].spec.strategy, "SPOT");
	assert_int_equal(stack_jobs(st, NULL)[0].rungs[0].spec.timeout_s, 3600);
	stack_free(st);
	vx_diags_release(&d);
}

static void test_ladder_errors(void **state)
{
	(void)state;
	expect_errors(LADDER_STACK LADDER_JOB
		      "    - scheduling: {strategy: FLEX}\n"
		      "    - {regoin: us-east5}\n"
		      "    - {}\n"
		      "    - reservation: east-pool\n"
		      "    - {region: us-east5, machineSpec: {machineType: a2-ultragpu-8g, "
		      "acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}}\n"
		      "    - reservation: projects/my-project/zones/us-west1-b/reservations/zz\n"
		      "    - region: us_east5\n"
		      "    - scheduling: FLEX_START\n"
		      "    - scheduling: {strategy: FLEX_START}\n",
		      "t/s.yaml:29:30: CustomJob \"a\": resubmit.fallback[0]: spec.scheduling.strategy: "
		      "unknown value \"FLEX\" (did you mean \"FLEX_START\"?)\n"
		      "t/s.yaml:30:8: CustomJob \"a\": resubmit.fallback[1]: unknown field \"regoin\" "
		      "(did you mean \"region\"?)\n"
		      "t/s.yaml:31:7: CustomJob \"a\": resubmit.fallback[2]: a rung sets at least one of "
		      "region, scheduling, machineSpec, reservation\n"
		      "t/s.yaml:32:20: CustomJob \"a\": resubmit.fallback[3]: "
		      "spec.workerPoolSpecs[0].machineSpec.reservationAffinity.reservation: reservation "
		      "\"east-pool\" is in zone us-east5-a, outside the job's region us-central1\n"
		      "t/s.yaml:33:86: CustomJob \"a\": resubmit.fallback[4]: "
		      "spec.workerPoolSpecs[0].machineSpec.acceleratorType: a2-ultragpu-8g comes with 8 "
		      "NVIDIA_A100_80GB; acceleratorType is NVIDIA_H100_80GB (8 NVIDIA_H100_80GB come with "
		      "machineType a3-highgpu-8g)\n"
		      "t/s.yaml:34:20: CustomJob \"a\": resubmit.fallback[5].reservation: "
		      "\"projects/my-project/zones/us-west1-b/reservations/zz\" is in zone us-west1-b, "
		      "outside the rung's region us-central1\n"
		      "t/s.yaml:35:15: CustomJob \"a\": resubmit.fallback[6].region: \"us_east5\" is not "
		      "a region (like \"us-central1\")\n"
		      "t/s.yaml:36:19: CustomJob \"a\": resubmit.fallback[7].scheduling: expected a "
		      "mapping, got a string\n"
		      /* the spec's CPU pool is fine for SPOT, not for this rung's FLEX_START */
		      "t/s.yaml:37:7: CustomJob \"a\": resubmit.fallback[8]: "
		      "spec.workerPoolSpecs[1].machineSpec: FLEX_START runs only on L4, A100, H100, H200, "
		      "B200 GPUs; this pool has none (the spec's line 20)\n"
		      "t/s.yaml:37:7: CustomJob \"a\": resubmit.fallback[8]: "
		      "spec.workerPoolSpecs[1].machineSpec: FLEX_START needs the same machineSpec in every "
		      "worker pool; this one differs from the first (the spec's line 20)\n");
}

static void test_region(void **state)
{
	struct stack *st;

	(void)state;
	expect_errors("kind: Stack\nname: s\nproject: my-project\n---\n" JOB("a"),
		      "t/s.yaml:5:1: CustomJob \"a\": region: not set, and the Stack sets no "
		      "default region\n");
	expect_errors(STACK_DOC "---\n" JOB("a") "region: us-central\n",
		      "t/s.yaml:13:9: CustomJob \"a\": region: \"us-central\" is not a region (like "
		      "\"us-central1\")\n");
	st = expect_valid("kind: Stack\nname: s\nproject: my-project\n---\n" JOB("a")
			  "region: asia-southeast1\n");
	assert_null(st->region);
	assert_string_equal(stack_jobs(st, NULL)[0].region, "asia-southeast1");
	stack_free(st);
}

static void test_run_and_resubmit(void **state)
{
	struct stack *st;

	(void)state;
	expect_errors(STACK_DOC "---\n" JOB("a") "run: 0\n"
		      "resubmit: {on: [stokout, user-error], maxAttempts: 0}\n",
		      "t/s.yaml:13:6: CustomJob \"a\": run: must be at least 1, got 0\n"
		      "t/s.yaml:14:17: CustomJob \"a\": resubmit.on[0]: unknown failure class "
		      "\"stokout\" (did you mean \"stockout\"?)\n"
		      "t/s.yaml:14:52: CustomJob \"a\": resubmit.maxAttempts: must be between 1 and "
		      "100, got 0\n");
	expect_errors(STACK_DOC "---\n" JOB("a") "resubmit: {on: stockout}\n",
		      "t/s.yaml:13:16: CustomJob \"a\": resubmit.on: expected a sequence or mapping, got a "
		      "string\n");
	st = expect_valid(STACK_DOC "---\n" JOB("a") "run: \"7\"\nresubmit:\n  on: [quota, internal, "
			  "cancelled-outside, user-error]\n");
	assert_int_equal(stack_jobs(st, NULL)[0].run, 7);
	assert_int_equal(stack_jobs(st, NULL)[0].max_attempts, 1);
	assert_int_equal(stack_jobs(st, NULL)[0].resubmit_on, STACK_FAIL_QUOTA | STACK_FAIL_INTERNAL |
								      STACK_FAIL_CANCELLED_OUTSIDE | STACK_FAIL_USER_ERROR);
	assert_int_equal(stack_jobs(st, NULL)[0].on_change, STACK_ON_CHANGE_REPLACE);
	stack_free(st);
}

/* The watcher's timings: resubmit.delay and stuckAfter, durations within bounds. */
static void test_watch_timings(void **state)
{
	struct stack *st;
	char h[65];

	(void)state;
	st = expect_valid(STACK_DOC "---\n" JOB("a"));
	assert_int_equal(stack_jobs(st, NULL)[0].resubmit_delay_ms, 60000);
	assert_int_equal(stack_jobs(st, NULL)[0].stuck_after_ms, 6 * 3600 * 1000);
	memcpy(h, stack_jobs(st, NULL)[0].d.hash, sizeof(h));
	stack_free(st);
	/* Written as the default: the same declaration, the same hash. */
	st = expect_valid(STACK_DOC "---\n" JOB("a") "resubmit: {delay: 1m}\nstuckAfter: 6h\n");
	assert_string_equal(stack_jobs(st, NULL)[0].d.hash, h);
	stack_free(st);
	st = expect_valid(STACK_DOC "---\n" JOB("a") "resubmit: {on: [stockout], maxAttempts: 3, delay: 15s}\n"
			  "stuckAfter: 90m\n");
	assert_int_equal(stack_jobs(st, NULL)[0].resubmit_delay_ms, 15000);
	assert_int_equal(stack_jobs(st, NULL)[0].stuck_after_ms, 90 * 60 * 1000);
	assert_string_not_equal(stack_jobs(st, NULL)[0].d.hash, h);
	stack_free(st);
	expect_errors(STACK_DOC "---\n" JOB("a") "resubmit: {delay: soon}\nstuckAfter: 10s\n",
		      "t/s.yaml:13:19: CustomJob \"a\": resubmit.delay: \"soon\" is not a duration (like 30s, "
		      "15m or 6h)\n"
		      "t/s.yaml:14:13: CustomJob \"a\": stuckAfter: must be from 1m to 30d, got \"10s\"\n");
	expect_errors(STACK_DOC "---\n" JOB("a") "resubmit: {delay: 16m}\n",
		      "t/s.yaml:13:19: CustomJob \"a\": resubmit.delay: must be from 0s to 15m, got \"16m\"\n");
}

static void test_state(void **state)
{
	struct stack *st;

	(void)state;
	expect_errors(STACK_DOC "state: {backend: gti}\n",
		      "t/s.yaml:5:18: Stack \"research\": state.backend: unknown value \"gti\" (did "
		      "you mean \"git\"?)\n");
	expect_errors(STACK_DOC "state: {backend: file, remote: origin}\n",
		      "t/s.yaml:5:32: Stack \"research\": state.remote: only for backend git\n");
	expect_errors(STACK_DOC "state: {backend: gcs, bucket: gs://b/x}\n",
		      "t/s.yaml:5:31: Stack \"research\": state.bucket: \"gs://b/x\" is not a bucket "
		      "name (write it without gs:// and without a path)\n");
	expect_errors(STACK_DOC "state: {branch: \"a..b\"}\n",
		      "t/s.yaml:5:17: Stack \"research\": state.branch: \"a..b\" is not a valid "
		      "branch name\n");
	st = expect_valid(STACK_DOC "state: {backend: file, path: state/vx.json}\n");
	assert_int_equal(st->state.backend, STACK_BACKEND_FILE);
	assert_string_equal(st->state.path, "state/vx.json");
	assert_null(st->state.branch);
	stack_free(st);
	/* no path: vx-state.json beside the stack, like terraform.tfstate */
	st = expect_valid(STACK_DOC "state: {backend: file}\n");
	assert_string_equal(st->state.path, "vx-state.json");
	stack_free(st);
	st = expect_valid(STACK_DOC "state: {backend: file, path: }\n");
	assert_string_equal(st->state.path, "vx-state.json");
	stack_free(st);
	expect_errors(STACK_DOC "state: {backend: file, path: \"\"}\n",
		      "t/s.yaml:5:30: Stack \"research\": state.path: empty\n");
	/* vx adds refs/heads/ itself */
	expect_errors(STACK_DOC "state: {branch: refs/heads/main}\n",
		      "t/s.yaml:5:17: Stack \"research\": state.branch: \"refs/heads/main\" is a ref "
		      "name: give the branch name without refs/heads/ (\"main\")\n");
	expect_errors(STACK_DOC "state: {branch: refs/tags/v1}\n",
		      "t/s.yaml:5:17: Stack \"research\": state.branch: \"refs/tags/v1\" is a ref "
		      "name, not a branch name: give the branch name without refs/heads/\n");
	st = expect_valid(STACK_DOC "state: {backend: gcs, bucket: my-bucket}\n");
	assert_int_equal(st->state.backend, STACK_BACKEND_GCS);
	assert_string_equal(st->state.bucket, "my-bucket");
	stack_free(st);
	st = expect_valid(STACK_DOC "state: {branch: vx/custom}\n");
	assert_string_equal(st->state.branch, "vx/custom");
	stack_free(st);
	expect_errors("kind: Stack\nname: s\nproject: My Project\n",
		      "t/s.yaml:3:10: Stack \"s\": project: \"My Project\" is not a project ID (6 to "
		      "30 lowercase letters, digits and \"-\", starting with a letter)\n");
}

/* notify: where vx tells people; URLs that hold a secret stay out of the stack. */
static void test_notify(void **state)
{
	struct stack *st;
	char h1[65];

	(void)state;
	expect_errors(STACK_DOC "notify:\n"
		      "  - urlEnv: SLACK_WEBHOOK_URL\n    format: slack\n    secretEnv: VX_WEBHOOK_SECRET\n"
		      "    on: [gave-up, resubmited]\n"
		      "  - url: https://hooks.slack.com/services/T0/B0/xyz\n"
		      "  - url: https://example.com/hook?token=abc\n    format: teams\n"
		      "  - {}\n"
		      "  - url: http://127.0.0.1:8080/hook\n    urlEnv: X\n"
		      "  - urlEnv: \"1BAD\"\n    on: gave-up\n"
		      "  - {url: \"https://u:p@example.com/h\", on: []}\n"
		      "  - {url: \"http://example.com/h\", secretEnv: \"A B\"}\n"
		      "  - url: ftp://example.com/h\n",
		      "t/s.yaml:9:19: Stack \"research\": notify[0].on[1]: unknown event \"resubmited\" "
		      "(did you mean \"resubmitted\"?)\n"
		      "t/s.yaml:10:10: Stack \"research\": notify[1].url: a Slack webhook URL, whose path is its "
		      "secret: put it in the environment and name it with urlEnv\n"
		      "t/s.yaml:11:10: Stack \"research\": notify[2].url: a query string, where webhook URLs carry "
		      "their tokens: put the URL in the environment and name it with urlEnv\n"
		      "t/s.yaml:12:13: Stack \"research\": notify[2].format: unknown value \"teams\" (one of json, "
		      "slack)\n"
		      "t/s.yaml:13:5: Stack \"research\": notify[3]: needs urlEnv (the environment variable holding "
		      "the webhook URL) or url\n"
		      "t/s.yaml:15:13: Stack \"research\": notify[4]: url and urlEnv: give one of them\n"
		      "t/s.yaml:16:13: Stack \"research\": notify[5].urlEnv: \"1BAD\" is not an environment "
		      "variable name\n"
		      "t/s.yaml:17:9: Stack \"research\": notify[5].on: expected a sequence, got a string\n"
		      "t/s.yaml:18:11: Stack \"research\": notify[6].url: credentials in the URL (user:password@): "
		      "put the URL in the environment and name it with urlEnv\n"
		      "t/s.yaml:18:44: Stack \"research\": notify[6].on: empty: name the events to send, or leave "
		      "it out for the default\n"
		      "t/s.yaml:19:11: Stack \"research\": notify[7].url: plain http:// to another machine: use "
		      "https://\n"
		      "t/s.yaml:19:46: Stack \"research\": notify[7].secretEnv: \"A B\" is not an environment "
		      "variable name\n"
		      "t/s.yaml:20:10: Stack \"research\": notify[8].url: not an https:// URL\n");
	expect_errors(STACK_DOC "notify: {urlEnv: X}\n",
		      "t/s.yaml:5:9: Stack \"research\": notify: expected a sequence, got a mapping\n");

	st = expect_valid(STACK_DOC);
	assert_int_equal(st->nnotify, 0);
	memcpy(h1, st->d.hash, sizeof(h1));
	stack_free(st);
	st = expect_valid(STACK_DOC "notify:\n  - urlEnv: HOOK\n  - url: https://example.com/vx\n"
			  "    format: slack\n    secretEnv: SECRET\n    on: [succeeded, gave-up]\n");
	assert_int_equal(st->nnotify, 2);
	assert_string_equal(st->notify[0].url_env, "HOOK");
	assert_null(st->notify[0].url);
	assert_int_equal(st->notify[0].format, NOTIFY_FORMAT_JSON);
	assert_int_equal(st->notify[0].on, NOTIFY_GAVE_UP | NOTIFY_STUCK | NOTIFY_QUOTA_DENIED | NOTIFY_WATCH_ERROR);
	assert_string_equal(st->notify[1].url, "https://example.com/vx");
	assert_int_equal(st->notify[1].format, NOTIFY_FORMAT_SLACK);
	assert_string_equal(st->notify[1].secret_env, "SECRET");
	assert_int_equal(st->notify[1].on, NOTIFY_SUCCEEDED | NOTIFY_GAVE_UP);
	assert_int_equal(st->notify[1].line, 7);
	/* A changed target is a changed declaration (a saved plan binds to it). */
	assert_string_not_equal(st->d.hash, h1);
	stack_free(st);
}

/*
 * The loader's branch rule is written out (reconcile/ does not use libgit2):
 * it must agree with libgit2, which the git backend asks when it opens, on
 * refs/heads/NAME, so that validate passes exactly the names that work.
 */
static void test_branch_names_agree_with_libgit2(void **state)
{
	static const char *const names[] = {
		"main", "vx/state/research", "feature/x-1.2", "a@b", "\xc3\xbcml", "a..b", ".hidden",
		"a/.b", "a.lock", "a.lock/b", "a/b.lock", "a//b", "/a", "a/", "a.", "@", "a@{b",
		"x y", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", "a\tb", "",
	};
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_true(git_libgit2_init() > 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct vx_diags d = VX_DIAGS_INIT;
		struct stack *st = NULL;
		char *ref = vx_asprintf("refs/heads/%s", names[i]);
		int valid = -1, rc;

		assert_non_null(ref);
		assert_int_equal(git_reference_name_is_valid(&valid, ref), 0);
		vx_buf_reset(&b);
		assert_int_equal(vx_buf_adds(&b, STACK_DOC "state: {branch: \""), 0);
		for (const char *p = names[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				assert_int_equal(vx_buf_printf(&b, "\\%c", *p), 0);
			else if ((unsigned char)*p < 0x20 || *p == 0x7f)
				assert_int_equal(vx_buf_printf(&b, "\\x%02x", *p), 0);
			else
				assert_int_equal(vx_buf_addc(&b, *p), 0);
		}
		assert_int_equal(vx_buf_adds(&b, "\"}\n"), 0);
		rc = load_files(&st, &d, "s.yaml", vx_buf_str(&b), NULL);
		if ((rc == 0) != (valid == 1))
			fail_msg("branch \"%s\": loader says %s, libgit2 says %s", names[i],
				 rc == 0 ? "valid" : "invalid", valid == 1 ? "valid" : "invalid");
		stack_free(st);
		vx_diags_release(&d);
		free(ref);
	}
	/* git refuses these though libgit2 takes them: so do we (DEL is a control
	 * character to git-check-ref-format; git branch refuses HEAD and "-x") */
	{
		struct vx_diags d = VX_DIAGS_INIT;
		struct stack *st = NULL;

		assert_int_equal(load_files(&st, &d, "s.yaml", STACK_DOC "state: {branch: \"a\\x7f\"}\n",
					    NULL), VX_EINVAL);
		vx_diags_release(&d);
	}
	expect_errors(STACK_DOC "state: {branch: HEAD}\n",
		      "t/s.yaml:5:17: Stack \"research\": state.branch: \"HEAD\" is not a valid "
		      "branch name\n");
	expect_errors(STACK_DOC "state: {branch: -x}\n",
		      "t/s.yaml:5:17: Stack \"research\": state.branch: \"-x\" is not a valid "
		      "branch name\n");
	vx_buf_release(&b);
	git_libgit2_shutdown();
}

static void test_reservation(void **state)
{
	struct stack *st;

	(void)state;
	expect_errors(STACK_DOC "---\nkind: Reservation\nname: r\nzone: us-central1\n"
		      "machineType: g2-standard-24\naccelerators: [{type: nvidia-l44, count: 2}]\n"
		      "count: 0\nshared: true\n",
		      "t/s.yaml:8:7: Reservation \"r\": zone: \"us-central1\" is not a zone (like "
		      "\"us-central1-a\")\n"
		      "t/s.yaml:10:23: Reservation \"r\": accelerators[0].type: unknown accelerator "
		      "type \"nvidia-l44\" (did you mean \"nvidia-l4\"?)\n"
		      "t/s.yaml:11:8: Reservation \"r\": count: must be between 1 and 1000, got 0\n"
		      "t/s.yaml:12:1: Reservation \"r\": unknown field \"shared\" (one of kind, name, "
		      "zone, machineType, accelerators, count, specificReservationRequired, "
		      "description, protect)\n");
	/* the machine table: a3-highgpu-8g always has 8 H100s */
	expect_errors(STACK_DOC "---\nkind: Reservation\nname: r\nzone: us-central1-a\n"
		      "machineType: a3-highgpu-8g\naccelerators: [{type: nvidia-h100-80gb, count: 4}]\n"
		      "count: 1\n",
		      "t/s.yaml:10:15: Reservation \"r\": accelerators: a3-highgpu-8g comes with 8 "
		      "NVIDIA_H100_80GB; acceleratorCount is 4 (4 NVIDIA_H100_80GB come with machineType "
		      "a3-highgpu-4g)\n");
	/* a job naming a reservation that is not declared */
	expect_errors(STACK_DOC "---\nkind: Reservation\nname: h100-pool\nzone: us-central1-a\n"
		      "machineType: a3-highgpu-8g\naccelerators: [{type: nvidia-h100-80gb, count: 8}]\n"
		      "count: 1\n---\nkind: CustomJob\nname: a\nspec:\n  workerPoolSpecs:\n"
		      "    - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, "
		      "acceleratorCount: 8, reservationAffinity: {reservation: h100-pol}}\n"
		      "      replicaCount: 1\n      containerSpec: {imageUri: x}\n",
		      "t/s.yaml:17:140: CustomJob \"a\": spec.workerPoolSpecs[0].machineSpec."
		      "reservationAffinity.reservation: no Reservation named \"h100-pol\" in this "
		      "stack (did you mean \"h100-pool\"?)\n");
	st = expect_valid(STACK_DOC "---\nkind: Reservation\nname: cpu\nzone: us-central1-b\n"
			  "machineType: n1-standard-4\ncount: \"3\"\n"
			  "specificReservationRequired: false\ndescription: spare\n");
	assert_int_equal(stack_reservations(st, NULL)[0].naccelerators, 0);
	assert_int_equal(stack_reservations(st, NULL)[0].count, 3);
	assert_int_equal(stack_reservations(st, NULL)[0].specific_required, 0);
	assert_string_equal(stack_reservations(st, NULL)[0].description, "spare");
	stack_free(st);
}

static void test_quota(void **state)
{
	struct stack *st;

	(void)state;
	expect_errors(STACK_DOC "---\nkind: QuotaPreference\nname: q\nservice: aiplatform\n"
		      "quotaId: X\npreferredValue: -2\ncontactEmail: nope\ndimensions: {user: x}\n",
		      "t/s.yaml:8:10: QuotaPreference \"q\": service: \"aiplatform\" is not a service "
		      "name (like \"aiplatform.googleapis.com\")\n"
		      "t/s.yaml:10:17: QuotaPreference \"q\": preferredValue: must be -1 "
		      "(unlimited) or more, got -2\n"
		      "t/s.yaml:11:15: QuotaPreference \"q\": contactEmail: \"nope\" is not an email "
		      "address\n"
		      "t/s.yaml:12:14: QuotaPreference \"q\": dimensions: the \"user\" dimension may "
		      "not be set\n");
	expect_errors(STACK_DOC "---\nkind: QuotaPreference\nname: q1\nservice: a.googleapis.com\n"
		      "quotaId: X\npreferredValue: 1\ndimensions: {region: r}\n"
		      "---\nkind: QuotaPreference\nname: q2\nservice: a.googleapis.com\n"
		      "quotaId: X\npreferredValue: 2\ndimensions: {region: r}\n",
		      "t/s.yaml:13:1: QuotaPreference \"q2\": the same quota and dimensions as "
		      "QuotaPreference \"q1\" at t/s.yaml:6:1 (Cloud Quotas keeps one preference per "
		      "quota and dimensions)\n");
	st = expect_valid(STACK_DOC "---\nkind: QuotaPreference\nname: q\n"
			  "service: compute.googleapis.com\nquotaId: CPUS-per-project\n"
			  "preferredValue: -1\n");
	assert_int_equal(stack_quotas(st, NULL)[0].preferred_value, -1);
	assert_int_equal(stack_quotas(st, NULL)[0].dimensions.n, 0);
	assert_null(stack_quotas(st, NULL)[0].contact_email);
	stack_free(st);
}

/* Errors across files come sorted by file, then line; the cap keeps the first 50. */
static void test_sorted_and_capped(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	struct vx_buf b = VX_BUF_INIT;
	char *many, *got;

	(void)state;
	assert_int_equal(load_files(&st, &d, "a.yaml", JOB("x") "run: 0\n",
				    "b.yaml", STACK_DOC "bogus: 1\n", NULL),
			 VX_EINVAL);
	got = all_diags(&d);
	assert_string_equal(got, "t/a.yaml:8:6: CustomJob \"x\": run: must be at least 1, got 0\n"
			    "t/b.yaml:5:1: Stack \"research\": unknown field \"bogus\" (one of kind, "
			    "name, project, region, state, labels, prices, failOn, notify, budget)\n");
	free(got);
	vx_diags_release(&d);

	assert_int_equal(vx_buf_adds(&b, STACK_DOC), 0);
	for (int i = 0; i < 60; i++)
		assert_int_equal(vx_buf_printf(&b, "---\nkind: QuotaPreference\nname: q%d\n"
					       "service: x\nquotaId: Q\npreferredValue: 1\n", i), 0);
	/* a Reservation error, found by an earlier pass, but last in the file */
	assert_int_equal(vx_buf_adds(&b, "---\nkind: Reservation\nname: r\nzone: z\n"), 0);
	many = vx_buf_detach(&b);
	assert_int_equal(load_files(&st, &d, "m.yaml", many, NULL), VX_EINVAL);
	assert_int_equal(d.n, 50);
	assert_int_equal(d.dropped, 13);
	assert_int_equal(vx_diags_count(&d), 63);
	assert_int_equal(d.items[0].line, 8);
	assert_string_equal(d.items[0].msg, "QuotaPreference \"q0\": service: \"x\" is not a "
			    "service name (like \"aiplatform.googleapis.com\")");
	for (size_t i = 1; i < d.n; i++)
		assert_true(d.items[i].line > d.items[i - 1].line);
	free(many);
	vx_diags_release(&d);
}

static void test_hostile_mem(void **state)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	char *doc;

	(void)state;
	expect_errors("", "t: no Stack: one document must be \"kind: Stack\" (with name "
		      "and project)\nt/s.yaml:1:1: empty file: no YAML document in it\n");
	expect_errors("# only a comment\n", "t: no Stack: one document must be \"kind: Stack\" "
		      "(with name and project)\n"
		      "t/s.yaml:1:1: empty file: no YAML document in it\n");
	/* 20,000 nested brackets: refused by depth, no stack overflow */
	assert_int_equal(vx_buf_adds(&b, STACK_DOC "x: "), 0);
	for (int i = 0; i < 20000; i++)
		assert_int_equal(vx_buf_addc(&b, '['), 0);
	for (int i = 0; i < 20000; i++)
		assert_int_equal(vx_buf_addc(&b, ']'), 0);
	doc = vx_buf_detach(&b);
	assert_int_equal(load_files(&st, &d, "s.yaml", doc, NULL), VX_EINVAL);
	assert_null(st);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].file, "t/s.yaml");
	assert_int_equal(d.items[0].line, 5);
	free(doc);
	vx_diags_release(&d);
}

/* decl_hash: independent of files, order, key order and quoting; changed by any real change. */
static void test_decl_hash(void **state)
{
	const char *job_a = JOB("a") "labels: {x: \"1\"}\nrun: 1\n";
	const char *job_a2 = "name: a\nrun: \"1\"\nlabels: {x: 1}\nkind: CustomJob\n" SPEC;
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *s1 = NULL, *s2 = NULL, *s3;
	char h1[65], ha[65], hb[65];

	(void)state;
	assert_int_equal(load_files(&s1, &d, "a.yaml", STACK_DOC "---\n" JOB("b"),
				    "b.yaml", job_a, NULL), 0);
	assert_int_equal(load_files(&s2, &d, "z.yaml", job_a2, "y.yaml", JOB("b"),
				    "x.yaml", "project: my-project\nkind: Stack\nregion: us-central1\n"
				    "name: 'research'\n", NULL), 0);
	assert_int_equal(d.n, 0);
	assert_true(is_hex64(s1->decl_hash));
	assert_string_equal(s1->decl_hash, s2->decl_hash);
	assert_string_equal(stack_find_job(s1, "a")->d.hash, stack_find_job(s2, "a")->d.hash);
	memcpy(h1, s1->decl_hash, 65);
	memcpy(ha, stack_find_job(s1, "a")->d.hash, 65);
	memcpy(hb, stack_find_job(s1, "b")->d.hash, 65);
	assert_string_not_equal(ha, hb);
	stack_free(s1);
	stack_free(s2);

	/* every real change moves the stack's hash, and only the changed declaration's */
	static const char *const changes[] = {
		JOB("a") "labels: {x: \"2\"}\nrun: 1\n",
		JOB("a") "labels: {x: \"1\"}\nrun: 2\n",
		JOB("a") "labels: {x: \"1\"}\nprotect: true\n",
		JOB("a") "labels: {x: \"1\"}\nonChange: ignore\n",
		JOB("a") "labels: {x: \"1\"}\nresubmit: {on: [quota]}\n",
		JOB("a") "labels: {x: \"1\"}\nresubmit: {maxAttempts: 2}\n",
		JOB("a") "labels: {x: \"1\"}\ndisplayName: A\n",
		JOB("a") "labels: {x: \"1\"}\nregion: us-east1\n",
		"kind: CustomJob\nname: a\nlabels: {x: \"1\"}\nspec:\n  workerPoolSpecs:\n"
		"    - machineSpec: {machineType: n1-standard-8}\n      replicaCount: 1\n"
		"      containerSpec: {imageUri: gcr.io/p/i:1}\n",
	};
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		s3 = NULL;
		if (load_files(&s3, &d, "a.yaml", STACK_DOC "---\n" JOB("b"), "b.yaml", changes[i],
			       NULL) != 0)
			fail_msg("change %zu did not load", i);
		assert_string_not_equal(s3->decl_hash, h1);
		assert_string_not_equal(stack_find_job(s3, "a")->d.hash, ha);
		assert_string_equal(stack_find_job(s3, "b")->d.hash, hb);
		stack_free(s3);
	}
	/* the Stack's labels reach every job, so they change the jobs' hashes too */
	s3 = NULL;
	assert_int_equal(load_files(&s3, &d, "a.yaml", STACK_DOC "labels: {t: x}\n---\n" JOB("b"),
				    "b.yaml", job_a, NULL), 0);
	assert_string_not_equal(s3->decl_hash, h1);
	assert_string_not_equal(stack_find_job(s3, "b")->d.hash, hb);
	stack_free(s3);
	/* a reservation or quota added changes it */
	s3 = NULL;
	assert_int_equal(load_files(&s3, &d, "a.yaml", STACK_DOC "---\n" JOB("b"), "b.yaml", job_a,
				    "c.yaml", "kind: QuotaPreference\nname: q\nservice: "
				    "a.googleapis.com\nquotaId: Q\npreferredValue: 1\n", NULL), 0);
	assert_string_not_equal(s3->decl_hash, h1);
	stack_free(s3);
	vx_diags_release(&d);
}

static void test_enum_names(void **state)
{
	(void)state;
	assert_int_equal(STACK_FAIL_ALL, 0xfff);
	for (unsigned i = 0; i < STACK_FAIL_NCLASSES; i++) {
		assert_string_equal(stack_fail_name(1u << i), stack_fail_names[i]);
		assert_int_equal(stack_fail_parse(stack_fail_names[i]), 1u << i);
	}
	assert_string_equal(stack_fail_name(STACK_FAIL_WAIT_TIMEOUT), "wait-timeout");
	assert_string_equal(stack_fail_name(STACK_FAIL_CANCELLED_OUTSIDE), "cancelled-outside");
	assert_string_equal(stack_fail_name(STACK_FAIL_QUEUE_TIMEOUT), "queue-timeout");
	assert_null(stack_fail_name(STACK_FAIL_QUOTA | STACK_FAIL_INTERNAL));
	assert_null(stack_fail_name(0));
	assert_int_equal(stack_fail_parse("Stockout"), 0);
	assert_string_equal(stack_on_change_name(STACK_ON_CHANGE_AFTER_FINISH), "after-finish");
	assert_null(stack_on_change_name((enum stack_on_change)0));
	assert_string_equal(stack_backend_name(STACK_BACKEND_GCS), "gcs");
	assert_null(stack_backend_name((enum stack_backend)9));
}

#define SALT1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define SALT2 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define SECRET_JOB "kind: CustomJob\nname: s\nspec:\n  workerPoolSpecs:\n" \
	"    - machineSpec: {machineType: n1-standard-4}\n      replicaCount: 1\n" \
	"      containerSpec:\n        imageUri: gcr.io/p/i:1\n" \
	"        env: [{name: TOKEN, value: hunter2, sensitive: true}]\n"

/* Adds record address with spec hash h (and a current run made from it) to st. */
static void add_record(struct state *st, const char *address, const char *h, const char *json)
{
	struct state_record *r = NULL;
	struct state_run run;
	char label[13];

	assert_int_equal(state_add_record(st, address, "CustomJob", &r, NULL), 0);
	r->spec_hash = strdup(h);
	r->spec_json = strdup(json);
	r->run = 1;
	memset(&run, 0, sizeof(run));
	run.resource = strdup("projects/p/locations/us-central1/customJobs/1");
	run.spec_hash = strdup(h);
	run.run = 1;
	run.attempt = 1;
	snprintf(label, sizeof(label), "%.12s", h);
	assert_int_equal(vx_labels_set(&run.labels, &run.nlabels, "vx-spec", label), 0);
	assert_int_equal(state_record_start_run(r, &run, NULL), 0);
}

/*
 * The salt keys sensitive values in job and declaration hashes alike (no
 * oracle without it; the same salt, the same hashes), leaves every other
 * hash alone, and records written with the old plain hash are migrated.
 */
static void test_salt_and_legacy_records(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;
	struct state ss = STATE_INIT;
	const struct stack_job *plain, *secret;
	const struct state_record *r;
	char decl0[65], decl1[65], plain_d[65], secret_d[65], legacy[65], plain_h[65];
	size_t n = 9;

	(void)state;
	assert_int_equal(load_files(&st, &d, "a.yaml", STACK_DOC "---\n" JOB("p") "---\n" SECRET_JOB,
				    NULL), 0);
	plain = stack_find_job(st, "p");
	secret = stack_find_job(st, "s");
	assert_int_equal(secret->spec.nsensitive, 1);
	memcpy(decl0, st->decl_hash, 65);
	memcpy(plain_d, plain->d.hash, 65);
	memcpy(plain_h, plain->spec.hash, 65);
	memcpy(secret_d, secret->d.hash, 65);
	memcpy(legacy, secret->spec.legacy_hash, 65);

	assert_int_equal(stack_apply_salt(st, SALT1, &err), 0);
	assert_string_equal(plain->spec.hash, plain_h);
	assert_string_equal(plain->d.hash, plain_d);
	assert_string_not_equal(secret->d.hash, secret_d);
	assert_string_not_equal(st->decl_hash, decl0);
	assert_string_not_equal(secret->spec.hash, legacy);
	assert_non_null(strstr(secret->spec.redacted_json, "\"hmac-sha256:"));
	assert_null(strstr(secret->spec.redacted_json, "hunter2"));
	memcpy(decl1, st->decl_hash, 65);
	assert_int_equal(stack_apply_salt(st, SALT2, &err), 0);
	assert_string_not_equal(st->decl_hash, decl1);
	assert_int_equal(stack_apply_salt(st, SALT1, &err), 0);
	assert_string_equal(st->decl_hash, decl1); /* a saved plan against the same state matches */
	assert_int_equal(stack_apply_salt(st, "abc", &err), VX_EINVAL);
	assert_string_equal(err.msg, "job.s: the state's salt is not 64 hex digits");
	vx_err_release(&err);
	assert_string_equal(st->decl_hash, decl1);

	/* job.s as written before salts; job.p with a hash that never changed. */
	assert_int_equal(state_new(&ss, "research", NULL, NULL), 0);
	add_record(&ss, "job.s", legacy, "{\"old\":1}");
	add_record(&ss, "job.p", plain_h, "{\"p\":1}");
	assert_int_equal(planner_migrate_legacy(&ss, st, &n), 0);
	assert_int_equal(n, 1);
	r = state_find(&ss, "job.s");
	assert_string_equal(r->spec_hash, secret->spec.hash);
	assert_string_equal(r->spec_json, secret->spec.redacted_json);
	assert_string_equal(r->current->spec_hash, secret->spec.hash);
	assert_memory_equal(vx_labels_get(r->current->labels, r->current->nlabels, "vx-spec"),
			    legacy, 12); /* the live job's copy */
	r = state_find(&ss, "job.p");
	assert_string_equal(r->spec_hash, plain_h);
	assert_string_equal(r->spec_json, "{\"p\":1}");
	assert_int_equal(planner_migrate_legacy(&ss, st, &n), 0);
	assert_int_equal(n, 0);
	state_release(&ss);
	stack_free(st);
	vx_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_dir),
		cmocka_unit_test(test_missing_dir),
		cmocka_unit_test(test_bad_dirs),
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_enum_did_you_mean),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_repository),
		cmocka_unit_test(test_policy_lenient),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_too_many_labels),
		cmocka_unit_test(test_ladder_loads),
		cmocka_unit_test(test_ladder_changes_decl_hash),
		cmocka_unit_test(test_ladder_errors),
		cmocka_unit_test(test_ladder_scheduling_without_spec_scheduling),
		cmocka_unit_test(test_region),
		cmocka_unit_test(test_run_and_resubmit),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_notify),
		cmocka_unit_test(test_watch_timings),
		cmocka_unit_test(test_branch_names_agree_with_libgit2),
		cmocka_unit_test(test_reservation),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_sorted_and_capped),
		cmocka_unit_test(test_hostile_mem),
		cmocka_unit_test(test_decl_hash),
		cmocka_unit_test(test_salt_and_legacy_records),
		cmocka_unit_test(test_enum_names),
		cmocka_unit_test(test_links_out),
		cmocka_unit_test(test_peek_regions),
		cmocka_unit_test(test_decl_hash_pinned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
