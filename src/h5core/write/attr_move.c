/*
 * attr_move.c - an object's attribute storage moved down at unmount
 * (h5_file_compact): attributes set late in a churn (after a large file,
 * since removed) leave what they wrote at the allocation end, and FILE's
 * end with it - a dense store (fractal heap and name index) or the
 * global heap collection of a string value (III.E). Each is written anew
 * into the lowest freed space that takes it, by an ordinary commit, and
 * the old one freed with it; nothing's value changes.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "txn.h"
#include "ohdr.h"
#include "attr.h"
#include "dtype.h"
#include "space.h"
#include "freesp.h"
#include "ohdr_edit.h"
#include "dense_write.h"
#include "dense.h"
#include "attr_write_int.h"
#include "file_ws.h"

/* ---- a dense store ---------------------------------------------------------------
 * As a group's links (link_write.c h5_link_move_down): when the store's
 * highest block still ends at the end and freed space takes it all, it
 * is written anew with no attribute changed (the batch's commit of
 * nothing: the store, the switch of its info message, the old one freed)
 * into the lowest space that fits. 1 moved, 0 not, or an h5_err. */
static int dense_move_down(h5_file *f, h5_ohdr_change *c, const found *fd)
{
	int rc = h5_dense_movable(f, H5_DENSE_ATTRS, fd->fheap, fd->name_bt2, fd->corder_bt2);

	if (rc > 0) {
		h5_ws(f)->freesp.low = true;
		rc = h5_attr_dense_batch(c, f, fd, NULL, 0);
		h5_ws(f)->freesp.low = false;
		if (rc == 0)
			rc = 1;
	}
	return rc;
}

/* ---- a string value's collection -------------------------------------------------
 * A collection this session wrote (h5_ws(f)->owned) that ends at the end is
 * copied whole into the lowest freed space that takes it (a collection
 * holds no address of its own, III.E), and every attribute message of
 * the object pointing into it is set again with its elements pointing at
 * the copy (h5_attr_change.vdata): one commit a compact message, one for
 * a dense store. The old collection is freed with its last reference, as
 * a replaced value's is. A crash between two commits leaves messages
 * pointing at one copy or the other, both whole: the copy is made durable
 * (its own fsync) before the first message points there. */
struct movers {
	h5_attr_change *ch;
	uint8_t **el;
	size_t n, cap;
};

static void movers_free(struct movers *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free((char *)m->ch[i].name);
		free(m->el[i]);
	}
	free(m->ch);
	free(m->el);
}

/* The message kept as a change of its attribute when its value points
 * into coll (a variable-length string's element); else nothing. Its
 * elements are turned to the copy later (retarget). */
static int mover_add(struct movers *m, h5_file *f, const uint8_t *msg, size_t len, uint64_t coll)
{
	size_t esz = 8 + (size_t)f->fmt.sizeof_addr;
	h5_attr_msg a = { 0 };
	char *name = NULL;
	uint8_t *el = NULL;
	bool in = false;
	int rc = h5_attr_decode(&a, f, &f->fmt, msg, len);

	if (rc < 0) {
		h5_err_clear();         /* (not one to move) */
		rc = 0;
		goto out;
	}
	if (a.dtype && a.dtype->cls == H5T_VLEN)
		for (size_t off = 0; off + esz <= a.data_size && !in; off += esz)
			in = h5_le_decode(a.data + off + 4, f->fmt.sizeof_addr) == coll;
	if (!in)
		goto out;
	if (a.dtype->vlen_type != 1 || a.data_size % esz)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%s\": not variable-length strings", a.name);
	if (rc == 0 && m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 8;
		h5_attr_change *ch = realloc(m->ch, cap * sizeof(*ch));
		uint8_t **ev = ch ? realloc(m->el, cap * sizeof(*ev)) : NULL;

		if (ch)
			m->ch = ch;
		if (ev)
			m->el = ev;
		if (!ch || !ev)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		else
			m->cap = cap;
	}
	if (rc == 0 && (!(name = malloc(a.name_len + 1)) || !(el = malloc(a.data_size + 1))))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0) {
		memcpy(name, a.name, a.name_len);
		name[a.name_len] = 0;
		memcpy(el, a.data, a.data_size);
		m->el[m->n] = el;
		m->ch[m->n++] = (h5_attr_change){ .name = name, .name_len = a.name_len, .val = (const char *)el,
						  .len = a.data_size, .vdata = el, .set = true };
		name = NULL;
		el = NULL;
	}
out:
	free(name);
	free(el);
	h5_attr_msg_clear(&a);
	return rc;
}

/* Every kept change's pointers into coll turned to naddr. */
static void retarget(struct movers *m, const h5_fmt *fmt, uint64_t coll, uint64_t naddr)
{
	size_t esz = 8 + (size_t)fmt->sizeof_addr;

	for (size_t i = 0; i < m->n; i++)
		for (size_t off = 0; off < m->ch[i].len; off += esz)
			if (h5_le_decode(m->el[i] + off + 4, fmt->sizeof_addr) == coll)
				h5_le_encode(m->el[i] + off + 4, naddr, fmt->sizeof_addr);
}

