// The load generator's own small C side: what Swift cannot import from the C library (the
// CMSG_* macros; struct mmsghdr, recvmmsg and sendmmsg, and CPU affinity, which glibc
// declares only under _GNU_SOURCE). Deliberately not the relay's CURing shim: the load
// generator is the outside check that marks cross the relay intact, so it shares no packet
// code with the relay. engine-bench places its parts on CPUs through it too.
#ifndef MEDIARELAY_CLOADGEN_H
#define MEDIARELAY_CLOADGEN_H

#include <stddef.h>
#include <sys/socket.h>

/// Walks the control messages in `length` bytes at `control`: the first one when `current` is
/// NULL, else the next; NULL at the end or where a message would run past `length`.
struct cmsghdr *lg_cmsg_next(void *control, size_t length, struct cmsghdr *current);
/// The data of a control message, and how many bytes of it there are.
unsigned char *lg_cmsg_data(struct cmsghdr *cmsg);
size_t lg_cmsg_data_length(const struct cmsghdr *cmsg);

/// Writes one control message of `length` bytes into `control` (zeroed first) and returns the
/// bytes it takes (CMSG_SPACE), the value for msg_controllen; 0 when `capacity` is too small.
size_t lg_cmsg_write(void *control, size_t capacity, int level, int type, const void *data, size_t length);
/// UDP_SEGMENT, the socket option and control message of UDP GSO.
int lg_udp_segment(void);

/// The kernel's struct mmsghdr.
struct lg_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
int lg_recvmmsg(int fd, struct lg_mmsghdr *vector, unsigned int length, int flags);
int lg_sendmmsg(int fd, struct lg_mmsghdr *vector, unsigned int length, int flags);

/// The CPUs a benchmark may place its parts on (sched_getaffinity and sched_setaffinity, which
/// glibc declares only under _GNU_SOURCE). A mask of one 64-bit word: the kernel refuses it
/// (EINVAL) on machines with more than 64 CPUs, and callers then leave placement to the
/// scheduler. `pid` 0 is the calling thread; a thread id names one thread. 0, or -1 and errno.
int lg_cpu_mask_get(unsigned long long *mask);
int lg_cpu_mask_set(int pid, unsigned long long mask);

/// SO_TIMESTAMPNS and its control message's type: the C library picks the _OLD or _NEW value by
/// the size of time_t, an expression Swift cannot import.
int lg_so_timestampns(void);
int lg_scm_timestampns(void);

/// Moves the calling thread to SCHED_IDLE (declared only under _GNU_SOURCE): it runs only when
/// nothing else on its CPU wants to. 0, or -1 and errno.
int lg_sched_idle(void);

#endif
