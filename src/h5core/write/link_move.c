/*
 * link_move.c - hard links and moves (h5core.h "adding links"): what
 * H5Lcreate_hard and H5Lmove do, over link_store.h's table, with the
 * reference count of the object linked (obj_refcount.c).
 *
 * Order, so that a crash leaves a file libhdf5 opens with each step done
 * or not done (doc/MODIFY.md):
 *   hard link  count + 1, then the link: a crash between leaves a count
 *              one too high, which only keeps the object when its last
 *              link goes (what a crash of libhdf5 leaves too).
 *   move       within one group whose form renames in one commit
 *              (compact: the Link message replaced): atomic. Otherwise,
 *              and across groups: as a hard link to the new name, then
 *              the old name removed and the count lowered: a crash leaves
 *              the object under the old name, under both (a hard link,
 *              counted), or under the new one. Soft and external links
 *              are copied, then removed: both names are the only middle
 *              state.
 *   replacing  a move over an existing name within one group whose form
 *              renames in one commit: that commit also drops the old link
 *              (rename(2)'s atomic replacement: sed -i, editors, rsync,
 *              np.save over NAME; issue 56), then the old object's count
 *              is lowered when it had other links. Across groups (or a
 *              form without rename) the old name is removed first, its
 *              own commit, and put back when the move then fails; a crash
 *              between leaves the object without the name (said in
 *              doc/MODIFY.md).
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "group.h"
#include "link_store.h"

/* The link NAME of group (H5_ERR_NOTFOUND). */
static int lookup(h5_link *l, h5_file *f, uint64_t group, const char *name, size_t name_len)
{
	char *cname = strndup(name, name_len);
	int rc;

	memset(l, 0, sizeof(*l));
	if (!cname)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_group_lookup(l, f, group, cname);
	free(cname);
	return rc;
}

/* A hard link to addr named NAME in group: count first, then the link. */
static int hard_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr)
{
	const h5_lstore_ops *ops;
	h5_link l = { 0 };
	int rc = h5_lstore_at(&ops, f, group);   /* a form h5fs writes, before any change */

	if (rc == 0)
		rc = h5_obj_refcount_add(f, addr, 1);
	if (rc < 0)
		return rc;
	l.type = H5_LINK_HARD;
	l.addr = addr;
	rc = h5_link_insert_locked(f, group, &l, name, name_len);
	if (rc < 0) {
		/* not linked after all: the count back (a failure here only
		 * leaves it one too high; the link's error is the one said) */
		char *why = strdup(h5_err_msg());

		(void)h5_obj_refcount_add(f, addr, -1);
		h5_err_set(rc, "%s", why ? why : "out of memory");
		free(why);
	}
	return rc;
}

int h5_link_hard(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr)
{
	h5_link old;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = lookup(&old, f, group, name, name_len);
	h5_link_clear(&old);
	if (rc == 0)
		rc = h5_err_set(H5_ERR_INVAL, "a link \"%.*s\" exists already", (int)name_len, name);
	else if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = hard_locked(f, group, name, name_len, addr);
	}
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

static int move_locked(h5_file *f, uint64_t sgroup, const char *sname, size_t slen, uint64_t dgroup,
		       const char *dname, size_t dlen, struct h5_gone **gone)
{
	const h5_lstore_ops *ops;
	h5_link src = { 0 }, dst = { 0 };
	bool has_dst;
	int rc = lookup(&src, f, sgroup, sname, slen);

	if (rc < 0)
		goto out;
	if (sgroup == dgroup && slen == dlen && memcmp(sname, dname, slen) == 0)
		goto out;       /* rename(2): the same name: nothing */
	rc = lookup(&dst, f, dgroup, dname, dlen);
	has_dst = rc == 0;
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = 0;
	}
	if (rc < 0)
		goto out;
	if (has_dst && src.type == H5_LINK_HARD && dst.type == H5_LINK_HARD && src.addr == dst.addr)
		goto out;       /* rename(2): two links of one object: nothing */
	/* the replaced dataset's storage, when this was its last link */
	if (gone && has_dst && dst.type == H5_LINK_HARD && (rc = h5_gone_collect(gone, f, dst.addr)) < 0)
		goto out;
	if (sgroup == dgroup && (rc = h5_lstore_at(&ops, f, sgroup)) == 0 && ops->rename) {
		rc = ops->rename(f, sgroup, sname, slen, dname, dlen, has_dst, false);
		h5_file_links_moved(f, sgroup);
		/* the replaced object: one link fewer (a crash before leaves the
		 * count too high, which only keeps it) */
		if (rc == 0 && has_dst && dst.type == H5_LINK_HARD) {
			(void)h5_obj_refcount_add(f, dst.addr, -1);
			h5_err_clear();
		}
		goto out;
	}
	if (rc < 0)
		goto out;
	if (has_dst && (rc = h5_link_remove_locked(f, dgroup, dname, dlen, 0)) < 0)
		goto out;
	if (src.type == H5_LINK_HARD)
		rc = hard_locked(f, dgroup, dname, dlen, src.addr);
	else
		rc = h5_link_insert_locked(f, dgroup, &src, dname, dlen);
	if (rc < 0 && has_dst) {
		/* the old name back: a failed rename leaves what was there */
		char *why = strdup(h5_err_msg());

		if (dst.type == H5_LINK_HARD)
			(void)hard_locked(f, dgroup, dname, dlen, dst.addr);
		else
			(void)h5_link_insert_locked(f, dgroup, &dst, dname, dlen);
		h5_err_set(rc, "%s", why ? why : "out of memory");
		free(why);
	}
	if (rc == 0)
		rc = h5_link_remove_locked(f, sgroup, sname, slen, 0);
out:
	if (rc < 0 && gone) {
		h5_gone_discard(*gone);
		*gone = NULL;
	}
	h5_link_clear(&src);
	h5_link_clear(&dst);
	return rc;
}

int h5_link_move(h5_file *f, uint64_t sgroup, const char *sname, size_t slen, uint64_t dgroup, const char *dname,
		 size_t dlen)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = move_locked(f, sgroup, sname, slen, dgroup, dname, dlen, NULL);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_link_move_gone(h5_file *f, uint64_t sgroup, const char *sname, size_t slen, uint64_t dgroup,
		      const char *dname, size_t dlen, struct h5_gone **gone)
{
	int rc;

	*gone = NULL;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = move_locked(f, sgroup, sname, slen, dgroup, dname, dlen, gone);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
