/*
 * group.c - listing and looking up the links of a group, in all three
 * storage forms HDF5 uses:
 *
 *  - symbol table ("old style", IV.A.2.r): a v1 B-tree of type 0 whose
 *    leaves point to symbol table nodes (III.B), names in a local heap;
 *  - compact (IV.A.2.c with an undefined heap address): Link messages in the
 *    group's own object header;
 *  - dense: Link messages stored in a fractal heap and indexed by name hash
 *    in a v2 B-tree of type 5 (III.A.2).
 *
 * Iteration is in name order for every form (libhdf5 sorts compact and
 * dense groups by name for H5_INDEX_NAME; symbol tables are stored sorted).
 */
#include "base.h"
#include "addrset.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "lheap.h"
#include "snod.h"
#include "btree1.h"
#include "group.h"
#include "dense.h"

/* ---- loop detection ------------------------------------------------------ */

/* Add addr to the walk's visited set; H5_ERR_LOOP if it was already there. */
static int addr_set_add(h5_addrset *s, uint64_t addr, const char *what)
{
	int rc = h5_addrset_add(s, addr);

	if (rc == 0)
		return h5_err_set(H5_ERR_LOOP, "%s at 0x%llx is reached twice", what, (unsigned long long)addr);
	return rc < 0 ? rc : 0;
}

/* ---- which storage form ------------------------------------------------- */

bool h5_ohdr_is_group(const h5_ohdr *oh)
{
	return h5_ohdr_find(oh, H5_MSG_STAB) || h5_ohdr_find(oh, H5_MSG_LINFO) ||
	       h5_ohdr_find(oh, H5_MSG_LINK);
}

static int group_read_msg(h5_file *f, const h5_msg *m, void *out,
			  int (*decode)(void *, const h5_fmt *, const uint8_t *, size_t))
{
	const uint8_t *data;
	size_t len;
	void *owned = NULL;
	int rc;

	rc = h5_msg_read(&data, &len, &owned, f, m);
	if (rc < 0)
		return rc;
	rc = decode(out, &f->fmt, data, len);
	free(owned);
	return rc;
}

static int stab_decode_v(void *out, const h5_fmt *fmt, const uint8_t *b, size_t l)
{
	return h5_stab_decode(out, fmt, b, l);
}

static int linfo_decode_v(void *out, const h5_fmt *fmt, const uint8_t *b, size_t l)
{
	return h5_linfo_decode(out, fmt, b, l);
}

int h5_group_storage_get(h5_group_storage *gs, h5_file *f, const h5_ohdr *oh, uint64_t addr)
{
	const h5_msg *m, *stab;

	memset(gs, 0, sizeof(*gs));
	/* libhdf5 (H5G__obj_iterate) asks for the Link Info message first: a
	 * new-style group is compact or dense according to its heap address.
	 * (h5_ohdr_find knows an absent type without a pass: a group of
	 * 2,000 attributes was scanned whole by every lookup of a name in
	 * it, issue 82) */
	m = h5_ohdr_find(oh, H5_MSG_LINFO);
	if (m) {
		int rc = group_read_msg(f, m, &gs->linfo, linfo_decode_v);

		if (rc < 0)
			return rc;
		gs->form = h5_addr_defined(gs->linfo.fheap_addr) ? H5_GROUP_DENSE : H5_GROUP_COMPACT;
		return 0;
	}
	stab = h5_ohdr_find(oh, H5_MSG_STAB);
	if (stab) {
		gs->form = H5_GROUP_STAB;
		return group_read_msg(f, stab, &gs->stab, stab_decode_v);
	}
	if (h5_ohdr_find(oh, H5_MSG_LINK)) {
		gs->form = H5_GROUP_COMPACT;
		return 0;
	}
	/* A v0/v1 root group may have its symbol table only in the superblock's
	 * root entry scratch pad (libhdf5's H5G_mkroot tolerates this). */
	if (addr == f->root_addr && f->root_stab_cached && h5_addr_defined(f->root_btree_addr) &&
	    h5_addr_defined(f->root_heap_addr)) {
		gs->form = H5_GROUP_STAB;
		gs->stab.btree_addr = f->root_btree_addr;
		gs->stab.heap_addr = f->root_heap_addr;
		return 0;
	}
	return h5_err_set(H5_ERR_INVAL, "object at 0x%llx is not a group", (unsigned long long)addr);
}

/* ---- link lists (compact and dense are sorted before the callback) ------- */

struct link_list {
	h5_link *v;
	size_t n, cap;
};

