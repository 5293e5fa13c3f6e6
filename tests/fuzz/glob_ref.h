/*
 * glob_ref.h - a reference matcher for the documented glob syntax (see
 * shim.ini), written to be obviously right rather than fast: straight
 * recursion over the pattern, with a cache of (pattern offset, path
 * offset) answers only so that star-heavy inputs finish. The fuzzer
 * compares glob_match with it.
 *
 *   \x   x itself          ?    one character but '/'
 *   [..] one listed character, never '/' ([a-z], [!a], [^a], \] inside)
 *   *    any run without '/'
 *   ** + '/' at the start of a component: empty, or any run ending in '/'
 *   **   elsewhere: any run at all
 * Only patterns glob_check accepts are given to it.
 */
#ifndef GLOB_REF_H
#define GLOB_REF_H

#include <stdbool.h>
#include <string.h>

#define REF_PAT_MAX 256
#define REF_PATH_MAX 160

struct ref {
	const char *pat, *path;
	signed char memo[REF_PAT_MAX + 1][REF_PATH_MAX + 1]; /* -1 unknown, else the answer */
};

/* One class member at *p (after '[' or a previous member): its byte. */
static unsigned char ref_member(const char **p)
{
	if (**p == '\\')
		(*p)++;
	return (unsigned char)*(*p)++;
}

/* Does class p (just after '[') hold c? *end is set past its ']'. */
static bool ref_class(const char *p, unsigned char c, const char **end)
{
	bool negate = *p == '!' || *p == '^', hit = false;

	if (negate)
		p++;
	while (*p != ']') {
		unsigned char lo = ref_member(&p), hi = lo;

		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			hi = ref_member(&p);
		}
		hit |= c >= lo && c <= hi;
	}
	*end = p + 1;
	return c != '/' && hit != negate;
}

static bool ref_at(struct ref *r, const char *p, const char *s);

/* Pattern p against path s, from scratch (ref_at caches it). */
static bool ref_match_uncached(struct ref *r, const char *p, const char *s)
{
	const char *end;

	switch (*p) {
	case '\0':
		return !*s;
	case '\\':
		return *s == p[1] && ref_at(r, p + 2, s + 1);
	case '?':
		return *s && *s != '/' && ref_at(r, p + 1, s + 1);
	case '[':
		return *s && ref_class(p + 1, (unsigned char)*s, &end) && ref_at(r, end, s + 1);
	case '*':
		if (p[1] != '*') { /* one star: a run without '/' */
			for (const char *t = s;; t++) {
				if (ref_at(r, p + 1, t))
					return true;
				if (!*t || *t == '/')
					return false;
			}
		}
		if (p[2] == '/' && (p == r->pat || p[-1] == '/')) { /* whole directories */
			if (ref_at(r, p + 3, s))
				return true;
			for (const char *t = s; *t; t++)
				if (*t == '/' && ref_at(r, p + 3, t + 1))
					return true;
			return false;
		}
		for (const char *t = s;; t++) { /* two stars: any run */
			if (ref_at(r, p + 2, t))
				return true;
			if (!*t)
				return false;
		}
	default:
		return *s == *p && ref_at(r, p + 1, s + 1);
	}
}

static bool ref_at(struct ref *r, const char *p, const char *s)
{
	signed char *m = &r->memo[p - r->pat][s - r->path];

	if (*m < 0)
		*m = (signed char)ref_match_uncached(r, p, s);
	return *m;
}

/* pattern shorter than REF_PAT_MAX, path shorter than REF_PATH_MAX. */
static bool glob_ref_match(struct ref *r, const char *pattern, const char *path)
{
	r->pat = pattern;
	r->path = path;
	memset(r->memo, -1, sizeof(r->memo));
	return ref_at(r, pattern, path);
}

#endif
