/*
 * link_compact.c - links kept as Link messages in the group's own object
 * header (compact link storage, spec IV.A.2.g, with the Link Info message
 * IV.A.2.c and the Group Info message IV.A.2.f): the "compact" entry of
 * link_store.h's table. Each change is one object header change
 * (ohdr_edit.c), so crash-safe as attribute changes are (doc/MODIFY.md).
 *
 * A group at libhdf5's compact limit (its Group Info message's "maximum
 * compact", 8 by default) moves to dense storage when a link is added, as
 * libhdf5 does (link_dense.c h5_link_dense_convert) - unless one of its
 * links (or the new one) is larger than a new dense store keeps in place
 * (H5_DENSE_MAX_MAN: a soft link of a ~4 KiB target), which would be a
 * huge heap object, which h5fs does not write. Then the group stays
 * compact past its limit: the format has no bound on a header's Link
 * messages (libhdf5 reads such a group as any compact one, and moves it
 * to dense storage itself at its next insert), so the create is stored
 * and never refused, here or at a batch's commit after its answer.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "birthtag.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "link_store.h"
#include "dense_write.h"
#include "checksum.h"
#include "space.h"
#include "txn.h"

#include <time.h>

#define MAX_COMPACT_LINKS_DEFAULT 8     /* libhdf5's H5G_CRT_GINFO_MAX_COMPACT */

/* The group's compact storage: its links counted, NAME's message (SIZE_MAX:
 * none; name NULL: not looked for), the Link Info message (index) and its
 * contents, the compact limit. */
static int scan(size_t *nlinks, size_t *found, size_t *linfo, h5_linfo *li, unsigned *max_compact, h5_file *f,
		const h5_ohdr *oh, const char *name, size_t name_len)
{
	*nlinks = 0;
	*found = SIZE_MAX;
	*linfo = SIZE_MAX;
	*max_compact = MAX_COMPACT_LINKS_DEFAULT;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		int rc;

		if (m->flags & H5_MSG_FLAG_SHARED)
			continue;
		if (m->type == H5_MSG_LINFO) {
			rc = h5_linfo_decode(li, &f->fmt, m->data, m->size);
			if (rc < 0)
				return rc;
			*linfo = i;
		} else if (m->type == H5_MSG_GINFO && m->size >= 6 && (m->data[1] & 0x01)) {
			*max_compact = (unsigned)h5_le_decode(m->data + 2, 2);
		} else if (m->type == H5_MSG_LINK) {
			h5_link l;

			rc = h5_link_decode(&l, m->data, m->size, &f->fmt);
			if (rc < 0)
				return rc;
			(*nlinks)++;
			if (name && *found == SIZE_MAX && l.name_len == name_len && memcmp(l.name, name, name_len) == 0)
				*found = i;
			h5_link_clear(&l);
		}
	}
	if (*linfo == SIZE_MAX)
		return h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx is no group with compact link storage",
				  (unsigned long long)oh->addr);
	return 0;
}

/* Whether dense storage made now would keep every link of the group and
 * the new one (of mlen bytes) in its heap. */
static bool dense_holds(const h5_ohdr *oh, size_t mlen)
{
	if (mlen > H5_DENSE_MAX_MAN)
		return false;
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_LINK && oh->msgs[i].size > H5_DENSE_MAX_MAN)
			return false;
	return true;
}

