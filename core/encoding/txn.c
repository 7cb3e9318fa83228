/* txn.c — validating, encoding and decoding backend transactions. */
#include <tessera/txn.h>

#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The smallest encoded op: every fixed field plus five empty byte
 * strings.  A count is checked against it before anything is allocated. */
#define MIN_OP_BYTES (4 + 4 + 8 + 4 + 4 + 4 + 8 + 8 + 4 + 4 + 4 + 4 + 8)

const char *
tsr_txn_op_name(uint32_t type)
{
	switch (type) {
#define X(up, low, val) case TSR_TXN_##up: return #low;
	TSR_TXN_OP_MAP(X)
#undef X
	}
	return NULL;
}

static bool
is_coll_op(uint32_t type)
{
	return type == TSR_TXN_MKCOLL || type == TSR_TXN_RMCOLL;
}

static bool
adds_overflow(uint64_t a, uint64_t b)
{
	return a + b < a;
}

static int
check_op(const struct tsr_txn_op *op, uint32_t i, char *err, size_t errlen)
{
	const char *name = tsr_txn_op_name(op->type);

	if (name == NULL)
		return tsr_errf(err, errlen, -EOPNOTSUPP,
				"op %u: unknown type %u", i, op->type);
	if ((op->flags & ~TSR_TXN_F_DATA_HELD) != 0 || op->reserved[0] != 0 ||
	    op->reserved[1] != 0)
		return tsr_errf(err, errlen, -EOPNOTSUPP,
				"op %u (%s): unknown flags or reserved words set",
				i, name);
	if ((op->flags & TSR_TXN_F_DATA_HELD) && op->type != TSR_TXN_WRITE)
		return tsr_errf(err, errlen, -EINVAL,
				"op %u (%s): data-held flag on an op without data",
				i, name);
	if ((op->oid_len && op->oid == NULL) || (op->key_len && op->key == NULL) ||
	    (op->val_len && op->val == NULL) || (op->oid2_len && op->oid2 == NULL))
		return tsr_errf(err, errlen, -EINVAL,
				"op %u (%s): a length without its buffer", i, name);
	if (op->oid_len > TSR_TXN_MAX_NAME || op->oid2_len > TSR_TXN_MAX_NAME ||
	    op->key_len > TSR_TXN_MAX_NAME)
		return tsr_errf(err, errlen, -ENAMETOOLONG,
				"op %u (%s): a name or key longer than %u bytes",
				i, name, TSR_TXN_MAX_NAME);
	if (op->val_len > TSR_TXN_MAX_VALUE)
		return tsr_errf(err, errlen, -E2BIG,
				"op %u (%s): a value longer than %u bytes", i,
				name, TSR_TXN_MAX_VALUE);
	if (is_coll_op(op->type)) {
		if (op->oid_len != 0)
			return tsr_errf(err, errlen, -EINVAL,
					"op %u (%s): a collection op names no object",
					i, name);
		return 0;
	}
	if (op->oid_len == 0)
		return tsr_errf(err, errlen, -EINVAL,
				"op %u (%s): empty object name", i, name);
	switch (op->type) {
	case TSR_TXN_WRITE:
		if (op->len > TSR_TXN_MAX_DATA)
			return tsr_errf(err, errlen, -E2BIG,
					"op %u (write): %llu bytes, more than %u in one write",
					i, (unsigned long long)op->len, TSR_TXN_MAX_DATA);
		if (op->len && op->data == NULL)
			return tsr_errf(err, errlen, -EINVAL,
					"op %u (write): no data", i);
		__attribute__((fallthrough)); /* the range must not wrap */
	case TSR_TXN_ZERO:
		if (adds_overflow(op->off, op->len))
			return tsr_errf(err, errlen, -EOVERFLOW,
					"op %u (%s): offset + length overflows", i, name);
		break;
	case TSR_TXN_SETATTR:
	case TSR_TXN_RMATTR:
		if (op->key_len == 0)
			return tsr_errf(err, errlen, -EINVAL,
					"op %u (%s): empty attribute name", i, name);
		break;
	case TSR_TXN_CLONE_RANGE:
		if (adds_overflow(op->off, op->len) || adds_overflow(op->off2, op->len))
			return tsr_errf(err, errlen, -EOVERFLOW,
					"op %u (clone_range): offset + length overflows", i);
		__attribute__((fallthrough));
	case TSR_TXN_CLONE:
		if (op->oid2_len == 0)
			return tsr_errf(err, errlen, -EINVAL,
					"op %u (%s): no destination object", i, name);
		break;
	default:
		break;
	}
	return 0;
}

