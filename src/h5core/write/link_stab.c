/*
 * link_stab.c - links of a symbol-table group: the "stab" entry of
 * link_store.h's table, what libhdf5 writes by default (h5py without
 * libver, PyTables, libhdf5 1.6 and 1.8 files). Spec III.A.1 (v1 B-tree,
 * node type 0: keys are local heap offsets of names, key i+1 the last name
 * of child i), III.B (Symbol Table Node), III.C (Symbol Table Entry),
 * III.D (Local Heap), IV.A.2.r (Symbol Table Message).
 *
 * As in libhdf5, the B-tree's root node and the local heap's header never
 * move: the group's Symbol Table message, the superblock's root entry and
 * the entries of parents (cache type 1) all hold their addresses. A change
 * is one ordered commit (doc/MODIFY.md "Symbol-table groups"):
 *  1. new names go into the local heap: into the tail of a free block of
 *     the data segment, the block shrinking (each write harmless alone:
 *     free space written, then used space nothing names); when no block
 *     fits, into a new data segment at the allocation end, twice the size
 *     (libhdf5's H5HL_insert doubles too);
 *  2. the symbol table node the change falls in is written anew at the
 *     allocation end (split in two past 2K entries, dropped when empty);
 *     the other nodes stay; the B-tree nodes below the root are built anew
 *     over the list of symbol table nodes, at most 2K children each;
 *  3. fsync, the superblock's EOF address covering the new space (txn.c);
 *     a moved data segment: the heap header's one write, fsync;
 *  4. the root node's one in-place write: the change is visible. A root
 *     that spans a 4 KiB page boundary (issue 65: a power cut keeping only
 *     its first page left h5py "ring type mismatch") holds one child,
 *     a node built anew over what it would hold, and only its first bytes
 *     (header, key 0, child 0, key 1; entries past the count are never
 *     read) are written, within one page (root_one): an ordered copy,
 *     the new node written before the pointer to it switches.
 * New nodes and segments take space freed earlier when it holds them
 * (h5_space_take: each is written whole); the nodes and the data segment
 * a change replaced are freed once its commit returned (space.h), as
 * libhdf5 frees them (H5B, H5HL). A removed name goes back to the local
 * heap's free list at a later change, once its removal is durable
 * (heap_release).
 */
#include "base.h"
#include "ordered.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"
#include "birthtag.h"
#include "linkmsg.h"
#include "group.h"
#include "lheap.h"
#include "snod.h"
#include "btree1.h"
#include "space.h"
#include "txn.h"
#include "link_store.h"
#include "link_stab_int.h"
#include "ohdr_edit.h"
#include "file_ws.h"

#define MAX_LEAVES ((size_t)1 << 24)

/* ---- the list of symbol table nodes ----------------------------------------- */

static int push_leaf(stab_edit *s, size_t at, uint64_t addr, uint64_t rkey)
{
	if (s->nl == s->cl) {
		size_t nc = s->cl ? 2 * s->cl : 16;
		stab_leaf *nv = nc <= MAX_LEAVES ? realloc(s->lv, nc * sizeof(*nv)) : NULL;

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		s->lv = nv;
		s->cl = nc;
	}
	memmove(s->lv + at + 1, s->lv + at, (s->nl - at) * sizeof(*s->lv));
	s->lv[at] = (stab_leaf){ .addr = addr, .rkey = rkey };
	s->nl++;
	return 0;
}

/* Depth-first: each child exactly one level below its parent, so the walk
 * ends; the leaves come in name order. */
