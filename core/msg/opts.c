/* opts.c — the messenger's options: defaults, and from a configuration. */
#include "msg/msgr_int.h"
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- Options ----------------------------------------------------------------*/

void
tsr_msgr_opts_default(struct tsr_msgr_opts *o)
{
	uint8_t fsid[16];
	uint8_t type = o->entity_type;
	uint64_t id = o->entity_id;
	const char *bind = o->bind;
	const struct tsr_auth *auth = o->auth;

	memcpy(fsid, o->fsid, 16);
	memset(o, 0, sizeof(*o));
	memcpy(o->fsid, fsid, 16);
	o->entity_type = type;
	o->entity_id = id;
	o->bind = bind;
	o->auth = auth;
	o->workers = 2;
	o->dispatchers = 2;
	o->max_front = 1u << 20;
	o->max_data = 64u << 20;
	o->send_queue_bytes = 128ull << 20;
	o->recv_queue_bytes = 128ull << 20;
	o->keepalive_ms = 5000;
	o->idle_timeout_ms = 30000;
	o->reconnect_min_ms = 10;
	o->reconnect_max_ms = 2000;
	o->session_timeout_ms = 300000;
	o->compress_level = 1;
	o->recv_budget = 512ull << 20;
	o->ack_delay_ms = 20;
}

static int
hexval(int ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

int
tsr_msgr_opts_from_conf(struct tsr_conf *conf, struct tsr_msgr_opts *o,
			char *err, size_t errlen)
{
	const char *fsid = tsr_conf_str(conf, "fsid");
	uint8_t id[16] = { 0 };
	int n = 0;

	/* a UUID: 32 hex digits, dashes anywhere between pairs */
	for (const char *p = fsid; *p && n <= 32; p++) {
		int v = hexval((unsigned char)*p);
		if (*p == '-' && n % 2 == 0)
			continue;
		if (v < 0 || n == 32) {
			n = -1;
			break;
		}
		id[n / 2] = (uint8_t)(id[n / 2] << 4 | v);
		n++;
	}
	if (n != 0 && n != 32) {
		snprintf(err, errlen, "%s: option 'fsid': expected a UUID "
			 "(32 hex digits, e.g. 1f0e...-...), got '%s'",
			 tsr_conf_where(conf, "fsid"), fsid);
		return -EINVAL;
	}
	memcpy(o->fsid, id, 16);
	tsr_msgr_opts_default(o);
	o->workers = (unsigned)tsr_conf_int(conf, "ms_workers");
	o->dispatchers = (unsigned)tsr_conf_int(conf, "ms_dispatchers");
	o->max_front = (uint32_t)tsr_conf_int(conf, "ms_max_front");
	o->max_data = (uint32_t)tsr_conf_int(conf, "ms_max_data");
	o->send_queue_bytes = (uint64_t)tsr_conf_int(conf, "ms_send_queue");
	o->recv_queue_bytes = (uint64_t)tsr_conf_int(conf, "ms_recv_queue");
	o->recv_budget = (uint64_t)tsr_conf_int(conf, "ms_recv_budget");
	o->keepalive_ms = (uint32_t)tsr_conf_int(conf, "ms_keepalive");
	o->idle_timeout_ms = (uint32_t)tsr_conf_int(conf, "ms_idle_timeout");
	o->session_timeout_ms = (uint32_t)tsr_conf_int(conf, "ms_session_timeout");
	o->compress_min = (uint32_t)tsr_conf_int(conf, "ms_compress_min");
	o->inject_drop_every = (uint32_t)tsr_conf_int(conf, "ms_inject_drop_every");
	o->inject_delay_ms = (uint32_t)tsr_conf_int(conf, "ms_inject_delay");
	o->inject_refuse_every = (uint32_t)tsr_conf_int(conf, "ms_inject_refuse_every");
	return 0;
}

