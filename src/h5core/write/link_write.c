/*
 * link_write.c - adding a link to a group in compact link storage (link
 * messages in its v2 object header; h5core.h "adding links"): one object
 * header change (ohdr_edit.c), so crash-safe as attribute changes are
 * (doc/MODIFY.md).
 *
 * Not written: symbol-table groups (a local heap and a v1 B-tree of symbol
 * nodes, what libhdf5 writes by default) and dense link storage (a fractal
 * heap); a compact group at libhdf5's limit (its Group Info message's
 * "maximum compact", 8 by default: libhdf5 would go dense) is refused too.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "checksum.h"
#include "space.h"

#include <time.h>

#define MAX_COMPACT_LINKS_DEFAULT 8     /* libhdf5's H5G_CRT_GINFO_MAX_COMPACT */

/* The group's compact storage: its links counted, NAME looked for, the
 * Link Info message (index, max creation order), the compact limit. */
static int scan(size_t *nlinks, size_t *linfo, h5_linfo *li, unsigned *max_compact, h5_file *f, const h5_ohdr *oh,
		const char *name, size_t name_len)
{
	*nlinks = 0;
	*linfo = SIZE_MAX;
	*max_compact = MAX_COMPACT_LINKS_DEFAULT;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		int rc;

		if (m->flags & H5_MSG_FLAG_SHARED)
			continue;
		if (m->type == H5_MSG_STAB)
			return h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx is a symbol-table group (libhdf5's default "
					  "format), whose links h5fs does not write", (unsigned long long)oh->addr);
		if (m->type == H5_MSG_LINFO) {
			rc = h5_linfo_decode(li, &f->fmt, m->data, m->size);
			if (rc < 0)
				return rc;
			if (h5_addr_defined(li->fheap_addr))
				return h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx keeps its links in dense storage (a "
						  "fractal heap), which h5fs does not write", (unsigned long long)oh->addr);
			*linfo = i;
		} else if (m->type == H5_MSG_GINFO && m->size >= 6 && (m->data[1] & 0x01)) {
			*max_compact = (unsigned)h5_le_decode(m->data + 2, 2);
		} else if (m->type == H5_MSG_LINK) {
			h5_link l;

			rc = h5_link_decode(&l, m->data, m->size, &f->fmt);
			if (rc < 0)
				return rc;
			(*nlinks)++;
			rc = l.name_len == name_len && memcmp(l.name, name, name_len) == 0;
			h5_link_clear(&l);
			if (rc)
				return h5_err_set(H5_ERR_INVAL, "group 0x%llx has a link \"%.*s\" already",
						  (unsigned long long)oh->addr, (int)name_len, name);
		}
	}
	if (*linfo == SIZE_MAX)
		return h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx is no group with compact link storage",
				  (unsigned long long)oh->addr);
	return 0;
}

static int link_name_check(const char *name, size_t name_len)
{
	if (name_len == 0 || memchr(name, 0, name_len) || memchr(name, '/', name_len) ||
	    (name_len == 1 && name[0] == '.') || (name_len == 2 && name[0] == '.' && name[1] == '.'))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" cannot be a link name", (int)name_len, name);
	return 0;
}

/* Under write_lock. start: the allocation end before the caller wrote new
 * space this link makes visible (UINT64_MAX: none), so that the commit
 * makes it durable first. */
static int insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type, uint64_t addr,
		  const char *target, int durable, uint64_t start)
{
	h5_ohdr_change c;
	h5_linfo li = { 0 };
	h5_link l = { 0 };
	size_t nlinks = 0, linfo = SIZE_MAX, mlen = 0;
	unsigned max_compact;
	uint8_t *msg = NULL;
	bool ascii = true;
	int rc;

	for (size_t i = 0; i < name_len; i++)
		ascii &= (unsigned char)name[i] < 0x80;
	rc = h5_ohdr_change_open(&c, f, group);
	if (start != UINT64_MAX)
		c.start_end = start;
	if (rc == 0)
		rc = scan(&nlinks, &linfo, &li, &max_compact, f, c.e.oh, name, name_len);
	if (rc == 0 && nlinks >= max_compact)
		rc = h5_err_set(H5_ERR_NOSPC, "group 0x%llx has %zu links, as many as its compact storage holds "
				"(libhdf5 would move them to dense storage, which h5fs does not write)",
				(unsigned long long)group, nlinks);
	if (rc < 0)
		goto out;
	l.name = (char *)name;
	l.name_len = name_len;
	l.type = type;
	l.addr = addr;
	l.target = (char *)target;
	l.cset = ascii ? 0 : 1;
	if (li.track_corder) {
		/* the next creation order; the Link Info message's maximum moves
		 * first (a side change: a gap is harmless) */
		uint8_t v[8];

		l.has_corder = 1;
		l.corder = li.max_corder;
		h5_le_encode(v, (uint64_t)li.max_corder + 1, 8);
		rc = h5_ohdr_aux(&c, c.e.oh->msgs[linfo].addr + 2, v, 8);
	}
	if (rc == 0)
		rc = h5_link_encode(&msg, &mlen, &f->fmt, &l);
	if (rc == 0)
		rc = h5_ohdr_put(&c, f, SIZE_MAX, H5_MSG_LINK, 0, 0, msg, mlen);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, durable);