static int collect(stab_edit *s, uint64_t addr, int level)
{
	h5_bt1_node *nd = NULL;
	int rc = h5_bt1_get(&nd, s->f, addr, 0);

	if (rc < 0)
		return rc;
	if (level < 0) {
		s->left_key = nd->name_off[0];
	} else if (nd->level != level) {
		rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, expected %d",
				(unsigned long long)addr, nd->level, level);
	} else {
		/* below the root: built anew by every commit (build_tree) */
		rc = h5_space_note(addr, h5_bt1_group_size(&s->f->fmt, s->k_int), &s->gone);
	}
	for (unsigned i = 0; rc == 0 && i < nd->n; i++)
		rc = nd->level ? collect(s, nd->child[i], nd->level - 1)
			       : push_leaf(s, s->nl, nd->child[i], nd->name_off[i + 1]);
	h5_bt1_release(s->f, nd);
	return rc;
}

static int leaf_load(stab_edit *s, stab_leaf *l)
{
	h5_snod *sn = NULL;
	int rc;

	if (l->e)
		return 0;
	rc = h5_snod_get(&sn, s->f, l->addr);
	if (rc < 0)
		return rc;
	l->e = calloc(sn->n + 1, sizeof(*l->e));
	if (l->e) {
		memcpy(l->e, sn->e, sn->n * sizeof(*l->e));
		l->n = sn->n;
	} else {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	h5_snod_release(s->f, sn);
	return rc;
}

/* The first node whose last name is not below name (nl: none). */
static int find_leaf(size_t *at, const stab_edit *s, const char *name)
{
	size_t lo = 0, hi = s->nl;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *k = h5_stab_hname(s, s->lv[mid].rkey);

		if (!k)
			return h5_err_set(H5_ERR_FORMAT, "v1 B-tree key %llu outside the local heap",
					  (unsigned long long)s->lv[mid].rkey);
		if (strcmp(k, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return 0;
}

/* Within a loaded node: *pos, the entry named name or where it would go;
 * *found. */
static int find_entry(size_t *pos, bool *found, const stab_edit *s, const stab_leaf *l, const char *name)
{
	*found = false;
	for (*pos = 0; *pos < l->n; (*pos)++) {
		const char *k = h5_stab_hname(s, l->e[*pos].name_off);
		int c;

		if (!k)
			return h5_err_set(H5_ERR_FORMAT, "symbol table entry: name offset %llu outside the local heap",
					  (unsigned long long)l->e[*pos].name_off);
		c = strcmp(k, name);
		if (c >= 0) {
			*found = c == 0;
			break;
		}
	}
	return 0;
}

/* Where name is: node *li, entry *ei (li == nl: no node could hold it). */
int h5_stab_locate(size_t *li, size_t *ei, bool *found, stab_edit *s, const char *name)
{
	int rc = find_leaf(li, s, name);

	*found = false;
	*ei = 0;
	if (rc < 0 || *li == s->nl)
		return rc;
	rc = leaf_load(s, &s->lv[*li]);
	return rc < 0 ? rc : find_entry(ei, found, s, &s->lv[*li], name);
}

/* ---- writing ----------------------------------------------------------------- */

/* A changed node written anew, split past 2K entries (the left half keeps
 * the larger share, as libhdf5's H5G__node_insert leaves K + 1). */
static int write_leaf(stab_edit *s, size_t i)
{
	h5_file *f = s->f;
	size_t len = h5_snod_size(&f->fmt, f->sym_leaf_k);
	stab_leaf *l = &s->lv[i];
	uint8_t *buf = malloc(len);
	int rc = buf ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	if (rc == 0 && l->n > s->twok_leaf) {
		/* m nodes of at most 2K entries (two halves after one insert,
		 * as libhdf5 splits; more after a batch, link_insert_many), the
		 * right ones new, written last to first so each lands at i + 1 */
		size_t n = l->n, m = (n + s->twok_leaf - 1) / s->twok_leaf;

		for (size_t j = m - 1; rc == 0 && j >= 1; j--) {
			size_t from = (j * n + m - 1) / m, to = ((j + 1) * n + m - 1) / m;
			uint64_t addr;

			l = &s->lv[i];  /* the array may have moved */
			rc = h5_snod_encode(buf, len, &f->fmt, f->sym_leaf_k, l->e + from, to - from);
			if (rc == 0)
				rc = h5_space_take(&addr, f, len);      /* written whole */
			if (rc == 0)
				rc = h5_file_write(f, addr, buf, len);
			if (rc == 0)
				rc = push_leaf(s, i + 1, addr, s->lv[i].e[to - 1].name_off);
		}
		l = &s->lv[i];
		l->n = (n + m - 1) / m;
	}
	if (rc == 0)
		rc = h5_snod_encode(buf, len, &f->fmt, f->sym_leaf_k, l->e, l->n);
	if (rc == 0 && h5_addr_defined(l->addr))
		rc = h5_space_note(l->addr, len, &s->gone);     /* the node it replaces */
	if (rc == 0)
		rc = h5_space_take(&l->addr, f, len);
	if (rc == 0)
		rc = h5_file_write(f, l->addr, buf, len);
	l->rkey = l->e[l->n - 1].name_off;
	l->changed = false;
	free(buf);
	return rc;
}

/* The bytes of a root holding at most one child: the header, key 0,
 * child 0, key 1. */
static size_t root_one_len(const h5_fmt *fmt)
{
	return 8 + 3 * (size_t)fmt->sizeof_addr + 2 * (size_t)fmt->sizeof_size;
}

/* Whether the root at addr (rlen bytes) spans a 4 KiB page while its
 * first root_one_len bytes do not: it then holds one child (above). */
static bool root_one(const h5_fmt *fmt, uint64_t addr, size_t rlen)
{
	const uint64_t page = 4096;

	return addr / page != (addr + rlen - 1) / page && addr / page == (addr + root_one_len(fmt) - 1) / page;
}

/* The levels below the root, built over the nodes' (address, last name);
 * *root_buf: the root's bytes. one: the root holds one child at most
 * (root_one), a node one level below it holding the rest. */
static int build_tree(uint8_t *root_buf, size_t root_len, stab_edit *s, bool one)
{
	h5_file *f = s->f;
	unsigned twok = 2 * s->k_int, level = 0;
	size_t n = s->nl, nlen = h5_bt1_group_size(&f->fmt, s->k_int);
	uint64_t *addr = malloc((n ? n : 1) * sizeof(*addr)), *rkey = malloc((n ? n : 1) * sizeof(*rkey));
	uint64_t *keys = malloc((twok + 1) * sizeof(*keys)), *naddr = NULL;
	uint8_t *buf = malloc(nlen);
	int rc = addr && rkey && keys && buf ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		addr[i] = s->lv[i].addr;
		rkey[i] = s->lv[i].rkey;
	}
	while (rc == 0 && (n > twok || (one && n > 1))) {
		size_t m = (n + twok - 1) / twok, at = 0;

		naddr = malloc(m * sizeof(*naddr));
		if (!naddr) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			break;
		}
		for (size_t j = 0; rc == 0 && j < m; j++)
			rc = h5_space_take(&naddr[j], f, nlen);         /* written whole below */
		for (size_t j = 0; rc == 0 && j < m; j++) {
			unsigned cnt = (unsigned)(n / m + (j < n % m));

			keys[0] = at ? rkey[at - 1] : s->left_key;
			for (unsigned c = 0; c < cnt; c++)
				keys[c + 1] = rkey[at + c];
			rc = h5_bt1_group_encode(buf, nlen, &f->fmt, s->k_int, level, j ? naddr[j - 1] : H5_ADDR_UNDEF,
						 j + 1 < m ? naddr[j + 1] : H5_ADDR_UNDEF, keys, addr + at, cnt);
			if (rc == 0)
				rc = h5_file_write(f, naddr[j], buf, nlen);
			/* the node stands for its children one level up */
			addr[j] = naddr[j];
			rkey[j] = keys[cnt];
			at += cnt;
		}
		free(naddr);
		naddr = NULL;
		n = m;
		level++;
	}
	if (rc == 0) {
		keys[0] = s->left_key;
		for (size_t c = 0; c < n; c++)
			keys[c + 1] = rkey[c];
		rc = h5_bt1_group_encode(root_buf, root_len, &f->fmt, s->k_int, level, H5_ADDR_UNDEF, H5_ADDR_UNDEF,
					 keys, addr, (unsigned)n);
	}
	free(addr);
	free(rkey);
	free(keys);
	free(buf);
	return rc;
}

/* Steps 1-4 of the header comment, once the nodes and the heap are
 * changed in memory. start: the allocation end before the caller's new
 * space (UINT64_MAX: none). */
int h5_stab_commit(stab_edit *s, uint64_t start, bool durable)
{
	h5_file *f = s->f;
	size_t rlen = h5_bt1_group_size(&f->fmt, s->k_int);
	uint8_t *root = malloc(rlen), hdr[8 + 3 * 8];
	uint64_t seg = H5_ADDR_UNDEF;
	bool one = root_one(&f->fmt, s->st.btree_addr, rlen);
	h5_txn t;
	int rc = root ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < s->nl; i++)
		if (s->lv[i].changed)
			rc = write_leaf(s, i);
	if (rc == 0)
		rc = build_tree(root, rlen, s, one);
	if (rc == 0 && s->moved) {
		rc = h5_space_note(s->haddr, s->ohsize, &s->gone);
		if (rc == 0)
			rc = h5_space_take(&seg, f, s->hsize);
		if (rc == 0)
			rc = h5_file_write(f, seg, s->heap, s->hsize);
	}
	for (size_t i = 0; rc == 0 && i < s->ndirty && !s->moved; i++)
		rc = h5_file_write(f, s->haddr + s->dirty[i].off, s->heap + s->dirty[i].off, s->dirty[i].len);
	h5_lheap_hdr_encode(hdr, &f->fmt, s->hsize, s->hfree, s->moved ? seg : s->haddr);
	if (rc == 0 && !s->moved && s->hfree != s->ofree)       /* a leak alone, like the rest */
		rc = h5_file_write_inplace(f, s->st.heap_addr, hdr, h5_lheap_hdr_size(&f->fmt));
	h5_txn_begin(&t, f, durable, NULL, NULL);
	if (rc == 0)
		rc = h5_txn_stage(&t, start);
	/* a larger segment holding every old name where it was */
	if (rc == 0 && s->moved)
		rc = h5_txn_write_ordered(&t, s->st.heap_addr, hdr, h5_lheap_hdr_size(&f->fmt));
	if (rc == 0)
		rc = h5_txn_last_write(&t, s->st.btree_addr, root, one ? root_one_len(&f->fmt) : rlen);
	/* the replaced nodes and segment: referenced by nothing once the
	 * root's write is durable */
	if (rc == 0) {
		h5_stab_names_commit(s, s->moved ? seg : s->haddr, t.ticket);
		h5_space_free_noted(f, &s->gone, t.ticket);
		/* (its blocks may move down at unmount: stab_move_down) */
		h5_ohdr_note(f, H5_NOTE_GROUP, s->group);
	}
	h5_cache_invalidate(f->meta, H5_CK_LHEAP, s->st.heap_addr);
	h5_cache_invalidate(f->meta, H5_CK_BT1, s->st.btree_addr);
	free(root);
	return rc;
}

