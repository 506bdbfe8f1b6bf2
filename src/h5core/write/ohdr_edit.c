/*
 * ohdr_edit.c - adding, removing and replacing object header messages
 * (ohdr_edit.h; spec IV.A.1.a/b for the message layouts, IV.A.2.a NIL,
 * IV.A.2.q continuation, doc/MODIFY.md for the crash-safety argument).
 *
 * libhdf5 reads a header as the list of its messages wherever they are:
 * NIL messages are free space, a continuation message names one more
 * chunk. So every change here is either
 *   - a rewrite of a run of free space (and the old message) inside ONE
 *     chunk: one pwrite, which a v2 chunk's checksum closes; or
 *   - a new continuation chunk, written beyond everything referenced,
 *     fsync'd, then referenced by a continuation message written into
 *     one chunk as above (where needed by moving one message aside into
 *     the new chunk: the moved copy becomes visible in the same write that
 *     turns its old place into the continuation message).
 * Before that one write a crash leaves the old header; after it, the new.
 */
#include "ohdr_edit.h"
#include "birthtag.h"
#include <stdio.h>
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "space.h"
#include "txn.h"
#include "loose.h"
#include "file_ws.h"

/* Free space a new continuation chunk keeps for later messages: as much
 * as the header holds already (so a header that grows message by message
 * gets a logarithmic number of chunks), within these bounds. */
#define SLACK_MIN 256
#define SLACK_MAX 32768

static size_t hdr_len(const h5_ohdr *oh)
{
	return oh->version == 1 ? 8 : (oh->flags & 0x04) ? 6 : 4;
}

/* Bytes a message of body bytes takes (v1: 8-byte aligned). */
static size_t total_of(const h5_ohdr *oh, size_t body)
{
	return hdr_len(oh) + (oh->version == 1 ? (body + 7) & ~(size_t)7 : body);
}

/* End of chunk c's message area (v2: before the checksum). */
static size_t area_end(const h5_ohdr *oh, size_t c)
{
	return oh->chunks[c].len - (oh->version == 1 ? 0 : 4);
}

/* Offset in its chunk of message m's header. */
static size_t msg_off(const h5_ohdr *oh, const h5_msg *m)
{
	return (size_t)(m->addr - oh->chunks[m->chunk].addr) - hdr_len(oh);
}

static size_t msg_total(const h5_ohdr *oh, const h5_msg *m)
{
	return hdr_len(oh) + m->size;
}

/* A message of total bytes at p (zero padding after the body). */
static void enc_msg(uint8_t *p, const h5_ohdr *oh, uint16_t type, uint8_t flags, uint16_t crt,
		    const void *body, size_t blen, size_t total)
{
	size_t h = hdr_len(oh);

	memset(p, 0, total);
	if (oh->version == 1) {
		h5_le_encode(p, type, 2);
		h5_le_encode(p + 2, total - h, 2);
		p[4] = flags;
	} else {
		p[0] = (uint8_t)type;
		h5_le_encode(p + 1, total - h, 2);
		p[3] = flags;
		if (h == 6)
			h5_le_encode(p + 4, crt, 2);
	}
	if (body && blen)
		memcpy(p + h, body, blen);
}

/* n bytes of free space: a NIL message, or (v2, too short for a message
 * header, only at a chunk's end) a gap. */
static void enc_free(uint8_t *p, const h5_ohdr *oh, size_t n)
{
	if (n >= hdr_len(oh))
		enc_msg(p, oh, H5_MSG_NIL, 0, 0, NULL, 0, n);
	else
		memset(p, 0, n);
}

/* Can have bytes hold need, the rest staying valid free space? */
static bool fits(const h5_ohdr *oh, size_t have, size_t need, bool at_end)
{
	size_t rest;

	if (have < need)
		return false;
	rest = have - need;
	return rest == 0 || rest >= hdr_len(oh) || (at_end && oh->version != 1);
}

/* A NIL message that is free space: not a birth tag (birthtag.h), which
 * is kept where it is (or copied with messages moved aside) */
static bool free_nil(const h5_msg *m)
{
	return m->type == H5_MSG_NIL && !h5_msg_is_birthtag(m);
}

