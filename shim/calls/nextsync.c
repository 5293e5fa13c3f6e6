/*
 * nextsync.c - a preload after the shim that interposes syncs is a blind
 * spot: with LD_PRELOAD=libsyncshim.so:libeatmydata.so the shim's "real"
 * fsync (the next definition after it, LIBC(fsync)) is eatmydata's no-op,
 * so no policy is durable, and crash-test mode, which marks a file durable
 * when that call returned, would count every acknowledgement as kept.
 *
 * At load, each sync function the shim calls is looked up as the shim
 * reaches it and in libc itself; if the two lie in different objects the
 * shim says so, naming the object, in one line, and in crash-test mode
 * records a LIMIT that makes `syncshim crashtest` call the trial
 * unusable. Only a lookup and dladdr: nothing is called (a probe call
 * would reach a layer's fault injection and its counts).
 *
 * A layer beneath the shim that passes the syncs on to libc (the tests'
 * recording layer, a tracer) says so by exporting the symbol
 * NEXTSYNC_PASSES_ON; its definitions are then taken as libc's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "crash.h"
#include "nextsync.h"
#include "shim.h"

struct sync_fn {
	const char *name;
	enum libc_id id;
};

static const struct sync_fn sync_fns[] = {
	{ "fsync", LIBC_ID_fsync },     { "fdatasync", LIBC_ID_fdatasync },
	{ "msync", LIBC_ID_msync },     { "sync_file_range", LIBC_ID_sync_file_range },
	{ "sync", LIBC_ID_sync },       { "syncfs", LIBC_ID_syncfs },
};

#define NSYNC (sizeof(sync_fns) / sizeof(sync_fns[0]))

/* Whether the object named so exports NEXTSYNC_PASSES_ON. */
static bool passes_on(const char *name)
{
	void *h = name ? dlopen(name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	bool yes = h && dlsym(h, NEXTSYNC_PASSES_ON);
	if (h)
		dlclose(h);
	dlerror();
	return yes;
}

/* The object holding addr, or NULL. */
static const void *object_of(const void *addr, const char **name)
{
	Dl_info info;
	if (!addr || !dladdr(addr, &info))
		return NULL;
	*name = info.dli_fname;
	return info.dli_fbase;
}

void nextsync_check(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (!libc) {
		dlerror();
		return; /* not glibc: nothing to compare with */
	}
	char names[128] = "";
	const char *other = NULL;
	size_t n = 0;
	for (size_t i = 0; i < NSYNC; i++) {
		const char *next_name = NULL, *libc_name = NULL;
		const void *next = object_of(libc_resolve(sync_fns[i].id), &next_name);
		const void *own = object_of(dlsym(libc, sync_fns[i].name), &libc_name);
		if (!next || !own || next == own || passes_on(next_name))
			continue;
		if (!other)
			other = next_name;
		n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0, "%s%s", n ? ", " : "",
				      sync_fns[i].name);
	}
	dlerror();
	dlclose(libc); /* NOLOAD took a reference only */
	if (!other)
		return;
	char what[512];
	snprintf(what, sizeof(what), "%s after the shim %s defined by %s, not libc: the shim's real syncs do not reach "
		 "the kernel, so no policy is durable", names, strchr(names, ',') ? "are" : "is", other);
	shim_say("%s (is it preloaded after the shim?)", what);
	crash_blind(what);
}