void h5_stab_close(stab_edit *s)
{
	for (size_t i = 0; i < s->nl; i++)
		free(s->lv[i].e);
	free(s->lv);
	free(s->heap);
	h5_freesp_clear(&s->gone);
	h5_freesp_clear(&s->names);
}

int h5_stab_open(stab_edit *s, h5_file *f, uint64_t group)
{
	h5_ohdr *oh = NULL;
	h5_group_storage gs;
	/* the cached header (a commit of it drops the copy): a private load
	 * decoded a group's whole header, 3,000 attributes of it, for every
	 * rmdir's room (issue 70) */
	int rc = h5_ohdr_get(&oh, f, group);

	memset(s, 0, sizeof(*s));
	s->f = f;
	s->group = group;
	s->twok_leaf = 2 * (unsigned)f->sym_leaf_k;
	s->k_int = f->btree_k;
	if (rc == 0)
		rc = h5_group_storage_get(&gs, f, oh, group);
	h5_ohdr_release(f, oh);
	if (rc == 0 && gs.form != H5_GROUP_STAB)
		rc = h5_err_set(H5_ERR_INVAL, "object 0x%llx is no symbol-table group", (unsigned long long)group);
	if (rc == 0 && (s->twok_leaf == 0 || s->k_int == 0))
		rc = h5_err_set(H5_ERR_FORMAT, "superblock: group node K of 0");
	if (rc == 0) {
		s->st = gs.stab;
		rc = h5_stab_heap_load(s);
	}
	if (rc == 0)
		rc = collect(s, s->st.btree_addr, -1);
	return rc;
}