/* A run of free space in one chunk: NIL messages and the old message, in a
 * row, and (v2) the gap after them at the chunk's end. */
typedef struct run {
	size_t c, off, len;
	size_t first, last;     /* messages in it (first > last: none) */
	bool at_end;
} run;

static bool find_run(run *out, const h5_ohdr *oh, size_t c, size_t old, size_t need)
{
	size_t last_end = SIZE_MAX;
	bool open = false;
	run r = { 0 };

	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		size_t off;

		if (m->chunk != c)
			continue;
		off = msg_off(oh, m);
		last_end = off + msg_total(oh, m);
		if (!free_nil(m) && i != old) {
			if (open && fits(oh, r.len, need, false)) {
				*out = r;
				return true;
			}
			open = false;
			continue;
		}
		if (!open)
			r = (run){ .c = c, .off = off, .first = i };
		open = true;
		r.len = last_end - r.off;
		r.last = i;
	}
	if (!open)
		return false;
	/* the gap of a v2 chunk belongs to the run that ends it */
	if (last_end != SIZE_MAX && area_end(oh, c) > last_end) {
		r.len += area_end(oh, c) - last_end;
		r.at_end = true;
	} else if (last_end == area_end(oh, c)) {
		r.at_end = true;
	}
	if (fits(oh, r.len, need, r.at_end)) {
		*out = r;
		return true;
	}
	return false;
}

int h5_ohdr_change_open(h5_ohdr_change *c, h5_file *f, uint64_t addr)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->main = SIZE_MAX;
	c->start_end = h5_space_end(f);
	c->start_reused = h5_ws(f)->reused;
	rc = h5_ohdr_load(&c->e.oh, f, addr);
	if (rc < 0)
		return rc;
	return h5_ohdr_edit_ranges(&c->e);
}

void h5_ohdr_change_close(h5_ohdr_change *c)
{
	h5_ohdr_free(c->e.oh);
	free(c->e.lo);
	free(c->e.hi);
	memset(c, 0, sizeof(*c));
}

/* Message i becomes a NIL message of the same size. */
static int make_nil(h5_ohdr_change *c, size_t i)
{
	const h5_ohdr *oh = c->e.oh;
	const h5_msg *m = &oh->msgs[i];
	uint64_t at = m->addr - hdr_len(oh);
	uint8_t z[2] = { 0, 0 };
	int rc;

	if (oh->version == 1) {
		rc = h5_ohdr_patch(&c->e, at, z, 2);
		if (rc == 0)
			rc = h5_ohdr_patch(&c->e, at + 4, z, 1);
	} else {
		rc = h5_ohdr_patch(&c->e, at, z, 1);
		if (rc == 0)
			rc = h5_ohdr_patch(&c->e, at + 3, z, 1);
	}
	return rc;
}

/* Write messages m[0..n) (total bytes with their headers) into run r,
 * free space after them; the old message, when outside the run, becomes
 * NIL. */
static int fill_run_n(h5_ohdr_change *c, const run *r, size_t old, const h5_ohdr_new_msg *m, size_t n, size_t total)
{
	const h5_ohdr *oh = c->e.oh;
	uint8_t *tmp = malloc(r->len);
	size_t rest = r->len - total, p = 0;
	int rc;

	if (!tmp)
		return h5_err_set(H5_ERR_NOMEM, "out of memory editing an object header");
	for (size_t i = 0; i < n; i++) {
		size_t t = n == 1 ? total : total_of(oh, m[i].len);

		enc_msg(tmp + p, oh, m[i].type, m[i].flags, m[i].crt, m[i].body, m[i].len, t);
		p += t;
	}
	if (rest)
		enc_free(tmp + total, oh, rest);
	rc = h5_ohdr_patch(&c->e, oh->chunks[r->c].addr + r->off, tmp, r->len);
	free(tmp);
	if (rc == 0 && old != SIZE_MAX && (old < r->first || old > r->last))
		rc = make_nil(c, old);
	c->nmsgs_delta += (int)n + (rest >= hdr_len(oh)) - (r->first <= r->last ? (int)(r->last - r->first + 1) : 0);
	c->main = r->c;
	return rc;
}

