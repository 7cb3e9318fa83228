/* tessera-conformance.c — the installed conformance runner: the suites of
 * tests/conformance (the same ones `make check` runs on the plugins of this
 * tree) against one plugin named on the command line, for the author of a
 * backend or placement plugin built outside the tree.  See usage() and
 * doc/plugin-abi.md. */
#include "conformance.h"

#include <tessera/plugin.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define MAX_ONLY 64

static void
usage(FILE *f)
{
	fputs(
"Usage: tessera-conformance backend PLUGIN.so [-o KEY=VALUE]... [--dir DIR]\n"
"                           [--crash-rounds N] [--no-raw-scan] [--test NAME]...\n"
"       tessera-conformance placement PLUGIN.so [--digest HEX] [--test NAME]...\n"
"       tessera-conformance backend|placement --list\n"
"       tessera-conformance --help | --version\n"
"\n"
"Run the conformance suite of a plugin kind against PLUGIN.so: the tests\n"
"every backend or placement plugin of Tessera must pass to be trusted\n"
"with data (tessera/backend.h and tessera/placement.h state the contract\n"
"they check).  These are the suites `make check` runs on the plugins in\n"
"Tessera's own tree.  PLUGIN.so is loaded and checked as a daemon loads\n"
"it; each test then runs in a process of its own, so a crash fails that\n"
"test, not the run.  Every input is fixed: a failure reproduces.\n"
"\n"
"backend: mkfs, mount and umount; every transaction operation and its\n"
"errors against an in-memory model; atomicity; enumeration order and\n"
"cursors; persistence; a bit flipped in the stored data must read -EIO;\n"
"random transactions; reads from four threads while two others submit\n"
"and flush (the thread rules); and the writer killed with SIGKILL 200\n"
"times at random moments, after each of which the store must hold every\n"
"acknowledged transaction and whole transactions only.  Stores are made\n"
"under a scratch directory, removed at the end.  Takes about two minutes.\n"
"\n"
"placement: determinism (two instances, another process, four threads, and\n"
"a golden digest), distinct devices and failure domains, runtime weights,\n"
"utilization in proportion to weight, movement against the optimum when\n"
"the map changes, errors, and hostile maps and text.  A few seconds.\n"
"\n"
"Options:\n"
"  -o, --option KEY=VALUE  (backend) an option of the plugin beyond \"path\",\n"
"                          which the suite sets for each store; repeat for\n"
"                          more (VALUE may not hold ';')\n"
"      --dir DIR           (backend) make the scratch directory in DIR\n"
"                          (default $TMPDIR, else /tmp): the file system the\n"
"                          stores are tested on\n"
"      --crash-rounds N    (backend) kill the writer N times (default 200)\n"
"      --no-raw-scan       (backend) the plugin stores no data block as\n"
"                          written (compressed, encrypted): the checksum\n"
"                          test, which flips a bit in a block it finds in\n"
"                          the store's files, is skipped\n"
"      --digest HEX        (placement) the golden digest the plugin must\n"
"                          reproduce: the determinism test prints it on the\n"
"                          first run; give it on every later one, so a\n"
"                          change of placement (which moves every object)\n"
"                          fails.  Without it, a plugin other than crush and\n"
"                          hrw fails the determinism test\n"
"  -t, --test NAME         run only test NAME (plugin_loads always runs);\n"
"                          repeat for more\n"
"      --list              list the kind's tests and what each checks\n"
"  -v, --verbose           name every test as it passes\n"
"  -h, --help              this text\n"
"      --version           the version of Tessera and of its plugin ABI\n"
"\n"
"Environment:\n"
"  CK_FORK=no              run the tests in this process (for a debugger)\n"
"  CK_TIMEOUT_MULTIPLIER=N multiply the time limits (backend 600 s a test,\n"
"                          placement 300 s) by N\n"
"  CK_VERBOSITY, CK_XML_LOG_FILE_NAME, CK_TAP_LOG_FILE_NAME\n"
"                          Check's own: output and logs\n"
"  BACKEND_OPTIONS_<name>  (backend, without -o) the options, \"k=v;k=v\"\n"
"  TMPDIR                  where the scratch directory goes, without --dir\n"
"\n"
"Exit status: 0 when every test passed, 1 when one failed (or the plugin\n"
"was refused: the plugin_loads test says why), 2 for a usage error.\n"
"\n"
"Examples:\n"
"  tessera-conformance backend ./mystore.so -o cache_size=64M --dir /mnt/ssd\n"
"  tessera-conformance backend ./mystore.so --test crash --crash-rounds 1000\n"
"  tessera-conformance placement ./myplace.so --digest 3f2a9c0d11e87b45\n",
	      f);
}

static int TSR_PRINTF(1, 2)
bad_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("tessera-conformance: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(tessera-conformance --help shows the usage)\n", stderr);
	return EXIT_USAGE;
}

static void
list(const struct cf_test_info *t)
{
	for (; t->name != NULL; t++)
		printf("%-22s %s\n", t->name, t->what);
}

