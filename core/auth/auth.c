/* auth.c — keys, keyrings and handshake proofs (see auth.h). */
#include "auth/auth.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The service keys a daemon got from the monitors: set on its loop,
 * read by handshakes on the messenger's threads. */
struct svc_box {
	pthread_mutex_t mu;
	int n;                             /* 0 .. TSR_AUTH_MAX_SECRETS */
	uint8_t key[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	/* the MDSs' domain: an MDS's service secrets, a client's own keys */
	int nm;
	uint8_t mkey[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
};

struct tsr_auth {
	char name[TSR_AUTH_NAME_MAX];
	int nsecrets;
	uint8_t secret[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	uint8_t key[TSR_AUTH_KEY_LEN];     /* K(name), under the first secret */
	struct svc_box *svc;               /* never NULL */
};

static const char *const types[] = { "mon", "osd", "mds", "client" };

/* libsodium must be initialized once before use; sodium_init is
 * thread-safe and idempotent. */
static void
crypto_ready(void)
{
	if (sodium_init() < 0)
		abort(); /* no usable random source: nothing can be secure */
}

bool
tsr_auth_name_valid(const char *name, const char **why)
{
	const char *dot = name ? strchr(name, '.') : NULL;
	const char *w = NULL;
	size_t tl, il;
	bool known = false;

	if (name == NULL || dot == NULL) {
		w = "an entity name is TYPE.ID (mon.a, osd.3, client.admin)";
		goto out;
	}
	tl = (size_t)(dot - name);
	for (size_t i = 0; i < TSR_ARRAY_SIZE(types); i++)
		known |= strlen(types[i]) == tl && memcmp(types[i], name, tl) == 0;
	if (!known) {
		w = "the type must be mon, osd, mds or client";
		goto out;
	}
	il = strlen(dot + 1);
	if (il == 0 || il > 48) {
		w = "the ID must be 1 to 48 characters";
		goto out;
	}
	for (const char *p = dot + 1; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) {
			w = "the ID may hold only letters, digits, '_' and '-'";
			goto out;
		}
	}
out:
	if (why)
		*why = w;
	return w == NULL;
}

void
tsr_auth_random(void *buf, size_t len)
{
	crypto_ready();
	randombytes_buf(buf, len);
}

void
tsr_auth_secret_new(uint8_t out[TSR_AUTH_KEY_LEN])
{
	tsr_auth_random(out, TSR_AUTH_KEY_LEN);
}

void
tsr_auth_derive(const uint8_t secret[TSR_AUTH_KEY_LEN], const char *name,
		uint8_t out[TSR_AUTH_KEY_LEN])
{
	static const char label[] = "tessera entity key v1"; /* with its NUL */
	crypto_generichash_state st;

	crypto_ready();
	crypto_generichash_init(&st, secret, TSR_AUTH_KEY_LEN, TSR_AUTH_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, (const uint8_t *)name, strlen(name));
	crypto_generichash_final(&st, out, TSR_AUTH_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
}

/* ---- Making one ------------------------------------------------------------*/

static struct tsr_auth *
auth_new(const char *name)
{
	struct tsr_auth *a;

	if (!tsr_auth_name_valid(name, NULL))
		return NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if ((a->svc = calloc(1, sizeof(*a->svc))) == NULL) {
		free(a);
		return NULL;
	}
	pthread_mutex_init(&a->svc->mu, NULL);
	snprintf(a->name, sizeof(a->name), "%s", name);
	return a;
}

int
tsr_auth_from_secret(const uint8_t secret[TSR_AUTH_KEY_LEN], const char *name,
		     struct tsr_auth **out)
{
	struct tsr_auth *a = auth_new(name);

	if (a == NULL)
		return tsr_auth_name_valid(name, NULL) ? -ENOMEM : -EINVAL;
	a->nsecrets = 1;
	memcpy(a->secret[0], secret, TSR_AUTH_KEY_LEN);
	tsr_auth_derive(secret, name, a->key);
	*out = a;
	return 0;
}

int
tsr_auth_from_key(const char *name, const uint8_t key[TSR_AUTH_KEY_LEN],
		  struct tsr_auth **out)
{
	struct tsr_auth *a = auth_new(name);

	if (a == NULL)
		return tsr_auth_name_valid(name, NULL) ? -ENOMEM : -EINVAL;
	memcpy(a->key, key, TSR_AUTH_KEY_LEN);
	*out = a;
	return 0;
}

void
tsr_auth_destroy(struct tsr_auth *a)
{
	if (a == NULL)
		return;
	pthread_mutex_destroy(&a->svc->mu);
	sodium_memzero(a->svc, sizeof(*a->svc));
	free(a->svc);
	sodium_memzero(a, sizeof(*a));
	free(a);
}

const char *
tsr_auth_name(const struct tsr_auth *a)
{
	return a->name;
}

bool
tsr_auth_has_secret(const struct tsr_auth *a)
{
	return a->nsecrets > 0;
}

/* ---- Keyring files ---------------------------------------------------------*/

static int
hex_key(const char *s, uint8_t out[TSR_AUTH_KEY_LEN])
{
	size_t bin_len = 0;

	if (strlen(s) != 2 * TSR_AUTH_KEY_LEN)
		return -1;
	if (sodium_hex2bin(out, TSR_AUTH_KEY_LEN, s, strlen(s), NULL, &bin_len,
			   NULL) != 0 || bin_len != TSR_AUTH_KEY_LEN)
		return -1;
	return 0;
}

/* Read the whole file, refusing what a keyring must not be. */
static int
read_keyring(const char *path, char **text, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "keyring %s: %s%s", path, strerror(e),
			 e == ENOENT ? " (each daemon and client needs one: "
			 "see `tessera auth --help` and doc/operations.md, \"Keys\")" : "");
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "keyring %s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "keyring %s: readable or writable by others "
			 "(mode %04o); a key must be readable only by its owner: "
			 "chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -EACCES;
	}
	if ((size_t)st.st_size > TSR_AUTH_KEYRING_MAX) {
		snprintf(err, errlen, "keyring %s: %lld bytes, more than a keyring "
			 "holds (at most %u)", path, (long long)st.st_size,
			 TSR_AUTH_KEYRING_MAX);
		close(fd);
		return -EINVAL;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
		if (n < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			snprintf(err, errlen, "keyring %s: %s", path, strerror(e));
			sodium_memzero(buf, got);
			free(buf);
			close(fd);
			return -e;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*text = buf;
	return 0;
}

int
tsr_auth_load(const char *path, const char *name, struct tsr_auth **out,
	      char *err, size_t errlen)
{
	struct tsr_auth *a;
	const char *why;
	char *text = NULL, *line, *next;
	int rc, lineno = 0, have_key = 0;
	size_t tlen;

	if (!tsr_auth_name_valid(name, &why)) {
		snprintf(err, errlen, "\"%s\" is not an entity name: %s", name, why);
		return -EINVAL;
	}
	if ((rc = read_keyring(path, &text, err, errlen)) < 0)
		return rc;
	if ((a = auth_new(name)) == NULL) {
		free(text);
		return -ENOMEM;
	}
	rc = 0;
	tlen = strlen(text);
	/* line by line (strtok would skip empty lines and miscount) */
	for (line = text; line && *line && rc == 0; line = next) {
		char *w[4] = { NULL }, *p, *s2 = NULL;
		int nw = 0;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		lineno++;
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		for (p = strtok_r(line, " \t\r", &s2); p && nw < 4;
		     p = strtok_r(NULL, " \t\r", &s2))
			w[nw++] = p;
		if (nw == 0)
			continue;
		if (strcmp(w[0], "secret") == 0 && nw == 2) {
			if (a->nsecrets == TSR_AUTH_MAX_SECRETS) {
				snprintf(err, errlen, "keyring %s:%d: more than %d "
					 "secrets", path, lineno, TSR_AUTH_MAX_SECRETS);
				rc = -EINVAL;
			} else if (hex_key(w[1], a->secret[a->nsecrets]) < 0) {
				snprintf(err, errlen, "keyring %s:%d: a secret is %d "
					 "hex digits", path, lineno, 2 * TSR_AUTH_KEY_LEN);
				rc = -EINVAL;
			} else {
				a->nsecrets++;
			}
		} else if (strcmp(w[0], "key") == 0 && nw == 3) {
			uint8_t k[TSR_AUTH_KEY_LEN];
			if (!tsr_auth_name_valid(w[1], &why)) {
				snprintf(err, errlen, "keyring %s:%d: \"%.60s\" is "
					 "not an entity name: %s", path, lineno, w[1], why);
				rc = -EINVAL;
			} else if (hex_key(w[2], k) < 0) {
				snprintf(err, errlen, "keyring %s:%d: a key is %d hex "
					 "digits", path, lineno, 2 * TSR_AUTH_KEY_LEN);
				rc = -EINVAL;
			} else if (strcmp(w[1], name) == 0) {
				memcpy(a->key, k, TSR_AUTH_KEY_LEN);
				have_key = 1;
			}
			sodium_memzero(k, sizeof(k));
		} else {
			snprintf(err, errlen, "keyring %s:%d: expected \"secret HEX\" "
				 "or \"key NAME HEX\"", path, lineno);
			rc = -EINVAL;
		}
	}
	sodium_memzero(text, tlen);
	free(text);
	if (rc == 0 && a->nsecrets > 0 && !have_key)
		tsr_auth_derive(a->secret[0], name, a->key);
	else if (rc == 0 && !have_key) {
		snprintf(err, errlen, "keyring %s: holds no key for %s (and no "
			 "cluster secret)", path, name);
		rc = -ENOKEY;
	}
	if (rc < 0) {
		tsr_auth_destroy(a);
		return rc;
	}
	*out = a;
	return 0;
}

int
tsr_auth_secrets(const struct tsr_auth *a,
		 uint8_t out[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN])
{
	memcpy(out, a->secret, sizeof(a->secret));
	return a->nsecrets;
}

int
tsr_auth_keyring_write(const char *path, const uint8_t (*secrets)[TSR_AUTH_KEY_LEN],
		       int nsecrets, const char *name, const uint8_t *key,
		       bool overwrite, char *err, size_t errlen)
{
	char hex[2 * TSR_AUTH_KEY_LEN + 1];
	FILE *f;
	int fd, rc = 0;

	if (name && !tsr_auth_name_valid(name, NULL)) {
		snprintf(err, errlen, "\"%s\" is not an entity name", name);
		return -EINVAL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			(overwrite ? O_TRUNC : O_EXCL), 0600);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "keyring %s: %s%s", path, strerror(e),
			 e == EEXIST ? " (refusing to overwrite a key)" : "");
		return -e;
	}
	if (fchmod(fd, 0600) < 0 || (f = fdopen(fd, "w")) == NULL) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "keyring %s: %s", path, strerror(e));
		return -e;
	}
	fprintf(f, "# Tessera keyring: keep it readable only by its owner "
		"(mode 0600).\n");
	if (nsecrets > 0)
		fprintf(f, "# The cluster secret: the monitors' alone.%s\n",
			nsecrets > 1 ? "  The first is current; the second\n"
			"# is still accepted while the secret is rotated." : "");
	for (int i = 0; i < nsecrets && i < TSR_AUTH_MAX_SECRETS; i++) {
		sodium_bin2hex(hex, sizeof(hex), secrets[i], TSR_AUTH_KEY_LEN);
		fprintf(f, "secret %s\n", hex);
	}
	if (name && key) {
		sodium_bin2hex(hex, sizeof(hex), key, TSR_AUTH_KEY_LEN);
		fprintf(f, "key %s %s\n", name, hex);
	}
	sodium_memzero(hex, sizeof(hex));
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		snprintf(err, errlen, "keyring %s: %s", path, strerror(-rc));
	return rc;
}

