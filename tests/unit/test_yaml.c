/* Unit tests for reconcile/load/ynode.c: the node tree and every kind of hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <yaml.h>

#include "reconcile/load/yfast.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

/* Loads text (with an explicit length, so NUL bytes can be tested). */
static struct yfile *load_ok_n(const char *text, size_t len)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct yfile *f = NULL;
	int rc = ynode_load_mem(&f, "a.yaml", text, len, NULL, &d, &err);

	if (rc != 0 && d.n) {
		char *s = vx_diag_format(&d.items[0]);

		print_error("unexpected: %s\n", s);
		free(s);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(d.n, 0);
	assert_non_null(f);
	vx_diags_release(&d);
	vx_err_release(&err);
	return f;
}

static struct yfile *load_ok(const char *text)
{
	return load_ok_n(text, strlen(text));
}

/* Asserts that text is refused and the first diagnostic reads exactly want;
 * returns how many were reported. */
static size_t expect_err_lim(const char *text, size_t len, const struct ynode_limits *lim,
			     const char *want)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct yfile *f = (struct yfile *)1;
	char *s;
	size_t n;

	assert_int_equal(ynode_load_mem(&f, "a.yaml", text, len, lim, &d, &err), VX_EINVAL);
	assert_null(f);
	assert_true(d.n >= 1);
	s = vx_diag_format(&d.items[0]);
	assert_string_equal(s, want);
	free(s);
	n = d.n;
	vx_diags_release(&d);
	vx_err_release(&err);
	return n;
}

static size_t expect_err_l(const char *text, const struct ynode_limits *lim, const char *want)
{
	return expect_err_lim(text, strlen(text), lim, want);
}

static size_t expect_err(const char *text, const char *want)
{
	return expect_err_lim(text, strlen(text), NULL, want);
}

static void test_tree_and_positions(void **state)
{
	struct yfile *f;
	struct ynode *root, *v, *k;

	(void)state;
	f = load_ok("kind: Stack\nlabels:\n  team: nlp\nargs: [--epochs, \"3\"]\n");
	assert_string_equal(f->path, "a.yaml");
	assert_int_equal(f->ndocs, 1);
	root = f->docs[0];
	assert_int_equal(root->kind, YNODE_MAP);
	assert_int_equal(root->n, 3);
	assert_int_equal(root->line, 1);
	assert_int_equal(root->col, 1);
	assert_string_equal(root->file, "a.yaml");
	v = ynode_get(root, "kind");
	assert_string_equal(v->str, "Stack");
	assert_int_equal(v->line, 1);
	assert_int_equal(v->col, 7);
	v = ynode_get(ynode_get(root, "labels"), "team");
	assert_string_equal(v->str, "nlp");
	assert_int_equal(v->line, 3);
	assert_int_equal(v->col, 9);
	k = ynode_get_key(ynode_get(root, "labels"), "team");
	assert_int_equal(k->line, 3);
	assert_int_equal(k->col, 3);
	v = ynode_get(root, "args");
	assert_int_equal(v->kind, YNODE_SEQ);
	assert_int_equal(v->n, 2);
	assert_string_equal(v->items[0]->str, "--epochs");
	assert_int_equal(v->items[0]->style, YSTYLE_PLAIN);
	assert_string_equal(v->items[1]->str, "3");
	assert_int_equal(v->items[1]->style, YSTYLE_QUOTED);
	assert_int_equal(v->items[1]->col, 18);
	assert_null(ynode_get(root, "missing"));
	assert_null(ynode_get(v, "kind")); /* not a map */
	assert_null(ynode_get_key(NULL, "kind"));
	yfile_free(f);
}

static void test_styles_and_tags(void **state)
{
	struct yfile *f;
	struct ynode *r;

	(void)state;
	f = load_ok("a: 1\nb: \"1\"\nc: null\nd: 'null'\ne: !!str 1\nf: |\n  x\n  y\n"
		    "g: !!int \"7\"\nh: ~\ni:\nj: >\n  folded\n  text\n");
	r = f->docs[0];
	assert_string_equal(ynode_type_name(ynode_get(r, "a")), "integer");
	assert_string_equal(ynode_type_name(ynode_get(r, "b")), "string");
	assert_string_equal(ynode_type_name(ynode_get(r, "c")), "null");
	assert_true(ynode_is_null(ynode_get(r, "c")));
	assert_string_equal(ynode_type_name(ynode_get(r, "d")), "string");
	assert_false(ynode_is_null(ynode_get(r, "d")));
	assert_string_equal(ynode_get(r, "e")->tag, "tag:yaml.org,2002:str");
	assert_string_equal(ynode_type_name(ynode_get(r, "e")), "string");
	assert_null(ynode_get(r, "a")->tag);
	assert_string_equal(ynode_get(r, "f")->str, "x\ny\n");
	assert_int_equal(ynode_get(r, "f")->style, YSTYLE_QUOTED);
	assert_string_equal(ynode_type_name(ynode_get(r, "g")), "integer");
	assert_true(ynode_is_null(ynode_get(r, "h")));
	assert_true(ynode_is_null(ynode_get(r, "i")));
	assert_string_equal(ynode_get(r, "j")->str, "folded text\n");
	assert_string_equal(ynode_type_name(r), "mapping");
	assert_string_equal(ynode_type_name(NULL), "null");
	yfile_free(f);
}

