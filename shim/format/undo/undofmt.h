/*
 * undofmt.h - the undo log of crash-test mode (docs/CRASHTEST.md): what
 * a shimmed process tree writes so that `syncshim crashtest` can roll
 * every file in scope back to what was durable at the moment of a cut.
 *
 * One file, DIR/undo.log, shared by every process of the run and opened
 * O_APPEND: each record is one write(), so records of different processes
 * never interleave, and a record's offset in the file is its place in the
 * run's one order. A record that describes a change is appended (and its
 * write() has returned) before the change is made; a DURABLE record is
 * appended after its real sync completed and before the app learns so.
 * A cut (SIGKILL of the whole tree) therefore leaves a log whose records
 * are a superset of what happened, and whose marks never claim too much.
 *
 * Pure definitions, shared by the shim (shim/observe/crash.c) and the tools.
 */
#ifndef SYNCSHIM_UNDOFMT_H
#define SYNCSHIM_UNDOFMT_H

#include <stdint.h>

#define UNDO_MAGIC "SSUNDO1\n"        /* the file's first 8 bytes */
#define UNDO_REC_MAGIC 0x43455255u    /* "UREC" */
#define UNDO_NAME "undo.log"

enum undo_type {
	UNDO_WRITE = 1,       /* bytes [off, off+len) are about to be written */
	UNDO_SIZE = 2,        /* the size is about to change from old_size to new_size */
	UNDO_DURABLE = 3,     /* every change of (dev, ino) logged before `upto` is durable */
	UNDO_DURABLE_DEV = 4, /* every change on dev logged before `upto` is durable (sync, syncfs) */
	UNDO_CREATE = 5,      /* path (a new file, (dev, ino)) was created */
	UNDO_RENAME = 6,      /* path -> path2; `saved` keeps a replaced target */
	UNDO_UNLINK = 7,      /* path (dev, ino) was removed; `saved` keeps it */
	UNDO_DIRSYNC = 8,     /* directory (dev, ino) synced: its entries logged before `upto` are durable */
	UNDO_FULL = 9,        /* the store reached its bound: nothing after this was recorded */
	UNDO_LIMIT = 10,      /* something a rollback cannot undo happened (text says what) */
	UNDO_TYPE_LIMIT
};

/* Record flags. */
#define UNDO_F_OSYNC 1        /* WRITE: on an O_SYNC/O_DSYNC descriptor: durable once done */
#define UNDO_F_NO_PREIMAGE 2  /* WRITE, SIZE: the bytes it replaced could not be kept */
#define UNDO_F_BLIND 4        /* LIMIT: no trial of this run can be judged (the real syncs did
			       * not reach the kernel: another library's sync after the shim's) */

/*
 * Every record: this 72-byte head, then `plen` payload bytes (for WRITE
 * and SIZE the pre-image, for name records the NUL-separated paths, for
 * LIMIT the text). crc is CRC32C (shim/format/log/logfmt.h's logfmt_crc32c) of the
 * head with crc = 0, then the payload. Little-endian.
 */
struct undo_rec {
	uint32_t magic;        /* UNDO_REC_MAGIC */
	uint16_t type;         /* enum undo_type */
	uint16_t flags;        /* UNDO_F_* */
	uint32_t pid;          /* the process that wrote it */
	uint32_t plen;         /* payload bytes */
	uint64_t mono_ns;      /* CLOCK_MONOTONIC when it was written */
	uint64_t dev, ino;     /* the file (or directory, or device for DURABLE_DEV) */
	uint64_t off;          /* WRITE: offset; SIZE: new size; DURABLE*, DIRSYNC: upto */
	uint64_t len;          /* WRITE: length */
	uint64_t old_size;     /* WRITE, SIZE: the file's size before */
	uint32_t crc;
	uint32_t reserved;     /* 0 */
};

_Static_assert(sizeof(struct undo_rec) == 72, "undo record head");

#endif
