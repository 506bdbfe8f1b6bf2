/*
 * link_write.c - adding and removing links (h5core.h "adding links"):
 * names checked, write_lock taken, the group's storage form found and its
 * entry of link_store.h's table called; new groups; removing a link (the
 * count of an object that had several hard links lowered after). Hard
 * links and moves: link_move.c.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "txn.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "checksum.h"
#include "space.h"
#include "group.h"
#include "dense.h"
#include "attr.h"
#include "dataset.h"
#include "freesp.h"
#include "link_store.h"
#include "loose.h"
#include "attr_write_int.h"
#include "file_ws.h"
#include "gslot.h"
#include "fheap.h"


/* The forms h5fs writes, by h5_lstore_kind (NULL: refused). */
static const h5_lstore_ops *const lstore_table[H5_LSTORE_NKINDS] = {
	[H5_LSTORE_COMPACT] = &h5_lstore_compact,
	[H5_LSTORE_DENSE] = &h5_lstore_dense,
	[H5_LSTORE_STAB] = &h5_lstore_stab,
};

int h5_lstore_of(const h5_lstore_ops **ops, h5_lstore_kind *kind, h5_file *f, const h5_ohdr *oh)
{
	static const h5_lstore_kind of_form[] = {
		[H5_GROUP_STAB] = H5_LSTORE_STAB,
		[H5_GROUP_COMPACT] = H5_LSTORE_COMPACT,
		[H5_GROUP_DENSE] = H5_LSTORE_DENSE,
	};
	h5_group_storage gs;
	int rc;

	*ops = NULL;
	rc = h5_group_storage_get(&gs, f, oh, oh->addr);
	if (rc < 0)
		return rc;
	*kind = of_form[gs.form];
	*ops = lstore_table[*kind];
	if (*ops == NULL)
		return h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx: its link storage is not written",
				  (unsigned long long)oh->addr);
	return 0;
}

/* The ops of the group at addr. */
int h5_lstore_at(const h5_lstore_ops **ops, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	h5_lstore_kind kind;
	int rc = h5_ohdr_get(&oh, f, addr);     /* (cached: as stab_open) */

	if (rc == 0)
		rc = h5_lstore_of(ops, &kind, f, oh);
	h5_ohdr_release(f, oh);
	return rc;
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
	const h5_lstore_ops *ops;
	h5_link l = { 0 };
	int rc = h5_lstore_at(&ops, f, group);

	if (rc < 0)
		return rc;
	l.name = (char *)name;
	l.name_len = name_len;
	l.type = type;
	l.addr = addr;
	l.target = (char *)target;
	l.cset = h5_name_cset(name, name_len);
	rc = ops->insert(f, group, &l, start, durable);
	h5_file_links_moved(f, group);
	return rc;
}

/* Whether the group's link storage takes a link of mlen bytes (its
 * message with a creation order, the largest it can be) in place: a
 * header message is at most 64 KiB (IV.A.1); a dense store's object at
 * most its heap's largest managed object (a larger one would be a huge
 * object, III.G, which h5fs does not write: dense_write.c). A compact
 * group at its limit moves to dense storage only when every link fits
 * there (link_compact.c dense_holds), and a symbol table keeps names and
 * targets in its local heap: no bound but the message's. */
static int fits_locked(h5_file *f, uint64_t group, size_t mlen)
{
	h5_ohdr *oh = NULL;
	h5_group_storage gs;
	h5_fheap *hp = NULL;
	h5_fheap_params p;
	int rc = h5_ohdr_get(&oh, f, group);

	if (rc == 0)
		rc = h5_group_storage_get(&gs, f, oh, group);
	if (rc < 0)
		goto out;
	if (gs.form != H5_GROUP_STAB && mlen > 65535 - 16) {
		rc = h5_err_set(H5_ERR_LIMIT, "a link message of %zu bytes is larger than a header message can be "
				"(64 KiB)", mlen);
	} else if (gs.form == H5_GROUP_DENSE && h5_addr_defined(gs.linfo.fheap_addr)) {
		rc = h5_fheap_open(&hp, f, gs.linfo.fheap_addr);
		if (rc == 0)
			rc = h5_fheap_params_get(&p, hp);
		if (rc == 0 && mlen > p.max_man_size)
			rc = h5_err_set(H5_ERR_LIMIT, "a link message of %zu bytes is more than group 0x%llx's dense "
					"store keeps in place (%u: a larger one is a huge object, which h5fs does not "
					"write)", mlen, (unsigned long long)group, (unsigned)p.max_man_size);
	}
out:
	h5_fheap_close(hp);
	if (oh)
		h5_ohdr_release(f, oh);
	return rc;
}