static int compact_insert(h5_file *f, uint64_t group, const h5_link *link, uint64_t start, bool durable)
{
	h5_ohdr_change c;
	h5_linfo li = { 0 };
	h5_link l = *link, cl;
	size_t nlinks = 0, found, linfo = SIZE_MAX, mlen = 0;
	unsigned max_compact;
	uint8_t *msg = NULL;
	int rc;

	rc = h5_ohdr_change_open(&c, f, group);
	if (start != UINT64_MAX)
		c.start_end = start;
	if (rc == 0)
		rc = scan(&nlinks, &found, &linfo, &li, &max_compact, f, c.e.oh, l.name, l.name_len);
	if (rc == 0 && found != SIZE_MAX)
		rc = h5_err_set(H5_ERR_INVAL, "group 0x%llx has a link \"%.*s\" already", (unsigned long long)group,
				(int)l.name_len, l.name);
	if (rc < 0)
		goto out;
	/* the message as it would be stored here (with the next creation
	 * order where tracked): its size also decides the move to dense
	 * storage, which takes the link as given */
	cl = l;
	cl.has_corder = li.track_corder;
	cl.corder = li.track_corder ? li.max_corder : 0;
	rc = h5_link_encode(&msg, &mlen, &f->fmt, &cl);
	if (rc == 0 && nlinks >= max_compact && dense_holds(c.e.oh, mlen)) {
		rc = h5_link_dense_convert(&c, f, &li, linfo, &l, durable);
		goto out;
	}
	if (rc == 0 && li.track_corder) {
		/* the next creation order; the Link Info message's maximum moves
		 * first (a side change: a gap is harmless) */
		uint8_t v[8];

		h5_le_encode(v, (uint64_t)li.max_corder + 1, 8);
		rc = h5_ohdr_aux(&c, c.e.oh->msgs[linfo].addr + 2, v, 8);
	}
	if (rc == 0)
		rc = h5_ohdr_put(&c, f, SIZE_MAX, H5_MSG_LINK, 0, 0, msg, mlen);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, durable);
out:
	h5_ohdr_change_close(&c);
	free(msg);
	return rc;
}

static int compact_remove(h5_file *f, uint64_t group, const char *name, size_t name_len, bool durable)
{
	h5_ohdr_change c;
	h5_linfo li;
	size_t n, found = SIZE_MAX, linfo;
	unsigned max_compact;
	int rc = h5_ohdr_change_open(&c, f, group);

	if (rc == 0)
		rc = scan(&n, &found, &linfo, &li, &max_compact, f, c.e.oh, name, name_len);
	if (rc == 0 && found == SIZE_MAX)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%.*s\"", (int)name_len, name);
	if (rc == 0)
		rc = h5_ohdr_put(&c, f, found, 0, 0, 0, NULL, 0);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, durable);
	h5_ohdr_change_close(&c);
	return rc;
}

/* The Link message replaced by one of the new name: one commit. As
 * H5Lmove, the link takes the next creation order (the Link Info
 * message's maximum moves first, a side change as in compact_insert).
 * Replacing: the new message takes the place of NEWNAME's, and NAME's
 * becomes NIL, a side change: in the same chunk one write; in another
 * chunk written first, so a crash between leaves NEWNAME's old link and
 * no NAME (the old object kept), never no NEWNAME. */
static int compact_rename(h5_file *f, uint64_t group, const char *name, size_t name_len, const char *newname,
			  size_t newname_len, bool replace, bool durable)
{
	h5_ohdr_change c;
	h5_linfo li;
	h5_link l = { 0 };
	size_t n, found = SIZE_MAX, clash = SIZE_MAX, linfo, mlen = 0;
	unsigned max_compact;
	uint8_t *msg = NULL;
	const h5_msg *m;
	int rc = h5_ohdr_change_open(&c, f, group);

	if (rc == 0)
		rc = scan(&n, &clash, &linfo, &li, &max_compact, f, c.e.oh, newname, newname_len);
	if (rc == 0 && clash != SIZE_MAX && !replace)
		rc = h5_err_set(H5_ERR_INVAL, "group 0x%llx has a link \"%.*s\" already", (unsigned long long)group,
				(int)newname_len, newname);
	if (rc == 0)
		rc = scan(&n, &found, &linfo, &li, &max_compact, f, c.e.oh, name, name_len);
	if (rc == 0 && found == SIZE_MAX)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%.*s\"", (int)name_len, name);
	if (rc < 0)
		goto out;
	m = &c.e.oh->msgs[found];
	rc = h5_link_decode(&l, m->data, m->size, &f->fmt);
	if (rc < 0)
		goto out;
	free(l.name);
	l.name = strndup(newname, newname_len);
	l.name_len = newname_len;
	l.cset = h5_name_cset(newname, newname_len);
	if (!l.name)
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0 && l.has_corder && li.track_corder) {
		uint8_t v[8];

		l.corder = li.max_corder;
		h5_le_encode(v, (uint64_t)li.max_corder + 1, 8);
		rc = h5_ohdr_aux(&c, c.e.oh->msgs[linfo].addr + 2, v, 8);
	}
	if (rc == 0)
		rc = h5_link_encode(&msg, &mlen, &f->fmt, &l);
	if (rc == 0 && clash != SIZE_MAX) {
		rc = h5_ohdr_aux_nil(&c, found);
		if (rc == 0)
			rc = h5_ohdr_put(&c, f, clash, H5_MSG_LINK, 0, 0, msg, mlen);
	} else if (rc == 0) {
		rc = h5_ohdr_put(&c, f, found, H5_MSG_LINK, 0, 0, msg, mlen);
	}
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, durable);
out:
	h5_link_clear(&l);
	h5_ohdr_change_close(&c);
	free(msg);
	return rc;
}