/* Entry re of node ri taken out (*out: a copy); a node left empty goes,
 * and nothing names it after the commit: its space is noted gone. */
int h5_stab_take(stab_edit *s, size_t ri, size_t re, h5_snod_entry *out, bool drop_soft)
{
	stab_leaf *l = &s->lv[ri];
	h5_snod_entry e = l->e[re];
	int rc;

	if (out)
		*out = e;
	/* its name, and a soft link's value unless an entry added in the
	 * same change keeps it (a rename), go back to the heap later */
	h5_stab_name_gone(s, e.name_off);
	if (drop_soft && e.cache_type == 2)
		h5_stab_name_gone(s, e.link_off);
	memmove(l->e + re, l->e + re + 1, (l->n - re - 1) * sizeof(*l->e));
	l->n--;
	l->changed = true;
	if (l->n == 0) {
		rc = h5_space_note(l->addr, h5_snod_size(&s->f->fmt, s->f->sym_leaf_k), &s->gone);
		if (rc < 0)
			return rc;
		free(l->e);
		memmove(s->lv + ri, s->lv + ri + 1, (s->nl - ri - 1) * sizeof(*s->lv));
		s->nl--;
	} else {
		l->rkey = l->e[l->n - 1].name_off;
	}
	return 0;
}

/* add (its name_off set here from add_name; soft: a soft link's value)
 * put in its place, once the change's checks are done. */
