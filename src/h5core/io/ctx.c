/* ctx.c - the engine context: what every file opened in it shares.
 *
 * Why: a file used to bring its own cache (1/16 of the memory), its own
 * prefetch threads and its own setting of the process's buffer-pool
 * budget; a mount of many files (a collection, or the generations of a
 * live FILE) would then hold many budgets and many threads. A context
 * holds one of each: files read through views of its cache (cache.c:
 * keys tagged per file, a file's entries dropped when it closes), their
 * background and parallel decoding runs on its pool (pool.c), and its
 * budget counts once towards the buffer pool's (bufpool.c). */
#include "base.h"
#include "bufpool.h"
#include "cache.h"
#include "ctx.h"
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

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

int h5_ctx_new(h5_ctx **out, const h5_ctx_opts *opts)
{
	h5_ctx *c;
	long ncpu;
	int rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for an engine context");
	c->budget = opts && opts->cache_bytes ? opts->cache_bytes : h5_default_cache_bytes();
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	c->nthreads = opts && opts->nthreads ? opts->nthreads : (ncpu > 0 ? (unsigned)ncpu : 1);
	if (c->nthreads > H5_POOL_MAX + 1)
		c->nthreads = H5_POOL_MAX + 1;
	c->refs = 1;
	rc = h5_cache_new(&c->cache, c->budget);
	if (rc < 0)
		goto out;
	if (!(opts && opts->cache_bytes))
		h5_cache_meta_cap(c->cache, H5_DEFAULT_META_MAX_BYTES);
	/* the reader's own thread decodes too: the workers are the others */
	rc = h5_pool_new(&c->pool, c->nthreads - 1);
	if (rc < 0)
		goto out;
	h5_buf_ctx_budget(c->budget, true);
	*out = c;
out:
	if (rc < 0) {
		h5_cache_free(c->cache);
		free(c);
	}
	return rc;
}

void h5_ctx_ref(h5_ctx *ctx)
{
	__atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
}

/* The last reference: every file of the context is closed, so no job is
 * queued, no worker decodes and no view of the cache is left. */
void h5_ctx_free(h5_ctx *ctx)
{
	if (!ctx || __atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	h5_pool_free(ctx->pool);
	h5_cache_free(ctx->cache);
	h5_buf_ctx_budget(ctx->budget, false);
	free(ctx);
}

size_t h5_ctx_cache_budget(const h5_ctx *ctx)
{
	return ctx->budget;
}

size_t h5_ctx_cache_used(const h5_ctx *ctx)
{
	return h5_cache_used(ctx->cache);
}

unsigned h5_ctx_threads(const h5_ctx *ctx)
{
	return h5_pool_started(ctx->pool);
}