/* ---- many names in one commit (link_batch.c h5_link_change_batch) ---------------
 * The net change of each name of a batch of renames, hard links and
 * unlinks (names distinct; addrs[i] H5_ADDR_UNDEF: NAME goes, else it
 * names that object afterwards) as one change of the group's header: the
 * messages of names there now become NIL, every name afterwards is put
 * anew, all together (h5_ohdr_put_new: free space of one chunk, or one
 * new continuation chunk; a name that stays keeps its creation order),
 * the Link Info message's maximum creation order moved past the new
 * ones', all committed by
 * h5_ohdr_commit_cow: one write of one chunk, or the changed continuation
 * chunks copied and made durable, then chunk 0's one write - the old
 * links or the new ones after a crash, never a mix. A new name takes the
 * next creation order, as H5Lmove and H5Lcreate_hard give it. The daemon
 * adds no more names in one batch than the compact limit leaves
 * (compact_names_room below); were there more, the group would stay
 * compact past its limit (as for a link too large for dense storage,
 * above: the format bounds no header's Link messages, and libhdf5 moves
 * the group to dense storage at its next insert), never a refusal after
 * the answer. */
static int hard_msg(uint8_t **msg, size_t *len, const h5_fmt *fmt, const char *name, uint64_t addr, bool corder,
		    int64_t order)
{
	size_t nlen = strlen(name);
	h5_link l = { .name = (char *)name, .name_len = nlen, .type = H5_LINK_HARD, .addr = addr,
		      .cset = h5_name_cset(name, nlen), .has_corder = corder, .corder = corder ? order : 0 };

	return h5_link_encode(msg, len, fmt, &l);
}

