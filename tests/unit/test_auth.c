/* test_auth.c — entity names, key derivation, keyring files (modes,
 * malformed lines, rotation), the handshake's proofs, and the monitors'
 * rules of who may do what. */
#include "auth/auth.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char dir[] = "/tmp/tsr-test-auth-XXXXXX";

static void
path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void
write_file(const char *name, mode_t mode, const char *text)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

static int
load(const char *name, const char *who, struct tsr_auth **a, char *err, size_t len)
{
	char p[256];

	path_of(p, sizeof(p), name);
	*a = NULL;
	return tsr_auth_load(p, who, a, err, len);
}

START_TEST(names)
{
	const char *why;

	ck_assert(tsr_auth_name_valid("mon.a", NULL));
	ck_assert(tsr_auth_name_valid("osd.12", NULL));
	ck_assert(tsr_auth_name_valid("client.admin", NULL));
	ck_assert(tsr_auth_name_valid("mds.m_0-x", NULL));
	ck_assert(!tsr_auth_name_valid("admin", &why));
	ck_assert_ptr_nonnull(strstr(why, "TYPE.ID"));
	ck_assert(!tsr_auth_name_valid("tool.1", &why));
	ck_assert(!tsr_auth_name_valid("osd.", &why));
	ck_assert(!tsr_auth_name_valid("osd.a b", &why));
	ck_assert(!tsr_auth_name_valid("osd.\xff", &why));
	ck_assert(!tsr_auth_name_valid(NULL, &why));
	ck_assert(tsr_auth_is("osd.3", "osd", "3"));
	ck_assert(!tsr_auth_is("osd.31", "osd", "3"));
	ck_assert(!tsr_auth_is("osdx3", "osd", "3"));
	ck_assert(!tsr_auth_is(NULL, "osd", "3"));
}
END_TEST

START_TEST(derive)
{
	uint8_t s1[32], s2[32], k1[32], k2[32], k3[32], k4[32];

	tsr_auth_secret_new(s1);
	tsr_auth_secret_new(s2);
	ck_assert(memcmp(s1, s2, 32) != 0);
	tsr_auth_derive(s1, "osd.3", k1);
	tsr_auth_derive(s1, "osd.3", k2);
	tsr_auth_derive(s1, "osd.4", k3);
	tsr_auth_derive(s2, "osd.3", k4);
	ck_assert(memcmp(k1, k2, 32) == 0);  /* deterministic */
	ck_assert(memcmp(k1, k3, 32) != 0);  /* per name */
	ck_assert(memcmp(k1, k4, 32) != 0);  /* per secret */
	ck_assert(memcmp(k1, s1, 32) != 0);
}
END_TEST

/* A fixed handshake over a's and b's keys: does the acceptor take the
 * connector's proof, and the connector the acceptor's? */
static int
handshake_to(const struct tsr_auth *acc, const struct tsr_auth *con,
	     const char *claimed, const char *target)
{
	static const uint8_t fsid[16] = "tessera-test-fs";
	uint8_t cn[32], sn[32], proof[32], reply[32];
	struct tsr_auth_hs hs;

	tsr_auth_random(cn, sizeof(cn));
	tsr_auth_random(sn, sizeof(sn));
	/* the connector proves over the target it dialed; the acceptor
	 * checks over its own name */
	hs = (struct tsr_auth_hs){ fsid, tsr_auth_name(con),
				   target ? target : tsr_auth_name(acc), cn, sn };
	tsr_auth_connector_proof(con, &hs, proof);
	hs.name = claimed ? claimed : tsr_auth_name(con);
	hs.target = tsr_auth_name(acc);
	if (tsr_auth_accept(acc, &hs, proof, reply) < 0)
		return -1;
	hs.name = tsr_auth_name(con);
	if (tsr_auth_check_acceptor(con, &hs, reply) < 0)
		return -2;
	/* neither proof works as the other (a reflected proof) */
	ck_assert_int_eq(tsr_auth_check_acceptor(con, &hs, proof), -EACCES);
	return 0;
}

