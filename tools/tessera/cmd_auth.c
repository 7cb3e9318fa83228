/* cmd_auth.c — `tessera auth`: make the cluster secret and the keys of
 * daemons and clients, and rotate the secret (auth/auth.h). */
#include "cli.h"
#include "auth/auth.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static void
auth_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera auth init -o FILE\n"
		"       tessera auth key NAME --secret FILE -o FILE\n"
		"       tessera auth rotate|promote|retire --secret FILE -o FILE\n"
		"\n"
		"Every daemon and client proves who it is to the monitors with a key\n"
		"(NAME is TYPE.ID: mon.a, osd.3, mds.x, client.admin).  The keys are\n"
		"derived from the cluster secret, which only the monitors hold.\n"
		"\n"
		"  init      a new cluster secret, in a keyring for the monitors\n"
		"  key       NAME's key, from the secret in --secret, in a keyring\n"
		"            for that daemon or client\n"
		"  rotate    stage a new secret: the old one stays current, the new\n"
		"            one is accepted too\n"
		"  promote   make the staged secret current (the old one is still\n"
		"            accepted); then give every daemon and client a new key\n"
		"  retire    keep only the current secret: after promote, the old\n"
		"            one goes and keys made from it stop working (after\n"
		"            rotate alone, it cancels the staged one)\n"
		"\n"
		"      --secret FILE  a keyring holding the cluster secret\n"
		"  -o, --out FILE     the keyring to write (mode 0600; an existing file\n"
		"                     is not overwritten)\n"
		"\n"
		"The daemons read the file their `keyring` option names (default\n"
		"/etc/tessera/$name.keyring, $name as TYPE-ID).  doc/operations.md,\n"
		"\"Keys\", gives the rotation step by step.\n"
		"Exit status: 0 on success, 1 on failure, 2 for a usage error.\n");
}

/* The secrets of the keyring at path: their number, or -1 after a
 * message. */
static int
read_secrets(const char *verb, const char *path,
	     uint8_t out[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN])
{
	struct tsr_auth *a = NULL;
	char err[1024];
	int n;

	/* any valid name loads it; only the secrets are wanted */
	n = tsr_auth_load(path, "client.admin", &a, err, sizeof(err));
	if (n < 0 && n != -ENOKEY) {
		cli_fail("auth", verb, "%s", err);
		return -1;
	}
	if (n == 0) {
		n = tsr_auth_secrets(a, out);
		tsr_auth_destroy(a);
	}
	if (n <= 0) {
		cli_fail("auth", verb, "keyring %s holds no cluster secret (a "
			 "monitor's keyring does)", path);
		return -1;
	}
	return n;
}

static int
auth_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "secret", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint8_t sec[TSR_AUTH_MAX_SECRETS][TSR_AUTH_KEY_LEN];
	uint8_t key[TSR_AUTH_KEY_LEN];
	const char *out = NULL, *secret = NULL, *verb, *name = NULL, *why;
	char err[1024];
	int c, n, rc;

	if (cli_wants_help(argc, argv)) {
		auth_help(stdout);
		return CLI_OK;
	}
	if (argc < 2)
		return cli_usage_err("auth", NULL, "which: init, key, rotate, "
				     "promote or retire?");
	verb = argv[1];
	optind = 2;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's': secret = optarg; break;
		default: return cli_bad_option("auth", verb, c, argv);
		}
	}
	if (strcmp(verb, "key") == 0) {
		if (optind != argc - 1)
			return cli_usage_err("auth", verb, "give one NAME (TYPE.ID)");
		name = argv[optind];
		if (!tsr_auth_name_valid(name, &why))
			return cli_usage_err("auth", verb, "\"%s\": %s", name, why);
	} else if (optind != argc) {
		return cli_usage_err("auth", verb, "unexpected argument '%s'",
				     argv[optind]);
	}
	if (out == NULL)
		return cli_usage_err("auth", verb, "-o FILE is required");
	if (strcmp(verb, "init") == 0) {
		if (secret)
			return cli_usage_err("auth", verb, "init makes a secret; "
					     "--secret is for the other commands");
		tsr_auth_secret_new(sec[0]);
		n = 1;
	} else if (strcmp(verb, "key") == 0 || strcmp(verb, "rotate") == 0 ||
		   strcmp(verb, "promote") == 0 || strcmp(verb, "retire") == 0) {
		if (secret == NULL)
			return cli_usage_err("auth", verb, "--secret FILE is required");
		if ((n = read_secrets(verb, secret, sec)) < 0)
			return CLI_FAIL;
	} else {
		return cli_usage_err("auth", NULL, "unknown command '%s' (init, "
				     "key, rotate, promote, retire)", verb);
	}
	if (strcmp(verb, "rotate") == 0) {
		if (n > 1)
			return cli_fail("auth", verb, "%s already holds a staged "
					"secret: promote or retire first", secret);
		tsr_auth_secret_new(sec[1]);
		n = 2;
	} else if (strcmp(verb, "promote") == 0) {
		if (n < 2)
			return cli_fail("auth", verb, "%s holds no staged secret "
					"(tessera auth rotate stages one)", secret);
		memcpy(key, sec[0], sizeof(key));
		memcpy(sec[0], sec[1], sizeof(key));
		memcpy(sec[1], key, sizeof(key));
	} else if (strcmp(verb, "retire") == 0) {
		if (n < 2)
			return cli_fail("auth", verb, "%s holds one secret: nothing "
					"to retire", secret);
		n = 1;
	}
	if (name) {
		tsr_auth_derive(sec[0], name, key);
		rc = tsr_auth_keyring_write(out, NULL, 0, name, key, false, err,
					    sizeof(err));
	} else {
		rc = tsr_auth_keyring_write(out, (const uint8_t (*)[TSR_AUTH_KEY_LEN])sec,
					    n, NULL, NULL, false, err, sizeof(err));
	}
	explicit_bzero(sec, sizeof(sec));
	explicit_bzero(key, sizeof(key));
	if (rc < 0)
		return cli_fail("auth", verb, "%s", err);
	printf("%s: written\n", out);
	return CLI_OK;
}

const struct cli_cmd cli_auth_cmds[] = {
	{ "auth", "init|key|rotate|promote|retire ...",
	  "make the cluster secret and the keys of daemons and clients",
	  auth_run, auth_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