static int fill_run(h5_ohdr_change *c, const run *r, size_t old, uint16_t type, uint8_t flags, uint16_t crt,
		    const void *body, size_t blen, size_t total)
{
	h5_ohdr_new_msg one = { .type = type, .flags = flags, .crt = crt, .body = body, .len = blen };

	return fill_run_n(c, r, old, &one, 1, total);
}

/* A new continuation chunk, written now (invisible until referenced):
 * the moved messages' raw bytes (mlen, mcount messages, or none; headers included, they keep
 * their creation order), then the new messages, then free space for later
 * changes. */
static int new_chunk_n(uint64_t *addr, size_t *clen, h5_ohdr_change *c, h5_file *f, const uint8_t *moved,
		       size_t mlen, size_t mcount, const h5_ohdr_new_msg *m, size_t n)
{
	const h5_ohdr *oh = c->e.oh;
	size_t h = hdr_len(oh), head = oh->version == 1 ? 0 : 4, tail = oh->version == 1 ? 0 : 4;
	size_t have = 0, slack, len, p, msgs = 0;
	uint8_t *buf;
	int rc;

	for (size_t i = 0; i < oh->nchunks; i++)
		have += oh->chunks[i].len;
	for (size_t i = 0; i < n; i++)
		msgs += total_of(oh, m[i].len);
	slack = have < SLACK_MIN ? SLACK_MIN : have > SLACK_MAX ? SLACK_MAX : have;
	slack = (slack + 7) & ~(size_t)7;
	if (slack < h)
		slack = h;
	len = head + mlen + msgs + slack + tail;
	buf = calloc(1, len);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory editing an object header");
	p = head;
	if (head)
		memcpy(buf, "OCHK", 4);
	if (mlen)
		memcpy(buf + p, moved, mlen);
	p += mlen;
	for (size_t i = 0; i < n; i++) {
		size_t total = total_of(oh, m[i].len);

		enc_msg(buf + p, oh, m[i].type, m[i].flags, m[i].crt, m[i].body, m[i].len, total);
		p += total;
	}
	enc_free(buf + p, oh, slack);
	if (tail)
		h5_le_encode(buf + len - 4, h5_checksum_metadata(buf, len - 4), 4);
	/* freed space when some holds it (written whole, referenced by
	 * nothing until the commit, which then syncs before its switch:
	 * h5_ws(f)->reused moved): at the allocation end, a group's continuation
	 * chunk made late in a churn pinned FILE's end above megabytes of
	 * freed space (stress-ng's rename and link beside each other: 4.7 MB
	 * of an empty tree) */
	rc = h5_space_take_page(addr, f, len);  /* within a page: rewritten in place later */
	if (rc == 0)
		h5_ohdr_note(f, H5_NOTE_CONT, oh->addr);
	if (rc == 0)
		rc = h5_file_write(f, *addr, buf, len);
	free(buf);
	*clen = len;
	c->nmsgs_delta += (int)n + 1 + (int)mcount;   /* the new messages, the free space, the moved copies */
	return rc;
}

/* The chunks a change may use: the old message's, else every one. */
static bool chunk_allowed(const h5_ohdr *oh, size_t old, size_t ci)
{
	return old == SIZE_MAX || oh->msgs[old].chunk == ci;
}

/* The place of message i with the NIL messages after it (and, v2, the
 * gap when they end the chunk): a run message i can be moved out of. */
static run slot_of(const h5_ohdr *oh, size_t i)
{
	const h5_msg *m = &oh->msgs[i];
	run r = { .c = m->chunk, .off = msg_off(oh, m), .len = msg_total(oh, m), .first = i, .last = i };
	size_t j = i + 1;

	while (j < oh->nmsgs && oh->msgs[j].chunk == m->chunk && free_nil(&oh->msgs[j])) {
		r.len += msg_total(oh, &oh->msgs[j]);
		r.last = j++;
	}
	if (j == oh->nmsgs || oh->msgs[j].chunk != m->chunk) {
		r.len = area_end(oh, m->chunk) - r.off;
		r.at_end = true;
	}
	return r;
}

