/*
 * glob.c - path globs for [rule NAME] sections.
 *
 * A pattern is split into tokens, then matched by running it as an NFA
 * over the path, one character at a time, with the set of live tokens in
 * a bitset. Cost is O(path length x live tokens) whatever the stars are:
 * no backtracking, so "/a*a*a*a*b" against a long run of a's is as cheap
 * as any other pattern. Everything lives on the stack: this runs inside
 * other people's processes on every matched open().
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

enum tok_kind {
	TOK_CHAR,   /* one literal character */
	TOK_ANY,    /* '?': one character except '/' */
	TOK_CLASS,  /* [...]: one listed character, never '/' */
	TOK_STAR,   /* '*': any run without '/' */
	TOK_DSTAR,  /* '**': any run, '/' included */
	TOK_DIRS,   /* '**' + '/' at a component start: zero or more whole directories */
	TOK_IN_DIR, /* always follows TOK_DIRS: partway through one of those names */
};

struct tok {
	unsigned char kind;
	unsigned char ch;  /* TOK_CHAR */
	unsigned short at; /* TOK_CLASS: offset of the first byte after '[' */
};

/* A valid pattern is shorter than POLICY_GLOB_MAX and every token takes at
 * least one byte ("**" + "/" takes two tokens for three bytes), so there
 * are at most POLICY_GLOB_MAX - 1 tokens and POLICY_GLOB_MAX NFA states. */
#define STATE_WORDS ((POLICY_GLOB_MAX + 63) / 64)

struct state_set {
	uint64_t w[STATE_WORDS];
};

static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* One member of a class: a plain byte or a '\'-escaped one. NULL at the end
 * of the pattern. */
static const char *class_char(const char *s, unsigned char *c)
{
	if (*s == '\\')
		s++;
	if (!*s)
		return NULL;
	*c = (unsigned char)*s;
	return s + 1;
}

/* Validate the class starting just after '[': returns the byte after the
 * closing ']', or NULL with a reason. ']' always closes (write "\]" for a
 * literal one), so "[]" is an empty class rather than POSIX's odd case. */
static const char *class_scan(const char *s, char *why, size_t whylen)
{
	unsigned char lo, hi;
	int members = 0;

	if (*s == '!' || *s == '^')
		s++;
	while (*s != ']') {
		s = class_char(s, &lo);
		if (!s)
			break;
		hi = lo;
		if (s[0] == '-' && s[1] && s[1] != ']') {
			s = class_char(s + 1, &hi);
			if (!s)
				break;
		}
		if (hi < lo) {
			bad(why, whylen, "reversed range '%c-%c' in [...]", lo, hi);
			return NULL;
		}
		if (lo == '/' || hi == '/') {
			bad(why, whylen, "'/' inside [...] can never match");
			return NULL;
		}
		members++;
	}
	if (!s) {
		bad(why, whylen, "unterminated '[' (missing ']')");
		return NULL;
	}
	if (!members) {
		bad(why, whylen, "empty class '[]' (write '\\]' for a literal ']')");
		return NULL;
	}
	return s + 1;
}

/* s points just after the '[' of a class that class_scan accepted. */
static bool class_match(const char *s, unsigned char c)
{
	bool negate = false, hit = false;
	unsigned char lo, hi;

	if (c == '/')
		return false;
	if (*s == '!' || *s == '^') {
		negate = true;
		s++;
	}
	while (*s != ']') {
		s = class_char(s, &lo);
		hi = lo;
		if (s[0] == '-' && s[1] && s[1] != ']')
			s = class_char(s + 1, &hi);
		if (c >= lo && c <= hi)
			hit = true;
	}
	return hit != negate;
}

static int tokenize(const char *pat, struct tok *t, int *ntok, char *why, size_t whylen)
{
	size_t len = strnlen(pat, POLICY_GLOB_MAX);
	const char *s = pat;
	int n = 0;

	if (len == 0)
		return bad(why, whylen, "empty pattern");
	if (len >= POLICY_GLOB_MAX)
		return bad(why, whylen, "pattern too long (max %d characters)", POLICY_GLOB_MAX - 1);
	if (*pat != '/' && *pat != '*')
		return bad(why, whylen, "pattern must start with '/' (paths are absolute) or '*'");

	while (*s) {
		struct tok *k = &t[n++];
		const char *end;

		k->kind = TOK_CHAR;
		k->ch = (unsigned char)*s;
		switch (*s) {
		case '\\':
			if (!s[1])
				return bad(why, whylen, "trailing '\\' escapes nothing");
			k->ch = (unsigned char)s[1];
			s += 2;
			break;
		case '?':
			k->kind = TOK_ANY;
			s++;
			break;
		case '[':
			end = class_scan(s + 1, why, whylen);
			if (!end)
				return -1;
			k->kind = TOK_CLASS;
			k->at = (unsigned short)(s + 1 - pat);
			s = end;
			break;
		case '*':
			if (s[1] != '*') {
				k->kind = TOK_STAR;
				s++;
			} else if (s[2] == '*') {
				return bad(why, whylen, "'***' is ambiguous; use '*' (within a directory) or '**' (across directories)");
			} else if (s[2] == '/' && (s == pat || s[-1] == '/')) {
				k->kind = TOK_DIRS;
				t[n++] = (struct tok){ .kind = TOK_IN_DIR };
				s += 3;
			} else {
				k->kind = TOK_DSTAR;
				s += 2;
			}
			break;
		default:
			s++;
			break;
		}
	}
	*ntok = n;
	return 0;
}

