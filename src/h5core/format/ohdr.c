/* ohdr.c - object headers (spec IV.A.1 "Data Object Header Prefix", IV.A.2
 * "Data Object Header Messages"): the version 1 and version 2 prefixes, the
 * chain of continuation chunks (IV.A.2.q), and shared messages (IV.A.2
 * "Shared Message", III.I for the SOHM heap).
 *
 * A loaded header keeps every chunk exactly as read; messages point into
 * those buffers, so a cached header is an immutable snapshot that many
 * threads read at once. */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "ordered.h"
#include "ohdr.h"
#include "fheap.h"

#include <stdio.h>

#define OHDR_V1_PREFIX 16       /* 12 bytes of fields, padded to 8-byte alignment */
#define OHDR_V1_MSGHDR 8        /* type(2) size(2) flags(1) reserved(3) */
#define OHDR_V2_MAX_PREFIX (4 + 1 + 1 + 16 + 4 + 8)
/* The first read of a header: its prefix, and chunk 0 too when that fits
 * (most headers: a dataset's of a few hundred bytes), so a walk reads
 * each header once, not prefix then chunk (issue 70: a pread per object
 * less) */
#define OHDR_FIRST_READ 1024
#define OHDR_SHARED_MAX_DEPTH 8 /* committed message -> committed message -> ... */
#define OHDR_LAST_KNOWN_TYPE 0x18 /* metadata cache image message (libhdf5 1.10+) */

/* The cached object: the public header plus the cache entry it came from,
 * so h5_ohdr_release() needs no second lookup. h5_ohdr_load allocates the
 * same container so h5_ohdr_free works on both: one block of size bytes
 * holding the header, its message and chunk arrays and its chunks' bytes
 * (ohdr_pack), instead of a block each (a cold walk decodes a header per
 * object: five allocations apiece with the cache's entry were 12% of the
 * daemon's CPU, issue 70). */
struct ohdr_obj {
	h5_ohdr pub;
	void *ent;
	size_t size;
};

/* A continuation chunk named by a continuation message. */
typedef struct ohdr_cont {
	uint64_t addr, len;
} ohdr_cont;

/* Messages and chunks a header's arrays start with, on the loader's
 * stack: the arrays are allocated once, at their exact sizes, when the
 * header is parsed (growing them by doubling, then shrinking, was most of
 * a walk's malloc time: issue 70) */
#define OHDR_INLINE_MSGS 32
#define OHDR_INLINE_CHUNKS 4

typedef struct ohdr_build {
	h5_file *f;
	h5_ohdr *oh;
	size_t msgs_cap, chunks_cap;
	h5_msg msgs_inl[OHDR_INLINE_MSGS];
	h5_ohdr_chunk chunks_inl[OHDR_INLINE_CHUNKS];
	ohdr_cont *pending;
	size_t npending, pending_cap;
	const uint8_t *pfx;     /* the first read, on the loader's stack: chunk 0 when it holds it */
} ohdr_build;

/* p inside o's block (not allocated apart) */
static bool ohdr_in_block(const struct ohdr_obj *o, const void *p)
{
	return (uintptr_t)p >= (uintptr_t)o && (uintptr_t)p < (uintptr_t)o + o->size;
}

void h5_ohdr_free(h5_ohdr *oh)
{
	struct ohdr_obj *o = (struct ohdr_obj *)oh;

	if (!oh)
		return;
	for (size_t i = 0; i < oh->nchunks; i++)
		if (!ohdr_in_block(o, oh->chunks[i].buf))
			free(oh->chunks[i].buf);
	if (!ohdr_in_block(o, oh->chunks))
		free(oh->chunks);
	if (!ohdr_in_block(o, oh->msgs))
		free(oh->msgs);
	free(__atomic_load_n(&oh->which, __ATOMIC_ACQUIRE));
	free(o);
}

/* a chunk's buffer given back (chunk 0 may be the first read's, on the stack) */
static void chunk_buf_free(const ohdr_build *b, uint8_t *buf)
{
	if (buf != b->pfx)
		free(buf);
}

/* inl: the array's buffer on the loader's stack (NULL: none), copied out
 * when it is outgrown */
