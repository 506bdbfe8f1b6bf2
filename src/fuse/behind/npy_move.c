/* npy_move.c - np.save's placeholder renamed while its stream is open
 * (issue 83 item 7): `mv x.npy y.npy` racing np.save("x.npy"). As for a
 * local file, the array lands under the new name: NAME of a NAME.npy,
 * or the name itself when it has no .npy. member_rename tells the
 * streams of the moved object where it is now (npy_moved); the stream's
 * close takes that (npy_take_moved) before it makes the dataset, and
 * looks for its placeholder by address, never by a name a new np.save
 * may have taken since. */
#include "npy_int.h"
#include "wstate.h"

/* (under fs->lock, which keeps a listed handle's stream alive:
 * write.c npy_bytes lets one go under it) */
static void moved_one(struct npy_stream *s, uint64_t group, uint64_t parent, const char *path)
{
	char *nm = strdup(path);

	if (!nm)
		return;         /* out of memory: its close fails as before, logged */
	pthread_mutex_lock(&s->mv_mu);
	free(s->mv_name);
	s->mv_name = nm;
	s->mv_group = group;
	s->mv_parent = parent;
	pthread_mutex_unlock(&s->mv_mu);
}

void npy_moved(h5fs *fs, uint64_t addr, uint64_t group, uint64_t parent, const char *path)
{
	pthread_mutex_lock(&fs->lock);
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *w = (struct wfile *)(void *)h;

		if (w->npy && w->npy->addr == addr)
			moved_one(w->npy, group, parent, path);
	}
	/* a placeholder made, its stream not opened yet */
	for (struct npy_pending *p = fs->npy_pending; p; p = p->next) {
		char *nm;

		if (p->addr != addr || !(nm = strdup(path)))
			continue;
		free(p->name);
		p->name = nm;
		p->group = group;
		p->parent = parent;
	}
	pthread_mutex_unlock(&fs->lock);
}

void npy_take_moved(struct npy_stream *s)
{
	pthread_mutex_lock(&s->mv_mu);
	if (s->mv_name) {
		free(s->name);
		s->name = s->mv_name;
		s->mv_name = NULL;
		s->group = s->mv_group;
		s->parent = s->mv_parent;
	}
	pthread_mutex_unlock(&s->mv_mu);
}

bool npy_placeholder_at(struct npy_stream *s, const char *base)
{
	h5_link l = { 0 };
	bool at = h5_group_lookup(&l, s->g->f, s->group, base) == 0 && l.type == H5_LINK_HARD && l.addr == s->addr;

	h5_link_clear(&l);
	h5_err_clear();
	return at;
}