static void test_core_schema(void **state)
{
	static const struct {
		const char *text, *type;
	} cases[] = {
		{ "true", "boolean" }, { "True", "boolean" }, { "FALSE", "boolean" },
		{ "yes", "string" },   { "tRue", "string" },  { "0", "integer" },
		{ "-12", "integer" },  { "+3", "integer" },   { "0x1F", "integer" },
		{ "0o17", "integer" }, { "0o8", "string" },   { "0x", "string" },
		{ "1.5", "number" },   { "-.5", "number" },   { "1e3", "number" },
		{ "2.", "number" },    { "1.5e-3", "number" }, { ".inf", "number" },
		{ "-.Inf", "number" }, { ".NaN", "number" },  { ".", "string" },
		{ "1e", "string" },    { "1.2.3", "string" }, { "NULL", "null" },
		{ "Null", "null" },    { "nULL", "string" },  { "1800s", "string" },
		{ "-x", "string" },
		/* each first byte that may start a null, boolean or number, and some that may not */
		{ "~", "null" },       { "", "null" },        { "~x", "string" },
		{ "n", "string" },     { "No", "string" },    { "t", "string" },
		{ "F", "string" },     { "+.inf", "number" }, { "_1", "string" },
		{ "abc", "string" },   { "Inf", "string" },   { "x1", "string" },
	};
	char text[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct yfile *f;

		snprintf(text, sizeof(text), "v: %s\n", cases[i].text);
		f = load_ok(text);
		if (strcmp(ynode_type_name(ynode_get(f->docs[0], "v")), cases[i].type))
			fail_msg("%s: %s, want %s", cases[i].text,
				 ynode_type_name(ynode_get(f->docs[0], "v")), cases[i].type);
		yfile_free(f);
	}
}

static void test_documents(void **state)
{
	struct yfile *f;

	(void)state;
	f = load_ok("");
	assert_int_equal(f->ndocs, 0);
	yfile_free(f);
	f = load_ok("# only\n# comments\n\n");
	assert_int_equal(f->ndocs, 0);
	yfile_free(f);
	f = load_ok("---\n---\nkind: Stack\n---\n# nothing\n...\n");
	assert_int_equal(f->ndocs, 3);
	assert_null(f->docs[0]);
	assert_string_equal(ynode_get(f->docs[1], "kind")->str, "Stack");
	assert_int_equal(f->docs[1]->line, 3);
	assert_null(f->docs[2]);
	yfile_free(f);
	f = load_ok("--- ~\n--- \"\"\n");
	assert_int_equal(f->ndocs, 2);
	assert_true(ynode_is_null(f->docs[0]));
	assert_string_equal(ynode_type_name(f->docs[1]), "string");
	yfile_free(f);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_err("a: b: c\n", "a.yaml:1:5: mapping values are not allowed here");
	expect_err("kind: Stack\nspec:\n  a: 1\n b: 2\n",
		   "a.yaml:4:2: did not find expected key "
		   "(while parsing a block mapping that started at line 1, column 1)");
	expect_err("a: [1, 2\n",
		   "a.yaml:2:1: did not find expected ',' or ']' "
		   "(while parsing a flow sequence that started at line 1, column 4)");
	expect_err("a: \"open\n", "a.yaml:2:1: found unexpected end of stream "
				   "(while scanning a quoted scalar that started at line 1, column 4)");
}

static void test_tabs(void **state)
{
	(void)state;
	expect_err("a:\n\tb: 1\n",
		   "a.yaml:2:1: tab character used for indentation; YAML allows only spaces");
	expect_err("a:\n  \tb: 1\n",
		   "a.yaml:2:3: tab character used for indentation; YAML allows only spaces");
	expect_err("a:\n- \tb\n", "a.yaml:2:3: tab character not allowed here; YAML allows only spaces");
}

static void test_duplicate_keys(void **state)
{
	struct yfile *f;

	(void)state;
	assert_int_equal(expect_err("kind: Stack\nname: a\nx: 1\nname: b\nx: 2\n",
				    "a.yaml:4:1: duplicate key \"name\" (first at line 2)"), 2);
	expect_err("a:\n  b: {c: 1, \"c\": 2}\n", "a.yaml:2:13: duplicate key \"c\" (first at line 2)");
	/* Key text in messages stays on one line and short. */
	expect_err("\"a\\nb\": 1\n\"a\\nb\": 2\n",
		   "a.yaml:2:1: duplicate key \"a\\x0Ab\" (first at line 1)");
	expect_err("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: 1\n"
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: 2\n",
		   "a.yaml:2:1: duplicate key "
		   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" (first at line 1)");
	/* Same text in other documents or other maps is fine. */
	f = load_ok("a: {x: 1}\nb: {x: 2}\n---\na: 3\n");
	yfile_free(f);
}

static void test_utf8_and_nul(void **state)
{
	(void)state;
	expect_err("a: \xff\n", "a.yaml:1:4: invalid UTF-8 (byte 0xFF); YAML files must be UTF-8 text");
	expect_err("\xc3\xa9t\xc3\xa9: x\nb: ok\nc: b\xc3\n",
		   "a.yaml:3:5: invalid UTF-8 (byte 0xC3); YAML files must be UTF-8 text");
	/* A UTF-16 byte-order mark is not UTF-8. */
	expect_err_lim("\xff\xfe" "a\0:\0", 6, NULL,
		       "a.yaml:1:1: invalid UTF-8 (byte 0xFF); YAML files must be UTF-8 text");
	expect_err_lim("a: b\0c\n", 7, NULL,
		       "a.yaml:1:5: NUL byte in the file; YAML files must be UTF-8 text");
	expect_err("a: \x07\n", "a.yaml:1:4: control character U+0007 is not allowed in YAML");
	expect_err("x: 1\na: \"b\\0c\"\n", "a.yaml:2:4: string contains a NUL character (\\0)");
}

/* A UTF-8 byte-order mark is skipped (as PyYAML does), and positions count
 * from the character after it; a BOM anywhere else is still content. */