static int grow(void **arr, size_t *cap, size_t need, size_t elem, const void *inl)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	if (ncap < need)
		ncap = need;
	if (inl && *arr == inl) {
		p = malloc(ncap * elem);
		if (p)
			memcpy(p, inl, *cap * elem);
	} else {
		p = realloc(*arr, ncap * elem);
	}
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory loading object header");
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Append a chunk (takes ownership of buf). */
static int ohdr_add_chunk(ohdr_build *b, uint64_t addr, uint8_t *buf, size_t len)
{
	h5_ohdr *oh = b->oh;
	int rc;

	rc = grow((void **)&oh->chunks, &b->chunks_cap, oh->nchunks + 1, sizeof(*oh->chunks), b->chunks_inl);
	if (rc < 0) {
		chunk_buf_free(b, buf);
		return rc;
	}
	oh->chunks[oh->nchunks].addr = addr;
	oh->chunks[oh->nchunks].buf = buf;
	oh->chunks[oh->nchunks].len = len;
	oh->nchunks++;
	/* a chunk across a page: its rewrites take an ordered copy, whose
	 * record the reserves count from now on (io/ordered.h) */
	h5_ordered_note(b->f, addr, len);
	return 0;
}

/* IV.A.2.q: a continuation message names the address and length of the
 * next chunk. Queue it after checking it is new (a chunk seen before means
 * the chain loops) and does not overlap a chunk already read. */
static int ohdr_queue_cont(ohdr_build *b, const h5_msg *m)
{
	const h5_fmt *fmt = &b->f->fmt;
	h5_ohdr *oh = b->oh;
	uint64_t addr, len, end;
	h5_rd r;
	int rc;

	h5_rd_init(&r, m->data, m->size);
	addr = h5_rd_addr(&r, fmt);
	len = h5_rd_size(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "continuation message at 0x%llx: %u bytes is too short",
				  (unsigned long long)m->addr, m->size);
	if (!h5_addr_defined(addr) || len == 0 || h5_add_overflow(addr, len, &end))
		return h5_err_set(H5_ERR_FORMAT, "continuation message at 0x%llx: bad chunk 0x%llx+%llu",
				  (unsigned long long)m->addr, (unsigned long long)addr, (unsigned long long)len);
	if (oh->version == 2 && len < 8)
		return h5_err_set(H5_ERR_FORMAT, "continuation chunk 0x%llx: %llu bytes cannot hold OCHK and checksum",
				  (unsigned long long)addr, (unsigned long long)len);
	for (size_t i = 0; i < b->npending; i++) {
		uint64_t a = b->pending[i].addr, e = a + b->pending[i].len;

		if (a == addr)
			return h5_err_set(H5_ERR_LOOP, "object header 0x%llx: continuation chunk 0x%llx is referenced twice",
					  (unsigned long long)oh->addr, (unsigned long long)addr);
		if (addr < e && a < end)
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: continuation chunk 0x%llx+%llu overlaps "
					  "chunk 0x%llx", (unsigned long long)oh->addr, (unsigned long long)addr,
					  (unsigned long long)len, (unsigned long long)a);
	}
	/* chunk 0, prefix included, is not in the pending list */
	{
		uint64_t a = oh->chunks[0].addr, e = a + oh->chunks[0].len;

		if (addr < e && a < end)
			return h5_err_set(H5_ERR_LOOP, "object header 0x%llx: continuation chunk 0x%llx points back "
					  "into the header's first chunk", (unsigned long long)oh->addr,
					  (unsigned long long)addr);
	}
	if (b->npending + 2 > H5_MAX_OHDR_CHUNKS) /* chunk 0 + pending + this one */
		return h5_err_set(H5_ERR_LIMIT, "object header 0x%llx: more than %d chunks",
				  (unsigned long long)oh->addr, H5_MAX_OHDR_CHUNKS);
	rc = grow((void **)&b->pending, &b->pending_cap, b->npending + 1, sizeof(*b->pending), NULL);
	if (rc < 0)
		return rc;
	b->pending[b->npending].addr = addr;
	b->pending[b->npending].len = len;
	b->npending++;
	return 0;
}

/* Split the message area [start, end) of chunk ci into messages. v1
 * messages are 8-byte aligned with an 8-byte header; v2 messages are packed
 * with a 4-byte header (+2 for creation order) and the chunk may end in a
 * gap smaller than a message header. */
