/*
 * msync_span - one msync(MS_SYNC) over two adjacent shared mappings of
 * two different files.
 *
 *   msync_span FIRST SECOND
 *   msync_span -r FIRST SECOND
 *
 * Maps 2 pages of FIRST and right after them 2 pages of SECOND (MAP_FIXED
 * into one reserved range), dirties both, and calls msync(MS_SYNC) once on
 * the whole 4-page range. Prints
 *   msync_span: ok first=0xADDR second=0xADDR pagesize=N
 * With -r (address reuse): maps FIRST, msyncs it, munmaps it, maps SECOND
 * at the very same address (MAP_FIXED) and msyncs that; prints the same
 * line (second= is the reused address).
 * Exit 1 when a call fails.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int map_file(const char *path, char *at, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
		perror(path);
		return -1;
	}
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	close(fd);
	if (p != at) {
		perror("mmap");
		return -1;
	}
	memset(at, 'x', len);
	return 0;
}

int main(int argc, char **argv)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	if (argc == 4 && strcmp(argv[1], "-r") == 0) {
		char *base = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED || map_file(argv[2], base, 2 * pg) || msync(base, 2 * pg, MS_SYNC) != 0 ||
		    munmap(base, 2 * pg) != 0 || map_file(argv[3], base, 2 * pg) ||
		    msync(base, 2 * pg, MS_SYNC) != 0) {
			perror("msync_span -r");
			return 1;
		}
		printf("msync_span: ok first=%p second=%p pagesize=%zu\n", (void *)base, (void *)base, pg);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: msync_span [-r] FIRST SECOND\n");
		return 2;
	}
	char *base = mmap(NULL, 4 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || map_file(argv[1], base, 2 * pg) || map_file(argv[2], base + 2 * pg, 2 * pg))
		return 1;
	if (msync(base, 4 * pg, MS_SYNC) != 0) {
		perror("msync");
		return 1;
	}
	printf("msync_span: ok first=%p second=%p pagesize=%zu\n", (void *)base, (void *)(base + 2 * pg), pg);
	return 0;
}