static void link_list_free(struct link_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		h5_link_clear(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Takes ownership of *lnk (and clears it) on success. */
static int link_list_push(struct link_list *l, h5_link *lnk)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		h5_link *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = *lnk;
	memset(lnk, 0, sizeof(*lnk));
	return 0;
}

/* Byte order, shorter first on a tie: strcmp order for names without NULs. */
static int link_name_cmp(const void *a, const void *b)
{
	const h5_link *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int link_list_emit(h5_file *f, struct link_list *l, h5_link_cb cb, void *ud)
{
	uint64_t a[H5_PREFETCH_MAX];
	size_t k = 0;

	/* the children's headers are read next: fetched together if remote */
	for (size_t i = 0; i < l->n && k < H5_PREFETCH_MAX; i++)
		if (l->v[i].type == H5_LINK_HARD)
			a[k++] = l->v[i].addr;
	h5_file_prefetch(f, a, k);
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), link_name_cmp);
	for (size_t i = 0; i < l->n; i++) {
		int rc = cb(&l->v[i], ud);

		if (rc)
			return rc;
	}
	return 0;
}

static bool link_name_is(const h5_link *l, const char *name, size_t len)
{
	return l->name_len == len && memcmp(l->name, name, len) == 0;
}

/* ---- compact storage ---------------------------------------------------- */

/* Decode one Link message of a compact group. User-defined link types come
 * back as H5_ERR_UNSUPPORTED, which callers treat as "not listed": h5_link
 * cannot represent them, and one such link must not hide the others. */
static int compact_decode(h5_link *out, h5_file *f, const h5_msg *m)
{
	const uint8_t *data;
	size_t len;
	void *owned = NULL;
	int rc;

	rc = h5_msg_read(&data, &len, &owned, f, m);
	if (rc < 0)
		return rc;
	rc = h5_link_decode(out, data, len, &f->fmt);
	free(owned);
	return rc;
}

/* Each link message of a compact group, decoded, to fn (which takes the
 * link or clears it); fn returning 1 stops the walk with 0. Links of a
 * type this build does not know are skipped, as libhdf5 does. */
static int compact_each(h5_file *f, const h5_ohdr *oh, int (*fn)(h5_link *lnk, void *ud), void *ud)
{
	h5_link lnk;
	int rc;

	for (size_t i = 0; i < oh->nmsgs; i++) {
		if (oh->msgs[i].type != H5_MSG_LINK)
			continue;
		rc = compact_decode(&lnk, f, &oh->msgs[i]);
		if (rc == H5_ERR_UNSUPPORTED)
			continue;
		if (rc < 0)
			return h5_err_wrap(rc, "group at 0x%llx: ", (unsigned long long)oh->addr);
		rc = fn(&lnk, ud);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
	}
	return 0;
}

static int collect_one(h5_link *lnk, void *ud)
{
	int rc = link_list_push(ud, lnk);

	if (rc < 0)
		h5_link_clear(lnk);
	return rc;
}

static int compact_collect(struct link_list *l, h5_file *f, const h5_ohdr *oh)
{
	return compact_each(f, oh, collect_one, l);
}

struct compact_find {
	const char *name;
	size_t len;
	h5_link *out;
	bool found;
};

static int find_one(h5_link *lnk, void *ud)
{
	struct compact_find *c = ud;

	if (link_name_is(lnk, c->name, c->len)) {
		*c->out = *lnk;
		c->found = true;
		return 1;
	}
	h5_link_clear(lnk);
	return 0;
}

static int compact_lookup(h5_link *out, h5_file *f, const h5_ohdr *oh, const char *name, size_t len)
{
	struct compact_find c = { name, len, out, false };
	int rc = compact_each(f, oh, find_one, &c);

	if (rc < 0 || c.found)
		return rc;
	return h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\" in group at 0x%llx", name,
			  (unsigned long long)oh->addr);
}

/* ---- dense storage (dense.c) --------------------------------------------- */

struct dense_ctx {
	h5_file *f;
	struct link_list *list;   /* iterate */
	const char *name;         /* lookup */
	size_t name_len;
	h5_link *out;
};

/* Decode the link a type 5 record points to, checking that the record's
 * hash really is the hash of the decoded name. */
static int dense_rec_link(h5_link *out, h5_file *f, const h5_dense_rec *r)
{
	int rc = h5_link_decode(out, r->obj, r->obj_len, &f->fmt);

	if (rc < 0)
		return rc;
	if (h5_checksum_lookup3(out->name, out->name_len, 0) != r->hash) {
		h5_link_clear(out);
		return h5_err_set(H5_ERR_FORMAT, "link name index: hash 0x%08x does not match its link's name",
				  r->hash);
	}
	return 0;
}