static int ohdr_parse_chunk(ohdr_build *b, uint32_t ci, size_t start, size_t end)
{
	h5_ohdr *oh = b->oh;
	const h5_ohdr_chunk *c = &oh->chunks[ci];
	bool v1 = oh->version == 1;
	size_t hdr = v1 ? OHDR_V1_MSGHDR : (oh->flags & 0x04) ? 6 : 4;
	size_t pos = start;
	int rc;

	while (pos < end) {
		h5_msg m;
		h5_rd r;

		if (end - pos < hdr) {
			if (!v1)
				break; /* gap */
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: %zu stray bytes at the end of chunk 0x%llx",
					  (unsigned long long)oh->addr, end - pos, (unsigned long long)c->addr);
		}
		memset(&m, 0, sizeof(m));
		h5_rd_init(&r, c->buf + pos, end - pos);
		if (v1) {
			m.type = h5_rd_u16(&r);
			m.size = h5_rd_u16(&r);
			m.flags = h5_rd_u8(&r);
			h5_rd_skip(&r, 3);
		} else {
			m.type = h5_rd_u8(&r);
			m.size = h5_rd_u16(&r);
			m.flags = h5_rd_u8(&r);
			if (oh->flags & 0x04)
				m.crt_order = h5_rd_u16(&r);
		}
		pos += hdr;
		if (m.size > end - pos)
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: message type 0x%x of %u bytes at 0x%llx "
					  "runs past the end of its chunk", (unsigned long long)oh->addr, m.type, m.size,
					  (unsigned long long)(c->addr + pos));
		if (v1 && m.size % 8 != 0)
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: message type 0x%x size %u is not a multiple of 8",
					  (unsigned long long)oh->addr, m.type, m.size);
		/* IV.A.1.a flag bit 7: a reader that does not know the type must fail */
		if (m.type > OHDR_LAST_KNOWN_TYPE && (m.flags & 0x80))
			return h5_err_set(H5_ERR_UNSUPPORTED, "object header 0x%llx: unknown message type 0x%x "
					  "marked as required", (unsigned long long)oh->addr, m.type);
		m.data = c->buf + pos;
		m.chunk = ci;
		m.addr = c->addr + pos;
		pos += m.size;
		rc = grow((void **)&oh->msgs, &b->msgs_cap, oh->nmsgs + 1, sizeof(*oh->msgs), b->msgs_inl);
		if (rc < 0)
			return rc;
		oh->msgs[oh->nmsgs++] = m;
		if (m.type < 64)
			oh->types |= (uint64_t)1 << m.type;
		if (m.type == H5_MSG_CONT) {
			rc = ohdr_queue_cont(b, &m);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Read a continuation chunk: v1 chunks are bare messages; v2 chunks are
 * "OCHK", messages, gap, checksum. */
static int ohdr_load_cont(ohdr_build *b, ohdr_cont cont)
{
	h5_ohdr *oh = b->oh;
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	if ((uint64_t)(size_t)cont.len != cont.len)
		return h5_err_set(H5_ERR_FORMAT, "continuation chunk 0x%llx too large", (unsigned long long)cont.addr);
	len = (size_t)cont.len;
	rc = h5_file_read_alloc(&buf, b->f, cont.addr, len);
	if (rc < 0)
		return h5_err_wrap(rc, "continuation chunk 0x%llx: ", (unsigned long long)cont.addr);
	if (oh->version == 2) {
		if (memcmp(buf, "OCHK", 4) != 0) {
			free(buf);
			return h5_err_set(H5_ERR_FORMAT, "continuation chunk 0x%llx: bad signature (expected OCHK)",
					  (unsigned long long)cont.addr);
		}
		rc = h5_checksum_verify(buf, len, "object header continuation chunk", cont.addr);
		if (rc < 0) {
			free(buf);
			return rc;
		}
	}
	rc = ohdr_add_chunk(b, cont.addr, buf, len);
	if (rc < 0)
		return rc;
	if (oh->version == 2)
		return ohdr_parse_chunk(b, (uint32_t)(oh->nchunks - 1), 4, len - 4);
	return ohdr_parse_chunk(b, (uint32_t)(oh->nchunks - 1), 0, len);
}

/* IV.A.1.a: version 1 prefix; chunk 0 is stored with its prefix. */
/* Chunk 0, [addr, addr + len): the first read (b->pfx) when it holds it,
 * else read (*buf malloc'd). */
static int chunk0_read(uint8_t **buf, ohdr_build *b, const uint8_t *pfx, size_t pfx_len, size_t len)
{
	if (len > pfx_len)
		return h5_file_read_alloc(buf, b->f, b->oh->addr, len);
	*buf = (uint8_t *)pfx;
	return 0;
}

static int ohdr_load_v1(ohdr_build *b, const uint8_t *pfx, size_t pfx_len)
{
	h5_ohdr *oh = b->oh;
	uint8_t *buf = NULL;
	uint32_t size0;
	h5_rd r;
	int rc;

	h5_rd_init(&r, pfx, pfx_len);
	oh->version = h5_rd_u8(&r);
	h5_rd_skip(&r, 1);
	h5_rd_u16(&r); /* message count: informational, libhdf5 merges NILs so it may differ */
	oh->refcount = h5_rd_u32(&r);
	size0 = h5_rd_u32(&r);
	if (!h5_rd_ok(&r) || pfx_len < OHDR_V1_PREFIX)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: truncated prefix", (unsigned long long)oh->addr);
	rc = chunk0_read(&buf, b, pfx, pfx_len, (size_t)OHDR_V1_PREFIX + size0);
	if (rc < 0)
		return rc;
	rc = ohdr_add_chunk(b, oh->addr, buf, (size_t)OHDR_V1_PREFIX + size0);
	if (rc < 0)
		return rc;
	return ohdr_parse_chunk(b, 0, OHDR_V1_PREFIX, (size_t)OHDR_V1_PREFIX + size0);
}

/* IV.A.1.b: version 2 prefix ("OHDR"); chunk 0 includes prefix and checksum. */
static int ohdr_load_v2(ohdr_build *b, const uint8_t *pfx, size_t pfx_len)
{
	h5_ohdr *oh = b->oh;
	uint8_t *buf = NULL;
	uint64_t size0, total;
	size_t plen;
	h5_rd r;
	int rc;

	h5_rd_init(&r, pfx, pfx_len);
	h5_rd_skip(&r, 4);
	oh->version = h5_rd_u8(&r);
	oh->flags = h5_rd_u8(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: truncated prefix", (unsigned long long)oh->addr);
	if (oh->version != 2)
		return h5_err_set(H5_ERR_UNSUPPORTED, "object header 0x%llx: OHDR version %u not supported",
				  (unsigned long long)oh->addr, oh->version);
	if (oh->flags & 0xc0)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: reserved flag bits set (0x%02x)",
				  (unsigned long long)oh->addr, oh->flags);
	if (oh->flags & 0x20) {
		oh->has_times = true;
		oh->atime = h5_rd_u32(&r);
		oh->mtime = h5_rd_u32(&r);
		oh->ctime = h5_rd_u32(&r);
		oh->btime = h5_rd_u32(&r);
	}
	if (oh->flags & 0x10) {
		uint16_t max_compact = h5_rd_u16(&r), min_dense = h5_rd_u16(&r);

		if (h5_rd_ok(&r) && max_compact < min_dense)
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: attribute phase change values "
					  "max compact %u < min dense %u", (unsigned long long)oh->addr,
					  max_compact, min_dense);
	}
	size0 = h5_rd_uint(&r, 1u << (oh->flags & 0x03));
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: truncated prefix", (unsigned long long)oh->addr);
	plen = r.pos;
	if (h5_add_overflow(size0, plen + 4, &total) || !h5_file_range_ok(b->f, oh->addr, total))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: chunk 0 size %llu runs past the end of the file",
				  (unsigned long long)oh->addr, (unsigned long long)size0);
	rc = chunk0_read(&buf, b, pfx, pfx_len, (size_t)total);
	if (rc < 0)
		return rc;
	rc = h5_checksum_verify(buf, (size_t)total, "object header", oh->addr);
	if (rc < 0) {
		chunk_buf_free(b, buf);
		return rc;
	}
	rc = ohdr_add_chunk(b, oh->addr, buf, (size_t)total);
	if (rc < 0)
		return rc;
	return ohdr_parse_chunk(b, 0, plen, (size_t)total - 4);
}