/* Messages to move aside into the new chunk so that a continuation
 * message (need bytes) takes their place (with the free space after them):
 * in an allowed chunk, not the old one. One message when one will do:
 * attributes first (their place in the header means nothing), then the
 * largest. Else the fewest messages in a row (issue 65: a compact group's
 * first chunk full of short links, none of whose places alone holds the
 * 20-byte continuation message: fsstress's 8 processes making their
 * folders at once in a libver="latest" group, mkdir ENOSPC from the 6th
 * link on). *count: how many messages (the first is the one returned,
 * NIL ones between them included), *len: their bytes. */
static size_t pick_moved(run *out, size_t *count, size_t *len, const h5_ohdr *oh, size_t old, size_t need)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		run r;

		if (i == old || m->type == H5_MSG_NIL || m->type == H5_MSG_CONT || !chunk_allowed(oh, old, m->chunk))
			continue;
		r = slot_of(oh, i);
		if (old != SIZE_MAX && old > r.first && old <= r.last)
			continue;
		if (!fits(oh, r.len, need, r.at_end))
			continue;
		if (best == SIZE_MAX ||
		    (m->type == H5_MSG_ATTR && oh->msgs[best].type != H5_MSG_ATTR) ||
		    ((m->type == H5_MSG_ATTR) == (oh->msgs[best].type == H5_MSG_ATTR) && m->size > oh->msgs[best].size)) {
			best = i;
			*out = r;
		}
	}
	if (best != SIZE_MAX) {
		*count = 1;
		*len = msg_total(oh, &oh->msgs[best]);
		return best;
	}
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];

		if (i == old || m->type == H5_MSG_NIL || m->type == H5_MSG_CONT || !chunk_allowed(oh, old, m->chunk))
			continue;
		for (size_t j = i + 1; j < oh->nmsgs && oh->msgs[j].chunk == m->chunk; j++) {
			run last, r;

			if (j == old || oh->msgs[j].type == H5_MSG_CONT)
				break;
			if (oh->msgs[j].type == H5_MSG_NIL)
				continue;
			last = slot_of(oh, j);
			if (old != SIZE_MAX && old > last.first && old <= last.last)
				break;
			r = (run){ .c = m->chunk, .off = msg_off(oh, m), .first = i, .last = last.last,
				   .at_end = last.at_end };
			r.len = last.off + last.len - r.off;
			if (!fits(oh, r.len, need, r.at_end))
				continue;
			if (best == SIZE_MAX || j - i + 1 < *count) {
				best = i;
				*out = r;
				*count = j - i + 1;
				*len = last.off + msg_total(oh, &oh->msgs[j]) - r.off;
			}
			break;
		}
	}
	return best;
}

/* m[0..n) in one new chunk (h5_ohdr_put's message that fits nowhere, or
 * h5_ohdr_put_many's), its continuation message into free space of a chunk
 * the change may use, or in the place of a message moved into the new
 * chunk. need: the bytes asked for (the refusal's message). */
static int via_new_chunk(h5_ohdr_change *c, h5_file *f, size_t old, const h5_ohdr_new_msg *m, size_t n,
			 size_t need)
{
	const h5_ohdr *oh = c->e.oh;
	const h5_fmt *fmt = &f->fmt;
	size_t cont_len = (size_t)fmt->sizeof_addr + fmt->sizeof_size, cont_total = total_of(oh, cont_len);
	size_t clen = 0, rawlen = 0, nmoved = 0;
	const uint8_t *raw = NULL;
	uint64_t caddr = H5_ADDR_UNDEF;
	uint8_t cont[16];
	bool room = false;
	run r;
	int rc;

	for (size_t ci = 0; ci < oh->nchunks && !room; ci++)
		room = chunk_allowed(oh, old, ci) && find_run(&r, oh, ci, old, cont_total);
	if (!room) {
		size_t moved = pick_moved(&r, &nmoved, &rawlen, oh, old, cont_total);

		if (moved == SIZE_MAX)
			return h5_err_set(H5_ERR_NOSPC, "object header 0x%llx: no room for %zu bytes of messages, and no "
					  "message to move aside", (unsigned long long)oh->addr, need);
		raw = oh->chunks[oh->msgs[moved].chunk].buf + msg_off(oh, &oh->msgs[moved]);
	}
	rc = new_chunk_n(&caddr, &clen, c, f, raw, rawlen, nmoved, m, n);
	if (rc < 0)
		return rc;
	h5_le_encode(cont, caddr, fmt->sizeof_addr);
	h5_le_encode(cont + fmt->sizeof_addr, clen, fmt->sizeof_size);
	return fill_run(c, &r, old, H5_MSG_CONT, 0, 0, cont, cont_len, cont_total);
}

