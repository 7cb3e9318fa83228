/* asok.c — the admin socket server and client. */
#include "daemon/asok.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_WORDS 32
#define ACCEPT_PAUSE_MS 100

struct command {
	char *prefix;
	char *help;
	int nwords;
	tsr_asok_fn fn;
	void *arg;
};

struct client {
	struct tsr_asok *a;
	int fd;
	char in[TSR_ASOK_MAX_REQUEST + 1];
	size_t inlen;
	struct tsr_sbuf out;   /* status + body once the command ran */
	size_t outoff;
	uint64_t timer;
	bool replying;
};

struct tsr_asok {
	struct tsr_loop *loop;
	int fd;
	char *path;
	struct command *cmds;
	size_t ncmds;
	struct client *clients[TSR_ASOK_MAX_CLIENTS];
	bool paused;           /* out of fds: listen fd unwatched for a while */
	uint64_t pause_timer;
};

static int
count_words(const char *s)
{
	int n = 0;
	bool in = false;

	/* the same separators as split(), or nwords and the match disagree */
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t')
			in = false;
		else if (!in) {
			in = true;
			n++;
		}
	}
	return n;
}

int
tsr_asok_register(struct tsr_asok *a, const char *prefix, const char *help,
		  tsr_asok_fn fn, void *arg)
{
	struct command *c;

	for (size_t i = 0; i < a->ncmds; i++)
		if (strcmp(a->cmds[i].prefix, prefix) == 0)
			return -EEXIST;
	c = realloc(a->cmds, (a->ncmds + 1) * sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	a->cmds = c;
	c = &a->cmds[a->ncmds];
	c->prefix = strdup(prefix);
	c->help = strdup(help);
	if (c->prefix == NULL || c->help == NULL) {
		free(c->prefix);
		free(c->help);
		return -ENOMEM;
	}
	c->nwords = count_words(prefix);
	c->fn = fn;
	c->arg = arg;
	a->ncmds++;
	return 0;
}

static int
cmd_help(void *arg, int argc, char **argv, struct tsr_sbuf *out)
{
	struct tsr_asok *a = arg;

	(void)argc;
	(void)argv;
	tsr_sbuf_printf(out, "{\"commands\": [");
	for (size_t i = 0; i < a->ncmds; i++) {
		tsr_sbuf_printf(out, "%s\n  {\"command\": ", i ? "," : "");
		tsr_sbuf_json_str(out, a->cmds[i].prefix);
		tsr_sbuf_printf(out, ", \"help\": ");
		tsr_sbuf_json_str(out, a->cmds[i].help);
		tsr_sbuf_printf(out, "}");
	}
	tsr_sbuf_printf(out, "\n]}\n");
	return 0;
}

static void
client_close(struct client *c)
{
	struct tsr_asok *a = c->a;

	tsr_loop_fd_del(a->loop, c->fd);
	tsr_loop_timer_cancel(a->loop, c->timer);
	close(c->fd);
	for (size_t i = 0; i < TSR_ASOK_MAX_CLIENTS; i++)
		if (a->clients[i] == c)
			a->clients[i] = NULL;
	tsr_sbuf_release(&c->out);
	free(c);
}

static void
client_timeout(void *arg)
{
	struct client *c = arg;

	c->timer = 0;
	TSR_LOG_WARN(ASOK, "%s: client sent no complete command in %d ms; disconnecting",
		     c->a->path, TSR_ASOK_TIMEOUT_MS);
	client_close(c);
}

/* Split line into words in place. */
static int
split(char *line, char **argv)
{
	int n = 0;
	char *save = NULL;

	for (char *w = strtok_r(line, " \t", &save); w && n < MAX_WORDS;
	     w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	return n;
}

static bool
prefix_matches(const struct command *c, char **argv, int argc)
{
	char copy[256];
	char *words[MAX_WORDS];
	int n;

	if (c->nwords > argc)
		return false;
	tsr_strlcpy(copy, c->prefix, sizeof(copy));
	n = split(copy, words);
	for (int i = 0; i < n; i++)
		if (strcmp(words[i], argv[i]) != 0)
			return false;
	return true;
}

static void
run_command(struct client *c, char *line)
{
	struct tsr_asok *a = c->a;
	char *argv[MAX_WORDS];
	struct tsr_sbuf body;
	const struct command *best = NULL;
	int argc, status;
	int32_t st;

	tsr_sbuf_init(&body);
	argc = split(line, argv);
	for (size_t i = 0; i < a->ncmds; i++)
		if (prefix_matches(&a->cmds[i], argv, argc) &&
		    (best == NULL || a->cmds[i].nwords > best->nwords))
			best = &a->cmds[i];
	if (argc == 0 || best == NULL) {
		status = -EINVAL;
		tsr_sbuf_printf(&body, "unknown command \"%s\"; try \"help\"\n",
				argc ? argv[0] : "");
	} else {
		status = best->fn(best->arg, argc - best->nwords,
				  argv + best->nwords, &body);
		if (tsr_sbuf_error(&body)) {
			status = -ENOMEM;
			tsr_sbuf_reset(&body);
			tsr_sbuf_printf(&body, "out of memory building the reply\n");
		}
	}
	st = status;
	uint8_t hdr[4] = { (uint8_t)st, (uint8_t)(st >> 8), (uint8_t)(st >> 16),
			   (uint8_t)((uint32_t)st >> 24) };
	tsr_sbuf_add(&c->out, hdr, 4);
	tsr_sbuf_add(&c->out, tsr_sbuf_str(&body), body.len);
	tsr_sbuf_release(&body);
	c->replying = true;
	tsr_loop_fd_mod(a->loop, c->fd, TSR_EV_WRITE);
}

static void
client_event(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct client *c = arg;

	(void)loop;
	if (c->replying) {
		/* MSG_NOSIGNAL: a client gone before its reply must not raise
		 * SIGPIPE in whatever process hosts the socket */
		ssize_t w = send(fd, c->out.buf + c->outoff,
				 c->out.len - c->outoff, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0) {
			client_close(c);
			return;
		}
		c->outoff += (size_t)w;
		if (c->outoff == c->out.len)
			client_close(c);
		return;
	}
	if (events & (TSR_EV_READ | TSR_EV_ERROR)) {
		ssize_t r = read(fd, c->in + c->inlen,
				 TSR_ASOK_MAX_REQUEST - c->inlen);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0) {
			client_close(c);
			return;
		}
		c->inlen += (size_t)r;
		char *nl = memchr(c->in, '\n', c->inlen);
		if (nl == NULL && c->inlen == TSR_ASOK_MAX_REQUEST) {
			TSR_LOG_WARN(ASOK, "%s: request longer than %d bytes; disconnecting",
				     c->a->path, TSR_ASOK_MAX_REQUEST);
			client_close(c);
			return;
		}
		if (nl == NULL)
			return;
		*nl = '\0';
		if (memchr(c->in, '\0', (size_t)(nl - c->in)) != NULL) {
			TSR_LOG_WARN(ASOK, "%s: request holds a NUL byte; disconnecting",
				     c->a->path);
			client_close(c);
			return;
		}
		run_command(c, c->in);
	}
}

static void accept_event(struct tsr_loop *loop, int fd, uint32_t events,
			 void *arg);

static void
accept_resume(void *arg)
{
	struct tsr_asok *a = arg;

	a->paused = false;
	a->pause_timer = 0;
	tsr_loop_fd_add(a->loop, a->fd, TSR_EV_READ, accept_event, a);
}

static void
accept_event(struct tsr_loop *loop, int fd, uint32_t events, void *arg)
{
	struct tsr_asok *a = arg;
	struct client *c;
	size_t slot;
	int cfd;

	(void)events;
	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
		    errno == ENOBUFS) {
			/* The listen fd stays readable while the connection
			 * waits: stop watching it for a while instead of
			 * spinning on accept. */
			TSR_LOG_WARN(ASOK, "%s: cannot accept: %s; pausing for %d ms",
				     a->path, strerror(errno), ACCEPT_PAUSE_MS);
			tsr_loop_fd_del(loop, fd);
			a->paused = true;
			tsr_loop_timer_add(loop, (uint64_t)ACCEPT_PAUSE_MS * 1000000,
					   accept_resume, a, &a->pause_timer);
		}
		return;
	}
	for (slot = 0; slot < TSR_ASOK_MAX_CLIENTS; slot++)
		if (a->clients[slot] == NULL)
			break;
	if (slot == TSR_ASOK_MAX_CLIENTS) {
		TSR_LOG_WARN(ASOK, "%s: %d clients already connected; refusing another",
			     a->path, TSR_ASOK_MAX_CLIENTS);
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(cfd);
		return;
	}
	c->a = a;
	c->fd = cfd;
	tsr_sbuf_init(&c->out);
	if (tsr_loop_fd_add(loop, cfd, TSR_EV_READ, client_event, c) < 0) {
		close(cfd);
		free(c);
		return;
	}
	a->clients[slot] = c;
	tsr_loop_timer_add(loop, (uint64_t)TSR_ASOK_TIMEOUT_MS * 1000000,
			   client_timeout, c, &c->timer);
}

