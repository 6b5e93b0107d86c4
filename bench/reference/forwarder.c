// The C reference forwarder: the limit mediarelay's engine is measured against (bench/README.md).
//
// The same forwarding loop as each backend of Sources/DatagramEngine, structure for structure,
// with the same sizes (batch 64, send queue 1024, 2048-byte buffers, 4096 provided buffers):
//   perpacket  epoll_wait, then recvmsg per datagram until EAGAIN, sendmsg per datagram
//   mmsg       epoll_wait, then recvmmsg(MSG_WAITFORONE) per ready socket, sendmmsg per run of one socket
//   uring      multishot IORING_OP_RECVMSG over a provided-buffer ring, every SENDMSG of a turn
//              in one submit, received buffers lent to the sends and given back next turn
//   +gso       (mmsg, uring) equal-size runs to one destination with one TOS byte leave as one
//              sendmsg with UDP_SEGMENT (at most 64 segments, 65,000 bytes; the last may be shorter)
//   +gro       (mmsg, uring) UDP_GRO on every socket: a coalesced buffer is split in place into
//              its datagrams (segment size from the UDP_GRO cmsg), so with +gso it leaves again
//              as one GSO send. Receive buffers are then 64 KiB: 64 on mmsg, 256 provided
//              buffers on uring instead of 4096 of 2 KiB (the engine's byte budget gives 256)
// Every datagram's TOS byte is read (IP_RECVTOS / IPV6_RECVTCLASS) and set (IP_TOS /
// IPV6_TCLASS cmsg), the kernel's drop counter (SO_RXQ_OVFL) and truncation are checked, and
// the same counters are kept, so the work per datagram is the engine's: no less, no more.
//
// Two ways to route, the two mediarelay has:
//   --to HOST:PORT  a forward rule: whatever arrives leaves through a second socket to HOST:PORT
//                   (engine-bench's forwarder);
//   --legs N        N two-leg sessions, 2N sockets on --listen's address at ports the kernel
//                   picks: each leg latches onto the first source that sends to it and forwards
//                   to the other leg's peer (what the relay's sessions do; used by `make demo`).
//                   --legs-file FILE gets one line per session, its two legs' HOST:PORT.
// It prints "listening on HOST:PORT" (the first socket) when ready and runs until SIGTERM.
// --stats FILE: the counters are stored in FILE (created, 64 bytes of u64: datagrams in, out,
// syscalls, GSO segments, send errors, GRO segments) after every turn,
// so a harness can read them without a system call from the forwarder.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
enum { BATCH = 64, SEND_CAPACITY = 1024, MAX_DATAGRAM = 2048, CONTROL = 64, MAX_SEGMENTS = 64,
       MAX_GSO_BYTES = 65000, URING_BUFFERS = 4096, NAME_LENGTH = 32, STASH_CAPACITY = 4096 + 16384,
       GRO_BUFFER = 65536, MAX_GRO_SEGMENTS = 64, URING_GRO_BUFFERS = 256 };
// A receive's control space, the engine's ReceiveMetadata.capacity: the drop counter, UDP_GRO
// and the TOS byte at once (a smaller one loses the TOS byte, which the kernel writes last).
#define RX_CONTROL (3 * CMSG_SPACE(sizeof(int)))
enum { PERPACKET, MMSG, URING };
enum { TAG_RECEIVE = 1, TAG_SEND = 2, TAG_WAKE = 3 };
#define TAG(kind, index) ((uint64_t)(kind) << 56 | (uint64_t)(index))

struct leg { int fd, ipv4, gso, latched; socklen_t peer_length; struct sockaddr_storage peer; uint32_t overflow; };
struct received { int leg; uint8_t tos; const void *bytes; size_t length; struct sockaddr_storage source; socklen_t source_length; };
struct outgoing { int leg; uint8_t tos; const void *bytes; size_t length; const struct sockaddr_storage *to; socklen_t to_length; };
struct message { int leg, first, segments; size_t size, bytes; uint8_t tos; };
struct counters { uint64_t in, out, syscalls, gso_segments, gro_segments, bytes_in, bytes_out, ecn_in[4], ecn_out[4], kernel_drops,
                  truncated, send_errors, gso_fallbacks, restarts, receive_failures; };