/* v2 headers keep the link count in a reference count message (IV.A.2.w). */
static int ohdr_refcount_v2(h5_ohdr *oh)
{
	const h5_msg *m = h5_ohdr_find(oh, H5_MSG_REFCOUNT);
	h5_rd r;
	uint8_t version;

	oh->refcount = 1;
	if (!m)
		return 0;
	h5_rd_init(&r, m->data, m->size);
	version = h5_rd_u8(&r);
	oh->refcount = h5_rd_u32(&r);
	if (!h5_rd_ok(&r) || version != 0)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: bad reference count message (version %u, %u bytes)",
				  (unsigned long long)oh->addr, version, m->size);
	return 0;
}

/* *out: the header o built (on the loader's stack, its arrays and chunks
 * anywhere) copied into one block (struct ohdr_obj), its messages' data
 * pointing into the block's copies of their chunks */
static int ohdr_pack(struct ohdr_obj **out, const struct ohdr_obj *o)
{
	const h5_ohdr *oh = &o->pub;
	size_t moff = sizeof(*o), coff, boff, size;
	struct ohdr_obj *n;
	uint8_t *p;

	*out = NULL;
	coff = moff + oh->nmsgs * sizeof(h5_msg);
	boff = coff + oh->nchunks * sizeof(h5_ohdr_chunk);
	size = boff;
	for (size_t i = 0; i < oh->nchunks; i++)
		if (h5_add_overflow(size, oh->chunks[i].len, &size))
			return h5_err_set(H5_ERR_NOMEM, "object header 0x%llx too large", (unsigned long long)oh->addr);
	p = malloc(size);
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory loading object header");
	n = (struct ohdr_obj *)p;
	*n = *o;
	n->ent = NULL;
	n->size = size;
	n->pub.msgs = oh->nmsgs ? (h5_msg *)(p + moff) : NULL;
	n->pub.chunks = oh->nchunks ? (h5_ohdr_chunk *)(p + coff) : NULL;
	if (oh->nmsgs)
		memcpy(n->pub.msgs, oh->msgs, oh->nmsgs * sizeof(h5_msg));
	p += boff;
	for (size_t i = 0; i < oh->nchunks; i++) {
		n->pub.chunks[i] = oh->chunks[i];
		n->pub.chunks[i].buf = p;
		memcpy(p, oh->chunks[i].buf, oh->chunks[i].len);
		p += oh->chunks[i].len;
	}
	for (size_t i = 0; i < oh->nmsgs; i++) {
		h5_msg *m = &n->pub.msgs[i];

		if (m->data && m->chunk < oh->nchunks)
			m->data = n->pub.chunks[m->chunk].buf + (m->data - oh->chunks[m->chunk].buf);
	}
	*out = n;
	return 0;
}

