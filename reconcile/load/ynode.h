#ifndef VX_RECONCILE_YNODE_H
#define VX_RECONCILE_YNODE_H

/*
 * A YAML file as our own tree of nodes, each with its position, so every
 * later check can say "FILE:LINE:COLUMN: ...". Built by reconcile/load/ynode.c from
 * libyaml events; no libyaml type appears here.
 *
 * All nodes of a file live in the file's arena and are freed together by
 * yfile_free(). Aliases are expanded by pointing at the anchored node (the
 * tree may share subtrees), with a cap on the expanded size (alias bombs).
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_diags;

enum ynode_kind {
	YNODE_SCALAR = 1,
	YNODE_SEQ,
	YNODE_MAP,
};

/* How a scalar was written: plain scalars are typed by YAML's core schema
 * (null, true/false, numbers); quoted or block scalars are always strings. */
enum ynode_style {
	YSTYLE_PLAIN = 0,
	YSTYLE_QUOTED,  /* 'single', "double", | literal, > folded */
};

struct ynode;

struct ynode_pair {
	struct ynode *key;   /* always a YNODE_SCALAR (other keys are rejected at load) */
	struct ynode *value;
};

struct ynode {
	enum ynode_kind kind;
	enum ynode_style style; /* YNODE_SCALAR's; here, beside kind, so no field is padded */
	const char *file;    /* borrowed from the yfile */
	unsigned line, col;  /* 1-based position of the node's first character */
	/* YNODE_SCALAR */
	const char *str;     /* NUL-terminated, valid UTF-8 */
	size_t len;          /* may contain NUL bytes only if quoted with \0: rejected at load */
	const char *tag;     /* explicit tag ("!!str", "tag:yaml.org,2002:int") or NULL */
	/* YNODE_SEQ: items[0..n); YNODE_MAP: pairs[0..n) in document order */
	size_t n;
	struct ynode **items;
	struct ynode_pair *pairs;
};

struct yfile {
	char *path;            /* as given to ynode_load_file */
	size_t ndocs;
	struct ynode **docs;   /* each document's root; an empty document is NULL */
	void *arena;           /* private to reconcile/load/ynode.c */
};

struct ynode_limits {
	size_t max_file_bytes;   /* default 8 MiB: larger files are refused with a clear message */
	size_t max_depth;        /* default 256 levels of nesting */
	size_t max_nodes;        /* default 1,000,000 nodes after alias expansion */
};

#define YNODE_LIMITS_DEFAULT { 8u << 20, 256, 1000000 }

/*
 * Loads every document of the file at path. Problems (syntax, tabs,
 * duplicate keys, invalid UTF-8, limits) are added to diags as
 * "FILE:LINE:COLUMN: message". Returns 0 with *out set when the file parsed,
 * VX_EINVAL when it did not (diags says why; *out is NULL), or VX_EIO /
 * VX_ENOMEM with err set for failures that are not the file's fault.
 * limits may be NULL for the defaults.
 */
int ynode_load_file(struct yfile **out, const char *path, const struct ynode_limits *limits,
		    struct vx_diags *diags, struct vx_err *err) VX_WUR;

/* The same from memory; name is used in positions. */
int ynode_load_mem(struct yfile **out, const char *name, const char *data, size_t len,
		   const struct ynode_limits *limits, struct vx_diags *diags,
		   struct vx_err *err) VX_WUR;

void yfile_free(struct yfile *f);

/*
 * 1 (the default): a file is first read by the fast reader of the subset vx's
 * files use (reconcile/load/yfast.h), and by libyaml only when it is not
 * that subset or has anything to report. 0: by libyaml alone. Both give the
 * same tree; tests set 0 to compare them.
 */
extern int ynode_fast_reader;

/* Lookup helpers. */
/* The value for key in a map node, or NULL (also when node is not a map). */
struct ynode *ynode_get(const struct ynode *map, const char *key);
/* The key node (for its position) for key in a map, or NULL. */
struct ynode *ynode_get_key(const struct ynode *map, const char *key);
/* Whether a scalar is YAML null (plain "", "~", "null", "Null", "NULL"). */
int ynode_is_null(const struct ynode *n);
/* "mapping", "sequence", "string", "integer", "number", "boolean" or "null":
 * what a scalar looks like under the core schema, for error messages. */
const char *ynode_type_name(const struct ynode *n);

/*
 * Why a scalar is not what a field wants, as the end of a message
 * "FIELD: <why>" (values shown are cut and escaped, so it stays one line).
 */
struct ynode_why {
	char s[320];
};

/*
 * 0 when n is a string under the core schema. Otherwise VX_EINVAL with why
 * set: "expected a string, got a mapping", or for a plain number or boolean
 * (which YAML types, so the API would refuse it) "expected a string, got the
 * number 1; quote it: \"1\"".
 */
int ynode_want_string(struct ynode_why *why, const struct ynode *n) VX_WUR;

/*
 * An integer written in decimal, plain or quoted (count: 2, count: "2"), in
 * [min, max]. 0 with *out set; otherwise VX_EINVAL with why set: "expected
 * an integer, got \"three\"", "expected a decimal integer, got \"0x10\"", or
 * "18446744073709551616 is out of range (at most 9223372036854775807)".
 * min and max are the field's type range; rules like "at least 1" are the
 * caller's, with their own message.
 */
int ynode_int(int64_t *out, struct ynode_why *why, const struct ynode *n, int64_t min,
	      int64_t max) VX_WUR;

#endif
