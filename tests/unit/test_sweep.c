/*
 * Unit tests of `matrix:` sweeps (reconcile/sweep.c): the expansion with
 * GitHub Actions' include and exclude rules, the order of the runs, values
 * kept as written, the diagnostics, addresses, slices and labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/kind_job.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

#define STACK_DOC "kind: Stack\nname: research\nproject: my-project\nregion: us-central1\n---\n"
#define SPEC(args) "spec:\n  workerPoolSpecs:\n    - machineSpec: {machineType: n1-standard-4}\n" \
	"      replicaCount: 1\n      containerSpec: {imageUri: gcr.io/p/i:1, args: " args "}\n"

static int load(struct stack **st, struct vx_diags *d, const char *yaml)
{
	struct stack_source src = { "s.yaml", yaml, strlen(yaml) };
	struct vx_err err = VX_ERR_INIT;
	int rc = stack_load_mem(st, "t", &src, 1, NULL, d, &err);

	assert_null(err.msg);
	return rc;
}

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
	return b.data ? vx_buf_detach(&b) : calloc(1, 1);
}

static struct stack *valid(const char *yaml)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	int rc = load(&st, &d, yaml);
	char *got = all_diags(&d);

	assert_string_equal(got, "");
	free(got);
	assert_int_equal(rc, 0);
	vx_diags_release(&d);
	return st;
}

static void invalid(const char *yaml, const char *want)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct stack *st = NULL;
	char *got;

	assert_int_equal(load(&st, &d, yaml), VX_EINVAL);
	assert_null(st);
	got = all_diags(&d);
	assert_string_equal(got, want);
	free(got);
	vx_diags_release(&d);
}

/* Every job's name and display name, one per line, in stack_jobs(st, NULL) order. */
static char *names(const struct stack *st)
{
	struct vx_buf b = VX_BUF_INIT;

	for (size_t i = 0; i < stack_count(st, &kind_job); i++)
		assert_int_equal(vx_buf_printf(&b, "%s %s\n", stack_jobs(st, NULL)[i].d.address, stack_jobs(st, NULL)[i].display_name), 0);
	return vx_buf_detach(&b);
}

/* GitHub's own example (docs: "Expanding or adding matrix configurations"):
 * include adds to every combination whose axis values it keeps, later
 * entries overwrite values earlier ones added, and an entry that fits none
 * is a combination of its own (never extended by later entries). */
static void test_include_github_semantics(void **state)
{
	struct stack *st;
	char *got;

	(void)state;
	st = valid(STACK_DOC "kind: CustomJob\nname: fruit\n"
		   "displayName: \"${{ matrix.fruit }}-${{ matrix.animal }}-${{ matrix.color }}-${{ matrix.shape }}\"\n"
		   "matrix:\n  fruit: [apple, pear]\n  animal: [cat, dog]\n  include:\n"
		   "    - color: green\n    - color: pink\n      animal: cat\n"
		   "    - fruit: apple\n      shape: circle\n    - fruit: banana\n"
		   "    - fruit: banana\n      animal: cat\n" SPEC("[x]"));
	got = names(st);
	assert_string_equal(got,
			    "job.fruit[fruit=apple,animal=cat] apple-cat-pink-circle\n"
			    "job.fruit[fruit=apple,animal=dog] apple-dog-green-circle\n"
			    "job.fruit[fruit=pear,animal=cat] pear-cat-pink-\n"
			    "job.fruit[fruit=pear,animal=dog] pear-dog-green-\n"
			    "job.fruit[fruit=banana] banana---\n"
			    "job.fruit[fruit=banana,animal=cat] banana-cat--\n");
	free(got);
	assert_int_equal(stack_nsweeps(st), 1);
	assert_string_equal(stack_sweeps(st, NULL)[0].address, "job.fruit");
	assert_int_equal(stack_sweeps(st, NULL)[0].first, 0);
	assert_int_equal(stack_sweeps(st, NULL)[0].n, 6);
	assert_int_equal(stack_sweeps(st, NULL)[0].line, 9);
	assert_int_equal(stack_jobs(st, NULL)[0].sweep, 1);
	stack_free(st);
}

/* Exclude drops every combination holding all of an entry's pairs, before
 * include; the first axis varies slowest; values stay as written. */
