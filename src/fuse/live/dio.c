/*
 * dio.c - one read() of a direct_io handle of a live mount is one
 * version (issue 24), however large.
 *
 * Descriptors opened once FILE has changed read with direct_io: no page
 * cache, every request answered from the generation current then. But the
 * kernel splits a read() larger than the largest request (max_read, 1 MiB)
 * into requests, and FILE may change between two of them: the read() would
 * return the old version's first MiBs and the new version's rest.
 *
 * What a request tells of its read(): the handle, the offset, the size,
 * and the thread that made it (the request's pid is the caller's thread
 * id). The kernel sends the pieces of one read() from the caller's thread,
 * one after another, each at the end of the one before (fs/fuse/file.c,
 * fuse_direct_io); an answer shorter than asked or an error ends the
 * read(); and no read() is longer than MAX_RW_COUNT (INT_MAX rounded down
 * to a page, fs/read_write.c). Where a read() began cannot be known. So
 * per handle and thread we keep the run: the requests answered in full
 * one after another, each at the previous one's end, as 4 KiB pieces
 * hashed with live/pcache.c's fingerprint, at most its last MAX_RW_COUNT
 * bytes. A read() in flight is always within its thread's run; a request
 * elsewhere, or after a short answer, starts a new run (it starts a new
 * read()). A smaller window would not do: a read() may be 2 GiB; a
 * larger one would only cost.
 *
 * Before a request that continues a run is answered from another
 * generation than the run's, the run's bytes are read again in the new
 * generation and compared: equal (appends, a SWMR writer's flush, a racy
 * reopen), the run moves on and every byte answered in it is a byte of the
 * new version too, so the read() is one version, the new one; different (a
 * rewrite, a same-size overwrite), this request gets EIO with a log line
 * and the run ends. The kernel ends the read() there: it returns the bytes
 * answered so far (all of the old version) as a short read, or EIO when
 * there were none. The next read() starts a run in the new version: unlike
 * a cached handle (live/pcache.c), the kernel holds no pages of the old
 * version, so the handle stays usable.
 *
 * Async direct I/O (io_submit on an O_DIRECT descriptor) sends the pieces
 * of one call at once, from one thread; they are not a run and are not
 * covered (see doc/DESIGN.md "Live files").
 *
 * Cost: one hashing pass over what a live mount's direct_io handles are
 * answered; 8 bytes per 4 KiB of a run (at most 4 MiB per thread reading
 * one descriptor); a change that meets a run reads it once again.
 */
#include "live.h"

#define DIO_PIECE 4096u
#define DIO_WINDOW ((uint64_t)0x7ffff000)     /* MAX_RW_COUNT with 4 KiB pages */
#define DIO_VERIFY_CHUNK ((size_t)1 << 20)

struct dio_run {
	pid_t tid;
	uint64_t gen;           /* whose bytes the pieces are */
	uint64_t start, next;   /* the bytes covered: [start, next) */
	uint64_t *e;            /* a ring of pieces (pcache_entry): */
	size_t cap, head, n;    /* e[(head + i) % cap], i < n, from start */
};

struct dio_ledger {
	pthread_mutex_t mu;
	struct dio_run *runs;   /* one per thread that read the handle */
	size_t nruns;
};

struct dio_ledger *dio_new(void)
{
	struct dio_ledger *d = calloc(1, sizeof(*d));

	if (d)
		pthread_mutex_init(&d->mu, NULL);
	return d;
}

void dio_free(struct dio_ledger *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nruns; i++)
		free(d->runs[i].e);
	free(d->runs);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static struct dio_run *run_of(struct dio_ledger *d, pid_t tid)
{
	for (size_t i = 0; i < d->nruns; i++)
		if (d->runs[i].tid == tid)
			return &d->runs[i];
	return NULL;
}

static void run_end(struct dio_ledger *d, struct dio_run *r)
{
	free(r->e);
	*r = d->runs[--d->nruns];
}

/* Whether generation g's bytes (n->ds, n->lk shared) equal the run's. */
static enum pc_verdict verify(const struct dio_run *r, struct node *n)
{
	uint64_t pos = r->start;
	enum pc_verdict v = PC_VERIFIED;
	size_t i = 0;
	uint8_t *buf;

