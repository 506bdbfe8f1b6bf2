/* tail.c - rows written through the mount and not committed yet: how
 * many (the hole), so readers are shown the committed end until they are.
 *
 * Why not shown before they are committed. A dataset that grows on a
 * read-write mount is read around the kernel's page cache (its
 * descriptors are direct_io, wqueue.c wfile_reader_cached, so mapping it
 * fails with ENODEV). Through the cache, an append must reach the pages
 * before the kernel's size of the file grows: a read(2) takes a cached
 * page, then the size, and copies the page up to that size, so a page
 * holding the old end (zeros after it) copied after the size grew shows
 * zeros inside the file. tests/stress/append_race.py found it under TSan
 * and ASan in three designs (2026-11-25; git log of this file: pages
 * dropped at each acceptance, a switch between cached and direct
 * descriptors, every descriptor through the cache with the accepted bytes
 * kept here and read back): bytes exact beat memmap. The leads left: the
 * kernel's FUSE_DIRECT_IO_ALLOW_MMAP (libfuse 3.16; Debian ships 3.14),
 * or the accepted bytes stored into the cache (notify_store grows the
 * size before it copies: the same race).
 *
 * Rows are whole: one descriptor at a time may hold a partial row
 * (write.c refuses another's append meanwhile), so the order the bytes
 * were accepted in is the order of the rows in FILE.
 *
 * All under n->lk (write to change, read to answer). */
#include "member.h"

struct ntail {
	/* [base, base + hole): accepted, not committed; base is the
	 * committed end, which the node's size shows meanwhile */
	uint64_t base, hole;
};

int tail_accept(struct node *n, size_t len)
{
	struct ntail *t;
	int e = 0;

	pthread_rwlock_wrlock(&n->lk);
	if (!n->tail)
		n->tail = calloc(1, sizeof(*n->tail));
	t = n->tail;
	if (!t) {
		e = ENOMEM;
		goto out;
	}
	if (!t->hole)
		t->base = (uint64_t)n->st.st_size;
	t->hole += len;
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

void tail_committed(struct node *n, uint64_t committed)
{
	struct ntail *t = n->tail;
	uint64_t drop;

	n->st.st_size = (off_t)committed;
	if (!t || !t->hole)
		return;
	drop = committed > t->base ? committed - t->base : 0;
	t->hole -= drop < t->hole ? drop : t->hole;
	t->base = committed;
}

uint64_t tail_base(const struct node *n)
{
	const struct ntail *t = n->tail;

	return t && t->hole ? t->base : (uint64_t)n->st.st_size;
}

void tail_drop(struct node *n, uint64_t len)
{
	struct ntail *t;

	pthread_rwlock_wrlock(&n->lk);
	t = n->tail;
	if (t)
		t->hole -= len < t->hole ? len : t->hole;
	pthread_rwlock_unlock(&n->lk);
}

void tail_free(struct node *n)
{
	free(n->tail);
	n->tail = NULL;
}