static void test_exclude_order_and_text(void **state)
{
	struct stack *st;
	char *got;

	(void)state;
	st = valid(STACK_DOC "kind: CustomJob\nname: lr-sweep\nmatrix:\n  lr: [1e-4, 3e-4, 1.50]\n"
		   "  seed: [\"007\", 2]\n  exclude: [{lr: 3e-4}, {lr: 1.50, seed: \"007\"}]\n"
		   "  include: [{lr: 3e-3, seed: 1}]\nmaxParallel: 2\nmaxFailed: 1\n"
		   SPEC("[\"--lr=${{ matrix.lr }}\", \"--seed=${{matrix.seed}}\"]")
		   "  baseOutputDirectory: {outputUriPrefix: \"gs://b/out/\"}\n");
	got = names(st);
	assert_string_equal(got,
			    "job.lr-sweep[lr=1e-4,seed=007] lr-sweep[lr=1e-4,seed=007]\n"
			    "job.lr-sweep[lr=1e-4,seed=2] lr-sweep[lr=1e-4,seed=2]\n"
			    "job.lr-sweep[lr=1.50,seed=2] lr-sweep[lr=1.50,seed=2]\n"
			    "job.lr-sweep[lr=3e-3,seed=1] lr-sweep[lr=3e-3,seed=1]\n");
	free(got);
	assert_non_null(strstr(stack_jobs(st, NULL)[2].spec.canonical_json, "\"args\":[\"--lr=1.50\",\"--seed=2\"]"));
	assert_non_null(strstr(stack_jobs(st, NULL)[2].spec.canonical_json, "\"outputUriPrefix\":\"gs://b/out/lr=1.50,seed=2/\""));
	assert_int_equal(stack_sweeps(st, NULL)[0].max_parallel, 2);
	assert_int_equal(stack_sweeps(st, NULL)[0].max_failed, 1);
	stack_free(st);
}

/* A spec that places the output itself keeps its own directory. */
static void test_output_dir_written_by_spec(void **state)
{
	struct stack *st;

	(void)state;
	st = valid(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  lr: [1, 2]\n" SPEC("[a]")
		   "  baseOutputDirectory: {outputUriPrefix: \"gs://b/lr-${{ matrix.lr }}\"}\n");
	assert_non_null(strstr(stack_jobs(st, NULL)[1].spec.canonical_json, "\"outputUriPrefix\":\"gs://b/lr-2\""));
	stack_free(st);
}

