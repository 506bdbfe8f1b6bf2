/*
 * link_dense.c - links in dense storage (spec IV.A.2.c Link Info: a
 * fractal heap of Link messages, a v2 B-tree of name hashes and, when the
 * group indexes creation order, one of creation orders): the "dense"
 * entry of link_store.h's table.
 *
 * Each change loads the group's links, changes them in memory and writes
 * the store anew (dense_write.c); the group's Link Info message, rewritten
 * in place in one write of its header chunk (ohdr_edit.c), then names the
 * new store. The ordered commit makes the new store durable before that
 * write, so a crash leaves the old links or the new ones (doc/MODIFY.md).
 *
 * A removal that leaves fewer links than the group's "minimum dense"
 * count (Group Info, IV.A.2.f; 6 by default) moves them back into the
 * header as Link messages, as libhdf5 does (H5G__obj_remove_update).
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "link_store.h"
#include "dense_write.h"
#include "file_ws.h"

typedef struct dense_edit {
	const h5_link *link;            /* insert: the new link (insert_many: n of them) */
	size_t n;
	char *const *names;             /* remove_many: n of them */
	const uint64_t *addrs;          /* change_many: beside names */
	const char *name, *newname;     /* remove, rename */
	size_t name_len, newname_len;
	bool replace;                   /* rename over newname */
} dense_edit;

typedef int (*edit_fn)(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e);

static int link_put(h5_dense_set *s, size_t at, const h5_fmt *fmt, const h5_link *l)
{
	uint8_t *msg = NULL;
	size_t len = 0;
	int rc = h5_link_encode(&msg, &len, fmt, l);

	if (rc == 0)
		rc = h5_dense_set_put(s, at, msg, len, l->name, l->name_len, l->has_corder ? (uint64_t)l->corder : 0, 0);
	free(msg);
	return rc;
}

static int edit_insert(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	h5_link l = *e->link;

	if (h5_dense_set_find(s, l.name, l.name_len) != SIZE_MAX)
		return h5_err_set(H5_ERR_INVAL, "the group has a link \"%.*s\" already", (int)l.name_len, l.name);
	l.has_corder = li->track_corder;
	l.corder = li->track_corder ? li->max_corder : 0;
	if (li->track_corder)
		li->max_corder++;
	return link_put(s, SIZE_MAX, &f->fmt, &l);
}

static int edit_remove(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	size_t at = h5_dense_set_find(s, e->name, e->name_len);

	(void)f;
	(void)li;
	if (at == SIZE_MAX)
		return h5_err_set(H5_ERR_NOTFOUND, "no link \"%.*s\"", (int)e->name_len, e->name);
	h5_dense_set_del(s, at);
	return 0;
}

/* The batch's new hard links, each as one insert (its name checked
 * against the store and the batch's names before it). */
static int edit_insert_many(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->n; i++) {
		dense_edit one = { .link = &e->link[i] };

		rc = e->link[i].type == H5_LINK_HARD ? edit_insert(f, s, li, &one) :
						       h5_err_set(H5_ERR_INVAL, "a batch of links holds hard links only");
	}
	return rc;
}

/* The batch's removals (e->names, e->n of them), each as one removal. */
static int edit_remove_many(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	char *const *names = e->names;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->n; i++) {
		dense_edit one = { .name = names[i], .name_len = strlen(names[i]) };

		rc = edit_remove(f, s, li, &one);
	}
	return rc;
}

/* A batch's net change of its names (link_batch.c h5_link_change_batch):
 * names[i] removed (addrs[i] undefined: it must be there), or a hard link
 * to addrs[i] afterwards - a name there keeps its creation order, a new
 * one takes the next (as H5Lmove, H5Lcreate_hard). */
static int edit_change_many(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < e->n; i++) {
		const char *name = e->names[i];
		size_t len = strlen(name), at = h5_dense_set_find(s, name, len);
		h5_link l = { .name = (char *)name, .name_len = len, .type = H5_LINK_HARD, .addr = e->addrs[i],
			      .cset = h5_name_cset(name, len) };

		if (!h5_addr_defined(e->addrs[i])) {
			dense_edit one = { .name = name, .name_len = len };

			rc = edit_remove(f, s, li, &one);
		} else if (at == SIZE_MAX) {
			dense_edit one = { .link = &l };

			rc = edit_insert(f, s, li, &one);
		} else {
			h5_link old = { 0 };

			rc = h5_link_decode(&old, s->o[at].msg, s->o[at].len, &f->fmt);
			l.has_corder = old.has_corder;
			l.corder = old.corder;
			h5_link_clear(&old);
			if (rc == 0)
				rc = link_put(s, at, &f->fmt, &l);
		}
	}
	return rc;
}

