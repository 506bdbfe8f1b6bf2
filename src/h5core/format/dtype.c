/* dtype.c - the Datatype message (IV.A.2.d "The Datatype Message").
 *
 * The message is recursive (compound members, enum/vlen/array base types),
 * so the decoder works on one shared cursor and limits the nesting depth to
 * H5_MAX_DTYPE_DEPTH; every count is checked against the bytes left before
 * anything is allocated for it. */
#include "base.h"
#include "rd.h"
#include "dtype.h"


/* Byte order bits: bit 0 big-endian, bit 6 (float, v3+) VAX order. */
#define DT_ORDER_BE 0x01
#define DT_ORDER_VAX 0x40

/* Compound member of a version 1 message: up to 4 array dimensions. */
#define DT_V1_MAX_MEMBER_DIMS 4

static int decode_type(h5_dtype **out, h5_rd *r, unsigned depth);

void h5_dtype_free(h5_dtype *t)
{
	size_t i;

	if (!t)
		return;
	if (t->members) {
		for (i = 0; i < t->nmembers; i++) {
			free(t->members[i].name);
			h5_dtype_free(t->members[i].type);
		}
		free(t->members);
	}
	if (t->enum_names) {
		for (i = 0; i < t->nmembers; i++)
			free(t->enum_names[i]);
		free(t->enum_names);
	}
	free(t->enum_values);
	free(t->tag);
	h5_dtype_free(t->base);
	free(t);
}

/* Position of the cursor, for messages: offsets inside the message. */
static size_t rd_pos(const h5_rd *r) { return r->pos; }

/* A NUL-terminated name at the cursor. Versions 1 and 2 pad the name with
 * NULs to a multiple of 8 bytes (IV.A.2.d, compound and enum properties);
 * version 3 stores it unpadded. */
static int read_name(char **out, h5_rd *r, bool padded, const char *what)
{
	size_t left = h5_rd_left(r);
	const uint8_t *p = r->p + r->pos;
	const uint8_t *nul = left ? memchr(p, 0, left) : NULL;
	size_t n, stored;

	*out = NULL;
	if (!nul)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: %s name at byte %zu is not NUL-terminated",
				  what, rd_pos(r));
	n = (size_t)(nul - p);
	stored = padded ? (n + 8) / 8 * 8 : n + 1;
	if (stored > left)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: %s name padding at byte %zu runs past the end",
				  what, rd_pos(r));
	*out = malloc(n + 1);
	if (!*out)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	memcpy(*out, p, n + 1);
	h5_rd_skip(r, stored);
	return 0;
}

/* Fixed-point, bit field: offset and precision must lie inside the element. */
static int check_bits(const h5_dtype *t, const char *what)
{
	if (t->precision == 0 || (uint64_t)t->bit_offset + t->precision > (uint64_t)t->size * 8)
		return h5_err_set(H5_ERR_FORMAT,
				  "datatype message: %s of %u bytes has bit offset %u precision %u", what,
				  t->size, t->bit_offset, t->precision);
	return 0;
}

static int decode_float(h5_dtype *t, h5_rd *r)
{
	uint64_t nbits = (uint64_t)t->size * 8;

	/* Bits 0 and 6 together give the byte order; 6 alone is reserved. */
	if ((t->bits & DT_ORDER_VAX) && !(t->bits & DT_ORDER_BE))
		return h5_err_set(H5_ERR_FORMAT, "datatype message: reserved float byte order");
	if ((t->bits & DT_ORDER_VAX) && t->version < 3)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: VAX float order needs version 3, got %u",
				  t->version);
	/* VAX order is neither little- nor big-endian: callers that care look at
	 * bits; raw byte reads do not. */
	t->big_endian = (t->bits & (DT_ORDER_BE | DT_ORDER_VAX)) == DT_ORDER_BE;
	t->norm = (t->bits >> 4) & 0x03;
	t->sign_loc = (t->bits >> 8) & 0xff;
	t->bit_offset = h5_rd_u16(r);
	t->precision = h5_rd_u16(r);
	t->exp_loc = h5_rd_u8(r);
	t->exp_size = h5_rd_u8(r);
	t->mant_loc = h5_rd_u8(r);
	t->mant_size = h5_rd_u8(r);
	t->exp_bias = h5_rd_u32(r);
	if (!h5_rd_ok(r))
		return 0; /* the caller reports truncation */
	if (t->precision == 0 || t->bit_offset + (uint64_t)t->precision > nbits ||
	    t->exp_size == 0 || (uint64_t)t->exp_loc + t->exp_size > nbits ||
	    (uint64_t)t->mant_loc + t->mant_size > nbits || t->sign_loc >= nbits)
		return h5_err_set(H5_ERR_FORMAT,
				  "datatype message: float of %u bytes has bad fields (offset %u prec %u "
				  "exp %u+%u mant %u+%u sign %u)", t->size, t->bit_offset, t->precision,
				  t->exp_loc, t->exp_size, t->mant_loc, t->mant_size, t->sign_loc);
	return 0;
}

