/* blockcache.c - the block cache of a remote byte source (blockcache.h):
 * slots, reads, pins, hints and the source's ops, over a transport that
 * fetches byte ranges (source_http.c: HTTP and S3).
 *
 * Bytes are cached in aligned blocks inside the cache budget; a miss
 * fetches the missing blocks of that read in one request, straight into
 * the slots reserved for them. The first fetch (the first 4 MiB) gives
 * the object's size. A sequential stream (a miss right after cached or
 * arriving bytes, or a read of a block that was read ahead) is read ahead
 * in the background by blockcache_ra.c, several fetches in flight; a jump
 * resets it. A block another thread fetches is waited for, not fetched
 * twice. A fetch that finally fails is EIO for that read, the source
 * stays usable. Nothing here knows how a range is fetched. */
#include <config.h>
#include "blockcache.h"
#include "source.h"
#include "base.h"
#include "blockcache_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCK BC_BLOCK
#define FIRST BC_FIRST
#define POOL BC_POOL

/* short names inside this file */
typedef bc_blk blk;

uint64_t bc_nblocks(const bc_cache *h)
{
	return (h->base.size + BLOCK - 1) / BLOCK;
}

/* The slot holding block b, or NULL (h->mu held); a hit counts as a use. */
static blk *slot_find(bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].idx == b) {
			h->slots[i].used = ++h->tick;
			return &h->slots[i];
		}
	return NULL;
}

/* True if block b is cached (h->mu held); not a use. */
bool bc_cached(const bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].idx == b)
			return true;
	return false;
}

/* How soon a slot may go (bc_slot_victim): lower first. */
enum { GO_DONE, GO_LRU, GO_HALF, GO_UNREAD };

static int slot_class(const blk *c, uint64_t tick)
{
	if (c->idx == UINT64_MAX || tick - c->used > BC_CHUNK_STALE)
		return GO_LRU;
	if (c->ahead)
		return GO_UNREAD;
	if (c->chunk && c->nread < BLOCK)
		return GO_HALF;
	if ((c->chunk || c->nread >= BLOCK) && tick - c->used > BC_CHUNK_DONE)
		return GO_DONE;
	return GO_LRU;
}

/* The slot that may go (h->mu held by the caller): never a pinned one (a
 * reply is being written from it) nor one a transfer writes into; NULL if
 * there is none. In order, each class least recently used first:
 * - a block read whole long ago: a chunk block's decoded chunks are in
 *   the engine's cache (also those of chunks a reader fetched itself,
 *   outside any stream: random reads), a byte stream's bytes went to
 *   the kernel's page cache; and its memory is touched already, where an
 *   empty slot's first use costs the kernel zeroing a page (a third of a
 *   fresh mount's `cat` of a chunked dataset was that; random 4 KiB
 *   reads, which fetch each chunk once, had every fetch land in fresh
 *   pages before blocks other than a stream's could count as done);
 * - any other (empty slots first, they have used 0);
 * - a chunk block partly read: it holds the end of one chunk and the
 *   start of the next, and a stream's reads come out of order (FUSE
 *   threads serving the kernel's readahead), up to a dozen chunks apart;
 * - a block read ahead and not read yet: the stream reads it next.
 * Untouched for BC_CHUNK_STALE ticks, the last two are plain LRU again
 * (a block that also holds an index node is never read whole; a stream
 * that stopped leaves blocks unread). By plain LRU alone (before), once
 * no block was done (blocks the readers fetched themselves, overtaking
 * the read-ahead under CPU load, never counted as done), the
 * read-ahead's next blocks, landed about when the oldest ones were read,
 * could go before use and be fetched again, each refetch pushing out
 * another. The read-ahead holds at most half the slots unread, so a
 * stream always leaves the first classes something to take. */
