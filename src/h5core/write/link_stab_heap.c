/*
 * link_stab_heap.c - a symbol-table group's local heap as link_stab.c's
 * change edits it (spec III.D; link_stab_int.h): names into a free
 * block's tail or a data segment twice the size, and removed names given
 * back to the free list once their removal is durable.
 */
#include "ordered.h"
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "txn.h"
#include "lheap.h"
#include "link_stab_int.h"
#include "file_ws.h"

static uint64_t hget(const stab_edit *s, uint64_t off)
{
	return h5_le_decode(s->heap + off, s->f->fmt.sizeof_size);
}

static void hput(stab_edit *s, uint64_t off, uint64_t v)
{
	h5_le_encode(s->heap + off, v, s->f->fmt.sizeof_size);
}

/* The name at off, or NULL when off is outside the heap or unterminated. */
const char *h5_stab_hname(const stab_edit *s, uint64_t off)
{
	if (off >= s->hsize || !memchr(s->heap + off, 0, s->hsize - off))
		return NULL;
	return (const char *)s->heap + off;
}

static int mark(stab_edit *s, uint64_t off, uint64_t len)
{
	if (s->moved)
		return 0;
	if (s->ndirty == sizeof(s->dirty) / sizeof(s->dirty[0]))
		return h5_err_set(H5_ERR_INVAL, "local heap: too many changes in one commit");
	s->dirty[s->ndirty].off = off;
	s->dirty[s->ndirty++].len = len;
	return 0;
}

static bool no_block(const stab_edit *s, uint64_t off)
{
	unsigned n = s->f->fmt.sizeof_size;
	uint64_t ones = n >= 8 ? UINT64_MAX : ((UINT64_C(1) << (8 * n)) - 1);

	return off == H5_LHEAP_FREE_NULL || off == ones;
}

/* A data segment twice as large (at least by need), its new space one free
 * block (the last block grows when it ends where the segment did). */
static int heap_grow(stab_edit *s, uint64_t need)
{
	uint64_t two_l = 2 * (uint64_t)s->f->fmt.sizeof_size;
	/* need + two_l at least: a block of need < size < need + 2L cannot
	 * be taken (its rest would be too small for a free block's two
	 * fields) - a segment of 88 bytes grown by 88 for an 80-byte name
	 * left "no room after growing" (stress-ng's symlinks, EIO) */
	uint64_t want = need + two_l;
	uint64_t more = h5_align8(want > s->hsize ? want : s->hsize), nsize = s->hsize + more, tail = H5_ADDR_UNDEF;
	uint8_t *nh;

	if (more < two_l)
		more = two_l, nsize = s->hsize + more;
	if (nsize > ((uint64_t)1 << 32))
		return h5_err_set(H5_ERR_NOSPC, "local heap at 0x%llx: names would pass 4 GiB",
				  (unsigned long long)s->st.heap_addr);
	nh = realloc(s->heap, nsize);
	if (!nh)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	s->heap = nh;
	memset(s->heap + s->hsize, 0, nsize - s->hsize);
	for (uint64_t cur = s->hfree, guard = 0; !no_block(s, cur) && guard < s->hsize; cur = hget(s, cur), guard++)
		if (cur + hget(s, cur + s->f->fmt.sizeof_size) == s->hsize)
			tail = cur;
	if (tail != H5_ADDR_UNDEF) {
		hput(s, tail + s->f->fmt.sizeof_size, hget(s, tail + s->f->fmt.sizeof_size) + more);
	} else {
		hput(s, s->hsize, s->hfree);
		hput(s, s->hsize + s->f->fmt.sizeof_size, more);
		s->hfree = s->hsize;
	}
	s->hsize = nsize;
	s->moved = true;
	return 0;
}

/* The free block after prev (UNDEF: the head) taken off the list, next
 * its successor: written now and fsync'd when the segment stays (a moved
 * one is written whole, its header after). */
static int heap_unlink(stab_edit *s, uint64_t prev, uint64_t next)
{
	h5_file *f = s->f;
	uint8_t hdr[8 + 3 * 8];
	h5_txn t;
	int rc;

	h5_txn_begin(&t, f, false, NULL, NULL);
	if (prev == H5_ADDR_UNDEF) {
		s->hfree = next;
		if (s->moved)
			return 0;
		s->ofree = next;
		h5_lheap_hdr_encode(hdr, &f->fmt, s->hsize, s->hfree, s->haddr);
		rc = h5_txn_write_ordered(&t, s->st.heap_addr, hdr, h5_lheap_hdr_size(&f->fmt));
	} else {
		hput(s, prev, next);
		if (s->moved)
			return 0;
		rc = h5_txn_write_ordered(&t, s->haddr + prev, s->heap + prev, f->fmt.sizeof_size);
	}
	h5_cache_invalidate(f->meta, H5_CK_LHEAP, s->st.heap_addr);
	return rc;
}