/* Wrap a version 1 compound member with array dimensions in an array type,
 * which is how later versions encode the same thing. */
static int wrap_v1_array(h5_dtype **type, unsigned ndims, const uint32_t *dims)
{
	h5_dtype *a;
	uint64_t size = (*type)->size;
	unsigned i;

	for (i = 0; i < ndims; i++)
		if (h5_mul_overflow(size, dims[i], &size) || size > UINT32_MAX || dims[i] == 0)
			return h5_err_set(H5_ERR_FORMAT,
					  "datatype message: v1 compound member array size out of range");
	a = calloc(1, sizeof(*a));
	if (!a)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	a->cls = H5T_ARRAY;
	a->version = 1;
	a->size = (uint32_t)size;
	a->arank = ndims;
	memcpy(a->adims, dims, ndims * sizeof(*dims));
	a->base = *type;
	*type = a;
	return 0;
}

/* Minimum encoded size of one datatype message (class/version, bits, size). */
#define DT_HDR_SIZE 8

static int decode_compound(h5_dtype *t, h5_rd *r, unsigned depth)
{
	size_t n = t->bits & 0xffff;
	/* Smallest possible member: name, offset, member type header (and for
	 * v1 the 28 bytes of array information). */
	size_t min_member = t->version == 1 ? 8 + 4 + 28 + DT_HDR_SIZE
			  : t->version == 2 ? 8 + 4 + DT_HDR_SIZE : 1 + 1 + DT_HDR_SIZE;
	/* v3 member offsets are as wide as needed to hold the compound size. */
	unsigned off_size = 1;
	size_t i;
	int ret;

	while (off_size < 4 && (t->size >> (8 * off_size)) != 0)
		off_size++;
	if (n == 0)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: compound with no members");
	if (n > h5_rd_left(r) / min_member)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: compound claims %zu members in %zu bytes",
				  n, h5_rd_left(r));
	t->members = calloc(n, sizeof(*t->members));
	if (!t->members)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	for (i = 0; i < n; i++) {
		h5_dtype_member *m = &t->members[i];
		unsigned ndims = 0;
		uint32_t dims[DT_V1_MAX_MEMBER_DIMS];

		/* Count it now so h5_dtype_free() releases a partial member. */
		t->nmembers = i + 1;
		ret = read_name(&m->name, r, t->version < 3, "compound member");
		if (ret < 0)
			return ret;
		m->offset = (uint32_t)h5_rd_uint(r, t->version >= 3 ? off_size : 4);
		if (t->version == 1) {
			ndims = h5_rd_u8(r);
			h5_rd_skip(r, 3 + 4 + 4); /* reserved, permutation, reserved */
			for (unsigned d = 0; d < DT_V1_MAX_MEMBER_DIMS; d++)
				dims[d] = h5_rd_u32(r);
			if (h5_rd_ok(r) && ndims > DT_V1_MAX_MEMBER_DIMS)
				return h5_err_set(H5_ERR_FORMAT,
						  "datatype message: compound member '%s' has %u dimensions",
						  m->name, ndims);
		}
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "datatype message: compound member %zu truncated", i);
		ret = decode_type(&m->type, r, depth + 1);
		if (ret < 0)
			return ret;
		if (ndims > 0) {
			ret = wrap_v1_array(&m->type, ndims, dims);
			if (ret < 0)
				return ret;
		}
		if ((uint64_t)m->offset + m->type->size > t->size)
			return h5_err_set(H5_ERR_FORMAT,
					  "datatype message: compound member '%s' (offset %u, size %u) "
					  "extends past the compound size %u",
					  m->name, m->offset, m->type->size, t->size);
	}
	return 0;
}