/* h5_ohdr_load, the header's first read through window w (NULL: none),
 * or from img (img_len bytes, its writer's: h5_ohdr_prime) */
static int ohdr_load_in(h5_ohdr **out, h5_file *f, uint64_t addr, h5_window *w, const uint8_t *img,
			size_t img_len)
{
	uint8_t pfx[OHDR_FIRST_READ];
	struct ohdr_obj so, *o = NULL;
	ohdr_build b;
	size_t pfx_len;
	uint64_t eof = h5_file_eof(f);
	int rc;

	*out = NULL;
	/* its fields, not its inline arrays (1.3 KB, written before they
	 * are read, up to the counts in b.oh): zeroing them was 1.8% of a
	 * cold walk's daemon instructions (issue 82) */
	b.pending = NULL;
	b.npending = b.pending_cap = 0;
	if (!h5_addr_defined(addr) || addr >= eof)
		return h5_err_set(H5_ERR_FORMAT, "object header address 0x%llx is outside the file",
				  (unsigned long long)addr);
	/* built on the stack, then packed into one block */
	memset(&so, 0, sizeof(so));
	so.pub.addr = addr;
	b.f = f;
	b.oh = &so.pub;
	b.pfx = pfx;
	so.pub.msgs = b.msgs_inl;
	b.msgs_cap = OHDR_INLINE_MSGS;
	so.pub.chunks = b.chunks_inl;
	b.chunks_cap = OHDR_INLINE_CHUNKS;

	/* Read what the longest prefix could need, short near the end of file;
	 * the per-version code checks it got enough. */
	pfx_len = eof - addr < sizeof(pfx) ? (size_t)(eof - addr) : sizeof(pfx);
	if (img) {
		/* FILE's bytes there, just written: only the header's own are
		 * decoded (a longer one's rest is read from FILE, chunk0_read) */
		pfx_len = img_len < sizeof(pfx) ? img_len : sizeof(pfx);
		memcpy(pfx, img, pfx_len);
		rc = 0;
	} else {
		rc = h5_file_read_window(w, f, addr, pfx, pfx_len);
	}
	if (rc < 0 && pfx_len > OHDR_V2_MAX_PREFIX) {
		/* FILE may end before its end of allocation while a writer's
		 * space past the header is not written yet (or was given back
		 * as a hole at the end): the prefix alone, as the header's own
		 * length then says what more to read */
		h5_err_clear();
		pfx_len = OHDR_V2_MAX_PREFIX;
		rc = h5_file_read(f, addr, pfx, pfx_len);
	}
	if (rc < 0)
		goto out;
	if (pfx_len >= 4 && memcmp(pfx, "OHDR", 4) == 0)
		rc = ohdr_load_v2(&b, pfx, pfx_len);
	else if (pfx_len >= 1 && pfx[0] == 1)
		rc = ohdr_load_v1(&b, pfx, pfx_len);
	else
		rc = h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no OHDR signature and version %u is not 1",
				(unsigned long long)addr, pfx_len ? pfx[0] : 0);
	if (rc < 0)
		goto out;

	/* Chunks in the order their continuation messages were found, as
	 * libhdf5 reads them; every new chunk was checked against all others. */
	for (size_t i = 0; i < b.npending; i++) {
		/* by value: parsing the chunk may grow (move) b.pending */
		rc = ohdr_load_cont(&b, b.pending[i]);
		if (rc < 0)
			goto out;
	}
	if (so.pub.version == 2) {
		rc = ohdr_refcount_v2(&so.pub);
		if (rc < 0)
			goto out;
	}
	/* one block at its exact size: a cached header is charged what it
	 * holds (ohdr_cache_load) */
	rc = ohdr_pack(&o, &so);
	if (rc < 0)
		goto out;
	*out = &o->pub;
