/* tessera/placement.h — the placement plugin kind: placement group -> OSDs.
 *
 * Every client and server computes placement for itself from the cluster
 * map; there is no lookup table.  So a placement plugin must be a pure,
 * deterministic function of (map, rule, input, device state): the same
 * answer in every process on every host, byte for byte.
 *
 * The plugin owns the format of its map (topology and rules).  The map
 * travels inside the OSD map as an opaque blob produced by encode() or
 * compile(); every party load()s the same blob.  Device state that changes
 * often — up/down, in/out, reweight — is not in the blob: it is passed to
 * map() on every call as a weight vector, so a map epoch that only marks an
 * OSD down needs no new blob.
 *
 * An instance holds one map.  To keep the maps of several epochs at once
 * (peering compares them), create one instance per map.
 *
 * Threads.  load() runs alone: no other call on the instance overlaps it.
 * Every other operation — map(), max_devices(), rule_width(), and encode(),
 * compile() and decompile(), which do not use the loaded map — only reads
 * the instance and may be called from any thread, any number at once.
 * Nothing blocks (no I/O, no lock a caller could wait on); map() costs
 * microseconds, but load() and compile() of a large map take milliseconds
 * of CPU, so a daemon keeps those off its I/O and event-loop threads.
 * destroy() runs alone.
 *
 * The generic topology below is how tools and the conformance suite describe
 * a cluster to any placement plugin; a plugin may accept richer maps through
 * its own text form (compile()).
 *
 * Ownership: blobs and text returned through struct tsr_buf are allocated
 * with the host's alloc and released by the caller with the host's free.
 */
#ifndef TESSERA_PLACEMENT_H
#define TESSERA_PLACEMENT_H

#include <tessera/plugin.h>

TSR_BEGIN_DECLS

/* A growable byte buffer handed back to the caller. */
struct tsr_buf {
	void *data;
	size_t len;
};

/* Weights are 16.16 fixed point: 0x10000 is 1.0. */
#define TSR_WEIGHT_ONE 0x10000u

/* A position map() could not fill. */
#define TSR_PLACEMENT_NONE (-1)

/* A node of the hierarchy: devices have id >= 0, buckets id < 0. */
struct tsr_topo_item {
	int32_t id;
	int32_t parent;         /* bucket id; 0 for the root(s) */
	uint32_t type;          /* index into tsr_topology.types; devices 0 */
	uint32_t weight;        /* devices: capacity weight; buckets: ignored,
				   the sum of their children */
	const char *name;
};

/* How a rule picks N items. */
enum tsr_rule_mode {
	TSR_RULE_CHOOSELEAF = 1, /* N distinct failure domains, one device in each */
	TSR_RULE_CHOOSE = 2      /* N distinct devices directly */
};

struct tsr_topo_rule {
	uint32_t id;
	const char *name;
	int32_t root;           /* bucket to start from */
	uint32_t domain_type;   /* failure domain type (CHOOSELEAF) */
	uint32_t mode;          /* enum tsr_rule_mode */
};

struct tsr_topology {
	uint32_t ntypes;
	const char *const *types; /* types[0] is the device type, e.g. "osd" */
	uint32_t nitems;
	const struct tsr_topo_item *items;
	uint32_t nrules;
	const struct tsr_topo_rule *rules;
};

struct tsr_placement_ops {
	uint32_t size; /* sizeof(struct tsr_placement_ops) as built */

	/* Build the plugin's binary map from a generic topology. */
	int (*encode)(void *inst, const struct tsr_topology *topo,
		      struct tsr_buf *out, char *err, size_t errlen);
	/* Text form a person edits <-> binary map; decompile(compile(t)) is
	 * the canonical text and compile(decompile(b)) == b byte for byte. */
	int (*compile)(void *inst, const char *text, size_t len,
		       struct tsr_buf *out, char *err, size_t errlen);
	int (*decompile)(void *inst, const void *map, size_t len,
			 struct tsr_buf *out, char *err, size_t errlen);
	/* Make map the instance's current map (validating it: a malformed or
	 * hostile blob is an error, never a crash). */
	int (*load)(void *inst, const void *map, size_t len, char *err,
		    size_t errlen);

	/* Place input x (a PG seed, tsr_pg_seed: a pool's groups fill
	 * aligned blocks of 256 and runs of 65536 consecutive inputs, which a
	 * plugin may exploit to spread each device's draws evenly; answers
	 * must still depend on x alone) with rule, nrep replicas.  weights[d] is
	 * device d's current weight (0 = out or down; TSR_WEIGHT_ONE = fully
	 * in; in between, the device is skipped for a deterministic share of
	 * inputs); devices beyond nweights count as weight 0.  Writes nrep
	 * entries to out.  The rule modes defined so far are "firstn": the
	 * positions are an order of preference (primary first), filled from
	 * the front, TSR_PLACEMENT_NONE only in the tail when too few items
	 * can be found; when devices go out, every device of the result that
	 * stays in remains in the result (perhaps at another position).  A
	 * positional mode for erasure coding, where each shard keeps its OSD
	 * when another shard's fails, will be a new enum tsr_rule_mode value
	 * with its own guarantee.  Returns how many positions were filled, or
	 * a negative errno (-ENOENT for an unknown rule, -EINVAL for nrep
	 * above 64 or no map loaded). */
	int (*map)(void *inst, uint32_t rule, uint32_t x, uint32_t nrep,
		   const uint32_t *weights, uint32_t nweights, int32_t *out);

	/* Largest device id in the loaded map plus one. */
	uint32_t (*max_devices)(void *inst);

	/* How many distinct items rule can ever return: the failure domains
	 * (CHOOSELEAF) or devices (CHOOSE) under its root that hold a device.
	 * A pool whose size exceeds it can never be fully placed.  -ENOENT
	 * for an unknown rule. */
	int (*rule_width)(void *inst, uint32_t rule, uint32_t *width);

	/* ABI 1.0 ends here. */
};

TSR_END_DECLS

#endif
