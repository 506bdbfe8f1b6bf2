/*
 * attr_write.c - setting, creating and deleting attributes (h5core.h
 * "changing attributes"; doc/MODIFY.md): the new attribute message
 * (attr_build.c) replaces the old one, or is added, by one object header
 * change (ohdr_edit.c).
 *
 * Dense attribute storage (a fractal heap named by the Attribute Info
 * message) is written anew per change (dense_write.c) and switched to by
 * one rewrite of the Attribute Info message; a v2 header whose compact
 * storage is full moves its attributes there, as libhdf5 does. A batch
 * (h5_attr_write_batch, the daemon's write-behind) writes a dense store
 * once for all of its changes. */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "attr.h"
#include "dtype.h"
#include "dspace.h"
#include "gheap.h"
#include "value.h"
#include "space.h"
#include "ohdr_edit.h"
#include "txn.h"
#include "dense_write.h"
#include "dense.h"
#include "fheap.h"
#include "attr_write_int.h"
#include "file_ws.h"


int h5_attr_scan(found *fd, h5_file *f, const h5_ohdr *oh, const char *name, size_t name_len)
{
	memset(fd, 0, sizeof(*fd));
	fd->idx = fd->ainfo = SIZE_MAX;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		h5_attr_hdr h;

		if (m->type == H5_MSG_AINFO) {
			h5_rd r;

			if (m->flags & H5_MSG_FLAG_SHARED)
				return h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx: shared attribute info message",
						  (unsigned long long)oh->addr);
			h5_rd_init(&r, m->data, m->size);
			h5_rd_u8(&r);
			fd->ainfo_flags = h5_rd_u8(&r);
			if (fd->ainfo_flags & AINFO_TRACK_CORDER)
				fd->max_crt = h5_rd_u16(&r);
			fd->fheap = h5_rd_addr(&r, &f->fmt);
			fd->name_bt2 = h5_rd_addr(&r, &f->fmt);
			fd->corder_bt2 = (fd->ainfo_flags & AINFO_INDEX_CORDER) ? h5_rd_addr(&r, &f->fmt) : H5_ADDR_UNDEF;
			fd->dense = h5_addr_defined(fd->fheap);
			if (!h5_rd_ok(&r))
				return h5_err_set(H5_ERR_FORMAT, "object 0x%llx: attribute info message too short",
						  (unsigned long long)oh->addr);
			fd->ainfo = i;
			continue;
		}
		if (m->type != H5_MSG_ATTR)
			continue;
		fd->nattrs++;
		if (m->flags & H5_MSG_FLAG_SHARED)
			continue;       /* a shared attribute's name is in the shared message: never matched */
		if (h5_attr_hdr_decode(&h, m->data, m->size) < 0)
			return h5_err_wrap(H5_ERR_FORMAT, "object 0x%llx: ", (unsigned long long)oh->addr);
		if (h.name_size == name_len + 1 && memcmp(h.name, name, name_len) == 0 && fd->idx == SIZE_MAX)
			fd->idx = i;
	}
	return 0;
}

/* A removed object's attributes (its header and dense store are about to
 * be freed): the collections this session wrote for their values lose
 * those references, the last freeing them. A removed dataset's values
 * were otherwise never freed, and pinned FILE's end (stress-ng's xattr
 * beside its hdd: 61 MB of freed rows kept by 90 KB of collections).
 * f->write_lock held; what cannot be read stays as it is. */
void h5_attr_colls_drop(h5_file *f, uint64_t addr, uint64_t ticket)
{
	h5_ohdr *oh = NULL;
	h5_dense_set s = { 0 };
	found fd;

	if (!h5_ws(f)->nowned || h5_ohdr_load(&oh, f, addr) < 0 || h5_attr_scan(&fd, f, oh, "", 0) < 0)
		goto out;
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_ATTR)
			h5_attr_coll_free(f, h5_attr_owned_coll(f, oh->msgs[i].data, oh->msgs[i].size), ticket);
	if (fd.dense && h5_dense_set_load(&s, f, H5_DENSE_ATTRS, fd.fheap, fd.name_bt2, fd.corder_bt2) == 0)
		for (size_t i = 0; i < s.n; i++)
			if (s.o[i].msg)
				h5_attr_coll_free(f, h5_attr_owned_coll(f, s.o[i].msg, s.o[i].len), ticket);
