/* open.c - opening FILE in an engine context as an HDF5 file (its
 * superblock read, its context's cache view taken), closing it with the
 * files reached from it (related.c), and what changed of them all. The
 * bytes under it are io/file.c's. */
#include "source.h"
#include "base.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"
#include "superblock.h"
#include "related.h"
#include "h5core_test.h"
#include "beneath.h"
#include "ordered.h"
#include "source_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int file_init_common(h5_file *f, const h5_open_opts *opts)
{
	int rc;

	pthread_mutex_init(&f->write_lock, NULL);
	pthread_mutex_init(&f->fill_lock, NULL);
	pthread_mutex_init(&f->stamp_mu, NULL);
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
	f->dir_fd = opts && opts->dir_fd ? *opts->dir_fd : -1;
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
	/* an in-place write across a page that a crash may have torn is
	 * written again from its ordered copy first (io/ordered.h) */
	rc = h5_ordered_recover(f);
	if (rc < 0)
		return rc;
	if (rc == 1 && f->has_stamp)
		h5_file_stamp_take(f);  /* FILE as this handle left it */
	return h5_superblock_read(f);
}

int h5_file_changed(h5_file *f, const char *path)
{
	return h5_file_bytes_changed(f, path) | h5_related_changed(f);
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
	h5_file_attr_epoch_init(f);
	f->writable = src->writable;
	f->lazy_lock = src->writable && opts && opts->lazy_lock;
	if (src->writable && opts) {
		f->min_free_bytes = opts->min_free_bytes;
		f->min_free_pct = opts->min_free_pct;
	}
	f->eof = src->size;
	f->file_mtime = src->mtime;
	f->path = strdup(name);
	if (!f->path) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* the daemon changes directory after opening FILE: related files
	 * (related.c) are found from where a local FILE really is */
	f->dir_fd = -1;
	if (local) {
		/* what the descriptor leads to, not what name leads to now
		 * (unless the caller knows: it opened a name reached without
		 * symlinks from a folder whose real path it has) */
		f->real_path = opts && opts->real_path ? strdup(opts->real_path) : h5_fd_real_path(src->ops->fd(src));
		if (!f->real_path)
			f->real_path = realpath(name, NULL);
		h5_file_stamp_take(f);
	}
	rc = file_init_common(f, opts);
	if (rc == 0 && f->dir_fd >= 0 && f->real_path && !f->ext_root &&
	    !(f->dir_name = strdup(opts && opts->dir_name ? opts->dir_name : strrchr(f->real_path, '/') + 1)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_file_front_take(f);
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

int h5_file_open_fd(h5_file **out, int fd, const char *name, const h5_open_opts *opts)
{
	h5_source_opts so = { 0 };
	h5_source *src = NULL;
	int rc;

	*out = NULL;
	if (opts) {
		so.writable = opts->writable;
		so.lazy_lock = opts->lazy_lock;
		so.meta_blocks = opts->meta_blocks;
	}
	rc = h5_source_local_adopt(&src, fd, name, &so);
	if (rc < 0)
		return rc;
	return file_open_source(out, src, name, true, opts);
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
		so.meta_blocks = opts->meta_blocks;
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
	pthread_mutex_destroy(&f->fill_lock);
	pthread_mutex_destroy(&f->stamp_mu);
	h5_file_readers_drop(f);
	if (f->ws_free)
		f->ws_free(f->ws);      /* the write side's (write/file_ws.h) */
	free(f->ext_prefix);
	free(f->ext_root);
	for (size_t i = 0; f->remote.params && f->remote.params[i]; i++)
		free(f->remote.params[i]);
	free(f->remote.params);
	free(f->real_path);
	free(f->dir_name);
	free(f->front);
	free(f->path);
	free(f);
}