int
tsr_txn_validate(const struct tsr_txn *txn, char *err, size_t errlen)
{
	if (txn->nops > TSR_TXN_MAX_OPS)
		return tsr_errf(err, errlen, -E2BIG,
				"%u ops in one transaction, more than %u",
				txn->nops, TSR_TXN_MAX_OPS);
	if (txn->nops && txn->ops == NULL)
		return tsr_errf(err, errlen, -EINVAL, "ops missing");
	for (uint32_t i = 0; i < txn->nops; i++) {
		int rc = check_op(&txn->ops[i], i, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int
tsr_txn_encode(const struct tsr_txn *txn, struct tsr_enc *e, char *err,
	       size_t errlen)
{
	int rc = tsr_txn_validate(txn, err, errlen);

	if (rc < 0)
		return rc;
	size_t mark = tsr_enc_begin_struct(e, 1, 1);
	tsr_enc_u32(e, txn->nops);
	for (uint32_t i = 0; i < txn->nops; i++) {
		const struct tsr_txn_op *op = &txn->ops[i];
		tsr_enc_u32(e, op->type);
		/* the held flag is a promise about the caller's memory,
		 * meaningless once serialized */
		tsr_enc_u32(e, op->flags & ~TSR_TXN_F_DATA_HELD);
		tsr_enc_u64(e, op->cid.pool);
		tsr_enc_u32(e, op->cid.pg);
		tsr_enc_i32(e, op->cid.shard);
		tsr_enc_bytes(e, op->oid, op->oid_len);
		tsr_enc_u64(e, op->off);
		tsr_enc_u64(e, op->len);
		tsr_enc_bytes(e, op->data, op->type == TSR_TXN_WRITE ? op->len : 0);
		tsr_enc_bytes(e, op->key, op->key_len);
		tsr_enc_bytes(e, op->val, op->val_len);
		tsr_enc_bytes(e, op->oid2, op->oid2_len);
		tsr_enc_u64(e, op->off2);
	}
	tsr_enc_end_struct(e, mark);
	rc = tsr_enc_error(e);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "cannot encode the transaction");
	return 0;
}

int
tsr_txn_decode(struct tsr_dec *d, struct tsr_txn *out, char *err, size_t errlen)
{
	struct tsr_txn_op *ops = NULL;
	struct tsr_dec sub;
	uint8_t version;
	uint32_t nops;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tsr_dec_begin_struct(d, 1, &version, &sub);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "transaction envelope: %s",
				rc == -EOPNOTSUPP ? "written by a newer version"
						  : "truncated or malformed");
	nops = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) == 0 &&
	    (nops > TSR_TXN_MAX_OPS || nops > tsr_dec_remaining(&sub) / MIN_OP_BYTES))
		return tsr_errf(err, errlen, -EBADMSG,
				"transaction claims %u ops, more than its %zu bytes can hold",
				nops, tsr_dec_remaining(&sub));
	if (nops > 0) {
		ops = calloc(nops, sizeof(*ops));
		if (ops == NULL)
			return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < nops && tsr_dec_error(&sub) == 0; i++) {
		struct tsr_txn_op *op = &ops[i];
		const void *data;
		size_t dlen;
		op->type = tsr_dec_u32(&sub);
		op->flags = tsr_dec_u32(&sub);
		op->cid.pool = tsr_dec_u64(&sub);
		op->cid.pg = tsr_dec_u32(&sub);
		op->cid.shard = tsr_dec_i32(&sub);
		tsr_dec_bytes(&sub, &op->oid, &op->oid_len, TSR_TXN_MAX_NAME);
		op->off = tsr_dec_u64(&sub);
		op->len = tsr_dec_u64(&sub);
		tsr_dec_bytes(&sub, &data, &dlen, TSR_TXN_MAX_DATA);
		tsr_dec_bytes(&sub, &op->key, &op->key_len, TSR_TXN_MAX_NAME);
		tsr_dec_bytes(&sub, &op->val, &op->val_len, TSR_TXN_MAX_VALUE);
		tsr_dec_bytes(&sub, &op->oid2, &op->oid2_len, TSR_TXN_MAX_NAME);
		op->off2 = tsr_dec_u64(&sub);
		if (tsr_dec_error(&sub) != 0)
			break;
		/* no flag is defined for the serialized form; a peer setting
		 * the held flag would make us promise memory we free */
		if (op->flags != 0) {
			uint32_t fl = op->flags;
			free(ops);
			return tsr_errf(err, errlen, -EBADMSG,
					"op %u: flags 0x%x set in a serialized transaction",
					i, fl);
		}
		/* a write carries exactly its length in data, nothing else
		 * carries data: so a record cannot smuggle bytes */
		if (dlen != (op->type == TSR_TXN_WRITE ? op->len : 0)) {
			const char *name = tsr_txn_op_name(op->type);
			unsigned long long oplen = (unsigned long long)op->len;
			free(ops);
			return tsr_errf(err, errlen, -EBADMSG,
					"op %u: %zu bytes of data for a %s of %llu",
					i, dlen, name ? name : "op", oplen);
		}
		op->data = dlen ? data : NULL;
	}
	rc = tsr_dec_end_struct(d, &sub);
	if (rc < 0) {
		free(ops);
		return tsr_errf(err, errlen, rc, "transaction: truncated or malformed op");
	}
	out->nops = nops;
	out->ops = ops;
	rc = tsr_txn_validate(out, err, errlen);
	if (rc < 0) {
		tsr_txn_decoded_free(out);
		return rc;
	}
	return 0;
}

void
tsr_txn_decoded_free(struct tsr_txn *txn)
{
	free((void *)txn->ops);
	txn->ops = NULL;
	txn->nops = 0;
}