int h5_link_fits(h5_file *f, uint64_t group, size_t name_len, h5_link_type type, const char *target)
{
	char name[256] = { 0 };
	h5_link l = { .name = name, .name_len = name_len > 255 ? 255 : name_len, .type = type,
		      .target = (char *)target, .has_corder = 1, .corder = INT64_MAX };
	uint8_t *msg = NULL;
	size_t mlen = 0;
	int rc;

	if (name_len > 255)
		return h5_err_set(H5_ERR_LIMIT, "a name of %zu bytes", name_len);
	memset(name, 'x', l.name_len);
	rc = h5_link_encode(&msg, &mlen, &f->fmt, &l);
	free(msg);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	rc = fits_locked(f, group, mlen);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_link_insert_locked(h5_file *f, uint64_t group, const h5_link *link, const char *name, size_t name_len)
{
	const h5_lstore_ops *ops;
	h5_link l = *link;
	int rc = link_name_check(name, name_len);

	if (rc == 0)
		rc = h5_lstore_at(&ops, f, group);
	if (rc < 0)
		return rc;
	l.name = (char *)name;
	l.name_len = name_len;
	l.cset = h5_name_cset(name, name_len);
	l.has_corder = 0;
	rc = ops->insert(f, group, &l, UINT64_MAX, false);
	h5_file_links_moved(f, group);
	return rc;
}

int h5_link_insert_new_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr,
			      uint64_t start)
{
	int rc = link_name_check(name, name_len);

	return rc < 0 ? rc : insert(f, group, name, name_len, H5_LINK_HARD, addr, NULL, 0, start);
}

/* Without room_many (compact storage): one commit per link (its size
 * bounded by what its names and messages take: 64 KiB a link is far
 * above h5fs's own). */
#define ROOM_PER_LINK ((uint64_t)64 << 10)

int h5_link_batch_room(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes)
{
	const h5_lstore_ops *ops;
	int rc;

	*need = 0;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_lstore_at(&ops, f, group);
	if (rc == 0 && ops->room_many)
		rc = ops->room_many(need, f, group, n, name_bytes);
	else if (rc == 0)
		*need = (uint64_t)n * ROOM_PER_LINK + 2 * name_bytes;
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_link_insert_batch(size_t *done, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			 size_t n)
{
	struct h5_wstate *ws = h5_ws(f);
	const h5_lstore_ops *ops;
	h5_link *l = calloc(n ? n : 1, sizeof(*l));
	uint64_t start, gseq;
	h5_txn t;
	int rc = l ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	*done = 0;
	if (rc == 0 && !h5_file_writable(f))
		rc = h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(names[i]);

		rc = link_name_check(names[i], len);
		l[i] = (h5_link){ .name = names[i], .name_len = len, .type = H5_LINK_HARD, .addr = addrs[i],
				  .cset = h5_name_cset(names[i], len) };
	}
	if (rc < 0 || n == 0)
		goto out;
	pthread_mutex_lock(&f->write_lock);
	/* the stage covers every loose object's space, from the first, and
	 * the groups mkdir wrote into slots taken ahead (gslot.h); one in
	 * reused space is made durable first, as group_create_locked does */
	start = ws->nloose ? ws->loose_start : h5_space_end(f);
	h5_txn_begin(&t, f, false, NULL, NULL);
	if (h5_gslot_stage(f, &start, &gseq))
		rc = h5_txn_order(&t);
	/* one commit each where the form has no insert_many (compact); the
	 * form may change on the way (a full compact group goes dense with
	 * its next link), the rest then in one commit */
	while (rc == 0 && *done < n) {
		rc = h5_lstore_at(&ops, f, group);
		if (rc == 0 && ops->insert_many) {
			rc = ops->insert_many(f, group, l + *done, n - *done, start);
			if (rc == 0)
				*done = n;
		} else if (rc == 0) {
			rc = ops->insert(f, group, &l[*done], start, false);
			if (rc == 0)
				++*done;
		}
	}
	h5_file_links_moved(f, group);
	for (size_t i = 0; i < *done; i++)
		h5_loose_drop(f, addrs[i]);
	if (ws->nloose == 0)
		ws->loose_start = 0;
	if (rc == 0)
		h5_gslot_staged(f, gseq);
	/* the next mkdirs' room, taken here where write_lock is held anyway
	 * (a mkdir that finds the pool empty waits for it) */
	if (rc == 0 && h5_gslot_refill_locked(f, group) < 0)
		h5_err_clear();
	pthread_mutex_unlock(&f->write_lock);
out:
	free(l);
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

void h5_group_crt_of(h5_group_crt *crt, const h5_ohdr *oh)
{
	crt->links = 0;
	crt->attrs = oh->version >= 2 ? (uint8_t)((oh->flags >> 2) & 3) : 0;
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_LINFO && oh->msgs[i].size >= 2)
			crt->links = oh->msgs[i].data[1] & 3;
}

