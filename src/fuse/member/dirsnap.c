/* dirsnap.c - a directory's listing (dirsnap.h): its names, kinds for
 * d_type and, where READDIRPLUS may take them, the stat of each entry,
 * read in one pass over the group (`dirsnap_list`). Made at a handle's
 * first readdir (read.c) or ahead of it by ahead.c's thread; both use
 * this file, which uses neither. */
#include "member.h"
#include "batch.h"
#include "dirsnap.h"

void dirsnap_free(struct dirsnap *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		if (d->e[i].link) {
			h5_link_clear(d->e[i].link);
			free(d->e[i].link);
		}
	}
	free(d->e);
	free(d->st);
	free(d->names);
	gen_release(d->gen);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int dirsnap_cb(const h5_link *l, void *ud)
{
	struct dirsnap *d = ud;
	struct dent *e;

	if (!name_ok(l->name, l->name_len) ||
	    (l->type != H5_LINK_HARD && l->type != H5_LINK_SOFT && l->type != H5_LINK_EXTERNAL)) {
		d->skipped++;
		return 0;
	}
	/* (removed with the batch, not yet in FILE: lbatch.c) */
	if (lbatch_removed(d->fs, d->rf, d->raddr, l->name, l->name_len))
		return 0;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 64;
		struct dent *ne = realloc(d->e, ncap * sizeof(*ne));

		if (!ne) {
			d->nomem = 1;
			return 1;
		}
		d->e = ne;
		d->cap = ncap;
	}
	if (d->names_cap - d->names_len < (size_t)l->name_len + 1) {
		size_t ncap = d->names_cap ? d->names_cap * 2 : 4096;
		char *nn;

		while (ncap - d->names_len < (size_t)l->name_len + 1)
			ncap *= 2;
		nn = realloc(d->names, ncap);
		if (!nn) {
			d->nomem = 1;
			return 1;
		}
		d->names = nn;
		d->names_cap = ncap;
	}
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	e->name = d->names_len;
	memcpy(d->names + d->names_len, l->name, l->name_len);
	d->names[d->names_len + l->name_len] = '\0';
	d->names_len += (size_t)l->name_len + 1;
	e->addr = l->type == H5_LINK_HARD ? l->addr : UINT64_MAX;
	/* (a group that its symbol table entry says is one: no header read
	 * for its d_type, issue 82; its lookup reads it, and says so if the
	 * entry lied) */
	e->dtype = l->type != H5_LINK_HARD ? DT_LNK : l->is_group ? DT_DIR : DT_UNKNOWN;
	if (l->type == H5_LINK_EXTERNAL || (l->type == H5_LINK_SOFT && d->keep_soft)) {
		e->link = calloc(1, sizeof(*e->link));
		if (!e->link || (l->ext_file && !(e->link->ext_file = strdup(l->ext_file))) ||
		    (l->ext_path && !(e->link->ext_path = strdup(l->ext_path))) ||
		    (l->target && !(e->link->target = strdup(l->target)))) {
			d->n++;
			d->nomem = 1;
			return 1;
		}
		e->link->type = l->type;
	}
	d->n++;
	return 0;
}

static unsigned char kind_dtype(h5_obj_kind k)
{
	return k == H5_OBJ_GROUP ? DT_DIR : DT_REG;
}

#define OHDR_AHEAD 4

/* Entry i's kind and d_type from one read of its header, with its stat
 * kept for READDIRPLUS when it is not a group (a group's lookup makes
 * its node): false when that read failed (h5_obj_info_get then says what
 * it can: a dataset that cannot be opened is still listed DT_REG, and its
 * lookup reports the EIO) */