out:
	h5_ohdr_change_close(&c);
	free(msg);
	return rc;
}

int h5_link_insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type,
		   uint64_t addr, const char *target, int durable)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	rc = link_name_check(name, name_len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	rc = insert(f, group, name, name_len, type, addr, target, durable, UINT64_MAX);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* ---- a new group ----------------------------------------------------------------
 * A version 2 object header as libhdf5 makes for a group of the latest
 * format (IV.A.1.b; times stored): an empty Link Info message (compact
 * storage), a Group Info message, an empty Attribute Info message, and
 * free space; written at the allocation end, then linked (one commit:
 * the link makes it visible). */
#define NEWGRP_ROOM 128

static int new_group(uint64_t *addr, h5_file *f)
{
	const h5_fmt *fmt = &f->fmt;
	uint8_t b[512];
	size_t a = fmt->sizeof_addr, p = 0, msgs = (4 + 2 + 2 * a) * 2 + (4 + 2) + NEWGRP_ROOM, total;
	uint32_t now = (uint32_t)time(NULL);
	int rc;

	memcpy(b, "OHDR", 4);
	b[4] = 2;
	b[5] = 0x20 | 0x01;             /* times stored; chunk 0 size in 2 bytes */
	p = 6;
	for (int i = 0; i < 4; i++, p += 4)
		h5_le_encode(b + p, now, 4);
	h5_le_encode(b + p, msgs, 2);
	p += 2;
	/* Link Info: version 0, no creation order, no fractal heap, no index */
	b[p] = H5_MSG_LINFO; h5_le_encode(b + p + 1, 2 + 2 * a, 2); b[p + 3] = 0;
	p += 4;
	b[p] = 0; b[p + 1] = 0;
	memset(b + p + 2, 0xff, 2 * a);
	p += 2 + 2 * a;
	/* Group Info: version 0, defaults (flags 0); constant */
	b[p] = H5_MSG_GINFO; h5_le_encode(b + p + 1, 2, 2); b[p + 3] = H5_MSG_FLAG_CONSTANT;
	p += 4;
	b[p] = 0; b[p + 1] = 0;
	p += 2;
	/* Attribute Info: version 0, no creation order, no dense storage */
	b[p] = H5_MSG_AINFO; h5_le_encode(b + p + 1, 2 + 2 * a, 2); b[p + 3] = 0x04;
	p += 4;
	b[p] = 0; b[p + 1] = 0;
	memset(b + p + 2, 0xff, 2 * a);
	p += 2 + 2 * a;
	/* free space */
	b[p] = H5_MSG_NIL; h5_le_encode(b + p + 1, NEWGRP_ROOM - 4, 2); b[p + 3] = 0;
	memset(b + p + 4, 0, NEWGRP_ROOM - 4);
	p += NEWGRP_ROOM;
	total = p + 4;
	h5_le_encode(b + p, h5_checksum_metadata(b, p), 4);
	rc = h5_space_alloc(addr, f, total);
	if (rc == 0)
		rc = h5_file_write(f, *addr, b, total);
	return rc;
}

int h5_group_create(uint64_t *addr, h5_file *f, uint64_t parent, const char *name, size_t name_len)
{
	uint64_t start;
	int rc;

	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	rc = link_name_check(name, name_len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	start = h5_space_end(f);
	rc = new_group(addr, f);
	if (rc == 0)
		rc = insert(f, parent, name, name_len, H5_LINK_HARD, *addr, NULL, 0, start);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* ---- removing a link ------------------------------------------------------------ */

/* The v2 reference count of the object at addr (IV.A.2.w; none: 1), and
 * where its count field is (UNDEF: no message, or a v1 prefix at addr+4). */
static int refcount_of(uint32_t *n, uint64_t *field, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	const h5_msg *m;
	int rc = h5_ohdr_load(&oh, f, addr);

	if (rc < 0)
		return rc;
	*n = oh->refcount;
	*field = H5_ADDR_UNDEF;
	if (oh->version == 1)
		*field = addr + 4;
	else if ((m = h5_ohdr_find(oh, H5_MSG_REFCOUNT)) != NULL && !(m->flags & H5_MSG_FLAG_SHARED) && m->size >= 5)
		*field = m->addr + 1;
	h5_ohdr_free(oh);
	return 0;
}

int h5_link_delete(h5_file *f, uint64_t group, const char *name, size_t name_len, int want)
{
	h5_ohdr_change c = { 0 };
	size_t idx = SIZE_MAX;
	uint64_t target = H5_ADDR_UNDEF;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, group);
	for (size_t i = 0; rc == 0 && i < c.e.oh->nmsgs; i++) {
		const h5_msg *m = &c.e.oh->msgs[i];
		h5_link l;

		if (m->type == H5_MSG_STAB)
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx is a symbol-table group (libhdf5's default "
					"format), whose links h5fs does not write", (unsigned long long)group);
		if (m->type == H5_MSG_LINFO) {
			h5_linfo li;

			rc = h5_linfo_decode(&li, &f->fmt, m->data, m->size);
			if (rc == 0 && h5_addr_defined(li.fheap_addr))
				rc = h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx keeps its links in dense storage",
						(unsigned long long)group);
		}
		if (rc < 0 || m->type != H5_MSG_LINK || (m->flags & H5_MSG_FLAG_SHARED))
			continue;
		rc = h5_link_decode(&l, m->data, m->size, &f->fmt);
		if (rc == 0 && l.name_len == name_len && memcmp(l.name, name, name_len) == 0 && idx == SIZE_MAX) {
			idx = i;
			if (l.type == H5_LINK_HARD)
				target = l.addr;
		}
		h5_link_clear(&l);
	}
	if (rc == 0 && idx == SIZE_MAX)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%.*s\"", (int)name_len, name);
	if (rc == 0 && want) {
		/* want 1: a group, and an empty one (rmdir); 2: not a group (unlink) */
		h5_ohdr *oh = NULL;
		bool is_group = false, empty = true;

		if (!h5_addr_defined(target)) {
			rc = want == 1 ? h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name) : 0;
		} else if ((rc = h5_ohdr_load(&oh, f, target)) == 0) {
			for (size_t i = 0; i < oh->nmsgs; i++) {
				uint16_t t = oh->msgs[i].type;

				is_group |= t == H5_MSG_STAB || t == H5_MSG_LINFO;
				if (t == H5_MSG_LINK)
					empty = false;
				if (t == H5_MSG_STAB || (t == H5_MSG_LINFO && oh->msgs[i].size >= 10 &&
							 h5_addr_defined(h5_le_decode(oh->msgs[i].data + 2 +
								((oh->msgs[i].data[1] & 1) ? 8 : 0), f->fmt.sizeof_addr))))
					empty = false;  /* symbol table or dense links: not looked into */
			}
			h5_ohdr_free(oh);
			if (want == 1 && !is_group)
				rc = h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name);
			else if (want == 1 && !empty)
				rc = h5_err_set(H5_ERR_PERM, "group \"%.*s\" is not empty", (int)name_len, name);
			else if (want == 2 && is_group)
				rc = h5_err_set(H5_ERR_PERM, "\"%.*s\" is a group", (int)name_len, name);
		}
	}
	if (rc == 0)
		rc = h5_ohdr_put(&c, f, idx, 0, 0, 0, NULL, 0);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, false);
	h5_ohdr_change_close(&c);
	/* then, when the object has other links, its count drops (after the
	 * link went: a crash between leaves the count too high, which only
	 * keeps the object when its last link goes) */
	if (rc == 0 && h5_addr_defined(target)) {
		uint32_t n = 1;
		uint64_t field = H5_ADDR_UNDEF;

		if (refcount_of(&n, &field, f, target) == 0 && n > 1 && h5_addr_defined(field)) {
			uint8_t v[4];

			h5_le_encode(v, n - 1, 4);
			if (h5_ohdr_change_open(&c, f, target) == 0 && h5_ohdr_aux(&c, field, v, 4) == 0) {
				c.main = h5_ohdr_chunk_of(c.e.oh, field);
				rc = h5_ohdr_commit(&c, f, false);
			}
			h5_ohdr_change_close(&c);
		}
		h5_err_clear();
	}
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