out:
	h5_err_clear();
	h5_dense_set_free(&s);
	h5_ohdr_free(oh);
}

static int apply(h5_file *f, uint64_t addr, const h5_attr_change *ch);

/* The change ch made on the header c opened and fd scanned for its name
 * (h5_attr_batch_locked scans it once for its check and the change, not
 * a load each: a header of 3,000 attributes took seconds a batch). The
 * caller closes c (closed here already, and harmless to close again, when
 * an Attribute Info message is added first). */
static int apply_open(h5_ohdr_change *c, const found *pfd, h5_file *f, uint64_t addr, const h5_attr_change *ch)
{
	const found fd = *pfd;
	uint8_t *msg = NULL;
	size_t mlen = 0;
	uint16_t crt = 0;
	uint64_t coll = H5_ADDR_UNDEF;  /* the old value's own collection */
	int rc = 0;

	if (fd.dense) {
		rc = h5_attr_apply_dense(c, f, &fd, ch);
		goto out;
	}
	if (ch->val && fd.idx == SIZE_MAX && c->e.oh->version >= 2 && fd.ainfo == SIZE_MAX) {
		rc = h5_attr_ainfo_add(c, f);
		h5_ohdr_change_close(c);
		return rc < 0 ? rc : apply(f, addr, ch);
	}
	if (fd.idx != SIZE_MAX)
		coll = h5_attr_owned_coll(f, c->e.oh->msgs[fd.idx].data, c->e.oh->msgs[fd.idx].size);
	if (!ch->val) {
		if (fd.idx == SIZE_MAX) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "no attribute \"%.*s\"", (int)ch->name_len, ch->name);
			goto out;
		}
		rc = h5_ohdr_put(c, f, fd.idx, 0, 0, 0, NULL, 0);
		goto commit;
	}
	if (fd.idx == SIZE_MAX && fd.nattrs >= h5_attr_max_compact(c->e.oh)) {
		rc = h5_attr_to_dense(c, f, &fd, ch);
		goto out;
	}
	if (fd.idx != SIZE_MAX && !ch->typestr && !ch->fstr && !ch->rdt) {
		const h5_msg *m = &c->e.oh->msgs[fd.idx];

		rc = h5_attr_build(&msg, &mlen, f, c->e.oh, m->data, m->size, ch);
	} else {
		rc = h5_attr_build(&msg, &mlen, f, c->e.oh, NULL, 0, ch);
	}
	if (rc < 0)
		goto out;
	if (fd.idx != SIZE_MAX) {
		crt = c->e.oh->msgs[fd.idx].crt_order;
	} else if ((c->e.oh->flags & 0x04) && fd.ainfo != SIZE_MAX && (fd.ainfo_flags & AINFO_TRACK_CORDER)) {
		/* the next creation order; the Attribute Info message's
		 * maximum moves first (a side change: a gap is harmless) */
		uint8_t v[2];

		if (fd.max_crt == UINT16_MAX) {
			rc = h5_err_set(H5_ERR_LIMIT, "object 0x%llx: creation order exhausted", (unsigned long long)addr);
			goto out;
		}
		crt = fd.max_crt;
		h5_le_encode(v, (uint64_t)fd.max_crt + 1, 2);
		rc = h5_ohdr_aux(c, c->e.oh->msgs[fd.ainfo].addr + 2, v, 2);
	}
	if (rc == 0)
		rc = h5_ohdr_put(c, f, fd.idx, H5_MSG_ATTR, fd.idx != SIZE_MAX ? c->e.oh->msgs[fd.idx].flags : 0, crt,
				 msg, mlen);