static void test_bom(void **state)
{
	struct yfile *f;
	struct ynode *root, *v;

	(void)state;
	f = load_ok("\xEF\xBB\xBF" "kind: Stack\nname: s\n");
	root = f->docs[0];
	assert_int_equal(root->kind, YNODE_MAP);
	assert_int_equal(root->n, 2);
	assert_string_equal(root->pairs[0].key->str, "kind");
	v = ynode_get(root, "name");
	assert_int_equal(v->line, 2);
	assert_int_equal(v->col, 7);
	v = ynode_get(root, "kind");
	assert_int_equal(v->line, 1);
	assert_int_equal(v->col, 7);
	yfile_free(f);
	/* an error on the BOM's line is placed as an editor shows it */
	expect_err("\xEF\xBB\xBF" "a: b: c\n", "a.yaml:1:5: mapping values are not allowed here");
	expect_err("\xEF\xBB\xBF" "a: \x01\n", "a.yaml:1:4: control character U+0001 is not "
		   "allowed in YAML");
	/* a UTF-16 BOM is not UTF-8 */
	expect_err_lim("\xFF\xFEk\0", 4, NULL, "a.yaml:1:1: invalid UTF-8 (byte 0xFF); YAML "
		       "files must be UTF-8 text");
}

/* The shared integer and string rules of every field, with their messages. */
static void test_int_and_string_rules(void **state)
{
	static const struct {
		const char *yaml;
		int ok;
		int64_t want;
		const char *why;
	} ints[] = {
		{ "v: 42", 1, 42, "" },
		{ "v: \"42\"", 1, 42, "" },
		{ "v: +7", 1, 7, "" },
		{ "v: -9223372036854775808", 1, INT64_MIN, "" },
		{ "v: 9223372036854775807", 1, INT64_MAX, "" },
		{ "v: 9223372036854775808", 0, 0,
		  "9223372036854775808 is out of range (at most 9223372036854775807)" },
		{ "v: -9223372036854775809", 0, 0,
		  "-9223372036854775809 is out of range (at least -9223372036854775808)" },
		{ "v: 0x10", 0, 0, "expected a decimal integer, got \"0x10\"" },
		{ "v: \"0o17\"", 0, 0, "expected a decimal integer, got \"0o17\"" },
		{ "v: \" 5\"", 0, 0, "expected an integer, got \" 5\"" },
		{ "v: 1.5", 0, 0, "expected an integer, got \"1.5\"" },
		{ "v: three", 0, 0, "expected an integer, got \"three\"" },
		{ "v: \"\"", 0, 0, "expected an integer, got \"\"" },
		{ "v: true", 0, 0, "expected an integer, got the boolean true" },
		{ "v: ~", 0, 0, "expected an integer, got null" },
		{ "v: [1]", 0, 0, "expected an integer, got a sequence" },
	};
	static const struct {
		const char *yaml;
		const char *why;
	} strs[] = {
		{ "v: abc", "" },
		{ "v: \"1\"", "" },
		{ "v: '3.10'", "" },
		{ "v: 1", "expected a string, got the number 1; quote it: \"1\"" },
		{ "v: 3.10", "expected a string, got the number 3.10; quote it: \"3.10\"" },
		{ "v: 0x10", "expected a string, got the number 0x10; quote it: \"0x10\"" },
		{ "v: false", "expected a string, got the boolean false; quote it: \"false\"" },
		{ "v: null", "expected a string, got null" },
		{ "v: {a: b}", "expected a string, got a mapping" },
	};
	struct ynode_why why;
	int64_t x;

	(void)state;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		struct yfile *f = load_ok(ints[i].yaml);
		int rc = ynode_int(&x, &why, ynode_get(f->docs[0], "v"), INT64_MIN, INT64_MAX);

		assert_int_equal(rc, ints[i].ok ? 0 : VX_EINVAL);
		assert_string_equal(why.s, ints[i].why);
		if (ints[i].ok)
			assert_true(x == ints[i].want);
		yfile_free(f);
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		struct yfile *f = load_ok(strs[i].yaml);
		int rc = ynode_want_string(&why, ynode_get(f->docs[0], "v"));

		assert_int_equal(rc, strs[i].why[0] ? VX_EINVAL : 0);
		assert_string_equal(why.s, strs[i].why);
		yfile_free(f);
	}
	/* a field's own type range (int32) */
	{
		struct yfile *f = load_ok("v: 2147483648");

		assert_int_equal(ynode_int(&x, &why, ynode_get(f->docs[0], "v"), INT32_MIN,
					   INT32_MAX), VX_EINVAL);
		assert_string_equal(why.s, "2147483648 is out of range (at most 2147483647)");
		yfile_free(f);
	}
}

static void test_non_scalar_keys(void **state)
{
	(void)state;
	expect_err("? [a, b]\n: 1\n", "a.yaml:1:3: mapping keys must be scalars, not a sequence");
	expect_err("{a: 1}: x\n", "a.yaml:1:1: mapping keys must be scalars, not a mapping");
	expect_err("b: &m {x: 1}\n*m : 2\n", "a.yaml:1:4: mapping keys must be scalars, not a mapping");
}

static void test_anchors_and_merge(void **state)
{
	struct yfile *f;
	struct ynode *r, *j;

	(void)state;
	f = load_ok("base: &b {x: 1, y: 2}\nuse: *b\nname: &n job\nagain: *n\n");
	r = f->docs[0];
	assert_ptr_equal(ynode_get(r, "use"), ynode_get(r, "base"));
	assert_ptr_equal(ynode_get(r, "again"), ynode_get(r, "name"));
	yfile_free(f);

	f = load_ok("base: &b {x: 1, y: 2}\njob:\n  <<: *b\n  y: 3\n  z: 4\n");
	r = f->docs[0];
	j = ynode_get(r, "job");
	assert_int_equal(j->n, 3);
	assert_string_equal(j->pairs[0].key->str, "x");
	assert_ptr_equal(j->pairs[0].value, ynode_get(ynode_get(r, "base"), "x"));
	assert_string_equal(j->pairs[1].key->str, "y");
	assert_string_equal(j->pairs[1].value->str, "3");
	assert_string_equal(ynode_get(j, "z")->str, "4");
	assert_null(ynode_get(j, "<<"));
	yfile_free(f);

	/* A list of merges: earlier mappings win; explicit keys win over all. */
	f = load_ok("a: &a {x: 1}\nb: &b {x: 2, w: 3, v: 5}\nc:\n  v: 9\n  <<: [*a, *b]\n");
	j = ynode_get(f->docs[0], "c");
	assert_int_equal(j->n, 3);
	assert_string_equal(ynode_get(j, "x")->str, "1");
	assert_string_equal(ynode_get(j, "w")->str, "3");
	assert_string_equal(ynode_get(j, "v")->str, "9");
	yfile_free(f);

	/* A quoted "<<" is an ordinary key. */
	f = load_ok("\"<<\": 1\n");
	assert_string_equal(ynode_get(f->docs[0], "<<")->str, "1");
	yfile_free(f);

	expect_err("a: 1\nb:\n  <<: *nope\n", "a.yaml:3:7: undefined alias *nope");
	expect_err("a: &x [1, *x]\n", "a.yaml:1:11: alias *x refers to a node that contains it");
	expect_err("a: &x 1\n---\nb: *x\n", "a.yaml:3:4: undefined alias *x");
	expect_err("a: &x 1\nb:\n  <<: *x\n",
		   "a.yaml:3:3: the value of a merge key \"<<\" must be a mapping or a sequence of mappings");
	expect_err("a: &x {k: 1}\nb:\n  <<: [*x, 2]\n",
		   "a.yaml:3:3: the value of a merge key \"<<\" must be a mapping or a sequence of mappings");
	/* A duplicate next to a merge is still a duplicate. */
	expect_err("a: &x {k: 1}\nb:\n  <<: *x\n  k: 2\n  k: 3\n",
		   "a.yaml:5:3: duplicate key \"k\" (first at line 4)");
}