static int decode_enum(h5_dtype *t, h5_rd *r, unsigned depth)
{
	size_t n = t->bits & 0xffff;
	size_t i, vbytes;
	const uint8_t *v;
	int ret;

	ret = decode_type(&t->base, r, depth + 1);
	if (ret < 0)
		return ret;
	if (t->base->cls != H5T_INTEGER && t->base->cls != H5T_BITFIELD)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: enum base class %d is not an integer",
				  t->base->cls);
	if (t->base->size != t->size)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: enum size %u differs from its base size %u",
				  t->size, t->base->size);
	/* Each member needs at least its name (1 byte, or 8 padded) and value. */
	if (n > h5_rd_left(r) / ((t->version < 3 ? 8 : 1) + (size_t)t->size))
		return h5_err_set(H5_ERR_FORMAT, "datatype message: enum claims %zu members in %zu bytes",
				  n, h5_rd_left(r));
	if (n == 0)
		return 0;
	t->enum_names = calloc(n, sizeof(*t->enum_names));
	if (!t->enum_names)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	t->nmembers = n;
	for (i = 0; i < n; i++) {
		ret = read_name(&t->enum_names[i], r, t->version < 3, "enum member");
		if (ret < 0)
			return ret;
	}
	vbytes = n * t->size; /* bounded above by the bytes left */
	v = h5_rd_bytes(r, vbytes);
	if (!v)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: enum values truncated");
	t->enum_values = malloc(vbytes);
	if (!t->enum_values)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	memcpy(t->enum_values, v, vbytes);
	return 0;
}

static bool float_fields(const h5_dtype *t, unsigned prec, unsigned esz, unsigned msz, unsigned norm)
{
	return t->precision == prec && t->bit_offset == 0 && t->exp_size == esz && t->mant_size == msz &&
	       t->mant_loc == 0 && t->exp_loc == msz && t->sign_loc == esz + msz && t->norm == norm &&
	       t->exp_bias == (1u << (esz - 1)) - 1;
}

h5_float_kind h5_dtype_float_kind(const h5_dtype *t)
{
	/* IV.A.2.d class 1: normalization 2 = leading one implied (IEEE),
	 * 0 = stored (x87); VAX order is neither byte order */
	if (t->cls != H5T_FLOAT || (t->bits & 0x41) == 0x41)
		return H5_FLOAT_OTHER;
	if ((t->size == 2 && float_fields(t, 16, 5, 10, 2)) || (t->size == 4 && float_fields(t, 32, 8, 23, 2)) ||
	    (t->size == 8 && float_fields(t, 64, 11, 52, 2)) || (t->size == 16 && float_fields(t, 128, 15, 112, 2)))
		return H5_FLOAT_IEEE;
	/* x87: 64 mantissa bits with the leading one, in the low 10 bytes of 10, 12 or 16 */
	if (t->size >= 10 && float_fields(t, 80, 15, 64, 0))
		return H5_FLOAT_X87;
	/* HDF5 2.x's H5T_FLOAT_BFLOAT16LE/BE, H5T_FLOAT_F8E4M3, H5T_FLOAT_F8E5M2 */
	if (t->size == 2 && float_fields(t, 16, 8, 7, 2))
		return H5_FLOAT_BF16;
	if (t->size == 1 && float_fields(t, 8, 4, 3, 2))
		return H5_FLOAT_E4M3;
	if (t->size == 1 && float_fields(t, 8, 5, 2, 2))
		return H5_FLOAT_E5M2;
	/* HDF5 2.1's FP6 and FP4 (OCP MX formats), in the low bits of a byte */
	if (t->size == 1 && float_fields(t, 6, 2, 3, 2))
		return H5_FLOAT_E2M3;
	if (t->size == 1 && float_fields(t, 6, 3, 2, 2))
		return H5_FLOAT_E3M2;
	if (t->size == 1 && float_fields(t, 4, 2, 1, 2))
		return H5_FLOAT_E2M1;
	return H5_FLOAT_OTHER;
}

