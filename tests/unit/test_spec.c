/* Unit tests for reconcile/load/spec.c: schema checks with exact messages and
 * positions, normalisation and hashing, sensitive values, reservations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"

static const struct spec_reservation reservations[] = {
	{ "h100-pool", "us-central1-a", "a3-highgpu-8g", "nvidia-h100-80gb", 8 },
	{ "eu-pool", "europe-west4-b", "a3-highgpu-8g", "nvidia-h100-80gb", 8 },
};
static const struct spec_env env = { "my-proj", "us-central1", reservations, 2, NULL };

/* Checks yaml as a spec; returns spec_check's result and every diagnostic,
 * one per line, in *diags (caller frees). */
static int run(const char *yaml, struct job_spec *js, char **diags)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct vx_buf b = VX_BUF_INIT;
	struct yfile *f = NULL;
	size_t i;
	int rc;

	rc = ynode_load_mem(&f, "job.yaml", yaml, strlen(yaml), NULL, &d, &err);
	if (rc != 0) {
		for (i = 0; i < d.n; i++)
			print_error("%s\n", d.items[i].msg);
		fail_msg("yaml did not load: %s", vx_err_msg(&err));
	}
	rc = spec_check(js, f->ndocs ? f->docs[0] : NULL, &env, &d);
	for (i = 0; i < d.n; i++) {
		char *line = vx_diag_format(&d.items[i]);

		assert_non_null(line);
		assert_int_equal(vx_buf_printf(&b, "%s%s", i ? "\n" : "", line), 0);
		free(line);
	}
	*diags = vx_buf_detach(&b);
	vx_buf_release(&b);
	vx_diags_release(&d);
	vx_err_release(&err);
	yfile_free(f);
	return rc;
}

static void expect_ok(const char *yaml, struct job_spec *js)
{
	char *diags = NULL;
	int rc = run(yaml, js, &diags);

	if (rc != 0)
		fail_msg("refused (%d):\n%s", rc, diags);
	assert_string_equal(diags, "");
	free(diags);
}

static void expect_errors(const char *yaml, const char *want)
{
	struct job_spec js;
	char *diags = NULL;
	int rc = run(yaml, &js, &diags);

	assert_int_equal(rc, VX_EINVAL);
	assert_string_equal(diags, want);
	assert_null(js.canonical_json);
	free(diags);
	job_spec_release(&js);
}

static char *hash_of(const char *yaml)
{
	struct job_spec js;
	char *h;

	expect_ok(yaml, &js);
	h = strdup(js.hash);
	job_spec_release(&js);
	return h;
}

#define POOL_H100 \
	"workerPoolSpecs:\n" \
	"  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n" \
	"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1, args: [--epochs, \"3\"]}\n"

static void test_canonical_json(void **state)
{
	struct job_spec js;
	char *shape;

	(void)state;
	expect_ok(POOL_H100
		  "scheduling: {strategy: FLEX_START, maxWaitDuration: 30m, timeout: 1h30m}\n"
		  "baseOutputDirectory: {output_uri_prefix: gs://b/out}\n"
		  "enableWebAccess: false\n", &js);
	assert_string_equal(js.canonical_json,
		"{\"baseOutputDirectory\":{\"outputUriPrefix\":\"gs://b/out\"},"
		"\"scheduling\":{\"maxWaitDuration\":\"1800s\",\"strategy\":\"FLEX_START\",\"timeout\":\"5400s\"},"
		"\"workerPoolSpecs\":[{\"containerSpec\":{\"args\":[\"--epochs\",\"3\"],"
		"\"imageUri\":\"us-docker.pkg.dev/p/r/t:1\"},"
		"\"machineSpec\":{\"acceleratorCount\":8,\"acceleratorType\":\"NVIDIA_H100_80GB\","
		"\"machineType\":\"a3-highgpu-8g\"},\"replicaCount\":\"1\"}]}");
	assert_string_equal(js.redacted_json, js.canonical_json);
	assert_int_equal(strlen(js.hash), 64);
	assert_string_equal(js.strategy, "FLEX_START");
	assert_int_equal(js.max_wait_s, 1800);
	assert_int_equal(js.timeout_s, 5400);
	assert_string_equal(js.output_uri, "gs://b/out");
	assert_int_equal(js.npools, 1);
	assert_string_equal(js.pools[0].machine_type, "a3-highgpu-8g");
	assert_string_equal(js.pools[0].accelerator_type, "NVIDIA_H100_80GB");
	assert_int_equal(js.pools[0].accelerator_count, 8);
	assert_int_equal(js.pools[0].replica_count, 1);
	assert_null(js.reservation);
	shape = job_spec_shape(&js);
	assert_string_equal(shape, "a3-highgpu-8g \xc3\x97" "1, 8\xc3\x97H100 80GB, FLEX_START");
	free(shape);
	job_spec_release(&js);
}