static void test_alias_bomb(void **state)
{
	static const char bomb[] =
		"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
		"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
		"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
		"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
		"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
		"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	struct ynode_limits lim = YNODE_LIMITS_DEFAULT;

	(void)state;
	/* *f stands for 597,871 nodes: the cap trips at the first alias of line 7 (the
	 * position proves the loader stopped there rather than expanding the rest). */
	expect_err(bomb, "a.yaml:7:8: too many nodes: more than 1000000 with aliases "
			 "expanded (an alias bomb?)");
	lim.max_nodes = 20;
	expect_err_l("a: &a [1, 2, 3, 4, 5]\nb: [*a, *a, *a]\n", &lim,
		       "a.yaml:2:9: too many nodes: more than 20 with aliases expanded "
		       "(an alias bomb?)");
	lim.max_nodes = 5;
	expect_err_l("[1, 2, 3, 4, 5]\n", &lim, "a.yaml:1:14: too many nodes: the file has more than 5");
	/* Merges count too. */
	lim.max_nodes = 18;
	expect_err_l("a: &a {x: 1, y: 2}\nb: {<<: *a}\nc: {<<: *a}\n", &lim,
		       "a.yaml:3:9: too many nodes: more than 18 with aliases expanded "
		       "(an alias bomb?)");
}

static void test_depth(void **state)
{
	struct ynode_limits lim = YNODE_LIMITS_DEFAULT;
	struct vx_buf b = VX_BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < 20000; i++)
		assert_int_equal(vx_buf_addc(&b, '['), 0);
	expect_err_lim(b.data, b.len, NULL, "a.yaml:1:257: nesting deeper than 256 levels");
	/* 256 levels are fine ... */
	vx_buf_reset(&b);
	for (i = 0; i < 256; i++)
		assert_int_equal(vx_buf_addc(&b, '['), 0);
	for (i = 0; i < 256; i++)
		assert_int_equal(vx_buf_addc(&b, ']'), 0);
	yfile_free(load_ok(b.data));
	/* ... and block nesting is counted the same way. */
	vx_buf_reset(&b);
	for (i = 0; i < 257; i++)
		assert_int_equal(vx_buf_printf(&b, "%*sk:\n", (int)i, ""), 0);
	assert_int_equal(vx_buf_printf(&b, "%*sk: 1\n", 257, ""), 0);
	expect_err_lim(b.data, b.len, NULL, "a.yaml:257:257: nesting deeper than 256 levels");
	vx_buf_release(&b);
	/* Merged pairs are lifted one level up: a chain of merges is flat. */
	lim.max_depth = 2;
	{
		struct vx_diags d = VX_DIAGS_INIT;
		struct vx_err err = VX_ERR_INIT;
		struct yfile *f = NULL;
		const char *t = "a: &a {x: 1}\nb: &b {<<: *a}\nc: &c {<<: *b}\nd: {<<: *c, y: 2}\n";

		assert_int_equal(ynode_load_mem(&f, "a.yaml", t, strlen(t), &lim, &d, &err), 0);
		assert_string_equal(ynode_get(ynode_get(f->docs[0], "d"), "x")->str, "1");
		yfile_free(f);
	}
	/* Aliases cannot be used to build deeper trees than the limit. */
	lim.max_depth = 4;
	expect_err_l("a: &a [[[1]]]\nb: [[*a]]\n", &lim,
		       "a.yaml:2:6: nesting deeper than 4 levels (through alias *a)");
}

static void test_file_limits(void **state)
{
	struct vx_diags d = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct ynode_limits lim = YNODE_LIMITS_DEFAULT;
	struct yfile *f = NULL;
	char path[] = "/tmp/vx-yaml-XXXXXX";
	int fd = mkstemp(path);
	char *s;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 30 * 1024 * 1024), 0);
	assert_int_equal(ynode_load_file(&f, path, NULL, &d, &err), VX_EINVAL);
	assert_null(f);
	assert_int_equal(d.n, 1);
	s = vx_diag_format(&d.items[0]);
	{
		char want[128];

		snprintf(want, sizeof(want), "%s:1:1: file is 31457280 bytes, larger than the 8 MiB limit",
			 path);
		assert_string_equal(s, want);
	}
	free(s);
	vx_diags_release(&d);

	/* A small file loads; its path is kept as given. */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "kind: Stack\n", 12, 0), 12);
	assert_int_equal(ynode_load_file(&f, path, NULL, &d, &err), 0);
	assert_string_equal(f->path, path);
	assert_string_equal(f->docs[0]->file, path);
	assert_string_equal(ynode_get(f->docs[0], "kind")->str, "Stack");
	yfile_free(f);
	close(fd);
	unlink(path);

	lim.max_file_bytes = 10;
	expect_err_l("kind: Stack\n", &lim,
		     "a.yaml:1:1: file is 12 bytes, larger than the 10-byte limit");

	assert_int_equal(ynode_load_file(&f, "/nonexistent/x.yaml", NULL, &d, &err), VX_EIO);
	assert_null(f);
	assert_string_equal(err.msg, "reading /nonexistent/x.yaml: No such file or directory");
	assert_int_equal(ynode_load_file(&f, "/tmp", NULL, &d, &err), VX_EIO);
	assert_string_equal(err.msg, "reading /tmp: Is a directory");
	assert_int_equal(d.n, 0);
	vx_err_release(&err);
}