static int backend, gso, gro, leg_count, fixed_route, wake_fd, epoll_fd;
static volatile sig_atomic_t stopping;
static struct leg *legs;
static struct sockaddr_storage destination;
static socklen_t destination_length;
static struct counters c;
static uint64_t *published;
static struct received received[BATCH * MAX_GRO_SEGMENTS];  // room for a batch of GRO buffers, split
static int received_count;
static struct outgoing outgoing[SEND_CAPACITY];
static int outgoing_count;
// Receive vectors (epoll backends) and send vectors, allocated once.
static struct mmsghdr rx_headers[BATCH], tx_headers[SEND_CAPACITY];
static struct iovec rx_iovecs[BATCH], tx_iovecs[SEND_CAPACITY];
static struct sockaddr_storage rx_names[BATCH], tx_names[SEND_CAPACITY];
static char rx_control[BATCH][RX_CONTROL] __attribute__((aligned(16))), tx_control[SEND_CAPACITY][CONTROL] __attribute__((aligned(16)));
static char *rx_payloads;  // BATCH buffers of rx_size bytes
static size_t rx_size;
static struct message messages[SEND_CAPACITY];
static int message_count, rx_used;
// io_uring state.
static struct io_uring ring;
static struct io_uring_buf_ring *buffer_ring;
static char *buffers;
static size_t buffer_size;
static unsigned uring_buffers;  // URING_BUFFERS, or URING_GRO_BUFFERS with +gro
static struct msghdr template;
static uint16_t held[URING_BUFFERS];
static int held_count, recycled, outstanding_sends;
static struct io_uring_cqe *cqes[512];
static struct { uint64_t tag; int32_t res; uint32_t flags; } *stash;
static int stash_head, stash_count;

static void fail(const char *what) { fprintf(stderr, "forwarder: %s: %s\n", what, strerror(errno)); exit(1); }

static int parse_address(const char *text, struct sockaddr_storage *out, socklen_t *length) {
    char host[128];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof host) return -1;
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    int port = atoi(colon + 1);
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *length = sizeof *v4;
        return 0;
    }
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { host[strlen(host) - 1] = 0; memmove(host, host + 1, strlen(host)); }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1) return -1;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *length = sizeof *v6;
    return 0;
}

static void set_int(int fd, int level, int name, int value) {
    if (setsockopt(fd, level, name, &value, sizeof value) != 0) fail("setsockopt");
}

// As UDPSocket: non-blocking, TOS reported, drop counter on, 4 MiB buffers (FORCE when capped),
// GSO probed with the socket option and reset (the sends ask for it per message).
static int open_socket(struct leg *leg, const struct sockaddr_storage *address, socklen_t length) {
    int family = address->ss_family, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    if (family == AF_INET6) { set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1); set_int(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1); }
    else set_int(fd, IPPROTO_IP, IP_RECVTOS, 1);
    set_int(fd, SOL_SOCKET, SO_RXQ_OVFL, 1);
    int names[2][2] = { { SO_RCVBUF, SO_RCVBUFFORCE }, { SO_SNDBUF, SO_SNDBUFFORCE } };
    for (int i = 0; i < 2; i++) {
        int want = 4 << 20, granted = 0;
        socklen_t size = sizeof granted;
        setsockopt(fd, SOL_SOCKET, names[i][0], &want, sizeof want);
        getsockopt(fd, SOL_SOCKET, names[i][0], &granted, &size);
        if (granted < want * 2) setsockopt(fd, SOL_SOCKET, names[i][1], &want, sizeof want);
    }
    if (bind(fd, (const struct sockaddr *)address, length) != 0) { int e = errno; close(fd); errno = e; return -1; }
    int size = 1200;
    leg->gso = setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &size, sizeof size) == 0;
    size = 0;
    setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &size, sizeof size);
    if (gro) set_int(fd, IPPROTO_UDP, UDP_GRO, 1);
    leg->fd = fd;
    leg->ipv4 = family == AF_INET;
    return 0;
}

static int same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
    return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

