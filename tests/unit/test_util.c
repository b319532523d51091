/* Unit tests for util/: the error type, growable buffers and diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <cjson/cJSON.h>

#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/ctx.h"
#include "util/err.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/pool.h"
#include "util/rand.h"
#include "util/suggest.h"
#include "util/text.h"
#include "util/timefmt.h"

static void test_err_set_and_wrap(void **state)
{
	struct vx_err err = VX_ERR_INIT;

	(void)state;
	assert_int_equal(vx_err_set(&err, VX_ENOTFOUND, "job %s", "a"), VX_ENOTFOUND);
	assert_string_equal(err.msg, "job a");
	assert_int_equal(vx_err_wrap(&err, "reading %s", "state"), VX_ENOTFOUND);
	assert_string_equal(vx_err_msg(&err), "reading state: job a");
	vx_err_release(&err);
	assert_null(err.msg);
	assert_string_equal(vx_err_msg(&err), "ok");
	assert_int_equal(vx_err_set(NULL, VX_EIO, "ignored"), VX_EIO);
}

static void test_buf_cap(void **state)
{
	struct vx_buf b = VX_BUF_INIT;
	char *s;

	(void)state;
	b.cap = 8;
	assert_int_equal(vx_buf_adds(&b, "12345678"), 0);
	assert_int_equal(vx_buf_addc(&b, '9'), VX_EINVAL);
	assert_int_equal(b.len, 8);
	assert_string_equal(vx_buf_str(&b), "12345678");
	vx_buf_reset(&b);
	assert_int_equal(vx_buf_printf(&b, "%d-%s", 42, "x"), 0);
	s = vx_buf_detach(&b);
	assert_string_equal(s, "42-x");
	free(s);
	assert_string_equal(vx_buf_str(&b), "");
	vx_buf_release(&b);
}

static void test_buf_read_file_limit(void **state)
{
	struct vx_buf b = VX_BUF_INIT;
	struct vx_err err = VX_ERR_INIT;
	char path[] = "/tmp/vx-test-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("hello world", f);
	fclose(f);
	assert_int_equal(vx_buf_read_file(&b, path, 5, &err), VX_EINVAL);
	assert_non_null(strstr(err.msg, "larger than 5 bytes"));
	vx_err_release(&err);
	vx_buf_reset(&b);
	assert_int_equal(vx_buf_read_file(&b, path, 0, &err), 0);
	assert_string_equal(vx_buf_str(&b), "hello world");
	vx_buf_release(&b);
	unlink(path);
	assert_int_equal(vx_buf_read_file(&b, path, 0, &err), VX_ENOTFOUND);
	vx_err_release(&err);
}

/* The one JSON string writer: its bytes feed the spec and declaration hashes. */
static void test_buf_json_str(void **state)
{
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(vx_buf_add_json_str(&b, "a\"b\\c\nd\re\tf\001g\xc3\xa9"), 0);
	assert_int_equal(vx_buf_add_json_str(&b, NULL), 0);
	assert_string_equal(vx_buf_str(&b), "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\xc3\xa9\"\"\"");
	vx_buf_release(&b);
}

static void test_digest_sha256_hex(void **state)
{
	char hex[VX_SHA256_HEX_LEN + 1];
	const unsigned char bytes[] = { 0x00, 0x9f, 0xff };

	(void)state;
	assert_int_equal(vx_digest_sha256_hex(hex, "abc", 3), 0);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	vx_digest_hex(hex, bytes, sizeof(bytes));
	assert_string_equal(hex, "009fff");
}

/* The one RFC 3339 parser, in both of its forms. */
static void test_time_parse(void **state)
{
	int64_t t = 7;

	(void)state;
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:60Z", 0), 0);
	assert_int_equal(t, INT64_C(1483228800000));
	assert_int_equal(vx_time_parse(&t, "2016-12-31 23:59:59.5-23:59", 0), 0);
	assert_int_equal(t, INT64_C(1483228799500) + (23 * 3600 + 59 * 60) * INT64_C(1000));
	assert_int_equal(vx_time_parse(&t, "0001-01-01T00:00:00Z", 0), 0);
	assert_int_equal(t, INT64_C(-62135596800000));
	t = 7;
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:60Z", VX_TIME_STRICT), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-12-31t23:59:59Z", VX_TIME_STRICT), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:59z", VX_TIME_STRICT), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:59.1234Z", VX_TIME_STRICT), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "1969-12-31T23:59:59Z", VX_TIME_STRICT), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:59+24:00", 0), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:59+01:60", 0), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, "2016-04-31T00:00:00Z", 0), VX_EINVAL);
	assert_int_equal(vx_time_parse(&t, " 2016-04-30T00:00:00Z", 0), VX_EINVAL);
	assert_int_equal(t, 7);
	assert_int_equal(vx_time_parse(&t, "2016-12-31T23:59:59.123Z", VX_TIME_STRICT), 0);
	assert_int_equal(t, INT64_C(1483228799123));
}