/* The ops of the parent group and the creation order its children track
 * (the parent's, as netCDF-4 makes every group alike). */
static int parent_form(const h5_lstore_ops **ops, h5_group_crt *crt, h5_file *f, uint64_t parent)
{
	h5_ohdr *oh = NULL;
	h5_lstore_kind kind;
	int rc = h5_ohdr_load(&oh, f, parent);

	if (rc == 0)
		rc = h5_lstore_of(ops, &kind, f, oh);
	if (rc == 0)
		h5_group_crt_of(crt, oh);
	h5_ohdr_free(oh);
	return rc;
}

static void group_blocks(h5_freesp *gone, h5_file *f, uint64_t addr);

/* A new group of ops' form at *addr (write_lock held): its space taken
 * (within a page: its header is rewritten in place later), written whole. */
static int group_write(uint64_t *addr, h5_file *f, const h5_lstore_ops *ops, const h5_group_crt *crt)
{
	size_t len = 0;
	uint8_t *b = NULL;
	int rc = ops->new_group(NULL, &len, f, crt, 0);

	if (rc == 0 && !(b = malloc(len)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_space_take_page(addr, f, len);
	if (rc == 0)
		rc = ops->new_group(b, &len, f, crt, *addr);
	if (rc == 0)
		rc = h5_file_write(f, *addr, b, len);
	free(b);
	return rc;
}

/* A new group under parent, write_lock held: linked by name, or (name
 * NULL) left loose for the link batch (h5_loose_add), which links it at
 * its commit; then (loose) slots for the next ones taken ahead
 * (gslot.h). */
static int group_create_locked(uint64_t *addr, h5_file *f, uint64_t parent, const char *name, size_t name_len)
{
	const h5_lstore_ops *ops;
	h5_group_crt crt = { 0 };
	uint64_t start = h5_space_end(f), reused = h5_ws(f)->reused;
	int rc = parent_form(&ops, &crt, f, parent);

	if (rc == 0)
		rc = group_write(addr, f, ops, &crt);
	/* a header in reused space is durable before a link names it: the
	 * link's commit stages (fsyncs) only when the allocation end moved,
	 * and the batch's may stage only from the allocation end it began at
	 * (a compact parent's header edit), which reused space lies below */
	if (rc == 0 && h5_ws(f)->reused != reused) {
		h5_txn t;

		h5_txn_begin(&t, f, false, NULL, NULL);
		rc = h5_txn_order(&t);
	}
	if (rc == 0)
		rc = name ? insert(f, parent, name, name_len, H5_LINK_HARD, *addr, NULL, 0, start)
			  : h5_loose_add(f, *addr, start);
	if (rc < 0 && h5_addr_defined(*addr)) {
		/* the new group's blocks, which nothing references, free again
		 * (else left unreferenced, wherever they were placed) */
		h5_freesp gone = { .merge = true };
		char *why = strdup(h5_err_msg());

		group_blocks(&gone, f, *addr);
		h5_space_free_noted(f, &gone, 0);
		h5_freesp_clear(&gone);
		h5_err_set(rc, "%s", why ? why : "out of memory");
		free(why);
		*addr = H5_ADDR_UNDEF;
	}
	if (rc == 0 && !name) {
		size_t len = 0;

		/* (a pool that cannot be filled: the next mkdir comes here) */
		if (ops->new_group(NULL, &len, f, &crt, 0) < 0 || h5_gslot_fill_locked(f, parent, ops, &crt, len) < 0)
			h5_err_clear();
	}
	return rc;
}

int h5_group_create(uint64_t *addr, h5_file *f, uint64_t parent, const char *name, size_t name_len)
{
	int rc;

	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	rc = link_name_check(name, name_len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	rc = group_create_locked(addr, f, parent, name, name_len);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* Without write_lock when a slot taken ahead holds it (gslot.h): the
 * header written there, counted in the next link commit's stage; else the
 * old way, under write_lock, which also fills the pool for the next. */
static bool create_in_slot(uint64_t *addr, h5_file *f, uint64_t parent)
{
	const h5_lstore_ops *ops;
	h5_group_crt crt;
	h5_gslot s;
	size_t len;
	uint8_t *b;
	int rc;

	if (!h5_gslot_take(&s, &ops, &crt, &len, f, parent))
		return false;
	b = malloc(len);
	rc = b ? ops->new_group(b, &len, f, &crt, s.addr) : h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_file_write(f, s.addr, b, len);
	free(b);
	if (rc < 0) {
		/* (the locked way next, which reports its own error) */
		h5_err_clear();
		h5_gslot_untake(f, &s);
		return false;
	}
	h5_gslot_written(f, &s);
	*addr = s.addr;
	h5_gslot_top_up(f, parent);
	return true;
}

int h5_group_create_loose(uint64_t *addr, h5_file *f, uint64_t parent)
{
	int rc;

	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (create_in_slot(addr, f, parent))
		return 0;
	pthread_mutex_lock(&f->write_lock);
	rc = group_create_locked(addr, f, parent, NULL, 0);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* ---- removing a link ------------------------------------------------------------ */

/* h5_group_iterate's callback: one link is enough. */
static int any_link(const h5_link *l, void *ud)
{
	(void)l;
	*(bool *)ud = true;
	return 1;
}

/* want 1: NAME (target: its object, UNDEF: no hard link) must be an empty
 * group (rmdir); 2: no group (unlink). */
static int check_want(h5_file *f, uint64_t target, const char *name, size_t name_len, int want)
{
	h5_ohdr *oh = NULL;
	bool is_group, nonempty = false;
	int rc;

	if (!h5_addr_defined(target))
		return want == 1 ? h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name) : 0;
	rc = h5_ohdr_load(&oh, f, target);
	if (rc < 0)
		return rc;
	is_group = h5_ohdr_is_group(oh);
	h5_ohdr_free(oh);
	if (want == 1 && !is_group)
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name);
	if (want == 2 && is_group)
		return h5_err_set(H5_ERR_PERM, "\"%.*s\" is a group", (int)name_len, name);
	if (want == 1) {
		rc = h5_group_iterate(f, target, any_link, &nonempty);
		if (rc < 0)
			return rc;
		if (nonempty)
			return h5_err_set(H5_ERR_PERM, "group \"%.*s\" is not empty", (int)name_len, name);
	}
	return 0;
}

/* The blocks of the group at addr, noted in gone (h5_space_note) before
 * its last link goes (rmdir: it is empty): its header's chunks, its link
 * storage (a symbol table's nodes and local heap, a dense store) and its
 * dense attribute storage, as the space report lists them. libhdf5 frees
 * an object whose count drops to 0 (H5O__delete); nothing when the group
 * has other links, or when a block cannot be listed (then all are only
 * left behind, as before any reuse). Object references to it dangle, as
 * after libhdf5's delete. */
static void group_blocks(h5_freesp *gone, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	h5_group_storage gs;
	int rc = h5_ohdr_load(&oh, f, addr);

	if (rc == 0 && oh->refcount > 1)
		goto out;
	/* the slots taken ahead for its children: freed with it (its
	 * address may next hold a group of another form) */
	h5_gslot_release_locked(f, addr, false);
	if (rc == 0)
		rc = h5_group_storage_get(&gs, f, oh, addr);
	for (size_t i = 0; rc == 0 && oh && i < oh->nchunks; i++)
		rc = h5_space_note(oh->chunks[i].addr, oh->chunks[i].len, gone);
	if (rc == 0 && gs.form == H5_GROUP_STAB)
		rc = h5_group_stab_blocks(f, &gs.stab, h5_space_note, gone);
	if (rc == 0 && gs.form != H5_GROUP_STAB && h5_addr_defined(gs.linfo.fheap_addr))
		rc = h5_dense_blocks(f, H5_DENSE_LINKS, gs.linfo.fheap_addr, gs.linfo.name_bt2_addr,
				     gs.linfo.corder_bt2_addr, h5_space_note, gone);
	if (rc == 0)
		rc = h5_attr_dense_blocks(f, oh, h5_space_note, gone);
out:
	if (rc < 0) {
		h5_err_clear();
		h5_freesp_clear(gone);
	}
	h5_ohdr_free(oh);
}

int h5_link_remove_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, int want)
{
	const h5_lstore_ops *ops;
	h5_link l = { 0 };
	char *cname = strndup(name, name_len);
	uint64_t target = H5_ADDR_UNDEF;
	h5_freesp gone = { .merge = true };
	int rc;

	if (cname == NULL)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_lstore_at(&ops, f, group);
	if (rc == 0)
		rc = h5_group_lookup(&l, f, group, cname);
	if (rc == 0 && l.type == H5_LINK_HARD)
		target = l.addr;
	h5_link_clear(&l);
	if (rc == 0 && want)
		rc = check_want(f, target, name, name_len, want);
	if (rc == 0 && want == 1)
		group_blocks(&gone, f, target);
	if (rc == 0) {
		rc = ops->remove(f, group, name, name_len, false);
		h5_file_links_moved(f, group);
	}
	/* the removed group's space: referenced by nothing once the removal
	 * is durable (the next fsync to begin from now), and its attributes'
	 * values this session wrote */
	if (rc == 0 && gone.n) {
		h5_attr_colls_drop(f, target, 0);
		h5_ohdr_forget_conts(f, target);
	}
	if (rc == 0)
		h5_space_free_noted(f, &gone, 0);
	h5_freesp_clear(&gone);
	/* then, when the object has other links, its count drops (after the
	 * link went: a crash between leaves the count too high, which only
	 * keeps the object when its last link goes) */
	if (rc == 0 && h5_addr_defined(target)) {
		(void)h5_obj_refcount_add(f, target, -1);
		h5_err_clear();
	}
	free(cname);
	return rc;
}

/* ---- a removed dataset's storage ----------------------------------------------
 * Its last link gone, a dataset's header chunks, dense attributes and
 * stored data are referenced by nothing (libhdf5's H5O__delete at count
 * 0). Unlike a removed group's (freed with its removal), they are kept
 * until the caller says nothing reads them (issue 53: 300 cp/rm cycles of
 * 64 KiB files grew FILE by 20 MB). */
struct h5_gone {
	h5_file *f;
	uint64_t addr;          /* the dataset's header */
};

static void dataset_blocks(h5_freesp *gone, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	h5_dataset *d = NULL;
	int rc = h5_ohdr_load(&oh, f, addr);

	if (rc == 0 && (oh->refcount > 1 || !h5_ohdr_find(oh, H5_MSG_LAYOUT)))
		goto out;
	for (size_t i = 0; rc == 0 && i < oh->nchunks; i++)
		rc = h5_space_note(oh->chunks[i].addr, oh->chunks[i].len, gone);
	if (rc == 0)
		rc = h5_attr_dense_blocks(f, oh, h5_space_note, gone);
	if (rc == 0)
		rc = h5_dataset_open(&d, f, addr);
	if (rc == 0)
		rc = h5_dataset_blocks(d, h5_space_note, gone);
out:
	if (rc < 0) {
		/* (a structure that cannot be walked is left unreferenced) */
		h5_err_clear();
		h5_freesp_clear(gone);
	}
	h5_dataset_close(d);
	h5_ohdr_free(oh);
}

/* What the dataset stores is walked now only to know whether anything
 * is to be freed; the blocks freed are those it stores at the release
 * (h5_gone_release): an open descriptor may append to an unlinked file
 * (stress-ng's files: 545 MB of its rows left unreferenced), and its
 * commits free blocks it stored at the removal (a partial chunk row
 * rewritten), which another change may have taken since - freed twice,
 * they would be handed out while in use. */
int h5_gone_collect(h5_gone **out, h5_file *f, uint64_t addr)
{
	h5_freesp sp = { .merge = true };
	h5_gone *g;

	*out = NULL;
	dataset_blocks(&sp, f, addr);
	if (!sp.n)
		return 0;
	h5_freesp_clear(&sp);
	g = calloc(1, sizeof(*g));
	if (!g)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	g->f = f;
	g->addr = addr;
	*out = g;
	return 0;
}

int h5_link_delete_gone(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_gone **gone)
{
	h5_gone *g = NULL;
	h5_link l = { 0 };
	char *cname;
	int rc;

	*gone = NULL;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	cname = strndup(name, name_len);
	if (!cname)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_mutex_lock(&f->write_lock);
	rc = 0;
	if (h5_group_lookup(&l, f, group, cname) == 0 && l.type == H5_LINK_HARD)
		rc = h5_gone_collect(&g, f, l.addr);
	h5_err_clear();
	h5_link_clear(&l);
	if (rc == 0)
		rc = h5_link_remove_locked(f, group, name, name_len, 2);
	pthread_mutex_unlock(&f->write_lock);
	free(cname);
	if (rc < 0) {
		h5_gone_discard(g);
		return rc;
	}
	*gone = g;
	return 0;
}

/* (the ticket: the next fsync to begin, which makes the removal durable) */
void h5_gone_release(h5_gone *g)
{
	h5_freesp sp = { .merge = true };

	if (!g)
		return;
	pthread_mutex_lock(&g->f->write_lock);
	dataset_blocks(&sp, g->f, g->addr);
	if (sp.n) {
		h5_attr_colls_drop(g->f, g->addr, 0);
		h5_ohdr_forget_conts(g->f, g->addr);
	}
	h5_space_free_noted(g->f, &sp, 0);
	pthread_mutex_unlock(&g->f->write_lock);
	h5_freesp_clear(&sp);
	h5_gone_discard(g);
}

void h5_gone_discard(h5_gone *g)
{
	free(g);
}

/* (a group whose form no longer writes, or not a group now: nothing to
 * move) */
static int group_move_down(h5_file *f, uint64_t group)
{
	const h5_lstore_ops *ops = NULL;
	int rc = h5_lstore_at(&ops, f, group);

	return rc < 0 ? rc : ops->move_down ? ops->move_down(f, group) : 0;
}

int h5_link_move_down(h5_file *f)
{
	return h5_ohdr_notes_each(f, H5_NOTE_GROUP, group_move_down);
}

/* Under write_lock: NAME in group an empty group (*target). */
static int rmdir_check_locked(uint64_t *target, h5_file *f, uint64_t group, const char *name)
{
	h5_link l = { 0 };
	int rc = h5_group_lookup(&l, f, group, name);

	*target = rc == 0 && l.type == H5_LINK_HARD ? l.addr : H5_ADDR_UNDEF;
	h5_link_clear(&l);
	if (rc == 0)
		rc = check_want(f, *target, name, strlen(name), 1);
	return rc;
}

int h5_group_rmdir_check(uint64_t *target, h5_file *f, uint64_t group, const char *name)
{
	int rc;

	pthread_mutex_lock(&f->write_lock);
	rc = rmdir_check_locked(target, f, group, name);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_link_remove_batch(size_t *done, h5_file *f, uint64_t group, char *const *names, size_t n)
{
	const h5_lstore_ops *ops = NULL;
	uint64_t *tg = calloc(n ? n : 1, sizeof(*tg));
	h5_freesp *gone = calloc(n ? n : 1, sizeof(*gone));
	int rc = tg && gone ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	*done = 0;
	if (rc == 0 && !h5_file_writable(f))
		rc = h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (rc < 0 || n == 0)
		goto out;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_lstore_at(&ops, f, group);
	/* every name checked, and its blocks noted, before anything is
	 * written (as h5_link_remove_locked does for one) */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		gone[i].merge = true;
		rc = rmdir_check_locked(&tg[i], f, group, names[i]);
		if (rc == 0)
			group_blocks(&gone[i], f, tg[i]);
	}
	if (rc == 0 && ops->remove_many) {
		rc = ops->remove_many(f, group, names, n);
		if (rc == 0)
			*done = n;
	} else {
		for (size_t i = 0; rc == 0 && i < n; i++) {
			rc = i ? h5_lstore_at(&ops, f, group) : 0;
			if (rc == 0)
				rc = ops->remove(f, group, names[i], strlen(names[i]), false);
			if (rc == 0)
				++*done;
		}
	}
	h5_file_links_moved(f, group);
	/* the removed groups' space, and counts of objects with other
	 * links, as h5_link_remove_locked after its one removal */
	for (size_t i = 0; i < *done; i++) {
		if (gone[i].n) {
			h5_attr_colls_drop(f, tg[i], 0);
			h5_ohdr_forget_conts(f, tg[i]);
		}
		h5_space_free_noted(f, &gone[i], 0);
		if (h5_addr_defined(tg[i])) {
			(void)h5_obj_refcount_add(f, tg[i], -1);
			h5_err_clear();
		}
	}
	pthread_mutex_unlock(&f->write_lock);
out:
	for (size_t i = 0; gone && i < n; i++)
		h5_freesp_clear(&gone[i]);
	free(gone);
	free(tg);
	return rc;
}

int h5_link_delete(h5_file *f, uint64_t group, const char *name, size_t name_len, int want)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = h5_link_remove_locked(f, group, name, name_len, want);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