// One control message of a received datagram: its TOS byte, its GRO segment size, or the
// socket's drop counter.
static void read_control(int leg, struct cmsghdr *cmsg, uint8_t *tos, int *segment) {
    if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS) *tos = *CMSG_DATA(cmsg);
    else if (cmsg->cmsg_level == IPPROTO_UDP && cmsg->cmsg_type == UDP_GRO) memcpy(segment, CMSG_DATA(cmsg), sizeof *segment);
    else if (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_TCLASS) *tos = (uint8_t)*(int *)CMSG_DATA(cmsg);
    else if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SO_RXQ_OVFL) {
        uint32_t count;
        memcpy(&count, CMSG_DATA(cmsg), 4);
        c.kernel_drops += count - legs[leg].overflow;
        legs[leg].overflow = count;
    }
}

// One received buffer whose payload, source, TOS byte and GRO segment size (0: one datagram)
// are known, split into its datagrams in place (EngineState.deliver).
static void accept_datagram(int leg, uint8_t tos, int segment, int truncated, const char *payload, size_t length,
                            const void *name, socklen_t name_length) {
    size_t step = segment > 0 && (size_t)segment < length ? (size_t)segment : length;
    if (truncated || step > MAX_DATAGRAM) { c.truncated++; return; }
    if (name_length == 0 || received_count >= BATCH * MAX_GRO_SEGMENTS) return;
    size_t offset = 0;
    do {
        size_t part = length - offset < step ? length - offset : step;
        struct received *r = &received[received_count++];
        r->leg = leg;
        r->tos = tos;
        r->bytes = payload + offset;
        r->length = part;
        r->source_length = name_length > sizeof r->source ? sizeof r->source : name_length;
        memcpy(&r->source, name, r->source_length);
        c.in++;
        c.bytes_in += part;
        c.ecn_in[tos & 3]++;
        if (step < length) c.gro_segments++;
        offset += part;
    } while (offset < length && received_count < BATCH * MAX_GRO_SEGMENTS);
    if (offset < length) c.truncated++;
}

// From a recvmsg / recvmmsg header.
static void accept_message(int leg, struct mmsghdr *message, const void *payload) {
    struct msghdr *header = &message->msg_hdr;
    uint8_t tos = 0;
    int segment = 0;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(header); cmsg; cmsg = CMSG_NXTHDR(header, cmsg)) read_control(leg, cmsg, &tos, &segment);
    accept_datagram(leg, tos, segment, header->msg_flags & MSG_TRUNC, payload, message->msg_len, header->msg_name, header->msg_namelen);
}

// From a provided buffer filled by io_uring's multishot RECVMSG, walked with liburing's helpers.
static void accept_uring(int leg, struct io_uring_recvmsg_out *out, int32_t result) {
    uint8_t tos = 0;
    int segment = 0;
    for (struct cmsghdr *cmsg = io_uring_recvmsg_cmsg_firsthdr(out, &template); cmsg;
         cmsg = io_uring_recvmsg_cmsg_nexthdr(out, &template, cmsg)) read_control(leg, cmsg, &tos, &segment);
    accept_datagram(leg, tos, segment, out->flags & MSG_TRUNC, io_uring_recvmsg_payload(out, &template),
                    io_uring_recvmsg_payload_length(out, result, &template), io_uring_recvmsg_name(out), out->namelen);
}

static void flush(void);

static void enqueue(int leg, const struct sockaddr_storage *to, socklen_t to_length, uint8_t tos, const void *bytes, size_t length) {
    if (outgoing_count == SEND_CAPACITY) flush();
    outgoing[outgoing_count++] = (struct outgoing){ leg, tos, bytes, length, to, to_length };
}

// The routing: a forward rule (everything to one destination through the second socket), or
// sessions (a leg latches its first source; datagrams go to the other leg's peer).
static void route(void) {
    for (int i = 0; i < received_count; i++) {
        struct received *r = &received[i];
        if (fixed_route) { enqueue(1, &destination, destination_length, r->tos, r->bytes, r->length); continue; }
        struct leg *from = &legs[r->leg], *to = &legs[r->leg ^ 1];
        if (!from->latched || !same_address(&from->peer, &r->source)) {
            if (from->latched) continue;  // a second source while the first still talks: refused
            if (to->latched && same_address(&to->peer, &r->source)) continue;
            memcpy(&from->peer, &r->source, r->source_length);
            from->peer_length = r->source_length;
            from->latched = 1;
        }
        if (to->latched) enqueue(r->leg ^ 1, &to->peer, to->peer_length, r->tos, r->bytes, r->length);
    }
}

