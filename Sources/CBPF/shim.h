// The C side of the kernel fast path: libbpf (Debian: libbpf-dev) and the layout of the maps
// the BPF program shares with FastPath (fastpath_abi.h). Only FastPath imports this module.
#ifndef MEDIARELAY_CBPF_SHIM_H
#define MEDIARELAY_CBPF_SHIM_H

#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "fastpath_abi.h"

// libbpf 1.1's enum bpf_attach_type predates tcx; the kernel's numbers (include/uapi/linux/bpf.h).
#define MR_BPF_TCX_INGRESS 46
#define MR_BPF_TCX_EGRESS 47
// <linux/if_link.h>: an XDP link in the driver's own receive path (native), never generic.
#define MR_XDP_FLAGS_DRV_MODE (1U << 2)

// The user-space side of struct mr_fp_slot, which the BPF program reads and writes at the same
// time: Swift has no atomics on memory it did not allocate, so these few are C's.
static inline __u64 mr_fp_slot_last_forwarded(const struct mr_fp_slot *slot)
{
    return __atomic_load_n(&slot->last_forwarded_ns, __ATOMIC_RELAXED);
}

static inline void mr_fp_slot_set_last_forwarded(struct mr_fp_slot *slot, __u64 time)
{
    __atomic_store_n(&slot->last_forwarded_ns, time, __ATOMIC_RELAXED);
}

static inline void mr_fp_slot_set_expires(struct mr_fp_slot *slot, __u64 time)
{
    __atomic_store_n(&slot->expires_ns, time, __ATOMIC_RELAXED);
}

static inline __s64 mr_fp_slot_exchange_credit(struct mr_fp_slot *slot, __s64 credit)
{
    return __atomic_exchange_n(&slot->credit, credit, __ATOMIC_SEQ_CST);
}

static inline __s64 mr_fp_slot_exchange_packet_credit(struct mr_fp_slot *slot, __s64 credit)
{
    return __atomic_exchange_n(&slot->packet_credit, credit, __ATOMIC_SEQ_CST);
}

#endif