out:
	free(b.pending);
	/* the stack's header: what of it was allocated (packed, or failed) */
	for (size_t i = 0; i < so.pub.nchunks; i++)
		chunk_buf_free(&b, so.pub.chunks[i].buf);
	if ((void *)so.pub.msgs != (void *)b.msgs_inl)
		free(so.pub.msgs);
	if ((void *)so.pub.chunks != (void *)b.chunks_inl)
		free(so.pub.chunks);
	return rc;
}

int h5_ohdr_load(h5_ohdr **out, h5_file *f, uint64_t addr)
{
	return ohdr_load_in(out, f, addr, NULL, NULL, 0);
}

#define OHDR_CACHE_OVERHEAD 160

struct ohdr_load_ud {
	h5_file *f;
	uint64_t addr;
	const uint8_t *img;     /* h5_ohdr_prime's (NULL: read from FILE) */
	size_t img_len;
};

static int ohdr_cache_load(void **obj, size_t *cost, void *udp)
{
	struct ohdr_load_ud *ud = udp;
	h5_ohdr *oh;
	size_t c;
	int rc;

	rc = ohdr_load_in(&oh, ud->f, ud->addr, NULL, ud->img, ud->img_len);
	if (rc < 0)
		return rc;
	/* what it holds, and what holding it costs beside: the cache's entry
	 * with its table slots (io/cache.c, ~140 bytes) and the allocator's
	 * header of its one block. A walk of many small objects fills the
	 * cache with headers of a few hundred bytes, where these are a
	 * third of the memory (issue 64: -o cache_mb=64 held 105 MB) */
	c = ((struct ohdr_obj *)oh)->size + OHDR_CACHE_OVERHEAD + 16;
	*obj = (struct ohdr_obj *)oh;
	*cost = c;
	return 0;
}

static void ohdr_cache_free(void *obj)
{
	h5_ohdr_free(&((struct ohdr_obj *)obj)->pub);
}

int h5_ohdr_get(h5_ohdr **out, h5_file *f, uint64_t addr)
{
	struct ohdr_load_ud ud = { f, addr, NULL, 0 };
	struct ohdr_obj *o;
	h5_cache_ref ref;
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "object header address is undefined");
	rc = h5_cache_get(&ref, f->meta, H5_CK_OHDR, addr, ohdr_cache_load, ohdr_cache_free, &ud);
	if (rc < 0)
		return rc;
	o = ref.obj;
	/* Every holder stores the same entry pointer; atomic so concurrent
	 * first users do not race on a plain write. */
	__atomic_store_n(&o->ent, ref.ent, __ATOMIC_RELEASE);
	*out = &o->pub;
	return 0;
}