static bool listing_stat(struct dirsnap *d, size_t i, h5fs *fs, h5_file *f, h5_window *w)
{
	struct dent *e = &d->e[i];
	struct dstat ds;

	if (node_obj_stat(&ds.st, &ds.kind, &ds.tag, fs, f, e->addr, w) != 0) {
		h5_err_clear();
		return false;
	}
	e->dtype = kind_dtype(ds.kind);
	if (ds.kind == H5_OBJ_GROUP)
		return true;
	/* (out of memory: no stat kept; the lookup reads it) */
	if (!d->st)
		d->st = malloc(d->n * sizeof(*d->st));
	if (d->st) {
		d->st[i] = ds;
		e->has_st = true;
	}
	return true;
}

#define LISTING_UP 64

/* ino is the directory n or one above it on its path: in up (its nup
 * ancestors' numbers, ancestor_chain), or walked up to when they were too
 * many to keep (nup < 0) */
static bool listing_up(h5fs *fs, const struct node *n, const uint64_t *up, int nup, uint64_t ino)
{
	if (nup < 0)
		return ancestor_depth(fs, n, ino) >= 0;
	for (int k = 0; k < nup; k++)
		if (up[k] == ino)
			return true;
	return false;
}

/* A snapshot of the directory's entries (the kinds and inode numbers of
 * what they lead to): 0 and *out, or an errno (EIO logged). */