static int
handshake(const struct tsr_auth *acc, const struct tsr_auth *con,
	  const char *claimed)
{
	return handshake_to(acc, con, claimed, NULL);
}

START_TEST(proofs)
{
	uint8_t s1[32], s2[32], k[32];
	struct tsr_auth *mon, *osd, *wrong, *other_mon;

	tsr_auth_secret_new(s1);
	tsr_auth_secret_new(s2);
	ck_assert_int_eq(tsr_auth_from_secret(s1, "mon.a", &mon), 0);
	ck_assert(tsr_auth_has_secret(mon));
	tsr_auth_derive(s1, "osd.3", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &osd), 0);
	ck_assert(!tsr_auth_has_secret(osd));
	tsr_auth_derive(s2, "osd.3", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &wrong), 0);
	ck_assert_int_eq(tsr_auth_from_secret(s2, "mon.b", &other_mon), 0);

	ck_assert_int_eq(handshake(mon, osd, NULL), 0);
	ck_assert_int_eq(handshake(mon, mon, NULL), 0);     /* monitor to monitor */
	ck_assert_int_eq(handshake(mon, wrong, NULL), -1);  /* another secret */
	ck_assert_int_eq(handshake(other_mon, osd, NULL), -1);
	ck_assert_int_eq(handshake(mon, osd, "osd.4"), -1); /* claims another name */
	ck_assert_int_eq(handshake(osd, osd, NULL), 0);     /* its own name only */
	/* a proof made for another monitor, relayed to this one */
	ck_assert_int_eq(handshake_to(mon, osd, NULL, "mon.b"), -1);
	{
		const char *why;
		ck_assert_int_eq(tsr_auth_can_check(osd, "osd.4", &why), -ENOKEY);
		ck_assert_ptr_nonnull(strstr(why, "no service key yet"));
		ck_assert_int_eq(tsr_auth_can_check(mon, "osd.4", &why), 0);
		ck_assert_int_eq(tsr_auth_can_check(mon, "nobody", &why), -ENOKEY);
	}
	tsr_auth_destroy(mon);
	tsr_auth_destroy(osd);
	tsr_auth_destroy(wrong);
	tsr_auth_destroy(other_mon);
}
END_TEST

