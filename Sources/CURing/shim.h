// The C side of mediarelay: liburing, and static inline wrappers for what Swift cannot import
// (the CMSG_* macros, eventfd flags). Do not define _GNU_SOURCE here: it makes the system
// headers disagree with the Glibc module. liburing.h defines what it needs.
#ifndef MEDIARELAY_CURING_SHIM_H
#define MEDIARELAY_CURING_SHIM_H

// The system headers come first so that they are read with the same feature macros as the
// Glibc module; liburing.h defines _GNU_SOURCE itself, too late to change them.
#include <sys/socket.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <liburing.h>

static inline unsigned char *mr_cmsg_data(struct cmsghdr *cmsg) { return CMSG_DATA(cmsg); }

/// Walks the control messages in `length` bytes at `control`: the first one when `current` is
/// NULL, else the one after `current`; NULL at the end. Works on any control area (a msghdr's,
/// or the one inside an io_uring recvmsg buffer), so the engine has one walker for both. The
/// checks are CMSG_FIRSTHDR's and glibc's CMSG_NXTHDR's, written inline so that walking costs
/// no call into the C library per message.
static inline struct cmsghdr *mr_cmsg_walk(void *control, size_t length, struct cmsghdr *current) {
    unsigned char *end = (unsigned char *)control + length;
    unsigned char *next;
    if (current == NULL) {
        next = (unsigned char *)control;
    } else {
        if (current->cmsg_len < sizeof(struct cmsghdr)) return NULL;
        next = (unsigned char *)current + CMSG_ALIGN(current->cmsg_len);
    }
    if (next + sizeof(struct cmsghdr) > end) return NULL;
    if (current != NULL && next + CMSG_ALIGN(((struct cmsghdr *)next)->cmsg_len) > end) return NULL;
    return (struct cmsghdr *)next;
}
static inline size_t mr_cmsg_space(size_t length) { return CMSG_SPACE(length); }
static inline size_t mr_cmsg_len(size_t length) { return CMSG_LEN(length); }

/// Appends one control message of `length` bytes at `offset` in a control buffer of
/// `capacity` bytes and returns the new used length, or 0 when it would not fit. The caller
/// keeps msg_controllen equal to the returned length, so it can never be left wrong.
static inline size_t mr_cmsg_append(void *control, size_t capacity, size_t offset,
                                    int level, int type, const void *data, size_t length) {
    size_t space = CMSG_SPACE(length);
    if (offset + space > capacity) return 0;
    struct cmsghdr *cmsg = (struct cmsghdr *)((unsigned char *)control + offset);
    memset(cmsg, 0, space);
    cmsg->cmsg_level = level;
    cmsg->cmsg_type = type;
    cmsg->cmsg_len = CMSG_LEN(length);
    memcpy(CMSG_DATA(cmsg), data, length);
    return offset + space;
}

// recvmmsg, sendmmsg and struct mmsghdr are declared only under _GNU_SOURCE, which the Glibc
// module is not built with; the layout below is the kernel's, and the calls go straight in.
struct mr_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
static inline int mr_recvmmsg(int fd, struct mr_mmsghdr *vector, unsigned int length, int flags) {
    return (int)syscall(__NR_recvmmsg, fd, vector, length, flags, NULL);
}
static inline int mr_sendmmsg(int fd, struct mr_mmsghdr *vector, unsigned int length, int flags) {
    return (int)syscall(__NR_sendmmsg, fd, vector, length, flags);
}
static inline int mr_msg_waitforone(void) { return 0x10000; }
// accept4 is declared only under _GNU_SOURCE as well.
static inline int mr_accept4(int fd, int flags) {
    return (int)syscall(__NR_accept4, fd, NULL, NULL, flags);
}

static inline int mr_eventfd_nonblocking(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
static inline int mr_udp_segment(void) { return UDP_SEGMENT; }
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
static inline int mr_udp_gro(void) { return UDP_GRO; }
#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL 40
#endif
static inline int mr_so_rxq_ovfl(void) { return SO_RXQ_OVFL; }
// SO_TIMESTAMPNS picks its _OLD or _NEW value by the size of time_t, an expression Swift cannot
// import; on 64-bit Linux both carry the same struct timespec. The kernel answers with the
// SCM_ type matching the option set.
#ifndef SCM_TIMESTAMPNS
#define SCM_TIMESTAMPNS SO_TIMESTAMPNS
#endif
static inline int mr_so_timestampns(void) { return SO_TIMESTAMPNS; }
static inline int mr_scm_timestampns(void) { return SCM_TIMESTAMPNS; }

#endif