/* ---- Proofs ------------------------------------------------------------------*/

static void
proof(const uint8_t key[TSR_AUTH_KEY_LEN], const char *role,
      const struct tsr_auth_hs *hs, uint8_t out[TSR_AUTH_PROOF_LEN])
{
	static const char label[] = "tessera auth v1";
	crypto_generichash_state st;
	uint8_t nl = (uint8_t)strlen(hs->name), tl = (uint8_t)strlen(hs->target);

	crypto_ready();
	crypto_generichash_init(&st, key, TSR_AUTH_KEY_LEN, TSR_AUTH_PROOF_LEN);
	crypto_generichash_update(&st, (const uint8_t *)role, strlen(role) + 1);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, hs->fsid, 16);
	crypto_generichash_update(&st, &nl, 1);
	crypto_generichash_update(&st, (const uint8_t *)hs->name, nl);
	crypto_generichash_update(&st, &tl, 1);
	crypto_generichash_update(&st, (const uint8_t *)hs->target, tl);
	crypto_generichash_update(&st, hs->cnonce, TSR_AUTH_NONCE_LEN);
	crypto_generichash_update(&st, hs->snonce, TSR_AUTH_NONCE_LEN);
	crypto_generichash_final(&st, out, TSR_AUTH_PROOF_LEN);
	sodium_memzero(&st, sizeof(st));
}