commit:
	if (rc == 0)
		rc = h5_ohdr_commit(c, f, false);
	if (rc == 0) {
		h5_attr_coll_free(f, coll, c->ticket);
		/* its value's collection may be left at the end (attr_move.c) */
		h5_ohdr_note(f, H5_NOTE_ATTRS, addr);
	}
out:
	free(msg);
	return rc;
}

static int apply(h5_file *f, uint64_t addr, const h5_attr_change *ch)
{
	h5_ohdr_change c;
	found fd;
	int rc = h5_ohdr_change_open(&c, f, addr);

	if (rc == 0)
		rc = h5_attr_scan(&fd, f, c.e.oh, ch->name, ch->name_len);
	if (rc == 0)
		rc = apply_open(&c, &fd, f, addr, ch);
	h5_ohdr_change_close(&c);
	h5_file_attr_moved(f);  /* (after: h5core.h h5_file_attr_epoch) */
	return rc;
}

static int locked(h5_file *f, uint64_t addr, const h5_attr_change *ch)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (ch->name_len == 0 || memchr(ch->name, 0, ch->name_len) || ch->name_len > 65534)
		return h5_err_set(H5_ERR_INVAL, "an attribute name cannot be empty or hold a NUL byte");
	pthread_mutex_lock(&f->write_lock);
	rc = apply(f, addr, ch);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_attr_write(h5_file *f, uint64_t addr, const char *name, size_t name_len, const void *val, size_t len, int raw)
{
	h5_attr_change ch = { .name = name, .name_len = name_len, .val = val ? val : "", .len = len, .raw = raw };

	return locked(f, addr, &ch);
}

int h5_attr_create_typed(h5_file *f, uint64_t addr, const char *name, size_t name_len, const char *typestr,
			 const char *text, size_t len)
{
	h5_attr_change ch = { .name = name, .name_len = name_len, .val = text ? text : "", .len = len, .typestr = typestr };

	return locked(f, addr, &ch);
}

int h5_attr_create_str(h5_file *f, uint64_t addr, const char *name, size_t name_len, const char *text, size_t len,
		       size_t width, enum h5_fstr fstr)
{
	h5_attr_change ch = { .name = name, .name_len = name_len, .val = text ? text : "", .len = len,
			      .fstr = fstr ? fstr : H5_FSTR_NULLPAD, .fwidth = width };

	return locked(f, addr, &ch);
}

int h5_attr_create_raw_locked(h5_file *f, uint64_t addr, const char *name, size_t name_len, const uint8_t *dtype,
			      size_t dtype_len, uint64_t n, const void *data, size_t len)
{
	h5_attr_change ch = { .name = name, .name_len = name_len, .val = data ? data : "", .len = len, .rdt = dtype,
			      .rdt_len = dtype_len, .rn = n };

	return apply(f, addr, &ch);
}

int h5_attr_delete_locked(h5_file *f, uint64_t addr, const char *name, size_t name_len)
{
	h5_attr_change ch = { .name = name, .name_len = name_len };

	return apply(f, addr, &ch);
}

int h5_attr_delete(h5_file *f, uint64_t addr, const char *name, size_t name_len)
{
	h5_attr_change ch = { .name = name, .name_len = name_len };

	return locked(f, addr, &ch);
}

/* ---- a batch of changes -------------------------------------------------
 * (h5_attr_write_batch, h5_attr_set_check; the daemon's write-behind of
 * setfattr, whose cost per change would otherwise be an fsync and, in
 * dense storage, a store written anew) */

/* The dense record of the name: its message copied (a shared one:
 * unsupported, as h5_attr_dense_put says). */
struct check_ctx {
	const char *name;
	size_t name_len;
	uint8_t *msg;
	size_t len;
};