int dirsnap_list(struct dirsnap *d, h5fs *fs, fuse_ino_t ino, bool ahead)
{
	struct node *n = node_get(fs, ino);
	struct use u;
	uint64_t *keys = NULL;
	size_t *at = NULL, nk = 0, i;
	uint8_t *kinds = NULL;
	struct kind_at *kat = NULL;     /* (the slots kind_lookup_many made) */
	uint64_t up[LISTING_UP];        /* n and the directories above it */
	int rc, err = 0, nup = -1;
	bool want_st;
	/* the children's headers, read a window at a time (h5_window) */
	h5_window win = { 0 };

	if (!n)
		return ESTALE;
	if (n->type != NT_DIR)
		return ENOTDIR;
	/* new files not linked yet are listed too (made ahead: by the
	 * readdir that takes it, ahead_take) */
	err = ahead ? 0 : commit_barrier(fs, COMMIT_NAMES);
	if (err)
		return err;
	/* (after the barrier's own commit: marked before anything is read) */
	d->quiet = fs_change_mark(fs, &d->chg_mark);
	/* READDIRPLUS's entries are answered from the listing's read where
	 * its lookup takes the listing's word for the name (do_lookup: a
	 * mount that does not write, or one none of whose changes ran
	 * since the mark) and a dataset's mode does not depend on its
	 * dataset's state (write_busy: node.c obj_fill) */
	want_st = (!pager_writes(&fs->pg) || d->quiet) && !fs->write_busy;
	err = node_use(&u, fs, n);
	if (err)
		return err;
	d->keep_soft = n->fpath != NULL;
	d->gen = u.g;
	if (d->gen)
		gen_hold(d->gen);
	d->fs = fs;
	d->rf = u.f;
	d->raddr = u.addr;
	rc = h5_group_iterate(u.f, u.addr, dirsnap_cb, d);
	if (d->nomem) {
		err = ENOMEM;
		goto fail;
	}
	if (rc < 0) {
		err = h5err_logged(fs, rc, "readdir", n->path, NULL, u.addr);
		goto fail;
	}
	if (d->skipped)
		h5fs_log(fs, LOG_WARNING, "readdir %s: %zu link(s) with names that cannot be shown were skipped",
		       show_path(n->path), d->skipped);
	/* Hard links: d_type from the kind (cached per address; one header
	 * decode the first time) so find/ls need not stat every entry. A child
	 * that cannot be decoded stays DT_UNKNOWN: its lookup reports the EIO.
	 * FILE's own children (all but links shown in place) are looked up in
	 * the kind map together, and the kinds decoded remembered together:
	 * one lock each per listing, not two per name (kind_lookup_many) */
	if (d->n) {
		keys = malloc(d->n * (sizeof(*keys) + sizeof(*kat) + sizeof(*at) + 1));
		if (!keys) {
			err = ENOMEM;
			goto fail;
		}
		kat = (struct kind_at *)(keys + d->n);
		at = (size_t *)(kat + d->n);
		kinds = (uint8_t *)(at + d->n);
		nup = ancestor_chain(fs, n, up, LISTING_UP);
	}
	for (i = 0; i < d->n; i++) {
		struct dent *e = &d->e[i];
		h5_file *tf = u.f;
		uint64_t taddr = e->addr;
		h5_obj_kind k;

		/* links shown in place show what they lead to (link_place) */
		if (e->link) {
			char *fp = NULL;

			if (link_place(&tf, &taddr, &fp, n, u.f, e->link) != 0) {
				h5_err_clear();
				tf = NULL;
				taddr = UINT64_MAX;
			}
			free(fp);
		}
		if (taddr != UINT64_MAX && listing_up(fs, n, up, nup, file_ino(tf, taddr))) {
			taddr = UINT64_MAX;      /* a link up the tree: a symlink */
			e->dtype = DT_LNK;
		}
		if (taddr != UINT64_MAX && !e->link) {
			e->ino = file_ino(tf, taddr);
			keys[nk] = e->ino;
			at[nk++] = i;
		} else if (taddr != UINT64_MAX) {
			h5_obj_info info;
			uint64_t key = file_ino(tf, taddr);

			e->ino = key;
			if (kind_lookup(fs, key, &k)) {
				e->dtype = kind_dtype(k);
			} else if (h5_obj_info_get(&info, tf, taddr) == 0) {
				kind_remember(fs, key, info.kind);
				e->dtype = kind_dtype(info.kind);
			}
		} else {
			e->ino = synth_ino(fs, n->ino, d->names + e->name);
		}
		if (e->link && tf)
			h5_file_release_related(tf);
		if (!e->ino) {
			err = ENOMEM;
			goto fail;
		}
	}
	kind_lookup_many(fs, keys, kinds, kat, nk);
	/* the headers to decode: the engine's cache look-up of the ones a
	 * few places ahead fetched meanwhile (h5_obj_prefetch; want_st reads
	 * them past the cache) */
	for (i = 0; i < nk && i < OHDR_AHEAD && !want_st; i++)
		if (kinds[i] == KIND_NONE)
			h5_obj_prefetch(u.f, d->e[at[i]].addr);
	for (i = 0; i < nk; i++) {
		struct dent *e = &d->e[at[i]];
		h5_obj_info info;

		if (!want_st && i + OHDR_AHEAD < nk && kinds[i + OHDR_AHEAD] == KIND_NONE)
			h5_obj_prefetch(u.f, d->e[at[i + OHDR_AHEAD]].addr);
		if (kinds[i] != KIND_NONE) {
			/* known, and no record kept of it (the kernel forgot
			 * it): its stat read in this pass too, for READDIRPLUS */
			if (want_st && kinds[i] != H5_OBJ_GROUP && !kat[i].named)
				(void)listing_stat(d, at[i], fs, u.f, &win);
			e->dtype = kind_dtype((h5_obj_kind)kinds[i]);
			kinds[i] = KIND_NONE;   /* known: nothing to remember */
		} else if (e->dtype == DT_DIR) {
			kinds[i] = H5_OBJ_GROUP;        /* (dirsnap_cb: the link said) */
		} else if (want_st && listing_stat(d, at[i], fs, u.f, &win)) {
			kinds[i] = (uint8_t)(e->has_st ? d->st[at[i]].kind : H5_OBJ_GROUP);
		} else if (h5_obj_info_get(&info, u.f, e->addr) == 0) {
			e->dtype = kind_dtype(info.kind);
			kinds[i] = (uint8_t)info.kind;
		}
	}
	kind_remember_many(fs, keys, kinds, kat, nk);
	h5_err_clear();
	h5_window_clear(&win);
	free(keys);
	node_use_end(&u);
	return 0;
fail:
	h5_window_clear(&win);
	free(keys);
	node_use_end(&u);
	return err;
}