static int
known_test(const struct cf_test_info *t, const char *name)
{
	for (; t->name != NULL; t++)
		if (strcmp(t->name, name) == 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	enum { OPT_DIR = 256, OPT_ROUNDS, OPT_RAW, OPT_DIGEST, OPT_LIST,
	       OPT_VERSION };
	static const struct option longopts[] = {
		{ "option", required_argument, NULL, 'o' },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "crash-rounds", required_argument, NULL, OPT_ROUNDS },
		{ "no-raw-scan", no_argument, NULL, OPT_RAW },
		{ "digest", required_argument, NULL, OPT_DIGEST },
		{ "test", required_argument, NULL, 't' },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *kind, *only[MAX_ONLY];
	const struct cf_test_info *tests;
	int (*run)(const struct cf_run *);
	struct cf_plugin plugin = { 0 };
	struct cf_run r = { .envvar = "the command line" };
	char opts[4096] = "";
	size_t optlen = 0;
	int c, backend, do_list = 0, rc;
	char *end;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("tessera-conformance (Tessera) %s, plugin ABI %d.%d\n",
		       TSR_VERSION, TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR);
		return EXIT_SUCCESS;
	}
	if (argc < 2)
		return bad_usage("which kind of plugin: backend or placement?");
	kind = argv[1];
	if (strcmp(kind, "backend") == 0) {
		backend = 1;
		tests = cf_backend_tests;
		run = cf_backend_run;
	} else if (strcmp(kind, "placement") == 0) {
		backend = 0;
		tests = cf_placement_tests;
		run = cf_placement_run;
	} else {
		return bad_usage("unknown plugin kind '%s': the suites are "
				 "backend and placement", kind);
	}

	/* getopt names the program in its messages: ours, not the kind */
	argc--;
	argv++;
	argv[0] = (char *)"tessera-conformance";
	while ((c = getopt_long(argc, argv, "o:t:vh", longopts, NULL)) != -1) {
		size_t n;

		switch (c) {
		case OPT_VERSION:
			printf("tessera-conformance (Tessera) %s, plugin ABI %d.%d\n",
			       TSR_VERSION, TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR);
			return EXIT_SUCCESS;
		case 'o':
			if (!backend)
				return bad_usage("-o is for backend plugins "
						 "(options of a placement "
						 "plugin are not tested)");
			n = strlen(optarg);
			if (strchr(optarg, '=') == NULL || optarg[0] == '=')
				return bad_usage("-o %s: not KEY=VALUE", optarg);
			if (strchr(optarg, ';') != NULL)
				return bad_usage("-o %s: a value may not hold "
						 "';'", optarg);
			if (optlen + n + 2 > sizeof(opts))
				return bad_usage("-o %s: the options are too "
						 "long together", optarg);
			optlen += (size_t)snprintf(opts + optlen,
						   sizeof(opts) - optlen, "%s%s",
						   optlen ? ";" : "", optarg);
			plugin.options = opts;
			break;
		case OPT_DIR:
			if (!backend)
				return bad_usage("--dir is for backend plugins");
			r.tmpdir = optarg;
			break;
		case OPT_ROUNDS:
			if (!backend)
				return bad_usage("--crash-rounds is for backend "
						 "plugins");
			errno = 0;
			r.crash_rounds = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    r.crash_rounds == 0 || r.crash_rounds > 1000000)
				return bad_usage("--crash-rounds %s: not a "
						 "number of rounds from 1 to "
						 "1000000", optarg);
			break;
		case OPT_RAW:
			if (!backend)
				return bad_usage("--no-raw-scan is for backend "
						 "plugins");
			plugin.no_raw_scan = 1;
			break;
		case OPT_DIGEST:
			if (backend)
				return bad_usage("--digest is for placement "
						 "plugins");
			errno = 0;
			plugin.digest = strtoull(optarg, &end, 16);
			if (errno != 0 || *end != '\0' || optarg[0] == '\0' ||
			    optarg[0] == '-' || strlen(optarg) > 18)
				return bad_usage("--digest %s: not a 64-bit "
						 "hexadecimal number", optarg);
			plugin.has_digest = 1;
			break;
		case 't':
			if (!known_test(tests, optarg)) {
				fprintf(stderr, "tessera-conformance: the %s "
					"suite has no test '%s'; it has:\n",
					kind, optarg);
				list(tests);
				return EXIT_USAGE;
			}
			if (r.nonly == MAX_ONLY)
				return bad_usage("more than 64 --test");
			only[r.nonly++] = optarg;
			r.only = only;
			break;
		case 'v':
			setenv("CK_VERBOSITY", "verbose", 1);
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case OPT_LIST:
			do_list = 1;
			break;
		default:
			return bad_usage("bad arguments (above)");
		}
	}
	if (do_list) {
		list(tests);
		return EXIT_SUCCESS;
	}
	if (optind >= argc)
		return bad_usage("which plugin? Name its .so file after '%s'",
				 kind);
	if (optind + 1 < argc)
		return bad_usage("one plugin at a time: '%s' is one too many",
				 argv[optind + 1]);
	plugin.path = argv[optind];
	r.plugins = &plugin;
	r.nplugins = 1;
	rc = run(&r);
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