/* As H5Lmove: the renamed link takes the next creation order. Replacing:
 * newname's link leaves the set in the same change (one commit). */
static int edit_rename(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	size_t at = h5_dense_set_find(s, e->name, e->name_len), clash = h5_dense_set_find(s, e->newname, e->newname_len);
	h5_link l = { 0 };
	int rc;

	if (clash != SIZE_MAX && !e->replace)
		return h5_err_set(H5_ERR_INVAL, "the group has a link \"%.*s\" already", (int)e->newname_len,
				  e->newname);
	if (at != SIZE_MAX && clash != SIZE_MAX) {
		h5_dense_set_del(s, clash);
		at = h5_dense_set_find(s, e->name, e->name_len);
	}
	if (at == SIZE_MAX)
		return h5_err_set(H5_ERR_NOTFOUND, "no link \"%.*s\"", (int)e->name_len, e->name);
	rc = h5_link_decode(&l, s->o[at].msg, s->o[at].len, &f->fmt);
	if (rc < 0)
		return rc;
	free(l.name);
	l.name = strndup(e->newname, e->newname_len);
	l.name_len = e->newname_len;
	l.cset = h5_name_cset(e->newname, e->newname_len);
	if (l.has_corder && li->track_corder)
		l.corder = li->max_corder++;
	rc = l.name ? link_put(s, at, &f->fmt, &l) : h5_err_set(H5_ERR_NOMEM, "out of memory");
	h5_link_clear(&l);
	return rc;
}

/* The group at its compact limit gets one more link: as libhdf5
 * (H5G__obj_insert, H5G__compact_convert... H5G__dense_create), its links
 * move to new dense storage (with a creation-order index when the group
 * indexes creation order) holding the new link too, added as any insert
 * into dense storage is; every Link message goes and the Link Info
 * message names the new storage, in one commit that copies the header's
 * continuation chunks (h5_ohdr_commit_cow). */
int h5_link_dense_convert(h5_ohdr_change *c, h5_file *f, h5_linfo *li, size_t linfo, const h5_link *link,
			  bool durable)
{
	const h5_ohdr *oh = c->e.oh;
	dense_edit e = { .link = link };
	h5_dense_set s;
	int rc = 0;

	h5_dense_set_init(&s, H5_DENSE_LINKS, li->index_corder);
	for (size_t i = 0; rc == 0 && i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		h5_link old;

		if (m->type != H5_MSG_LINK || (m->flags & H5_MSG_FLAG_SHARED))
			continue;
		rc = h5_link_decode(&old, m->data, m->size, &f->fmt);
		if (rc < 0)
			break;
		rc = h5_dense_set_put(&s, SIZE_MAX, m->data, m->size, old.name, old.name_len,
				      old.has_corder ? (uint64_t)old.corder : 0, 0);
		h5_link_clear(&old);
		if (rc == 0)
			rc = h5_ohdr_nil(c, i);
	}
	if (rc == 0)
		rc = edit_insert(f, &s, li, &e);
	if (rc == 0)
		rc = h5_dense_set_switch(c, f, &s, linfo, li->max_corder);
	if (rc == 0)
		rc = h5_ohdr_commit_cow(c, f, durable);
	h5_dense_set_free(&s);
	return rc;
}

#define MIN_DENSE_LINKS_DEFAULT 6       /* libhdf5's H5G_CRT_GINFO_MIN_DENSE */

/* The group's "minimum dense" count (Group Info message, IV.A.2.f: flags
 * bit 0, then the maximum compact and the minimum dense counts). */
static unsigned min_dense(const h5_ohdr *oh)
{
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];

		if (m->type == H5_MSG_GINFO && !(m->flags & H5_MSG_FLAG_SHARED) && m->size >= 6 && (m->data[1] & 0x01))
			return (unsigned)h5_le_decode(m->data + 4, 2);
	}
	return MIN_DENSE_LINKS_DEFAULT;
}