/* str (len bytes, a NUL added) into the heap: *off. */
int h5_stab_heap_add(uint64_t *off, stab_edit *s, const char *str, size_t len)
{
	unsigned L = s->f->fmt.sizeof_size;
	uint64_t need = h5_align8((uint64_t)len + 1), two_l = 2 * (uint64_t)L;

	for (int round = 0; round < 2; round++) {
		uint64_t prev = H5_ADDR_UNDEF, cur = s->hfree;

		for (uint64_t guard = 0; !no_block(s, cur); guard++) {
			uint64_t next, size;

			if (guard > s->hsize / 8 || cur > s->hsize || s->hsize - cur < two_l)
				return h5_err_set(H5_ERR_FORMAT, "local heap at 0x%llx: bad free list",
						  (unsigned long long)s->st.heap_addr);
			next = hget(s, cur);
			size = hget(s, cur + L);
			if (size < two_l || size > s->hsize - cur)
				return h5_err_set(H5_ERR_FORMAT, "local heap at 0x%llx: free block at %llu has "
						  "size %llu", (unsigned long long)s->st.heap_addr,
						  (unsigned long long)cur, (unsigned long long)size);
			if (size == need || size >= need + two_l) {
				int rc = 0;

				/* a block used whole is unlinked first, durably (the
				 * header's head or the block before it: a leak alone),
				 * before the name overwrites its own fields: in one
				 * interval a power cut could land the name without the
				 * unlink, a free list through a name */
				if (size == need)
					rc = heap_unlink(s, prev, next);
				if (rc < 0)
					return rc;
				/* the tail of the block: its head (the list) stays */
				*off = cur + size - need;
				memset(s->heap + *off, 0, need);
				memcpy(s->heap + *off, str, len);
				rc = mark(s, *off, need);
				if (rc == 0 && size != need) {
					hput(s, cur + L, size - need);
					rc = mark(s, cur + L, L);
				}
				return rc;
			}
			prev = cur;
			cur = next;
		}
		if (round == 0) {
			int rc = heap_grow(s, need);

			if (rc < 0)
				return rc;
		}
	}
	return h5_err_set(H5_ERR_FORMAT, "local heap at 0x%llx: no room after growing",
			  (unsigned long long)s->st.heap_addr);
}

int h5_stab_heap_load(stab_edit *s)
{
	h5_file *f = s->f;
	uint8_t hdr[8 + 3 * 8];
	h5_lheap h;
	int rc = h5_file_read(f, s->st.heap_addr, hdr, h5_lheap_hdr_size(&f->fmt));

	if (rc == 0)
		rc = h5_lheap_decode(&h, &f->fmt, hdr, h5_lheap_hdr_size(&f->fmt));
	if (rc < 0)
		return rc;
	s->hsize = s->ohsize = h.size;
	s->haddr = h.data_addr;
	s->hfree = s->ofree = h5_le_decode(hdr + 8 + f->fmt.sizeof_size, f->fmt.sizeof_size);
	if (s->hsize < 8)
		return h5_err_set(H5_ERR_FORMAT, "local heap at 0x%llx: %llu-byte data segment",
				  (unsigned long long)s->st.heap_addr, (unsigned long long)s->hsize);
	return h5_file_read_alloc(&s->heap, f, s->haddr, s->hsize);
}

/* ---- removed names back to the free list --------------------------------------
 * libhdf5 gives a removed name's bytes back to the local heap's free list
 * (H5HL_remove). Here the commit that removes a name notes its bytes
 * (h5_ws(f)->lheap_names, with the commit's ticket, as space.h's frees), and a
 * later change of the group gives them back once an fsync that began
 * after that commit completed: before, a crash could fall back to a tree
 * that still names them. One extent per change (released neighbours
 * merged), in an order a power cut cannot tear: growing the free block
 * that ends where it begins is one write (its size); else an extent that
 * holds a block's two fields becomes a block of its own - the fields
 * written in its own bytes, fsync, then the one write that links it in
 * (the header's head, or the next field of the block before the one it
 * ends at, which it takes in). A smaller one waits for a neighbour (names
 * freed next to each other merge in h5_ws(f)->lheap_names). */

/* The name at off removed by this change: its bytes noted. */
void h5_stab_name_gone(stab_edit *s, uint64_t off)
{
	const char *k = h5_stab_hname(s, off);
	uint64_t len;

	/* (offset 0: the empty name the root's first key names) */
	if (!k || off == 0 || off == s->left_key)
		return;
	len = h5_align8((uint64_t)strlen(k) + 1);
	if (len > s->hsize - off)
		len = s->hsize - off;
	if (h5_freesp_add(&s->names, off, len, UINT64_MAX) < 0)
		h5_err_clear();         /* only left in the heap */
}

/* Where [off, off + len) lies against the free list: *a the block that
 * ends at off, *b the one that begins at off + len and *bprev the block
 * before b (UNDEF: none, or b is the head). 1: it overlaps a free block
 * (free already: never a name of ours); -1: a bad free list (not ours to
 * mend); else 0. */