static int check_found(const h5_dense_rec *r, void *ud)
{
	struct check_ctx *k = ud;
	h5_attr_hdr h;

	if (r->flags & H5_MSG_FLAG_SHARED)
		return h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%.*s\" is a shared message", (int)k->name_len,
				  k->name);
	if (h5_attr_hdr_decode(&h, r->obj, r->obj_len) < 0)
		return h5_err_wrap(H5_ERR_FORMAT, "dense attribute: ");
	if (h.name_size - 1 != k->name_len || memcmp(h.name, k->name, k->name_len) != 0)
		return H5_ERR_NOTFOUND;         /* another name of the same hash */
	if (!(k->msg = malloc(r->obj_len ? r->obj_len : 1)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(k->msg, r->obj, r->obj_len);
	k->len = r->obj_len;
	return 0;
}

/* The place the change's message goes (room: the batch's changes before
 * it): a header message at most 64 KiB (IV.A.1); a dense store's object
 * at most the heap's largest managed object and its heap within what
 * h5_fheap_build places (fheap_enc.c; the store is written anew with every
 * object); a new name in a v2 header below its compact maximum (else
 * every attribute moves to dense storage, h5_attr_to_dense, which may fail: done
 * at once, not promised). H5_ERR_LIMIT for such a change. */
static int place_check(const h5_attr_room *room, h5_file *f, const h5_ohdr *oh, const found *fd, const h5_dense *d,
		       size_t mlen, bool isnew, const char *name, size_t name_len)
{
	size_t nnew = room ? room->nnew : 0;
	uint64_t bytes = room ? room->bytes : 0;

	if (d) {
		h5_fheap_params hp;
		uint64_t used = h5_fheap_managed_bytes(d->heap), cap;

		h5_fheap_params_get(&hp, d->heap);
		cap = h5_fheap_capacity(&hp, &f->fmt, hp.max_man_size);
		if (mlen > hp.max_man_size)
			return h5_err_set(H5_ERR_LIMIT, "attribute \"%.*s\": a message of %zu bytes is more than its "
					  "dense storage holds (%u)", (int)name_len, name, mlen, hp.max_man_size);
		if (used > cap || bytes + mlen > cap - used)
			return h5_err_set(H5_ERR_LIMIT, "attribute \"%.*s\": the dense storage of object 0x%llx is "
					  "near its heap's capacity (%llu bytes)", (int)name_len, name,
					  (unsigned long long)oh->addr, (unsigned long long)cap);
		return 0;
	}
	if (mlen > 65535 - 16)
		return h5_err_set(H5_ERR_LIMIT, "attribute \"%.*s\": a message of %zu bytes is larger than a header "
				  "message can be (64 KiB)", (int)name_len, name, mlen);
	if (isnew && oh->version >= 2 && fd->nattrs + nnew + 1 > h5_attr_max_compact(oh))
		return h5_err_set(H5_ERR_LIMIT, "attribute \"%.*s\": object 0x%llx's attributes move to dense "
				  "storage", (int)name_len, name, (unsigned long long)oh->addr);
	return 0;
}

/* What the batch's commit may write in new space: the global heap
 * collections of its strings (exactly: h5_gheap_size); in compact storage
 * a commit per change, each of which may move messages to a new
 * continuation chunk (three times the messages, and 1 KiB each) unless
 * every change keeps its message's size (then each is written in place);
 * a dense store written anew once (its heap and two indexes: twice its
 * objects and the new ones, 64 bytes of index records each). Generous
 * but for the collections, so that a change of a string that fits in
 * freed space is made on a full disk (h5_file_reserve counts the free
 * list); what is not used is given back (h5_txn_idle). */
static uint64_t batch_need(const h5_attr_room *room, const h5_dense *d)
{
	uint64_t need = (uint64_t)64 << 10;

	if (d)
		return room->heap + need + 2 * (h5_fheap_managed_bytes(d->heap) + room->bytes) + 64 * (uint64_t)room->n;
	if (!room->ngrow)
		return room->heap;
	return room->heap + need + 3 * room->bytes + 1024 * (uint64_t)room->n;
}

int h5_attr_set_check(h5_attr_room *room, h5_file *f, uint64_t addr, const char *name, size_t name_len,
		      const void *val, size_t len, int raw, enum h5_fstr fstr)
{
	uint64_t heap = 0;
	h5_attr_change ch = { .name = name, .name_len = name_len, .val = val ? val : "", .len = len, .raw = raw,
		      .dry = true, .heap = &heap, .fstr = fstr };
	size_t old_size = SIZE_MAX;         /* the message's size now (compact) */
	h5_ohdr *oh = NULL;
	found fd;
	h5_dense d;
	bool dense_open = false, isnew = false;
	uint8_t *msg = NULL;
	size_t mlen = 0;
	int rc;

	if (name_len == 0 || memchr(name, 0, name_len) || name_len > 65534)
		return h5_err_set(H5_ERR_INVAL, "an attribute name cannot be empty or hold a NUL byte");
	pthread_mutex_lock(&f->write_lock);
	/* the cached header, only read (a commit of it drops the copy): a
	 * private load decoded all of a header of 3,000 attributes for every
	 * setfattr (issue 70) */
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc == 0)
		rc = h5_attr_scan(&fd, f, oh, name, name_len);
	if (rc == 0 && fd.dense) {
		/* one lookup in the name index, not the store loaded: the
		 * write-behind asks this per change */
		struct check_ctx k = { .name = name, .name_len = name_len };

		rc = h5_dense_open(&d, f, H5_DENSE_ATTRS, fd.fheap, fd.name_bt2);
		dense_open = rc == 0;
		if (rc == 0)
			rc = h5_dense_find(&d, name, name_len, check_found, &k);
		isnew = rc == H5_ERR_NOTFOUND;
		if (isnew)
			h5_err_clear();
		if (rc == 0 || isnew)
			rc = h5_attr_build(&msg, &mlen, f, oh, k.msg, k.len, &ch);
		free(k.msg);
	} else if (rc == 0) {
		const h5_msg *m = fd.idx != SIZE_MAX ? &oh->msgs[fd.idx] : NULL;

		isnew = !m;
		old_size = m ? m->size : SIZE_MAX;
		rc = h5_attr_build(&msg, &mlen, f, oh, m ? m->data : NULL, m ? m->size : 0, &ch);
	}
	if (rc == 0)
		rc = place_check(room, f, oh, &fd, dense_open ? &d : NULL, mlen, isnew, name, name_len);
	if (rc == 0 && room) {
		room->n++;
		room->nnew += isnew;
		room->bytes += mlen + (isnew ? len : 0);
		room->heap += heap;
		/* a message of its old size is rewritten where it is */
		room->ngrow += isnew || mlen != old_size;
		room->need = batch_need(room, dense_open ? &d : NULL);
	}
	if (rc == 0 && isnew)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no attribute \"%.*s\"", (int)name_len, name);
	if (dense_open)
		h5_dense_close(&d);
	h5_ohdr_release(f, oh);
	pthread_mutex_unlock(&f->write_lock);
	free(msg);
	return rc;
}

