/*
 * wal.h - the record format of the write-ahead-log example (wal_append
 * writes it, wal_check reads it back after a crash test's rollback).
 *
 * Fixed-size records, each checksummed and numbered, so that a checker
 * can tell a complete record from a torn one and count what is missing:
 *
 *   u32 magic "WALR", u32 size (the record's, header included),
 *   u64 seq (0, 1, 2 ...), u64 mono_ns (CLOCK_MONOTONIC when written),
 *   u32 crc (CRC32C of the record with crc = 0), u32 0,
 *   size - 32 bytes of fill: byte i is (seq * 31 + i) & 0xff
 *
 * Acknowledgements go to a separate file, one line per record once its
 * sync returned: "acked SEQ MONO_NS\n".
 */
#ifndef SYNCSHIM_EXAMPLES_WAL_H
#define SYNCSHIM_EXAMPLES_WAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WAL_MAGIC 0x524c4157u /* "WALR" */
#define WAL_HEAD 32
#define WAL_MIN_SIZE WAL_HEAD
#define WAL_MAX_SIZE (1u << 20)

struct wal_head {
	uint32_t magic, size;
	uint64_t seq, mono_ns;
	uint32_t crc, zero;
};

_Static_assert(sizeof(struct wal_head) == WAL_HEAD, "WAL record head");

/* CRC32C (Castagnoli), bit by bit: small records, no table needed. */
static inline uint32_t wal_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/* Fills rec (size bytes) as record seq. */
static inline void wal_make(uint8_t *rec, uint32_t size, uint64_t seq, uint64_t mono_ns)
{
	struct wal_head h = { WAL_MAGIC, size, seq, mono_ns, 0, 0 };
	for (uint32_t i = WAL_HEAD; i < size; i++)
		rec[i] = (uint8_t)(seq * 31 + i);
	memcpy(rec, &h, sizeof(h));
	h.crc = wal_crc32c(0, rec, size);
	memcpy(rec, &h, sizeof(h));
}

/* Whether rec (size bytes) is a complete, intact record numbered seq. */
static inline int wal_valid(const uint8_t *rec, uint32_t size, uint64_t seq)
{
	struct wal_head h;
	memcpy(&h, rec, sizeof(h));
	if (h.magic != WAL_MAGIC || h.size != size || h.seq != seq || h.zero != 0)
		return 0;
	uint32_t crc = h.crc;
	h.crc = 0;
	uint8_t head[WAL_HEAD];
	memcpy(head, &h, sizeof(h));
	return wal_crc32c(wal_crc32c(0, head, WAL_HEAD), rec + WAL_HEAD, size - WAL_HEAD) == crc;
}

#endif
