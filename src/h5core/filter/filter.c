/* filter.c - the table of filter classes (filter_*.c, one file per codec)
 * and the I/O filter pipeline (spec IV.A.2.l "Data Storage - Filter
 * Pipeline Message") applied to one chunk.
 *
 * Decoding undoes the pipeline in reverse order and skips filters whose bit
 * is set in the chunk's filter mask.  Every decoder is written against
 * hostile input: sizes come from the stream or from client data (cd) values
 * and are checked before anything is allocated, and no decoder produces more
 * than the chunk can legitimately hold.
 *
 * Optional filters (flags bit 0): "During output, if an optional filter
 * fails it will be silently skipped in the pipeline" (IV.A.2.l), and libhdf5
 * (H5Z_pipeline) then sets the chunk's mask bit and stores the chunk without
 * that filter.  So a filter whose bit is clear WAS applied, and if undoing it
 * fails on read the chunk is corrupt: libhdf5 reports "filter returned failure
 * during read" for optional filters too.  We do the same: a failing decoder
 * is always an error, whatever the optional flag says, and a filter this
 * build lacks is H5_ERR_UNSUPPORTED.  Only the encoder honours the flag.
 *
 * Sizes through the pipeline: `expect` is the size of the decoded chunk.
 * Walking the pipeline in write order we know the exact input size of each
 * filter as long as only size-preserving filters (shuffle) or fletcher32 (+4)
 * come before it; after a compressor only an upper bound is known.  Each
 * decoder gets that (size, exact) pair and must produce exactly / at most
 * that many bytes: more is cut off and reported as a decompression bomb,
 * fewer is a corrupt chunk.
 */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#include <pthread.h>

/* A pipeline message holds at most 32 filters (IV.A.2.l), one mask bit each. */
#define FILTER_MAX_PIPELINE 32

/* Every filter h5fs knows, compiled in or not (a class whose codec library
 * is missing still names the filter in errors and listings). Adding a
 * filter is one file and one line here. */
static const h5_filter_class *const filter_classes[] = {
	&h5_filter_deflate, &h5_filter_shuffle, &h5_filter_fletcher32, &h5_filter_szip,
	&h5_filter_nbit, &h5_filter_scaleoffset, &h5_filter_bzip2, &h5_filter_lzf,
	&h5_filter_blosc, &h5_filter_lz4, &h5_filter_bitshuffle, &h5_filter_zstd,
	&h5_filter_lzo, &h5_filter_zfp,
};

static const h5_filter_class *filter_class(uint16_t id)
{
	for (size_t i = 0; i < sizeof(filter_classes) / sizeof(filter_classes[0]); i++)
		if (filter_classes[i]->id == id)
			return filter_classes[i];
	return NULL;
}

const char *h5_filter_name(uint16_t id)
{
	const h5_filter_class *c = filter_class(id);

	return c ? c->name : "unknown";
}

bool h5_filter_available(uint16_t id)
{
	const h5_filter_class *c = filter_class(id);

	return c && c->decode;
}

bool h5_filter_can_encode(uint16_t id)
{
	const h5_filter_class *c = filter_class(id);

	return c && c->encode;
}

int h5_filter_encode_check(const h5_filter *f)
{
	const h5_filter_class *c = filter_class(f->id);

	if (!c || !c->encode)
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter %s (%u) has no encoder", h5_filter_name(f->id), f->id);
	return c->encode_check ? c->encode_check(f) : 0;
}

static int decode_one(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const h5_filter_class *c = filter_class(f->id);

	if (!c)
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter %u (%s) not supported", f->id,
				  f->name ? f->name : "unnamed");
	if (!c->decode)
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter %s (%u) not compiled in", c->name, f->id);
	return c->decode(buf, len, f, st);
}