static void test_defaults_and_shape(void **state)
{
	struct job_spec js;
	char *shape;

	(void)state;
	expect_ok("worker_pool_specs:\n"
		  "  - machineSpec: {machineType: n1-standard-4}\n"
		  "    pythonPackageSpec: {executorImageUri: img, packageUris: gs://b/p.tar.gz, pythonModule: t.m}\n"
		  "  - {}\n"
		  "  - machineSpec: {machineType: g2-standard-24, acceleratorType: 11, acceleratorCount: \"2\"}\n"
		  "    replicaCount: 3\n"
		  "    containerSpec: {imageUri: img}\n"
		  "scheduling: {strategy: STRATEGY_UNSPECIFIED, maxWaitDuration: 0}\n", &js);
	assert_string_equal(js.canonical_json,
		"{\"scheduling\":{\"maxWaitDuration\":\"0s\"},\"workerPoolSpecs\":["
		"{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"pythonPackageSpec\":"
		"{\"executorImageUri\":\"img\",\"packageUris\":[\"gs://b/p.tar.gz\"],\"pythonModule\":\"t.m\"},"
		"\"replicaCount\":\"1\"},{},"
		"{\"containerSpec\":{\"imageUri\":\"img\"},\"machineSpec\":{\"acceleratorCount\":2,"
		"\"acceleratorType\":\"NVIDIA_L4\",\"machineType\":\"g2-standard-24\"},\"replicaCount\":\"3\"}]}");
	assert_string_equal(js.strategy, "STANDARD");
	assert_int_equal(js.max_wait_s, 0);
	assert_int_equal(js.timeout_s, -1);
	assert_int_equal(js.npools, 3);
	assert_null(js.pools[1].machine_type);
	shape = job_spec_shape(&js);
	assert_string_equal(shape, "n1-standard-4 \xc3\x97" "1 + g2-standard-24 \xc3\x97" "3, 2\xc3\x97L4, STANDARD");
	free(shape);
	job_spec_release(&js);
}

/* Two specs have the same shape exactly when their shape lines are equal: what job_spec_shape reads of them. */
static void test_same_shape(void **state)
{
	static const char *specs[] = {
		POOL_H100 "scheduling: {strategy: FLEX_START}\n",
		/* another image and args: the same shape */
		"workerPoolSpecs:\n"
		"  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:2}\n"
		"scheduling: {strategy: FLEX_START}\n",
		POOL_H100 "scheduling: {strategy: SPOT}\n",
		POOL_H100,
		"workerPoolSpecs:\n"
		"  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n"
		"    replicaCount: 2\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1}\n",
		"workerPoolSpecs:\n"
		"  - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1}\n",
		"workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1}\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    replicaCount: 2\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1}\n",
	};
	enum { N = sizeof(specs) / sizeof(specs[0]) };
	struct job_spec js[N];
	char *shapes[N];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		expect_ok(specs[i], &js[i]);
		assert_non_null(shapes[i] = job_spec_shape(&js[i]));
	}
	assert_true(job_spec_same_shape(&js[0], &js[1]));
	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < N; k++)
			assert_int_equal(job_spec_same_shape(&js[i], &js[k]), !strcmp(shapes[i], shapes[k]));
	for (size_t i = 0; i < N; i++) {
		free(shapes[i]);
		job_spec_release(&js[i]);
	}
}

