/* file.c - FILE as bytes: bounded positional I/O through its byte source,
 * metadata blocks loaded through its cache view, and its stamp (what
 * changed). Opening and closing an HDF5 file is file/open.c's. */
#include "source.h"
#include "base.h"
#include "checksum.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

bool h5_file_range_ok(const h5_file *f, uint64_t addr, uint64_t len)
{
	uint64_t end;

	if (!h5_addr_defined(addr) || h5_add_overflow(addr, len, &end))
		return false;
	return end <= h5_file_eof(f);
}

int h5_file_read(h5_file *f, uint64_t addr, void *buf, size_t len)
{
	uint64_t abs;

	if (!h5_file_range_ok(f, addr, len))
		return h5_err_set(H5_ERR_FORMAT, "address range 0x%llx+%zu is outside the file (%llu bytes)",
				  (unsigned long long)addr, len, (unsigned long long)h5_file_eof(f));
	abs = f->base + addr;
	return f->src->ops->read(f->src, abs, buf, len);
}

void h5_window_clear(h5_window *w)
{
	free(w->buf);
	free(w->spare);         /* (a dataset's memory, nothing it held) */
	memset(w, 0, sizeof(*w));
}

int h5_file_read_window(h5_window *w, h5_file *f, uint64_t addr, void *buf, size_t len)
{
	uint64_t eof = h5_file_eof(f);
	size_t wlen;

	if (!w || h5_file_fd(f) < 0 || len > H5_WINDOW_LEN)
		return h5_file_read(f, addr, buf, len);
	if (w->f != f || addr < w->addr || addr - w->addr > w->len || len > w->len - (addr - w->addr)) {
		/* moved to addr (a read that fails there, as near a file's end
		 * not written yet, is left to the plain read: its error is the
		 * caller's to see) */
		if (addr >= eof)
			return h5_file_read(f, addr, buf, len);
		wlen = eof - addr < H5_WINDOW_LEN ? (size_t)(eof - addr) : H5_WINDOW_LEN;
		w->f = NULL;
		if (wlen < len || (!w->buf && !(w->buf = malloc(H5_WINDOW_LEN))) ||
		    h5_file_read(f, addr, w->buf, wlen) < 0) {
			h5_err_clear();
			return h5_file_read(f, addr, buf, len);
		}
		w->f = f;
		w->addr = addr;
		w->len = wlen;
	}
	memcpy(buf, w->buf + (addr - w->addr), len);
	return 0;
}

void h5_file_prefetch(h5_file *f, const uint64_t *addr, size_t n)
{
	uint64_t abs[H5_PREFETCH_MAX];
	size_t k = 0;

	if (!f->src->ops->prefetch)
		return;
	for (size_t i = 0; i < n && k < H5_PREFETCH_MAX; i++)
		if (h5_file_range_ok(f, addr[i], 1))
			abs[k++] = f->base + addr[i];
	if (k)
		f->src->ops->prefetch(f->src, abs, k);
}

void h5_file_extent_hint(h5_file *f, uint64_t addr, uint64_t end)
{
	if (f->src->ops->extent_hint && end > addr && h5_file_range_ok(f, addr, end - addr))
		f->src->ops->extent_hint(f->src, f->base + addr, f->base + end);
}

void h5_file_ranges_hint(h5_file *f, const h5_range *r, size_t n, bool restart)
{
	h5_range abs[H5_PREFETCH_MAX];
	size_t k = 0;

	if (!f->src->ops->ranges_hint)
		return;
	for (size_t i = 0; i < n && k < H5_PREFETCH_MAX; i++)
		if (r[i].len && h5_file_range_ok(f, r[i].off, r[i].len)) {
			abs[k].off = f->base + r[i].off;
			abs[k++].len = r[i].len;
		}
	if (k || restart)
		f->src->ops->ranges_hint(f->src, abs, k, restart);
}

