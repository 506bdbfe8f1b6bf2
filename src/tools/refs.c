/*
 * refs.c - h5fs-ls --refs: the chunk references kerchunk writes (its
 * version 1 JSON, {"version": 1, "refs": {...}}), from the engine's own
 * walk of each chunk index (h5_dataset_chunks), so that zarr reads the
 * datasets through fsspec's ReferenceFileSystem without libhdf5.
 *
 * Groups become Zarr v2 groups (.zgroup, .zattrs), datasets arrays
 * (.zarray, .zattrs, one [url, offset, length] per allocated chunk; small
 * chunks inlined as "base64:..."). Datasets whose values h5py reads
 * converted (fixed strings not null-padded) are written inline, as h5py
 * reads them, up to CONVERTED_MAX bytes. What Zarr v2 cannot express
 * (variable-length data, references, compounds with fields out of order,
 * filters without a numcodecs 0.11 codec, chunks stored with a filter
 * skipped, virtual or external storage) is skipped with one line on
 * stderr per dataset, never written wrongly. What the walk finds goes to
 * a sink (refs.h): refs_write's prints each entry as it is made
 * (refs_emit.c): nothing holds the whole document, so a dataset of
 * millions of chunks streams. Every line on stderr names FILE, then the
 * object.
 *
 * This file: the walk of groups and links and the document's state
 * (refs_int.h); a .zattrs is refs_attrs.c's, an array refs_dataset.c's.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_int.h"
#include "refs_emit.h"
#include "owner.h"
#include "h5util.h"
#include "tool_exit.h"
#include "json.h"
#include "linkvec.h"
#include "zarr_meta.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_EVERY_NS 500000000LL

/* ---- the document ----------------------------------------------------------------- */

void refs_sink_meta(struct refs *R, const char *prefix, const char *name, struct jb *val)
{
	jb_done(val);
	if (val->nomem || R->s->meta(R->s->u, prefix, name, val->p) < 0)
		R->nerr++;
}

void refs_progress(struct refs *R, const char *path, int done)
{
	struct timespec now;

	if (!R->tty || R->o->no_progress)
		return;
	if (done) {
		if (R->progress_shown)
			fputs("\r\033[K", stderr);
		R->progress_shown = 0;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - R->last.tv_sec) * 1000000000LL + (now.tv_nsec - R->last.tv_nsec) < PROGRESS_EVERY_NS)
		return;
	R->last = now;
	fprintf(stderr, "\r\033[Kh5fs-ls: %" PRIu64 " chunks referenced (%s)", R->nchunks, path);
	R->progress_shown = 1;
}

void refs_note(struct refs *R, const char *fmt, ...)
{
	va_list ap;
	struct jb b = { 0 };

	refs_progress(R, "", 1);
	va_start(ap, fmt);
	jb_printf(&b, "h5fs-ls: %s: ", R->o->file ? R->o->file : R->o->url);
	if (h5_sb_vprintf(&b.sb, fmt, ap) < 0)
		b.nomem = 1;
	va_end(ap);
	jb_done(&b);
	R->s->note(R->s->u, b.nomem ? "h5fs-ls: out of memory" : b.p);
	free(b.p);
}

/* ---- groups and links ------------------------------------------------------------ */

static void put_object(struct refs *R, const char *prefix, const char *path, uint64_t addr);

/* An external link, followed into its file when --follow-external (and
 * the file lies where h5fs would open it); chains of links are followed
 * as the mount follows them (h5_link_follow: libhdf5's limit, loops
 * refused). */
static void put_external(struct refs *R, const char *prefix, const char *path, const h5_link *l)
{
	h5_file *g = NULL, *saved_f = R->f;
	const char *saved_url = R->url;
	int saved_nc4 = R->nc4;
	char *abs = NULL, *fpath = NULL;
	uint64_t addr;

	if (!R->o->follow_external) {
		refs_note(R, "%s: external link to %s:%s not followed (--follow-external)", path, l->ext_file, l->ext_path);
		return;
	}
	if (h5_link_follow(&g, &addr, &fpath, R->f, l) < 0) {
		refs_note(R, "%s: external link to %s:%s not followed: %s", path, l->ext_file, l->ext_path, h5_err_msg());
		return;
	}
	abs = strstr(h5_file_path(g), "://") ? strdup(h5_file_path(g)) : realpath(h5_file_path(g), NULL);
	R->f = g;
	R->nc4 = own_detect(g) != OWN_HDF5;
	R->url = abs ? abs : h5_file_path(g);
	put_object(R, prefix, path, addr);
	R->f = saved_f;
	R->nc4 = saved_nc4;
	R->url = saved_url;
	free(abs);
	free(fpath);
	h5_file_release_related(g);
}

