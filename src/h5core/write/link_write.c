/*
 * link_write.c - adding and removing links (h5core.h "adding links"):
 * names checked, write_lock taken, the group's storage form found and its
 * entry of link_store.h's table called; new groups; removing a link (the
 * count of an object that had several hard links lowered after). Hard
 * links and moves: link_move.c.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"
#include "checksum.h"
#include "space.h"
#include "group.h"
#include "link_store.h"


/* The forms h5fs writes, by h5_lstore_kind (NULL: refused). */
static const h5_lstore_ops *const lstore_table[H5_LSTORE_NKINDS] = {
	[H5_LSTORE_COMPACT] = &h5_lstore_compact,
	[H5_LSTORE_DENSE] = &h5_lstore_dense,
	[H5_LSTORE_STAB] = &h5_lstore_stab,
};

int h5_lstore_of(const h5_lstore_ops **ops, h5_lstore_kind *kind, h5_file *f, const h5_ohdr *oh)
{
	static const h5_lstore_kind of_form[] = {
		[H5_GROUP_STAB] = H5_LSTORE_STAB,
		[H5_GROUP_COMPACT] = H5_LSTORE_COMPACT,
		[H5_GROUP_DENSE] = H5_LSTORE_DENSE,
	};
	h5_group_storage gs;
	int rc;

	*ops = NULL;
	rc = h5_group_storage_get(&gs, f, oh, oh->addr);
	if (rc < 0)
		return rc;
	*kind = of_form[gs.form];
	*ops = lstore_table[*kind];
	if (*ops == NULL)
		return h5_err_set(H5_ERR_UNSUPPORTED, "group 0x%llx: its link storage is not written",
				  (unsigned long long)oh->addr);
	return 0;
}

/* The ops of the group at addr. */
int h5_lstore_at(const h5_lstore_ops **ops, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	h5_lstore_kind kind;
	int rc = h5_ohdr_load(&oh, f, addr);

	if (rc == 0)
		rc = h5_lstore_of(ops, &kind, f, oh);
	h5_ohdr_free(oh);
	return rc;
}

static int link_name_check(const char *name, size_t name_len)
{
	if (name_len == 0 || memchr(name, 0, name_len) || memchr(name, '/', name_len) ||
	    (name_len == 1 && name[0] == '.') || (name_len == 2 && name[0] == '.' && name[1] == '.'))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" cannot be a link name", (int)name_len, name);
	return 0;
}

/* Under write_lock. start: the allocation end before the caller wrote new
 * space this link makes visible (UINT64_MAX: none), so that the commit
 * makes it durable first. */
static int insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type, uint64_t addr,
		  const char *target, int durable, uint64_t start)
{
	const h5_lstore_ops *ops;
	h5_link l = { 0 };
	int rc = h5_lstore_at(&ops, f, group);

	if (rc < 0)
		return rc;
	l.name = (char *)name;
	l.name_len = name_len;
	l.type = type;
	l.addr = addr;
	l.target = (char *)target;
	l.cset = h5_name_cset(name, name_len);
	return ops->insert(f, group, &l, start, durable);
}

int h5_link_insert_locked(h5_file *f, uint64_t group, const h5_link *link, const char *name, size_t name_len)
{
	const h5_lstore_ops *ops;
	h5_link l = *link;
	int rc = link_name_check(name, name_len);

	if (rc == 0)
		rc = h5_lstore_at(&ops, f, group);
	if (rc < 0)
		return rc;
	l.name = (char *)name;
	l.name_len = name_len;
	l.cset = h5_name_cset(name, name_len);
	l.has_corder = 0;
	return ops->insert(f, group, &l, UINT64_MAX, false);
}

int h5_link_insert_new_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr,
			      uint64_t start)
{
	int rc = link_name_check(name, name_len);

	return rc < 0 ? rc : insert(f, group, name, name_len, H5_LINK_HARD, addr, NULL, 0, start);
}

int h5_link_insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type,
		   uint64_t addr, const char *target, int durable)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	rc = link_name_check(name, name_len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	rc = insert(f, group, name, name_len, type, addr, target, durable, UINT64_MAX);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_group_create(uint64_t *addr, h5_file *f, uint64_t parent, const char *name, size_t name_len)
{
	const h5_lstore_ops *ops;
	uint64_t start;
	int rc;

	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	rc = link_name_check(name, name_len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	start = h5_space_end(f);
	rc = h5_lstore_at(&ops, f, parent);
	if (rc == 0)
		rc = ops->new_group(addr, f);
	if (rc == 0)
		rc = insert(f, parent, name, name_len, H5_LINK_HARD, *addr, NULL, 0, start);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* ---- removing a link ------------------------------------------------------------ */

/* h5_group_iterate's callback: one link is enough. */
static int any_link(const h5_link *l, void *ud)
{
	(void)l;
	*(bool *)ud = true;
	return 1;
}

/* want 1: NAME (target: its object, UNDEF: no hard link) must be an empty
 * group (rmdir); 2: no group (unlink). */
static int check_want(h5_file *f, uint64_t target, const char *name, size_t name_len, int want)
{
	h5_ohdr *oh = NULL;
	bool is_group, nonempty = false;
	int rc;

	if (!h5_addr_defined(target))
		return want == 1 ? h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name) : 0;
	rc = h5_ohdr_load(&oh, f, target);
	if (rc < 0)
		return rc;
	is_group = h5_ohdr_is_group(oh);
	h5_ohdr_free(oh);
	if (want == 1 && !is_group)
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" is no group", (int)name_len, name);
	if (want == 2 && is_group)
		return h5_err_set(H5_ERR_PERM, "\"%.*s\" is a group", (int)name_len, name);
	if (want == 1) {
		rc = h5_group_iterate(f, target, any_link, &nonempty);
		if (rc < 0)
			return rc;
		if (nonempty)
			return h5_err_set(H5_ERR_PERM, "group \"%.*s\" is not empty", (int)name_len, name);
	}
	return 0;
}

int h5_link_remove_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, int want)
{
	const h5_lstore_ops *ops;
	h5_link l = { 0 };
	char *cname = strndup(name, name_len);
	uint64_t target = H5_ADDR_UNDEF;
	int rc;

	if (cname == NULL)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_lstore_at(&ops, f, group);
	if (rc == 0)
		rc = h5_group_lookup(&l, f, group, cname);
	if (rc == 0 && l.type == H5_LINK_HARD)
		target = l.addr;
	h5_link_clear(&l);
	if (rc == 0 && want)
		rc = check_want(f, target, name, name_len, want);
	if (rc == 0)
		rc = ops->remove(f, group, name, name_len, false);
	/* then, when the object has other links, its count drops (after the
	 * link went: a crash between leaves the count too high, which only
	 * keeps the object when its last link goes) */
	if (rc == 0 && h5_addr_defined(target)) {
		(void)h5_obj_refcount_add(f, target, -1);
		h5_err_clear();
	}
	free(cname);
	return rc;
}

int h5_link_delete(h5_file *f, uint64_t group, const char *name, size_t name_len, int want)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = h5_link_remove_locked(f, group, name, name_len, want);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