bc_blk *bc_slot_victim(bc_blk *slots, unsigned n, uint64_t tick)
{
	blk *v = NULL;
	int vc = GO_UNREAD + 1;

	for (unsigned i = 0; i < n; i++) {
		blk *c = &slots[i];
		int k;

		if (c->refs || c->loading)
			continue;
		k = slot_class(c, tick);
		if (k < vc || (k == vc && c->used < v->used)) {
			v = c;
			vc = k;
		}
	}
	return v;
}

/* Up to n slots (least recently used first) taken out of the cache for a
 * transfer to write blocks into, as slot[i] and seg[i]; returns how many
 * (h->mu held). bc_land() puts them back. */
uint64_t bc_reserve(bc_cache *h, uint64_t n, unsigned *slot, uint8_t **seg, uint8_t loading)
{
	uint64_t k = 0;

	for (; k < n; k++) {
		blk *v = bc_slot_victim(h->slots, h->nslots, h->tick);

		if (!v)
			break;
		if (v->ahead)
			h->ra_unread--;
		v->ahead = false;
		v->chunk = false;
		v->nread = 0;
		v->idx = UINT64_MAX;
		v->loading = loading;
		slot[k] = (unsigned)(v - h->slots);
		seg[k] = v->p;
	}
	return k;
}

/* bc_land with h->mu held. */
static void land_locked(bc_cache *h, uint64_t b, uint64_t n, const unsigned *slot, bool ok, uint8_t ahead)
{
	for (uint64_t i = 0; i < n; i++) {
		blk *v = &h->slots[slot[i]];

		v->loading = BC_LOAD_NONE;
		/* landed already (first_fetch lands what came, then frees all) */
		if (v->idx != UINT64_MAX)
			continue;
		v->used = ok ? ++h->tick : 0;
		if (ok) {
			v->idx = b + i;
			v->ahead = ahead == BC_AHEAD_STREAM || ahead == BC_AHEAD_CHUNK;
			v->chunk = ahead == BC_AHEAD_CHUNK || ahead == BC_FETCHED_CHUNK;
			h->ra_unread += v->ahead;
		}
	}
}

/* The transfer into slot[0..n) for blocks [b, b+n) ended: the blocks are
 * cached if ok, else the slots are empty again (h->mu not held). */
void bc_land(bc_cache *h, uint64_t b, uint64_t n, const unsigned *slot, bool ok, uint8_t ahead)
{
	pthread_mutex_lock(&h->mu);
	land_locked(h, b, n, slot, ok, ahead);
	pthread_mutex_unlock(&h->mu);
}

/* True if block b is being fetched (h->mu held). */
bool bc_in_flight(const bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->ninflight; i++)
		if (b >= h->inflight[i].b && b - h->inflight[i].b < h->inflight[i].n)
			return true;
	return false;
}

void bc_flight_end(bc_cache *h, uint64_t b)
{
	pthread_mutex_lock(&h->mu);
	for (unsigned i = 0; i < h->ninflight; i++)
		if (h->inflight[i].b == b) {
			h->inflight[i] = h->inflight[--h->ninflight];
			break;
		}
	pthread_cond_broadcast(&h->landed);
	pthread_mutex_unlock(&h->mu);
}

/* Fetches blocks [b, b+n) in one request straight into the slots
 * reserved for them (registered in h->inflight by the caller, removed
 * here, and the slots landed as `how`). */
static int fetch_blocks(bc_cache *h, uint64_t b, uint64_t n, const unsigned *slot, uint8_t *const *seg,
			uint8_t how)
{
	uint64_t off = b * BLOCK;
	uint64_t end = (b + n) * BLOCK < h->base.size ? (b + n) * BLOCK : h->base.size;
	bc_fetch f = { .off = off, .len = (size_t)(end - off), .seg = seg };
	int rc;

	rc = h->t->ops->fetch(h->t, &f);
	/* gone after the open (a 404): an I/O error like any other (only
	 * at open does it mean "no such file") */
	if (rc == H5_ERR_NOTFOUND) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", h5_err_msg());
		rc = h5_err_set(H5_ERR_IO, "%s", msg);
	}
	bc_land(h, b, n, slot, rc == 0, how);
	bc_flight_end(h, b);
	return rc;
}