/* The object's attribute messages: compact ones (its header), or its
 * dense set (loaded into *s). */
static size_t msgs_count(const h5_ohdr *oh, const h5_dense_set *s, bool dense)
{
	return dense ? s->n : oh->nmsgs;
}

static const uint8_t *msg_at(const h5_ohdr *oh, const h5_dense_set *s, bool dense, size_t i, size_t *len)
{
	if (dense) {
		*len = s->o[i].len;
		return s->o[i].msg;
	}
	*len = oh->msgs[i].size;
	return oh->msgs[i].type == H5_MSG_ATTR && !(oh->msgs[i].flags & H5_MSG_FLAG_SHARED) ? oh->msgs[i].data : NULL;
}

/* The collection of this session's that ends at the allocation end, if
 * any: one look at h5_ws(f)->owned, before any object's messages are read (the
 * unmount asks this of each noted object). */
static uint64_t coll_at_end(h5_file *f, uint64_t *len)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t end = h5_space_end(f);

	for (size_t i = 0; i < ws->nowned; i++)
		if (ws->owned[i].addr + ws->owned[i].len == end) {
			*len = ws->owned[i].len;
			return ws->owned[i].addr;
		}
	return H5_ADDR_UNDEF;
}

static int coll_move_down(h5_file *f, uint64_t addr, h5_ohdr_change *c, const found *fd)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_dense_set s = { 0 };
	struct movers m = { 0 };
	uint64_t clen = 0, naddr = H5_ADDR_UNDEF, coll = coll_at_end(f, &clen);
	uint8_t *buf = NULL;
	size_t done, n, len, i;
	int rc = 0;

	if (!h5_addr_defined(coll) || h5_freesp_largest(&ws->freesp) < clen)
		return 0;
	if (fd->dense)
		rc = h5_dense_set_load(&s, f, H5_DENSE_ATTRS, fd->fheap, fd->name_bt2, fd->corder_bt2);
	n = rc == 0 ? msgs_count(c->e.oh, &s, fd->dense) : 0;
	for (i = 0; rc == 0 && i < n; i++) {
		const uint8_t *msg = msg_at(c->e.oh, &s, fd->dense, i, &len);

		if (msg)
			rc = mover_add(&m, f, msg, len, coll);
	}
	if (rc < 0 || m.n == 0)
		goto out;       /* (none of its messages: another object's) */
	/* the lowest freed space that takes it: below it, or not at all */
	ws->freesp.low = true;
	rc = h5_space_take(&naddr, f, clen);
	ws->freesp.low = false;
	if (rc < 0)
		goto out;
	if (naddr > coll) {
		if (h5_freesp_add(&ws->freesp, naddr, clen, 0) < 0)
			h5_err_clear();
		goto out;
	}
	retarget(&m, &f->fmt, coll, naddr);
	if (rc == 0 && !(buf = malloc((size_t)clen)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_file_read(f, coll, buf, (size_t)clen);
	if (rc == 0)
		rc = h5_file_write(f, naddr, buf, (size_t)clen);
	/* durable before a message points there: the commits below see no
	 * new space of their own (the copy was taken before they began), so
	 * their stage would not sync it */
	if (rc == 0) {
		h5_txn t;

		h5_txn_begin(&t, f, false, NULL, NULL);
		rc = h5_txn_order(&t);
	}
	if (rc < 0) {
		/* never referenced: back at once */
		if (h5_freesp_add(&ws->freesp, naddr, clen, 0) < 0)
			h5_err_clear();
		goto out;
	}
	/* the copy's references are the messages about to point at it (a
	 * commit that stops part way leaves it counting more: kept, never
	 * freed while referenced) */
	h5_attr_coll_adopt(f, naddr, clen, (uint32_t)m.n);
	h5_ohdr_change_close(c);
	rc = h5_attr_batch_locked(&done, f, addr, m.ch, m.n);
	if (rc == 0)
		rc = 1;
out:
	h5_dense_set_free(&s);
	movers_free(&m);
	free(buf);
	return rc;
}

static int attr_move_down(h5_file *f, uint64_t addr)
{
	h5_ohdr_change c;
	found fd;
	int rc = h5_ohdr_change_open(&c, f, addr);

	if (rc == 0)
		rc = h5_attr_scan(&fd, f, c.e.oh, "", 0);
	if (rc == 0 && fd.dense)
		rc = dense_move_down(f, &c, &fd);
	if (rc == 0)
		rc = coll_move_down(f, addr, &c, &fd);
	h5_ohdr_change_close(&c);
	return rc;
}

int h5_attr_move_down(h5_file *f)
{
	return h5_ohdr_notes_each(f, H5_NOTE_ATTRS, attr_move_down);
}