static size_t write_control(char *control, int ipv4, uint8_t tos, uint16_t segment) {
    memset(control, 0, CONTROL);
    struct cmsghdr *cmsg = (struct cmsghdr *)control;
    int value = tos;
    cmsg->cmsg_level = ipv4 ? IPPROTO_IP : IPPROTO_IPV6;
    cmsg->cmsg_type = ipv4 ? IP_TOS : IPV6_TCLASS;
    cmsg->cmsg_len = CMSG_LEN(sizeof value);
    memcpy(CMSG_DATA(cmsg), &value, sizeof value);
    size_t used = CMSG_SPACE(sizeof value);
    if (segment) {
        cmsg = (struct cmsghdr *)(control + used);
        cmsg->cmsg_level = IPPROTO_UDP;
        cmsg->cmsg_type = UDP_SEGMENT;
        cmsg->cmsg_len = CMSG_LEN(sizeof segment);
        memcpy(CMSG_DATA(cmsg), &segment, sizeof segment);
        used += CMSG_SPACE(sizeof segment);
    }
    return used;
}

// SendVectors.build: one message per datagram, or per GSO run of equal size, destination and
// TOS, which a shorter datagram may end (so a GRO buffer with a short last segment is one send).
static void build(void) {
    message_count = 0;
    for (int index = 0; index < outgoing_count;) {
        struct outgoing *first = &outgoing[index];
        struct leg *leg = &legs[first->leg];
        tx_iovecs[index] = (struct iovec){ (void *)first->bytes, first->length };
        int segments = 1;
        size_t bytes = first->length;
        if (gso && backend != PERPACKET && leg->gso && first->length > 0) {
            while (index + segments < outgoing_count && segments < MAX_SEGMENTS && (segments + 1) * first->length <= MAX_GSO_BYTES) {
                struct outgoing *next = &outgoing[index + segments];
                if (next->leg != first->leg || next->length == 0 || next->length > first->length || next->tos != first->tos ||
                    next->to_length != first->to_length || !same_address(next->to, first->to)) break;
                tx_iovecs[index + segments] = (struct iovec){ (void *)next->bytes, next->length };
                segments++;
                bytes += next->length;
                if (next->length < first->length) break;  // only the last segment may be shorter
            }
        }
        int m = message_count++;
        memcpy(&tx_names[m], first->to, first->to_length);
        size_t control_length = write_control(tx_control[m], leg->ipv4, first->tos, segments > 1 ? first->length : 0);
        tx_headers[m].msg_hdr = (struct msghdr){ &tx_names[m], first->to_length, &tx_iovecs[index], segments, tx_control[m], control_length, 0 };
        tx_headers[m].msg_len = 0;
        messages[m] = (struct message){ first->leg, index, segments, first->length, bytes, first->tos };
        index += segments;
    }
    outgoing_count = 0;
}

static void note_sent(int m) {
    uint64_t segments = messages[m].segments;
    c.out += segments;
    c.bytes_out += messages[m].bytes;
    c.ecn_out[messages[m].tos & 3] += segments;
    if (segments > 1) c.gso_segments += segments;
}

// A refused GSO send turns GSO off for its socket and goes again one datagram at a time.
static void note_failed(int m, int code) {
    struct message *message = &messages[m];
    if (message->segments <= 1 || (code != EIO && code != EINVAL)) { c.send_errors += message->segments; return; }
    struct leg *leg = &legs[message->leg];
    struct msghdr *header = &tx_headers[m].msg_hdr;
    leg->gso = 0;
    c.gso_fallbacks++;
    header->msg_controllen = write_control(header->msg_control, leg->ipv4, message->tos, 0);
    header->msg_iovlen = 1;
    for (int s = 0; s < message->segments; s++) {
        header->msg_iov = &tx_iovecs[message->first + s];
        c.syscalls++;
        if (sendmsg(leg->fd, header, 0) >= 0) { c.out++; c.bytes_out += header->msg_iov->iov_len; c.ecn_out[message->tos & 3]++; }
        else c.send_errors++;
    }
}

