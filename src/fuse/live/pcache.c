/*
 * pcache.c - what a live mount handed the kernel's page cache (issue
 * 24: every successful read returns bytes of one version).
 *
 * A read-only handle uses the page cache (keep_cache: a second cat,
 * numpy.memmap), before FILE changes and after. Until the first change a
 * mount's reads are not checked (live/live.c: the stated window), so nothing
 * is recorded then, but how far they reached (n->fast_end); from the
 * first change on, everything is. At that change the old version itself
 * is kept for the node's open cached handles (pcache_keep_old) and
 * compared with the new before the next answer (verify_old). One read() of it is answered
 * page by page: some pages from the cache, the missing ones by our reads
 * (readahead). Once FILE has changed, the cache may hold pages of the old
 * version, and a read() in flight may have copied some of them already:
 * answering its next request with new bytes would mix two versions in one
 * read(). The watcher's invalidation (live/live.c sweep) cannot close this
 * alone: the kernel drops the pages while such a read() is under way, and
 * it cannot be done from a read handler (the kernel waits for the pages of
 * that very request).
 *
 * So every page we answer to such a handle is recorded with a hash of its
 * bytes (the ledger, one per node, for the node's life). Before a request
 * of such a handle is answered from another generation than the ledger's,
 * every recorded page is read again in the new generation and compared:
 * equal (appends, a SWMR writer's flush, a FILE opened again only because
 * its stamp was racy), the ledger moves to the new generation and whatever
 * the kernel holds is bytes of it too; different (a rewrite, a same-size
 * overwrite), the node's cached handles get EIO from then on, with one log
 * line; descriptors opened while such handles are open read with direct_io
 * (live/dio.c), and once the last of them is closed (a mapping holds its
 * descriptor) the next open starts the ledger anew, dropping the kernel's
 * pages (pcache_open), so mappings work again. Pages are hashed as answered, before the reply, and
 * recorded only once the answer passed live_read_check, so the ledger only
 * ever holds bytes the kernel was given.
 *
 * Cost: one hashing pass over what cached handles are answered (reads of
 * direct_io handles and of frozen mounts are not recorded), 8 bytes per 4
 * KiB page served; verifying reads what was served once per generation
 * that meets a cached handle.
 */
#include "live.h"
#include <stdatomic.h>

#define PC_PAGE 4096u
#define PC_MAX_PAGES ((size_t)1 << 22)  /* 16 GiB per node: 32 MiB of ledger */
#define PC_VERIFY_CHUNK ((size_t)1 << 20)

struct pcache {
	pthread_mutex_t mu;
	uint64_t gen;           /* whose bytes the entries are (0: none yet) */
	uint64_t adds;          /* entries set so far: a verification covers those */
	uint64_t *e;            /* per page: pcache_entry(), 0: never answered */
	size_t cap;
	bool overflow;          /* answered pages not recorded: unverifiable */
	bool poisoned;          /* a change made recorded pages differ */
	unsigned nopen;         /* cached handles open (pcache_open) */
	struct pc_old old;      /* pcache_keep_old's (ds NULL: none) */
};

/* A page's fingerprint: xxh3's accumulation (64-byte stripes into eight
 * 64-bit lanes: the data added to the neighbour lane, the product of the
 * halves of data ^ key to its own; the lanes scrambled every 8 stripes, so
 * blocks cannot be swapped unseen), then xxh64's avalanche. Fast enough to
 * run over every byte answered (AVX2 13-14 GB/s, SSE2 4-6 on the test
 * machine; the plain C below gives the same values). Not a defence against an adversary, who
 * could write FILE anyway. */
static const uint64_t pc_key[16] = {
	0xbe4ba423396cfeb8ULL, 0x1cad21f72c81017cULL, 0xdb979083e96dd4deULL, 0x1f67b3b7a4a44072ULL,
	0x78e5c0cc4ee679cbULL, 0x2172ffcc7dd05a82ULL, 0x8e2443f7744608b8ULL, 0x4c263a81e69035e0ULL,
	0xcb00c391bb52283cULL, 0xa32e531b8b65d088ULL, 0x4ef90da297486471ULL, 0xd8acdea946ef1938ULL,
	0x3f349ce33f76faa8ULL, 0x1d4f0bc7c7bbdcf9ULL, 0x3159b4cd4be0518aULL, 0x647378d9c97e9fc8ULL,
};
#define PC_PRIME32 0x9E3779B1u