static void test_big_valid_map(void **state)
{
	struct vx_buf b = VX_BUF_INIT;
	struct yfile *f;
	size_t i;

	(void)state;
	/* Many keys in one map: duplicate checks must not be quadratic. */
	for (i = 0; i < 100000; i++)
		assert_int_equal(vx_buf_printf(&b, "k%zu: %zu\n", i, i), 0);
	/* (How long it takes is make bench's: vx validate of 40,000 jobs.) */
	f = load_ok(b.data);
	assert_int_equal(f->docs[0]->n, 100000);
	assert_string_equal(ynode_get(f->docs[0], "k99999")->str, "99999");
	/* The tree spans many arena blocks: every node intact. */
	for (i = 0; i < 100000; i++) {
		char want[32];

		snprintf(want, sizeof(want), "k%zu", i);
		assert_string_equal(f->docs[0]->pairs[i].key->str, want);
		assert_string_equal(f->docs[0]->pairs[i].value->str, want + 1);
	}
	yfile_free(f);
	assert_int_equal(vx_buf_printf(&b, "k5: again\n"), 0);
	expect_err_lim(b.data, b.len, NULL, "a.yaml:100001:1: duplicate key \"k5\" (first at line 6)");
	vx_buf_release(&b);
}

/* ---- the fast reader against libyaml ------------------------------------ */

/* Events as a list, strings copied, for comparing two readers. */
struct evlist {
	struct yev *ev;
	size_t n, alloc;
};

static int ev_keep(void *ctx, const struct yev *ev)
{
	struct evlist *l = ctx;
	struct yev *e;

	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 64;
		l->ev = realloc(l->ev, l->alloc * sizeof(*l->ev));
		assert_non_null(l->ev);
	}
	e = &l->ev[l->n++];
	*e = *ev;
	if (ev->str) {
		char *s = malloc(ev->len + 1);

		assert_non_null(s);
		memcpy(s, ev->str, ev->len);
		s[ev->len] = '\0';
		e->str = s;
	}
	e->tag = ev->tag ? strdup(ev->tag) : NULL;
	e->anchor = ev->anchor ? strdup(ev->anchor) : NULL;
	return 0;
}

static void evlist_release(struct evlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((void *)(uintptr_t)l->ev[i].str);
		free((void *)(uintptr_t)l->ev[i].tag);
		free((void *)(uintptr_t)l->ev[i].anchor);
	}
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

/* libyaml's events for data, as ynode.c reads it (UTF-8 forced); 0 when
 * it read the whole stream. */
static int libyaml_events(struct evlist *out, const char *data, size_t len)
{
	yaml_parser_t p;
	int ok = 1;

	assert_true(yaml_parser_initialize(&p));
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	for (;;) {
		yaml_event_t ev;
		struct yev e;
		int done;

		if (!yaml_parser_parse(&p, &ev)) {
			ok = 0;
			break;
		}
		memset(&e, 0, sizeof(e));
		e.line = ev.start_mark.line;
		e.col = ev.start_mark.column;
		switch (ev.type) {
		case YAML_STREAM_START_EVENT: e.type = YEV_STREAM_START; break;
		case YAML_STREAM_END_EVENT: e.type = YEV_STREAM_END; break;
		case YAML_DOCUMENT_START_EVENT: e.type = YEV_DOC_START; break;
		case YAML_DOCUMENT_END_EVENT: e.type = YEV_DOC_END; break;
		case YAML_SEQUENCE_END_EVENT: e.type = YEV_SEQ_END; break;
		case YAML_MAPPING_END_EVENT: e.type = YEV_MAP_END; break;
		case YAML_ALIAS_EVENT:
			e.type = YEV_ALIAS;
			e.str = (const char *)ev.data.alias.anchor;
			e.len = strlen(e.str);
			break;
		case YAML_SCALAR_EVENT:
			e.type = YEV_SCALAR;
			e.str = (const char *)ev.data.scalar.value;
			e.len = ev.data.scalar.length;
			e.quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
			e.tag = (const char *)ev.data.scalar.tag;
			e.anchor = (const char *)ev.data.scalar.anchor;
			break;
		case YAML_SEQUENCE_START_EVENT:
			e.type = YEV_SEQ_START;
			e.tag = (const char *)ev.data.sequence_start.tag;
			e.anchor = (const char *)ev.data.sequence_start.anchor;
			break;
		case YAML_MAPPING_START_EVENT:
			e.type = YEV_MAP_START;
			e.tag = (const char *)ev.data.mapping_start.tag;
			e.anchor = (const char *)ev.data.mapping_start.anchor;
			break;
		case YAML_NO_EVENT:
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		if (ev.type != YAML_NO_EVENT)
			ev_keep(out, &e);
		yaml_event_delete(&ev);
		if (done)
			break;
	}
	yaml_parser_delete(&p);
	return ok ? 0 : -1;
}

static const char *const ev_names[] = {
	"?",
	"stream-start",
	"stream-end",
	"doc-start",
	"doc-end",
	"scalar",
	"alias",
	"seq-start",
	"seq-end",
	"map-start",
	"map-end",
};

/* Whether two events are the same for ynode.c: the type; and for a node,
 * its position, text, style, tag and anchor. */
static int ev_same(const struct yev *a, const struct yev *b)
{
	int node = a->type == YEV_SCALAR || a->type == YEV_ALIAS || a->type == YEV_SEQ_START ||
		   a->type == YEV_MAP_START;

	if (a->type != b->type)
		return 0;
	if (!node)
		return 1;
	if (a->line != b->line || a->col != b->col || a->len != b->len ||
	    a->quoted != b->quoted || !a->str != !b->str || !a->tag != !b->tag ||
	    !a->anchor != !b->anchor)
		return 0;
	if (a->str && memcmp(a->str, b->str, a->len))
		return 0;
	if (a->tag && strcmp(a->tag, b->tag))
		return 0;
	return !a->anchor || !strcmp(a->anchor, b->anchor);
}

static void ev_print(const char *who, const struct evlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct yev *e = &l->ev[i];

		print_error("%s %zu: %s %zu:%zu %s%.*s%s\n", who, i,
			    ev_names[e->type <= YEV_MAP_END ? e->type : 0], e->line, e->col,
			    e->quoted ? "'" : "", e->str ? (int)e->len : 0, e->str ? e->str : "",
			    e->quoted ? "'" : "");
	}
}

