/* file.c - opening FILE in an engine context, bounded positional I/O. */
#include "source.h"
#include "base.h"
#include "checksum.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"
#include "superblock.h"
#include "related.h"
#include "h5core_test.h"

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

static void stamp_from(h5_file_stamp *s, const struct stat *st);

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
	f->wrote = true;        /* (one writer at a time) */
	rc = f->src->ops->write(f->src, abs, buf, len);
	if (rc < 0)
		return rc;
	/* release: a reader that sees the new eof finds the bytes written */
	if (end > f->eof)
		__atomic_store_n(&f->eof, end, __ATOMIC_RELEASE);
	return 0;
}

int h5_file_sync(h5_file *f)
{
	return f->src->ops->sync ? f->src->ops->sync(f->src) : 0;
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

int h5_file_truncate(h5_file *f, uint64_t size)
{
	if (!f->src->ops->truncate)
		return h5_err_set(H5_ERR_ROFS, "file is not open for writing");
	if (f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE))
		return h5_err_set(H5_ERR_BUSY, "%s: truncated without its lock", f->path);
	f->wrote = true;
	return f->src->ops->truncate(f->src, size);
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
	rc = h5_file_size(f, &size);
	if (rc < 0)
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
			f->wrote = false;
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

	if (!f->has_stamp || fstat(h5_file_fd(f), &st) != 0)
		return;
	stamp_from(&f->stamp, &st);
	if (front_read(f, &b, &n) == 0) {
		free(f->front);
		f->front = b;
		f->front_len = n;
	}
}

int h5_file_changed_by_others(h5_file *f)
{
	h5_file_stamp now;
	struct stat st;
	uint8_t *b = NULL;
	size_t n = 0;
	int rc = 0;

	if (!f->has_stamp)
		return 0;
	if (fstat(h5_file_fd(f), &st) != 0)
		return h5_err_set(H5_ERR_IO, "%s: fstat: %s", f->path, strerror(errno));
	stamp_from(&now, &st);
	if (now.size != f->stamp.size || now.dev != f->stamp.dev || now.ino != f->stamp.ino)
		return 1;
	if (now.mtime_ns == f->stamp.mtime_ns && now.ctime_ns == f->stamp.ctime_ns)
		return 0;
	pthread_mutex_lock(&f->write_lock);
	if (!f->front) {
		rc = 1;         /* nothing to compare with: a change */
	} else {
		rc = front_read(f, &b, &n);
		if (rc == 0)
			rc = n != f->front_len || memcmp(b, f->front, n) != 0;
		if (rc == 0)
			f->stamp = now;
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
		if (f->wrote)
			restamp(f);
		__atomic_store_n(&f->locked, false, __ATOMIC_RELEASE);
		f->src->ops->lock(f->src, 0);
		f->wrote = false;
	}
	pthread_mutex_unlock(&f->write_lock);
}

/* The memory limit of our cgroup (v2 "memory.max"), or 0 when there is
 * none we can read: in a container it is far below the host's RAM. */
static uint64_t cgroup_mem_limit(void)
{
	char line[64];
	unsigned long long v;
	char *end;
	FILE *fp = fopen("/sys/fs/cgroup/memory.max", "re");

	if (!fp)
		return 0;
	if (!fgets(line, sizeof(line), fp)) {
		fclose(fp);
		return 0;
	}
	fclose(fp);
	errno = 0;
	v = strtoull(line, &end, 10);   /* "max" parses as nothing: no limit */
	if (errno || end == line)
		return 0;
	return (uint64_t)v;
}

size_t h5_default_cache_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t mem, lim, b;

	if (pages <= 0 || psz <= 0)
		return H5_DEFAULT_CACHE_BYTES;
	mem = (uint64_t)pages * (uint64_t)psz;
	lim = cgroup_mem_limit();
	if (lim && lim < mem)
		mem = lim;
	/* Decoded chunks are what makes random reads of compressed data fast
	 * (each miss decodes a whole chunk); a sixteenth of the memory is
	 * generous for that and still small next to the page cache. */
	b = mem / 16;
	if (b < H5_DEFAULT_CACHE_BYTES)
		b = H5_DEFAULT_CACHE_BYTES;
	if (b > H5_DEFAULT_CACHE_MAX_BYTES)
		b = H5_DEFAULT_CACHE_MAX_BYTES;
	return (size_t)b;
}