static uint64_t avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xC2B2AE3D27D4EB4FULL;
	h ^= h >> 29;
	h *= 0x165667B19E3779F9ULL;
	return h ^ (h >> 32);
}

#ifdef __SSE2__
#include <emmintrin.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PC_AVX2 1

/* The same with AVX2 where the CPU has it (chosen at run time: the build
 * targets plain x86-64): four lanes at a time. */
__attribute__((target("avx2"))) static void accumulate_avx2(uint64_t acc[8], const uint8_t *p, size_t stripes)
{
	const __m256i prime = _mm256_set1_epi32((int)PC_PRIME32);
	__m256i a[2];

	for (int i = 0; i < 2; i++)
		a[i] = _mm256_loadu_si256((const __m256i *)(acc + 4 * i));
	for (size_t s = 0; s < stripes; s++, p += 64) {
		const uint64_t *k = pc_key + (s & 7);

		for (int i = 0; i < 2; i++) {
			__m256i d = _mm256_loadu_si256((const __m256i *)(p + 32 * i));
			__m256i dk = _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *)(k + 4 * i)));
			__m256i prod = _mm256_mul_epu32(dk, _mm256_shuffle_epi32(dk, _MM_SHUFFLE(0, 3, 0, 1)));

			a[i] = _mm256_add_epi64(a[i],
						_mm256_add_epi64(prod, _mm256_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2))));
		}
		if ((s & 7) == 7) {
			for (int i = 0; i < 2; i++) {
				__m256i x = _mm256_xor_si256(_mm256_xor_si256(a[i], _mm256_srli_epi64(a[i], 47)),
							     _mm256_loadu_si256((const __m256i *)(pc_key + 8 + 4 * i)));
				__m256i lo = _mm256_mul_epu32(x, prime);
				__m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), prime);

				a[i] = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
			}
		}
	}
	for (int i = 0; i < 2; i++)
		_mm256_storeu_si256((__m256i *)(acc + 4 * i), a[i]);
}
#endif

static void accumulate(uint64_t acc[8], const uint8_t *p, size_t stripes)
{
	const __m128i prime = _mm_set1_epi32((int)PC_PRIME32);
	__m128i a[4];

	for (int i = 0; i < 4; i++)
		a[i] = _mm_loadu_si128((const __m128i *)(acc + 2 * i));
	for (size_t s = 0; s < stripes; s++, p += 64) {
		const uint64_t *k = pc_key + (s & 7);

		for (int i = 0; i < 4; i++) {
			__m128i d = _mm_loadu_si128((const __m128i *)(p + 16 * i));
			__m128i dk = _mm_xor_si128(d, _mm_loadu_si128((const __m128i *)(k + 2 * i)));
			__m128i prod = _mm_mul_epu32(dk, _mm_shuffle_epi32(dk, _MM_SHUFFLE(0, 3, 0, 1)));

			a[i] = _mm_add_epi64(a[i], _mm_add_epi64(prod, _mm_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2))));
		}
		if ((s & 7) == 7) {
			for (int i = 0; i < 4; i++) {
				__m128i x = _mm_xor_si128(_mm_xor_si128(a[i], _mm_srli_epi64(a[i], 47)),
							  _mm_loadu_si128((const __m128i *)(pc_key + 8 + 2 * i)));
				__m128i lo = _mm_mul_epu32(x, prime);
				__m128i hi = _mm_mul_epu32(_mm_srli_epi64(x, 32), prime);

				a[i] = _mm_add_epi64(lo, _mm_slli_epi64(hi, 32));
			}
		}
	}
	for (int i = 0; i < 4; i++)
		_mm_storeu_si128((__m128i *)(acc + 2 * i), a[i]);
}
#else
static void accumulate(uint64_t acc[8], const uint8_t *p, size_t stripes)
{
	for (size_t s = 0; s < stripes; s++, p += 64) {
		const uint64_t *k = pc_key + (s & 7);

		for (int i = 0; i < 8; i++) {
			uint64_t w, x;

			memcpy(&w, p + 8 * i, sizeof(w));
			x = w ^ k[i];
			acc[i ^ 1] += w;
			acc[i] += (x & 0xFFFFFFFFu) * (x >> 32);
		}
		if ((s & 7) == 7)
			for (int i = 0; i < 8; i++)
				acc[i] = (acc[i] ^ (acc[i] >> 47) ^ pc_key[8 + i]) * PC_PRIME32;
	}
}
#endif

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t acc[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, h = (uint64_t)n * 0x9E3779B185EBCA87ULL;

#ifdef PC_AVX2
	/* Atomic (relaxed) so that the first readers racing to fill it in
	 * are well defined: every thread finds the same answer. */
	static _Atomic int avx2 = -1;
	int have = atomic_load_explicit(&avx2, memory_order_relaxed);

	if (have < 0) {
		have = __builtin_cpu_supports("avx2") ? 1 : 0;
		atomic_store_explicit(&avx2, have, memory_order_relaxed);
	}
	if (have)
		accumulate_avx2(acc, p, n / 64);
	else
#endif
		accumulate(acc, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		h = avalanche(h ^ w);
	}
	for (; n > 0; p++, n--)
		h = avalanche(h ^ *p);
	for (int i = 0; i < 8; i++)
		h = avalanche(h ^ acc[i] ^ pc_key[8 + i]);
	return h;
}