/* ---- Key domains and service keys -----------------------------------------
 *
 * A handshake between two OSDs proves keys derived from the OSDs' service
 * secret, which every OSD gets from the monitors, instead of keys derived
 * from the cluster secret, which only the monitors hold (auth.h). */

static bool
is_type(const char *name, const char *type)
{
	size_t tl = strlen(type);

	return name != NULL && strncmp(name, type, tl) == 0 && name[tl] == '.';
}

/* Do name (the connector) and target (the acceptor) meet in the OSDs'
 * domain?  Every handshake toward an OSD does, from another OSD, a
 * client or an MDS: the OSD checks them all with the service secret. */
static bool
osd_domain(const char *name, const char *target)
{
	return is_type(target, "osd") &&
	       (is_type(name, "osd") || is_type(name, "client") || is_type(name, "mds"));
}

/* The MDSs' domain, the same way: a client or an MDS toward an MDS proves
 * its key under the MDSs' service secret, which MDSs hold. */
static bool
mds_domain(const char *name, const char *target)
{
	return is_type(target, "mds") && (is_type(name, "client") || is_type(name, "mds"));
}

/* The service domain of a handshake from name to target: "osd", "mds",
 * or NULL (keys from the cluster secret). */
static const char *
domain_of(const char *name, const char *target)
{
	return osd_domain(name, target) ? "osd" : mds_domain(name, target) ? "mds" : NULL;
}