/* ---- the fused step ------------------------------------------------------------
 * A compressor undone and then a size-preserving filter (deflate then
 * shuffle, the usual HDF5 pipeline read backwards) run as one step: the
 * compressor decodes into a scratch buffer that is reused at once by the
 * next chunk's decode, so it stays in the CPU's caches instead of being a
 * fresh 1 MiB buffer each time, and the second filter reads it from there
 * in L1-sized windows into the chunk's buffer (issue 44: unshuffling from
 * a fresh buffer into another was a sixth of a compressed read's CPU).
 * The bytes are the same as decoding the two filters one after the other
 * (tests/unit/test_filter.c). */

#define SCRATCH_KEEP 4                          /* idle scratch buffers kept */
#define SCRATCH_MAX ((size_t)16 << 20)          /* larger: not kept */

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint8_t *p;
	size_t cap;
} scratch[SCRATCH_KEEP];
static unsigned nscratch;

/* The most recently used scratch buffer of at least n bytes (the one
 * likeliest still in the caches), or a new one. */
static uint8_t *scratch_get(size_t *cap, size_t n)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&scratch_lock);
	for (unsigned i = nscratch; i-- > 0;)
		if (scratch[i].cap >= n) {
			p = scratch[i].p;
			*cap = scratch[i].cap;
			memmove(&scratch[i], &scratch[i + 1], (nscratch - i - 1) * sizeof(scratch[0]));
			nscratch--;
			break;
		}
	pthread_mutex_unlock(&scratch_lock);
	if (!p) {
		p = h5_buf_alloc(n ? n : 1);
		*cap = n;
	}
	return p;
}

static void scratch_put(uint8_t *p, size_t cap)
{
	uint8_t *drop = p;

	if (!p)
		return;
	pthread_mutex_lock(&scratch_lock);
	if (cap <= SCRATCH_MAX) {
		if (nscratch == SCRATCH_KEEP) {
			/* the oldest goes: the coldest */
			drop = scratch[0].p;
			memmove(&scratch[0], &scratch[1], (SCRATCH_KEEP - 1) * sizeof(scratch[0]));
			nscratch--;
		} else {
			drop = NULL;
		}
		scratch[nscratch].p = p;
		scratch[nscratch++].cap = cap;
	}
	pthread_mutex_unlock(&scratch_lock);
	h5_buf_free(drop);
}

/* Whether filters i (a compressor, applied second when writing) and i-1
 * (size-preserving, applied before it) can be undone as one step. */
static bool fusable(const h5_pline *pl, uint32_t mask, size_t i)
{
	const h5_filter_class *c, *s;

	if (i == 0 || (mask & (UINT32_C(3) << (i - 1))))
		return false;
	c = filter_class(pl->filters[i].id);
	s = filter_class(pl->filters[i - 1].id);
	return c && c->decode && c->decode_to && s && s->decode && s->decode_copy && s->size == H5_FSIZE_SAME;
}

/* Filters i and i-1 undone together (fusable). On failure *bad is the
 * filter to name. */
static int decode_fused(uint8_t **buf, size_t *len, size_t *bad, const h5_pline *pl, size_t i, const fstage *st)
{
	const h5_filter *fc = &pl->filters[i], *fs = &pl->filters[i - 1];
	const h5_filter_class *c = filter_class(fc->id), *s = filter_class(fs->id);
	size_t cap = 0, got = 0;
	uint8_t *tmp, *out = NULL;
	int rc;

	*bad = i;
	tmp = scratch_get(&cap, st[i].size);
	if (!tmp)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for %zu bytes", st[i].size);
	rc = c->decode_to(tmp, &got, *buf, *len, fc, st[i]);
	if (rc < 0)
		goto out;
	out = h5_buf_alloc(got ? got : 1);
	if (!out) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for %zu bytes", got);
		goto out;
	}
	*bad = i - 1;
	rc = s->decode_copy(out, tmp, got, fs, st[i - 1]);
	if (rc < 0)
		goto out;
	swap_buf(buf, len, out, got);
	out = NULL;
out:
	h5_buf_free(out);
	scratch_put(tmp, cap);
	return rc;
}