int h5_stab_put(stab_edit *s, const h5_snod_entry *add, const char *add_name, const char *soft)
{
	h5_snod_entry e = *add, *ne;
	size_t ai = 0, ae = 0;
	bool found;
	stab_leaf *l;
	int rc = h5_stab_heap_add(&e.name_off, s, add_name, strlen(add_name));

	if (rc == 0 && soft) {
		uint64_t off;

		rc = h5_stab_heap_add(&off, s, soft, strlen(soft));
		e.link_off = (uint32_t)off;
	}
	if (rc < 0)
		return rc;
	/* a removal in the same change may have changed the list: look again */
	rc = h5_stab_locate(&ai, &ae, &found, s, add_name);
	if (rc == 0 && ai == s->nl && s->nl > 0) {
		ai = s->nl - 1;
		rc = leaf_load(s, &s->lv[ai]);
		ae = s->lv[ai].n;
	} else if (rc == 0 && s->nl == 0) {
		rc = push_leaf(s, 0, H5_ADDR_UNDEF, 0);
	}
	if (rc < 0)
		return rc;
	l = &s->lv[ai];
	/* room for one more (a batch puts many into one node) */
	ne = realloc(l->e, (l->n + 1) * sizeof(*l->e));
	if (!ne)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	l->e = ne;
	memmove(l->e + ae + 1, l->e + ae, (l->n - ae) * sizeof(*l->e));
	l->e[ae] = e;
	l->n++;
	l->changed = true;
	l->rkey = l->e[l->n - 1].name_off;
	return 0;
}

