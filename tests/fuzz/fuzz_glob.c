/*
 * fuzz_glob.c - libFuzzer target: glob_check and glob_match, against the
 * reference matcher of glob_ref.h (a differential oracle).
 *
 * Input: pattern '\n' path. A pattern glob_check refuses must say why; one
 * it accepts must match exactly the paths the reference matches.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glob_ref.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bytes up to the first NUL, at most max - 1 of them. */
static void cstr(char *out, size_t max, const uint8_t *p, size_t n)
{
	size_t k = 0;

	while (k < n && k < max - 1 && p[k])
		k++;
	memcpy(out, p, k);
	out[k] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ref ref;
	char pattern[REF_PAT_MAX + 64], path[REF_PATH_MAX], why[128];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : size;

	cstr(pattern, sizeof(pattern), data, plen);
	if (nl)
		cstr(path, sizeof(path), nl + 1, size - plen - 1);
	else
		path[0] = '\0';

	if (glob_check(pattern, why, sizeof(why)) < 0) {
		if (!why[0] || glob_match(pattern, path))
			abort(); /* refused without a reason, or matched anyway */
		return 0;
	}
	if (strlen(pattern) >= REF_PAT_MAX)
		abort(); /* glob_check accepted a pattern over the documented limit */
	if (glob_match(pattern, path) != glob_ref_match(&ref, pattern, path))
		abort();
	return 0;
}