/*
 * The fast reader's verdict on data: 1 when it read it (and then libyaml must
 * have read it to the same events), 0 when it left it to libyaml.
 */
static int fast_agrees(const char *data, size_t len)
{
	struct evlist fast = { 0 }, slow = { 0 };
	int rc = yfast_parse(data, len, ev_keep, &fast), same = 1;

	assert_true(rc == 0 || rc == YFAST_OTHER);
	if (rc == 0) {
		same = libyaml_events(&slow, data, len) == 0 && slow.n == fast.n;
		for (size_t i = 0; same && i < fast.n; i++)
			same = ev_same(&fast.ev[i], &slow.ev[i]);
		if (!same) {
			print_error("the fast reader differs from libyaml on:\n%.*s\n---- events\n",
				    (int)len, data);
			ev_print("fast", &fast);
			ev_print("libyaml", &slow);
		}
	}
	evlist_release(&fast);
	evlist_release(&slow);
	assert_true(same);
	return rc == 0;
}

/* The tree of a with that of b: the same shapes, positions, texts, styles and tags. */
static void tree_same(const struct ynode *a, const struct ynode *b)
{
	if (!a || !b) {
		assert_true(a == b);
		return;
	}
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->col, b->col);
	assert_int_equal(a->n, b->n);
	if (a->kind == YNODE_SCALAR) {
		assert_int_equal(a->style, b->style);
		assert_int_equal(a->len, b->len);
		assert_memory_equal(a->str, b->str, a->len + 1);
		assert_true(!a->tag == !b->tag);
		if (a->tag)
			assert_string_equal(a->tag, b->tag);
		return;
	}
	for (size_t i = 0; i < a->n; i++) {
		if (a->kind == YNODE_MAP) {
			tree_same(a->pairs[i].key, b->pairs[i].key);
			tree_same(a->pairs[i].value, b->pairs[i].value);
		} else {
			tree_same(a->items[i], b->items[i]);
		}
	}
}

/* Loads data with the fast reader first and with libyaml alone: the same
 * result, tree and messages. */
static void load_same(const char *data, size_t len)
{
	struct yfile *f[2] = { NULL, NULL };
	char *msgs[2];
	int rc[2];

	for (int i = 0; i < 2; i++) {
		struct vx_diags d = VX_DIAGS_INIT;
		struct vx_err err = VX_ERR_INIT;
		struct vx_buf b = VX_BUF_INIT;

		ynode_fast_reader = i == 0;
		rc[i] = ynode_load_mem(&f[i], "t.yaml", data, len, NULL, &d, &err);
		for (size_t k = 0; k < d.n; k++) {
			char *s = vx_diag_format(&d.items[k]);

			assert_int_equal(vx_buf_printf(&b, "%s\n", s), 0);
			free(s);
		}
		assert_int_equal(vx_buf_printf(&b, "%s", err.msg ? err.msg : ""), 0);
		msgs[i] = vx_buf_detach(&b);
		vx_diags_release(&d);
		vx_err_release(&err);
	}
	ynode_fast_reader = 1;
	assert_int_equal(rc[0], rc[1]);
	assert_string_equal(msgs[0], msgs[1]);
	if (rc[0] == 0) {
		assert_int_equal(f[0]->ndocs, f[1]->ndocs);
		for (size_t i = 0; i < f[0]->ndocs; i++)
			tree_same(f[0]->docs[i], f[1]->docs[i]);
	}
	yfile_free(f[0]);
	yfile_free(f[1]);
	free(msgs[0]);
	free(msgs[1]);
}

static int fast_case(const char *text)
{
	load_same(text, strlen(text));
	return fast_agrees(text, strlen(text));
}

static void mutate(struct vx_buf *b, const char *src, size_t len);