/* One change: the links loaded, edited, written anew, the Link Info
 * message switched to them (or, after a removal below the minimum, the
 * links moved back into the header). */
static int dense_change(h5_file *f, uint64_t group, uint64_t start, bool durable, edit_fn fn, const dense_edit *e)
{
	h5_ohdr_change c;
	h5_dense_set s = { 0 };
	h5_linfo li = { 0 };
	size_t idx = SIZE_MAX;
	bool moved = false;
	int rc = h5_ohdr_change_open(&c, f, group);

	if (rc < 0)
		goto out;
	if (start != UINT64_MAX)
		c.start_end = start;
	for (size_t i = 0; i < c.e.oh->nmsgs; i++)
		if (c.e.oh->msgs[i].type == H5_MSG_LINFO && !(c.e.oh->msgs[i].flags & H5_MSG_FLAG_SHARED))
			idx = i;
	if (idx == SIZE_MAX) {
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx has no link info message", (unsigned long long)group);
		goto out;
	}
	rc = h5_linfo_decode(&li, &f->fmt, c.e.oh->msgs[idx].data, c.e.oh->msgs[idx].size);
	if (rc == 0 && !h5_addr_defined(li.fheap_addr))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx keeps its links in its header", (unsigned long long)group);
	if (rc == 0)
		rc = h5_dense_set_load(&s, f, H5_DENSE_LINKS, li.fheap_addr, li.name_bt2_addr, li.corder_bt2_addr);
	if (rc == 0)
		rc = fn(f, &s, &li, e);
	if (rc == 0 && (fn == edit_remove || fn == edit_remove_many || fn == edit_change_many) &&
	    s.n < min_dense(c.e.oh))
		rc = h5_dense_set_to_header(&moved, &c, f, &s, idx, li.max_corder);
	if (rc == 0 && !moved)
		rc = h5_dense_set_switch(&c, f, &s, idx, li.max_corder);
	if (rc == 0)
		rc = h5_ohdr_commit_cow(&c, f, durable);
	/* the old store: referenced by nothing once the switch is durable */
	if (rc == 0) {
		h5_dense_set_old_free(&s, f, c.ticket);
		if (!moved)
			h5_ohdr_note(f, H5_NOTE_GROUP, group);
	}
out:
	h5_dense_set_free(&s);
	h5_ohdr_change_close(&c);
	return rc;
}

static int dense_insert(h5_file *f, uint64_t group, const h5_link *l, uint64_t start, bool durable)
{
	dense_edit e = { .link = l };

	return dense_change(f, group, start, durable, edit_insert, &e);
}

/* Many new hard links in one change (the daemon's write-behind of new
 * files, h5_link_insert_batch): the store loaded once, every name put,
 * written anew once, one commit (all of them or none after a crash).
 * One commit per name, as before, loaded and wrote the whole store for
 * each: 10,000 creates in one directory (xfstests generic/471) took
 * 149 s, against 4 s in a symbol-table group. */
static int dense_insert_many(h5_file *f, uint64_t group, const h5_link *l, size_t n, uint64_t start)
{
	dense_edit e = { .link = l, .n = n };

	return dense_change(f, group, start, false, edit_insert_many, &e);
}

typedef struct room_ud {
	uint64_t total;
} room_ud;

static int room_add(uint64_t addr, uint64_t len, void *ud)
{
	(void)addr;
	((room_ud *)ud)->total += len;
	return 0;
}

/* What dense_insert_many of n names of name_bytes may take: the store
 * anew (its heap and indexes hold the old links and the new ones; a heap
 * grows by doubling its rows, so twice the old store and the new names'
 * messages and records), and the group's header chunks copied (the
 * commit's copy-on-write of its continuation chunks, below 64 KiB for any
 * header h5fs writes). */