/* ch[0..n) into dense storage: the store loaded once, written anew once,
 * one commit. */
int h5_attr_dense_batch(h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch, size_t n)
{
	h5_dense_set s = { 0 };
	int64_t max_crt = fd->max_crt;
	uint64_t *coll = calloc(n ? n : 1, sizeof(*coll));
	int rc = coll ? h5_dense_set_load(&s, f, H5_DENSE_ATTRS, fd->fheap, fd->name_bt2, fd->corder_bt2)
		      : h5_err_set(H5_ERR_NOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t at = h5_dense_set_find(&s, ch[i].name, ch[i].name_len);

		coll[i] = H5_ADDR_UNDEF;
		if ((at != SIZE_MAX) != ch[i].set) {
			rc = h5_err_set(at != SIZE_MAX ? H5_ERR_INVAL : H5_ERR_NOTFOUND, "attribute \"%.*s\" %s",
					(int)ch[i].name_len, ch[i].name, at != SIZE_MAX ? "is there already" : "is gone");
			break;
		}
		/* the value replaced: its collection's reference goes with
		 * the commit (as h5_attr_apply_dense does; a batch's replaced values
		 * were never freed) */
		if (at != SIZE_MAX && s.o[at].msg)
			coll[i] = h5_attr_owned_coll(f, s.o[at].msg, s.o[at].len);
		rc = h5_attr_dense_put(&s, at, &max_crt, f, c->e.oh, fd, &ch[i]);
	}
	if (rc == 0)
		rc = h5_dense_set_switch(c, f, &s, fd->ainfo, max_crt);
	if (rc == 0)
		rc = h5_ohdr_commit_cow(c, f, false);
	if (rc == 0) {
		h5_dense_set_old_free(&s, f, c->ticket);        /* the old store */
		for (size_t i = 0; i < n; i++)
			h5_attr_coll_free(f, coll[i], c->ticket);
		h5_ohdr_note(f, H5_NOTE_ATTRS, c->e.oh->addr);
	}
	h5_dense_set_free(&s);
	free(coll);
	return rc;
}

