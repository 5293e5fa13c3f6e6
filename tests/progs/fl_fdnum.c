/*
 * fl_fdnum - an application that puts a descriptor at a number of its
 * choosing, as shells do for "exec 4>file" (open, then dup2 to 4 and
 * close the original), while a file with a deferred policy is open
 * (tests/system/test_flusher.c).
 *
 *   fl_fdnum -a AFILE -b BFILE [-n NUM] [-S]
 *
 *   fdA = open(AFILE), write (-S: and fsync; AFILE is the deferred one)
 *   fdB = open(BFILE); unless fdB == NUM: dup2(fdB, NUM), close(fdB)
 *   close(fdA)                          AFILE is no longer used at all
 *   syncshim_flush() if the shim is loaded (its pending work is done)
 *   write(NUM, "hello\n"), fsync(NUM), close(NUM)   must all succeed
 * NUM defaults to fdA + 1: the number the application's next open would
 * have got without the shim, so a shell script's "exec 4>B" after
 * "exec 3>A" in a fresh shell. Prints each step; exit 0 if NUM stayed
 * BFILE's and every call succeeded, else 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "progs.h"

static int fail(const char *what)
{
	printf("fl_fdnum: FAIL %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	const char *a = NULL, *b = NULL;
	int num = -1, do_sync = 0;
	const struct opt opts[] = {
		{ 'a', OPT_STR, .p = &a },
		{ 'b', OPT_STR, .p = &b },
		{ 'n', OPT_INT, .p = &num },
		{ 'S', OPT_FLAG, .p = &do_sync },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (!a || !b)
		goto usage;
	int fda = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fda < 0)
		return fail("open A");
	if (write(fda, "aaaaaaaaaaaaaaa\n", 16) != 16 || (do_sync && fsync(fda) != 0))
		return fail("write/fsync A");
	if (num < 0)
		num = fda + 1;
	int fdb = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fdb < 0)
		return fail("open B");
	printf("fl_fdnum: fdA=%d fdB=%d num=%d\n", fda, fdb, num);
	if (fdb != num) {
		if (dup2(fdb, num) != num)
			return fail("dup2");
		if (close(fdb) != 0)
			return fail("close fdB");
	}
	struct stat sb, sn;
	if (stat(b, &sb) != 0)
		return fail("stat B");
	if (close(fda) != 0)
		return fail("close A");
	void (*flush)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (flush)
		flush();
	if (fstat(num, &sn) != 0)
		return fail("fstat NUM (the descriptor was closed behind the application's back)");
	if (sn.st_ino != sb.st_ino || sn.st_dev != sb.st_dev) {
		printf("fl_fdnum: FAIL descriptor %d is no longer BFILE\n", num);
		return 1;
	}
	if (write(num, "hello\n", 6) != 6)
		return fail("write NUM");
	if (fsync(num) != 0)
		return fail("fsync NUM");
	if (close(num) != 0)
		return fail("close NUM");
	printf("fl_fdnum: ok\n");
	return 0;
usage:
	fprintf(stderr, "usage: fl_fdnum -a AFILE -b BFILE [-n NUM] [-S]\n");
	return 2;
}