static int file_init_common(h5_file *f, const h5_open_opts *opts)
{
	int rc;

	pthread_mutex_init(&f->write_lock, NULL);
	f->root_addr = H5_ADDR_UNDEF;
	f->ext_addr = H5_ADDR_UNDEF;
	f->sohm_addr = H5_ADDR_UNDEF;
	f->sym_leaf_k = 4;
	f->btree_k = 16;
	f->chunk_btree_k = 32;
	f->efl_any = opts && opts->efl_any;
	f->ext_any = opts && opts->ext_any;
	f->related_idle = opts ? opts->related_idle : 0;
	f->fd_gate = opts ? opts->fd_gate : NULL;
	f->fd_gate_ud = opts ? opts->fd_gate_ud : NULL;
	if (opts && opts->ext_root && !(f->ext_root = strdup(opts->ext_root)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (opts && opts->ext_prefix && !(f->ext_prefix = strdup(opts->ext_prefix)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* The context's cache, threads and buffer budget (ctx.c); a file
	 * opened without one has a private context as large as a file's
	 * resources were before contexts. */
	if (opts && opts->ctx) {
		f->ctx = opts->ctx;
		h5_ctx_ref(f->ctx);
	} else {
		h5_ctx_opts co = { .cache_bytes = opts ? opts->cache_bytes : 0, .nthreads = opts ? opts->nthreads : 0 };

		rc = h5_ctx_new(&f->ctx, &co);
		if (rc < 0)
			return rc;
	}
	f->nthreads = f->ctx->nthreads;
	f->pool = f->ctx->pool;
	/* One LRU and one budget for metadata and decoded chunks (f->chunks
	 * is f->meta): a fixed share for metadata sat unused on files with
	 * few objects while chunks were evicted, and metadata in use keeps
	 * being released last, so it stays while chunks stream through.
	 * Keys never collide: the kinds differ, and a view's keys carry its
	 * file's tag, so files of one context never share an entry. */
	rc = h5_cache_new_view(&f->meta, f->ctx->cache);
	if (rc < 0)
		return rc;
	f->chunks = f->meta;
	return h5_superblock_read(f);
}

static void stamp_from(h5_file_stamp *s, const struct stat *st)
{
	s->dev = (uint64_t)st->st_dev;
	s->ino = (uint64_t)st->st_ino;
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	s->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int h5_file_stamp_get(h5_file_stamp *out, const h5_file *f)
{
	if (!f->has_stamp)
		return 0;
	*out = f->stamp;
	return 1;
}

int h5_file_changed(h5_file *f, const char *path)
{
	h5_file_stamp now;
	struct stat st;
	int m = 0;

	if (!f->has_stamp)
		return f->src->ops->changed && f->src->ops->changed(f->src, 0) == 1 ? H5_CHANGED_BYTES : 0;
	/* the descriptor: the bytes we read, whatever the path names now */
	if (fstat(h5_file_fd(f), &st) == 0) {
		stamp_from(&now, &st);
		/* ctime moves on unlink too: a deleted file keeps its bytes */
		if (now.size != f->stamp.size || now.mtime_ns != f->stamp.mtime_ns ||
		    (now.ctime_ns != f->stamp.ctime_ns && st.st_nlink > 0))
			m |= H5_CHANGED_BYTES;
	} else {
		m |= H5_CHANGED_BYTES;
	}
	/* the path: an fstab line names a path, so a file renamed over it is
	 * the one to show (the ctime of a rename moves only the new file's) */
	if (path) {
		if (stat(path, &st) != 0)
			m |= H5_CHANGED_GONE;
		else if ((uint64_t)st.st_dev != f->stamp.dev || (uint64_t)st.st_ino != f->stamp.ino)
			m |= H5_CHANGED_PATH;
	}
	return m | h5_related_changed(f);
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

/* local: FILE is a file here, whose directory related files are found
 * from; asked before any wrapper (a trace source has no descriptor). */
static int file_open_source(h5_file **out, h5_source *src, const char *name, bool local,
			    const h5_open_opts *opts)
{
	h5_file *f;
	int rc;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		h5_source_close(src);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	f->src = src;
	f->writable = src->writable;
	f->lazy_lock = src->writable && opts && opts->lazy_lock;
	f->eof = src->size;
	f->file_mtime = src->mtime;
	f->path = strdup(name);
	if (!f->path) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* the daemon changes directory after opening FILE: related files
	 * (related.c) are found from where a local FILE really is */
	if (local) {
		struct stat st;

		f->real_path = realpath(name, NULL);
		if (fstat(src->ops->fd(src), &st) == 0) {
			stamp_from(&f->stamp, &st);
			f->has_stamp = true;
		}
	}
	rc = file_init_common(f, opts);
	if (rc == 0 && f->lazy_lock && f->has_stamp)
		rc = front_read(f, &f->front, &f->front_len);
out:
	if (rc < 0) {
		h5_file_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

int h5_file_open_source(h5_file **out, h5_source *src, const char *name, const h5_open_opts *opts)
{
	return file_open_source(out, src, name, src->ops->fd(src) >= 0, opts);
}

/* A remote FILE keeps what opened it: the files beside it (external
 * links, virtual dataset sources) are found by its class and opened the
 * same way (related.c). */
static int remember_remote(h5_file *f, const char *path, const h5_source_opts *so)
{
	struct h5_remote_opts *r = &f->remote;
	size_t n = 0;

	r->cls = h5_source_class_of(path);
	r->cache_bytes = so->cache_bytes;
	while (so->params && so->params[n])
		n++;
	if (n == 0)
		return 0;
	r->params = calloc(n + 1, sizeof(*r->params));
	if (!r->params)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!(r->params[i] = strdup(so->params[i])))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
	return 0;
}

int h5_file_open(h5_file **out, const char *path, const h5_open_opts *opts)
{
	return h5_file_open_hooked(out, path, opts, NULL);
}

int h5_file_open_hooked(h5_file **out, const char *path, const h5_open_opts *opts, const h5_test_hooks *hooks)
{
	h5_source_opts so = { 0 };
	h5_source *src = NULL;
	bool local;
	int rc;

	*out = NULL;
	if (opts) {
		so.writable = opts->writable;
		so.lazy_lock = opts->lazy_lock;
		so.params = opts->source_params;
		so.cache_bytes = opts->cache_bytes;
	}
	rc = h5_source_open(&src, path, &so);
	if (rc < 0)
		return rc;
	local = src->ops->fd(src) >= 0;
	if (hooks && (hooks->io_trace || hooks->io_fail_at)) {
		h5_trace_opts to = { hooks->io_trace, hooks->io_fail_at, 0 };

		rc = h5_source_trace(&src, src, &to);
		if (rc < 0)
			return rc;
	}
	rc = file_open_source(out, src, path, local, opts);
	if (rc == 0 && !local && (rc = remember_remote(*out, path, &so)) < 0) {
		h5_file_close(*out);
		*out = NULL;
	}
	return rc;
}

int h5_file_open_mem(h5_file **out, const void *buf, size_t len, const h5_open_opts *opts)
{
	h5_source *src = NULL;
	int rc;

	*out = NULL;
	rc = h5_source_open_mem(&src, buf, len);
	if (rc < 0)
		return rc;
	return h5_file_open_source(out, src, "<memory>", opts);
}

void h5_file_close(h5_file *f)
{
	if (!f)
		return;
	h5_related_free(f);             /* files opened from this one */
	if (f->chunks && f->chunks != f->meta)
		h5_cache_free(f->chunks);
	if (f->meta)
		h5_cache_free(f->meta);  /* a view: drops f's entries */
	h5_ctx_free(f->ctx);            /* f's reference */
	h5_source_close(f->src);        /* also drops a local file's flock */
	pthread_mutex_destroy(&f->write_lock);
	free(f->ext_prefix);
	free(f->ext_root);
	for (size_t i = 0; f->remote.params && f->remote.params[i]; i++)
		free(f->remote.params[i]);
	free(f->remote.params);
	free(f->real_path);
	free(f->front);
	free(f->path);
	free(f);
}

uint64_t h5_file_root(const h5_file *f) { return f->root_addr; }
int h5_file_sb_version(const h5_file *f) { return f->sb_version; }
uint64_t h5_file_userblock(const h5_file *f) { return f->base; }
int64_t h5_file_mtime(const h5_file *f) { return f->file_mtime; }
const char *h5_file_path(const h5_file *f) { return f->path; }
int h5_file_fd(const h5_file *f) { return f->src->ops->fd(f->src); }