/* New names of a batch put at once (NEW_RUN_MAX at most) */
#define NEW_RUN_MAX 1024

/* How many changes from ch[0] are new names of a version 1 header, ch[0]
 * one already (fd, scanned for it): a version 1 header has no creation
 * order, no Attribute Info message and no dense storage, so they are
 * messages put together (h5_ohdr_put_new) in one commit. */
static size_t new_run(h5_file *f, const h5_ohdr *oh, const found *fd, const h5_attr_change *ch, size_t n)
{
	size_t k = 0;

	if (oh->version != 1 || fd->idx != SIZE_MAX || !ch[0].val || ch[0].set)
		return 0;
	if (n > NEW_RUN_MAX)
		n = NEW_RUN_MAX;
	/* (the prefix's message count is 2 bytes: the new ones, their free
	 * space and a continuation message) */
	if (oh->nmsgs + n + 2 > 65535)
		return 0;
	for (k = 1; k < n && ch[k].val && !ch[k].set; k++) {
		found o;
		bool again = false;

		if (h5_attr_scan(&o, f, oh, ch[k].name, ch[k].name_len) < 0) {
			h5_err_clear();
			break;
		}
		for (size_t j = 0; j < k && !again; j++)
			again = ch[j].name_len == ch[k].name_len && memcmp(ch[j].name, ch[k].name, ch[k].name_len) == 0;
		if (o.idx != SIZE_MAX || again)
			break;
	}
	return k;
}

/* ch[0..k) (new_run) into the header c opened: one put, one commit (a
 * batch of 1,000 new names on a header of 3,000 was 1,000 commits, each
 * loading the whole header: seconds with the batch's lock held). */
static int apply_new(h5_ohdr_change *c, h5_file *f, uint64_t addr, const h5_attr_change *ch, size_t k)
{
	h5_ohdr_new_msg *m = calloc(k, sizeof(*m));
	uint8_t **msg = calloc(k, sizeof(*msg));
	int rc = m && msg ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < k; i++) {
		size_t mlen = 0;

		rc = h5_attr_build(&msg[i], &mlen, f, c->e.oh, NULL, 0, &ch[i]);
		m[i] = (h5_ohdr_new_msg){ .type = H5_MSG_ATTR, .body = msg[i], .len = mlen };
	}
	if (rc == 0)
		rc = h5_ohdr_put_new(c, f, m, k);
	if (rc == 0)
		rc = h5_ohdr_commit(c, f, false);
	if (rc == 0)
		h5_ohdr_note(f, H5_NOTE_ATTRS, addr);
	for (size_t i = 0; msg && i < k; i++)
		free(msg[i]);
	free(msg);
	free(m);
	return rc;
}

/* The batch in order: compact storage a commit per attribute (as
 * h5_attr_write) or per run of new names (new_run), dense storage (from
 * the start, or once the header moved there) the rest in one. */