static int dense_room_many(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes)
{
	h5_ohdr *oh = NULL;
	h5_linfo li = { 0 };
	room_ud r = { 0 };
	int rc = h5_ohdr_get(&oh, f, group);

	for (size_t i = 0; rc == 0 && i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_LINFO && !(oh->msgs[i].flags & H5_MSG_FLAG_SHARED))
			rc = h5_linfo_decode(&li, &f->fmt, oh->msgs[i].data, oh->msgs[i].size);
	if (oh)
		h5_ohdr_release(f, oh);
	if (rc == 0 && h5_addr_defined(li.fheap_addr))
		rc = h5_dense_blocks(f, H5_DENSE_LINKS, li.fheap_addr, li.name_bt2_addr, li.corder_bt2_addr, room_add,
				     &r);
	/* a link message: its name and at most 32 bytes more; 2 records of
	 * at most 32 bytes, in nodes at least half full */
	*need = 2 * (r.total + name_bytes + 32 * (uint64_t)n) + 2 * 2 * 32 * (uint64_t)n + ((uint64_t)64 << 10);
	return rc;
}

static int dense_remove(h5_file *f, uint64_t group, const char *name, size_t name_len, bool durable)
{
	dense_edit e = { .name = name, .name_len = name_len };

	return dense_change(f, group, UINT64_MAX, durable, edit_remove, &e);
}

/* Many links removed in one change (the daemon's rmdir batch,
 * h5_link_remove_batch): loaded once, written anew once (or moved back
 * into the header below the minimum), one commit. */
static int dense_remove_many(h5_file *f, uint64_t group, char *const *names, size_t n)
{
	dense_edit e = { .names = names, .n = n };

	return dense_change(f, group, UINT64_MAX, false, edit_remove_many, &e);
}

/* A batch of renames, hard links and unlinks (link_store.h change_many):
 * the store loaded once, every name changed, written anew once, one
 * commit, not durable. */
static int dense_change_many(bool *changed, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			     size_t n)
{
	dense_edit e = { .names = names, .addrs = addrs, .n = n };
	int rc = n ? dense_change(f, group, UINT64_MAX, false, edit_change_many, &e) : 0;

	*changed = rc == 0 && n;
	return rc;
}

static int dense_rename(h5_file *f, uint64_t group, const char *name, size_t name_len, const char *newname,
			size_t newname_len, bool replace, bool durable)
{
	dense_edit e = { .name = name, .name_len = name_len, .newname = newname, .newname_len = newname_len,
			 .replace = replace };

	return dense_change(f, group, UINT64_MAX, durable, edit_rename, &e);
}

static int edit_none(h5_file *f, h5_dense_set *s, h5_linfo *li, const dense_edit *e)
{
	(void)f, (void)s, (void)li, (void)e;
	return 0;
}

/* (link_store.h's move_down) The store written anew, no link changed,
 * when its highest block ends at the allocation end: a late change's
 * store otherwise keeps FILE long after the space below was freed. */
static int dense_move_down(h5_file *f, uint64_t group)
{
	h5_ohdr *oh = NULL;
	h5_linfo li = { 0 };
	int rc = h5_ohdr_load(&oh, f, group), found = 0;

	for (size_t i = 0; rc == 0 && i < oh->nmsgs && !found; i++)
		if (oh->msgs[i].type == H5_MSG_LINFO && !(oh->msgs[i].flags & H5_MSG_FLAG_SHARED)) {
			rc = h5_linfo_decode(&li, &f->fmt, oh->msgs[i].data, oh->msgs[i].size);
			found = 1;
		}
	h5_ohdr_free(oh);
	if (rc < 0 || !found || !h5_addr_defined(li.fheap_addr))
		return rc;
	rc = h5_dense_movable(f, H5_DENSE_LINKS, li.fheap_addr, li.name_bt2_addr, li.corder_bt2_addr);
	if (rc > 0) {
		h5_ws(f)->freesp.low = true;
		rc = dense_change(f, group, UINT64_MAX, true, edit_none, NULL);
		h5_ws(f)->freesp.low = false;
		if (rc == 0)
			rc = 1;
	}
	return rc;
}

/* A child of a dense group is what mkdir makes in a compact one: a group
 * of the latest format (dense storage exists only there). */
static int dense_new_group(uint8_t *b, size_t *len, h5_file *f, const h5_group_crt *crt, uint64_t addr)
{
	return h5_lstore_compact.new_group(b, len, f, crt, addr);
}

const h5_lstore_ops h5_lstore_dense = {
	.name = "dense",
	.insert = dense_insert,
	.insert_many = dense_insert_many,
	.room_many = dense_room_many,
	.change_many = dense_change_many,
	.remove = dense_remove,
	.remove_many = dense_remove_many,
	.rename = dense_rename,
	.new_group = dense_new_group,
	.move_down = dense_move_down,
};