/* Widens a fetch of the missing block *first (for bytes [lo, hi)) to
 * the whole pages holding those bytes: blocks before it back to the page
 * start while they are missing too, *stop to the last page's end (h->mu
 * held). */
static void page_widen(const bc_cache *h, uint64_t lo, uint64_t hi, uint64_t *first, uint64_t *stop,
		       uint64_t cap)
{
	uint64_t p0 = lo, p1 = hi;

	if (lo >= h->page_base) {
		p0 = h->page_base + (lo - h->page_base) / h->page * h->page;
		p1 = h->page_base + ((hi - h->page_base) + h->page - 1) / h->page * h->page;
	}
	if (p1 > h->base.size || p1 < hi)
		p1 = h->base.size;
	while (*first > p0 / BLOCK && cap > 1 && !bc_cached(h, *first - 1) && !bc_in_flight(h, *first - 1)) {
		(*first)--;
		cap--;
	}
	if ((p1 + BLOCK - 1) / BLOCK > *stop)
		*stop = (p1 + BLOCK - 1) / BLOCK;
}

/* Pins taken by one bc_pin: the slots, to unpin. */
typedef struct bc_hold {
	unsigned n;
	unsigned slot[];
} bc_hold;

/* Drops the pins of hold (h->mu held). */
static void hold_drop(bc_cache *h, bc_hold *hold)
{
	for (unsigned i = 0; i < hold->n; i++) {
		h->slots[hold->slot[i]].refs--;
		h->npinned--;
	}
	hold->n = 0;
}

/* The bytes [off, off+len) fetched as needed, then copied to dst, or with
 * hold set, pinned where they are as iov[0..) instead (h->mu not held). */
