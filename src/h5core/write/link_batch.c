/*
 * link_batch.c - rename, hard link and unlink of many names of one group
 * in one commit (h5core.h h5_link_change_batch; the daemon's write-behind
 * of them, issue 82 item 2): the net change of each name, in the group's
 * one commit (link_store.h change_many: a symbol-table group's stage and
 * its root's one write, a dense store written anew, a compact group's one
 * header change), with the reference counts of the objects whose
 * number of names changed in the order link_move.c keeps for one:
 *   + first   an object named more after the batch: its count raised
 *             (one header edit each) before the commit, whose stage
 *             makes it durable before the root's write: a crash between
 *             leaves a count too high, which only keeps the object;
 *   - after   an object named less: its count lowered once the root's
 *             write is durable (one fsync more: an edit in place has no
 *             stage, so a power cut could keep it without the root's
 *             write; a crash before leaves the count too high).
 * A removal that would leave an object with no name is refused before
 * anything is written, unless the caller takes what it stored (gone: a
 * dataset of one name, its only name removed: h5_gone_collect before the
 * commit, handed back as h5_link_delete_gone hands it; its count left
 * alone, as libhdf5 leaves a count at its last unlink).
 */
#include "base.h"
#include "file.h"
#include "linkmsg.h"
#include "group.h"
#include "link_store.h"

/* The objects whose count the batch changes and by how much (last: its
 * last name goes). */
struct delta {
	uint64_t *obj;
	int *d;
	bool *last;
	size_t n;
};

static void delta_add(struct delta *t, uint64_t obj, int d)
{
	if (!h5_addr_defined(obj))
		return;
	for (size_t i = 0; i < t->n; i++)
		if (t->obj[i] == obj) {
			t->d[i] += d;
			return;
		}
	t->obj[t->n] = obj;
	t->d[t->n++] = d;
}

/* Under write_lock: each name's link in FILE now (a hard link's object,
 * or H5_ADDR_UNDEF), the deltas of the objects, the checks. */
static int plan(struct delta *t, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs, size_t n,
		bool take_last)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		h5_link l = { 0 };
		uint64_t old = H5_ADDR_UNDEF;

		for (size_t j = 0; j < i && rc == 0; j++)
			if (strcmp(names[i], names[j]) == 0)
				rc = h5_err_set(H5_ERR_INVAL, "\"%s\" twice in one batch of links", names[i]);
		if (rc < 0)
			break;
		rc = h5_group_lookup(&l, f, group, names[i]);
		if (rc == 0 && l.type == H5_LINK_HARD)
			old = l.addr;
		h5_link_clear(&l);
		if (rc == H5_ERR_NOTFOUND && h5_addr_defined(addrs[i])) {
			h5_err_clear();
			rc = 0;
		}
		if (rc < 0 || (h5_addr_defined(old) && old == addrs[i]))
			continue;
		delta_add(t, old, -1);
		delta_add(t, addrs[i], +1);
	}
	/* no object left without a name, nor a name given to what is no
	 * object header (the count's edit reads it) */
	for (size_t i = 0; rc == 0 && i < t->n; i++) {
		h5_obj_info info;

		rc = h5_obj_info_get(&info, f, t->obj[i]);
		t->last[i] = rc == 0 && (int64_t)(info.nlink ? info.nlink : 1) + t->d[i] < 1;
		if (t->last[i] && !(take_last && (info.nlink ? info.nlink : 1) == 1 && t->d[i] == -1))
			rc = h5_err_set(H5_ERR_INVAL, "object 0x%llx: its last link would go in a batch of links",
					(unsigned long long)t->obj[i]);
	}
	return rc;
}