/* Upper bound of what any supported filter makes of n bytes (deflate adds
 * ~0.1%, LZ4 0.4% plus framing, scale-offset 22 bytes, ...). */
static size_t encoded_bound(size_t n)
{
	return sat_add(sat_add(n, n / 4), 4096);
}

int h5_filter_decode(uint8_t **buf, size_t *len, const h5_pline *pl, uint32_t mask, size_t expect)
{
	fstage st[FILTER_MAX_PIPELINE];
	fstage cur = { expect, true };
	const h5_filter_class *c;
	int rc;

	if (!buf || !*buf || !len || !pl)
		return h5_err_set(H5_ERR_INVAL, "h5_filter_decode: bad arguments");
	if (pl->n > FILTER_MAX_PIPELINE)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline with %zu filters (at most %d)", pl->n, FILTER_MAX_PIPELINE);

	/* Sizes in write order: the input of filter i is what its decoder
	 * must give back. */
	for (size_t i = 0; i < pl->n; i++) {
		st[i] = cur;
		if (mask & (UINT32_C(1) << i))
			continue;
		c = filter_class(pl->filters[i].id);
		if (c && c->size == H5_FSIZE_SAME)
			continue;
		if (c && c->size == H5_FSIZE_PLUS4) {
			cur.size = sat_add(cur.size, 4);
			continue;
		}
		cur.size = encoded_bound(cur.size);
		cur.exact = false;
	}
	/* Only size-preserving filters and fletcher32 applied: the stored size
	 * is known.  (After a compressor each decoder checks its own output.) */
	if (cur.exact && *len != cur.size)
		return h5_err_set(H5_ERR_FORMAT, "filtered chunk of %zu bytes, expected %zu", *len, cur.size);

	for (size_t i = pl->n; i-- > 0;) {
		const h5_filter *f = &pl->filters[i];

		if (mask & (UINT32_C(1) << i))
			continue;
		if (fusable(pl, mask, i)) {
			size_t bad;

			rc = decode_fused(buf, len, &bad, pl, i, st);
			if (rc < 0)
				return h5_err_wrap(rc, "filter %zu (%s, id %u): ", bad, h5_filter_name(pl->filters[bad].id),
						   pl->filters[bad].id);
			i--;    /* filter i-1 is undone too */
			continue;
		}
		rc = decode_one(buf, len, f, st[i]);
		if (rc < 0)
			return h5_err_wrap(rc, "filter %zu (%s, id %u): ", i, h5_filter_name(f->id), f->id);
	}
	if (*len != expect)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline produced %zu bytes, expected %zu", *len, expect);
	return 0;
}

int h5_filter_encode(uint8_t **buf, size_t *len, uint32_t *mask_out, const h5_pline *pl)
{
	uint32_t mask = 0;
	int rc;

	if (!buf || !*buf || !len || !mask_out || !pl)
		return h5_err_set(H5_ERR_INVAL, "h5_filter_encode: bad arguments");
	if (pl->n > FILTER_MAX_PIPELINE)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline with %zu filters (at most %d)", pl->n, FILTER_MAX_PIPELINE);
	for (size_t i = 0; i < pl->n; i++) {
		const h5_filter *f = &pl->filters[i];
		const h5_filter_class *c = filter_class(f->id);

		if (c && c->encode)
			rc = c->encode(buf, len, f);
		else
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "filter %s (%u): encoding not supported",
					h5_filter_name(f->id), f->id);
		if (rc == 0)
			continue;
		/* H5Z_pipeline: an optional filter that cannot be applied is
		 * skipped and its mask bit set; a required one fails the write. */
		if ((f->flags & FILTER_FLAG_OPTIONAL) && rc != H5_ERR_NOMEM) {
			mask |= UINT32_C(1) << i;
			continue;
		}
		return h5_err_wrap(rc, "filter %zu (%s, id %u): ", i, h5_filter_name(f->id), f->id);
	}
	*mask_out = mask;
	return 0;
}