static int bc_get(bc_cache *h, uint64_t off, uint8_t *dst, size_t len, struct iovec *iov, bc_hold *hold)
{
	h5_source *s = &h->base;
	uint64_t end, last;

	if (len == 0)
		return 0;
	if (h5_add_overflow(off, len, &end) || end > s->size)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file at 0x%llx", (unsigned long long)s->size);
	last = (end - 1) / BLOCK;
	for (uint64_t b = off / BLOCK; b <= last; b++) {
		uint64_t bstart = b * BLOCK;
		size_t from = off > bstart ? (size_t)(off - bstart) : 0;
		size_t to = end - bstart < BLOCK ? (size_t)(end - bstart) : BLOCK;
		blk *v;

		pthread_mutex_lock(&h->mu);
		bc_ra_forked(h);
		v = slot_find(h, b);
		if (v) {
			if (v->nread < BLOCK)
				v->nread += (uint32_t)(to - from);
			/* the stream reached bytes read ahead: read further */
			if (v->ahead) {
				v->ahead = false;
				h->ra_unread--;
				bc_ra_note(h, b, true);
			}
			if (hold) {
				/* pinned at once: the fetches of the blocks after it
				 * cannot evict it */
				v->refs++;
				h->npinned++;
				hold->slot[hold->n] = (unsigned)(v - h->slots);
				iov[hold->n].iov_base = v->p + from;
				iov[hold->n++].iov_len = to - from;
			} else {
				memcpy(dst, v->p + from, to - from);
				dst += to - from;
			}
			pthread_mutex_unlock(&h->mu);
			continue;
		}
		/* another thread fetches it (the kernel's parallel read-ahead,
		 * or ours): wait for that instead of asking twice */
		if (bc_in_flight(h, b) || h->ninflight == POOL) {
			pthread_cond_wait(&h->landed, &h->mu);
			pthread_mutex_unlock(&h->mu);
			b--;
			continue;
		}
		/* a miss. Sequential if the block before is here or on its way
		 * (the kernel's parallel reads come out of order) and the read
		 * is a data-sized one (object headers and heaps that follow
		 * each other are not a stream): the background reads ahead from
		 * here; a jump stops it. This read fetches its own missing
		 * blocks in one request (never more than half the cache, so
		 * they stay). */
		if (len >= BC_RA_MIN_READ)
			bc_ra_note(h, b, b > 0 && (bc_cached(h, b - 1) || bc_in_flight(h, b - 1)));
		uint64_t first = b, n = 1, stop = last + 1, cap = h->nslots / 2 ? h->nslots / 2 : 1;

		if (h->page)
			page_widen(h, off > bstart ? off : bstart, end, &first, &stop, cap);
		while (first + n < stop && n < cap && !bc_cached(h, first + n) && !bc_in_flight(h, first + n))
			n++;
		uint8_t **seg = malloc((size_t)n * (sizeof(*seg) + sizeof(unsigned)));
		unsigned *slot = (unsigned *)(seg + n);

		if (!seg) {
			pthread_mutex_unlock(&h->mu);
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		}
		/* slots pinned or being written into cannot take it: fewer
		 * blocks (the rest on the next turn), or none until a transfer
		 * lands or a reply unpins */
		n = bc_reserve(h, n, slot, seg, BC_LOAD_FG);
		if (n == 0) {
			free(seg);
			pthread_cond_wait(&h->landed, &h->mu);
			pthread_mutex_unlock(&h->mu);
			b--;
			continue;
		}
		/* among a chunk stream's chunks: chunk data, let go once read
		 * whole like the blocks its read-ahead fetches */
		bool span = len >= BC_RA_MIN_READ && bc_chunk_span(h, first);

		h->inflight[h->ninflight].b = first;
		h->inflight[h->ninflight].bg = false;
		h->inflight[h->ninflight].chunk = span;
		h->inflight[h->ninflight++].n = n;
		pthread_mutex_unlock(&h->mu);
		int rc = fetch_blocks(h, first, n, slot, seg, span ? BC_FETCHED_CHUNK : BC_AHEAD_NO);

		free(seg);
		if (rc < 0)
			return rc;
		b--; /* now cached: copy it on the next turn */
	}
	return 0;
}

static int bc_read(h5_source *s, uint64_t off, void *out, size_t len)
{
	return bc_get((bc_cache *)s, off, out, len, NULL, NULL);
}

/* Pins hold the slots a FUSE reply is written from; at most a quarter of
 * the cache together, so a fetch (at most half) and the read-ahead (at
 * most half of what is left to it) always find slots to evict. */
static int bc_pin(h5_source *s, uint64_t off, size_t len, struct iovec *iov, size_t max, size_t *n,
		    void **holdp)
{
	bc_cache *h = (bc_cache *)s;
	uint64_t nb = len ? (off + len - 1) / BLOCK - off / BLOCK + 1 : 0;
	bc_hold *hold = NULL;
	int rc = 0;

	*n = 0;
	*holdp = NULL;
	if (nb > max)
		return h5_err_set(H5_ERR_LIMIT, "%s: the range spans more than %zu blocks", h->name, max);
	pthread_mutex_lock(&h->mu);
	if (h->npinned + nb > h->nslots / 4)
		rc = h5_err_set(H5_ERR_LIMIT, "%s: a quarter of the cache is pinned", h->name);
	pthread_mutex_unlock(&h->mu);
	if (rc < 0)
		return rc;
	hold = malloc(sizeof(*hold) + (size_t)nb * sizeof(hold->slot[0]));
	if (!hold)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	hold->n = 0;
	rc = bc_get(h, off, NULL, len, iov, hold);
	if (rc < 0)
		goto out;
	*n = hold->n;
	*holdp = hold;
	hold = NULL;
out:
	if (hold) {
		pthread_mutex_lock(&h->mu);
		hold_drop(h, hold);
		pthread_mutex_unlock(&h->mu);
		free(hold);
	}
	return rc;
}