/* The edit: the entry name_rm taken out (*removed: a copy), then add
 * (its name_off set here from add_name) put in. Both checked before any
 * change: name_rm must be there, add_name must not - unless replace: its
 * entry then goes in the same change (rename(2) over a name, one commit). */
static int stab_change(h5_file *f, uint64_t group, const char *name_rm, h5_snod_entry *removed,
		       const h5_snod_entry *add, const char *add_name, const char *soft, bool replace, uint64_t start,
		       bool durable)
{
	stab_edit s;
	size_t ri = 0, re = 0, ai = 0, ae = 0;
	bool found, clash = false;
	int rc = h5_stab_open(&s, f, group);

	if (rc == 0)
		rc = h5_stab_heap_release(&s);
	if (rc == 0 && name_rm) {
		rc = h5_stab_locate(&ri, &re, &found, &s, name_rm);
		if (rc == 0 && !found)
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", name_rm);
	}
	if (rc == 0 && add) {
		rc = h5_stab_locate(&ai, &ae, &found, &s, add_name);
		if (rc == 0 && found && !replace)
			rc = h5_err_set(H5_ERR_INVAL, "group 0x%llx has a link \"%s\" already",
					(unsigned long long)group, add_name);
		clash = found;
	}
	if (rc < 0)
		goto out;
	if (name_rm && (rc = h5_stab_take(&s, ri, re, removed, !add)) < 0)
		goto out;
	if (clash) {
		/* (the removal may have moved it) */
		rc = h5_stab_locate(&ai, &ae, &found, &s, add_name);
		if (rc == 0 && !found)
			rc = h5_err_set(H5_ERR_FORMAT, "symbol table: \"%s\" lost while replacing it", add_name);
		if (rc == 0)
			rc = h5_stab_take(&s, ai, ae, NULL, true);
		if (rc < 0)
			goto out;
	}
	if (add)
		rc = h5_stab_put(&s, add, add_name, soft);
	if (rc < 0)
		goto out;
	rc = h5_stab_commit(&s, start, durable);
out:
	h5_stab_close(&s);
	return rc;
}

/* libhdf5 caches a group's symbol table in the entry that names it
 * (cache type 1) when it makes the group; both addresses never move. */
int h5_stab_entry_of(h5_snod_entry *e, h5_file *f, const h5_link *l)
{
	memset(e, 0, sizeof(*e));
	e->obj_addr = H5_ADDR_UNDEF;
	if (l->type == H5_LINK_SOFT) {
		e->cache_type = 2;
		return 0;
	}
	if (l->type != H5_LINK_HARD)
		return h5_err_set(H5_ERR_UNSUPPORTED, "a symbol-table group holds hard and soft links only (libhdf5 "
				  "would convert it to the new format for this link, which h5fs does not do)");
	e->obj_addr = l->addr;
	{
		h5_ohdr *oh = NULL;
		const h5_msg *m;
		h5_stab st;

		if (h5_ohdr_load(&oh, f, l->addr) < 0) {
			h5_err_clear();
			return 0;
		}
		m = h5_ohdr_find(oh, H5_MSG_STAB);
		if (m && !(m->flags & H5_MSG_FLAG_SHARED) && h5_stab_decode(&st, &f->fmt, m->data, m->size) == 0) {
			e->cache_type = 1;
			e->btree_addr = st.btree_addr;
			e->heap_addr = st.heap_addr;
		}
		h5_err_clear();
		h5_ohdr_free(oh);
	}
	return 0;
}

static char *cstr(const char *name, size_t len)
{
	char *s = strndup(name, len);

	if (!s)
		h5_err_set(H5_ERR_NOMEM, "out of memory");
	return s;
}