static void test_fast_reader_cases(void **state)
{
	/* What vx's files are written in: the fast reader must read all of it. */
	static const char *const fast[] = {
		"",
		"# only a comment\n",
		"a: 1\n",
		"a: 1",
		"a:  b c  \nd: 'e''f'  # c\ng: \"h\\\"i\\\\j\\n\\t\\/\"\n",
		"---\nkind: CustomJob\nname: j1\nspec:\n  workerPoolSpecs:\n"
		"    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, "
		"acceleratorCount: 1}\n      replicaCount: 1\n      containerSpec:\n"
		"        imageUri: \"us-docker.pkg.dev/p/r/t:1.0\"\n        args: [\"--epochs\", \"3\"]\n"
		"  scheduling: {strategy: STANDARD}\n"
		"resubmit: {on: [stockout, preempted], maxAttempts: 3}\n---\nkind: Stack\n",
		"a:\n- x\n- y\nb:\n  - z\n  -\n  - 'w'\n",
		"- a: 1\n  b: 2\n- - x\n  - y\n-\n- c\n",
		"a:\nb: 1\nc:\n",
		"---\n---\n# x\n---\na: 1\n---\n",
		"a: b:c\nd: http://x/y#z\ne: -1\nf: a - b\ng: [a b, c]\nh: {}\ni: []\n",
		"a: {b: [1, {c: d}], 'e': \"f\", \"g\":h,}\nj: [x, y, ]\n",
		"  a: 1\n  b:\n    c: 2\n",
		"key with spaces: v\n\"quoted key\": 1\n'single': 2\n",
		"a: x\n\n   \n# comment\n  # indented comment\nb: y\n",
		"dup: 1\ndup: 2\n", /* read fast; the loader finds the duplicate */
		"<<: {a: 1}\n",
	};
	/* Not the subset (or wrong): left to libyaml, which must still agree. */
	static const char *const slow[] = {
		"a: &x 1\nb: *x\n",
		"a: !!str 1\n",
		"a: |\n  text\n",
		"a: >\n  text\n",
		"a: b\n  c\n",
		"a: [1,\n 2]\n",
		"a:\tb\n",
		"a: b\r\n",
		"a: \xc3\xa9\n",
		"...\n",
		"%YAML 1.1\n---\na: 1\n",
		"? a\n: b\n",
		"a: \"\\x41\"\n",
		"a: 'multi\n  line'\n",
		"a: b: c\n",
		"a: - b\n",
		"- a\nb: c\n",
		"a: 1\n - b\n",
		"a: [b, c] d\n",
		"a: \"b\" c\n",
		"a: {b}\n",
		"a: {b: }\n",
		"a: [,]\n",
		"a: [b: c]\n",
		"a: {b: c:}\n",
		"--- a\n",
		"a: @b\n",
		"a: `b\n",
		"a: ,b\n",
		"a: #\n#\n",
		"'a\n",
		"a: \"b\n",
		"[a, b]: c\n",
		"{a: b}\n",
		"a: [x] # c\n  b\n",
		"a: 1\n   b: 2\n",
		"  a: 1\nb: 2\n",
		"a:\n  - x\n y: 1\n",
		"\"a\":b\n",
		"a: b #c\n  d: e\n",
		"a: {b: c:?}\n",
		"a: [b:?]\n",
		"a: [b:[c]]\n",
	};
	/* libyaml gives up on a simple key 1024 characters after its start. */
	static const size_t key_lengths[] = { 999, 1000, 1001, 1023, 1024, 1025, 1100 };
	size_t i, read = 0;

	(void)state;
	for (i = 0; i < sizeof(fast) / sizeof(fast[0]); i++) {
		int got = fast_case(fast[i]);

		if (!got)
			print_error("not read fast: %s\n", fast[i]);
		read += (size_t)got;
	}
	assert_int_equal(read, sizeof(fast) / sizeof(fast[0]));
	for (i = 0; i < sizeof(slow) / sizeof(slow[0]); i++)
		fast_case(slow[i]);
	for (i = 0; i < sizeof(key_lengths) / sizeof(key_lengths[0]); i++) {
		for (int flow = 0; flow < 4; flow++) {
			struct vx_buf k = VX_BUF_INIT;
			const char *open = flow == 1 ? "{" : flow == 2 ? "["
						     : flow == 3       ? "\""
								       : "";
			const char *close = flow == 1 ? "}" : flow == 2 ? "]"
						      : flow == 3	? "\""
									: "";

			assert_int_equal(vx_buf_adds(&k, open), 0);
			for (size_t j = 0; j < key_lengths[i] - (flow == 3 ? 2 : 0); j++)
				assert_int_equal(vx_buf_addc(&k, 'k'), 0);
			assert_int_equal(vx_buf_printf(&k, "%s: v%s\n", flow == 3 ? "\"" : "",
						       flow == 3 ? "" : close),
					 0);
			(void)open;
			load_same(k.data, k.len);
			(void)fast_agrees(k.data, k.len);
			vx_buf_release(&k);
		}
	}
	/* One-character edits of the good cases: the edges of the subset. */
	for (i = 0; i < sizeof(fast) / sizeof(fast[0]); i++) {
		struct vx_buf m = VX_BUF_INIT;

		for (int j = 0; j < 2000; j++) {
			mutate(&m, fast[i], strlen(fast[i]));
			read += fast_agrees(m.data ? m.data : "", m.len);
			if (j % 20 == 0)
				load_same(m.data ? m.data : "", m.len);
		}
		vx_buf_release(&m);
	}
}

