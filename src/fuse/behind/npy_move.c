/* npy_move.c - np.save's placeholder renamed while its stream is open
 * (issue 83 item 7): `mv x.npy y.npy` racing np.save("x.npy"). As for a
 * local file, the array lands under the new name: NAME of a NAME.npy,
 * or the name itself when it has no .npy.
 *
 * Open streams are listed (fs->npy_taken) from the moment their
 * placeholder's pending entry is taken; member_rename holds the stream
 * of the object it moves, or of the name it moves (its close makes the
 * dataset under that name for a moment: np.save over NAME), by its mu
 * and a count that keeps it from being freed, from before it looks at
 * the names until the move is done and the stream told its new place: the stream's close, which makes the dataset and removes the
 * placeholder under the same mu, sees the placeholder either where it
 * was or where it went, never in between (a close that looked at x.npy
 * and then found it gone failed with ENOENT, and left the placeholder as
 * an empty dataset under the new name). A placeholder made and not yet
 * opened is renamed in its pending entry, which is not taken meanwhile. */
#include "npy_int.h"

/* A placeholder's link made and its pending entry added, and a rename's
 * search for them, one at a time: else a rename between the two moved a
 * placeholder no list named yet (process-wide: a few short steps) */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

void npy_names_lock(bool on)
{
	if (on)
		pthread_mutex_lock(&names_mu);
	else
		pthread_mutex_unlock(&names_mu);
}

/* (under fs->lock, which s->name changes take too) */
static bool named(const struct npy_stream *s, uint64_t group, const char *name)
{
	const char *base = strrchr(s->name, '/');

	return s->group == group && strcmp(base ? base + 1 : s->name, name) == 0;
}

void npy_rename_hold(h5fs *fs, struct npy_hold *h, uint64_t addr, uint64_t group, const char *name, uint64_t ngroup,
		     const char *newname)
{
	struct npy_stream *s, *d, *first, *second;
	struct npy_pending *p;

	pthread_mutex_lock(&names_mu);
	pthread_mutex_lock(&fs->lock);
	/* the object's own stream first: the name may be an older stream's,
	 * closed and not yet released, whose placeholder is gone */
	for (s = fs->npy_taken; s && s->addr != addr; s = s->tnext)
		;
	for (p = fs->npy_pending; !s && p && p->addr != addr; p = p->next)
		;
	if (!s && !p)   /* else the stream of the name it moves */
		for (s = fs->npy_taken; s && !named(s, group, name); s = s->tnext)
			;
	/* a stream making its dataset under the new name for a moment
	 * (np.save over NAME: NAME.npy, then moved over NAME) */
	for (d = fs->npy_taken; d && (d == s || !named(d, ngroup, newname)); d = d->tnext)
		;
	if (s)
		s->holds++;
	if (d)
		d->holds++;
	if (p)
		p->holds++;
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&names_mu);
	/* (two in one order, whatever the rename) */
	first = s && d && (uintptr_t)d < (uintptr_t)s ? d : s ? s : d;
	second = first == s ? d : s;
	if (first)
		pthread_mutex_lock(&first->mu);
	if (second)
		pthread_mutex_lock(&second->mu);
	h->s = s;
	h->d = d;
	h->p = p;
}

/* a hold of s (or p) let go: under fs->lock */
static void unhold_locked(struct npy_stream *s, struct npy_pending *p)
{
	if (s)
		s->holds--;
	if (p)
		p->holds--;
}

void npy_rename_release(h5fs *fs, struct npy_hold *h, uint64_t addr, uint64_t group, uint64_t parent,
			const char *path)
{
	struct npy_stream *s = h->s, *d = h->d;
	struct npy_pending *p = h->p;
	char *nm;

	if (!s && !p && !d)
		return;
	nm = path && (s || p) && addr == (s ? s->addr : p->addr) ? strdup(path) : NULL;
	pthread_mutex_lock(&fs->lock);
	if (nm && s) {
		free(s->name);
		s->name = nm;
		s->group = group;
		s->parent = parent;
	} else if (nm) {
		free(p->name);
		p->name = nm;
		p->group = group;
		p->parent = parent;
	}
	pthread_mutex_unlock(&fs->lock);
	if (d)
		pthread_mutex_unlock(&d->mu);
	if (s)
		pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&fs->lock);
	unhold_locked(s, p);
	unhold_locked(d, NULL);
	pthread_cond_broadcast(&fs->idle_cv);
	pthread_mutex_unlock(&fs->lock);
	h->s = h->d = NULL;
	h->p = NULL;
}

void npy_taken_leave(h5fs *fs, struct npy_stream *s)
{
	pthread_mutex_lock(&fs->lock);
	for (struct npy_stream **pp = &fs->npy_taken; *pp; pp = &(*pp)->tnext)
		if (*pp == s) {
			*pp = s->tnext;
			break;
		}
	while (s->holds)
		pthread_cond_wait(&fs->idle_cv, &fs->lock);
	pthread_mutex_unlock(&fs->lock);
}

bool npy_placeholder_at(struct npy_stream *s, const char *base)
{
	h5_link l = { 0 };
	bool at = h5_group_lookup(&l, s->g->f, s->group, base) == 0 && l.type == H5_LINK_HARD &&
		  (l.addr == s->addr || (s->tmp_made && l.addr == s->tmp_addr));

	h5_link_clear(&l);
	h5_err_clear();
	return at;
}

/* The placeholder this thread made last (member_create), for its open
 * right after (views.c npy_over): a rename between the two moved it */
static __thread uint64_t made_last;

void npy_made_note(uint64_t addr)
{
	made_last = addr;
}

bool npy_made_where(h5fs *fs, uint64_t *parent, char **base)
{
	bool found = false;
	struct npy_pending *p;

	*base = NULL;
	pthread_mutex_lock(&fs->lock);
again:
	for (p = fs->npy_pending; p && !found; p = p->next) {
		const char *b = strrchr(p->name, '/');

		if (p->addr != made_last)
			continue;
		/* a rename holding it has moved the link and not yet told the
		 * entry its new name (npy_rename_release): else this named the
		 * old one, gone (ENOENT to np.save racing mv, 1 in ~5,000
		 * under ASan and load: test_npy_rename) */
		if (p->holds) {
			pthread_cond_wait(&fs->idle_cv, &fs->lock);
			goto again;
		}
		*base = strdup(b ? b + 1 : p->name);
		*parent = p->parent;
		found = *base != NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	return found;
}