static void test_diags_sorted_and_capped(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	char *s;

	(void)state;
	d.cap = 3;
	assert_int_equal(vx_diags_add(&d, "b.yaml", 1, 1, "late file"), 0);
	assert_int_equal(vx_diags_add(&d, "a.yaml", 9, 2, "second"), 0);
	assert_int_equal(vx_diags_add(&d, "a.yaml", 3, 7, "first %d", 1), 0);
	assert_int_equal(vx_diags_add(&d, "a.yaml", 1, 1, "dropped"), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(vx_diags_count(&d), 4);
	vx_diags_sort(&d);
	s = vx_diag_format(&d.items[0]);
	assert_string_equal(s, "a.yaml:3:7: first 1");
	free(s);
	s = vx_diag_format(&d.items[2]);
	assert_string_equal(s, "b.yaml:1:1: late file");
	free(s);
	vx_diags_release(&d);
}

/* did you mean: a word cut short finds the name it starts or is part of,
 * before a name merely near in spelling; otherwise the nearest, or nothing. */
static void test_suggest(void **state)
{
	static const char *const gpus[] = { "NVIDIA_B200", "NVIDIA_H100_80GB",
					    "NVIDIA_H100_MEGA_80GB", "NVIDIA_TESLA_T4" };
	static const char *const cmds[] = { "plan", "apply", "validate", "state", "unlock" };

	(void)state;
	assert_string_equal(vx_suggest("NVIDIA_H100", gpus, 4), "NVIDIA_H100_80GB");
	assert_string_equal(vx_suggest("h100", gpus, 4), "NVIDIA_H100_80GB");
	assert_string_equal(vx_suggest("TESLA_T4", gpus, 4), "NVIDIA_TESLA_T4");
	assert_string_equal(vx_suggest("NVIDIA_B20", gpus, 4), "NVIDIA_B200");
	assert_string_equal(vx_suggest("NVIDIA_H10_80GB", gpus, 4), "NVIDIA_H100_80GB");
	assert_string_equal(vx_suggest("aply", cmds, 5), "apply");
	assert_string_equal(vx_suggest("valid", cmds, 5), "validate");
	assert_string_equal(vx_suggest("STATE", cmds, 5), "state");
	assert_null(vx_suggest("frobnicate", cmds, 5));
	/* two letters are too few to be "a part of" anything */
	assert_null(vx_suggest("at", (const char *const[]){ "validate" }, 1));
}

/* Server text on its way to a terminal: controls out, valid UTF-8 kept. */
/* What a message quotes of its input is cut to VX_TEXT_ECHO_KEEP bytes, marked, in place. */
static void test_text_cap_echoes(void **state)
{
	char *long_quoted, *want, *m;
	size_t big = 1u << 20;

	(void)state;
	long_quoted = malloc(big + 64);
	assert_non_null(long_quoted);
	memcpy(long_quoted, "value \"", 7);
	memset(long_quoted + 7, 'a', big);
	memcpy(long_quoted + 7 + big, "\" is not valid", 15);
	vx_text_cap_echoes(long_quoted);
	want = vx_asprintf("value \"%.*s\xe2\x80\xa6\" (1048576 bytes) is not valid", 200,
			   long_quoted + 7);
	assert_string_equal(long_quoted, want);
	/* cutting again changes nothing */
	m = vx_strdup(long_quoted);
	vx_text_cap_echoes(m);
	assert_string_equal(m, want);
	free(m);
	free(want);
	/* a run without spaces keeps its trailing ':'; a short one, and a short quote, pass */
	memset(long_quoted, 'b', 300);
	memcpy(long_quoted + 300, ": short \"x\" 'y'", sizeof(": short \"x\" 'y'"));
	vx_text_cap_echoes(long_quoted);
	want = vx_asprintf("%.200s\xe2\x80\xa6 (300 bytes): short \"x\" 'y'", long_quoted);
	assert_string_equal(long_quoted, want);
	free(want);
	/* the cut falls on a character's first byte, never inside it */
	memcpy(long_quoted, "'a", 2);
	for (size_t i = 2; i < 2 + 150 * 2; i += 2)
		memcpy(long_quoted + i, "\xc3\xa9", 2);
	memcpy(long_quoted + 302, "'", 2);
	vx_text_cap_echoes(long_quoted);
	assert_int_equal(strlen(long_quoted), 1 + 199 + 3 + 1 + strlen(" (301 bytes)"));
	assert_true(vx_text_is_clean(long_quoted, strlen(long_quoted)));
	vx_text_cap_echoes(NULL);
	free(long_quoted);
}

/* Log lines meant for a terminal: escape sequences go whole, the rest is cleaned. */
static void test_text_terminal_safe(void **state)
{
	static const char in[] = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b(B"
				 "\ttab\x01\x1b";
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	assert_int_equal(vx_text_add_terminal_safe(&b, in, sizeof(in) - 1), 0);
	assert_string_equal(vx_buf_str(&b), "red link tab?");
	vx_buf_release(&b);
}

static void test_text_clean(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "plain text: ok", "plain text: ok" },
		{ "\x1b[2J\x1b]0;title\x07", "?[2J?]0;title?" },
		{ "a\tb\nc\r\nd", "a b c  d" },
		{ "del\x7f", "del?" },
		{ "csi\xc2\x9b" "31m", "csi?31m" },          /* U+009B, a C1 control */
		{ "nbsp\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "nbsp\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
		{ "bad\xff\xc3", "bad??" },                   /* not UTF-8; cut short */
		{ "over\xc0\xaf", "over??" },                  /* overlong '/' */
		{ "sur\xed\xa0\x80", "sur???" },              /* a surrogate */
		{ "", "" },
	};
	size_t i;
	char *s;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = vx_text_clean(cases[i].in);
		assert_non_null(s);
		assert_string_equal(s, cases[i].out);
		assert_int_equal(vx_text_is_clean(s, strlen(s)), 1);
		free(s);
	}
	assert_int_equal(vx_text_is_clean("a\x1b", 2), 0);
	assert_null(vx_text_clean(NULL));
}