static int read_into_new(uint8_t **out, h5_file *f, uint64_t addr, size_t len, void *(*alloc)(size_t))
{
	uint8_t *buf;
	int rc;

	*out = NULL;
	if (!h5_file_range_ok(f, addr, len))
		return h5_err_set(H5_ERR_FORMAT, "address range 0x%llx+%zu is outside the file (%llu bytes)",
				  (unsigned long long)addr, len, (unsigned long long)h5_file_eof(f));
	buf = alloc(len ? len : 1);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory reading %zu bytes", len);
	rc = h5_file_read(f, addr, buf, len);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

static void *plain_malloc(size_t n)
{
	return malloc(n);
}

int h5_file_read_alloc(uint8_t **out, h5_file *f, uint64_t addr, size_t len)
{
	return read_into_new(out, f, addr, len, plain_malloc);
}

int h5_file_read_buf(uint8_t **out, h5_file *f, uint64_t addr, size_t len)
{
	return read_into_new(out, f, addr, len, h5_buf_alloc);
}

int h5_block_check(const uint8_t *buf, size_t len, uint64_t size, const char *sig, unsigned version,
		   uint64_t addr)
{
	if (size == 0 || size > len)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: truncated (%zu of %llu bytes)", sig,
				  (unsigned long long)addr, len, (unsigned long long)size);
	if (memcmp(buf, sig, 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: bad signature", sig, (unsigned long long)addr);
	if (buf[4] != version)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: unsupported version %u", sig,
				  (unsigned long long)addr, buf[4]);
	return h5_checksum_verify(buf, (size_t)size, sig, addr);
}

/* Shared by all block loaders (see file.h): the decoders copy what they
 * keep, so the image never outlives this call, and a struct allocated here
 * for decode() to fill is freed here when decoding fails. */
int h5_file_load_block(void **obj, size_t *cost, void *ud)
{
	const h5_block_load *b = ud;
	uint8_t *buf = NULL;
	void *o = NULL;
	int rc;

	*obj = NULL;
	if (b->size == 0 || b->size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: size overflows", b->what, (unsigned long long)b->addr);
	if (b->obj_size) {
		o = malloc(b->obj_size);
		if (!o)
			return h5_err_set(H5_ERR_NOMEM, "out of memory loading %s", b->what);
	}
	rc = h5_file_read_alloc(&buf, b->f, b->addr, (size_t)b->size);
	if (rc >= 0) {
		*obj = o;
		*cost = b->obj_size;
		rc = b->decode(obj, cost, buf, (size_t)b->size, b);
	}
	free(buf);
	if (rc < 0) {
		free(o);
		*obj = NULL;
	}
	return rc;
}

int h5_pinned_open(h5_pinned **out, size_t size, const char *what, uint32_t kind, h5_cache_load_fn load,
		   h5_cache_free_fn free_fn, h5_block_load *b)
{
	h5_pinned *p;
	int rc;

	*out = NULL;
	if (!h5_addr_defined(b->addr))
		return h5_err_set(H5_ERR_INVAL, "%s: undefined header address", what);
	p = calloc(1, size);
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening %s", what);
	p->f = b->f;
	rc = h5_cache_get(&p->ref, b->f->meta, kind, b->addr, load, free_fn, b);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void h5_pinned_close(h5_pinned *p)
{
	if (!p)
		return;
	h5_cache_release(p->f->meta, &p->ref);
	free(p);
}

int h5_file_writable(const h5_file *f)
{
	return f->writable && f->src->ops->write != NULL;
}

/* one counter for every file of the process: a number is never two
 * files' (h5core.h h5_file_attr_epoch) */
static uint64_t attr_epochs;

void h5_file_attr_epoch_init(h5_file *f)
{
	__atomic_store_n(&f->attr_epoch, __atomic_add_fetch(&attr_epochs, 1, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
}

uint64_t h5_file_attr_epoch(const h5_file *f)
{
	return __atomic_load_n(&f->attr_epoch, __ATOMIC_ACQUIRE);
}

void h5_file_attr_moved(h5_file *f)
{
	h5_file_attr_epoch_init(f);
}

void h5_file_links_moved(h5_file *f, uint64_t group)
{
	if (group == f->root_addr)
		h5_file_attr_epoch_init(f);
}

int h5_file_write(h5_file *f, uint64_t addr, const void *buf, size_t len)
{
	uint64_t abs, end;
	int rc;

	if (!f->writable || !f->src->ops->write)
		return h5_err_set(H5_ERR_ROFS, "file is not open for writing");
	if (!h5_addr_defined(addr) || h5_add_overflow(addr, len, &end) || h5_add_overflow(f->base, end, &abs))
		return h5_err_set(H5_ERR_INVAL, "write address out of range");
	/* a caller that writes outside h5_file_lock/unlock is a bug that
	 * would let two programs write FILE at once: refused */
	if (f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE))
		return h5_err_set(H5_ERR_BUSY, "%s: written without its lock", f->path);
	abs = f->base + addr;
	/* the host's margin, for a write no reserve or fill covered
	 * (file_space.c): nothing written when it would pass it */
	rc = h5_file_backed(f, abs, len);
	if (rc < 0)
		return rc;
	__atomic_store_n(&f->wrote, true, __ATOMIC_RELAXED); /* (also a write in place, without write_lock) */
	rc = f->src->ops->write(f->src, abs, buf, len);
	if (rc < 0)
		return rc;
	/* release: a reader that sees the new eof finds the bytes written;
	 * raised only (a write in place runs beside a commit) */
	for (uint64_t was = __atomic_load_n(&f->eof, __ATOMIC_RELAXED);
	     end > was && !__atomic_compare_exchange_n(&f->eof, &was, end, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED);)
		;
	return 0;
}

/* Each fsync takes a ticket when it begins; the highest ticket completed
 * says every write issued before that one began is on disk (space.c
 * reuses freed space only then). Which fsyncs a commit needs, and which
 * it skips, is write/txn.c's: the only caller. */
int h5_file_sync(h5_file *f)
{
	uint64_t t, was;
	int rc;

	t = __atomic_add_fetch(&f->sync_started, 1, __ATOMIC_SEQ_CST);
	rc = f->src->ops->sync ? f->src->ops->sync(f->src) : 0;

	was = __atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE);
	while (rc == 0 && was < t &&
	       !__atomic_compare_exchange_n(&f->sync_done, &was, t, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	return rc;
}

int h5_file_sync_since(h5_file *f, uint64_t want)
{
	if (__atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE) >= want)
		return 0;       /* an fsync that began after those writes completed */
	return h5_file_sync(f);
}

void h5_file_sync_hint(h5_file *f, uint64_t addr, uint64_t len)
{
	if (f->src->ops->sync_hint)
		f->src->ops->sync_hint(f->src, f->base + addr, len);
}

int h5_file_size(h5_file *f, uint64_t *out)
{
	return f->src->ops->size(f->src, out);
}

static void stamp_from(h5_file_stamp *s, const struct stat *st)
{
	s->dev = (uint64_t)st->st_dev;
	s->ino = (uint64_t)st->st_ino;
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	s->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* f's stamp (a copy: our commits take it again meanwhile), and set. */
static h5_file_stamp stamp_copy(h5_file *f)
{
	h5_file_stamp s;

	pthread_mutex_lock(&f->stamp_mu);
	s = f->stamp;
	pthread_mutex_unlock(&f->stamp_mu);
	return s;
}

static void stamp_set(h5_file *f, const h5_file_stamp *s)
{
	pthread_mutex_lock(&f->stamp_mu);
	f->stamp = *s;
	pthread_mutex_unlock(&f->stamp_mu);
}

int h5_file_stamp_get(h5_file_stamp *out, const h5_file *f)
{
	if (!f->has_stamp)
		return 0;
	*out = stamp_copy((h5_file *)f);
	return 1;
}

/* A local file as opened: the stamp h5_file_bytes_changed() compares with
 * (the source's fstat of its open: no second one). */
void h5_file_stamp_take(h5_file *f)
{
	struct stat st;

	if (f->src->has_stat) {
		h5_file_stamp s = { f->src->dev, f->src->ino, f->src->size, f->src->mtime_ns, f->src->ctime_ns };

		stamp_set(f, &s);
		f->has_stamp = true;
	} else if (fstat(h5_file_fd(f), &st) == 0) {
		h5_file_stamp s;

		stamp_from(&s, &st);
		stamp_set(f, &s);
		f->has_stamp = true;
	}
}

int h5_file_bytes_changed(h5_file *f, const char *path)
{
	h5_file_stamp now, was;
	struct stat st;
	int m = 0;

	if (!f->has_stamp)
		return f->src->ops->changed && f->src->ops->changed(f->src, 0) == 1 ? H5_CHANGED_BYTES : 0;
	was = stamp_copy(f);
	/* the descriptor: the bytes we read, whatever the path names now */
	if (fstat(h5_file_fd(f), &st) == 0) {
		stamp_from(&now, &st);
		/* ctime moves on unlink too: a deleted file keeps its bytes */
		if (now.size != was.size || now.mtime_ns != was.mtime_ns ||
		    (now.ctime_ns != was.ctime_ns && st.st_nlink > 0))
			m |= H5_CHANGED_BYTES;
	} else {
		m |= H5_CHANGED_BYTES;
	}
	/* the path: an fstab line names a path, so a file renamed over it is
	 * the one to show (the ctime of a rename moves only the new file's) */
	if (path && f->dir_fd >= 0 && f->dir_name) {
		/* the name in the folder taken at mount: a symlink put there is
		 * itself the change (never followed, live.c opens no symlink) */
		if (fstatat(f->dir_fd, f->dir_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			m |= H5_CHANGED_GONE;
		else if ((uint64_t)st.st_dev != was.dev || (uint64_t)st.st_ino != was.ino)
			m |= H5_CHANGED_PATH;
	} else if (path) {
		if (stat(path, &st) != 0)
			m |= H5_CHANGED_GONE;
		else if ((uint64_t)st.st_dev != was.dev || (uint64_t)st.st_ino != was.ino)
			m |= H5_CHANGED_PATH;
	}
	return m;
}

int h5_file_probe(h5_file *f)
{
	if (f->has_stamp || !f->src->ops->changed)
		return 0;
	return f->src->ops->changed(f->src, 1) == 1 ? H5_CHANGED_BYTES : 0;
}

int h5_file_watchable(const h5_file *f)
{
	return f->has_stamp || f->src->ops->changed != NULL;
}

int h5_file_swmr(const h5_file *f)
{
	return f->sb_version >= 3 && (f->sb_flags & 0x04) != 0;
}

uint64_t h5_file_downloaded(const h5_file *f)
{
	return strcmp(f->src->ops->name, H5_SOURCE_HTTP_COPY) == 0 ? f->src->size : 0;
}

int h5_file_check_truncated(h5_file *f)
{
	uint64_t size, eof, stored;
	char base[48] = "";
	int rc;

	if (h5_file_swmr(f))
		return 0;
	/* asked just after the open: a local file's size then (its stamp)
	 * is its size now, without another fstat */
	if (f->has_stamp)
		size = stamp_copy(f).size;
	else if ((rc = h5_file_size(f, &size)) < 0)
		return rc;
	/* libhdf5: eof counted from the superblock, compared as
	 * eof + sblock->base_addr < stored_eof (the EOF field as stored) */
	eof = size - f->base;
	stored = f->sb_base_field + f->eoa;
	if (eof + f->sb_base_field >= stored)
		return 0;
	if (f->sb_base_field)
		snprintf(base, sizeof(base), ", sblock->base_addr = %llu", (unsigned long long)f->sb_base_field);
	return h5_err_set(H5_ERR_FORMAT, "truncated file: eof = %llu%s, stored_eof = %llu (the file is %llu bytes, "
			  "its superblock says %llu: a copy or download cut short?)", (unsigned long long)eof, base,
			  (unsigned long long)stored, (unsigned long long)size, (unsigned long long)(f->base + f->eoa));
}

int h5_file_lock(h5_file *f)
{
	int rc = 0;

	if (!f->lazy_lock || !f->src->ops->lock)
		return 0;
	pthread_mutex_lock(&f->write_lock);
	if (!f->locked) {
		rc = f->src->ops->lock(f->src, 1);
		if (rc == 0) {
			__atomic_store_n(&f->locked, true, __ATOMIC_RELEASE);
			__atomic_store_n(&f->wrote, false, __ATOMIC_RELAXED);
			f->falloc_hi = 0;       /* another program may have cut FILE */
			pthread_mutex_lock(&f->fill_lock);
			f->data_hi = 0;
			pthread_mutex_unlock(&f->fill_lock);
		}
	}
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* FILE's first bytes now (a malloc'd copy in *out), absolute from 0. */
static int front_read(h5_file *f, uint8_t **out, size_t *len)
{
	uint64_t size;
	size_t n;
	int rc;

	*out = NULL;
	*len = 0;
	rc = h5_file_size(f, &size);
	if (rc < 0)
		return rc;
	n = size < H5_FRONT_BYTES ? (size_t)size : H5_FRONT_BYTES;
	*out = malloc(n ? n : 1);
	if (!*out)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = f->src->ops->read(f->src, 0, *out, n);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		return rc;
	}
	*len = n;
	return 0;
}

/* The stamp and first bytes as FILE is now (under write_lock). */
static void restamp(h5_file *f)
{
	struct stat st;
	uint8_t *b;
	size_t n;

	h5_file_stamp s;

	if (!f->has_stamp || fstat(h5_file_fd(f), &st) != 0)
		return;
	stamp_from(&s, &st);
	stamp_set(f, &s);
	if (front_read(f, &b, &n) == 0) {
		free(f->front);
		f->front = b;
		f->front_len = n;
	}
}

int h5_file_front_take(h5_file *f)
{
	if (!f->lazy_lock || !f->has_stamp)
		return 0;
	return front_read(f, &f->front, &f->front_len);
}

int h5_file_changed_by_others(h5_file *f)
{
	h5_file_stamp now, was;
	struct stat st;
	uint8_t *b = NULL;
	size_t n = 0;
	int rc = 0;

	if (!f->has_stamp)
		return 0;
	if (fstat(h5_file_fd(f), &st) != 0)
		return h5_err_set(H5_ERR_IO, "%s: fstat: %s", f->path, strerror(errno));
	stamp_from(&now, &st);
	was = stamp_copy(f);
	if (now.size != was.size || now.dev != was.dev || now.ino != was.ino)
		return 1;
	if (now.mtime_ns == was.mtime_ns && now.ctime_ns == was.ctime_ns)
		return 0;
	pthread_mutex_lock(&f->write_lock);
	if (!f->front) {
		rc = 1;         /* nothing to compare with: a change */
	} else {
		rc = front_read(f, &b, &n);
		if (rc == 0)
			rc = n != f->front_len || memcmp(b, f->front, n) != 0;
		if (rc == 0)
			stamp_set(f, &now);
	}
	pthread_mutex_unlock(&f->write_lock);
	free(b);
	return rc;
}

void h5_file_unlock(h5_file *f)
{

	if (!f->lazy_lock || !f->src->ops->lock)
		return;
	pthread_mutex_lock(&f->write_lock);
	if (f->locked) {
		/* our own writes are no change of FILE: take its stamp again
		 * while nobody else can write it */
		if (__atomic_load_n(&f->wrote, __ATOMIC_RELAXED))
			restamp(f);
		__atomic_store_n(&f->locked, false, __ATOMIC_RELEASE);
		f->src->ops->lock(f->src, 0);
		__atomic_store_n(&f->wrote, false, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&f->write_lock);
}


uint64_t h5_file_root(const h5_file *f) { return f->root_addr; }
int h5_file_sb_version(const h5_file *f) { return f->sb_version; }
uint64_t h5_file_userblock(const h5_file *f) { return f->base; }
int64_t h5_file_mtime(const h5_file *f) { return f->file_mtime; }
const char *h5_file_path(const h5_file *f) { return f->path; }
const char *h5_file_real_path(const h5_file *f) { return f->real_path; }
int h5_file_is_related(const h5_file *f) { return f->top != NULL; }
int h5_file_fd(const h5_file *f) { return f->src->ops->fd(f->src); }

/* ---- reader sections ----------------------------------------------------------
 * One registry per FILE's lineage of h5_files: a generation opened anew
 * that FILE's space is handed over to (write/space.c
 * h5_file_space_handover) shares it with the one before, so the extents
 * the old one held back for its sections wait for them in the new one
 * too (they were lost at the handover: FILE 204 KB after unmount,
 * test_stress_io). Made at the first section. */
struct h5_readers {
	pthread_mutex_t mu;
	unsigned refs;          /* (under mu) files pointing here */
	uint64_t seq;           /* sections begun */
	uint64_t *active;       /* the seqs of those not ended */
	size_t n, cap;
};

static struct h5_readers *readers(h5_file *f)
{
	struct h5_readers *r = __atomic_load_n(&f->rd, __ATOMIC_ACQUIRE), *exp = NULL;

	if (r)
		return r;
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	r->refs = 1;
	if (__atomic_compare_exchange_n(&f->rd, &exp, r, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return r;
	pthread_mutex_destroy(&r->mu);  /* (another thread's made first) */
	free(r);
	return exp;
}

static void readers_unref(struct h5_readers *r)
{
	unsigned left;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	left = --r->refs;
	pthread_mutex_unlock(&r->mu);
	if (left)
		return;
	pthread_mutex_destroy(&r->mu);
	free(r->active);
	free(r);
}

void h5_file_readers_drop(h5_file *f)
{
	readers_unref(f->rd);
	f->rd = NULL;
}

int h5_file_readers_share(h5_file *to, h5_file *from)
{
	struct h5_readers *r = readers(from), *old;

	if (!r)
		return -1;
	pthread_mutex_lock(&r->mu);
	r->refs++;
	pthread_mutex_unlock(&r->mu);
	old = __atomic_exchange_n(&to->rd, r, __ATOMIC_ACQ_REL);
	readers_unref(old);
	return 0;
}

uint64_t h5_file_read_begin(h5_file *f)
{
	struct h5_readers *r = readers(f);
	uint64_t t;

	if (!r)
		return 0;       /* (not counted: out of memory) */
	pthread_mutex_lock(&r->mu);
	t = ++r->seq;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		uint64_t *v = realloc(r->active, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&r->mu);
			return 0;
		}
		r->active = v;
		r->cap = cap;
	}
	r->active[r->n++] = t;
	pthread_mutex_unlock(&r->mu);
	return t;
}

void h5_file_read_end(h5_file *f, uint64_t t)
{
	struct h5_readers *r = __atomic_load_n(&f->rd, __ATOMIC_ACQUIRE);

	if (!t || !r)
		return;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++)
		if (r->active[i] == t) {
			r->active[i] = r->active[--r->n];
			break;
		}
	pthread_mutex_unlock(&r->mu);
}

uint64_t h5_file_read_oldest(h5_file *f, uint64_t *seq)
{
	struct h5_readers *r = __atomic_load_n(&f->rd, __ATOMIC_ACQUIRE);
	uint64_t old = UINT64_MAX;

	if (seq)
		*seq = 0;
	if (!r)
		return old;     /* (no section ever began) */
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++)
		if (r->active[i] < old)
			old = r->active[i];
	if (seq)
		*seq = r->seq;
	pthread_mutex_unlock(&r->mu);
	return old;
}