static void test_hash_equal(void **state)
{
	static const char *same[] = {
		POOL_H100 "scheduling: {timeout: 30m}\n",
		"scheduling:\n  timeout: \"1800s\"\n"
		"workerPoolSpecs:\n"
		"  - containerSpec:\n      args: ['--epochs', '3']\n      imageUri: \"us-docker.pkg.dev/p/r/t:1\"\n"
		"    replicaCount: \"1\"\n"
		"    machine_spec: {acceleratorCount: \"8\", accelerator_type: NVIDIA_H100_80GB, machineType: a3-highgpu-8g}\n",
		POOL_H100 "    replicaCount: 1\nscheduling: {timeout: 1800, strategy: STANDARD}\nenableWebAccess: false\n",
		POOL_H100 "scheduling: {timeout: 0.5h, disableRetries: false}\nreservedIpRanges: []\n",
	};
	char *first = hash_of(same[0]);
	size_t i;

	(void)state;
	for (i = 1; i < sizeof(same) / sizeof(same[0]); i++) {
		char *h = hash_of(same[i]);

		if (strcmp(h, first))
			fail_msg("spec %zu hashes differently", i);
		free(h);
	}
	free(first);
}

static void test_hash_changes(void **state)
{
	static const char *changed[] = {
		POOL_H100 "scheduling: {timeout: 31m}\n",
		POOL_H100 "    replicaCount: 2\nscheduling: {timeout: 30m}\n",
		POOL_H100 "scheduling: {timeout: 30m, strategy: SPOT}\n",
		POOL_H100 "scheduling: {timeout: 30m}\nenableWebAccess: true\n",
		POOL_H100 "    diskSpec: {bootDiskSizeGb: 200}\nscheduling: {timeout: 30m}\n",
		POOL_H100 "scheduling: {timeout: 30m, maxWaitDuration: 0s}\n",
		"workerPoolSpecs:\n"
		"  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n"
		"    containerSpec: {imageUri: us-docker.pkg.dev/p/r/t:1, args: [\"3\", --epochs]}\n"
		"scheduling: {timeout: 30m}\n",
	};
	char *base = hash_of(POOL_H100 "scheduling: {timeout: 30m}\n");
	size_t i, j;
	char *h[sizeof(changed) / sizeof(changed[0])];

	(void)state;
	for (i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
		h[i] = hash_of(changed[i]);
		if (!strcmp(h[i], base))
			fail_msg("change %zu kept the hash", i);
		for (j = 0; j < i; j++)
			if (!strcmp(h[i], h[j]))
				fail_msg("changes %zu and %zu hash the same", j, i);
	}
	for (i = 0; i < sizeof(changed) / sizeof(changed[0]); i++)
		free(h[i]);
	free(base);
}

static void test_schema_errors(void **state)
{
	(void)state;
	expect_errors("workerPoolSpec:\n  - {}\n",
		"job.yaml:1:1: spec: unknown field \"workerPoolSpec\" (did you mean \"workerPoolSpecs\"?)\n"
		"job.yaml:1:1: spec: missing required field \"workerPoolSpecs\"");
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machinetype: n1-standard-4, acceleratorType: NVIDIA_H100_80G}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: 1.5\n"
		"scheduling: {timeout: 30x, restartJobOnWorkerRestart: \"true\", strategy: flex_start}\n",
		"job.yaml:2:19: spec.workerPoolSpecs[0].machineSpec: unknown field \"machinetype\" (did you mean \"machineType\"?)\n"
		"job.yaml:2:64: spec.workerPoolSpecs[0].machineSpec.acceleratorType: unknown value \"NVIDIA_H100_80G\" (did you mean \"NVIDIA_H100_80GB\"?)\n"
		"job.yaml:4:19: spec.workerPoolSpecs[0].replicaCount: expected an integer, got \"1.5\"\n"
		"job.yaml:5:23: spec.scheduling.timeout: invalid duration \"30x\" (use 1800s, 30m, 1h30m, 7d; at most millisecond precision)\n"
		"job.yaml:5:55: spec.scheduling.restartJobOnWorkerRestart: expected a boolean (true or false), got string\n"
		"job.yaml:5:73: spec.scheduling.strategy: unknown value \"flex_start\" (did you mean \"FLEX_START\"?)");
}