static int dense_collect_cb(const h5_dense_rec *r, void *udp)
{
	struct dense_ctx *c = udp;
	h5_link lnk;
	int rc;

	rc = dense_rec_link(&lnk, c->f, r);
	if (rc == H5_ERR_UNSUPPORTED)
		return 0;
	if (rc < 0)
		return rc;
	rc = link_list_push(c->list, &lnk);
	if (rc < 0)
		h5_link_clear(&lnk);
	return rc;
}

static int dense_found_cb(const h5_dense_rec *r, void *udp)
{
	struct dense_ctx *c = udp;
	h5_link lnk;
	int rc;

	rc = dense_rec_link(&lnk, c->f, r);
	/* A user-defined link is invisible (as in iteration): keep searching. */
	if (rc == H5_ERR_UNSUPPORTED)
		return H5_ERR_NOTFOUND;
	if (rc < 0)
		return rc;
	if (!link_name_is(&lnk, c->name, c->name_len)) {
		/* Same hash, different name: a collision, not our link. */
		h5_link_clear(&lnk);
		return H5_ERR_NOTFOUND;
	}
	*c->out = lnk;
	return 0;
}

static int dense_collect(struct link_list *l, h5_file *f, const h5_linfo *li)
{
	struct dense_ctx c = { .f = f, .list = l };
	h5_dense d;
	int rc;

	rc = h5_dense_open(&d, f, H5_DENSE_LINKS, li->fheap_addr, li->name_bt2_addr);
	if (rc < 0)
		return rc;
	rc = h5_dense_iterate(&d, dense_collect_cb, &c);
	h5_dense_close(&d);
	return rc;
}

static int dense_lookup(h5_link *out, h5_file *f, const h5_linfo *li, const char *name, size_t len)
{
	struct dense_ctx c = { .f = f, .name = name, .name_len = len, .out = out };
	h5_dense d;
	int rc;

	rc = h5_dense_open(&d, f, H5_DENSE_LINKS, li->fheap_addr, li->name_bt2_addr);
	if (rc < 0)
		return rc;
	rc = h5_dense_find(&d, name, len, dense_found_cb, &c);
	h5_dense_close(&d);
	if (rc == H5_ERR_NOTFOUND)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", name);
	return rc;
}

/* ---- symbol table storage ----------------------------------------------- */

/* Turn a symbol table entry into a link: old-style groups know hard links
 * and, with cache type 2, soft links whose value is in the local heap. */