int h5_ohdr_put(h5_ohdr_change *c, h5_file *f, size_t old, uint16_t type, uint8_t flags, uint16_t crt,
		const void *body, size_t len)
{
	const h5_ohdr *oh = c->e.oh;
	h5_ohdr_new_msg one = { .type = type, .flags = flags, .crt = crt, .body = body, .len = len };
	size_t total;
	run r;

	if (c->main != SIZE_MAX)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: one message change per commit",
				  (unsigned long long)oh->addr);
	if (old != SIZE_MAX && old >= oh->nmsgs)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: no message %zu", (unsigned long long)oh->addr, old);
	if (!body) {
		if (old == SIZE_MAX)
			return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: nothing to remove", (unsigned long long)oh->addr);
		c->main = oh->msgs[old].chunk;
		return make_nil(c, old);
	}
	if (len > 65535 - 8)
		return h5_err_set(H5_ERR_NOSPC, "object header 0x%llx: a message of %zu bytes is larger than a header "
				  "message can be (64 KiB)", (unsigned long long)oh->addr, len);
	total = total_of(oh, len);
	for (size_t ci = 0; ci < oh->nchunks; ci++)
		if (chunk_allowed(oh, old, ci) && find_run(&r, oh, ci, old, total))
			return fill_run(c, &r, old, type, flags, crt, body, len, total);
	/* a new chunk: its continuation message goes into free space, or in
	 * the place of a message moved into the new chunk */
	return via_new_chunk(c, f, old, &one, 1, len);
}

/* The checks of a put of n new messages (one change per commit, each
 * message's size): 0 and their bodies' sum and what they take with their
 * message headers, or an h5_err. */
static int new_msgs_check(size_t *sum, size_t *total, const h5_ohdr_change *c, const h5_ohdr_new_msg *m, size_t n)
{
	const h5_ohdr *oh = c->e.oh;

	*sum = *total = 0;
	if (c->main != SIZE_MAX)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: one message change per commit",
				  (unsigned long long)oh->addr);
	for (size_t i = 0; i < n; i++) {
		if (!m[i].body || m[i].len > 65535 - 8)
			return h5_err_set(H5_ERR_NOSPC, "object header 0x%llx: a message of %zu bytes is larger than a "
					  "header message can be (64 KiB)", (unsigned long long)oh->addr, m[i].len);
		*sum += m[i].len;
		*total += total_of(oh, m[i].len);
	}
	return 0;
}

int h5_ohdr_put_many(h5_ohdr_change *c, h5_file *f, const h5_ohdr_new_msg *m, size_t n)
{
	size_t sum, total;
	int rc = new_msgs_check(&sum, &total, c, m, n);

	return rc < 0 ? rc : via_new_chunk(c, f, SIZE_MAX, m, n, sum);
}

int h5_ohdr_put_new(h5_ohdr_change *c, h5_file *f, const h5_ohdr_new_msg *m, size_t n)
{
	const h5_ohdr *oh = c->e.oh;
	size_t sum, total;
	run r;
	int rc = new_msgs_check(&sum, &total, c, m, n);

	if (rc < 0)
		return rc;
	/* free space of one chunk first, as h5_ohdr_put does: a new chunk
	 * per batch would leave the last one's slack unused */
	for (size_t ci = 0; ci < oh->nchunks; ci++)
		if (find_run(&r, oh, ci, SIZE_MAX, total))
			return fill_run_n(c, &r, SIZE_MAX, m, n, total);
	return via_new_chunk(c, f, SIZE_MAX, m, n, sum);
}

int h5_ohdr_aux(h5_ohdr_change *c, uint64_t addr, const void *bytes, size_t n)
{
	return h5_ohdr_patch(&c->e, addr, bytes, n);
}

/* The type field leads the message header (IV.A.1.a: 2 bytes in v1;
 * IV.A.1.b: 1 byte in v2), hdr_len bytes before the body. */