static void test_pool_errors(void **state)
{
	(void)state;
	/* oneof, missing task, K80, int32 range, output of every error */
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_K80, acceleratorCount: 1}\n"
		"    containerSpec: {imageUri: img}\n"
		"    pythonPackageSpec: {executorImageUri: img, packageUris: [a], pythonModule: m}\n"
		"  - replicaCount: 2\n"
		"    machineSpec: {machineType: n1-standard-4, acceleratorCount: 3000000000}\n"
		"  - containerSpec: {imageUri: \"\", env: [{name: A}]}\n",
		"job.yaml:2:64: spec.workerPoolSpecs[0].machineSpec.acceleratorType: NVIDIA_TESLA_K80 is retired (end of life) and refused\n"
		"job.yaml:4:5: spec.workerPoolSpecs[0]: \"containerSpec\" and \"pythonPackageSpec\" cannot both be set (one of \"task\")\n"
		"job.yaml:6:65: spec.workerPoolSpecs[1].machineSpec.acceleratorCount: 3000000000 is out of range (at most 2147483647)\n"
		"job.yaml:5:5: spec.workerPoolSpecs[1]: needs containerSpec or pythonPackageSpec\n"
		"job.yaml:7:31: spec.workerPoolSpecs[2].containerSpec.imageUri: must not be empty\n"
		"job.yaml:7:41: spec.workerPoolSpecs[2].containerSpec.env[0]: missing required field \"value\"\n"
		"job.yaml:7:5: spec.workerPoolSpecs[2]: missing required field \"machineSpec\"");
}

static void test_machine_rule_positions(void **state)
{
	(void)state;
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      machineType: a3-highgpu-8g\n"
		"      acceleratorType: NVIDIA_H100_80GB\n"
		"      acceleratorCount: 4\n"
		"    containerSpec: {imageUri: img}\n"
		"  - machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: 2\n"
		"scheduling: {strategy: FLEX_START, timeout: 8d}\n",
		"job.yaml:5:25: spec.workerPoolSpecs[0].machineSpec.acceleratorCount: a3-highgpu-8g comes with 8 NVIDIA_H100_80GB; acceleratorCount is 4 (4 NVIDIA_H100_80GB come with machineType a3-highgpu-4g)\n"
		"job.yaml:7:64: spec.workerPoolSpecs[1].machineSpec.acceleratorType: FLEX_START runs only on L4, A100, H100, H200, B200 GPUs; acceleratorType is NVIDIA_TESLA_T4\n"
		"job.yaml:7:18: spec.workerPoolSpecs[1].machineSpec: FLEX_START needs the same machineSpec in every worker pool; this one differs from the first\n"
		"job.yaml:10:45: spec.scheduling.timeout: FLEX_START allows a timeout of at most 7 days (604800s); timeout is 691200s");
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: g2-standard-8}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: 0\n",
		"job.yaml:4:19: spec.workerPoolSpecs[0].replicaCount: must be at least 1, got 0\n"
		"job.yaml:2:18: spec.workerPoolSpecs[0].machineSpec: g2-standard-8 comes with 1 NVIDIA_L4; acceleratorType is not set");
}