static int stab_insert(h5_file *f, uint64_t group, const h5_link *l, uint64_t start, bool durable)
{
	h5_snod_entry e;
	char *name = cstr(l->name, l->name_len);
	int rc = name ? h5_stab_entry_of(&e, f, l) : H5_ERR_NOMEM;

	if (rc == 0)
		rc = stab_change(f, group, NULL, NULL, &e, name, l->type == H5_LINK_SOFT ? l->target : NULL, false,
				 start == UINT64_MAX ? h5_space_end(f) : start, durable);
	free(name);
	return rc;
}

static int stab_remove(h5_file *f, uint64_t group, const char *name, size_t name_len, bool durable)
{
	char *n = cstr(name, name_len);
	int rc = n ? stab_change(f, group, n, NULL, NULL, NULL, NULL, false, h5_space_end(f), durable) : H5_ERR_NOMEM;

	free(n);
	return rc;
}

/* The entry keeps its object, cache and soft link value; one commit. */
static int stab_rename(h5_file *f, uint64_t group, const char *name, size_t name_len, const char *newname,
		       size_t newname_len, bool replace, bool durable)
{
	char *o = cstr(name, name_len), *n = cstr(newname, newname_len);
	h5_snod_entry e = { 0 };
	stab_edit s;
	size_t li, ei;
	bool found;
	int rc = o && n ? 0 : H5_ERR_NOMEM;

	/* the entry first, read-only, so that the one change carries it */
	if (rc == 0) {
		rc = h5_stab_open(&s, f, group);
		if (rc == 0)
			rc = h5_stab_locate(&li, &ei, &found, &s, o);
		if (rc == 0 && !found)
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", o);
		if (rc == 0)
			e = s.lv[li].e[ei];
		h5_stab_close(&s);
	}
	if (rc == 0)
		rc = stab_change(f, group, o, NULL, &e, n, NULL, replace, h5_space_end(f), durable);
	free(o);
	free(n);
	return rc;
}

/* ---- a new group of this form --------------------------------------------------
 * What libhdf5 makes for a group in a file of the earliest format: a v1
 * object header (IV.A.1.a) with a Symbol Table message, an empty B-tree
 * root (level 0, no children, key 0 the empty name) and a local heap of 88
 * bytes, the empty name at offset 0 and one free block; one block,
 * header, root, heap, encoded for its address here and written whole by
 * link_write.c (the link makes it visible). The header has room (a NIL message) for a few attributes. */
#define NEWGRP_ROOM 96

static int stab_new_group(uint8_t *b, size_t *len, h5_file *f, const h5_group_crt *crt, uint64_t addr)
{
	const h5_fmt *fmt = &f->fmt;
	unsigned A = fmt->sizeof_addr, L = fmt->sizeof_size;
	size_t msgs = 8 + h5_align8(2 * (uint64_t)A) + 8 + H5_BIRTHTAG_LEN + NEWGRP_ROOM, ohlen = 16 + msgs;
	size_t btlen = h5_bt1_group_size(fmt, f->btree_k), hlen = h5_lheap_hdr_size(fmt), dlen = 88;
	size_t total = ohlen + btlen + hlen + dlen, p;
	uint64_t key0 = 0, bt = addr + ohlen, heap = bt + btlen;
	int rc;

	(void)crt;      /* a v1 header tracks no creation order */
	if (!b) {
		*len = total;
		return 0;
	}
	if (*len != total)
		return h5_err_set(H5_ERR_INVAL, "a new group takes %zu bytes, not %zu", total, *len);
	memset(b, 0, total);
	b[0] = 1;                       /* version */
	h5_le_encode(b + 2, 3, 2);      /* messages (the birth tag, the free NIL) */
	h5_le_encode(b + 4, 1, 4);      /* reference count */
	h5_le_encode(b + 8, msgs, 4);
	p = 16;
	h5_le_encode(b + p, H5_MSG_STAB, 2);
	h5_le_encode(b + p + 2, h5_align8(2 * (uint64_t)A), 2);
	h5_le_encode(b + p + 8, bt, A);
	h5_le_encode(b + p + 8 + A, heap, A);
	p += 8 + h5_align8(2 * (uint64_t)A);
	/* the generation of its file handles (src/fuse/member/export.c) */
	h5_le_encode(b + p, H5_MSG_NIL, 2);
	h5_le_encode(b + p + 2, H5_BIRTHTAG_LEN, 2);
	h5_birthtag_encode(b + p + 8, h5_birthtag_new());
	p += 8 + H5_BIRTHTAG_LEN;
	h5_le_encode(b + p, H5_MSG_NIL, 2);
	h5_le_encode(b + p + 2, NEWGRP_ROOM - 8, 2);
	rc = h5_bt1_group_encode(b + ohlen, btlen, fmt, f->btree_k, 0, H5_ADDR_UNDEF, H5_ADDR_UNDEF, &key0, NULL, 0);
	if (rc < 0)
		return rc;
	h5_lheap_hdr_encode(b + ohlen + btlen, fmt, dlen, 8, heap + hlen);
	p = ohlen + btlen + hlen;
	h5_le_encode(b + p + 8, H5_LHEAP_FREE_NULL, L);
	h5_le_encode(b + p + 8 + L, dlen - 8, L);
	return 0;
}