START_TEST(keyring_files)
{
	char p[256], err[512];
	uint8_t s[2][32], got[2][32], k[32];
	struct tsr_auth *a, *b;
	struct stat st;

	tsr_auth_secret_new(s[0]);
	tsr_auth_secret_new(s[1]);
	/* written 0600, never over an existing file */
	path_of(p, sizeof(p), "mon.keyring");
	unlink(p);
	ck_assert_int_eq(tsr_auth_keyring_write(p, s, 1, NULL, NULL, false, err,
						sizeof(err)), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(tsr_auth_keyring_write(p, s, 1, NULL, NULL, false, err,
						sizeof(err)), -EEXIST);
	ck_assert_int_eq(load("mon.keyring", "mon.a", &a, err, sizeof(err)), 0);
	ck_assert(tsr_auth_has_secret(a));
	ck_assert_int_eq(tsr_auth_secrets(a, got), 1);
	ck_assert(memcmp(got[0], s[0], 32) == 0);
	tsr_auth_destroy(a);
	/* an entity's keyring: its key only, and only its own name */
	tsr_auth_derive(s[0], "osd.3", k);
	path_of(p, sizeof(p), "osd.keyring");
	unlink(p);
	ck_assert_int_eq(tsr_auth_keyring_write(p, NULL, 0, "osd.3", k, false, err,
						sizeof(err)), 0);
	ck_assert_int_eq(load("osd.keyring", "osd.3", &b, err, sizeof(err)), 0);
	ck_assert(!tsr_auth_has_secret(b));
	ck_assert_int_eq(load("osd.keyring", "osd.4", &a, err, sizeof(err)) , -ENOKEY);
	ck_assert_ptr_nonnull(strstr(err, "no key for osd.4"));
	ck_assert_ptr_null(a);
	/* what the files hold works together */
	ck_assert_int_eq(load("mon.keyring", "mon.a", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(handshake(a, b, NULL), 0);
	tsr_auth_destroy(a);
	tsr_auth_destroy(b);
}
END_TEST

START_TEST(keyring_refusals)
{
	char err[512], p[256];
	struct tsr_auth *a;
	char good[200];
	uint8_t s[32];

	tsr_auth_secret_new(s);
	snprintf(good, sizeof(good), "secret %064x\n", 0);
	/* readable by others: refused, with the fix */
	write_file("open.keyring", 0644, good);
	ck_assert_int_eq(load("open.keyring", "mon.a", &a, err, sizeof(err)), -EACCES);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	/* missing: ENOENT, pointing to how to make one */
	ck_assert_int_eq(load("none.keyring", "mon.a", &a, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "tessera auth"));
	/* malformed lines name their line */
	write_file("bad1.keyring", 0600, "# ok\n\nsecret 1234\n");
	ck_assert_int_eq(load("bad1.keyring", "mon.a", &a, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad1.keyring:3:"));
	write_file("bad2.keyring", 0600, "key osd.x/y 00\n");
	ck_assert_int_eq(load("bad2.keyring", "mon.a", &a, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, ":1:"));
	write_file("bad3.keyring", 0600, "password hunter2\n");
	ck_assert_int_eq(load("bad3.keyring", "mon.a", &a, err, sizeof(err)), -EINVAL);
	write_file("bad4.keyring", 0600, "secret "
		   "zz00000000000000000000000000000000000000000000000000000000000000\n");
	ck_assert_int_eq(load("bad4.keyring", "mon.a", &a, err, sizeof(err)), -EINVAL);
	/* three secrets: at most two */
	{
		char three[700];
		snprintf(three, sizeof(three), "%s%s%s", good, good, good);
		write_file("three.keyring", 0600, three);
		ck_assert_int_eq(load("three.keyring", "mon.a", &a, err, sizeof(err)),
				 -EINVAL);
	}
	/* a directory, and a name that is not one */
	path_of(p, sizeof(p), "adir");
	mkdir(p, 0700);
	ck_assert_int_eq(load("adir", "mon.a", &a, err, sizeof(err)), -EINVAL);
	write_file("ok.keyring", 0600, good);
	ck_assert_int_eq(load("ok.keyring", "bob", &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(load("ok.keyring", "mon.a", &a, err, sizeof(err)), 0);
	tsr_auth_destroy(a);
}
END_TEST

/* Rotation: during it the monitors hold two secrets and take keys of
 * either; the first derives their own. */
START_TEST(rotation)
{
	uint8_t s[2][32], k[32];
	char p[256], err[512];
	struct tsr_auth *mon, *old_osd, *new_osd, *mon_new_only;

	tsr_auth_secret_new(s[0]);
	tsr_auth_secret_new(s[1]);
	path_of(p, sizeof(p), "rot.keyring");
	unlink(p);
	ck_assert_int_eq(tsr_auth_keyring_write(p, s, 2, NULL, NULL, false, err,
						sizeof(err)), 0);
	ck_assert_int_eq(load("rot.keyring", "mon.a", &mon, err, sizeof(err)), 0);
	tsr_auth_derive(s[0], "osd.1", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.1", k, &old_osd), 0);
	tsr_auth_derive(s[1], "osd.1", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.1", k, &new_osd), 0);
	ck_assert_int_eq(tsr_auth_from_secret(s[1], "mon.b", &mon_new_only), 0);
	ck_assert_int_eq(handshake(mon, old_osd, NULL), 0);
	ck_assert_int_eq(handshake(mon, new_osd, NULL), 0);
	ck_assert_int_eq(handshake(mon_new_only, old_osd, NULL), -1);
	/* a monitor with both proves itself with the first */
	ck_assert_int_eq(handshake(mon_new_only, mon, NULL), -1);
	ck_assert_int_eq(handshake(mon, mon_new_only, NULL), 0);
	tsr_auth_destroy(mon);
	tsr_auth_destroy(old_osd);
	tsr_auth_destroy(new_osd);
	tsr_auth_destroy(mon_new_only);
}
END_TEST

/* OSDs check each other with the service keys the monitors seal for each:
 * none before (refused, saying why), both ways after; a sealed set opens
 * only for the OSD it was sealed for, and only from this cluster's
 * monitors; tampering and truncation are refused; other pairs (an OSD to
 * a monitor, a client to an OSD) keep their rules; after a rotation an
 * OSD that still has only the old key is checked by one that has both. */
START_TEST(osd_service_keys)
{
	uint8_t s1[32], s2[32], k[32], blob[TSR_AUTH_SEALED_MAX], bad[TSR_AUTH_SEALED_MAX];
	uint8_t both[2][32];
	struct tsr_auth *mon, *mon2, *other, *o3, *o4, *o9, *cl;
	size_t len = 0, len2 = 0;
	char err[256];
	const char *why;

	tsr_auth_secret_new(s1);
	tsr_auth_secret_new(s2);
	ck_assert_int_eq(tsr_auth_from_secret(s1, "mon.a", &mon), 0);
	ck_assert_int_eq(tsr_auth_from_secret(s2, "mon.a", &other), 0);
	tsr_auth_derive(s1, "osd.3", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &o3), 0);
	tsr_auth_derive(s1, "osd.4", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.4", k, &o4), 0);
	tsr_auth_derive(s1, "client.x", k);
	ck_assert_int_eq(tsr_auth_from_key("client.x", k, &cl), 0);

	/* before the monitors gave them anything */
	ck_assert_int_eq(tsr_auth_service_count(o4), 0);
	ck_assert_int_eq(tsr_auth_service_count(mon), 1);
	ck_assert_int_eq(tsr_auth_can_check(o4, "osd.3", &why), -ENOKEY);
	ck_assert_ptr_nonnull(strstr(why, "no service key yet"));
	ck_assert_int_eq(handshake(o4, o3, NULL), -1);

	/* sealing: only a monitor, only for an OSD, a client or an MDS */
	ck_assert_int_eq(tsr_auth_service_seal(o3, "osd.3", blob, sizeof(blob), &len), -EINVAL);
	ck_assert_int_eq(tsr_auth_service_seal(mon, "mon.b", blob, sizeof(blob), &len), -EINVAL);
	ck_assert_int_eq(tsr_auth_service_seal(mon, "osd.3", blob, 10, &len), -ENOSPC);
	/* osd.3's set does not open for osd.4, nor another cluster's for osd.3 */
	ck_assert_int_eq(tsr_auth_service_seal(mon, "osd.3", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o4, blob, len, err, sizeof(err)), -EACCES);
	ck_assert_ptr_nonnull(strstr(err, "osd.4"));
	ck_assert_int_eq(tsr_auth_service_seal(other, "osd.3", bad, sizeof(bad), &len2), 0);
	ck_assert_int_eq(tsr_auth_service_open(o3, bad, len2, err, sizeof(err)), -EACCES);
	/* a flipped bit anywhere, a short or a long one */
	for (size_t i = 0; i < len; i++) {
		memcpy(bad, blob, len);
		bad[i] ^= 0x10;
		/* the copy count (byte 0) no longer fits the length */
		ck_assert_int_eq(tsr_auth_service_open(o3, bad, len, err, sizeof(err)),
				 i == 0 ? -EBADMSG : -EACCES);
	}
	ck_assert_int_eq(tsr_auth_service_open(o3, blob, 30, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_auth_service_open(o3, blob, len - 1, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_auth_service_open(o3, blob, 0, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(tsr_auth_service_count(o3), 0);

	ck_assert_int_eq(tsr_auth_service_open(o3, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_auth_service_seal(mon, "osd.4", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o4, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_auth_service_count(o3), 1);
	ck_assert_int_eq(handshake(o4, o3, NULL), 0);
	ck_assert_int_eq(handshake(o3, o4, NULL), 0);
	ck_assert_int_eq(handshake(o3, o4, "osd.5"), -1);  /* claims another OSD */
	/* the other rules hold: OSDs to a monitor; a client with no key
	 * from the monitors yet is refused by an OSD */
	ck_assert_int_eq(handshake(mon, o3, NULL), 0);
	ck_assert_int_eq(handshake(o4, cl, NULL), -1);
	ck_assert_int_eq(handshake(cl, o4, NULL), -1);  /* an OSD to a client */
	/* an OSD of another cluster, with that cluster's service key */
	tsr_auth_derive(s2, "osd.9", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.9", k, &o9), 0);
	ck_assert_int_eq(tsr_auth_service_seal(other, "osd.9", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o9, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(handshake(o4, o9, NULL), -1);

	/* rotation: the new secret first, the old still accepted */
	memcpy(both[0], s2, 32);
	memcpy(both[1], s1, 32);
	{
		char p[256];
		path_of(p, sizeof(p), "rot.keyring");
		unlink(p);
		ck_assert_int_eq(tsr_auth_keyring_write(p, (const uint8_t (*)[32])both, 2,
							NULL, NULL, false, err,
							sizeof(err)), 0);
		ck_assert_int_eq(tsr_auth_load(p, "mon.b", &mon2, err, sizeof(err)), 0);
	}
	ck_assert_int_eq(tsr_auth_service_seal(mon2, "osd.4", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o4, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_auth_service_count(o4), 2);
	ck_assert_int_eq(handshake(o4, o3, NULL), 0);   /* o3 still on the old */
	ck_assert_int_eq(handshake(o3, o4, NULL), -1);  /* o4 proves the new */

	tsr_auth_destroy(mon);
	tsr_auth_destroy(mon2);
	tsr_auth_destroy(other);
	tsr_auth_destroy(o3);
	tsr_auth_destroy(o4);
	tsr_auth_destroy(o9);
	tsr_auth_destroy(cl);
}
END_TEST

/* A client (and an MDS) reaches OSDs with its own key under the service
 * secret, which the monitors seal for it: it opens for that client only;
 * with it the client and the OSD check each other both ways; it proves
 * that client and no other, nor an OSD; the client never holds the
 * service secret itself (it cannot check another client, nor act as an
 * OSD toward OSDs); after a rotation the OSD takes the key under either
 * secret. */
START_TEST(client_service_keys)
{
	uint8_t s1[32], s2[32], k[32], blob[TSR_AUTH_SEALED_MAX];
	struct tsr_auth *mon, *mon2, *o3, *cl, *cl2, *md;
	size_t len = 0;
	char err[256];

	tsr_auth_secret_new(s1);
	tsr_auth_secret_new(s2);
	ck_assert_int_eq(tsr_auth_from_secret(s1, "mon.a", &mon), 0);
	tsr_auth_derive(s1, "osd.3", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &o3), 0);
	tsr_auth_derive(s1, "client.x", k);
	ck_assert_int_eq(tsr_auth_from_key("client.x", k, &cl), 0);
	tsr_auth_derive(s1, "client.y", k);
	ck_assert_int_eq(tsr_auth_from_key("client.y", k, &cl2), 0);
	tsr_auth_derive(s1, "mds.a", k);
	ck_assert_int_eq(tsr_auth_from_key("mds.a", k, &md), 0);
	ck_assert_int_eq(tsr_auth_service_seal(mon, "osd.3", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o3, blob, len, err, sizeof(err)), 0);

	ck_assert_int_eq(handshake(o3, cl, NULL), -1);
	ck_assert_int_eq(tsr_auth_service_seal(mon, "client.x", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(cl2, blob, len, err, sizeof(err)), -EACCES);
	ck_assert_int_eq(tsr_auth_service_open(cl, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_auth_service_count(cl), 1);
	ck_assert_int_eq(handshake(o3, cl, NULL), 0);
	ck_assert_int_eq(handshake(o3, cl, "client.y"), -1); /* claims another */
	ck_assert_int_eq(handshake(o3, cl, "osd.4"), -1);    /* claims an OSD */
	ck_assert_int_eq(handshake(mon, cl, NULL), 0);       /* monitors: K(name) */
	ck_assert_int_eq(handshake(cl, cl2, NULL), -1);      /* no secret to check */
	ck_assert_int_eq(handshake(o3, cl2, NULL), -1);      /* none of its own */

	ck_assert_int_eq(tsr_auth_service_seal(mon, "mds.a", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(md, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(handshake(o3, md, NULL), 0);

	/* rotation: monitors with both seal the client a key under each; an
	 * OSD with only the old service secret still takes it */
	{
		uint8_t both[2][32];
		memcpy(both[0], s2, 32);
		memcpy(both[1], s1, 32);
		char p[256];
		path_of(p, sizeof(p), "rot2.keyring");
		unlink(p);
		ck_assert_int_eq(tsr_auth_keyring_write(p, (const uint8_t (*)[32])both, 2,
							NULL, NULL, false, err,
							sizeof(err)), 0);
		ck_assert_int_eq(tsr_auth_load(p, "mon.b", &mon2, err, sizeof(err)), 0);
	}
	ck_assert_int_eq(tsr_auth_service_seal(mon2, "client.x", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(cl, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_auth_service_count(cl), 2);
	ck_assert_int_eq(handshake(o3, cl, NULL), -1);  /* proves the new one first */
	ck_assert_int_eq(tsr_auth_service_seal(mon2, "osd.3", blob, sizeof(blob), &len), 0);
	ck_assert_int_eq(tsr_auth_service_open(o3, blob, len, err, sizeof(err)), 0);
	ck_assert_int_eq(handshake(o3, cl, NULL), 0);

	tsr_auth_destroy(mon);
	tsr_auth_destroy(mon2);
	tsr_auth_destroy(o3);
	tsr_auth_destroy(cl);
	tsr_auth_destroy(cl2);
	tsr_auth_destroy(md);
}
END_TEST

START_TEST(capabilities)
{
	ck_assert(tsr_auth_may("mon.a", TSR_CAP_MON));
	ck_assert(tsr_auth_may("mon.a", TSR_CAP_CHANGE));
	ck_assert(tsr_auth_may("client.admin", TSR_CAP_CHANGE));
	ck_assert(tsr_auth_may("client.admin", TSR_CAP_READ));
	ck_assert(!tsr_auth_may("client.admin", TSR_CAP_MON));
	ck_assert(!tsr_auth_may("client.bob", TSR_CAP_CHANGE));
	ck_assert(tsr_auth_may("client.bob", TSR_CAP_READ));
	ck_assert(!tsr_auth_may("osd.3", TSR_CAP_CHANGE));
	ck_assert(!tsr_auth_may("osd.3", TSR_CAP_MON));
	ck_assert(!tsr_auth_may(NULL, TSR_CAP_READ));
	ck_assert(!tsr_auth_may("mon", TSR_CAP_READ));
}
END_TEST

static int
rm_tree(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int
main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");
	SRunner *sr;
	int failed;

	if (mkdtemp(dir) == NULL)
		return EXIT_FAILURE;
	umask(022);
	tcase_add_test(tc, names);
	tcase_add_test(tc, derive);
	tcase_add_test(tc, proofs);
	tcase_add_test(tc, keyring_files);
	tcase_add_test(tc, keyring_refusals);
	tcase_add_test(tc, rotation);
	tcase_add_test(tc, osd_service_keys);
	tcase_add_test(tc, client_service_keys);
	tcase_add_test(tc, capabilities);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rm_tree();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