/* Issue 8: values vx used to send (or refuse with a message that said nothing). */
static void test_loader_items(void **state)
{
	(void)state;
	/* a negative replicaCount in a later pool, and int64 beyond its range */
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: 18446744073709551616\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: -1\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec: {imageUri: img}\n"
		"    replicaCount: 0x2\n",
		"job.yaml:4:19: spec.workerPoolSpecs[0].replicaCount: 18446744073709551616 is out of range (at most 9223372036854775807)\n"
		"job.yaml:7:19: spec.workerPoolSpecs[1].replicaCount: must be at least 1, got -1\n"
		"job.yaml:10:19: spec.workerPoolSpecs[2].replicaCount: expected a decimal integer, got \"0x2\"");
	/* env names: a C identifier, once per container */
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec:\n"
		"      imageUri: img\n"
		"      env:\n"
		"        - {name: A=B, value: x}\n"
		"        - {name: LR, value: x}\n"
		"        - {name: 1X, value: x}\n"
		"        - {name: LR, value: y}\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    pythonPackageSpec:\n"
		"      {executorImageUri: img, packageUris: [gs://b/p.tgz], pythonModule: m, env: [{name: LR, value: x}]}\n",
		"job.yaml:6:18: spec.workerPoolSpecs[0].containerSpec.env[0].name: \"A=B\" is not a valid environment variable name: use letters, digits and \"_\", not starting with a digit\n"
		"job.yaml:8:18: spec.workerPoolSpecs[0].containerSpec.env[2].name: \"1X\" is not a valid environment variable name: use letters, digits and \"_\", not starting with a digit\n"
		"job.yaml:9:18: spec.workerPoolSpecs[0].containerSpec.env[3].name: duplicate: \"LR\" is already set by env[1] at line 7");
	/* string fields: a YAML number or boolean is refused with the quoted form */
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec:\n"
		"      imageUri: img\n"
		"      args: [--epochs, 3, --lr, 1.5e-4, --fast, true]\n"
		"      env: [{name: A, value: 1}]\n",
		"job.yaml:5:24: spec.workerPoolSpecs[0].containerSpec.args[1]: expected a string, got the number 3; quote it: \"3\"\n"
		"job.yaml:5:33: spec.workerPoolSpecs[0].containerSpec.args[3]: expected a string, got the number 1.5e-4; quote it: \"1.5e-4\"\n"
		"job.yaml:5:49: spec.workerPoolSpecs[0].containerSpec.args[5]: expected a string, got the boolean true; quote it: \"true\"\n"
		"job.yaml:6:30: spec.workerPoolSpecs[0].containerSpec.env[0].value: expected a string, got the number 1; quote it: \"1\"");
	/* a GPU name cut short: the name it starts, not the nearest spelling */
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100, acceleratorCount: 8}\n"
		"    containerSpec: {imageUri: img}\n",
		"job.yaml:2:64: spec.workerPoolSpecs[0].machineSpec.acceleratorType: unknown value \"NVIDIA_H100\" (did you mean \"NVIDIA_H100_80GB\"? a3-highgpu-8g comes with 8 NVIDIA_H100_80GB)");
}

#define SALT1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define SALT2 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define SENSITIVE_SPEC(value) \
	"workerPoolSpecs:\n" \
	"  - machineSpec: {machineType: n1-standard-4}\n" \
	"    containerSpec:\n" \
	"      imageUri: img\n" \
	"      env:\n" \
	"        - {name: HF_TOKEN, value: " value ", sensitive: true}\n" \
	"        - {name: MODE, value: \"8080\", sensitive: false}\n"
#define REDACTED(v) \
	"{\"workerPoolSpecs\":[{\"containerSpec\":{\"env\":[{\"name\":\"HF_TOKEN\",\"value\":" \
	"\"" v "\"},{\"name\":\"MODE\",\"value\":\"8080\"}],\"imageUri\":\"img\"}," \
	"\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"1\"}]}"

static void test_sensitive(void **state)
{
	struct job_spec js;

	(void)state;
	expect_ok(SENSITIVE_SPEC("hunter2"), &js);
	assert_string_equal(js.canonical_json, REDACTED("hunter2"));
	assert_int_equal(js.nsensitive, 1);
	/* The hash vx computed before salts (pinned from that code): only to
	 * recognise records it wrote. */
	assert_string_equal(js.legacy_hash,
			    "9fbd1375d6f2a698287aaff90b043e4d8732b8530274bb3dcefec3c27cd231ec");
	/* Until the salt is known: a placeholder, neither the value nor its plain hash. */
	assert_string_equal(js.redacted_json, REDACTED("(sensitive: not yet keyed with the state's salt)"));
	assert_string_not_equal(js.hash, js.legacy_hash);
	assert_null(strstr(js.redacted_json, "hunter2"));
	job_spec_release(&js);
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    containerSpec: {imageUri: img, env: [{name: A, value: b, sensitive: yes}]}\n",
		"job.yaml:3:73: spec.workerPoolSpecs[0].containerSpec.env[0].sensitive: expected a boolean (true or false), got string");
}

/* HMAC-SHA-256 keyed with the salt's 32 bytes; the hash is the SHA-256 of the
 * redacted JSON. Expected values from Python's hmac and hashlib. */
