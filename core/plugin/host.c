/* host.c — the plugin host table backed by the core's services. */
#include "plugin/host.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void
host_logv(void *ctx, int level, const char *fmt, va_list ap)
{
	struct tsr_core_host *h = ctx;
	char prefix[112];

	if (!tsr_log_enabled(TSR_SUB_PLUGIN, level))
		return;
	snprintf(prefix, sizeof(prefix), "%s: ", h->instance);
	tsr_logv(TSR_SUB_PLUGIN, level, prefix, fmt, ap);
}

static void *
host_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void *
host_realloc(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	return realloc(ptr, size);
}

static void
host_free(void *ctx, void *ptr)
{
	(void)ctx;
	free(ptr);
}

static uint64_t
host_now(void *ctx)
{
	(void)ctx;
	return tsr_now_ns();
}

static uint64_t
host_mono(void *ctx)
{
	(void)ctx;
	return tsr_mono_ns();
}

static int
host_timer_add(void *ctx, uint64_t delay_ns, void (*cb)(void *arg), void *arg,
	       uint64_t *id)
{
	struct tsr_core_host *h = ctx;

	if (h->loop == NULL)
		return -ENOTSUP;
	return tsr_loop_timer_add(h->loop, delay_ns, cb, arg, id);
}

static int
host_timer_cancel(void *ctx, uint64_t id)
{
	struct tsr_core_host *h = ctx;

	if (h->loop == NULL)
		return -ENOTSUP;
	return tsr_loop_timer_cancel(h->loop, id);
}

static int
host_conf_get(void *ctx, const char *key, char *buf, size_t buflen)
{
	struct tsr_core_host *h = ctx;

	if (h->conf == NULL)
		return -ENOENT;
	return tsr_conf_get_text(h->conf, key, buf, buflen);
}

void
tsr_core_host_init(struct tsr_core_host *h, const char *instance,
		   struct tsr_conf *conf, struct tsr_loop *loop)
{
	*h = (struct tsr_core_host){
		.host = {
			.size = sizeof(struct tsr_host),
			.abi_minor = TSR_PLUGIN_ABI_MINOR,
			.ctx = h,
			.instance = h->instance,
			.logv = host_logv,
			.alloc = host_alloc,
			.realloc = host_realloc,
			.free = host_free,
			.now_ns = host_now,
			.mono_ns = host_mono,
			.timer_add = host_timer_add,
			.timer_cancel = host_timer_cancel,
			.conf_get = host_conf_get,
		},
		.conf = conf,
		.loop = loop,
	};
	tsr_strlcpy(h->instance, instance, sizeof(h->instance));
}
