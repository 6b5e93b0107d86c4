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

#endif