static int
make_addr(const char *path, struct sockaddr_un *sun, char *err, size_t errlen)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return tsr_errf(err, errlen, -ENAMETOOLONG,
				"admin socket path %s is longer than %zu bytes",
				path, sizeof(sun->sun_path) - 1);
	memcpy(sun->sun_path, path, strlen(path));
	return 0;
}

int
tsr_asok_create(struct tsr_loop *loop, const char *path, struct tsr_asok **out,
		char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct tsr_asok *a;
	int fd, rc;

	rc = make_addr(path, &sun, err, errlen);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return tsr_errf(err, errlen, -errno, "socket: %s", strerror(errno));
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : -errno;
	if (rc == -EADDRINUSE) {
		/* Someone answering there is another daemon; a dead file is
		 * what a crash leaves behind and is safe to replace. */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = probe >= 0 &&
			   connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			close(fd);
			return tsr_errf(err, errlen, -EADDRINUSE,
					"admin socket %s is in use by a running process",
					path);
		}
		/* Only a socket is ours to replace: a regular file there is a
		 * mistyped path, not a crashed daemon's leftovers. */
		struct stat st;
		if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
			close(fd);
			return tsr_errf(err, errlen, -EEXIST,
					"cannot bind admin socket %s: it exists and is not a socket",
					path);
		}
		unlink(path);
		rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : -errno;
	}
	if (rc < 0) {
		close(fd);
		return tsr_errf(err, errlen, rc, "cannot bind admin socket %s: %s",
				path, strerror(-rc));
	}
	chmod(path, 0600);
	if (listen(fd, 16) < 0) {
		rc = -errno;
		close(fd);
		unlink(path);
		return tsr_errf(err, errlen, rc, "listen on %s: %s", path,
				strerror(-rc));
	}
	a = tsr_xcalloc(1, sizeof(*a));
	a->loop = loop;
	a->fd = fd;
	a->path = tsr_xstrdup(path);
	rc = tsr_loop_fd_add(loop, fd, TSR_EV_READ, accept_event, a);
	if (rc < 0) {
		close(fd);
		unlink(path);
		free(a->path);
		free(a);
		return tsr_errf(err, errlen, rc, "admin socket %s: event loop: %s",
				path, strerror(-rc));
	}
	tsr_asok_register(a, "help", "list the commands this daemon answers",
			  cmd_help, a);
	*out = a;
	return 0;
}