static void test_sensitive_rehash(void **state)
{
	struct job_spec js, other;
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	expect_ok(SENSITIVE_SPEC("hunter2"), &js);
	assert_int_equal(job_spec_rehash(&js, SALT1, &err), 0);
	assert_string_equal(js.redacted_json,
		REDACTED("hmac-sha256:8629d712da366318588317f3f98c728c71d4819f843d95db8803c019c561c1e7"));
	assert_string_equal(js.hash, "b6a061da7ba94ed7c9dec3c3c882bc5c62933fb17ffba2fe9aeb5b24e54fd7f9");
	assert_string_equal(js.canonical_json, REDACTED("hunter2"));
	assert_string_equal(js.legacy_hash,
			    "9fbd1375d6f2a698287aaff90b043e4d8732b8530274bb3dcefec3c27cd231ec");
	/* Another salt (another stack): nothing in common to compare. */
	assert_int_equal(job_spec_rehash(&js, SALT2, &err), 0);
	assert_string_equal(js.redacted_json,
		REDACTED("hmac-sha256:6fd2830a1ea22b133165dddb413a678cfa5812268dd6cdd5af7f2dad6e9a17a2"));
	assert_string_equal(js.hash, "2842bee9f842a1ead712924b4537270c63f24a917c9d8483b81f8ddfc97b36f4");
	/* A bad salt is refused and changes nothing. */
	assert_int_equal(job_spec_rehash(&js, "0011", &err), VX_EINVAL);
	assert_string_equal(vx_err_msg(&err), "the state's salt is not 64 hex digits");
	vx_err_release(&err);
	assert_int_equal(job_spec_rehash(&js, SALT1 "00", &err), VX_EINVAL);
	vx_err_release(&err);
	assert_int_equal(job_spec_rehash(&js, "0g0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &err), VX_EINVAL);
	vx_err_release(&err);
	assert_int_equal(job_spec_rehash(&js, NULL, &err), VX_EINVAL);
	vx_err_release(&err);
	assert_string_equal(js.hash, "2842bee9f842a1ead712924b4537270c63f24a917c9d8483b81f8ddfc97b36f4");
	/* The same salt again: the same hash (a plan and its apply agree). */
	assert_int_equal(job_spec_rehash(&js, SALT1, &err), 0);
	assert_string_equal(js.hash, "b6a061da7ba94ed7c9dec3c3c882bc5c62933fb17ffba2fe9aeb5b24e54fd7f9");
	/* A changed secret changes the hash under the same salt. */
	expect_ok(SENSITIVE_SPEC("hunter3"), &other);
	assert_int_equal(job_spec_rehash(&other, SALT1, &err), 0);
	assert_string_not_equal(other.hash, js.hash);
	assert_string_not_equal(other.legacy_hash, js.legacy_hash);
	job_spec_release(&other);
	job_spec_release(&js);
	vx_err_release(&err);
}

/* Without sensitive values the spec hash is exactly what vx always computed
 * (pinned from the code before salts): an upgrade must replace no job. */
static void test_hash_stable_without_sensitive(void **state)
{
	static const char *want = "bb177e39f7c55b697fa2d79da268ab04af2297833f640cc652ebf9873e38bc26";
	struct job_spec js;
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	expect_ok(POOL_H100
		  "scheduling: {strategy: FLEX_START, maxWaitDuration: 30m, timeout: 1h30m}\n"
		  "baseOutputDirectory: {output_uri_prefix: gs://b/out}\n"
		  "enableWebAccess: false\n", &js);
	assert_string_equal(js.hash, want);
	assert_string_equal(js.legacy_hash, want);
	assert_int_equal(js.nsensitive, 0);
	assert_null(js.tree);
	assert_int_equal(job_spec_rehash(&js, SALT1, &err), 0);
	assert_string_equal(js.hash, want);
	assert_string_equal(js.redacted_json, js.canonical_json);
	job_spec_release(&js);
	vx_err_release(&err);
}

static void test_reservation(void **state)
{
	struct job_spec js;
	static const char *want =
		"{\"workerPoolSpecs\":[{\"containerSpec\":{\"imageUri\":\"img\"},\"machineSpec\":{"
		"\"acceleratorCount\":8,\"acceleratorType\":\"NVIDIA_H100_80GB\",\"machineType\":\"a3-highgpu-8g\","
		"\"reservationAffinity\":{\"key\":\"compute.googleapis.com/reservation-name\","
		"\"reservationAffinityType\":\"SPECIFIC_RESERVATION\","
		"\"values\":[\"projects/my-proj/zones/us-central1-a/reservations/h100-pool\"]}},"
		"\"replicaCount\":\"1\"}]}";
	char hash[65];

	(void)state;
	expect_ok("workerPoolSpecs:\n"
		  "  - machineSpec:\n"
		  "      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		  "       reservationAffinity: {reservation: h100-pool}}\n"
		  "    containerSpec: {imageUri: img}\n", &js);
	assert_string_equal(js.canonical_json, want);
	assert_string_equal(js.reservation, "h100-pool");
	memcpy(hash, js.hash, sizeof(hash));
	job_spec_release(&js);
	/* the real form is accepted, recognised and hashes the same */
	expect_ok("workerPoolSpecs:\n"
		  "  - machineSpec:\n"
		  "      machineType: a3-highgpu-8g\n"
		  "      acceleratorType: NVIDIA_H100_80GB\n"
		  "      acceleratorCount: 8\n"
		  "      reservationAffinity:\n"
		  "        reservationAffinityType: SPECIFIC_RESERVATION\n"
		  "        key: compute.googleapis.com/reservation-name\n"
		  "        values: [projects/my-proj/zones/us-central1-a/reservations/h100-pool]\n"
		  "    containerSpec: {imageUri: img}\n", &js);
	assert_string_equal(js.canonical_json, want);
	assert_string_equal(js.hash, hash);
	assert_string_equal(js.reservation, "h100-pool");
	job_spec_release(&js);

	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservation: h100-pol}}\n"
		"    containerSpec: {imageUri: img}\n",
		"job.yaml:4:43: spec.workerPoolSpecs[0].machineSpec.reservationAffinity.reservation: no Reservation named \"h100-pol\" in this stack (did you mean \"h100-pool\"?)");
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-4g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 4,\n"
		"       reservationAffinity: {reservation: h100-pool}}\n"
		"    containerSpec: {imageUri: img}\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservation: eu-pool}}\n"
		"    containerSpec: {imageUri: img}\n",
		"job.yaml:4:43: spec.workerPoolSpecs[0].machineSpec.reservationAffinity.reservation: reservation \"h100-pool\" holds a3-highgpu-8g VMs; machineType is a3-highgpu-4g\n"
		"job.yaml:8:43: spec.workerPoolSpecs[1].machineSpec.reservationAffinity.reservation: reservation \"eu-pool\" is in zone europe-west4-b, outside the job's region us-central1");
}