	if (!n->ds)
		return PC_DIFFERS;
	if (r->next > (uint64_t)n->st.st_size)
		return PC_DIFFERS;      /* shorter now */
	buf = malloc(DIO_VERIFY_CHUNK);
	if (!buf)
		return PC_UNREADABLE;
	while (v == PC_VERIFIED && i < r->n) {
		size_t j = i, len = 0, at = 0;

		while (j < r->n && len + DIO_PIECE <= DIO_VERIFY_CHUNK)
			len += pcache_entry_len(r->e[(r->head + j++) % r->cap]);
		if (n->view->read(n->ds, buf, pos, len) < 0) {
			v = PC_UNREADABLE;
			break;
		}
		for (; i < j; i++) {
			uint64_t e = r->e[(r->head + i) % r->cap];

			if (pcache_entry(buf + at, pcache_entry_len(e)) != e) {
				v = PC_DIFFERS;
				break;
			}
			at += pcache_entry_len(e);
		}
		pos += len;
	}
	h5_err_clear();
	free(buf);
	return v;
}

int dio_prepare(struct dio_answer *da, struct dio_ledger *d, struct node *n, struct gen *g, pid_t tid, uint64_t off,
		size_t asked, const struct iovec *iov, size_t niov)
{
	struct dio_run *r;
	size_t len = 0;

	memset(da, 0, sizeof(*da));
	for (size_t i = 0; i < niov; i++)
		len += iov[i].iov_len;
	da->used = true;
	da->gen = g ? g->num : 0;
	da->tid = tid;
	da->off = off;
	da->len = len;
	da->asked = asked;
	da->verdict = PC_SAME;
	/* a short answer ends the read(): nothing after it to protect */
	da->npieces = len < asked ? 0 : (len + DIO_PIECE - 1) / DIO_PIECE;
	if (da->npieces) {
		da->h = malloc(da->npieces * sizeof(*da->h));
		if (!da->h)
			return ENOMEM;
		pcache_hash_answer(da->h, iov, niov, len);
	}
	pthread_mutex_lock(&d->mu);
	r = run_of(d, tid);
	if (r && r->next == off && r->n && r->gen != da->gen && len > 0)
		da->verdict = verify(r, n);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

/* Append the answer's pieces to r, dropping what no read() can reach. */
static int run_add(struct dio_run *r, const struct dio_answer *da)
{
	if (r->n + da->npieces > r->cap) {
		size_t cap = r->cap ? r->cap : 256;
		uint64_t *ne;

		while (cap < r->n + da->npieces)
			cap *= 2;
		ne = malloc(cap * sizeof(*ne));
		if (!ne)
			return ENOMEM;
		for (size_t i = 0; i < r->n; i++)
			ne[i] = r->e[(r->head + i) % r->cap];
		free(r->e);
		r->e = ne;
		r->cap = cap;
		r->head = 0;
	}
	for (size_t i = 0; i < da->npieces; i++)
		r->e[(r->head + r->n++) % r->cap] = da->h[i];
	r->next += da->len;
	while (r->next - r->start > DIO_WINDOW) {
		r->start += pcache_entry_len(r->e[r->head]);
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	return 0;
}

int dio_commit(h5fs *fs, struct dio_ledger *d, struct dio_answer *da, const char *path)
{
	struct dio_run *r;
	int e = 0;

	pthread_mutex_lock(&d->mu);
	r = run_of(d, da->tid);
	if (da->verdict == PC_UNREADABLE) {
		e = EAGAIN;
		goto out;
	}
	if (r && (r->next != da->off || da->verdict == PC_DIFFERS || !da->npieces)) {
		run_end(d, r);          /* another read(), one cut short, or ended */
		r = NULL;
	}
	if (da->verdict == PC_DIFFERS) {
		e = EIO;
		goto out;
	}
	if (!da->npieces)
		goto out;
	if (!r) {
		struct dio_run *nr = realloc(d->runs, (d->nruns + 1) * sizeof(*nr));

		if (!nr) {
			e = ENOMEM;
			goto out;
		}
		d->runs = nr;
		r = &d->runs[d->nruns++];
		memset(r, 0, sizeof(*r));
		r->tid = da->tid;
		r->start = r->next = da->off;
	}
	r->gen = da->gen;
	if (run_add(r, da) != 0) {
		run_end(d, r);
		e = ENOMEM;
	}
out:
	pthread_mutex_unlock(&d->mu);
	if (e == EIO)
		h5fs_log(fs, LOG_ERR, "read %s: FILE changed during a read() larger than one request (direct_io): "
			 "EIO for the rest of that read(), which returns the bytes of the version before",
			 show_path(path));
	return e;
}

void dio_answer_clear(struct dio_answer *da)
{
	free(da->h);
	memset(da, 0, sizeof(*da));
}