/* A page's entry: the hash and the length answered (a page at the end of
 * the dataset is shorter), never 0. */
uint64_t pcache_entry(const uint8_t *p, size_t len)
{
	return (hash_bytes(p, len) & ~(uint64_t)0x1FFF) | 0x1000 | (uint64_t)(len - 1);
}

size_t pcache_entry_len(uint64_t e)
{
	return (size_t)(e & 0xFFF) + 1;
}

/* The version kept by pcache_keep_old, given up (outside pc->mu: its
 * generation's release may close a file). */
static void old_release(struct pc_old *o)
{
	if (o->ds)
		h5_dataset_close(o->ds);
	h5_file_release_related(o->f);
	gen_release(o->g);
	memset(o, 0, sizeof(*o));
}

void pcache_free(struct pcache *pc)
{
	if (!pc)
		return;
	old_release(&pc->old);
	pthread_mutex_destroy(&pc->mu);
	free(pc->e);
	free(pc);
}

static struct pcache *pcache_of(struct node *n)
{
	struct pcache *pc = __atomic_load_n(&n->pc, __ATOMIC_ACQUIRE), *fresh;

	if (pc)
		return pc;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return NULL;
	pthread_mutex_init(&fresh->mu, NULL);
	if (__atomic_compare_exchange_n(&n->pc, &pc, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return fresh;
	pcache_free(fresh);     /* another request made it first */
	return pc;
}

int pcache_open(h5fs *fs, struct node *n, bool *fresh)
{
	struct pcache *pc = pcache_of(n);
	int e = 0;

	*fresh = false;
	if (!pc)
		return ENOMEM;
	pthread_mutex_lock(&pc->mu);
	if ((pc->poisoned || pc->old.ds) && pc->nopen) {
		e = EBUSY;      /* pages of the old version may still be in use */
	} else {
		if (pc->poisoned) {
			/* no descriptor holds the old version's pages any more (a
			 * mapping holds its descriptor): a ledger anew, and the
			 * kernel's pages of the inode dropped at this open */
			if (pc->e)
				memset(pc->e, 0, pc->cap * sizeof(*pc->e));
			pc->gen = 0;
			pc->adds++;
			pc->poisoned = pc->overflow = false;
			*fresh = true;
			h5fs_log(fs, LOG_DEBUG, "%s: page cache in use again", show_path(n->path));
		}
		pc->nopen++;
	}
	pthread_mutex_unlock(&pc->mu);
	return e;
}

void pcache_close(struct node *n)
{
	struct pcache *pc = __atomic_load_n(&n->pc, __ATOMIC_ACQUIRE);
	struct pc_old o = { 0 };

	if (!pc)
		return;
	pthread_mutex_lock(&pc->mu);
	if (pc->nopen)
		pc->nopen--;
	if (!pc->nopen) {
		/* no descriptor left to read on from unchecked old bytes */
		o = pc->old;
		memset(&pc->old, 0, sizeof(pc->old));
	}
	pthread_mutex_unlock(&pc->mu);
	old_release(&o);
}

bool pcache_keep_old(struct node *n, h5_dataset *ds, const h5_view_ops *view, h5_file *f, struct gen *g,
		     uint64_t end)
{
	struct pcache *pc = pcache_of(n);
	bool kept = false;

	if (!pc || !ds || !end)
		return false;
	pthread_mutex_lock(&pc->mu);
	/* an older one kept already is what was answered unchecked */
	if (pc->nopen && !pc->old.ds && !pc->poisoned) {
		pc->old = (struct pc_old){ ds, view, f, g, end };
		kept = true;
	}
	pthread_mutex_unlock(&pc->mu);
	return kept;
}

/* Whether the version kept by pcache_keep_old equals generation g's bytes
 * (n->ds) over what was answered from it (pc->mu held, n->lk shared). The
 * old version unreadable (rewritten in place, a replaced remote object) is
 * no proof: PC_DIFFERS; the new one unreadable: PC_UNREADABLE. */
static enum pc_verdict verify_old(struct pcache *pc, struct node *n)
{
	const struct pc_old *o = &pc->old;
	/* the kernel asks whole pages: what it holds reaches the page's end */
	uint64_t end = (o->end + PC_PAGE - 1) / PC_PAGE * PC_PAGE, osize = o->view->size(o->ds);
	enum pc_verdict v = PC_VERIFIED;
	uint8_t *a = NULL, *b = NULL;

	if (end > osize)
		end = osize;
	if (!n->ds || end > (uint64_t)n->st.st_size)
		return PC_DIFFERS;      /* shorter now */
	a = malloc(PC_VERIFY_CHUNK);
	b = malloc(PC_VERIFY_CHUNK);
	if (!a || !b) {
		v = PC_UNREADABLE;
		goto out;
	}
	for (uint64_t pos = 0; v == PC_VERIFIED && pos < end; pos += PC_VERIFY_CHUNK) {
		size_t len = end - pos < PC_VERIFY_CHUNK ? (size_t)(end - pos) : PC_VERIFY_CHUNK;

		if (n->view->read(n->ds, b, pos, len) < 0)
			v = PC_UNREADABLE;
		else if (o->view->read(o->ds, a, pos, len) < 0 || memcmp(a, b, len) != 0)
			v = PC_DIFFERS;
	}
out:
	h5_err_clear();
	free(a);
	free(b);
	return v;
}

/* Whether generation g's bytes of the dataset equal every recorded page
 * (pc->mu held, n->lk shared: n->ds is g's): PC_VERIFIED, PC_DIFFERS, or
 * PC_UNREADABLE (an engine error, a SWMR writer mid-flush maybe: not a
 * verdict, the read is made again). */
static enum pc_verdict verify(struct pcache *pc, struct node *n)
{
	uint8_t *buf;
	uint64_t size = (uint64_t)n->st.st_size;
	enum pc_verdict v = PC_VERIFIED;
	size_t i = 0;

	if (pc->overflow || !n->ds)
		return PC_DIFFERS;
	buf = malloc(PC_VERIFY_CHUNK);
	if (!buf)
		return PC_UNREADABLE;
	while (v == PC_VERIFIED && i < pc->cap) {
		size_t j = i, run = 0;

		if (!pc->e[i]) {
			i++;
			continue;
		}
		/* a run of recorded pages, whole but for its last, read at once */
		while (j < pc->cap && pc->e[j] && run + PC_PAGE <= PC_VERIFY_CHUNK) {
			run += pcache_entry_len(pc->e[j]);
			if (pcache_entry_len(pc->e[j++]) < PC_PAGE)
				break;
		}
		if ((uint64_t)i * PC_PAGE + run > size) {
			v = PC_DIFFERS;         /* shorter now */
			break;
		}
		if (n->view->read(n->ds, buf, (uint64_t)i * PC_PAGE, run) < 0) {
			v = PC_UNREADABLE;
			break;
		}
		for (size_t k = i; k < j; k++)
			if (pcache_entry(buf + (k - i) * PC_PAGE, pcache_entry_len(pc->e[k])) != pc->e[k]) {
				v = PC_DIFFERS;
				break;
			}
		i = j;
	}
	h5_err_clear();
	free(buf);
	return v;
}

/* Hash the answer page by page; a page straddling pieces of the iovec
 * (decoded chunks) is gathered first. */
void pcache_hash_answer(uint64_t *h, const struct iovec *iov, size_t niov, size_t len)
{
	uint8_t page[PC_PAGE];
	size_t v = 0, at = 0;   /* position: iov[v], at bytes in */

	for (size_t i = 0; i * PC_PAGE < len; i++) {
		size_t l = len - i * PC_PAGE < PC_PAGE ? len - i * PC_PAGE : PC_PAGE, got = 0;

		while (v < niov && at == iov[v].iov_len) {
			v++;
			at = 0;
		}
		if (v < niov && iov[v].iov_len - at >= l) {
			h[i] = pcache_entry((const uint8_t *)iov[v].iov_base + at, l);
			at += l;
			continue;
		}
		while (got < l && v < niov) {
			size_t k = iov[v].iov_len - at < l - got ? iov[v].iov_len - at : l - got;

			memcpy(page + got, (const uint8_t *)iov[v].iov_base + at, k);
			got += k;
			at += k;
			if (at == iov[v].iov_len) {
				v++;
				at = 0;
			}
		}
		h[i] = pcache_entry(page, got);
	}
}

int pcache_prepare(struct pc_answer *pa, h5fs *fs, struct node *n, struct gen *g, uint64_t off,
		   const struct iovec *iov, size_t niov)
{
	struct pcache *pc = pcache_of(n);
	struct pc_old old = { 0 };
	bool log = false;
	size_t len = 0;

	memset(pa, 0, sizeof(*pa));
	if (!pc)
		return ENOMEM;
	for (size_t i = 0; i < niov; i++)
		len += iov[i].iov_len;
	pa->gen = g ? g->num : 0;
	pa->first = off / PC_PAGE;
	pa->aligned = off % PC_PAGE == 0;
	pa->npages = (len + PC_PAGE - 1) / PC_PAGE;
	if (pa->aligned && pa->npages) {
		pa->h = malloc(pa->npages * sizeof(*pa->h));
		if (!pa->h)
			return ENOMEM;
		pcache_hash_answer(pa->h, iov, niov, len);
	}
	pthread_mutex_lock(&pc->mu);
	if (pc->old.ds && !pc->poisoned) {
		enum pc_verdict v = verify_old(pc, n);

		if (v == PC_UNREADABLE) {
			pa->verdict = v;        /* made again */
			pthread_mutex_unlock(&pc->mu);
			return 0;
		}
		old = pc->old;
		memset(&pc->old, 0, sizeof(pc->old));
		if (v == PC_DIFFERS) {
			pc->poisoned = log = true;
			pa->verdict = PC_DIFFERS;
		}
	}
	pa->base = pc->gen;
	pa->adds = pc->adds;
	if (pc->poisoned)
		pa->verdict = PC_DIFFERS;
	else if (pc->gen && pc->gen != pa->gen)
		pa->verdict = verify(pc, n);
	pthread_mutex_unlock(&pc->mu);
	old_release(&old);
	if (log)
		h5fs_log(fs, LOG_ERR, "read %s: FILE changed under bytes read before its first change by "
			 "descriptors still open: EIO on those descriptors (open it again)", show_path(n->path));
	return 0;
}

int pcache_commit(h5fs *fs, struct node *n, struct pc_answer *pa, const char *path)
{
	struct pcache *pc = __atomic_load_n(&n->pc, __ATOMIC_ACQUIRE);   /* made by pcache_prepare */
	bool log = false;
	int e = 0;

	pthread_mutex_lock(&pc->mu);
	if (pc->poisoned) {
		e = EIO;
	} else if (pa->verdict == PC_UNREADABLE) {
		e = EAGAIN;
	} else if (pc->gen != pa->base || (pa->verdict != PC_SAME && pc->adds != pa->adds)) {
		/* recorded or moved on meanwhile: what we verified is not all */
		e = pc->gen == pa->gen && pa->verdict == PC_SAME ? 0 : EAGAIN;
	} else if (pa->verdict == PC_DIFFERS) {
		pc->poisoned = log = true;
		e = EIO;
	}
	if (!e) {
		pc->gen = pa->gen;
		if (!pa->npages) {
			/* nothing answered: nothing the kernel holds */
		} else if (!pa->aligned || pa->first + pa->npages > PC_MAX_PAGES) {
			pc->overflow = true;
		} else {
			if (pa->first + pa->npages > pc->cap) {
				size_t cap = pc->cap ? pc->cap : 256;
				uint64_t *ne;

				while (cap < pa->first + pa->npages)
					cap *= 2;
				ne = realloc(pc->e, cap * sizeof(*ne));
				if (!ne) {
					pc->overflow = true;
					goto out;
				}
				memset(ne + pc->cap, 0, (cap - pc->cap) * sizeof(*ne));
				pc->e = ne;
				pc->cap = cap;
			}
			memcpy(pc->e + pa->first, pa->h, pa->npages * sizeof(*pa->h));
			pc->adds++;
		}
	}
out:
	pthread_mutex_unlock(&pc->mu);
	if (log)
		h5fs_log(fs, LOG_ERR, "read %s: FILE changed under pages the kernel caches for descriptors opened "
			 "before the change: EIO on those descriptors (open it again)", show_path(path));
	return e;
}

void pcache_answer_clear(struct pc_answer *pa)
{
	free(pa->h);
	memset(pa, 0, sizeof(*pa));
}