/* ---- the blocks moved down (unmount) --------------------------------------------
 * (link_store.h's move_down) A change late in a churn (a name added
 * after a large file was written, then the file removed) places the
 * group's new node or grown data segment at the allocation end, where it
 * keeps FILE long after the space below was freed. When its highest block
 * still ends at the allocation end and freed space takes every node and
 * the segment, the group is committed once more with each written anew:
 * the ordinary commit above (new blocks first, the heap header's write and
 * fsync, then the root's one write), the lowest space that fits taken
 * (freesp.low); the old blocks are freed by it. */
static int stab_move_down(h5_file *f, uint64_t group)
{
	struct h5_wstate *ws = h5_ws(f);
	size_t nlen = h5_snod_size(&f->fmt, f->sym_leaf_k);
	uint64_t total, top, end = h5_space_end(f);
	stab_edit s;
	int rc = h5_stab_open(&s, f, group);

	if (rc < 0)
		goto out;
	/* its highest block: the segment, a node, or a B-tree node below
	 * the root (collect() noted those in s.gone) */
	top = s.haddr + s.hsize;
	total = s.hsize;
	for (size_t i = 0; i < s.gone.n; i++) {
		top = s.gone.v[i].addr + s.gone.v[i].len > top ? s.gone.v[i].addr + s.gone.v[i].len : top;
		total += s.gone.v[i].len;
	}
	for (size_t i = 0; i < s.nl; i++) {
		top = s.lv[i].addr + nlen > top ? s.lv[i].addr + nlen : top;
		total += nlen;
	}
	if (top != end || h5_freesp_largest(&ws->freesp) < total)
		goto out;
	for (size_t i = 0; rc == 0 && i < s.nl; i++) {
		rc = leaf_load(&s, &s.lv[i]);
		s.lv[i].changed = true;
	}
	s.moved = true;         /* the same size, written whole */
	ws->freesp.low = true;
	if (rc == 0)
		rc = h5_stab_commit(&s, h5_space_end(f), true);
	ws->freesp.low = false;
	if (rc == 0)
		rc = 1;
out:
	h5_stab_close(&s);
	return rc;
}

const h5_lstore_ops h5_lstore_stab = {
	.name = "symbol table",
	.insert = stab_insert,
	.insert_many = h5_stab_insert_many,
	.room_many = h5_stab_room_many,
	.remove = stab_remove,
	.remove_many = h5_stab_remove_many,
	.rename = stab_rename,
	.change_many = h5_stab_change_many,
	.new_group = stab_new_group,
	.move_down = stab_move_down,
};