int h5_link_change_batch(h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs, size_t n,
			 h5_link_gone *gone, size_t *ngone)
{
	const h5_lstore_ops *ops;
	struct delta t = { calloc(2 * n + 1, sizeof(*t.obj)), calloc(2 * n + 1, sizeof(*t.d)),
			   calloc(2 * n + 1, sizeof(*t.last)), 0 };
	size_t raised = 0, ng = 0;
	bool changed = false;
	int rc = t.obj && t.d && t.last ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	if (ngone)
		*ngone = 0;
	if (rc == 0 && !h5_file_writable(f))
		rc = h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(names[i]);

		if (len == 0 || strchr(names[i], '/') || strcmp(names[i], ".") == 0 || strcmp(names[i], "..") == 0)
			rc = h5_err_set(H5_ERR_INVAL, "\"%s\" cannot be a link name", names[i]);
	}
	if (rc < 0 || n == 0)
		goto out;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_lstore_at(&ops, f, group);
	if (rc == 0 && !ops->change_many)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "a group of %s storage changes its links one commit each",
				ops->name);
	if (rc == 0)
		rc = plan(&t, f, group, names, addrs, n, gone != NULL);
	/* the storage of objects whose last name goes, noted before the
	 * change (as h5_link_delete_gone) */
	for (size_t i = 0; rc == 0 && i < t.n; i++)
		if (t.last[i]) {
			gone[ng] = (h5_link_gone){ .addr = t.obj[i] };
			rc = h5_gone_collect(&gone[ng].gone, f, t.obj[i]);
			if (rc == 0)
				ng++;
		}
	/* + first (their edits made durable by the commit's stage) */
	while (rc == 0 && raised < t.n) {
		if (t.d[raised] > 0)
			rc = h5_obj_refcount_add(f, t.obj[raised], t.d[raised]);
		if (rc == 0)
			raised++;
	}
	if (rc == 0) {
		rc = ops->change_many(&changed, f, group, names, addrs, n);
		h5_file_links_moved(f, group);
	}
	if (rc < 0) {
		/* nothing linked: the counts raised go back (a failure here
		 * only leaves one too high; the first error is the one said) */
		char *why = strdup(h5_err_msg());

		for (size_t i = 0; i < raised; i++)
			if (t.d[i] > 0)
				(void)h5_obj_refcount_add(f, t.obj[i], -t.d[i]);
		for (size_t i = 0; i < ng; i++)
			h5_gone_discard(gone[i].gone);
		ng = 0;
		h5_err_set(rc, "%s", why ? why : "out of memory");
		free(why);
	} else {
		/* - after the root's write, made durable first: a count's edit
		 * in place takes no stage of its own, and a power cut could
		 * keep it without the root's write (a count below the names:
		 * test_attr_crash's lchange part found it) */
		bool lower = false;

		for (size_t i = 0; i < t.n; i++)
			lower |= t.d[i] < 0 && !t.last[i];
		if (lower && changed && h5_file_sync(f) < 0)
			lower = false;  /* (the counts stay too high: only kept) */
		h5_err_clear();
		for (size_t i = 0; lower && i < t.n; i++)
			if (t.d[i] < 0 && !t.last[i] && h5_obj_refcount_add(f, t.obj[i], t.d[i]) < 0)
				h5_err_clear();
	}
	if (ngone)
		*ngone = ng;
	pthread_mutex_unlock(&f->write_lock);
out:
	free(t.obj);
	free(t.d);
	free(t.last);
	return rc;
}

int h5_link_change_room(uint64_t *room, h5_file *f, uint64_t group)
{
	const h5_lstore_ops *ops;
	int rc;

	*room = UINT64_MAX;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_lstore_at(&ops, f, group);
	if (rc == 0 && ops->names_room)
		rc = ops->names_room(room, f, group);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_link_change_batchable(h5_file *f, uint64_t group)
{
	const h5_lstore_ops *ops;
	int rc;

	pthread_mutex_lock(&f->write_lock);
	rc = h5_lstore_at(&ops, f, group);
	pthread_mutex_unlock(&f->write_lock);
	if (rc < 0)
		return rc;
	return ops->change_many != NULL;
}