static int compact_change_many(bool *changed, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			       size_t n)
{
	h5_ohdr_change c;
	h5_linfo li = { 0 };
	size_t nlinks, found, linfo = SIZE_MAX, nnew = 0;
	unsigned max_compact;
	int64_t order = 0;
	h5_ohdr_new_msg *m = calloc(n ? n : 1, sizeof(*m));
	uint8_t **bodies = calloc(n ? n : 1, sizeof(*bodies));
	int64_t *keep = calloc(n ? n : 1, sizeof(*keep));      /* a name that stays: its creation order, else -1 */
	int rc = m && bodies && keep ? h5_ohdr_change_open(&c, f, group) : h5_err_set(H5_ERR_NOMEM, "out of memory");
	bool opened = rc == 0;

	*changed = false;
	if (rc == 0)
		rc = scan(&nlinks, &found, &linfo, &li, &max_compact, f, c.e.oh, NULL, 0);
	if (rc == 0)
		order = li.max_corder;
	/* names there now: their messages become NIL (the edits are patches:
	 * the decoded header stays as loaded, so each name is found in it) */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const h5_msg *msg;
		h5_link old = { 0 };

		keep[i] = -1;
		rc = scan(&nlinks, &found, &linfo, &li, &max_compact, f, c.e.oh, names[i], strlen(names[i]));
		if (rc == 0 && found == SIZE_MAX && !h5_addr_defined(addrs[i]))
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", names[i]);
		if (rc < 0 || found == SIZE_MAX)
			continue;
		msg = &c.e.oh->msgs[found];
		if (h5_addr_defined(addrs[i]))
			rc = h5_link_decode(&old, msg->data, msg->size, &f->fmt);
		if (rc == 0 && h5_addr_defined(addrs[i]))
			keep[i] = old.has_corder ? old.corder : 0;
		h5_link_clear(&old);
		if (rc == 0)
			rc = h5_ohdr_nil(&c, found);
	}
	/* the names afterwards, put at once: one that stays keeps its
	 * creation order, a new one takes the next */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = 0;
		int64_t o = keep[i] >= 0 ? keep[i] : order;

		if (!h5_addr_defined(addrs[i]))
			continue;
		rc = hard_msg(&bodies[i], &len, &f->fmt, names[i], addrs[i], li.track_corder, o);
		if (rc == 0 && li.track_corder && keep[i] < 0)
			order++;
		m[nnew++] = (h5_ohdr_new_msg){ .type = H5_MSG_LINK, .body = bodies[i], .len = len };
	}
	if (rc == 0 && li.track_corder && order != li.max_corder) {
		uint8_t v[8];

		h5_le_encode(v, (uint64_t)order, 8);
		rc = h5_ohdr_aux(&c, c.e.oh->msgs[linfo].addr + 2, v, 8);
	}
	if (rc == 0 && nnew)
		rc = h5_ohdr_put_new(&c, f, m, nnew);
	/* the counts link_batch.c raised for the new names made durable
	 * before the write that adds them: a symbol-table group's or a dense
	 * store's commit has a stage that does it, this one's single write
	 * may have none (no new space), and a power cut could keep it
	 * without a count it needs (the object freed at the unlink of its
	 * other name) */
	if (rc == 0 && nnew) {
		h5_txn t;

		h5_txn_begin(&t, f, false, NULL, NULL);
		rc = h5_txn_order(&t);
	}
	if (rc == 0 && n)
		rc = h5_ohdr_commit_cow(&c, f, false);
	if (rc == 0 && n)
		*changed = true;
	if (opened)
		h5_ohdr_change_close(&c);
	for (size_t i = 0; bodies && i < n; i++)
		free(bodies[i]);
	free(bodies);
	free(keep);
	free(m);
	return rc;
}

/* link_store.h names_room: the compact limit less the links */
static int compact_names_room(uint64_t *room, h5_file *f, uint64_t group)
{
	h5_ohdr *oh = NULL;
	h5_linfo li = { 0 };
	size_t nlinks = 0, found, linfo;
	unsigned max_compact = 0;
	int rc = h5_ohdr_get(&oh, f, group);

	if (rc == 0)
		rc = scan(&nlinks, &found, &linfo, &li, &max_compact, f, oh, NULL, 0);
	*room = rc == 0 && max_compact > nlinks ? max_compact - nlinks : 0;
	if (oh)
		h5_ohdr_release(f, oh);
	return rc;
}

/* ---- a new group ----------------------------------------------------------------
 * A version 2 object header as libhdf5 makes for a group of the latest
 * format (IV.A.1.b; times stored): an empty Link Info message (compact
 * storage), a Group Info message, an empty Attribute Info message, and
 * free space; encoded here, written whole by link_write.c, then linked
 * (the link makes it visible). Creation order of links and attributes
 * tracked and indexed as crt says (the parent's: netCDF-4 makes every
 * group with both, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED, and
 * netCDF-C cannot write into a group without them): the header's flags
 * bits 2-3 (then every message's prefix has its creation order, 2
 * bytes), the Link Info and Attribute Info messages' flags and fields
 * (IV.A.2.c, IV.A.2.v). */
#define NEWGRP_ROOM 128

/* One message's prefix (IV.A.1.b): type, size, flags, its creation order
 * when the header tracks attributes' (0: these are no attributes). */
static size_t msg_prefix(uint8_t *p, unsigned type, size_t size, uint8_t flags, bool crt)
{
	p[0] = (uint8_t)type;
	h5_le_encode(p + 1, size, 2);
	p[3] = flags;
	if (crt)
		h5_le_encode(p + 4, 0, 2);
	return crt ? 6 : 4;
}