int h5_attr_batch_locked(size_t *done, h5_file *f, uint64_t addr, const h5_attr_change *ch, size_t n)
{
	size_t i = 0;
	int rc = 0;

	while (rc == 0 && i < n) {
		h5_ohdr_change c;
		found fd;
		size_t k = 1;

		rc = h5_ohdr_change_open(&c, f, addr);
		if (rc == 0)
			rc = h5_attr_scan(&fd, f, c.e.oh, ch[i].name, ch[i].name_len);
		if (rc == 0 && fd.dense) {
			rc = h5_attr_dense_batch(&c, f, &fd, ch + i, n - i);
			h5_ohdr_change_close(&c);
			if (rc == 0)
				i = n;
			break;
		}
		if (rc == 0 && (fd.idx != SIZE_MAX) != ch[i].set)
			rc = h5_err_set(fd.idx != SIZE_MAX ? H5_ERR_INVAL : H5_ERR_NOTFOUND, "attribute \"%.*s\" %s",
					(int)ch[i].name_len, ch[i].name,
					fd.idx != SIZE_MAX ? "is there already" : "is gone");
		if (rc == 0 && (k = new_run(f, c.e.oh, &fd, ch + i, n - i)) > 1) {
			rc = apply_new(&c, f, addr, ch + i, k);
		} else if (rc == 0) {
			k = 1;
			rc = apply_open(&c, &fd, f, addr, &ch[i]);
		}
		h5_ohdr_change_close(&c);
		if (rc == 0)
			i += k;
	}
	h5_file_attr_moved(f);
	*done = i;
	return rc;
}

int h5_attr_write_batch(size_t *done, h5_file *f, uint64_t addr, const h5_attr_str *it, size_t n)
{
	size_t esz = 8 + f->fmt.sizeof_addr, vlen = 0;
	h5_attr_change *ch = calloc(n ? n : 1, sizeof(*ch));
	const char **s = calloc(n ? n : 1, sizeof(*s));
	size_t *l = calloc(n ? n : 1, sizeof(*l));
	uint8_t *vd = NULL;
	int rc = 0;

	*done = 0;
	if (!ch || !s || !l) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!h5_file_writable(f)) {
		rc = h5_err_set(H5_ERR_ROFS, "the file is open read-only");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (it[i].name_len == 0 || memchr(it[i].name, 0, it[i].name_len) || it[i].name_len > 65534) {
			rc = h5_err_set(H5_ERR_INVAL, "an attribute name cannot be empty or hold a NUL byte");
			goto out;
		}
		/* new names' variable-length strings: existing attributes'
		 * values are built by their own type (build), as h5_attr_write
		 * does, and fixed-length strings are in their message */
		s[i] = it[i].val && !it[i].set && !it[i].fstr ? it[i].val : "";
		l[i] = it[i].val && !it[i].set && !it[i].fstr ? it[i].len : 0;
	}
	pthread_mutex_lock(&f->write_lock);
	/* every string in one global heap collection (h5py's strings share
	 * one too), written at the allocation end before anything points at it */
	rc = h5_attr_vstr_data(&vd, &vlen, f, s, l, n, false);
	for (size_t i = 0; rc == 0 && i < n; i++)
		ch[i] = it[i].set ? (h5_attr_change){ .name = it[i].name, .name_len = it[i].name_len,
					       .val = it[i].val ? it[i].val : "", .len = it[i].len, .raw = it[i].raw,
					       .set = true }
				  : it[i].fstr ? (h5_attr_change){ .name = it[i].name, .name_len = it[i].name_len,
							   .val = it[i].val ? it[i].val : "", .len = it[i].len,
							   .raw = it[i].raw, .fstr = it[i].fstr }
				  : (h5_attr_change){ .name = it[i].name, .name_len = it[i].name_len, .val = s[i], .len = l[i],
					      .vdata = vd + i * esz };
	if (rc == 0)
		rc = h5_attr_batch_locked(done, f, addr, ch, n);
	pthread_mutex_unlock(&f->write_lock);
out:
	free(vd);
	free(ch);
	free(s);
	free(l);
	return rc;
}