static int decode_array(h5_dtype *t, h5_rd *r, unsigned depth)
{
	uint64_t total;
	unsigned i;
	int ret;

	/* Versions 1 and 2 have the same layout (libhdf5's H5O_dtype_decode
	 * reads both so; old PyTables files have version 1 arrays): 3 reserved
	 * bytes after the rank and permutation indices after the dimensions. */
	t->arank = h5_rd_u8(r);
	if (t->version < 3)
		h5_rd_skip(r, 3); /* reserved */
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "datatype message: array truncated");
	if (t->arank == 0 || t->arank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: array rank %u out of range", t->arank);
	for (i = 0; i < t->arank; i++)
		t->adims[i] = h5_rd_u32(r);
	/* Versions 1 and 2 store permutation indices, which libhdf5 never implemented. */
	if (t->version < 3)
		h5_rd_skip(r, 4 * (size_t)t->arank);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "datatype message: array dimensions truncated");
	ret = decode_type(&t->base, r, depth + 1);
	if (ret < 0)
		return ret;
	total = t->base->size;
	for (i = 0; i < t->arank; i++)
		if (t->adims[i] == 0 || h5_mul_overflow(total, t->adims[i], &total) || total > UINT32_MAX)
			return h5_err_set(H5_ERR_FORMAT, "datatype message: array dimensions out of range");
	if (total != t->size)
		return h5_err_set(H5_ERR_FORMAT,
				  "datatype message: array size %u differs from %llu computed from its dims",
				  t->size, (unsigned long long)total);
	return 0;
}

/* Class 11 (IV.A.2.d "Complex", format 4.0): bit 0 homogeneous, bits 1-2
 * the form (0 rectangular, 1 polar, 2 exponential), then the parent type
 * message of both parts. HDF5 2.x writes only homogeneous rectangular
 * pairs of floats; the other forms are refused with what they are. */
static int decode_complex(h5_dtype *t, h5_rd *r, unsigned depth)
{
	static const char *const forms[] = { "rectangular", "polar", "exponential", "reserved" };
	unsigned form = (t->bits >> 1) & 0x03;
	int ret;

	if (t->version < 5)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: complex class needs version 5, got %u",
				  t->version);
	if (!(t->bits & 0x01))
		return h5_err_set(H5_ERR_UNSUPPORTED, "datatype message: heterogeneous complex number type");
	if (form != 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "datatype message: complex number type of %s form",
				  forms[form]);
	ret = decode_type(&t->base, r, depth + 1);
	if (ret < 0)
		return ret;
	if (t->base->cls != H5T_FLOAT)
		return h5_err_set(H5_ERR_FORMAT, "datatype message: complex parts of class %d, not float",
				  t->base->cls);
	if ((uint64_t)t->base->size * 2 != t->size)
		return h5_err_set(H5_ERR_FORMAT,
				  "datatype message: complex size %u is not twice its parts' size %u",
				  t->size, t->base->size);
	t->big_endian = t->base->big_endian;
	return 0;
}

static int decode_props(h5_dtype *t, h5_rd *r, unsigned depth)
{
	size_t tag_len;
	const uint8_t *tag;
	int ret = 0;

	switch (t->cls) {
	case H5T_INTEGER:
	case H5T_BITFIELD:
		t->big_endian = (t->bits & DT_ORDER_BE) != 0;
		t->is_signed = t->cls == H5T_INTEGER && (t->bits & 0x08);
		t->bit_offset = h5_rd_u16(r);
		t->precision = h5_rd_u16(r);
		if (h5_rd_ok(r))
			ret = check_bits(t, t->cls == H5T_INTEGER ? "integer" : "bit field");
		break;
	case H5T_FLOAT:
		ret = decode_float(t, r);
		break;
	case H5T_TIME:
		t->big_endian = (t->bits & DT_ORDER_BE) != 0;
		t->precision = h5_rd_u16(r);
		break;
	case H5T_STRING:
		t->str_pad = t->bits & 0x0f;
		t->cset = (t->bits >> 4) & 0x0f;
		break;
	case H5T_OPAQUE:
		/* The tag length in the bit field already includes the NUL padding. */
		tag_len = t->bits & 0xff;
		tag = h5_rd_bytes(r, tag_len);
		if (!tag)
			break;
		while (tag_len > 0 && tag[tag_len - 1] == '\0')
			tag_len--;
		t->tag = malloc(tag_len + 1);
		if (!t->tag)
			return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
		memcpy(t->tag, tag, tag_len);
		t->tag[tag_len] = '\0';
		break;
	case H5T_COMPOUND:
		ret = decode_compound(t, r, depth);
		break;
	case H5T_REFERENCE:
		t->ref_type = t->bits & 0x0f;
		break;
	case H5T_ENUM:
		ret = decode_enum(t, r, depth);
		break;
	case H5T_VLEN:
		t->vlen_type = t->bits & 0x0f;
		if (t->vlen_type > 1)
			return h5_err_set(H5_ERR_FORMAT, "datatype message: unknown variable-length type %u",
					  t->vlen_type);
		if (t->vlen_type == 1) {
			t->str_pad = (t->bits >> 4) & 0x0f;
			t->cset = (t->bits >> 8) & 0x0f;
		}
		ret = decode_type(&t->base, r, depth + 1);
		break;
	case H5T_ARRAY:
		ret = decode_array(t, r, depth);
		break;
	case H5T_COMPLEX:
		ret = decode_complex(t, r, depth);
		break;
	default:
		return h5_err_set(H5_ERR_FORMAT, "datatype message: unknown class %d", t->cls);
	}
	if (ret == 0 && !h5_rd_ok(r))
		ret = h5_err_set(H5_ERR_FORMAT, "datatype message: class %d properties truncated", t->cls);
	return ret;
}