static int compact_new_group(uint8_t *b, size_t *len, h5_file *f, const h5_group_crt *crt, uint64_t addr)
{
	const h5_fmt *fmt = &f->fmt;
	bool ltrack = crt->links & 1, lindex = ltrack && (crt->links & 2);
	bool atrack = crt->attrs & 1, aindex = atrack && (crt->attrs & 2);
	size_t a = fmt->sizeof_addr, pre = atrack ? 6 : 4, p = 0, total;
	size_t linfo = 2 + (ltrack ? 8 : 0) + 2 * a + (lindex ? a : 0);
	size_t ainfo = 2 + (atrack ? 2 : 0) + 2 * a + (aindex ? a : 0);
	size_t msgs = pre + linfo + pre + 2 + pre + ainfo + pre + H5_BIRTHTAG_LEN + NEWGRP_ROOM;
	uint32_t now = (uint32_t)time(NULL);

	(void)addr;     /* (nothing in it points into itself) */
	total = 6 + 16 + 2 + msgs + 4;
	if (!b) {
		*len = total;
		return 0;
	}
	if (*len != total)
		return h5_err_set(H5_ERR_INVAL, "a new group takes %zu bytes, not %zu", total, *len);
	memset(b, 0, total);
	memcpy(b, "OHDR", 4);
	b[4] = 2;
	/* times stored; chunk 0 size in 2 bytes; attribute creation order */
	b[5] = (uint8_t)(0x20 | 0x01 | (atrack ? 0x04 : 0) | (aindex ? 0x08 : 0));
	p = 6;
	for (int i = 0; i < 4; i++, p += 4)
		h5_le_encode(b + p, now, 4);
	h5_le_encode(b + p, msgs, 2);
	p += 2;
	/* Link Info: version 0, creation order as crt, no fractal heap, no
	 * index (the maximum creation index 0) */
	p += msg_prefix(b + p, H5_MSG_LINFO, linfo, 0, atrack);
	b[p] = 0;
	b[p + 1] = (uint8_t)((ltrack ? 1 : 0) | (lindex ? 2 : 0));
	memset(b + p + 2, 0, ltrack ? 8 : 0);
	memset(b + p + 2 + (ltrack ? 8 : 0), 0xff, linfo - 2 - (ltrack ? 8 : 0));
	p += linfo;
	/* Group Info: version 0, defaults (flags 0); constant */
	p += msg_prefix(b + p, H5_MSG_GINFO, 2, H5_MSG_FLAG_CONSTANT, atrack);
	b[p] = 0; b[p + 1] = 0;
	p += 2;
	/* Attribute Info: version 0, creation order as crt, no dense storage */
	p += msg_prefix(b + p, H5_MSG_AINFO, ainfo, 0x04, atrack);
	b[p] = 0;
	b[p + 1] = (uint8_t)((atrack ? 1 : 0) | (aindex ? 2 : 0));
	memset(b + p + 2, 0, atrack ? 2 : 0);
	memset(b + p + 2 + (atrack ? 2 : 0), 0xff, ainfo - 2 - (atrack ? 2 : 0));
	p += ainfo;
	/* the generation of its file handles (src/fuse/member/export.c) */
	p += msg_prefix(b + p, H5_MSG_NIL, H5_BIRTHTAG_LEN, 0, atrack);
	h5_birthtag_encode(b + p, h5_birthtag_new());
	p += H5_BIRTHTAG_LEN;
	/* free space */
	msg_prefix(b + p, H5_MSG_NIL, NEWGRP_ROOM - pre, 0, atrack);
	memset(b + p + pre, 0, NEWGRP_ROOM - pre);
	p += NEWGRP_ROOM;
	h5_le_encode(b + p, h5_checksum_metadata(b, p), 4);
	return 0;
}

const h5_lstore_ops h5_lstore_compact = {
	.name = "compact",
	.insert = compact_insert,
	.remove = compact_remove,
	.rename = compact_rename,
	.change_many = compact_change_many,
	.names_room = compact_names_room,
	.new_group = compact_new_group,
};
