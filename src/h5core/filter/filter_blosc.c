/* filter_blosc.c - Blosc (32001) (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_BLOSC
#include "dl.h"

#include <blosc.h>

/* libblosc (and the snappy, C++ and OpenMP runtimes it pulls in), opened
 * when first needed (dl.h) */
#define BLOSC_FUNCTIONS(X) \
	X(blosc_cbuffer_validate) X(blosc_cbuffer_sizes) X(blosc_decompress_ctx) X(blosc_cbuffer_complib) \
	X(blosc_compcode_to_compname) X(blosc_compress_ctx)
static struct { BLOSC_FUNCTIONS(H5_DL_FIELD) } blosc_fn;
#define BLOSC_SLOT(name) H5_DL_SLOT(blosc_fn, name)
static const h5_dl_sym blosc_syms[] = { BLOSC_FUNCTIONS(BLOSC_SLOT) { NULL, NULL } };
static h5_dl blosc_lib = {
	.what = "blosc filter", .package = "libblosc1",
	.names = (const char *const[]){ "libblosc.so.1", NULL }, .syms = blosc_syms,
};
#define blosc_cbuffer_validate (blosc_fn.p_blosc_cbuffer_validate)
#define blosc_cbuffer_sizes (blosc_fn.p_blosc_cbuffer_sizes)
#define blosc_decompress_ctx (blosc_fn.p_blosc_decompress_ctx)
#define blosc_cbuffer_complib (blosc_fn.p_blosc_cbuffer_complib)
#define blosc_compcode_to_compname (blosc_fn.p_blosc_compcode_to_compname)
#define blosc_compress_ctx (blosc_fn.p_blosc_compress_ctx)

/* The Blosc HDF5 filter stores one blosc buffer; its header gives the
 * decoded size (which may differ from the chunk when other filters follow). */
static int dec_blosc(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	size_t nbytes = 0, cbytes = 0, blocksize = 0;
	uint8_t *out;
	int r, rc;

	(void)f;
	if ((rc = h5_dl_need(&blosc_lib)) < 0)
		return rc;
	if (*len < BLOSC_MIN_HEADER_LENGTH)
		return h5_err_set(H5_ERR_FORMAT, "blosc: chunk of %zu bytes is shorter than the blosc header", *len);
	if (blosc_cbuffer_validate(*buf, *len, &nbytes) != 0)
		return h5_err_set(H5_ERR_FORMAT, "blosc: invalid blosc header");
	blosc_cbuffer_sizes(*buf, &nbytes, &cbytes, &blocksize);
	if (cbytes > *len)
		return h5_err_set(H5_ERR_FORMAT, "blosc: buffer of %zu bytes claims %zu", *len, cbytes);
	if ((rc = stage_check("blosc", nbytes, st)) < 0)
		return rc;
	if (nbytes > INT_MAX)
		return h5_err_set(H5_ERR_FORMAT, "blosc: decoded size %zu too large", nbytes);
	out = h5_buf_alloc(nbytes ? nbytes : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "blosc: out of memory");
	r = blosc_decompress_ctx(*buf, out, nbytes, 1);
	if (r < 0 || (size_t)r != nbytes) {
		const char *lib = blosc_cbuffer_complib(*buf);

		h5_buf_free(out);
		return h5_err_set(H5_ERR_FORMAT, "blosc: decompression failed (%d; codec %s)", r, lib ? lib : "unknown");
	}
	swap_buf(buf, len, out, nbytes);
	return 0;
}

/* blosc_filter.c (hdf5-blosc, PyTables): cd [2] type size, [4] level (5),
 * [5] shuffle (1: byte, 2: bit), [6] the codec (blosclz); the output may
 * not exceed the input: then the (optional) filter fails and libhdf5
 * stores the chunk unfiltered.  blosc_compress_ctx with one thread and the
 * automatic block size writes what blosc_compress does, without its global
 * state. */
static int enc_blosc(uint8_t **buf, size_t *len, const h5_filter *f)
{
	unsigned typesize = f->ncd > 2 ? f->cd[2] : 1, clevel = f->ncd > 4 ? f->cd[4] : 5;
	int shuffle = f->ncd > 5 ? (int)f->cd[5] : 1, r;
	const char *cname = "blosclz";
	uint8_t *out;

	if ((r = h5_dl_need(&blosc_lib)) < 0)
		return r;
	if (f->ncd > 6 && blosc_compcode_to_compname((int)f->cd[6], &cname) < 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "blosc: codec %u not in this libblosc", f->cd[6]);
	if (*len > BLOSC_MAX_BUFFERSIZE)
		return h5_err_set(H5_ERR_LIMIT, "blosc: chunk of %zu bytes too large", *len);
	if (typesize == 0 || typesize > BLOSC_MAX_TYPESIZE)
		typesize = 1;
	out = h5_buf_alloc(*len ? *len : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "blosc: out of memory");
	r = blosc_compress_ctx((int)clevel, shuffle, typesize, *len, *buf, out, *len, cname, 0, 1);
	if (r <= 0) {
		h5_buf_free(out);
		return h5_err_set(H5_ERR_LIMIT, "blosc: %s", r == 0 ? "does not compress" : "compression failed");
	}
	swap_buf(buf, len, out, (size_t)r);
	return 0;
}
#endif

const h5_filter_class h5_filter_blosc = {
	.id = H5_FILTER_BLOSC,
	.name = "blosc",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_BLOSC
	.decode = dec_blosc,
	.encode = enc_blosc,
#endif
};