static void send_with_sendmsg(void) {
    for (int m = 0; m < message_count; m++) {
        c.syscalls++;
        if (sendmsg(legs[messages[m].leg].fd, &tx_headers[m].msg_hdr, 0) >= 0) note_sent(m);
        else note_failed(m, errno);
    }
}

static void send_with_sendmmsg(void) {
    for (int start = 0; start < message_count;) {
        int end = start + 1;
        while (end < message_count && messages[end].leg == messages[start].leg) end++;
        for (int next = start; next < end;) {
            c.syscalls++;
            int sent = sendmmsg(legs[messages[start].leg].fd, &tx_headers[next], end - next, 0);
            if (sent > 0) { for (int m = next; m < next + sent; m++) note_sent(m); next += sent; }
            else if (errno == EAGAIN || errno == ENOBUFS) { for (int m = next; m < end; m++) c.send_errors += messages[m].segments; next = end; }
            else if (errno != EINTR) note_failed(next++, errno);
        }
        start = end;
    }
}

static void receive_with_poller(void) {
    struct epoll_event events[BATCH];
    for (int i = 0; i < rx_used; i++) {
        rx_headers[i].msg_hdr = (struct msghdr){ &rx_names[i], sizeof rx_names[i], &rx_iovecs[i], 1, rx_control[i], RX_CONTROL, 0 };
        rx_headers[i].msg_len = 0;
    }
    int ready = epoll_wait(epoll_fd, events, BATCH, 20);
    c.syscalls++;
    int used = 0;
    for (int e = 0; e < ready; e++) {
        if (events[e].data.u64 == UINT64_MAX) {
            uint64_t value;
            c.syscalls++;
            (void)!read(wake_fd, &value, 8);
            continue;
        }
        int leg = (int)events[e].data.u64;
        if (used >= BATCH) continue;
        int count = 0;
        if (backend == MMSG) {
            count = recvmmsg(legs[leg].fd, &rx_headers[used], BATCH - used, MSG_WAITFORONE | MSG_DONTWAIT, NULL);
            c.syscalls++;
            if (count <= 0) continue;
        } else {
            while (used + count < BATCH) {
                ssize_t length = recvmsg(legs[leg].fd, &rx_headers[used + count].msg_hdr, MSG_DONTWAIT);
                c.syscalls++;
                if (length < 0) break;
                rx_headers[used + count].msg_len = length;
                count++;
            }
        }
        for (int i = used; i < used + count; i++) accept_message(leg, &rx_headers[i], rx_payloads + (size_t)i * rx_size);
        used += count;
    }
    rx_used = used;
}

static void recycle(uint16_t id) {
    io_uring_buf_ring_add(buffer_ring, buffers + (size_t)id * buffer_size, buffer_size, id,
                          io_uring_buf_ring_mask(uring_buffers), recycled++);
}

static void commit_recycled(void) {
    if (recycled) io_uring_buf_ring_advance(buffer_ring, recycled);
    recycled = 0;
}

static void arm(int leg) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recvmsg_multishot(sqe, legs[leg].fd, &template, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
    io_uring_sqe_set_data64(sqe, TAG(TAG_RECEIVE, leg));
}

static uint64_t wake_value;
static void arm_wake(void) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, wake_fd, &wake_value, 8, 0);
    io_uring_sqe_set_data64(sqe, TAG(TAG_WAKE, 0));
}

static void handle_send(uint64_t tag, int32_t res) {
    outstanding_sends--;
    if (res >= 0) note_sent((int)(tag & 0xFFFFFF));
    else note_failed((int)(tag & 0xFFFFFF), -res);
}