static void bc_unpin(h5_source *s, void *p)
{
	bc_cache *h = (bc_cache *)s;

	if (!p)
		return;
	pthread_mutex_lock(&h->mu);
	hold_drop(h, p);
	pthread_cond_broadcast(&h->landed); /* a fetch may wait for a slot */
	pthread_mutex_unlock(&h->mu);
	free(p);
}

static int bc_size(h5_source *s, uint64_t *out)
{
	*out = s->size;
	return 0;
}

static int bc_fd(const h5_source *s)
{
	(void)s;
	return -1; /* no splicing: bytes come from the cache */
}

static void bc_close(h5_source *s)
{
	bc_cache *h = (bc_cache *)s;

	if (!h)
		return;
	bc_ra_stop(h); /* its fetches use the transport */
	if (h->t)
		h->t->ops->close(h->t);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->landed);
	pthread_cond_destroy(&h->ra_wake);
	if (h->arena)
		munmap(h->arena, h->arena_len);
	free(h->slots);
	free(h->name);
	free(h);
}

/* The slots' bytes in one anonymous mapping, touched only as blocks
 * arrive, in transparent huge pages where the kernel gives them: a
 * first `cat` over a fresh mount otherwise spends more time faulting in
 * and zeroing 4 KiB pages than receiving (a fault per 4 KiB of the
 * memcpy into the slots). Aligned to 2 MiB so every huge page is whole. */