void
tsr_asok_destroy(struct tsr_asok *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < TSR_ASOK_MAX_CLIENTS; i++)
		if (a->clients[i])
			client_close(a->clients[i]);
	if (a->paused)
		tsr_loop_timer_cancel(a->loop, a->pause_timer);
	else
		tsr_loop_fd_del(a->loop, a->fd);
	close(a->fd);
	unlink(a->path);
	for (size_t i = 0; i < a->ncmds; i++) {
		free(a->cmds[i].prefix);
		free(a->cmds[i].help);
	}
	free(a->cmds);
	free(a->path);
	free(a);
}

/* ---- Client -------------------------------------------------------------*/

static int
wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		uint64_t now = tsr_mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = ev };
		int r = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int
tsr_asok_request(const char *path, const char *cmd, int timeout_ms,
		 int *status, struct tsr_sbuf *reply, char *err, size_t errlen)
{
	uint64_t deadline = tsr_mono_ns() + (uint64_t)timeout_ms * 1000000;
	struct sockaddr_un sun;
	struct tsr_sbuf raw;
	size_t len = strlen(cmd), off = 0;
	int fd, rc;
	char buf[4096];

	if (len + 1 > TSR_ASOK_MAX_REQUEST)
		return tsr_errf(err, errlen, -E2BIG, "command longer than %d bytes",
				TSR_ASOK_MAX_REQUEST - 1);
	rc = make_addr(path, &sun, err, errlen);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return tsr_errf(err, errlen, -errno, "socket: %s", strerror(errno));
	/* A full listen backlog makes a non-blocking unix connect fail with
	 * EAGAIN: the daemon is busy, not gone; retry until the deadline. */
	while ((rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? -errno : 0) == -EAGAIN &&
	       tsr_mono_ns() < deadline)
		poll(NULL, 0, 10);
	if (rc < 0) {
		close(fd);
		return tsr_errf(err, errlen, rc,
				"cannot connect to admin socket %s: %s (is the daemon running?)",
				path, strerror(-rc));
	}
	char *req = malloc(len + 1);
	if (req == NULL) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(req, cmd, len);
	req[len] = '\n';
	while (off < len + 1) {
		if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0)
			break;
		/* MSG_NOSIGNAL: a daemon hanging up early is an error to
		 * report, not a signal that kills the CLI */
		ssize_t w = send(fd, req + off, len + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (w > 0)
			off += (size_t)w;
	}
	free(req);
	tsr_sbuf_init(&raw);
	while (rc >= 0) {
		if ((rc = wait_fd(fd, POLLIN, deadline)) < 0)
			break;
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r == 0)
			break;
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				rc = -errno;
			continue;
		}
		tsr_sbuf_add(&raw, buf, (size_t)r);
	}
	close(fd);
	if (rc < 0) {
		tsr_sbuf_release(&raw);
		return tsr_errf(err, errlen, rc, "admin socket %s: %s", path,
				rc == -ETIMEDOUT ? "no reply in time" : strerror(-rc));
	}
	if (raw.len < 4) {
		tsr_sbuf_release(&raw);
		return tsr_errf(err, errlen, -EBADMSG,
				"admin socket %s: reply is shorter than its 4-byte status",
				path);
	}
	const uint8_t *h = (const uint8_t *)raw.buf;
	*status = (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 8 |
			    (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24);
	tsr_sbuf_add(reply, raw.buf + 4, raw.len - 4);
	tsr_sbuf_release(&raw);
	return 0;
}