void
tsr_auth_service_derive(const uint8_t secret[TSR_AUTH_KEY_LEN], const char *type,
			uint8_t out[TSR_AUTH_KEY_LEN])
{
	static const char label[] = "tessera service key v1"; /* with its NUL */
	crypto_generichash_state st;

	crypto_ready();
	crypto_generichash_init(&st, secret, TSR_AUTH_KEY_LEN, TSR_AUTH_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, (const uint8_t *)type, strlen(type));
	crypto_generichash_final(&st, out, TSR_AUTH_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
}

/* A domain's service keys a holds, current first: derived from its
 * secrets (a monitor), or as the monitors gave them.  How many. */
static int
service_keys(const struct tsr_auth *a, const char *domain,
	     uint8_t out[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN])
{
	int mds = strcmp(domain, "mds") == 0, n;

	if (a->nsecrets > 0) {
		for (int i = 0; i < a->nsecrets; i++)
			tsr_auth_service_derive(a->secret[i], domain, out[i]);
		return a->nsecrets;
	}
	pthread_mutex_lock(&a->svc->mu);
	n = mds ? a->svc->nm : a->svc->n;
	memcpy(out, mds ? a->svc->mkey : a->svc->key, sizeof(a->svc->key));
	pthread_mutex_unlock(&a->svc->mu);
	return n;
}

static int
osd_service_keys(const struct tsr_auth *a,
		 uint8_t out[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN])
{
	return service_keys(a, "osd", out);
}

int
tsr_auth_service_count(const struct tsr_auth *a)
{
	uint8_t k[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	int n = osd_service_keys(a, k);

	sodium_memzero(k, sizeof(k));
	return n;
}

int
tsr_auth_service_count_mds(const struct tsr_auth *a)
{
	uint8_t k[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	int n = service_keys(a, "mds", k);

	sodium_memzero(k, sizeof(k));
	return n;
}

/* The key a proves itself with toward target: K(name), or in the OSDs'
 * domain its key under the current service secret (K(name) when it has
 * none yet: the acceptor then refuses, and says why).  An OSD derives
 * that key from the service secret it holds; a client or an MDS holds
 * only its own key, as the monitors sealed it. */
static void
own_key(const struct tsr_auth *a, const char *target, uint8_t out[TSR_AUTH_KEY_LEN])
{
	uint8_t k[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	const char *dom = domain_of(a->name, target);

	if (dom == NULL || service_keys(a, dom, k) == 0)
		memcpy(out, a->key, TSR_AUTH_KEY_LEN);
	else if (is_type(a->name, dom) || a->nsecrets > 0)
		tsr_auth_derive(k[0], a->name, out); /* the domain's own daemons */
	else
		memcpy(out, k[0], TSR_AUTH_KEY_LEN);
	sodium_memzero(k, sizeof(k));
}

/* The key that wraps the service keys sent to name: from K(name), for
 * this use only. */
static void
wrap_key(const uint8_t k[TSR_AUTH_KEY_LEN], uint8_t out[TSR_AUTH_KEY_LEN])
{
	static const char label[] = "tessera service key wrap v1";

	crypto_ready();
	crypto_generichash(out, TSR_AUTH_KEY_LEN, (const uint8_t *)label,
			   sizeof(label), k, TSR_AUTH_KEY_LEN);
}

/* One sealed copy: nonce, then the AEAD of the key set. */
#define COPY_LEN(n) (crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + \
		     crypto_aead_xchacha20poly1305_ietf_ABYTES + 1 +  \
		     (size_t)(n) * TSR_AUTH_KEY_LEN)

int
tsr_auth_service_seal(const struct tsr_auth *a, const char *name, uint8_t *out,
		      size_t cap, size_t *len)
{
	const size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	uint8_t keys[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	uint8_t mkeys[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	uint8_t plain[2 + sizeof(keys) + sizeof(mkeys)], k[TSR_AUTH_KEY_LEN],
		w[TSR_AUTH_KEY_LEN];
	size_t at = 1, plen;
	int n, m = 0;

	if (a->nsecrets == 0 || !tsr_auth_name_valid(name, NULL) ||
	    !(is_type(name, "osd") || is_type(name, "client") || is_type(name, "mds")))
		return -EINVAL;
	if (cap < TSR_AUTH_SEALED_MAX)
		return -ENOSPC;
	n = osd_service_keys(a, keys);
	/* an OSD gets the service secrets; anyone else only its own key
	 * under each */
	if (!is_type(name, "osd"))
		for (int i = 0; i < n; i++)
			tsr_auth_derive(keys[i], name, keys[i]);
	plain[0] = (uint8_t)n;
	memcpy(plain + 1, keys, (size_t)n * TSR_AUTH_KEY_LEN);
	plen = 1 + (size_t)n * TSR_AUTH_KEY_LEN;
	/* a client or an MDS gets its part of the MDSs' domain after it: an
	 * MDS the service secrets (it checks clients), a client its own key */
	if (!is_type(name, "osd")) {
		m = service_keys(a, "mds", mkeys);
		if (is_type(name, "client"))
			for (int i = 0; i < m; i++)
				tsr_auth_derive(mkeys[i], name, mkeys[i]);
		plain[plen] = (uint8_t)m;
		memcpy(plain + plen + 1, mkeys, (size_t)m * TSR_AUTH_KEY_LEN);
		plen += 1 + (size_t)m * TSR_AUTH_KEY_LEN;
	}
	/* one copy under each key the OSD may hold: its key derives from
	 * the current secret, or (until it gets a new one) the previous */
	out[0] = (uint8_t)a->nsecrets;
	for (int i = 0; i < a->nsecrets; i++) {
		unsigned long long clen = 0;

		tsr_auth_derive(a->secret[i], name, k);
		wrap_key(k, w);
		tsr_auth_random(out + at, nb);
		crypto_aead_xchacha20poly1305_ietf_encrypt(
			out + at + nb, &clen, plain, plen,
			(const uint8_t *)name, strlen(name), NULL, out + at, w);
		at += nb + (size_t)clen;
	}
	*len = at;
	sodium_memzero(keys, sizeof(keys));
	sodium_memzero(mkeys, sizeof(mkeys));
	sodium_memzero(plain, sizeof(plain));
	sodium_memzero(k, sizeof(k));
	sodium_memzero(w, sizeof(w));
	return 0;
}

/* Is len the length of one sealed copy of some key set: n keys of the
 * OSDs' domain, then perhaps m of the MDSs' (1 <= n, m <= the maximum)? */
static bool
copy_len_ok(size_t len)
{
	for (size_t n = 1; n <= TSR_AUTH_MAX_SECRETS; n++) {
		if (len == COPY_LEN(n))
			return true;
		for (size_t m = 1; m <= TSR_AUTH_MAX_SECRETS; m++)
			if (len == COPY_LEN(n) + 1 + m * TSR_AUTH_KEY_LEN)
				return true;
	}
	return false;
}

int
tsr_auth_service_open(const struct tsr_auth *a, const uint8_t *in, size_t len,
		      char *err, size_t errlen)
{
	const size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	uint8_t plain[2 + 2 * TSR_AUTH_MAX_SECRETS * TSR_AUTH_KEY_LEN], w[TSR_AUTH_KEY_LEN];
	unsigned long long plen = 0;
	size_t at = 1;
	int rc = -EACCES, copies;

	/* the sizes follow from the count and the key set's size, which
	 * each copy repeats: the first copy's length gives them */
	copies = len > 0 ? in[0] : 0;
	if (len > TSR_AUTH_SEALED_MAX || copies < 1 || copies > TSR_AUTH_MAX_SECRETS ||
	    (len - 1) % (size_t)copies != 0 || !copy_len_ok((len - 1) / (size_t)copies))
		return tsr_errf(err, errlen, -EBADMSG, "service keys for %s: %zu "
				"bytes, not a sealed key set", a->name, len);
	wrap_key(a->key, w);
	for (int i = 0; i < copies && rc < 0; i++, at += (len - 1) / (size_t)copies) {
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(
			    plain, &plen, NULL, in + at + nb,
			    (len - 1) / (size_t)copies - nb, (const uint8_t *)a->name,
			    strlen(a->name), in + at, w) == 0)
			rc = 0;
	}
	if (rc < 0)
		tsr_errf(err, errlen, -EACCES, "service keys for %s do not open with "
			 "its key: sealed for another entity, or by another "
			 "cluster's monitors", a->name);
	size_t osd_len = plen >= 1 ? 1 + (size_t)plain[0] * TSR_AUTH_KEY_LEN : 0;
	int m = rc == 0 && plen > osd_len ? plain[osd_len] : 0;
	if (rc < 0)
		;
	else if (plen < 1 || plain[0] < 1 || plain[0] > TSR_AUTH_MAX_SECRETS ||
		 (plen != osd_len &&
		  (m < 1 || m > TSR_AUTH_MAX_SECRETS ||
		   plen != osd_len + 1 + (size_t)m * TSR_AUTH_KEY_LEN)))
		rc = tsr_errf(err, errlen, -EBADMSG, "service keys for %s: a "
			      "malformed key set", a->name);
	if (rc == 0) {
		pthread_mutex_lock(&a->svc->mu);
		a->svc->n = plain[0];
		memcpy(a->svc->key, plain + 1, (size_t)plain[0] * TSR_AUTH_KEY_LEN);
		a->svc->nm = m;
		if (m)
			memcpy(a->svc->mkey, plain + osd_len + 1, (size_t)m * TSR_AUTH_KEY_LEN);
		pthread_mutex_unlock(&a->svc->mu);
	}
	sodium_memzero(plain, sizeof(plain));
	sodium_memzero(w, sizeof(w));
	return rc;
}

int
tsr_auth_service_open_answer(const struct tsr_auth *a, const char *text, char *err,
			     size_t errlen)
{
	static const char field[] = "\"service_keys\": \"";
	uint8_t blob[TSR_AUTH_SEALED_MAX];
	const char *h = text ? strstr(text, field) : NULL;
	size_t n = 0;
	int rc;

	if (h == NULL)
		return tsr_errf(err, errlen, -EBADMSG, "service keys for %s: the "
				"monitor's answer holds none", a->name);
	h += sizeof(field) - 1;
	while (n < sizeof(blob) && isxdigit((unsigned char)h[2 * n]) &&
	       isxdigit((unsigned char)h[2 * n + 1])) {
		char byte[3] = { h[2 * n], h[2 * n + 1], 0 };
		blob[n++] = (uint8_t)strtoul(byte, NULL, 16);
	}
	if (h[2 * n] != '"')
		rc = tsr_errf(err, errlen, -EBADMSG, "service keys for %s: the "
			      "monitor's answer is malformed", a->name);
	else
		rc = tsr_auth_service_open(a, blob, n, err, errlen);
	sodium_memzero(blob, sizeof(blob));
	return rc;
}

/* ---- Proofs (the handshake) ----------------------------------------------*/

void
tsr_auth_connector_proof(const struct tsr_auth *a, const struct tsr_auth_hs *hs,
			 uint8_t out[TSR_AUTH_PROOF_LEN])
{
	uint8_t k[TSR_AUTH_KEY_LEN];

	own_key(a, hs->target, k);
	proof(k, "connector", hs, out);
	sodium_memzero(k, sizeof(k));
}

int
tsr_auth_check_acceptor(const struct tsr_auth *a, const struct tsr_auth_hs *hs,
			const uint8_t got[TSR_AUTH_PROOF_LEN])
{
	uint8_t want[TSR_AUTH_PROOF_LEN], k[TSR_AUTH_KEY_LEN];
	int ok;

	own_key(a, hs->target, k);
	proof(k, "acceptor", hs, want);
	ok = crypto_verify_32(want, got) == 0;
	sodium_memzero(want, sizeof(want));
	sodium_memzero(k, sizeof(k));
	return ok ? 0 : -EACCES;
}

int
tsr_auth_can_check(const struct tsr_auth *a, const char *name, const char **why)
{
	const char *w = NULL;

	if (!tsr_auth_name_valid(name, &w))
		;
	else if (osd_domain(name, a->name)) {
		if (tsr_auth_service_count(a) == 0 && strcmp(name, a->name) != 0)
			w = "this OSD holds no service key yet to check another OSD "
			    "with (the monitors send it after its boot)";
	} else if (mds_domain(name, a->name)) {
		if (tsr_auth_service_count_mds(a) == 0 && strcmp(name, a->name) != 0)
			w = "this MDS holds no service key yet to check clients with "
			    "(it asks the monitors as it starts)";
	} else if (a->nsecrets == 0 && strcmp(name, a->name) != 0) {
		w = "this side holds no cluster secret to check it with";
	}
	if (why)
		*why = w;
	return w ? -ENOKEY : 0;
}

int
tsr_auth_accept(const struct tsr_auth *a, const struct tsr_auth_hs *hs,
		const uint8_t got[TSR_AUTH_PROOF_LEN], uint8_t reply[TSR_AUTH_PROOF_LEN])
{
	uint8_t keys[TSR_AUTH_MAX_SECRETS + 1][TSR_AUTH_KEY_LEN];
	uint8_t svc[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	uint8_t want[TSR_AUTH_PROOF_LEN];
	int nk = 0, rc = -EACCES;

	if (tsr_auth_can_check(a, hs->name, NULL) < 0)
		return -EACCES;
	const char *dom = domain_of(hs->name, a->name);
	if (dom) {
		int ns = service_keys(a, dom, svc);
		for (int i = 0; i < ns; i++)
			tsr_auth_derive(svc[i], hs->name, keys[nk++]);
		if (ns == 0) /* its own name (can_check): own_key's choice too */
			memcpy(keys[nk++], a->key, TSR_AUTH_KEY_LEN);
	} else {
		if (a->nsecrets == 0)
			memcpy(keys[nk++], a->key, TSR_AUTH_KEY_LEN);
		for (int i = 0; i < a->nsecrets; i++)
			tsr_auth_derive(a->secret[i], hs->name, keys[nk++]);
	}
	/* every candidate is tried, so the time taken does not tell which
	 * secret a key came from */
	for (int i = 0; i < nk; i++) {
		proof(keys[i], "connector", hs, want);
		if (crypto_verify_32(want, got) == 0 && rc < 0) {
			proof(keys[i], "acceptor", hs, reply);
			rc = 0;
		}
	}
	sodium_memzero(keys, sizeof(keys));
	sodium_memzero(svc, sizeof(svc));
	sodium_memzero(want, sizeof(want));
	return rc;
}

/* ---- Capabilities ------------------------------------------------------------*/

bool
tsr_auth_is(const char *name, const char *type, const char *id)
{
	size_t tl = strlen(type);

	return name != NULL && strncmp(name, type, tl) == 0 && name[tl] == '.' &&
	       (id == NULL || strcmp(name + tl + 1, id) == 0);
}

bool
tsr_auth_may(const char *name, enum tsr_auth_cap cap)
{
	if (name == NULL || !tsr_auth_name_valid(name, NULL))
		return false;
	if (strncmp(name, "mon.", 4) == 0)
		return true;
	switch (cap) {
	case TSR_CAP_READ:
		return true;
	case TSR_CAP_CHANGE:
		return tsr_auth_is(name, "client", "admin");
	case TSR_CAP_MON:
		return false;
	}
	return false;
}