static void test_errors(void **state)
{
	(void)state;
	/* an unknown name, at the expression's own column */
	invalid(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  lr: [1, 2]\n"
		SPEC("[\"--lr=${{ matrix.lrr }}\"]"),
		"t/s.yaml:14:60: CustomJob \"s\": spec.workerPoolSpecs[0].containerSpec.args[0]: "
		"unknown matrix name \"lrr\" (the matrix has lr)\n");
	invalid(STACK_DOC "kind: CustomJob\nname: s\ndisplayName: \"a ${{ env.X }}\"\nmatrix:\n"
		"  lr: [1]\n" SPEC("[a]"),
		"t/s.yaml:8:17: CustomJob \"s\": displayName: \"${{ env.X }}\" is not an "
		"expression vx knows; write ${{ matrix.NAME }}, ${{ jobs.NAME.outputDir }} or "
		"${{ jobs.NAME.run }}\n");
	/* a job without a matrix has no matrix values */
	invalid(STACK_DOC "kind: CustomJob\nname: s\n" SPEC("[\"${{ matrix.lr }}\"]"),
		"t/s.yaml:12:55: CustomJob \"s\": spec.workerPoolSpecs[0].containerSpec.args[0]: "
		"matrix.lr: this job has no matrix:\n");
	/* too many runs */
	invalid(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  a: [1,2,3,4,5,6,7,8,9,10]\n"
		"  b: [1,2,3,4,5,6,7,8,9,10]\n  c: [1,2,3,4,5,6,7,8,9,10]\n  d: [1,2,3,4,5,6,7,8,9,10,11]\n"
		SPEC("[a]"),
		"t/s.yaml:9:3: CustomJob \"s\": matrix: expands to more than 10000 runs; split the "
		"sweep or drop values\n");
	/* exclude names an axis; values fit an address */
	invalid(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  lr: [1, \"a b\"]\n  exclude: [{seed: 1}]\n"
		SPEC("[a]"),
		"t/s.yaml:9:11: CustomJob \"s\": matrix.lr[1]: \"a b\" cannot be part of a run's "
		"address; use 1 to 40 letters, digits, \".\", \"_\" and \"-\"\n"
		"t/s.yaml:10:14: CustomJob \"s\": matrix.exclude[0]: \"seed\" is not an axis of the "
		"matrix; exclude names values of the axes\n");
	/* a combination that breaks a rule: at the matrix, the run named; a
	 * problem of the document itself once, where it is written */
	invalid(STACK_DOC "kind: CustomJob\nname: s\nrun: 0\nmatrix:\n  n: [1, x]\n"
		"spec:\n  workerPoolSpecs:\n    - machineSpec: {machineType: n1-standard-4}\n"
		"      replicaCount: ${{ matrix.n }}\n      containerSpec: {imageUri: gcr.io/p/i:1}\n",
		"t/s.yaml:8:6: CustomJob \"s\": run: must be at least 1, got 0\n"
		"t/s.yaml:9:1: CustomJob \"s[n=x]\": spec.workerPoolSpecs[0].replicaCount: expected an "
		"integer, got \"x\" (the value written at line 14)\n");
	invalid(STACK_DOC "kind: CustomJob\nname: s\nmaxParallel: 2\n" SPEC("[a]"),
		"t/s.yaml:8:1: CustomJob \"s\": maxParallel: only a job with matrix: has runs to cap; "
		"add a matrix or remove maxParallel\n");
}

#define TRAIN "kind: CustomJob\nname: train\nrun: 3\n" SPEC("[a]") \
	"  baseOutputDirectory: {outputUriPrefix: gs://b/train}\n---\n"

/* after: the jobs' values are read in dependency order, whatever the file order. */
static void test_after_values(void **state)
{
	struct stack *st;
	const struct stack_job *e;

	(void)state;
	st = valid(STACK_DOC "kind: CustomJob\nname: eval\nafter: [job.train, \"job.sw[seed=1]\"]\n"
		   SPEC("[\"--ckpt=${{ jobs.train.outputDir }}/model\", \"--run=${{ jobs.train.run }}\", "
			"\"--sweep=${{ jobs.sw.outputDir }}\"]") "---\n" TRAIN
		   "kind: CustomJob\nname: sw\nmatrix: {seed: [1, 2]}\n" SPEC("[a]")
		   "  baseOutputDirectory: {outputUriPrefix: gs://b/sw}\n");
	e = stack_find_job(st, "eval");
	assert_non_null(e);
	assert_int_equal(e->nafter, 2);
	assert_string_equal(e->after[0], "job.train");
	assert_string_equal(e->after[1], "job.sw[seed=1]");
	assert_non_null(strstr(e->spec.canonical_json,
			       "\"args\":[\"--ckpt=gs://b/train/model\",\"--run=3\",\"--sweep=gs://b/sw\"]"));
	assert_string_equal(stack_find_job(st, "sw[seed=2]")->output_dir, "gs://b/sw/seed=2/");
	stack_free(st);
}

static void test_after_errors(void **state)
{
	(void)state;
	/* an unknown job, a cycle (each job once), a slice naming no run, and what is not an address */
	invalid(STACK_DOC "kind: CustomJob\nname: a\nafter: [job.b]\n" SPEC("[a]") "---\n"
		"kind: CustomJob\nname: b\nafter: [job.a, job.nope, reservation.r]\n" SPEC("[a]") "---\n"
		"kind: CustomJob\nname: c\nafter: [job.a, \"job.sw[seed=3]\"]\n" SPEC("[a]") "---\n"
		"kind: CustomJob\nname: sw\nmatrix: {seed: [1]}\n" SPEC("[a]"),
		"t/s.yaml:8:1: CustomJob \"a\": after: a cycle: job.a -> job.b -> job.a (each waits for the "
		"next); remove one of these after: entries\n"
		"t/s.yaml:17:1: CustomJob \"b\": after: a cycle: job.b -> job.a -> job.b (each waits for the "
		"next); remove one of these after: entries\n"
		"t/s.yaml:17:16: CustomJob \"b\": after[1]: no job \"nope\" is declared\n"
		"t/s.yaml:17:26: CustomJob \"b\": after[2]: \"reservation.r\" is not a job's address: write "
		"job.NAME, or job.NAME[k=v,...] for a slice of a sweep\n"
		"t/s.yaml:26:16: CustomJob \"c\": after[1]: \"job.sw[seed=3]\" names no run of a sweep\n");
	/* ${{ jobs.NAME }} names a job after: lists, with an output directory */
	invalid(STACK_DOC TRAIN "kind: CustomJob\nname: e\n" SPEC("[\"${{ jobs.train.run }}\"]"),
		"t/s.yaml:22:55: CustomJob \"e\": spec.workerPoolSpecs[0].containerSpec.args[0]: jobs.train: "
		"a job is named only in after: (add job.train to after:)\n");
	invalid(STACK_DOC "kind: CustomJob\nname: t\n" SPEC("[a]") "---\nkind: CustomJob\nname: e\n"
		"after: [job.t]\n" SPEC("[\"${{ jobs.t.outputDir }}\"]"),
		"t/s.yaml:21:55: CustomJob \"e\": spec.workerPoolSpecs[0].containerSpec.args[0]: jobs.t sets "
		"no spec.baseOutputDirectory.outputUriPrefix\n");
}

static void test_addresses(void **state)
{
	(void)state;
	assert_true(sweep_address_matches("job.s", "job.s"));
	assert_true(sweep_address_matches("job.s", "job.s[lr=1,seed=2]"));
	assert_false(sweep_address_matches("job.s", "job.s2[lr=1]"));
	assert_false(sweep_address_matches("job.s", "job.sx"));
	assert_true(sweep_address_matches("job.s[seed=2]", "job.s[lr=1,seed=2]"));
	assert_true(sweep_address_matches("job.s[seed=2,lr=1]", "job.s[lr=1,seed=2]"));
	assert_false(sweep_address_matches("job.s[seed=2]", "job.s[lr=1,seed=20]"));
	assert_false(sweep_address_matches("job.s[seed=2]", "job.t[lr=1,seed=2]"));
	assert_false(sweep_address_matches("job.s[seed=2]", "job.s"));
	assert_true(sweep_address_is_run("job.s[a=1]"));
	assert_false(sweep_address_is_run("job.s"));
}

static void test_labels(void **state)
{
	char a[SWEEP_LABEL_MAX + 1], b[SWEEP_LABEL_MAX + 1];
	const char *longname = "a23456789012345678901234567890123456789012345678901234567890123";

	(void)state;
	sweep_job_label(a, "train");
	assert_string_equal(a, "train");
	sweep_job_label(a, "lr-sweep[lr=3e-4,seed=1]");
	sweep_job_label(b, "lr-sweep[lr=3e-4,seed=2]");
	assert_int_equal(strlen(a), strlen("lr-sweep--") + 13);
	assert_int_equal(strncmp(a, "lr-sweep--", 10), 0);
	assert_string_not_equal(a, b);
	for (const char *p = a; *p; p++)
		assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-');
	sweep_job_label(a, "a23456789012345678901234567890123456789012345678901234567890123[x=1]");
	assert_int_equal(strlen(a), 63);
	assert_int_equal(strncmp(a, longname, 48), 0);
}

/* A job declared alone whose name is a run's label is refused. */
static void test_label_collision(void **state)
{
	struct stack *st;
	char label[SWEEP_LABEL_MAX + 1], *yaml;

	(void)state;
	sweep_job_label(label, "s[lr=1]");
	yaml = vx_asprintf(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  lr: [1]\n" SPEC("[a]")
			   "---\nkind: CustomJob\nname: %s\n" SPEC("[a]"), label);
	{
		char *want = vx_asprintf("t/s.yaml: CustomJob \"%s\" at line 16: its name is the vx-job "
					 "label of job.s[lr=1] (a sweep's run); rename the job\n", label);

		invalid(yaml, want);
		free(want);
	}
	free(yaml);
	st = valid(STACK_DOC "kind: CustomJob\nname: s\nmatrix:\n  lr: [1]\n" SPEC("[a]")
		   "---\nkind: CustomJob\nname: s--x\n" SPEC("[a]"));
	stack_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_include_github_semantics),
		cmocka_unit_test(test_exclude_order_and_text),
		cmocka_unit_test(test_output_dir_written_by_spec),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_after_values),
		cmocka_unit_test(test_after_errors),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_label_collision),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
