/* topn.h — keep the n best (smallest draw) candidates, ties to the lower
 * device id, so the order of evaluation never matters. */
#ifndef TSR_TOPN_H
#define TSR_TOPN_H

#include <stdint.h>

struct topn {
	uint32_t n, k;
	double draw[64];
	int32_t dev[64];
	uint32_t tag[64];   /* caller's data (e.g. the domain index) */
};

static inline void
topn_init(struct topn *t, uint32_t n)
{
	t->n = n;
	t->k = 0;
}

static inline int
topn_better(double d1, int32_t v1, double d2, int32_t v2)
{
	return d1 < d2 || (d1 == d2 && v1 < v2);
}

/* Offer a candidate; returns whether it was kept. */
static inline int
topn_offer(struct topn *t, double draw, int32_t dev, uint32_t tag)
{
	uint32_t i;

	if (t->k == t->n && !topn_better(draw, dev, t->draw[t->k - 1], t->dev[t->k - 1]))
		return 0;
	i = t->k < t->n ? t->k++ : t->k - 1;
	while (i > 0 && topn_better(draw, dev, t->draw[i - 1], t->dev[i - 1])) {
		t->draw[i] = t->draw[i - 1];
		t->dev[i] = t->dev[i - 1];
		t->tag[i] = t->tag[i - 1];
		i--;
	}
	t->draw[i] = draw;
	t->dev[i] = dev;
	t->tag[i] = tag;
	return 1;
}

#endif