static int stab_entry_link(h5_link *out, const h5_lheap *heap, const h5_snod_entry *e)
{
	const char *name = h5_lheap_string(heap, e->name_off);
	const char *target = NULL;

	memset(out, 0, sizeof(*out));
	out->addr = H5_ADDR_UNDEF;
	if (!name)
		return h5_err_set(H5_ERR_FORMAT, "symbol table entry: name offset %llu outside the local heap",
				  (unsigned long long)e->name_off);
	if (e->cache_type == 2) {
		target = h5_lheap_string(heap, e->link_off);
		if (!target)
			return h5_err_set(H5_ERR_FORMAT, "symbol table entry \"%s\": soft link value offset %u "
					  "outside the local heap", name, e->link_off);
	} else if (!h5_addr_defined(e->obj_addr)) {
		return h5_err_set(H5_ERR_FORMAT, "symbol table entry \"%s\": undefined object address", name);
	}
	out->name = strdup(name);
	out->name_len = strlen(name);
	if (target) {
		out->type = H5_LINK_SOFT;
		out->target = strdup(target);
	} else {
		out->type = H5_LINK_HARD;
		out->addr = e->obj_addr;
		out->is_group = e->cache_type == 1;
	}
	if (!out->name || (target && !out->target)) {
		h5_link_clear(out);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

struct stab_walk {
	h5_file *f;
	h5_lheap *heap;
	h5_addrset seen;
	h5_link_cb cb;          /* each link, or NULL */
	h5_block_cb blk;        /* each node and SNOD, or NULL */
	void *ud;
	/* the SNODs not cached are read through it, not cached
	 * (h5_snod_walk_get). Only for this walk, whose callbacks write
	 * nothing, in the one version of FILE the caller reads */
	h5_window win;
};

static int stab_walk_snod(struct stab_walk *w, uint64_t addr)
{
	h5_snod *sn = NULL, tmp;
	h5_link lnk;
	int rc;

	rc = addr_set_add(&w->seen, addr, "symbol table node");
	if (rc < 0)
		return rc;
	rc = h5_snod_walk_get(&sn, &tmp, w->f, addr, &w->win);
	if (rc < 0)
		return rc;
	if (w->blk) {
		/* III.B: a node is allocated for 2K entries, however many it holds */
		rc = w->blk(addr, h5_snod_size(&w->f->fmt, w->f->sym_leaf_k), w->ud);
		h5_snod_walk_release(w->f, sn, &tmp);
		return rc;
	}
	{
		/* the children's headers are read next (a lookup each, by
		 * ls -l and the like): a remote source fetches them together */
		uint64_t a[H5_PREFETCH_MAX];
		size_t k = 0;

		for (size_t i = 0; i < sn->n && k < H5_PREFETCH_MAX; i++)
			a[k++] = sn->e[i].obj_addr;
		h5_file_prefetch(w->f, a, k);
	}
	for (size_t i = 0; i < sn->n; i++) {
		rc = stab_entry_link(&lnk, w->heap, &sn->e[i]);
		if (rc < 0) {
			rc = h5_err_wrap(rc, "SNOD at 0x%llx: ", (unsigned long long)addr);
			break;
		}
		rc = w->cb(&lnk, w->ud);
		h5_link_clear(&lnk);
		if (rc)
			break;
	}
	h5_snod_walk_release(w->f, sn, &tmp);
	return rc;
}

/* Depth-first, left to right: name order. Each child must sit exactly one
 * level below its parent, so child pointers cannot loop; the visited set
 * catches nodes shared between subtrees (which could blow up exponentially). */
static int stab_walk_node(struct stab_walk *w, uint64_t addr, int expect_level)
{
	h5_bt1_node *nd = NULL;
	int rc;

	rc = addr_set_add(&w->seen, addr, "v1 B-tree node");
	if (rc < 0)
		return rc;
	rc = h5_bt1_get(&nd, w->f, addr, 0);
	if (rc < 0)
		return rc;
	if (expect_level >= 0 && nd->level != expect_level) {
		rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, expected %d",
				(unsigned long long)addr, nd->level, expect_level);
		goto out;
	}
	if (w->blk) {
		rc = w->blk(addr, h5_bt1_group_size(&w->f->fmt, w->f->btree_k), w->ud);
		if (rc)
			goto out;
	}
	h5_file_prefetch(w->f, nd->child, nd->n); /* all of them are walked */
	for (unsigned i = 0; i < nd->n; i++) {
		if (nd->level > 0)
			rc = stab_walk_node(w, nd->child[i], nd->level - 1);
		else
			rc = stab_walk_snod(w, nd->child[i]);
		if (rc)
			break;
	}
out:
	h5_bt1_release(w->f, nd);
	return rc;
}

static int stab_walk(h5_file *f, const h5_stab *st, h5_link_cb cb, h5_block_cb blk, void *ud)
{
	struct stab_walk w = { .f = f, .cb = cb, .blk = blk, .ud = ud };
	uint64_t both[2] = { st->heap_addr, st->btree_addr };
	int rc;

	h5_file_prefetch(f, both, 2);
	rc = h5_lheap_get(&w.heap, f, st->heap_addr);
	if (rc < 0)
		return rc;
	if (blk)
		rc = h5_lheap_blocks(f, st->heap_addr, blk, ud);
	if (rc == 0)
		rc = stab_walk_node(&w, st->btree_addr, -1);
	h5_addrset_free(&w.seen);
	h5_window_clear(&w.win);
	h5_lheap_release(f, w.heap);
	return rc;
}

static int stab_iterate(h5_file *f, const h5_stab *st, h5_link_cb cb, void *ud)
{
	return stab_walk(f, st, cb, NULL, ud);
}

int h5_group_stab_blocks(h5_file *f, const h5_stab *st, h5_block_cb cb, void *ud)
{
	return stab_walk(f, st, NULL, cb, ud);
}

/* Binary search of a symbol table node's sorted entries. */
static int stab_snod_lookup(h5_link *out, h5_file *f, const h5_lheap *heap, uint64_t addr, const char *name)
{
	h5_snod *sn = NULL;
	size_t lo, hi;
	int rc;

	rc = h5_snod_get(&sn, f, addr);
	if (rc < 0)
		return rc;
	rc = H5_ERR_NOTFOUND;
	lo = 0;
	hi = sn->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *s = h5_lheap_string(heap, sn->e[mid].name_off);
		int c;

		if (!s) {
			rc = h5_err_set(H5_ERR_FORMAT, "SNOD at 0x%llx: name offset %llu outside the local heap",
					(unsigned long long)addr, (unsigned long long)sn->e[mid].name_off);
			break;
		}
		c = strcmp(name, s);
		if (c == 0) {
			rc = stab_entry_link(out, heap, &sn->e[mid]);
			break;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	h5_snod_release(f, sn);
	if (rc == H5_ERR_NOTFOUND)
		rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", name);
	return rc;
}

/* III.A.1: in a group tree, child i holds the names in (key[i], key[i+1]]
 * (libhdf5 H5G__node_cmp3), so a binary search over the keys picks the one
 * child that can hold the name, at every level. */
static int stab_lookup(h5_link *out, h5_file *f, const h5_stab *st, const char *name)
{
	h5_lheap *heap = NULL;
	h5_bt1_node *nd = NULL;
	uint64_t addr = st->btree_addr;
	int expect_level = -1;
	int rc;

	rc = h5_lheap_get(&heap, f, st->heap_addr);
	if (rc < 0)
		return rc;
	/* Levels strictly decrease on the way down, so this ends within
	 * H5_MAX_BTREE_DEPTH steps even on a hostile file. */
	for (;;) {
		unsigned lo = 0, hi, level;
		int found = -1;
		uint64_t child;

		rc = h5_bt1_get(&nd, f, addr, 0);
		if (rc < 0)
			goto out;
		if (expect_level >= 0 && nd->level != expect_level) {
			rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, expected %d",
					(unsigned long long)addr, nd->level, expect_level);
			goto out;
		}
		hi = nd->n;
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;
			const char *left = h5_lheap_string(heap, nd->name_off[mid]);
			const char *right = h5_lheap_string(heap, nd->name_off[mid + 1]);

			if (!left || !right) {
				rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: key outside the local heap",
						(unsigned long long)addr);
				goto out;
			}
			if (strcmp(name, left) <= 0) {
				hi = mid;
			} else if (strcmp(name, right) > 0) {
				lo = mid + 1;
			} else {
				found = (int)mid;
				break;
			}
		}
		if (found < 0) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", name);
			goto out;
		}
		child = nd->child[found];
		level = nd->level;
		h5_bt1_release(f, nd);
		nd = NULL;
		if (level == 0) {
			rc = stab_snod_lookup(out, f, heap, child, name);
			goto out;
		}
		addr = child;
		expect_level = (int)level - 1;
	}