static void handle(uint64_t tag, int32_t res, uint32_t flags) {
    int kind = tag >> 56, leg = tag & 0xFFFFFF;
    if (kind == TAG_SEND) { handle_send(tag, res); return; }
    if (kind == TAG_WAKE) { arm_wake(); return; }
    if (flags & IORING_CQE_F_BUFFER) {
        uint16_t id = flags >> IORING_CQE_BUFFER_SHIFT;
        char *buffer = buffers + (size_t)id * buffer_size;
        struct io_uring_recvmsg_out *out = res >= 0 ? io_uring_recvmsg_validate(buffer, res, &template) : NULL;
        int before = received_count;
        if (out) accept_uring(leg, out, res);
        else if (res >= 0) c.truncated++;
        if (received_count > before) held[held_count++] = id;
        else recycle(id);
    }
    if (!(flags & IORING_CQE_F_MORE)) {
        // The multishot receive ended (out of buffers, or the kernel chose to): re-arm; a
        // lasting error would spin, so it is counted instead, as the engine does.
        if (res >= 0 || res == -ENOBUFS || res == -EINTR) { c.restarts++; arm(leg); }
        else c.receive_failures++;
    }
}

static void receive_with_ring(void) {
    for (int i = 0; i < held_count; i++) recycle(held[i]);
    held_count = 0;
    commit_recycled();
    while (stash_count > 0 && received_count < BATCH) {
        handle(stash[stash_head].tag, stash[stash_head].res, stash[stash_head].flags);
        stash_head++;
        if (--stash_count == 0) stash_head = 0;
    }
    if (received_count == 0) {
        unsigned ready = io_uring_peek_batch_cqe(&ring, cqes, 512);
        if (ready == 0) {
            struct __kernel_timespec timeout = { 0, 20 * 1000000 };
            struct io_uring_cqe *first;
            c.syscalls++;
            io_uring_submit_and_wait_timeout(&ring, &first, 1, &timeout, NULL);
            ready = io_uring_peek_batch_cqe(&ring, cqes, 512);
        }
        unsigned consumed = 0;
        while (consumed < ready && received_count < BATCH) {
            handle(cqes[consumed]->user_data, cqes[consumed]->res, cqes[consumed]->flags);
            consumed++;
        }
        if (consumed) io_uring_cq_advance(&ring, consumed);
    }
    if (io_uring_sq_ready(&ring)) { c.syscalls++; io_uring_submit(&ring); }
    commit_recycled();
}

static void send_with_ring(void) {
    for (int m = 0; m < message_count; m++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        if (!sqe) { c.syscalls++; io_uring_submit_and_get_events(&ring); sqe = io_uring_get_sqe(&ring); }
        io_uring_prep_sendmsg(sqe, legs[messages[m].leg].fd, &tx_headers[m].msg_hdr, MSG_DONTWAIT);
        io_uring_sqe_set_data64(sqe, TAG(TAG_SEND, m));
    }
    outstanding_sends += message_count;
    c.syscalls++;
    io_uring_submit_and_get_events(&ring);
    while (outstanding_sends > 0) {
        unsigned ready = io_uring_peek_batch_cqe(&ring, cqes, 512);
        for (unsigned i = 0; i < ready; i++) {
            if (cqes[i]->user_data >> 56 == TAG_SEND) handle_send(cqes[i]->user_data, cqes[i]->res);
            else {
                if (stash_head + stash_count == STASH_CAPACITY) {
                    memmove(stash, stash + stash_head, stash_count * sizeof *stash);
                    stash_head = 0;
                }
                stash[stash_head + stash_count++] = (typeof(*stash)){ cqes[i]->user_data, cqes[i]->res, cqes[i]->flags };
            }
        }
        if (ready) io_uring_cq_advance(&ring, ready);
        if (outstanding_sends > 0 && ready == 0) { c.syscalls++; io_uring_submit_and_wait(&ring, 1); }
    }
}

static void flush(void) {
    if (outgoing_count == 0) return;
    build();
    if (backend == URING) send_with_ring();
    else if (backend == MMSG) send_with_sendmmsg();
    else send_with_sendmsg();
}

