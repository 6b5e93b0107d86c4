// Compiled with _GNU_SOURCE (unlike the Swift Glibc module), so recvmmsg and sendmmsg are the
// C library's own.
#define _GNU_SOURCE
#include "cloadgen.h"
#include <netinet/udp.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cmsghdr *lg_cmsg_next(void *control, size_t length, struct cmsghdr *current) {
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_control = control;
    message.msg_controllen = length;
    struct cmsghdr *next = current == NULL ? CMSG_FIRSTHDR(&message) : CMSG_NXTHDR(&message, current);
    if (next == NULL || next->cmsg_len < CMSG_LEN(0)) return NULL;
    if ((unsigned char *)next + next->cmsg_len > (unsigned char *)control + length) return NULL;
    return next;
}

unsigned char *lg_cmsg_data(struct cmsghdr *cmsg) { return CMSG_DATA(cmsg); }

size_t lg_cmsg_data_length(const struct cmsghdr *cmsg) { return cmsg->cmsg_len - CMSG_LEN(0); }

size_t lg_cmsg_write(void *control, size_t capacity, int level, int type, const void *data, size_t length) {
    if (CMSG_SPACE(length) > capacity) return 0;
    memset(control, 0, CMSG_SPACE(length));
    struct cmsghdr *cmsg = control;
    cmsg->cmsg_level = level;
    cmsg->cmsg_type = type;
    cmsg->cmsg_len = CMSG_LEN(length);
    memcpy(CMSG_DATA(cmsg), data, length);
    return CMSG_SPACE(length);
}

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
int lg_udp_segment(void) { return UDP_SEGMENT; }

_Static_assert(sizeof(struct lg_mmsghdr) == sizeof(struct mmsghdr), "mmsghdr layout");

int lg_recvmmsg(int fd, struct lg_mmsghdr *vector, unsigned int length, int flags) {
    return recvmmsg(fd, (struct mmsghdr *)vector, length, flags, NULL);
}

int lg_sendmmsg(int fd, struct lg_mmsghdr *vector, unsigned int length, int flags) {
    return sendmmsg(fd, (struct mmsghdr *)vector, length, flags);
}

int lg_cpu_mask_get(unsigned long long *mask) {
    *mask = 0;
    return syscall(SYS_sched_getaffinity, 0, sizeof *mask, mask) < 0 ? -1 : 0;
}

int lg_cpu_mask_set(int pid, unsigned long long mask) {
    return (int)syscall(SYS_sched_setaffinity, pid, sizeof mask, &mask);
}

#ifndef SCM_TIMESTAMPNS
#define SCM_TIMESTAMPNS SO_TIMESTAMPNS
#endif
int lg_so_timestampns(void) { return SO_TIMESTAMPNS; }
int lg_scm_timestampns(void) { return SCM_TIMESTAMPNS; }

int lg_sched_idle(void) {
    struct sched_param param = {.sched_priority = 0};
    return sched_setscheduler(0, SCHED_IDLE, &param);
}
