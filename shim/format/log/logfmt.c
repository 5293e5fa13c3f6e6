/*
 * logfmt.c - block encoders for the latency log (docs/LOGFORMAT.md).
 *
 * Everything is written byte by byte in little-endian order, so the format
 * does not depend on the host's endianness or struct padding. A small
 * bounded writer remembers an overflow instead of checking at every call
 * site; an encoder whose writer overflowed returns 0.
 */
#include "logfmt.h"

#include <stdatomic.h>
#include <string.h>

#include "policy.h"

static const char *const op_names[LOGOP_COUNT] = {
	[LOGOP_WRITE] = "write",
	[LOGOP_PWRITE] = "pwrite",
	[LOGOP_WRITEV] = "writev",
	[LOGOP_PWRITEV] = "pwritev",
	[LOGOP_FSYNC] = "fsync",
	[LOGOP_FDATASYNC] = "fdatasync",
	[LOGOP_MSYNC] = "msync",
	[LOGOP_SYNC_FILE_RANGE] = "sync_file_range",
	[LOGOP_SYNCFS] = "syncfs",
	[LOGOP_SYNC] = "sync",
	[LOGOP_OPEN] = "open",
	[LOGOP_CLOSE] = "close",
	[LOGOP_RENAME] = "rename",
	[LOGOP_REAL_FSYNC] = "real_fsync",
	[LOGOP_REAL_FDATASYNC] = "real_fdatasync",
	[LOGOP_REAL_SYNC_FILE_RANGE] = "real_sync_file_range",
};

static const char *const block_names[LOGBLK_LAST + 1] = {
	[LOGBLK_HEADER] = "HEADER",
	[LOGBLK_FILE] = "FILE",
	[LOGBLK_RECORDS] = "RECORDS",
	[LOGBLK_INTERVAL] = "INTERVAL",
	[LOGBLK_HIST] = "HIST",
	[LOGBLK_EVENT] = "EVENT",
	[LOGBLK_DROPS] = "DROPS",
	[LOGBLK_POLICY] = "POLICY",
	[LOGBLK_TRAILER] = "TRAILER",
	[LOGBLK_RISK] = "RISK",
};

/* Retired kinds have no entry (NULL): they are shown as "?". */
static const char *const event_names[LOGEV_KIND_LIMIT] = {
	[LOGEV_RELOAD] = "reload",
	[LOGEV_SYNC_ERROR] = "sync-error",
	[LOGEV_CONFIG_ERROR] = "config-error",
};

const char *logop_name(unsigned op)
{
	return op < LOGOP_COUNT ? op_names[op] : "?";
}

int logop_parse(const char *name)
{
	for (int i = 0; i < LOGOP_COUNT; i++)
		if (strcmp(name, op_names[i]) == 0)
			return i;
	return -1;
}

bool logop_is_write(unsigned op)
{
	return op <= LOGOP_PWRITEV;
}

bool logop_is_sync(unsigned op)
{
	return op >= LOGOP_FSYNC && op <= LOGOP_SYNC;
}

bool logop_is_real(unsigned op)
{
	return op >= LOGOP_REAL_FSYNC && op <= LOGOP_REAL_SYNC_FILE_RANGE;
}

const char *logev_name(unsigned kind)
{
	return kind < LOGEV_KIND_LIMIT && event_names[kind] ? event_names[kind] : "?";
}

const char *logfmt_block_name(unsigned type)
{
	return type <= LOGBLK_LAST && block_names[type] ? block_names[type] : "?";
}

/* ---- CRC32C, reflected polynomial 0x82F63B78 ---- */

static const uint32_t crc_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
	0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
	0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
	0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
	0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
	0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
	0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
	0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
	0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
	0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
	0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
	0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
	0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
	0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
	0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
	0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
	0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
	0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
	0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
	0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
	0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
	0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,};

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
#include <cpuid.h>
/* SSE4.2 computes the same CRC (Castagnoli) 8 bytes an instruction: the
 * logger checksums every block it writes, a megabyte at a time in calls
 * mode, and the table loop was a tenth of its time. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	for (; len; len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

/* One cpuid, the first time a CRC is wanted. Not __builtin_cpu_supports:
 * it links libgcc's CPU detection, whose constructor runs a dozen cpuid
 * instructions in every process the shim is loaded into, each a trap to
 * the hypervisor on a VM (tens of microseconds added to every exec). */
static bool have_sse42(void)
{
	static _Atomic int known; /* 0 unknown, 1 no, 2 yes: racing threads find the same */
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		unsigned a, b, c, d;
		k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 2 : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
}
#endif