static void setup_ring(void) {
    struct io_uring_params params = { .flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER |
                                               IORING_SETUP_DEFER_TASKRUN, .cq_entries = 16384 };
    int result = io_uring_queue_init_params(2048, &ring, &params);
    if (result == -EINVAL) {
        params = (struct io_uring_params){ .flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL, .cq_entries = 16384 };
        result = io_uring_queue_init_params(2048, &ring, &params);
    }
    if (result != 0) { errno = -result; fail("io_uring_queue_init_params"); }
    // With GRO a buffer must hold a whole coalesced burst: fewer, larger buffers, as the engine.
    uring_buffers = gro ? URING_GRO_BUFFERS : URING_BUFFERS;
    buffer_size = sizeof(struct io_uring_recvmsg_out) + NAME_LENGTH + RX_CONTROL + (gro ? GRO_BUFFER : MAX_DATAGRAM);
    if (posix_memalign((void **)&buffer_ring, getpagesize(), uring_buffers * sizeof(struct io_uring_buf))) fail("posix_memalign");
    memset(buffer_ring, 0, uring_buffers * sizeof(struct io_uring_buf));
    if (!(buffers = aligned_alloc(64, uring_buffers * buffer_size))) fail("aligned_alloc");
    // Room for every completion that can wait while sends are reaped, as the engine's stash.
    if (!(stash = calloc(STASH_CAPACITY, sizeof *stash))) fail("calloc");
    struct io_uring_buf_reg registration = { .ring_addr = (uint64_t)(uintptr_t)buffer_ring, .ring_entries = uring_buffers, .bgid = 0 };
    if ((result = io_uring_register_buf_ring(&ring, &registration, 0)) != 0) { errno = -result; fail("io_uring_register_buf_ring"); }
    io_uring_buf_ring_init(buffer_ring);
    for (int id = 0; id < (int)uring_buffers; id++) recycle(id);
    commit_recycled();
    template.msg_namelen = NAME_LENGTH;
    template.msg_controllen = RX_CONTROL;
    for (int leg = 0; leg < leg_count; leg++) arm(leg);
    arm_wake();
}

static void stop(int signal) { (void)signal; stopping = 1; }

// A socket's bound address as HOST:PORT or [HOST]:PORT, written into `text` (80 bytes).
static const char *local_address(int fd, char *text) {
    struct sockaddr_storage bound;
    socklen_t length = sizeof bound;
    char host[INET6_ADDRSTRLEN];
    getsockname(fd, (struct sockaddr *)&bound, &length);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&bound;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&bound;
    if (bound.ss_family == AF_INET) snprintf(text, 80, "%s:%d", inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host), ntohs(v4->sin_port));
    else snprintf(text, 80, "[%s]:%d", inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host), ntohs(v6->sin6_port));
    return text;
}