/* A small fixed-seed generator of YAML-like text: pieces that the fast
 * reader must get right and pieces it must give up on, in random order and
 * indentation, so that both the accepted and the refused paths are walked. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

#define P(...) assert_int_equal(vx_buf_printf(b, __VA_ARGS__), 0)

static void gen(struct vx_buf *b)
{
	static const char *const keys[] = { "a", "bb", "key", "\"q k\"", "'s'", "-x", "a b",
					    "x:y", "<<", "1", "a#b" };
	static const char *const vals[] = {
		"v",
		"1",
		"-1",
		"'it''s'",
		"\"e\\\"s\\\\c\"",
		"\"\"",
		"''",
		"a b  c",
		"x: y",
		"[a, b]",
		"[]",
		"{}",
		"{a: 1, b: [2, 3]}",
		"{\"k\":v}",
		"[a, [b, {c: d}], ]",
		"http://h/p#f",
		"v # note",
		"&a v",
		"*a",
		"!t v",
		"|",
		">",
		"\"\\u00e9\"",
		"[a,",
		"{a}",
		"- x",
		"'x",
		"a:b",
		"[a:b]",
		"{a: b:}",
		"~",
		"null",
		"[ a , b ]",
		"{ a : b }",
		"\"a\" # c",
		"@x",
		"%x",
		"a\tb",
		"? x",
	};
	size_t lines = 1 + rnd(12), cur = 0;
	/* Half the texts use only what the fast reader reads, indented as a
	 * person would, so that many are read by both. */
	int clean = rnd(2), opened = 0;
	uint32_t nkeys = clean ? 5 : sizeof(keys) / sizeof(keys[0]);
	uint32_t nvals = clean ? 17 : sizeof(vals) / sizeof(vals[0]);

	if (rnd(4) == 0)
		P("---\n");
	for (size_t i = 0; i < lines; i++) {
		size_t indent = rnd(3) ? 2 * rnd(4) : rnd(7);
		uint32_t kind = rnd(12);

		if (clean) {
			indent = opened ? cur + 2 : rnd(2) ? cur
					    : cur >= 2	   ? cur - 2
							   : 0;
			if (rnd(4) == 0)
				indent = 0;
			if (kind == 11)
				kind = 0;
		}
		cur = indent;
		opened = kind == 6 || kind == 7 || (kind == 10 && clean);
		if (kind == 10 && clean)
			kind = 12;

		for (size_t k = 0; k < indent; k++)
			P(" ");
		if (kind < 6)
			P("%s: %s", keys[rnd(nkeys)], vals[rnd(nvals)]);
		else if (kind < 8)
			P("%s:", keys[rnd(nkeys)]);
		else if (kind == 8)
			P("- %s", vals[rnd(nvals)]);
		else if (kind == 9)
			P("- %s: %s", keys[rnd(nkeys)], vals[rnd(nvals)]);
		else if (kind == 12)
			P("-");
		else if (kind == 10)
			P(rnd(2) ? "-" : "# c");
		else
			P(rnd(3) ? "" : "---");
		if (rnd(8) == 0)
			P("  ");
		if (i + 1 < lines || rnd(2))
			P("\n");
	}
}

#undef P

/* Small edits of a text: what a fuzzer would try first. */
static void mutate(struct vx_buf *b, const char *src, size_t len)
{
	static const char set[] = " -:#\n'\"[]{},?&*!|>\\ab0";
	size_t at = len ? rnd((uint32_t)len) : 0, k = 0;
	uint32_t op = rnd(3);

	vx_buf_reset(b);
	assert_int_equal(vx_buf_add(b, src, at), 0);
	if (op != 1) {
		char c = set[rnd(sizeof(set) - 1)];

		assert_int_equal(vx_buf_add(b, &c, 1), 0);
	}
	if (op != 0 && at < len)
		k = 1;
	assert_int_equal(vx_buf_add(b, src + at + k, len - at - k), 0);
}

static void test_fast_reader_random(void **state)
{
	struct vx_buf b = VX_BUF_INIT, m = VX_BUF_INIT;
	size_t read = 0, total = 0;
	/* VX_YFAST_ROUNDS and VX_YFAST_SEED run it longer, or elsewhere, by hand. */
	const char *rounds_env = getenv("VX_YFAST_ROUNDS"), *seed_env = getenv("VX_YFAST_SEED");
	long rounds = rounds_env ? strtol(rounds_env, NULL, 10) : 20000;

	(void)state;
	if (seed_env)
		rng_state = strtoull(seed_env, NULL, 10) | 1;
	for (long i = 0; i < rounds; i++) {
		vx_buf_reset(&b);
		gen(&b);
		load_same(b.data ? b.data : "", b.len);
		read += fast_agrees(b.data ? b.data : "", b.len);
		for (int j = 0; j < 3; j++) {
			mutate(&m, b.data ? b.data : "", b.len);
			read += fast_agrees(m.data ? m.data : "", m.len);
			total++;
		}
		total++;
	}
	print_message("fast reader: read %zu of %zu random texts\n", read, total);
	/* Both paths were walked, many times. */
	assert_true(read > total / 10);
	assert_true(read < total - total / 10);
	vx_buf_release(&b);
	vx_buf_release(&m);
}

/* Every YAML file in the tree (examples, test data, docs), and edits of
 * each: the examples are what users copy, so the fast reader must read all
 * of them. */
static void walk_yaml(const char *dir, int examples, size_t *nfiles)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		assert_int_equal(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			walk_yaml(path, examples, nfiles);
		} else if (n > 5 && !strcmp(de->d_name + n - 5, ".yaml")) {
			struct vx_buf b = VX_BUF_INIT, m = VX_BUF_INIT;
			FILE *fp = fopen(path, "rb");
			char chunk[4096];
			size_t got;

			assert_non_null(fp);
			while ((got = fread(chunk, 1, sizeof(chunk), fp)) > 0)
				assert_int_equal(vx_buf_add(&b, chunk, got), 0);
			fclose(fp);
			load_same(b.data ? b.data : "", b.len);
			if (!fast_agrees(b.data ? b.data : "", b.len) && examples) {
				print_error("%s: not read by the fast reader\n", path);
				fail();
			}
			for (int j = 0; j < 200; j++) {
				mutate(&m, b.data ? b.data : "", b.len);
				(void)fast_agrees(m.data ? m.data : "", m.len);
			}
			vx_buf_release(&b);
			vx_buf_release(&m);
			(*nfiles)++;
		}
	}
	closedir(d);
}

static void test_fast_reader_files(void **state)
{
	const char *root = getenv("VX_SRCDIR");
	static const char *const dirs[] = { "examples", "tests/data", "docs" };
	size_t nfiles = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s%s%s", root ? root : "", root ? "/" : "", dirs[i]);
		walk_yaml(path, i == 0, &nfiles);
	}
	assert_true(nfiles >= 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_and_positions),
		cmocka_unit_test(test_styles_and_tags),
		cmocka_unit_test(test_core_schema),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_tabs),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_utf8_and_nul),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_int_and_string_rules),
		cmocka_unit_test(test_non_scalar_keys),
		cmocka_unit_test(test_anchors_and_merge),
		cmocka_unit_test(test_alias_bomb),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_file_limits),
		cmocka_unit_test(test_big_valid_map),
		cmocka_unit_test(test_fast_reader_cases),
		cmocka_unit_test(test_fast_reader_random),
		cmocka_unit_test(test_fast_reader_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
