/*
 * replay.c - runs a fuzz target's LLVMFuzzerTestOneInput over saved
 * inputs, without libFuzzer: `make test` builds it with gcc (and the
 * sanitizers in `make asan`) and replays every corpus file and every
 * crash input found so far, so a fixed bug stays fixed.
 *
 *   replay_TARGET DIR_OR_FILE...
 *
 * A crashing input kills the process (abort, sanitizer report); with
 * REPLAY_VERBOSE set each input's name is printed before it runs, so the
 * last name shown is the culprit. Otherwise one line at the end:
 * "replay TARGET: N passed, 0 failed".
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	if (getenv("REPLAY_VERBOSE")) /* the last name printed is the input that failed */
		fprintf(stderr, "replay: %s\n", path);
	/* the exact size, so ASan sees a read one past the input */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact)
		abort();
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file in dir, in name order (a missing dir holds nothing). */
static int replay_dir(const char *dir, int *count)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, NULL), bad = 0;

	if (n < 0)
		return 0;
	char **paths = calloc((size_t)n + 1, sizeof(*paths));
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && paths &&
		    asprintf(&paths[m], "%s/%s", dir, names[i]->d_name) >= 0)
			m++;
		free(names[i]);
	}
	free(names);
	if (!paths)
		return -1;
	qsort(paths, (size_t)m, sizeof(*paths), cmp_str);
	for (int i = 0; i < m; i++) {
		bad |= replay_file(paths[i]);
		(*count)++;
		free(paths[i]);
	}
	free(paths);
	return bad;
}

int main(int argc, char **argv)
{
	int count = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			bad |= replay_dir(argv[i], &count);
		} else if (stat(argv[i], &st) == 0) {
			bad |= replay_file(argv[i]);
			count++;
		}
	}
	printf("replay %s: %d passed, %d failed\n", REPLAY_TARGET, count, bad ? 1 : 0);
	return bad ? 1 : 0;
}