int h5_ohdr_aux_nil(h5_ohdr_change *c, size_t msg)
{
	const h5_ohdr *oh = c->e.oh;
	uint8_t zero[2] = { 0, 0 };

	if (msg >= oh->nmsgs)
		return h5_err_set(H5_ERR_INVAL, "no message %zu", msg);
	return h5_ohdr_patch(&c->e, oh->msgs[msg].addr - hdr_len(oh), zero, oh->version == 1 ? 2 : 1);
}

/* libhdf5 1.14 refuses a v2 chunk that ends in a gap (free space too
 * short for a message header) while it also holds a NIL message (H5Ocache.c
 * H5O__chunk_deserialize; 1.10 reads it): libhdf5 never writes one, as it
 * merges a gap into a NIL message (H5O__eliminate_gap). So do we, before
 * the commit writes the chunk (whole, as v2 chunks are): the last NIL
 * message moves to the chunk's end, the messages after it move up, and it
 * takes the gap. */
static void merge_gap(h5_ohdr_change *c, size_t ci)
{
	h5_ohdr *oh = c->e.oh;
	uint8_t *buf = oh->chunks[ci].buf;
	size_t h = hdr_len(oh), start = SIZE_MAX, end = area_end(oh, ci), p, nil = SIZE_MAX, nil_total = 0;
	size_t last = SIZE_MAX, gap;
	uint8_t tag[H5_BIRTHTAG_LEN];
	bool tagged = false;

	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].chunk == ci && msg_off(oh, &oh->msgs[i]) < start)
			start = msg_off(oh, &oh->msgs[i]);
	if (start == SIZE_MAX)
		return;
	for (p = start; end - p >= h;) {
		size_t total = h + (size_t)h5_le_decode(buf + p + 1, 2);

		if (total > end - p)
			return;         /* not ours to mend: the reader says what is wrong */
		/* a free NIL message, else a birth tag (which keeps its body:
		 * a header of ours has no other NIL once its free space is
		 * taken) */
		if (buf[p] == H5_MSG_NIL && (!h5_birthtag_decode(buf + p + h, total - h) || nil == SIZE_MAX || tagged)) {
			tagged = h5_birthtag_decode(buf + p + h, total - h) != 0;
			nil = p;
			nil_total = total;
		}
		last = p;
		p += total;
	}
	gap = end - p;
	if (gap == 0 || nil == SIZE_MAX)
		return;
	if (tagged)
		memcpy(tag, buf + nil + h, sizeof(tag));
	if (nil != last) {
		memmove(buf + nil, buf + nil + nil_total, p - (nil + nil_total));
		nil = p - nil_total;
	}
	enc_msg(buf + nil, oh, H5_MSG_NIL, 0, 0, tagged ? tag : NULL, tagged ? sizeof(tag) : 0, nil_total + gap);
	if (c->e.lo[ci] == SIZE_MAX || c->e.lo[ci] > nil)
		c->e.lo[ci] = nil;
	c->e.hi[ci] = oh->chunks[ci].len;
}

