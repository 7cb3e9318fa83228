/* members.c — parsing mon_members (members.h). */
#include "mon/members.h"
#include "util/util.h"

#include <tessera/crc32c.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
cmp_member(const void *a, const void *b)
{
	return strcmp(((const struct tsr_mon_member *)a)->name,
		      ((const struct tsr_mon_member *)b)->name);
}

/* "a.b.c.d:port" with port 1..65535 */
static int
addr_ok(const char *s)
{
	char host[TSR_MON_ADDR_MAX];
	const char *colon = strrchr(s, ':');
	struct in_addr ia;
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host) ||
	    strlen(s) >= TSR_MON_ADDR_MAX)
		return 0;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	return inet_pton(AF_INET, host, &ia) == 1 && *end == '\0' &&
	       end != colon + 1 && errno == 0 && port >= 1 && port <= 65535;
}

int
tsr_mon_members_parse(const char *text, const char *where,
		      struct tsr_mon_members *out, char *err, size_t errlen)
{
	const char *p = text;
	size_t used = 0;

	memset(out, 0, sizeof(*out));
	for (;;) {
		char item[TSR_MON_NAME_MAX + TSR_MON_ADDR_MAX + 2];
		size_t n = 0;
		char *eq;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		while (p[n] && p[n] != ',' && p[n] != ' ' && p[n] != '\t')
			n++;
		if (n >= sizeof(item))
			return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
					"'%.*s' is too long", where, (int)n, p);
		memcpy(item, p, n);
		item[n] = '\0';
		p += n;
		if (out->n == TSR_MON_MAX)
			return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
					"more than %d monitors", where, TSR_MON_MAX);
		eq = strchr(item, '=');
		if (eq == NULL)
			return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: '%s' "
					"is not NAME=IP:PORT", where, item);
		*eq = '\0';
		if (eq == item || strlen(item) >= TSR_MON_NAME_MAX)
			return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
					"'%s=%s': a name of 1 to %d characters is "
					"needed", where, item, eq + 1,
					TSR_MON_NAME_MAX - 1);
		for (const char *c = item; *c; c++)
			if (!isalnum((unsigned char)*c) && *c != '_')
				return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
						"name '%s' may hold only letters, "
						"digits and '_'", where, item);
		if (!addr_ok(eq + 1))
			return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
					"mon %s: '%s' is not an IPv4 address and "
					"port (e.g. 127.0.0.1:6789)", where, item,
					eq + 1);
		for (size_t i = 0; i < out->n; i++) {
			if (strcmp(out->m[i].name, item) == 0)
				return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
						"mon %s is listed twice", where, item);
			if (strcmp(out->m[i].addr, eq + 1) == 0)
				return tsr_errf(err, errlen, -EINVAL, "%s: mon_members: "
						"mon %s and mon %s have the same "
						"address %s", where, out->m[i].name,
						item, eq + 1);
		}
		/* lengths checked above */
		tsr_strlcpy(out->m[out->n].name, item, TSR_MON_NAME_MAX);
		tsr_strlcpy(out->m[out->n].addr, eq + 1, TSR_MON_ADDR_MAX);
		out->n++;
	}
	if (out->n == 0)
		return tsr_errf(err, errlen, -EINVAL, "%s: mon_members is empty: "
				"list the monitors as \"a=127.0.0.1:6789, ...\"",
				where);
	qsort(out->m, out->n, sizeof(out->m[0]), cmp_member);
	for (size_t i = 0; i < out->n; i++) {
		out->m[i].id = i + 1;
		used += (size_t)snprintf(out->canon + used, sizeof(out->canon) - used,
					 "%s%s=%s", i ? "," : "", out->m[i].name,
					 out->m[i].addr);
	}
	out->fp = tsr_crc32c(0, out->canon, used);
	return 0;
}

const struct tsr_mon_member *
tsr_mon_members_find(const struct tsr_mon_members *ms, const char *name)
{
	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->m[i].name, name) == 0)
			return &ms->m[i];
	return NULL;
}

const struct tsr_mon_member *
tsr_mon_members_by_id(const struct tsr_mon_members *ms, uint64_t id)
{
	return id >= 1 && id <= ms->n ? &ms->m[id - 1] : NULL;
}

const struct tsr_mon_member *
tsr_mon_members_by_addr(const struct tsr_mon_members *ms, const char *addr)
{
	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->m[i].addr, addr) == 0)
			return &ms->m[i];
	return NULL;
}