int main(int argc, char **argv) {
    const char *listen = NULL, *stats = NULL, *legs_file = NULL;
    int sessions = 0;
    for (int i = 1; i < argc; i++) {
        static char missing[1];  // not a literal, so that the compiler does not fold comparisons with it
        const char *value = i + 1 < argc ? argv[i + 1] : missing;
        if (!strcmp(argv[i], "--backend")) {
            backend = !strncmp(value, "uring", 5) ? URING : !strncmp(value, "mmsg", 4) ? MMSG : PERPACKET;
            gso = strstr(value, "+gso") != NULL;
            gro = strstr(value, "+gro") != NULL;
            if (strncmp(value, "uring", 5) && strncmp(value, "mmsg", 4) && strcmp(value, "perpacket")) {
                fprintf(stderr, "forwarder: --backend %s: perpacket, or mmsg or uring, each with +gso, +gro or both\n", value);
                return 2;
            }
            if (gro && backend == PERPACKET) { fprintf(stderr, "forwarder: --backend %s: +gro needs mmsg or uring\n", value); return 2; }
        } else if (!strcmp(argv[i], "--listen")) listen = value;
        else if (!strcmp(argv[i], "--to")) {
            if (parse_address(value, &destination, &destination_length)) { fprintf(stderr, "forwarder: --to %s: HOST:PORT\n", value); return 2; }
            fixed_route = 1;
        } else if (!strcmp(argv[i], "--legs")) sessions = atoi(value);
        else if (!strcmp(argv[i], "--legs-file")) legs_file = value;
        else if (!strcmp(argv[i], "--stats")) stats = value;
        else {
            fprintf(stderr, "usage: forwarder --backend perpacket|mmsg[+gso][+gro]|uring[+gso][+gro] --listen HOST:PORT (--to HOST:PORT | --legs N --legs-file FILE) [--stats FILE]\n");
            return 2;
        }
        i++;
    }
    struct sockaddr_storage local;
    socklen_t local_length;
    if (!listen || parse_address(listen, &local, &local_length) || fixed_route == (sessions > 0) || sessions < 0 || sessions > 30000 ||
        (sessions > 0 && !legs_file)) {
        fprintf(stderr, "forwarder: needs --listen HOST:PORT and one of --to HOST:PORT or --legs 1...30000 --legs-file FILE\n");
        return 2;
    }
    struct rlimit files = { 65536, 65536 };
    setrlimit(RLIMIT_NOFILE, &files);
    leg_count = fixed_route ? 2 : 2 * sessions;
    legs = calloc(leg_count, sizeof *legs);
    struct sockaddr_in *port4 = (struct sockaddr_in *)&local;
    struct sockaddr_in6 *port6 = (struct sockaddr_in6 *)&local;
    in_port_t *port = local.ss_family == AF_INET ? &port4->sin_port : &port6->sin6_port;
    if (fixed_route) {
        if (open_socket(&legs[0], &local, local_length)) fail("bind --listen");
        *port = 0;
        if (open_socket(&legs[1], &local, local_length)) fail("bind the outbound socket");
    } else {
        // Ports the kernel picks: a machine shared with other programs rarely has long runs of
        // free ports, so the legs are listed in --legs-file instead of following a pattern.
        FILE *list = fopen(legs_file, "w");
        if (!list) fail(legs_file);
        for (int leg = 0; leg < leg_count; leg++) {
            *port = 0;
            if (open_socket(&legs[leg], &local, local_length)) fail("bind a leg");
            char address[80];
            fprintf(list, "%s%c", local_address(legs[leg].fd, address), leg % 2 ? '\n' : ' ');
        }
        if (fclose(list)) fail(legs_file);
    }
    if (stats) {
        int fd = open(stats, O_RDWR | O_CREAT, 0644);
        if (fd < 0 || ftruncate(fd, 64) != 0) fail(stats);
        published = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (published == MAP_FAILED) fail("mmap --stats");
        close(fd);
        memset(published, 0, 64);
    }
    if ((wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) fail("eventfd");
    if (backend == URING) setup_ring();
    else {
        if ((epoll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0) fail("epoll_create1");
        struct epoll_event event = { .events = EPOLLIN, .data.u64 = UINT64_MAX };
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event)) fail("epoll_ctl");
        for (int leg = 0; leg < leg_count; leg++) {
            event.data.u64 = leg;
            if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, legs[leg].fd, &event)) fail("epoll_ctl");
        }
        rx_size = gro ? GRO_BUFFER : MAX_DATAGRAM;
        if (!(rx_payloads = aligned_alloc(64, BATCH * rx_size))) fail("aligned_alloc");
        for (int i = 0; i < BATCH; i++) rx_iovecs[i] = (struct iovec){ rx_payloads + (size_t)i * rx_size, rx_size };
        rx_used = BATCH;
    }
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    char address[80];
    printf("listening on %s\n", local_address(legs[0].fd, address));
    fflush(stdout);
    // Word 7 of the counters file is a stop flag the harness sets: under valgrind a SIGTERM
    // reaches an idle forwarder only after many seconds of empty turns, which would be counted.
    while (!stopping && !(published && __atomic_load_n(&published[7], __ATOMIC_RELAXED))) {
        received_count = 0;
        if (backend == URING) receive_with_ring();
        else receive_with_poller();
        route();
        flush();
        if (published) {
            __atomic_store_n(&published[0], c.in, __ATOMIC_RELAXED);
            __atomic_store_n(&published[1], c.out, __ATOMIC_RELAXED);
            __atomic_store_n(&published[2], c.syscalls, __ATOMIC_RELAXED);
            __atomic_store_n(&published[3], c.gso_segments, __ATOMIC_RELAXED);
            __atomic_store_n(&published[4], c.send_errors, __ATOMIC_RELAXED);
            __atomic_store_n(&published[5], c.gro_segments, __ATOMIC_RELAXED);
        }
    }
    return 0;
}