static int heap_near(const stab_edit *s, uint64_t off, uint64_t len, uint64_t *a, uint64_t *b, uint64_t *bprev)
{
	unsigned L = s->f->fmt.sizeof_size;
	uint64_t two_l = 2 * (uint64_t)L, prev = H5_ADDR_UNDEF, cur, guard;

	*a = *b = *bprev = H5_ADDR_UNDEF;
	for (cur = s->hfree, guard = 0; !no_block(s, cur); prev = cur, cur = hget(s, cur), guard++) {
		uint64_t size;

		if (guard > s->hsize / 8 || cur > s->hsize || s->hsize - cur < two_l)
			return -1;
		size = hget(s, cur + L);
		if (size < two_l || size > s->hsize - cur)
			return -1;
		if (cur < off + len && off < cur + size)
			return 1;
		if (cur + size == off)
			*a = cur;
		if (cur == off + len) {
			*b = cur;
			*bprev = prev;
		}
	}
	return 0;
}

int h5_stab_heap_release(stab_edit *s)
{
	h5_file *f = s->f;
	h5_freesp *ln = &h5_ws(f)->lheap_names;
	unsigned L = f->fmt.sizeof_size;
	uint64_t two_l = 2 * (uint64_t)L, off = 0, len = 0, at = 0, a = H5_ADDR_UNDEF, b = H5_ADDR_UNDEF;
	uint64_t bprev = H5_ADDR_UNDEF, dropped;
	uint8_t hdr[8 + 3 * 8];
	h5_txn t;
	size_t i;
	int rc = 0, near = 0;

	if (!ln->n)
		return 0;
	h5_txn_begin(&t, f, false, NULL, NULL);
	h5_freesp_release(ln, __atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE), NULL);
	/* the first released extent of this segment that can go back */
	for (i = 0; i < ln->n; i++) {
		if (ln->v[i].ticket || ln->v[i].addr < s->haddr || ln->v[i].addr - s->haddr >= s->hsize ||
		    ln->v[i].len > s->hsize - (ln->v[i].addr - s->haddr) || ln->v[i].len < 8)
			continue;
		at = ln->v[i].addr;
		off = at - s->haddr;
		len = ln->v[i].len;
		near = heap_near(s, off, len, &a, &b, &bprev);
		if (near < 0)
			return 0;
		if (near > 0) {
			h5_freesp_pop(ln, at, &dropped);
			return 0;
		}
		if (h5_addr_defined(a) || len >= two_l)
			break;
	}
	if (i == ln->n)
		return 0;
	if (h5_addr_defined(a)) {
		hput(s, a + L, hget(s, a + L) + len);
		rc = h5_file_write_inplace(f, s->haddr + a + L, s->heap + a + L, L);
	} else {
		/* a block of its own, its two fields within its own bytes (b's
		 * stay whole until the link lands) */
		hput(s, off, h5_addr_defined(b) ? hget(s, b) : s->hfree);
		hput(s, off + L, h5_addr_defined(b) ? len + hget(s, b + L) : len);
		rc = h5_txn_write_ordered(&t, at, s->heap + off, two_l);
		if (rc == 0 && h5_addr_defined(bprev)) {
			hput(s, bprev, off);
			rc = h5_file_write_inplace(f, s->haddr + bprev, s->heap + bprev, L);
		} else if (rc == 0) {
			/* the head: b was, or the block goes first */
			s->hfree = s->ofree = off;
			h5_lheap_hdr_encode(hdr, &f->fmt, s->hsize, s->hfree, s->haddr);
			rc = h5_file_write_inplace(f, s->st.heap_addr, hdr, h5_lheap_hdr_size(&f->fmt));
		}
	}
	h5_cache_invalidate(f->meta, H5_CK_LHEAP, s->st.heap_addr);
	if (rc == 0)
		h5_freesp_pop(ln, at, &dropped);
	return rc;
}

/* After the commit: the names it removed noted with its ticket, at the
 * data segment's address now (a moved segment holds every name at its
 * old offset: those noted in the old one move with it, before the old
 * one is freed, which drops what lies in it from the list). */
void h5_stab_names_commit(stab_edit *s, uint64_t seg, uint64_t ticket)
{
	h5_freesp *ln = &h5_ws(s->f)->lheap_names;
	uint64_t len;

	if (seg != s->haddr) {
		for (size_t i = 0; i < ln->n;) {
			h5_free_ext x = ln->v[i];

			if (x.addr >= s->haddr && x.addr - s->haddr < s->ohsize && h5_freesp_pop(ln, x.addr, &len)) {
				if (h5_freesp_add(ln, seg + (x.addr - s->haddr), x.len, x.ticket ? x.ticket : ticket) < 0)
					h5_err_clear();
			} else {
				i++;
			}
		}
	}
	for (size_t i = 0; i < s->names.n; i++)
		if (h5_freesp_add(ln, seg + s->names.v[i].addr, s->names.v[i].len, ticket) < 0)
			h5_err_clear();
	h5_freesp_clear(&s->names);
}