int h5_ohdr_commit(h5_ohdr_change *c, h5_file *f, bool durable)
{
	h5_ohdr *oh = c->e.oh;
	h5_txn t;
	bool loose;
	int rc = 0;

	if (c->main == SIZE_MAX)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: nothing to commit", (unsigned long long)oh->addr);
	/* v1: the prefix counts the messages (libhdf5 only checks it under
	 * strict format checks, and repairs it when it writes): a side change */
	if (oh->version == 1 && c->nmsgs_delta) {
		uint8_t v[2];
		long n = (long)oh->nmsgs + c->nmsgs_delta;

		h5_le_encode(v, n < 0 ? 0 : n > 65535 ? 65535 : (uint64_t)n, 2);
		rc = h5_ohdr_patch(&c->e, oh->addr + 2, v, 2);
	}
	for (size_t i = 0; oh->version >= 2 && i < oh->nchunks; i++)
		if (c->e.lo[i] != SIZE_MAX)
			merge_gap(c, i);
	loose = h5_loose_enter(f, oh->addr);     /* a new file not linked yet (loose.h) */
	h5_txn_begin(&t, f, durable, NULL, NULL);
	if (rc == 0 && (h5_space_end(f) != c->start_end || h5_space_end(f) > f->eoa || h5_ws(f)->reused != c->start_reused)) {
		/* new space: durable and inside the EOF address before the switch */
		rc = h5_txn_stage(&t, c->start_end);
	} else {
		t.end = h5_space_end(f);
	}
	/* A chunk is written whole: two commits without an fsync between
	 * them may both rewrite it, and after a power cut the later write must
	 * not land without an earlier one - a v2 chunk's checksum would cover
	 * bytes that did not land; a v1 chunk's message would overwrite the
	 * middle of one the earlier write had moved out of the way (two new
	 * string attributes of one batch in a full v1 header: the second
	 * written into the first's NIL space, over an attribute the first had
	 * moved to a new chunk; libhdf5 crashed reading it; test_attr_crash's
	 * MOVE_DOWN_COLL_OPS). Each write carries the whole chunk. */
	for (size_t i = 0; i < oh->nchunks; i++)
		if (c->e.lo[i] != SIZE_MAX) {
			c->e.lo[i] = 0;
			c->e.hi[i] = oh->chunks[i].len;
		}
	for (size_t i = 0; rc == 0 && i < oh->nchunks; i++)
		if (i != c->main)
			rc = h5_ohdr_write_chunk(f, &c->e, i);
	if (rc == 0)
		rc = h5_txn_last(&t, &c->e, c->main);
	c->ticket = t.ticket;
	h5_loose_leave(f, loose);
	h5_cache_invalidate(f->meta, H5_CK_OHDR, oh->addr);
	return rc;
}

/* ---- changes in several chunks at once ----------------------------------------- */

int h5_ohdr_nil(h5_ohdr_change *c, size_t i)
{
	if (i >= c->e.oh->nmsgs)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: no message %zu", (unsigned long long)c->e.oh->addr, i);
	return make_nil(c, i);
}

int h5_ohdr_rewrite(h5_ohdr_change *c, size_t i, const void *body, size_t len)
{
	const h5_ohdr *oh = c->e.oh;

	if (i >= oh->nmsgs || oh->msgs[i].size != len)
		return h5_err_set(H5_ERR_INVAL, "object header 0x%llx: message %zu is not %zu bytes",
				  (unsigned long long)oh->addr, i, len);
	return h5_ohdr_patch(&c->e, oh->msgs[i].addr, body, len);
}

/* The chunk a continuation message names (SIZE_MAX: none of oh's). */
static size_t cont_target(const h5_ohdr *oh, const h5_fmt *fmt, const h5_msg *m)
{
	uint64_t at;
	size_t j;

	if (m->type != H5_MSG_CONT || m->size < fmt->sizeof_addr)
		return SIZE_MAX;
	at = h5_le_decode(m->data, fmt->sizeof_addr);
	for (j = 1; j < oh->nchunks && oh->chunks[j].addr != at; j++)
		;
	return j < oh->nchunks ? j : SIZE_MAX;
}

/* Message m's type as the patches left it (a v2 header's one-byte type
 * field, IV.A.1.b). */
static unsigned type_now(const h5_ohdr *oh, const h5_msg *m)
{
	const h5_ohdr_chunk *k = &oh->chunks[m->chunk];
	uint64_t at = m->addr - hdr_len(oh);

	return at >= k->addr && at - k->addr < k->len ? k->buf[at - k->addr] : m->type;
}

/* drop[j]: continuation chunk j holds nothing once the patches are made
 * (NIL messages but birth tags, and continuation messages naming dropped
 * chunks), so the copy leaves it out and the message naming it becomes
 * NIL. Without it a group moving between compact and dense storage kept
 * every chunk its links had filled: 3,000 mkdir and rmdir beside eight
 * neighbours grew its header to megabytes of NIL messages (issue 81).
 * Version 2 headers only: a version 1 prefix counts its messages. */