static int slots_map(bc_cache *h)
{
	size_t huge = (size_t)2 << 20, len = (size_t)h->nslots * BLOCK;
	uint8_t *m;

	h->arena_len = len + huge;
	m = mmap(NULL, h->arena_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return h5_err_set(H5_ERR_NOMEM, "out of memory (%zu bytes of remote blocks)", len);
	h->arena = m;
	m += (huge - (uintptr_t)m % huge) % huge;
	(void)madvise(m, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages do too */
	for (unsigned i = 0; i < h->nslots; i++) {
		h->slots[i].idx = UINT64_MAX;
		h->slots[i].p = m + (size_t)i * BLOCK;
	}
	return 0;
}

static void bc_page_hint(h5_source *s, uint64_t base, uint64_t page)
{
	bc_cache *h = (bc_cache *)s;

	pthread_mutex_lock(&h->mu);
	h->page = page;
	h->page_base = base;
	h->page_blocks = base % BLOCK == 0 && page % BLOCK == 0 ? page / BLOCK : 0;
	pthread_mutex_unlock(&h->mu);
}

/* Blocks of metadata the engine will read next (a group's children): the
 * read-ahead worker fetches the missing ones, several at once, instead of
 * one round trip each as the readers reach them. */
static void bc_prefetch(h5_source *s, const uint64_t *off, size_t n)
{
	bc_cache *h = (bc_cache *)s;

	pthread_mutex_lock(&h->mu);
	bc_ra_forked(h);
	for (size_t i = 0; i < n; i++) {
		uint64_t b = off[i] / BLOCK;

		if (off[i] < s->size && !bc_cached(h, b) && !bc_in_flight(h, b))
			bc_ra_hint(h, b);
	}
	pthread_mutex_unlock(&h->mu);
}

/* A contiguous dataset about to be read: remembered (most recent first),
 * so read-ahead inside it stops at its end rather than fetching up to
 * the whole distance of whatever lies behind it. */
static void bc_extent_hint(h5_source *s, uint64_t start, uint64_t end)
{
	bc_cache *h = (bc_cache *)s;
	uint64_t lo = start / BLOCK, hi = (end + BLOCK - 1) / BLOCK;
	unsigned i;

	pthread_mutex_lock(&h->mu);
	for (i = 0; i < h->nextents && (h->ext[i].lo != lo || h->ext[i].hi != hi); i++)
		;
	if (i == h->nextents) { /* a new one: the oldest goes when full */
		if (h->nextents < BC_EXTENTS)
			h->nextents++;
		i = h->nextents - 1;
	}
	memmove(h->ext + 1, h->ext, i * sizeof(h->ext[0]));
	h->ext[0].lo = lo;
	h->ext[0].hi = hi;
	pthread_mutex_unlock(&h->mu);
}

/* h5fs -o refresh: the transport knows (a remote object replaced). */
static int bc_changed(h5_source *s, int probe)
{
	bc_cache *h = (bc_cache *)s;

	return h->t->ops->changed ? h->t->ops->changed(h->t, probe) : 0;
}

static const h5_source_ops bc_ops = {
	.name = "remote",
	.read = bc_read,
	.size = bc_size,
	.fd = bc_fd,
	.close = bc_close,
	.page_hint = bc_page_hint,
	.pin = bc_pin,
	.unpin = bc_unpin,
	.prefetch = bc_prefetch,
	.extent_hint = bc_extent_hint,
	.ranges_hint = bc_ranges_hint,
	.changed = bc_changed,
};

/* The first fetch: FIRST bytes (or the whole object), which give the
 * size (and pin the object's version in the transport). */
static int first_fetch(bc_cache *h)
{
	uint8_t *seg[FIRST / BLOCK];
	unsigned slot[FIRST / BLOCK];
	uint64_t n;
	bc_fetch f = { .off = 0 };
	int rc;

	/* straight into the slots (at least 2 * FIRST of them, all free) */
	pthread_mutex_lock(&h->mu);
	n = bc_reserve(h, FIRST / BLOCK, slot, seg, BC_LOAD_FG);
	pthread_mutex_unlock(&h->mu);
	f.len = n * BLOCK;
	f.seg = seg;
	rc = h->t->ops->fetch(h->t, &f);
	if (rc == H5_ERR_FORMAT) /* 416 at 0: an empty object */
		rc = h5_err_set(H5_ERR_NOTHDF5, "%s: empty object", h->name);
	if (rc == 0 && f.total == 0) /* a transport's duty; a guard */
		rc = h5_err_set(H5_ERR_IO, "%s: the object's size is unknown", h->name);
	if (rc == 0) {
		h->base.size = f.total;
		h->base.mtime = f.mtime;        /* FILE's mtime: Last-Modified */
	}
	pthread_mutex_lock(&h->mu);
	if (rc == 0)
		land_locked(h, 0, (f.got + BLOCK - 1) / BLOCK, slot, true, BC_AHEAD_NO);
	/* the slots past a small object's end are free again */
	land_locked(h, 0, n, slot, false, BC_AHEAD_NO);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int bc_source_open(h5_source **out, bc_transport *t, const char *name, size_t cache_bytes)
{
	bc_cache *h;
	size_t budget;
	int rc = 0;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h) {
		t->ops->close(t);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	h->base.ops = &bc_ops;
	h->t = t;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->landed, NULL);
	pthread_cond_init(&h->ra_wake, NULL);
	h->name = strdup(name);
	if (!h->name)
		goto nomem;
	/* the remote blocks get a quarter of the cache budget (decoded chunks
	 * and metadata live in the engine's cache), at least 2 * FIRST */
	budget = (cache_bytes ? cache_bytes : H5_DEFAULT_CACHE_BYTES) / 4;
	if (budget < 2 * FIRST)
		budget = 2 * FIRST;
	h->nslots = (unsigned)(budget / BLOCK);
	h->rq_lo = UINT64_MAX; /* no chunk stream's span yet */
	h->slots = calloc(h->nslots, sizeof(*h->slots));
	if (!h->slots)
		goto nomem;
	rc = slots_map(h);
	if (rc < 0)
		goto out;
	rc = first_fetch(h);
	if (rc < 0)
		goto out;
	*out = &h->base;
	return 0;
nomem:
	rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
out:
	bc_close(&h->base);
	return rc;
}