void h5_ohdr_prime(h5_file *f, uint64_t addr, const uint8_t *img, size_t len)
{
	struct ohdr_load_ud ud = { f, addr, img, len };
	struct ohdr_obj *o;
	h5_cache_ref ref;

	/* (one the cache holds already is left as it is: what a read would
	 * have found) */
	if (h5_cache_get(&ref, f->meta, H5_CK_OHDR, addr, ohdr_cache_load, ohdr_cache_free, &ud) < 0) {
		h5_err_clear();         /* read from FILE when asked, as before */
		return;
	}
	o = ref.obj;
	__atomic_store_n(&o->ent, ref.ent, __ATOMIC_RELEASE);
	h5_ohdr_release(f, &o->pub);
}

void h5_ohdr_prefetch(h5_file *f, uint64_t addr)
{
	if (h5_addr_defined(addr))
		h5_cache_prefetch(f->meta, H5_CK_OHDR, addr);
}

/* A walk's listing reads each child's header once (issue 82): kept in
 * the cache, 200,000 of them were most of the daemon's memory after a
 * cold walk and, with the cache's bookkeeping and the page faults of that
 * memory, a fifth of its CPU. Read from FILE even where the cache holds a
 * copy (the same bytes, or older ones of a FILE another program changes,
 * which a reload after an eviction reads as well): a look-up in a cache
 * of a million entries was 5% of a cold walk's CPU, a copy from the
 * window a fraction of it. */
int h5_ohdr_get_once(h5_ohdr **out, h5_file *f, uint64_t addr, h5_window *w)
{
	return ohdr_load_in(out, f, addr, w, NULL, 0);
}

void h5_ohdr_release(h5_file *f, h5_ohdr *oh)
{
	struct ohdr_obj *o = (struct ohdr_obj *)oh;
	h5_cache_ref ref;

	if (!oh)
		return;
	/* (h5_ohdr_get_once's own copy: no cache entry; h5_ohdr_get sets
	 * every cached one's before any holder has it) */
	if (!__atomic_load_n(&o->ent, __ATOMIC_ACQUIRE)) {
		h5_ohdr_free(oh);
		return;
	}
	ref.obj = o;
	ref.ent = __atomic_load_n(&o->ent, __ATOMIC_ACQUIRE);
	h5_cache_release(f->meta, &ref);
}

const h5_msg *h5_ohdr_find(const h5_ohdr *oh, uint16_t type)
{
	if (type < 64 && !(oh->types & (uint64_t)1 << type))
		return NULL;
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].type == type)
			return &oh->msgs[i];
	return NULL;
}

size_t h5_ohdr_count(const h5_ohdr *oh, uint16_t type)
{
	size_t n = 0;

	if (type < 64 && !(oh->types & (uint64_t)1 << type))
		return 0;

	for (size_t i = 0; i < oh->nmsgs; i++)
		n += oh->msgs[i].type == type;
	return n;
}

/* IV.A.2 "Shared Message", versions 1-3, decoded. */
typedef struct shared_ref {
	uint8_t version;
	uint8_t type;           /* 1 SOHM heap, 2 committed (another header) */
	uint64_t addr;          /* committed */
	const uint8_t *heap_id; /* SOHM: 8 bytes */
} shared_ref;

static int shared_decode(shared_ref *out, const h5_fmt *fmt, const h5_msg *m)
{
	h5_rd r;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, m->data, m->size);
	out->version = h5_rd_u8(&r);
	out->type = h5_rd_u8(&r);
	switch (out->version) {
	case 1:
		/* Type byte unused: always a committed message. After 6 reserved
		 * bytes comes what HDF5 1.6 stored as a symbol table entry: the
		 * (meaningless) name offset, then the object header address. */
		out->type = 2;
		h5_rd_skip(&r, 6);
		h5_rd_skip(&r, fmt->sizeof_size);
		out->addr = h5_rd_addr(&r, fmt);
		break;
	case 2:
		/* version 2 only knew committed messages */
		out->type = 2;
		out->addr = h5_rd_addr(&r, fmt);
		break;
	case 3:
		if (out->type == 1)
			out->heap_id = h5_rd_bytes(&r, 8);
		else if (out->type == 2)
			out->addr = h5_rd_addr(&r, fmt);
		else
			/* 0 and 3 mean "not shared": contradicts the shared flag */
			return h5_err_set(H5_ERR_FORMAT, "shared message at 0x%llx: location type %u with shared flag set",
					  (unsigned long long)m->addr, out->type);
		break;
	default:
		return h5_err_set(H5_ERR_FORMAT, "shared message at 0x%llx: bad version %u",
				  (unsigned long long)m->addr, out->version);
	}
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "shared message at 0x%llx: %u bytes is too short",
				  (unsigned long long)m->addr, m->size);
	if (out->type == 2 && !h5_addr_defined(out->addr))
		return h5_err_set(H5_ERR_FORMAT, "shared message at 0x%llx: undefined object header address",
				  (unsigned long long)m->addr);
	return 0;
}