static void empty_chunks(bool *drop, const h5_ohdr *oh, const h5_fmt *fmt)
{
	bool more = oh->version >= 2;

	while (more) {
		more = false;
		for (size_t j = 1; j < oh->nchunks; j++) {
			bool empty = !drop[j];

			for (size_t i = 0; empty && i < oh->nmsgs; i++) {
				const h5_msg *m = &oh->msgs[i];
				size_t t;

				if (m->chunk != j)
					continue;
				if (type_now(oh, m) == H5_MSG_NIL)
					empty = !h5_msg_is_birthtag(m);
				else
					empty = type_now(oh, m) == H5_MSG_CONT && (t = cont_target(oh, fmt, m)) != SIZE_MAX &&
						drop[t];
			}
			if (empty)
				drop[j] = more = true;
		}
	}
}

/* Every continuation chunk gets a new place: the continuation messages
 * (IV.A.2.q) name the copies, which are written whole and durable before
 * chunk 0, where every chain starts, switches to them in its one write.
 * Chunks left empty are not copied (empty_chunks). */
int h5_ohdr_commit_cow(h5_ohdr_change *c, h5_file *f, bool durable)
{
	h5_ohdr *oh = c->e.oh;
	const h5_fmt *fmt = &f->fmt;
	uint64_t *naddr = NULL, *oaddr;
	bool *drop = NULL;
	size_t patched = 0, last = 0;
	int rc = 0;

	for (size_t i = 0; i < oh->nchunks; i++)
		if (c->e.lo[i] != SIZE_MAX) {
			patched++;
			last = i;
		}
	if (patched <= 1) {
		/* one chunk: its one write is the switch, nothing to copy */
		c->main = last;
		return h5_ohdr_commit(c, f, durable);
	}
	naddr = calloc(2 * oh->nchunks, sizeof(*naddr));
	drop = calloc(oh->nchunks, sizeof(*drop));
	if (!naddr || !drop) {
		free(naddr);
		free(drop);
		return h5_err_set(H5_ERR_NOMEM, "out of memory editing an object header");
	}
	oaddr = naddr + oh->nchunks;
	empty_chunks(drop, oh, fmt);
	/* each copy is written whole below: freed space may take it */
	for (size_t i = 1; rc == 0 && i < oh->nchunks; i++) {
		oaddr[i] = oh->chunks[i].addr;
		if (!drop[i])
			rc = h5_space_take_page(&naddr[i], f, oh->chunks[i].len);
	}
	if (rc == 0 && oh->nchunks > 1)
		h5_ohdr_note(f, H5_NOTE_CONT, oh->addr);
	for (size_t i = 0; rc == 0 && i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		size_t j = cont_target(oh, fmt, m);
		uint8_t v[8];

		if (j == SIZE_MAX || drop[m->chunk])
			continue;
		if (drop[j]) {
			rc = make_nil(c, i);
			continue;
		}
		h5_le_encode(v, naddr[j], fmt->sizeof_addr);
		rc = h5_ohdr_patch(&c->e, m->addr, v, fmt->sizeof_addr);
	}
	/* each copy written whole at its new place (h5_ohdr_write_chunk: the
	 * v2 checksum too), which leaves it clean for the commit below; the
	 * chunk moves only after merge_gap, which finds messages by their
	 * old addresses. A dropped chunk is written nowhere: never in place,
	 * where the old header still names it until chunk 0's write */
	for (size_t i = 1; rc == 0 && i < oh->nchunks; i++) {
		if (drop[i]) {
			c->e.lo[i] = c->e.hi[i] = SIZE_MAX;
			continue;
		}
		c->e.lo[i] = 0;
		c->e.hi[i] = oh->chunks[i].len;
		if (oh->version >= 2)
			merge_gap(c, i);
		oh->chunks[i].addr = naddr[i];
		rc = h5_ohdr_write_chunk(f, &c->e, i);
	}
	if (rc < 0) {
		free(naddr);
		free(drop);
		h5_cache_invalidate(f->meta, H5_CK_OHDR, oh->addr);
		return rc;
	}
	c->main = 0;
	rc = h5_ohdr_commit(c, f, durable);
	/* done: the old continuation chunks are referenced by nothing once
	 * chunk 0's write is durable (doc/DESIGN.md "Free space") */
	for (size_t i = 1; rc == 0 && i < oh->nchunks; i++)
		h5_space_free(f, oaddr[i], oh->chunks[i].len, c->ticket);
	free(naddr);
	free(drop);
	return rc;
}
