#ifndef VX_UTIL_TEXT_H
#define VX_UTIL_TEXT_H

/*
 * Making text that a server sent safe to show. A message, a display name or
 * a state read from the network may hold terminal escape sequences (clearing
 * the screen, retitling the window, forging lines), so every such string is
 * passed through here before it enters an error, a log line or the state:
 *
 *  - tab, line feed and carriage return become a space (Google's messages
 *    are sometimes several lines; one line cannot be forged from them);
 *  - every other C0 control, DEL and every C1 control (U+0080..U+009F)
 *    becomes '?';
 *  - a byte that is not part of well-formed UTF-8 (overlong forms,
 *    surrogates, past U+10FFFF, cut-off sequences) becomes '?';
 *  - valid UTF-8 otherwise passes unchanged.
 */

#include <stddef.h>

#include "util/err.h"

struct vx_buf;

/*
 * The length of the well-formed UTF-8 sequence that starts s (at most left
 * bytes): 1 for ASCII, 2 to 4 otherwise, 0 when the bytes are not UTF-8
 * (RFC 3629 and table 3-7 of the Unicode standard: no overlong forms, no
 * surrogates, nothing past U+10FFFF, no cut-off sequence) or left is 0.
 * The one UTF-8 check of the tree.
 */
size_t vx_utf8_len(const char *s, size_t left);
/* The characters (code points) of the NUL-terminated UTF-8 s: its bytes that do not continue one. */
size_t vx_utf8_count(const char *s);
/* 1 when s[0..len) is well-formed UTF-8 throughout (NUL bytes included). */
int vx_utf8_valid(const char *s, size_t len);

/* Appends the cleaned form of s[0..len) to b. Returns 0, VX_ENOMEM or VX_EINVAL (b's cap). */
int vx_text_add_clean(struct vx_buf *b, const char *s, size_t len) VX_WUR;

/*
 * The one control-character filter of the tree, of which vx_text_add_clean
 * is the usual setting. Its users differ in what a control becomes, which
 * the rules say:
 *
 *  - vx_text_add_clean (errors, log lines, the state): a tab or a line
 *    break a space, every other control '?', malformed UTF-8 '?';
 *  - a plan's error lines (reconcile/out/render.c): a tab a space, a run of
 *    line breaks one space, every other control dropped, at most max
 *    characters then "…"; other bytes unchanged;
 *  - GitHub workflow commands (workflow/ghactions.c): line breaks kept for
 *    its own %0A, every other C0 control and DEL '?', bytes from 0x80 on
 *    unchanged.
 */
enum vx_text_action {
	/* '?': something was there */
	VX_TEXT_MARK = 0,
	/* ' ' */
	VX_TEXT_SPACE,
	/* nothing */
	VX_TEXT_DROP,
	/* itself, for a caller that escapes it in its own syntax */
	VX_TEXT_KEEP,
};

struct vx_text_rules {
	/* '\t' */
	enum vx_text_action tab;
	/* '\n' and '\r' */
	enum vx_text_action breaks;
	/* 1: a run of line breaks is one ("\r\n\n": one space) */
	int join_breaks;
	/* every other C0 control (0x00..0x1F) and DEL (0x7F) */
	enum vx_text_action c0;
	/* a C1 control, U+0080..U+009F (0xC2 0x80..0x9F; CSI is U+009B) */
	enum vx_text_action c1;
	/* 1: a byte that is not part of well-formed UTF-8 becomes '?' */
	int utf8;
	/* 0, or at most this many characters, then "…" (U+2026) */
	size_t max;
};

/* vx_text_add_clean's rules. */
extern const struct vx_text_rules vx_text_clean_rules;

/* Appends s[0..len) to b, filtered by r. Returns 0, VX_ENOMEM or VX_EINVAL (b's cap). */
int vx_text_filter(struct vx_buf *b, const char *s, size_t len, const struct vx_text_rules *r) VX_WUR;

/*
 * The same for text that was meant for a terminal (a job's log lines):
 * terminal escape sequences (CSI "ESC [ ... m" colours, OSC "ESC ] ... BEL"
 * titles and links, other ESC pairs) are dropped whole rather than shown as
 * '?' and their parameters, then the rest is cleaned as above.
 */
int vx_text_add_terminal_safe(struct vx_buf *b, const char *s, size_t len) VX_WUR;

/* A cleaned copy of the NUL-terminated s (caller frees); NULL for NULL or on OOM. */
char *vx_text_clean(const char *s);

/* 1 when s is already clean (vx_text_clean would return it unchanged). */
int vx_text_is_clean(const char *s, size_t len);

/*
 * Hides the credentials of every URL in s, in place: in "https://user:token@host/x"
 * the userinfo (from after the scheme's slashes to the '@' before the host,
 * whatever it holds) becomes three asterisks (as many as it has bytes when
 * fewer: s never grows). For messages that may quote a git remote's URL, which
 * CI recipes give a token in (libgit2 reads no other credential helper).
 */
void vx_text_redact_userinfo(char *s);

/*
 * Cuts what a message echoes of its input, in place (s never grows): a
 * quoted span ("..." or '...', opened after a space, '(', '[', '{', '=',
 * ':' or ',' and closed before one of those, the end or '.', ';', '?',
 * '!') whose inside is over VX_TEXT_ECHO_LIMIT bytes keeps its first
 * VX_TEXT_ECHO_KEEP bytes, on a UTF-8 boundary, then "…", the closing
 * quote and " (N bytes)"; a run without spaces over the limit is cut the
 * same way, its trailing punctuation kept after the mark. So a 1 MB label
 * value becomes "aaaa…" (1048576 bytes) and a line stays a few hundred
 * bytes whatever was declared. A cut span is within the limit: cutting
 * twice changes nothing. Every diagnostic (util/diag.h) goes through here
 * when added, and every error where cmd/ shows it (cmd_report,
 * cmd_error): not when it is made, since a module may still scrub a
 * secret from its message then (providers/gcp/auth.c), and a cut secret
 * would no longer be found whole. Call it on any other message that
 * quotes input before it is shown.
 */
#define VX_TEXT_ECHO_LIMIT 256
#define VX_TEXT_ECHO_KEEP 200
void vx_text_cap_echoes(char *s);

/*
 * The offset of the first case-insensitive (ASCII letters) match of
 * needle[0..nlen) in hay[0..len), or len when there is none (an empty
 * needle matches at 0). Neither need be NUL-terminated.
 */
size_t vx_text_find_nocase(const char *hay, size_t len, const char *needle, size_t nlen);

/* Whether a and b are both NULL or equal strings. */
int vx_text_same(const char *a, const char *b);

#endif
