/*
 * rollback.c - the rollback in order: find the files, remove those created
 * too late to be recorded, undo data, then names (rollback.h).
 *
 * Data goes before names because data is found by inode, which names do
 * not change, while the name undo may move or remove the very paths the
 * data undo opens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_internal.h"

static const char *const model_names[NAMES_MODEL_COUNT] = {
	[NAMES_EXT4_ORDERED] = "ext4-ordered",
	[NAMES_STRICT] = "strict",
};

int names_model_parse(const char *name)
{
	for (int i = 0; i < NAMES_MODEL_COUNT; i++)
		if (strcmp(name, model_names[i]) == 0)
			return i;
	return -1;
}

const char *names_model_name(enum names_model m)
{
	return (unsigned)m < NAMES_MODEL_COUNT ? model_names[m] : "?";
}

int rb_note(char ***lines, size_t *n, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int len = vasprintf(&s, fmt, ap);
	va_end(ap);
	char **grown = len < 0 ? NULL : realloc(*lines, (*n + 1) * sizeof(*grown));
	if (!grown) {
		free(len < 0 ? NULL : s);
		return -1;
	}
	grown[(*n)++] = s;
	*lines = grown;
	return 0;
}

void rb_saved_path(const char *store, const char *saved, char *out, size_t len)
{
	if (saved[0] == '/' || !store)
		snprintf(out, len, "%s", saved);
	else
		snprintf(out, len, "%s/%s", store, saved);
}

/* LIMIT records, each with the file's path when it can be found. */
static int note_limits(const struct undo_log *log, const struct rb_index *ix, struct rb_result *r)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_entry *e = &log->e[i];
		if (e->h.type != UNDO_LIMIT)
			continue;
		const char *path = e->h.ino ? rb_index_find(ix, e->h.dev, e->h.ino) : NULL;
		char where[64];
		if (e->h.ino)
			snprintf(where, sizeof(where), "dev %llu inode %llu", (unsigned long long)e->h.dev,
				 (unsigned long long)e->h.ino);
		else
			snprintf(where, sizeof(where), "a file in scope"); /* the record names none */
		if (rb_note(&r->limits, &r->nlimits, "%s: %.*s (pid %u, byte %llu)", path ? path : where,
			    (int)e->h.plen, (const char *)e->payload, e->h.pid, (unsigned long long)e->at) < 0)
			return -1;
	}
	return 0;
}

int rollback_run(const struct undo_log *log, const struct rb_opts *o, struct rb_result *r, char *err,
		 size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->full = log->full;
	struct rb_syncs s;
	struct rb_index ix;
	if (rb_syncs_collect(log, &s) < 0) {
		snprintf(err, errlen, "out of memory reading the log's syncs");
		return -1;
	}
	if (rb_index_build(&ix, o) < 0) {
		rb_syncs_free(&s);
		snprintf(err, errlen, "out of memory indexing the scope's files");
		return -1;
	}
	int bad = rb_remove_unrecorded(&ix, log, o, r) < 0 || note_limits(log, &ix, r) < 0 ||
		  rb_undo_data(log, &s, &ix, r) < 0 || rb_undo_names(log, &s, o, r) < 0;
	rb_index_free(&ix);
	rb_syncs_free(&s);
	if (bad) {
		snprintf(err, errlen, "out of memory during the rollback");
		return -1;
	}
	return 0;
}

bool rollback_exact(const struct rb_result *r)
{
	return !r->nproblems && !r->nlimits && !r->full;
}

static void free_lines(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

void rollback_free(struct rb_result *r)
{
	for (size_t i = 0; i < r->nfiles; i++)
		free(r->files[i].path);
	free(r->files);
	free_lines(r->names, r->nnames);
	free_lines(r->limits, r->nlimits);
	free_lines(r->problems, r->nproblems);
	memset(r, 0, sizeof(*r));
}