/* The filter's other settings: what a control becomes, joined breaks, a cut at max characters. */
static void test_text_filter(void **state)
{
	static const struct vx_text_rules drop = { .tab = VX_TEXT_SPACE, .breaks = VX_TEXT_SPACE,
						   .join_breaks = 1, .c0 = VX_TEXT_DROP, .c1 = VX_TEXT_DROP };
	static const struct vx_text_rules keep = { .tab = VX_TEXT_MARK, .breaks = VX_TEXT_KEEP,
						   .c0 = VX_TEXT_MARK, .c1 = VX_TEXT_KEEP };
	static const struct {
		const struct vx_text_rules *r;
		size_t max;
		const char *in, *out;
	} cases[] = {
		{ &drop, 0, "a\r\n\nb\tc\x1b[2J\x7f\xc2\x9b" "d\xff", "a b c[2Jd\xff" },
		{ &drop, 3, "abcd", "abc\xe2\x80\xa6" },
		{ &drop, 3, "abc", "abc" },
		{ &drop, 3, "abc\x01\x01", "abc" },                /* dropped: no character past max */
		{ &drop, 3, "ab\xe2\x82\xac\xe2\x82\xac", "ab\xe2\x82\xac\xe2\x80\xa6" }, /* characters, not bytes */
		{ &drop, 3, "abc\n\nd", "abc\xe2\x80\xa6" },      /* a break's space is a character too */
		{ &keep, 0, "a\r\nb\tc\x7f\xc2\x9b\xff", "a\r\nb?c?\xc2\x9b\xff" },
	};
	struct vx_buf b = VX_BUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vx_text_rules r = *cases[i].r;

		r.max = cases[i].max;
		vx_buf_reset(&b);
		assert_int_equal(vx_text_filter(&b, cases[i].in, strlen(cases[i].in), &r), 0);
		assert_string_equal(vx_buf_str(&b), cases[i].out);
	}
	vx_buf_release(&b);
}

static void redacted(const char *in, const char *want)
{
	char *s = vx_strdup(in);

	vx_text_redact_userinfo(s);
	assert_string_equal(s, want);
	free(s);
}

/* A remote URL's token never reaches a message (docs/gitops.md puts one there). */
static void test_redact_userinfo(void **unused)
{
	(void)unused;
	redacted("fetching the state: failed to connect to https://x-access-token:ghs_SECRET@github.com/o/r.git",
		 "fetching the state: failed to connect to https://***@github.com/o/r.git");
	redacted("'http://u:p@h:1/a' and 'http://t@h/b'", "'http://***@h:1/a' and 'http://*@h/b'");
	redacted("http://@h/", "http://@h/");
	redacted("https://github.com/o/r.git, git@github.com:o/r", "https://github.com/o/r.git, git@github.com:o/r");
	redacted("https://host/path@x", "https://host/path@x");   /* an '@' past the host is no userinfo */
	redacted("ssh://git@host/r", "ssh://***@host/r");
	redacted("https://***@host/r", "https://***@host/r");
	redacted("trailing https://a:b@", "trailing https://***@");
	redacted("", "");
}