/* Vertex AI training does not run FLEX_START on a reservation (use-reservations). */
static void test_flex_start_refuses_a_reservation(void **state)
{
	struct job_spec js;

	(void)state;
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservation: h100-pool}}\n"
		"    containerSpec: {imageUri: img}\n"
		"scheduling: {strategy: FLEX_START}\n",
		"job.yaml:4:29: spec.workerPoolSpecs[0].machineSpec.reservationAffinity: FLEX_START cannot use a "
		"reservation: Vertex AI training does not support Dynamic Workload Scheduler with reservationAffinity; "
		"use scheduling.strategy STANDARD or SPOT to run on the reservation, or remove reservationAffinity to "
		"wait for capacity with FLEX_START");
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservationAffinityType: ANY_RESERVATION}}\n"
		"    containerSpec: {imageUri: img}\n"
		"scheduling: {strategy: FLEX_START}\n",
		"job.yaml:4:29: spec.workerPoolSpecs[0].machineSpec.reservationAffinity: FLEX_START cannot use a "
		"reservation: Vertex AI training does not support Dynamic Workload Scheduler with reservationAffinity; "
		"use scheduling.strategy STANDARD or SPOT to run on the reservation, or remove reservationAffinity to "
		"wait for capacity with FLEX_START");
	/* NO_RESERVATION, or SPOT on the reservation, is fine */
	expect_ok("workerPoolSpecs:\n"
		  "  - machineSpec:\n"
		  "      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		  "       reservationAffinity: {reservationAffinityType: NO_RESERVATION}}\n"
		  "    containerSpec: {imageUri: img}\n"
		  "scheduling: {strategy: FLEX_START}\n", &js);
	job_spec_release(&js);
	expect_ok("workerPoolSpecs:\n"
		  "  - machineSpec:\n"
		  "      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		  "       reservationAffinity: {reservation: h100-pool}}\n"
		  "    containerSpec: {imageUri: img}\n"
		  "scheduling: {strategy: SPOT}\n", &js);
	job_spec_release(&js);
}

