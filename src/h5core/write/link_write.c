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

int h5_link_insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type,
		   uint64_t addr, const char *target, int durable)
{
	h5_ohdr_change c;
	h5_linfo li = { 0 };
	h5_link l = { 0 };
	size_t nlinks = 0, linfo = SIZE_MAX, mlen = 0;
	unsigned max_compact;
	uint8_t *msg = NULL;
	bool ascii = true;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (name_len == 0 || memchr(name, 0, name_len) || memchr(name, '/', name_len) ||
	    (name_len == 1 && name[0] == '.'))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" cannot be a link name", (int)name_len, name);
	for (size_t i = 0; i < name_len; i++)
		ascii &= (unsigned char)name[i] < 0x80;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, group);
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
	pthread_mutex_unlock(&f->write_lock);
	free(msg);
	return rc;
}