static void test_fnv1a64(void **state)
{
	(void)state;
	/* The published test vectors of FNV-1a 64. */
	assert_true(vx_fnv1a64("", 0) == UINT64_C(0xcbf29ce484222325));
	assert_true(vx_fnv1a64("a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
	assert_true(vx_fnv1a64("foobar", 6) == UINT64_C(0x85944171f73967e8));
	assert_true(vx_fnv1a64_add(vx_fnv1a64("foo", 3), "bar", 3) == vx_fnv1a64("foobar", 6));
	/* The short basis older versions used, kept where golden data holds its values. */
	assert_true(vx_fnv1a64_legacy("", 0) == UINT64_C(1469598103934665603));
	assert_true(vx_fnv1a64_legacy("a", 1) ==
		    ((UINT64_C(1469598103934665603) ^ 'a') * UINT64_C(1099511628211)));
}

static void test_hashmap(void **state)
{
	struct vx_hashmap m = VX_HASHMAP_INIT;
	char keys[1000][8];
	size_t v = 0, i;

	(void)state;
	assert_int_equal(vx_hashmap_get(&m, "a", 1, &v), 0);
	for (i = 0; i < 1000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		assert_int_equal(vx_hashmap_add(&m, keys[i], strlen(keys[i]), i, NULL), 0);
	}
	assert_int_equal(m.n, 1000);
	assert_true(m.cap >= 2000 && (m.cap & (m.cap - 1)) == 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(vx_hashmap_get(&m, keys[i], strlen(keys[i]), &v), 1);
		assert_int_equal(v, i);
	}
	/* add keeps the first value and tells it; set replaces. */
	assert_int_equal(vx_hashmap_add(&m, "k7", 2, 99, &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(vx_hashmap_set(&m, "k7", 2, 99), 0);
	assert_int_equal(vx_hashmap_get(&m, "k7", 2, &v), 1);
	assert_int_equal(v, 99);
	/* Keys are bytes with a length: a prefix is another key, "" is a key. */
	assert_int_equal(vx_hashmap_get(&m, "k71", 2, &v), 1);
	assert_int_equal(vx_hashmap_get(&m, "k", 1, &v), 0);
	assert_int_equal(vx_hashmap_add(&m, "", 0, 5, NULL), 0);
	assert_int_equal(vx_hashmap_get(&m, "x", 0, &v), 1);
	assert_int_equal(v, 5);
	vx_hashmap_clear(&m);
	assert_int_equal(m.n, 0);
	assert_int_equal(vx_hashmap_get(&m, "k1", 2, &v), 0);
	assert_int_equal(vx_hashmap_add(&m, "k1", 2, 1, NULL), 0);
	/* Cleared while nearly empty, a big table gives its memory back. */
	vx_hashmap_clear(&m);
	assert_int_equal(m.cap, 0);
	vx_hashmap_release(&m);
	vx_hashmap_release(&m);
}

static const char *fake_env(void *ud, const char *name)
{
	return !strcmp(name, "VX_X") ? ud : NULL;
}

static void test_ctx_getenv(void **state)
{
	struct vx_ctx ctx;

	(void)state;
	vx_ctx_init(&ctx);
	assert_int_equal(setenv("VX_TEST_CTX_ENV", "real", 1), 0);
	assert_string_equal(vx_getenv(&ctx, "VX_TEST_CTX_ENV"), "real");
	/* A test's environment replaces the process's entirely. */
	ctx.getenv = fake_env;
	ctx.env_ud = (void *)(uintptr_t)"fake";
	assert_string_equal(vx_getenv(&ctx, "VX_X"), "fake");
	assert_null(vx_getenv(&ctx, "VX_TEST_CTX_ENV"));
	unsetenv("VX_TEST_CTX_ENV");
	/* No context, or no environment in it: the process's. */
	assert_int_equal(setenv("VX_TEST_CTX_ENV", "real", 1), 0);
	assert_string_equal(vx_getenv(NULL, "VX_TEST_CTX_ENV"), "real");
	unsetenv("VX_TEST_CTX_ENV");
	assert_int_equal(ctx.reservation_wait_ms, 0);
}

static void test_time_format(void **state)
{
	char t[VX_TIME_MAX];
	int64_t ms = 0;

	(void)state;
	vx_time_format(t, sizeof(t), INT64_C(1795255320000), 0);
	assert_string_equal(t, "2026-11-21T10:02:00Z");
	vx_time_format(t, sizeof(t), INT64_C(1795255320123), 0);
	assert_string_equal(t, "2026-11-21T10:02:00.123Z");
	vx_time_format(t, sizeof(t), INT64_C(1795255320123), VX_TIME_SECONDS);
	assert_string_equal(t, "2026-11-21T10:02:00Z");
	vx_time_format(t, sizeof(t), INT64_C(951782400007), 0); /* a leap day */
	assert_string_equal(t, "2000-02-29T00:00:00.007Z");
	vx_time_format(t, sizeof(t), -5, 0);
	assert_string_equal(t, "1970-01-01T00:00:00Z");
	vx_time_format(t, sizeof(t), INT64_MAX, 0);
	assert_string_equal(t, "9999-12-31T23:59:59.999Z");
	/* What it writes, the strict parser reads back. */
	vx_time_format(t, sizeof(t), INT64_C(1795255320123), 0);
	assert_int_equal(vx_time_parse(&ms, t, VX_TIME_STRICT), 0);
	assert_true(ms == INT64_C(1795255320123));
	/* Too small a buffer: an empty string, never an overflow. */
	vx_time_format(t, 8, INT64_C(1795255320000), 0);
	assert_string_equal(t, "");
}

/* A booking's window as the plan shows it: to the minute, whole days else hours. */
static void test_time_window(void **state)
{
	char w[VX_WINDOW_MAX];

	(void)state;
	vx_time_window(w, sizeof(w), INT64_C(1795255320000), INT64_C(1795255320000) + 5 * 86400000);
	assert_string_equal(w, "2026-11-21 10:02 UTC for 5d");
	vx_time_window(w, sizeof(w), INT64_C(1795255320000), INT64_C(1795255320000) + 36 * 3600000);
	assert_string_equal(w, "2026-11-21 10:02 UTC for 36h");
	vx_time_window(w, 12, INT64_C(1795255320000), INT64_C(1795255320000) + 86400000);
	assert_string_equal(w, "2026-11-21 ");
}

static void test_utf8(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		int ok;
	} cases[] = {
		{ "", 0, 1 },
		{ "plain", 5, 1 },
		{ "caf\xc3\xa9", 5, 1 },
		{ "\xe2\x82\xac \xf0\x9f\x98\x80", 8, 1 },
		{ "\xc2\x9b", 2, 1 },         /* a C1 control is valid UTF-8 */
		{ "\xf4\x8f\xbf\xbf", 4, 1 }, /* U+10FFFF */
		{ "\xc0\xaf", 2, 0 },         /* overlong '/' */
		{ "\xe0\x80\xaf", 3, 0 },     /* overlong */
		{ "\xed\xa0\x80", 3, 0 },     /* a surrogate */
		{ "\xf4\x90\x80\x80", 4, 0 }, /* past U+10FFFF */
		{ "\xe2\x82", 2, 0 },         /* cut off */
		{ "\x80", 1, 0 },             /* a lone continuation */
		{ "\xff", 1, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(vx_utf8_valid(cases[i].s, cases[i].len), cases[i].ok);
	assert_int_equal(vx_utf8_len("\xe2\x82\xac", 3), 3);
	assert_int_equal(vx_utf8_len("\xe2\x82\xac", 2), 0);
	assert_int_equal(vx_utf8_len("a", 1), 1);
	assert_int_equal(vx_utf8_len("a", 0), 0);
	assert_int_equal(vx_utf8_count("caf\xc3\xa9 \xe2\x82\xac"), 6);
	assert_int_equal(vx_utf8_count(""), 0);
	/* The cleaner shows a C1 control as '?', whatever the check says. */
	{
		char *c = vx_text_clean("a\xc2\x9b[2Jb");

		assert_string_equal(c, "a?[2Jb");
		free(c);
	}
}

static int64_t fixed_now(void *ud)
{
	(void)ud;
	return INT64_C(1795255320000);
}

static void test_rand(void **state)
{
	static const unsigned char b[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					     0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	struct vx_ctx ctx;
	unsigned char x[16], y[16];
	char hex[33], uuid[VX_UUID_LEN + 1];
	uint64_t r = 1;

	(void)state;
	vx_rand_hex(hex, b, 4);
	assert_string_equal(hex, "00112233");
	vx_uuid_format(uuid, b);
	/* Version 4 in the 13th digit, the variant's 10xx bits in the 17th. */
	assert_string_equal(uuid, "00112233-4455-4677-8899-aabbccddeeff");
	/* splitmix64's published sequence from state 1 (as backoff tests pin). */
	assert_true(vx_rand_next(&r) == UINT64_C(0x910a2dec89025cc1));
	/* A seed pins the bytes (the salt tells calls apart); no seed: the OS's. */
	vx_ctx_init(&ctx);
	ctx.clock.now_ms = fixed_now;
	ctx.seed = 7;
	assert_int_equal(vx_rand_seed(&ctx), 7);
	assert_int_equal(vx_rand_bytes(&ctx, "a", x, sizeof(x), NULL), 0);
	assert_int_equal(vx_rand_bytes(&ctx, "a", y, sizeof(y), NULL), 0);
	assert_memory_equal(x, y, sizeof(x));
	assert_int_equal(vx_rand_bytes(&ctx, "b", y, sizeof(y), NULL), 0);
	assert_memory_not_equal(x, y, sizeof(x));
	assert_int_equal(vx_rand_bytes(NULL, "a", x, sizeof(x), NULL), 0);
	assert_int_equal(vx_rand_bytes(NULL, "a", y, sizeof(y), NULL), 0);
	assert_memory_not_equal(x, y, sizeof(x));
}

static void test_alloc_grow(void **state)
{
	int *a = NULL;
	const char **s = NULL;
	size_t n = 0, alloc = 0, salloc = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		assert_int_equal(VX_ALLOC_GROW(a, n + 1, alloc), 0);
		a[n++] = (int)i;
	}
	/* Doubling from 16: 1000 elements fit in 1024, reached in six reallocations. */
	assert_int_equal(alloc, 1024);
	for (i = 0; i < 1000; i++)
		assert_int_equal(a[i], (int)i);
	/* Room already there: nothing moves. */
	{
		int *before = a;

		assert_int_equal(VX_ALLOC_GROW(a, 1024, alloc), 0);
		assert_ptr_equal(a, before);
	}
	/* A jump past double goes straight to a power of two that holds it. */
	assert_int_equal(VX_ALLOC_GROW(s, 100, salloc), 0);
	assert_int_equal(salloc, 128);
	s[99] = "x";
	/* An overflowing size fails and leaves the array alone. */
	assert_int_equal(VX_ALLOC_GROW(a, SIZE_MAX / 2, alloc), VX_ENOMEM);
	assert_int_equal(alloc, 1024);
	assert_int_equal(a[999], 999);
	free(a);
	free(s);
}

struct pool_probe {
	int done[100];
};

static void pool_item(void *ud, size_t i)
{
	struct pool_probe *p = ud;

	p->done[i]++; /* each item is taken by exactly one worker: no race */
}

static void test_pool(void **state)
{
	struct pool_probe p;
	size_t threads[] = { 0, 1, 4, 1000 };

	(void)state;
	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		memset(&p, 0, sizeof(p));
		vx_pool_run(100, threads[t], pool_item, &p);
		for (size_t i = 0; i < 100; i++)
			assert_int_equal(p.done[i], 1);
	}
	vx_pool_run(0, 4, pool_item, NULL); /* nothing to do: fn never called */
}

static void test_find_nocase(void **state)
{
	const char *h = "Quota EXCEEDED for\0resource";

	(void)state;
	assert_int_equal(vx_text_find_nocase(h, 18, "exceeded", 8), 6);
	assert_int_equal(vx_text_find_nocase(h, 18, "quota", 5), 0);
	/* Only the first len bytes are searched, NUL or not. */
	assert_int_equal(vx_text_find_nocase(h, 27, "RESOURCE", 8), 19);
	assert_int_equal(vx_text_find_nocase(h, 18, "resource", 8), 18);
	assert_int_equal(vx_text_find_nocase(h, 18, "for!", 4), 18);
	/* The needle has a length too: a prefix of a longer string. */
	assert_int_equal(vx_text_find_nocase(h, 18, "FORxyz", 3), 15);
	assert_int_equal(vx_text_find_nocase(h, 18, "", 0), 0);
	assert_int_equal(vx_text_find_nocase("ab", 2, "abc", 3), 2);
}

static void test_arena(void **state)
{
	struct vx_arena a = VX_ARENA_INIT;
	char *p[2000], *big, *s;

	(void)state;
	assert_false(vx_arena_owns(&a, &a));
	for (size_t i = 0; i < 2000; i++) {
		p[i] = vx_arena_alloc(&a, 1 + i % 100);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % 16, 0);
		memset(p[i], 'x', 1 + i % 100); /* ASan: each is its own, whole */
	}
	big = vx_arena_alloc(&a, 1 << 20); /* a block of its own */
	assert_non_null(big);
	memset(big, 'y', 1 << 20);
	for (size_t i = 0; i < 2000; i++)
		assert_true(vx_arena_owns(&a, p[i]));
	assert_true(vx_arena_owns(&a, big + (1 << 20) - 1));
	assert_false(vx_arena_owns(&a, &a));
	s = vx_arena_strndup(&a, "abcdef", 3);
	assert_string_equal(s, "abc");
	assert_null(vx_arena_alloc(&a, SIZE_MAX - 3)); /* rounds over: refused, not wrapped */
#if defined(__SANITIZE_ADDRESS__)
	/* The bytes past an allocation are poisoned, and a reset poisons what it dropped. */
	assert_true(__asan_address_is_poisoned(p[0] + 1));
	assert_false(__asan_address_is_poisoned(p[1]));
#endif
	/* One ordinary block is kept, emptied. */
	vx_arena_reset(&a);
	assert_false(vx_arena_owns(&a, big));
#if defined(__SANITIZE_ADDRESS__)
	/* p[1999] is in the newest ordinary block, the one a reset keeps. */
	assert_true(vx_arena_owns(&a, p[1999]));
	assert_true(__asan_address_is_poisoned(p[1999]));
#endif
	s = vx_arena_alloc(&a, 10);
	assert_true(vx_arena_owns(&a, s));
	vx_arena_release(&a);
	assert_null(a.head);
	assert_false(vx_arena_owns(&a, s));
}

static void test_json_scratch(void **state)
{
	struct vx_json_scratch outer, inner;
	cJSON *kept, *a, *b, *after;
	char *printed;

	(void)state;
	vx_json_hooks_install();
	kept = cJSON_Parse("{\"k\":[1,2,\"three\"]}"); /* outside any scratch: malloc'd */
	assert_non_null(kept);
	vx_json_scratch_begin(&outer);
	assert_false(vx_arena_owns(&outer.arena, kept));
	a = cJSON_Parse("{\"a\":{\"b\":\"c\"}}");
	assert_non_null(a);
	assert_true(vx_arena_owns(&outer.arena, a));
	assert_true(vx_arena_owns(&outer.arena, a->child->string));
	printed = cJSON_PrintUnformatted(a);
	assert_string_equal(printed, "{\"a\":{\"b\":\"c\"}}");
	cJSON_free(printed);
	vx_json_scratch_begin(&inner);
	b = cJSON_Parse("[true,null]");
	assert_true(vx_arena_owns(&inner.arena, b));
	assert_false(vx_arena_owns(&outer.arena, b));
	vx_json_drop(a); /* the outer scratch's: left to its reset */
	vx_json_drop(b);
	vx_json_scratch_end(&inner);
	/* A tree from outside is freed one node at a time, as always (ASan: no leak, no bad free). */
	cJSON_Delete(kept);
	vx_json_scratch_reset(&outer);
	vx_json_scratch_end(&outer);
	after = cJSON_Parse("{}");
	assert_false(vx_arena_owns(&outer.arena, after));
	vx_json_drop(after); /* no scratch now: cJSON_Delete */

	/* Held: the tree stays readable, what is printed from it is malloc'd (free() is right). */
	vx_json_scratch_begin(&outer);
	a = cJSON_Parse("{\"spec\":{\"x\":[1,2]}}");
	assert_true(vx_arena_owns(&outer.arena, a));
	vx_json_scratch_hold(&outer);
	printed = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a, "spec"));
	assert_false(vx_arena_owns(&outer.arena, printed));
	assert_string_equal(printed, "{\"x\":[1,2]}");
	free(printed);
	vx_json_scratch_end(&outer);
}

/* Whether a and b are the same cJSON tree, links included. */
static int same_tree(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if (!a || !b)
		return a == b;
	if (a->type != b->type || a->valueint != b->valueint ||
	    memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0)
		return 0;
	if (!a->valuestring != !b->valuestring || (a->valuestring && strcmp(a->valuestring, b->valuestring)))
		return 0;
	if (!a->string != !b->string || (a->string && strcmp(a->string, b->string)))
		return 0;
	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {
		if (!same_tree(x, y))
			return 0;
		if (x != a->child && x->prev->next != x)
			return 0;
		if (!x->next && a->child->prev != x)
			return 0; /* cJSON's: the first item's prev is the last */
	}
	return !x && !y;
}

/* vx_json_parse_tree and cJSON agree on text: the tree, or the failure and where. */
static void parse_both(const char *text, size_t len)
{
	const char *end1 = NULL, *end2 = NULL;
	cJSON *a = vx_json_parse_tree(text, len, &end1);
	cJSON *b = cJSON_ParseWithLengthOpts(text, len, &end2, 0);

	if (!same_tree(a, b) || end1 != end2) {
		print_error("differs on %zu bytes: \"%.*s\"\n", len, (int)len, text);
		fail();
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

/* A random JSON value as text, in b: every form the parser reads itself and some it leaves to cJSON. */
static void gen_value(struct vx_buf *b, int depth)
{
	static const char *const atoms[] = {
		"null",
		"true",
		"false",
		"0",
		"-0",
		"7",
		"-12",
		"123456789012345",
		"1234567890123456",
		"12345678901234567890",
		"2147483647",
		"2147483648",
		"-2147483649",
		"1.5",
		"-0.25",
		"1e3",
		"1E-2",
		"2.5e+10",
		"1e400",
		"-1e400",
		"01",
		"007",
		"\"\"",
		"\"plain\"",
		"\"caf\xC3\xA9\"",
		"\"a\\nb\\t\\\"q\\\"\\\\\\/\"",
		"\"\\u0041\\u00e9\\u20ac\"",
		"\"\\u0000cut\"",
		"\"\\ud83d\\ude00\"",
		"\"\\udc00\"",
		"\"\\ud800x\"",
		"\"\\u12\"",
		"\"\\x\"",
		"\"raw\x01\x1f\"",
		"\"\\b\\f\\r\"",
	};
	static const char *const ws[] = { "", " ", "\n\t\t", "\r\n", "\x01", "  " };
	unsigned k = depth > 4 ? 0 : rnd(4);

	assert_int_equal(vx_buf_adds(b, ws[rnd(6)]), 0);
	if (k == 0 || k == 1) {
		assert_int_equal(vx_buf_adds(b, atoms[rnd(sizeof(atoms) / sizeof(atoms[0]))]), 0);
	} else {
		unsigned n = rnd(5);

		assert_int_equal(vx_buf_addc(b, k == 2 ? '[' : '{'), 0);
		for (unsigned i = 0; i < n; i++) {
			if (i)
				assert_int_equal(vx_buf_addc(b, ','), 0);
			assert_int_equal(vx_buf_adds(b, ws[rnd(6)]), 0);
			if (k == 3)
				assert_int_equal(vx_buf_printf(b, "\"k%u\"%s:", rnd(3), ws[rnd(6)]), 0);
			gen_value(b, depth + 1);
		}
		assert_int_equal(vx_buf_adds(b, ws[rnd(6)]), 0);
		assert_int_equal(vx_buf_addc(b, k == 2 ? ']' : '}'), 0);
	}
	assert_int_equal(vx_buf_adds(b, ws[rnd(6)]), 0);
}

static void test_json_parse_tree(void **state)
{
	static const char *const fixed[] = {
		"",
		" ",
		"{}",
		"[]",
		"[1,]",
		"{\"a\":}",
		"{\"a\" 1}",
		"{1:2}",
		"[1 2]",
		"nul",
		"tru",
		"-",
		"--1",
		"+1",
		".5",
		"1.",
		"1e",
		"1e+",
		"[\"unterminated",
		"\"\\",
		"{\"a\":1}x",
		"\xEF\xBB\xBF{}",
		"\xEF\xBB\xBF"
		"1",
		"\xEF\xBB\xBF"
		"12",
		"[[[]]]",
		"{\"a\":1,\"a\":2}",
		"\"\\u00\"",
		"[1e5,-0.0,0e0]",
		"[\"\\\\\"]",
		"[\"\\\\\\\"\"]",
		"\"a\\\\\\\\\"",
		"\"\\\"",
		"{\"k\\\"\":\"\\\\\\\\\\\\\"}",
		"  \t\n{\"x\" : [ true , false , null ] }  ",
	};
	struct vx_buf b = VX_BUF_INIT, m = VX_BUF_INIT;
	static const char edits[] = "{}[],:\"\\ -0.eE1tnu";

	(void)state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		parse_both(fixed[i], strlen(fixed[i]));
	/* Nesting at cJSON's limit of 1,000 and past it. */
	for (size_t depth = 998; depth <= 1001; depth++) {
		vx_buf_reset(&b);
		for (size_t i = 0; i < depth; i++)
			assert_int_equal(vx_buf_addc(&b, '['), 0);
		for (size_t i = 0; i < depth; i++)
			assert_int_equal(vx_buf_addc(&b, ']'), 0);
		parse_both(b.data, b.len);
	}
	for (int round = 0; round < 4000; round++) {
		vx_buf_reset(&b);
		gen_value(&b, 0);
		parse_both(b.data, b.len);
		/* And a few edits of it: a byte changed, dropped or the text cut. */
		for (int e = 0; e < 3; e++) {
			size_t at = b.len ? rnd((unsigned)b.len) : 0;

			vx_buf_reset(&m);
			assert_int_equal(vx_buf_add(&m, b.data, at), 0);
			if (e == 0)
				assert_int_equal(vx_buf_addc(&m, edits[rnd(sizeof(edits) - 1)]), 0);
			if (e != 2 && at < b.len)
				assert_int_equal(vx_buf_add(&m, b.data + at + 1, b.len - at - 1), 0);
			parse_both(m.data ? m.data : "", m.len);
		}
	}
	vx_buf_release(&b);
	vx_buf_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_clean),
		cmocka_unit_test(test_text_filter),
		cmocka_unit_test(test_text_terminal_safe),
		cmocka_unit_test(test_text_cap_echoes),
		cmocka_unit_test(test_err_set_and_wrap),
		cmocka_unit_test(test_buf_cap),
		cmocka_unit_test(test_buf_read_file_limit),
		cmocka_unit_test(test_buf_json_str),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_digest_sha256_hex),
		cmocka_unit_test(test_diags_sorted_and_capped),
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_fnv1a64),
		cmocka_unit_test(test_hashmap),
		cmocka_unit_test(test_ctx_getenv),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_time_window),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_rand),
		cmocka_unit_test(test_alloc_grow),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_find_nocase),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_json_scratch),
		cmocka_unit_test(test_json_parse_tree),
		cmocka_unit_test(test_redact_userinfo),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