static uint16_t sohm_type_flag(uint16_t type)
{
	switch (type) {
	case H5_MSG_DSPACE: return H5_SOHM_DSPACE;
	case H5_MSG_DTYPE: return H5_SOHM_DTYPE;
	case H5_MSG_FILL_OLD:
	case H5_MSG_FILL: return H5_SOHM_FILL;
	case H5_MSG_PLINE: return H5_SOHM_PLINE;
	case H5_MSG_ATTR: return H5_SOHM_ATTR;
	default: return 0;
	}
}

/* III.I: a message in the SOHM fractal heap of the index tracking its type. */
static int shared_read_sohm(uint8_t **out, size_t *out_len, h5_file *f, uint16_t type, const uint8_t *heap_id)
{
	uint16_t flag = sohm_type_flag(type);
	const h5_sohm_index *ix = NULL;
	h5_fheap *h = NULL;
	int rc;

	for (unsigned i = 0; flag && i < f->sohm_nindexes; i++) {
		if (f->sohm_index[i].mesg_types & flag) {
			ix = &f->sohm_index[i];
			break;
		}
	}
	if (!ix || !h5_addr_defined(ix->heap_addr))
		return h5_err_set(H5_ERR_FORMAT, "message type 0x%x is shared in the SOHM heap but the file has "
				  "no shared message index for it", type);
	rc = h5_fheap_open(&h, f, ix->heap_addr);
	if (rc < 0)
		return h5_err_wrap(rc, "SOHM heap: ");
	rc = h5_fheap_read(out, out_len, h, heap_id, 8);
	h5_fheap_close(h);
	if (rc < 0)
		return h5_err_wrap(rc, "SOHM heap: ");
	return 0;
}

static int msg_read_shared(uint8_t **out, size_t *out_len, h5_file *f, const h5_msg *m, unsigned depth)
{
	shared_ref s;
	h5_ohdr *target = NULL;
	const h5_msg *tm;
	int rc;

	if (depth >= OHDR_SHARED_MAX_DEPTH)
		return h5_err_set(H5_ERR_LOOP, "shared message at 0x%llx: chain of shared messages deeper than %d",
				  (unsigned long long)m->addr, OHDR_SHARED_MAX_DEPTH);
	rc = shared_decode(&s, &f->fmt, m);
	if (rc < 0)
		return rc;
	if (s.type == 1)
		return shared_read_sohm(out, out_len, f, m->type, s.heap_id);

	/* Committed: the first message of the same type in the other header
	 * (e.g. the datatype message of a named datatype). */
	rc = h5_ohdr_get(&target, f, s.addr);
	if (rc < 0)
		return h5_err_wrap(rc, "shared message at 0x%llx: ", (unsigned long long)m->addr);
	tm = h5_ohdr_find(target, m->type);
	if (!tm) {
		rc = h5_err_set(H5_ERR_FORMAT, "shared message at 0x%llx: object header 0x%llx has no message of type 0x%x",
				(unsigned long long)m->addr, (unsigned long long)s.addr, m->type);
	} else if (tm->flags & H5_MSG_FLAG_SHARED) {
		rc = msg_read_shared(out, out_len, f, tm, depth + 1);
	} else {
		*out = malloc(tm->size ? tm->size : 1);
		if (!*out) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory reading shared message");
		} else {
			memcpy(*out, tm->data, tm->size);
			*out_len = tm->size;
		}
	}
	h5_ohdr_release(f, target);
	return rc;
}

int h5_msg_read(const uint8_t **data, size_t *len, void **owned, h5_file *f, const h5_msg *m)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc;

	*data = NULL;
	*len = 0;
	*owned = NULL;
	if (!(m->flags & H5_MSG_FLAG_SHARED)) {
		*data = m->data;
		*len = m->size;
		return 0;
	}
	rc = msg_read_shared(&buf, &n, f, m, 0);
	if (rc < 0)
		return rc;
	*data = buf;
	*len = n;
	*owned = buf;
	return 0;
}