/* memset called through a pointer the compiler does not follow: gcc -O2
 * makes a malloc and a memset of it to 0 a calloc (decode_type) */
static void *(*volatile dtype_zero)(void *, int, size_t) = memset;

/* depth counts the types on the path from the outermost one (depth 1). */
static int decode_type(h5_dtype **out, h5_rd *r, unsigned depth)
{
	h5_dtype *t = NULL;
	uint8_t cv;
	int ret;

	*out = NULL;
	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "datatype message: nested deeper than %d levels",
				  H5_MAX_DTYPE_DEPTH);
	/* malloc and memset, not calloc: glibc's calloc (before 2.41) takes
	 * no chunk from the per-thread cache, and a listing decodes one
	 * type per dataset (400 instructions a calloc of these 232 bytes
	 * against ~60: 3.6% of a cold walk's daemon instructions, issue 82) */
	t = malloc(sizeof(*t));
	if (!t)
		return h5_err_set(H5_ERR_NOMEM, "datatype message: out of memory");
	dtype_zero(t, 0, sizeof(*t));
	cv = h5_rd_u8(r);
	t->bits = (uint32_t)h5_rd_uint(r, 3);
	t->size = h5_rd_u32(r);
	if (!h5_rd_ok(r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "datatype message: truncated at byte %zu", rd_pos(r));
		goto out;
	}
	t->cls = (h5_tclass)(cv & 0x0f);
	t->version = cv >> 4;
	/* Version 5 (HDF5 2.x, format 4.0) encodes every class as version 3
	 * does; it is required only by the complex class (IV.A.2.d). */
	if (t->version < 1 || t->version > 5) {
		ret = h5_err_set(H5_ERR_FORMAT, "datatype message: bad version %u", t->version);
		goto out;
	}
	if (t->size == 0) {
		ret = h5_err_set(H5_ERR_FORMAT, "datatype message: class %d with size 0", t->cls);
		goto out;
	}
	ret = decode_props(t, r, depth);
out:
	if (ret < 0) {
		h5_dtype_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

int h5_dtype_decode(h5_dtype **out, const uint8_t *buf, size_t len, size_t *used)
{
	h5_rd r;
	int ret;

	h5_rd_init(&r, buf, len);
	ret = decode_type(out, &r, 1);
	if (used)
		*used = ret < 0 ? 0 : r.pos;
	return ret;
}

/* Whether any part of t is variable-length (such a dataset reads as
 * text), or with regions also a dataset region reference (both point
 * into the global heap, III.E). */
static bool has_vlen_at(const h5_dtype *t, unsigned depth, bool regions)
{
	size_t i;

	if (!t || depth > H5_MAX_DTYPE_DEPTH)
		return false;
	if (t->cls == H5T_VLEN || (regions && t->cls == H5T_REFERENCE && t->ref_type == 1))
		return true;
	if (t->cls == H5T_COMPOUND) {
		for (i = 0; i < t->nmembers; i++)
			if (t->members && has_vlen_at(t->members[i].type, depth + 1, regions))
				return true;
	}
	return (t->cls == H5T_ARRAY || t->cls == H5T_ENUM) && has_vlen_at(t->base, depth + 1, regions);
}

bool h5_dtype_has_vlen(const h5_dtype *t)
{
	return has_vlen_at(t, 0, false);
}

bool h5_dtype_has_heap_refs(const h5_dtype *t)
{
	return has_vlen_at(t, 0, true);
}