static void test_reservation_forms(void **state)
{
	(void)state;
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservation: h100-pool, key: x}}\n"
		"    containerSpec: {imageUri: img}\n",
		"job.yaml:4:54: spec.workerPoolSpecs[0].machineSpec.reservationAffinity: \"reservation\" cannot be combined with \"key\"");
	expect_errors("workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8,\n"
		"       reservationAffinity: {reservationAffinityType: SPECIFIC_RESERVATION, values: [\n"
		"         projects/my-proj/zones/europe-west4-b/reservations/eu-pool]}}\n"
		"    containerSpec: {imageUri: img}\n",
		"job.yaml:5:10: spec.workerPoolSpecs[0].machineSpec.reservationAffinity.values[0]: reservation \"eu-pool\" is in zone europe-west4-b, outside the job's region us-central1");
}

static void test_durations(void **state)
{
	int64_t ms = 0;

	(void)state;
	assert_int_equal(spec_parse_duration("1800s", &ms), 0);
	assert_int_equal(ms, 1800000);
	assert_int_equal(spec_parse_duration("30m", &ms), 0);
	assert_int_equal(ms, 1800000);
	assert_int_equal(spec_parse_duration("1h30m", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(spec_parse_duration("7d", &ms), 0);
	assert_int_equal(ms, 604800000);
	assert_int_equal(spec_parse_duration("0.5s", &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(spec_parse_duration("90", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(spec_parse_duration("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(spec_parse_duration("", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("-5s", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("5", &ms), 0);
	assert_int_equal(spec_parse_duration("1h30", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("3.0000001s", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("99999999999999d", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("s", &ms), VX_EINVAL);
	assert_int_equal(spec_parse_duration("1.s", &ms), VX_EINVAL);
}

static void test_fraction_duration_json(void **state)
{
	struct job_spec js;

	(void)state;
	expect_ok(POOL_H100 "scheduling: {timeout: 0.5s}\n", &js);
	assert_non_null(strstr(js.canonical_json, "\"scheduling\":{\"timeout\":\"0.500s\"}"));
	job_spec_release(&js);
}

static void test_diff_paths(void **state)
{
	char *d;

	(void)state;
	d = spec_diff_paths("{\"a\":{\"b\":1,\"c\":[1,2]},\"w\":[{\"x\":\"1\"}]}",
			    "{\"a\":{\"b\":1,\"c\":[1,3]},\"w\":[{\"x\":\"2\",\"y\":true}]}");
	assert_string_equal(d, "a.c, w[0].x, w[0].y");
	free(d);
	d = spec_diff_paths("{\"a\":1}", "{\"a\":1}");
	assert_string_equal(d, "");
	free(d);
	d = spec_diff_paths("{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1}", "{}");
	assert_string_equal(d, "a, b, c, d and 2 more");
	free(d);
	d = spec_diff_paths("not json", "{}");
	assert_string_equal(d, "jobSpec");
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_json),
		cmocka_unit_test(test_defaults_and_shape),
		cmocka_unit_test(test_hash_equal),
		cmocka_unit_test(test_hash_changes),
		cmocka_unit_test(test_schema_errors),
		cmocka_unit_test(test_pool_errors),
		cmocka_unit_test(test_machine_rule_positions),
		cmocka_unit_test(test_loader_items),
		cmocka_unit_test(test_sensitive),
		cmocka_unit_test(test_sensitive_rehash),
		cmocka_unit_test(test_hash_stable_without_sensitive),
		cmocka_unit_test(test_reservation),
		cmocka_unit_test(test_flex_start_refuses_a_reservation),
		cmocka_unit_test(test_reservation_forms),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_fraction_duration_json),
		cmocka_unit_test(test_diff_paths),
		cmocka_unit_test(test_same_shape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