static void put_group(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	linkvec lv;
	struct jb zg = { 0 };
	struct refs_attrs ac;
	int rc;

	jb_printf(&zg, "{\"zarr_format\": 2}");
	refs_sink_meta(R, prefix, ".zgroup", &zg);
	free(zg.p);
	refs_attrs_build(R, &ac, NULL, path, addr, -1, 0);
	refs_attrs_put(R, &ac, prefix);
	refs_attrs_free(&ac);
	rc = linkvec_collect(&lv, R->f, addr);
	if (rc < 0 || lv.nomem) {
		refs_note(R, "%s: %s", path, lv.nomem ? "out of memory" : h5_err_msg());
		R->nerr++;
	}
	R->anc[R->nanc++] = addr;
	for (size_t i = 0; i < lv.n && !lv.nomem; i++) {
		const h5_link *l = &lv.v[i];
		size_t pl = strlen(prefix), nl = strlen(l->name);
		char *cp = malloc(pl + nl + 2), *cpath = h5_path_join(path, l->name);

		if (!cp || !cpath) {
			R->nerr++;
		} else if (nl != l->name_len || nl == 0 || strchr(l->name, '/') || strchr(l->name, '\\') ||
			   !strcmp(l->name, ".") ||
			   !strcmp(l->name, "..")) {
			refs_note(R, "%s: a link name that cannot be a Zarr key is skipped", path);
		} else {
			sprintf(cp, "%s%s/", prefix, l->name);
			if (l->type == H5_LINK_HARD) {
				put_object(R, cp, cpath, l->addr);
			} else if (l->type == H5_LINK_SOFT) {
				uint64_t t;

				/* fsspec has no links: the target is written again
				 * here; a relative one is read from this group, as
				 * libhdf5 reads it (links on the way followed) */
				rc = l->target ? h5_path_lookup_from(&t, R->f, addr, l->target) : H5_ERR_NOTFOUND;
				if (rc == 0) {
					put_object(R, cp, cpath, t);
				} else if (rc == H5_ERR_NOTFOUND || rc == H5_ERR_LOOP) {
					refs_note(R, "%s: soft link to %s not followed: %s", cpath, l->target ? l->target : "",
					     rc == H5_ERR_LOOP ? "a loop of links" : "it leads to no object");
				} else {
					/* a loop of links, or a corrupt group on the way */
					refs_note(R, "%s: soft link to %s: %s", cpath, l->target, h5_err_msg());
					R->nerr++;
				}
				h5_err_clear();
			} else {
				put_external(R, cp, cpath, l);
			}
		}
		free(cp);
		free(cpath);
	}
	R->nanc--;
	linkvec_clear(&lv);
}

static void put_object(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	h5_obj_info info;
	int rc = h5_obj_info_get(&info, R->f, addr);

	if (rc < 0) {
		refs_note(R, "%s: %s", path, h5_err_msg());
		R->nerr++;
		return;
	}
	if (info.kind == H5_OBJ_DATASET) {
		refs_put_dataset(R, prefix, path, addr);
	} else if (info.kind == H5_OBJ_GROUP) {
		for (unsigned i = 0; i < R->nanc; i++)
			if (R->anc[i] == addr) {
				refs_note(R, "%s: link back to an enclosing group not written (a cycle)", path);
				return;
			}
		if (R->nanc == REFS_MAX_DEPTH) {
			refs_note(R, "%s: groups nested deeper than %d not written", path, REFS_MAX_DEPTH);
			R->nerr++;
			return;
		}
		put_group(R, prefix, path, addr);
	}
	/* named datatypes have no Zarr form: nothing to write */
}

int refs_walk(h5_file *f, const char *path, uint64_t addr, const refs_opts *o, const refs_sink *s,
	      unsigned *nskipped, unsigned *nerr)
{
	struct refs R = { .o = o, .f = f, .url = o->url, .s = s };

	R.tty = !o->no_progress && isatty(STDERR_FILENO);
	R.nc4 = own_detect(f) != OWN_HDF5;
	clock_gettime(CLOCK_MONOTONIC, &R.last);
	R.plan_f = f;           /* phony dimension names: planned when first asked */
	/* from the root whatever PATH is: a subtree's names are the whole
	 * file's (netCDF-C numbers the file's dimensions, not a group's) */
	R.plan_addr = h5_file_root(f);
	put_object(&R, "", path, addr);
	refs_dims_free(R.dims);
	refs_progress(&R, "", 1);
	*nskipped = R.nskipped;
	*nerr = R.nerr;
	return 0;
}

/* ---- one file's document: the printing sink ------------------------------------- */

static int print_meta(void *u, const char *prefix, const char *name, const char *json)
{
	return rd_meta(u, prefix, name, json);
}

static int print_array(void *u, const char *prefix, const refs_array *a)
{
	struct jb za = { 0 };
	int rc;

	rd_zarray(&za, a->dtype, a->filters, a->rank, a->shape, a->chunks, a->fill);
	jb_done(&za);
	rc = za.nomem ? -1 : rd_meta(u, prefix, ".zarray", za.p);
	free(za.p);
	return rc;
}

static int print_chunk(void *u, const char *prefix, const uint64_t *idx, unsigned n, const char *url, uint64_t off,
		       uint64_t size, const uint8_t *data)
{
	char key[RD_KEY_MAX];

	rd_chunk_key(key, sizeof(key), idx, n);
	return data ? rd_inline(u, prefix, key, data, (size_t)size) : rd_ref(u, prefix, key, url, off, size);
}

static void print_note(void *u, const char *line)
{
	(void)u;
	fprintf(stderr, "%s\n", line);
}

int refs_write(h5_file *f, const char *path, uint64_t addr, const refs_opts *o)
{
	refs_doc w;
	refs_sink s = { &w, print_meta, print_array, print_chunk, print_note };
	unsigned nskipped = 0, nerr = 0;

	rd_begin(&w);
	refs_walk(f, path, addr, o, &s, &nskipped, &nerr);
	if (rd_end(&w) < 0) {
		fprintf(stderr, "h5fs-ls: writing the references failed\n");
		return TOOL_EXIT_PARTIAL;
	}
	if (nskipped)
		fprintf(stderr, "h5fs-ls: %s: %u dataset%s skipped (no Zarr v2 form)\n", o->file ? o->file : o->url,
			nskipped, nskipped == 1 ? "" : "s");
	if (nerr)
		return TOOL_EXIT_PARTIAL;
	return nskipped && o->strict ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;
}