out:
	h5_bt1_release(f, nd);
	h5_lheap_release(f, heap);
	return rc;
}

/* ---- public entry points ------------------------------------------------ */

int h5_group_iterate(h5_file *f, uint64_t addr, h5_link_cb cb, void *ud)
{
	h5_ohdr *oh = NULL;
	h5_group_storage gs;
	struct link_list list = { 0 };
	int rc;

	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = h5_group_storage_get(&gs, f, oh, addr);
	if (rc < 0)
		goto out;
	switch (gs.form) {
	case H5_GROUP_STAB:
		h5_ohdr_release(f, oh);
		oh = NULL;
		rc = stab_iterate(f, &gs.stab, cb, ud);
		break;
	case H5_GROUP_COMPACT:
		rc = compact_collect(&list, f, oh);
		h5_ohdr_release(f, oh);
		oh = NULL;
		if (rc == 0)
			rc = link_list_emit(f, &list, cb, ud);
		break;
	case H5_GROUP_DENSE:
		h5_ohdr_release(f, oh);
		oh = NULL;
		rc = dense_collect(&list, f, &gs.linfo);
		if (rc == 0)
			rc = link_list_emit(f, &list, cb, ud);
		break;
	}
out:
	link_list_free(&list);
	if (oh)
		h5_ohdr_release(f, oh);
	return rc;
}

int h5_group_lookup(h5_link *out, h5_file *f, uint64_t addr, const char *name)
{
	h5_ohdr *oh = NULL;
	h5_group_storage gs;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = H5_ADDR_UNDEF;
	if (!name)
		return h5_err_set(H5_ERR_INVAL, "no name to look up");
	len = strlen(name);
	if (len == 0)
		return h5_err_set(H5_ERR_NOTFOUND, "empty link name");
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = h5_group_storage_get(&gs, f, oh, addr);
	if (rc < 0)
		goto out;
	switch (gs.form) {
	case H5_GROUP_STAB:
		h5_ohdr_release(f, oh);
		oh = NULL;
		rc = stab_lookup(out, f, &gs.stab, name);
		break;
	case H5_GROUP_COMPACT:
		rc = compact_lookup(out, f, oh, name, len);
		break;
	case H5_GROUP_DENSE:
		h5_ohdr_release(f, oh);
		oh = NULL;
		rc = dense_lookup(out, f, &gs.linfo, name, len);
		break;
	}
out:
	if (oh)
		h5_ohdr_release(f, oh);
	return rc;
}