int glob_check(const char *pattern, char *why, size_t whylen)
{
	struct tok t[POLICY_GLOB_MAX];
	int n;

	if (why && whylen)
		why[0] = '\0';
	if (!pattern)
		return bad(why, whylen, "empty pattern");
	return tokenize(pattern, t, &n, why, whylen);
}

static void set_add(struct state_set *set, int i)
{
	set->w[i / 64] |= UINT64_C(1) << (i % 64);
}

static bool set_has(const struct state_set *set, int i)
{
	return set->w[i / 64] >> (i % 64) & 1;
}

static bool set_empty(const struct state_set *set)
{
	for (int w = 0; w < STATE_WORDS; w++)
		if (set->w[w])
			return false;
	return true;
}

/* How far a live token lets the match skip ahead without reading a
 * character: stars may match nothing. "**" + "/" may only stop where a
 * directory ends, so its skip is from TOK_DIRS (a boundary) over its
 * TOK_IN_DIR, and TOK_IN_DIR (inside a name) has none. */
static int empty_skip(const struct tok *k)
{
	switch (k->kind) {
	case TOK_STAR:
	case TOK_DSTAR:
		return 1;
	case TOK_DIRS:
		return 2;
	default:
		return 0;
	}
}

/* Those skips only point forward, so one ascending pass over the set bits,
 * picking up bits added on the way, reaches the closure. */
static void follow_empty_stars(const struct tok *t, int n, struct state_set *set)
{
	for (int w = 0; w < STATE_WORDS; w++) {
		uint64_t bits = set->w[w];

		while (bits) {
			int i = w * 64 + __builtin_ctzll(bits);
			int to = i < n ? i + empty_skip(&t[i]) : i;

			bits &= bits - 1;
			if (to == i)
				continue;
			set_add(set, to);
			if (to / 64 == w)
				bits |= UINT64_C(1) << (to % 64);
		}
	}
}

static void step(const char *pat, const struct tok *k, int i, unsigned char c, struct state_set *next)
{
	switch (k->kind) {
	case TOK_CHAR:
		if (c == k->ch)
			set_add(next, i + 1);
		break;
	case TOK_ANY:
		if (c != '/')
			set_add(next, i + 1);
		break;
	case TOK_CLASS:
		if (class_match(pat + k->at, c))
			set_add(next, i + 1);
		break;
	case TOK_STAR:
		if (c != '/')
			set_add(next, i);
		break;
	case TOK_DSTAR:
		set_add(next, i);
		break;
	case TOK_DIRS:
		/* At a directory boundary: a '/' keeps us at one, anything else
		 * starts a name. */
		set_add(next, c == '/' ? i : i + 1);
		break;
	case TOK_IN_DIR:
		/* A '/' ends the name: back at a boundary (i - 1). */
		set_add(next, c == '/' ? i - 1 : i);
		break;
	}
}

bool glob_match(const char *pattern, const char *path)
{
	struct tok t[POLICY_GLOB_MAX];
	struct state_set live = { { 0 } }, next;
	int n;

	if (!pattern || !path || tokenize(pattern, t, &n, NULL, 0) < 0)
		return false;

	set_add(&live, 0);
	follow_empty_stars(t, n, &live);
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		memset(&next, 0, sizeof(next));
		for (int w = 0; w < STATE_WORDS; w++) {
			uint64_t bits = live.w[w];

			while (bits) {
				int i = w * 64 + __builtin_ctzll(bits);

				bits &= bits - 1;
				if (i < n)
					step(pattern, &t[i], i, *c, &next);
			}
		}
		follow_empty_stars(t, n, &next);
		if (set_empty(&next))
			return false;
		live = next;
	}
	return set_has(&live, n);
}