uint32_t logfmt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__)
	if (have_sse42())
		return ~crc32c_sse42(crc, buf, len);
#endif
	return ~crc32c_table(crc, buf, len);
}

/* ---- bounded little-endian writer ---- */

struct w {
	uint8_t *p, *end;
	bool ok;
};

static void w_bytes(struct w *w, const void *src, size_t n)
{
	if (!w->ok || (size_t)(w->end - w->p) < n) {
		w->ok = false;
		return;
	}
	if (n)
		memcpy(w->p, src, n);
	w->p += n;
}

static void w_le(struct w *w, uint64_t v, int bytes)
{
	uint8_t b[8];
	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	w_bytes(w, b, (size_t)bytes);
}

static void w_u8(struct w *w, uint8_t v) { w_le(w, v, 1); }
static void w_u16(struct w *w, uint16_t v) { w_le(w, v, 2); }
static void w_u32(struct w *w, uint32_t v) { w_le(w, v, 4); }
static void w_u64(struct w *w, uint64_t v) { w_le(w, v, 8); }

/* Strings are length-prefixed, without NUL; overlong ones are cut. */
static void w_str(struct w *w, const char *s, int lenbytes)
{
	size_t n = s ? strlen(s) : 0;
	size_t max = lenbytes == 2 ? 0xffff : LOGFMT_MAX_PAYLOAD;
	if (n > max)
		n = max;
	w_le(w, n, lenbytes);
	w_bytes(w, s, n);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- blocks ---- */

static struct w payload_writer(uint8_t *buf, size_t cap)
{
	struct w w = { buf, buf, cap >= LOGFMT_BLOCK_HDR };
	if (w.ok) {
		w.p = buf + LOGFMT_BLOCK_HDR;
		w.end = buf + cap;
	}
	return w;
}

static size_t seal(uint8_t *buf, uint16_t type, uint32_t seq, size_t plen)
{
	if (plen > LOGFMT_MAX_PAYLOAD)
		return 0;
	put_le(buf, LOGFMT_MAGIC, 4);
	put_le(buf + 4, type, 2);
	put_le(buf + 6, 0, 2);
	put_le(buf + 8, seq, 4);
	put_le(buf + 12, plen, 4);
	put_le(buf + 16, logfmt_crc32c(0, buf + LOGFMT_BLOCK_HDR, plen), 4);
	put_le(buf + 20, logfmt_crc32c(0, buf, 20), 4);
	return LOGFMT_BLOCK_HDR + plen;
}

static size_t finish(struct w *w, uint8_t *buf, uint16_t type, uint32_t seq)
{
	if (!w->ok)
		return 0;
	return seal(buf, type, seq, (size_t)(w->p - buf) - LOGFMT_BLOCK_HDR);
}

static void w_rules(struct w *w, const struct logfmt_rule *rules, uint16_t n)
{
	w_u16(w, n);
	for (uint16_t i = 0; i < n; i++) {
		w_u8(w, rules[i].sync);
		w_u8(w, 0);
		w_str(w, rules[i].name, 2);
		w_str(w, rules[i].glob, 2);
	}
}

uint16_t logfmt_rules_from_policy(const struct policy *p, struct logfmt_rule *out)
{
	uint16_t n = 0;
	out[n++] = (struct logfmt_rule){ "", "", (uint8_t)p->deflt.sync };
	for (int i = 0; i < p->nrules && i < POLICY_MAX_RULES; i++)
		out[n++] = (struct logfmt_rule){ p->rules[i].name, p->rules[i].glob,
						 (uint8_t)p->rules[i].sync };
	return n;
}

size_t logfmt_encode_header(uint8_t *buf, size_t cap, const struct logfmt_header *h)
{
	struct w w = payload_writer(buf, cap);
	w_u16(&w, LOGFMT_MAJOR);
	w_u16(&w, LOGFMT_MINOR);
	w_u32(&w, h->pid);
	w_u32(&w, h->ppid);
	w_u8(&w, h->log_mode);
	w_le(&w, 0, 3);
	w_u64(&w, h->start_wall_ns);
	w_u64(&w, h->start_mono_ns);
	w_str(&w, h->hostname, 2);
	w_str(&w, h->kernel, 2);
	w_str(&w, h->cmdline, 4);
	w_rules(&w, h->rules, h->nrules);
	w_str(&w, h->policy_ini, 4);
	return h->nrules ? finish(&w, buf, LOGBLK_HEADER, 0) : 0;
}

size_t logfmt_encode_policy(uint8_t *buf, size_t cap, uint32_t seq, uint64_t time_ns,
			    const struct logfmt_rule *rules, uint16_t nrules, const char *ini)
{
	struct w w = payload_writer(buf, cap);
	w_u64(&w, time_ns);
	w_rules(&w, rules, nrules);
	w_str(&w, ini, 4);
	return nrules ? finish(&w, buf, LOGBLK_POLICY, seq) : 0;
}

size_t logfmt_encode_file(uint8_t *buf, size_t cap, uint32_t seq, const struct logfmt_file *f)
{
	struct w w = payload_writer(buf, cap);
	w_u32(&w, f->id);
	w_u16(&w, f->rule);
	w_u16(&w, 0);
	w_u64(&w, f->dev);
	w_u64(&w, f->ino);
	w_str(&w, f->rule_name, 2);
	w_str(&w, f->fstype, 2);
	w_str(&w, f->path, 2);
	return f->id ? finish(&w, buf, LOGBLK_FILE, seq) : 0;
}

void logfmt_record_put(uint8_t *dst, const struct logfmt_record *r)
{
	put_le(dst, r->start_ns, 8);
	put_le(dst + 8, r->dur_ns, 8);
	put_le(dst + 16, r->bytes, 8);
	put_le(dst + 24, (uint32_t)r->result, 4);
	put_le(dst + 28, r->file_id, 4);
	put_le(dst + 32, r->tid, 4);
	dst[36] = r->op;
	dst[37] = r->flags;
	put_le(dst + 38, r->rule, 2);
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void logfmt_record_get(struct logfmt_record *r, const uint8_t *src)
{
	r->start_ns = get_le(src, 8);
	r->dur_ns = get_le(src + 8, 8);
	r->bytes = get_le(src + 16, 8);
	r->result = (int32_t)(uint32_t)get_le(src + 24, 4);
	r->file_id = (uint32_t)get_le(src + 28, 4);
	r->tid = (uint32_t)get_le(src + 32, 4);
	r->op = src[36];
	r->flags = src[37];
	r->rule = (uint16_t)get_le(src + 38, 2);
}

uint32_t logfmt_records_fit(size_t cap)
{
	size_t head = LOGFMT_RECORDS_AT(0);
	if (cap < head)
		return 0;
	size_t n = (cap - head) / LOGFMT_RECORD_SIZE;
	size_t max = (LOGFMT_MAX_PAYLOAD - 8) / LOGFMT_RECORD_SIZE;
	return (uint32_t)(n < max ? n : max);
}

size_t logfmt_records_seal(uint8_t *buf, uint32_t seq, uint32_t n)
{
	uint8_t *p = buf + LOGFMT_BLOCK_HDR;
	put_le(p, LOGFMT_RECORD_SIZE, 2);
	put_le(p + 2, 0, 2);
	put_le(p + 4, n, 4);
	return seal(buf, LOGBLK_RECORDS, seq, LOGFMT_RECORDS_AT(n) - LOGFMT_BLOCK_HDR);
}

size_t logfmt_encode_records(uint8_t *buf, size_t cap, uint32_t seq,
			     const struct logfmt_record *recs, uint32_t n)
{
	if (n > logfmt_records_fit(cap))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		logfmt_record_put(buf + LOGFMT_RECORDS_AT(i), &recs[i]);
	return logfmt_records_seal(buf, seq, n);
}

static bool tally_empty(const struct tally *t)
{
	return !(t->calls | t->bytes | t->sum_ns | t->max_ns);
}

size_t logfmt_encode_interval(uint8_t *buf, size_t cap, uint32_t seq, uint32_t second,
			      const struct tally t[LOGOP_COUNT])
{
	uint16_t n = 0;
	for (int op = 0; op < LOGOP_COUNT; op++)
		n += !tally_empty(&t[op]);

	struct w w = payload_writer(buf, cap);
	w_u32(&w, second);
	w_u16(&w, n);
	w_u16(&w, LOGFMT_IVENT_SIZE);
	for (int op = 0; op < LOGOP_COUNT; op++) {
		if (tally_empty(&t[op]))
			continue;
		w_u8(&w, (uint8_t)op);
		w_le(&w, 0, 7);
		w_u64(&w, t[op].calls);
		w_u64(&w, t[op].bytes);
		w_u64(&w, t[op].sum_ns);
		w_u64(&w, t[op].max_ns);
	}
	return finish(&w, buf, LOGBLK_INTERVAL, seq);
}

size_t logfmt_encode_risk(uint8_t *buf, size_t cap, uint32_t seq, uint32_t second,
			  const struct logfmt_risk *r, uint16_t n)
{
	struct w w = payload_writer(buf, cap);
	w_u32(&w, second);
	w_u16(&w, n);
	w_u16(&w, LOGFMT_RISK_SIZE);
	for (uint16_t i = 0; i < n; i++) {
		w_u32(&w, r[i].file_id);
		w_u32(&w, 0);
		w_u64(&w, r[i].worst_bytes);
		w_u64(&w, r[i].worst_age_ns);
		w_u64(&w, r[i].bytes);
		w_u64(&w, r[i].age_ns);
		w_u64(&w, r[i].written);
	}
	return finish(&w, buf, LOGBLK_RISK, seq);
}

size_t logfmt_encode_hist(uint8_t *buf, size_t cap, uint32_t seq,
			  const struct logfmt_histkey *k, const struct hist *h)
{
	if (k->part >= k->nparts || k->nparts > LOGFMT_MAX_HIST_PARTS)
		return 0;
	struct w w = payload_writer(buf, cap);
	w_u32(&w, k->snap);
	w_u16(&w, k->part);
	w_u16(&w, k->nparts);
	w_u64(&w, k->time_ns);
	w_u8(&w, k->op);
	w_u8(&w, 0);
	w_u16(&w, k->rule);
	w_u32(&w, k->file_id);
	uint8_t *lenp = w.p;
	w_u32(&w, 0);
	if (!w.ok)
		return 0;
	size_t n = hist_encode(h, w.p, (size_t)(w.end - w.p));
	if (n == 0)
		return 0;
	put_le(lenp, n, 4);
	w.p += n;
	return finish(&w, buf, LOGBLK_HIST, seq);
}

size_t logfmt_encode_event(uint8_t *buf, size_t cap, uint32_t seq, const struct logfmt_event *e)
{
	struct w w = payload_writer(buf, cap);
	w_u64(&w, e->time_ns);
	w_u32(&w, e->file_id);
	w_u32(&w, (uint32_t)e->err);
	w_u8(&w, e->kind);
	w_u8(&w, 0);
	w_str(&w, e->text, 2);
	return finish(&w, buf, LOGBLK_EVENT, seq);
}

size_t logfmt_encode_drops(uint8_t *buf, size_t cap, uint32_t seq, uint64_t time_ns,
			   uint64_t dropped_total)
{
	struct w w = payload_writer(buf, cap);
	w_u64(&w, time_ns);
	w_u64(&w, dropped_total);
	return finish(&w, buf, LOGBLK_DROPS, seq);
}

size_t logfmt_encode_trailer(uint8_t *buf, size_t cap, uint32_t seq,
			     const struct logfmt_trailer *t)
{
	struct w w = payload_writer(buf, cap);
	w_u64(&w, t->end_wall_ns);
	w_u64(&w, t->end_mono_ns);
	w_u32(&w, (uint32_t)t->exit_status);
	w_u32(&w, 0);
	return finish(&w, buf, LOGBLK_TRAILER, seq);
}

/* ---- reader side ---- */

int logfmt_block_header(const uint8_t *p, struct logfmt_blockhdr *b, const char **why)
{
	b->magic = (uint32_t)get_le(p, 4);
	b->type = (uint16_t)get_le(p + 4, 2);
	b->flags = (uint16_t)get_le(p + 6, 2);
	b->seq = (uint32_t)get_le(p + 8, 4);
	b->len = (uint32_t)get_le(p + 12, 4);
	b->payload_crc = (uint32_t)get_le(p + 16, 4);
	b->header_crc = (uint32_t)get_le(p + 20, 4);

	const char *bad = NULL;
	if (b->magic != LOGFMT_MAGIC)
		bad = "bad block magic";
	else if (logfmt_crc32c(0, p, 20) != b->header_crc)
		bad = "bad block header CRC";
	else if (b->flags != 0)
		bad = "reserved block flags set";
	else if (b->len > LOGFMT_MAX_PAYLOAD)
		bad = "impossible block length";
	if (bad && why)
		*why = bad;
	return bad ? -1 : 0;
}

bool logfmt_block_payload_ok(const struct logfmt_blockhdr *b, const uint8_t *payload)
{
	return logfmt_crc32c(0, payload, b->len) == b->payload_crc;
}
