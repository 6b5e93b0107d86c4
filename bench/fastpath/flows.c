// flows: the two ends of bench/fastpath-cpu.sh, written once so that every column of the
// benchmark (no relay, coturn, mediarelay's user-space path, its kernel fast path) has the same
// ends and the same system calls per datagram; only the path between them differs.
//
//   flows send MODE [options]      the client side (client namespace)
//     MODE plain  --to A.B.C.D:PORT        each flow sends straight to its peer (no relay)
//     MODE turn   --server A.B.C.D:PORT --user NAME:PASSWORD --to A.B.C.D:PORT
//                                          each flow is a TURN client over UDP: Allocate (long-term
//                                          credentials), ChannelBind 0x4000 to its peer, then
//                                          ChannelData (RFC 8656)
//     MODE legs   --legs FILE              each flow sends to its session's leg A (first field of
//                                          line i of FILE)
//     --flows N [1]  --rate R per flow, datagrams/s [50]  --size B payload bytes [160]
//     --seconds S [5]  --spread (flow i's peer is A.B.(C+i/250).(D+i%250), a peer address each)
//     --socket each|one [each]  one socket per flow, or one for all (sessions: one sender)
//     --echo  the peer echoes: read the flows' sockets and count what comes back
//     --idle S [= --seconds]  a quiet interval after set-up, before sending, for the idle CPU
//     --cgroup-fd N  also read cpuacct.usage open on descriptor N (the benchmark's own processes' CPU)
//   It sets everything up, measures /proc/stat over the idle interval, then over the data
//   phase (sending for S seconds, then up to 0.5 s for what is in flight), and prints one line
//     sent=N received=N idle_ticks=N idle_ns=N run_ticks=N run_ns=N own_idle_ns=N own_run_ns=N
//     setup_ms=N failed=N
//   where *_ticks are whole-machine busy clock ticks (every CPU: user, nice, system, irq,
//   softirq, steal), idle_ns and run_ns the intervals' lengths, own_* the cgroup's CPU in them.
//
//   flows echo --port P          the peer side: one socket on 0.0.0.0:P (with an anyIP route, every
//                                address of a range) echoing each datagram from the address it was
//                                sent to (IP_PKTINFO); recvmmsg and sendmmsg in batches
//   Both ends wake once a millisecond and take everything waiting, in every column, so their cost
//   per datagram does not follow how the path in between spaces the datagrams (woken for each
//   arrival, a receiver straight behind a veth sender pays a wake-up per datagram; behind a
//   batching relay, one per batch: the floor would cost more than a relay).
//   flows sink --port P [--legs FILE]  counts what arrives on 0.0.0.0:P; with --legs it first
//                                latches leg B of every session (second field of each line)
//   Both run until SIGTERM or SIGINT and then print "received=N" (echo: "echoed=N").
//
// Built as one program from flows.c, flows-turn.c and flows-peer.c (cc ... -lcrypto).
#define _GNU_SOURCE
#include "flows.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t stopping;
void on_signal(int signal) { (void)signal; stopping = 1; }

int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static long long busy_ticks(void)
{
    FILE *stat = fopen("/proc/stat", "r");
    long long user, nice, system, idle, iowait, irq, softirq, steal;
    if (!stat || fscanf(stat, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &user, &nice, &system, &idle, &iowait, &irq,
                        &softirq, &steal) != 8) {
        perror("flows: /proc/stat");
        exit(1);
    }
    fclose(stat);
    return user + nice + system + irq + softirq + steal;
}

// The CPU time of the processes of a cgroup (v1 cpuacct.usage, nanoseconds), 0 without one.
// It comes as a descriptor opened by the caller: `ip netns exec` mounts a sysfs of the
// namespace's own over /sys, where the cgroup file is not.
static int cgroup_usage = -1;
static long long own_ns(void)
{
    char text[32] = { 0 };
    if (cgroup_usage < 0 || pread(cgroup_usage, text, sizeof(text) - 1, 0) <= 0) return 0;
    return atoll(text);
}

void die(const char *what)
{
    fprintf(stderr, "flows: %s\n", what);
    exit(1);
}

struct sockaddr_in parse_address(const char *text)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    struct sockaddr_in address = { .sin_family = AF_INET };
    if (!colon || colon - text >= (long)sizeof(host)) die("an address is A.B.C.D:PORT");
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) die("an address is A.B.C.D:PORT");
    address.sin_port = htons(atoi(colon + 1));
    return address;
}

// Flow i's peer under --spread: A.B.(C+i/250).(D+i%250), as bench/turn-bench.sh's --peers each.
static struct sockaddr_in spread(struct sockaddr_in base, int i)
{
    uint32_t host = ntohl(base.sin_addr.s_addr);
    host += ((uint32_t)(i / 250) << 8) + (uint32_t)(i % 250);
    base.sin_addr.s_addr = htonl(host);
    return base;
}

int udp_socket(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int size = 4 << 20, on = 1;
    struct sockaddr_in local = { .sin_family = AF_INET, .sin_port = htons(port) };
    if (fd < 0) die("socket");
    // Room for well over a millisecond of datagrams at any rate here (the ends read on a fixed
    // rhythm); FORCE passes net.core.rmem_max as root.
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
    if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0) die("bind");
    return fd;
}

void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

// ---- send ----

// The client side's receive state: the flows' sockets are read for echoes (and answers).
static struct {
    int poller, length, turn;
    long received;
    uint8_t buffers[BATCH][2048];
    struct iovec vectors[BATCH];
    struct mmsghdr messages[BATCH];
} in;

// Reads what is waiting on fd (one call: epoll reports it again while more waits, and a
// second call that finds nothing would cost a system call per datagram at 50/s a socket);
// counts only the run's own datagrams.
static void drain(int fd)
{
    int got = recvmmsg(fd, in.messages, BATCH, MSG_DONTWAIT, NULL);
    for (int k = 0; k < got; k++)
        if (in.messages[k].msg_len == (unsigned)in.length && (!in.turn || get16(in.buffers[k]) == CHANNEL)) in.received++;
}

static void receive_for(int timeout_ms)
{
    struct epoll_event ready[256];
    int n = epoll_wait(in.poller, ready, 256, timeout_ms);
    for (int k = 0; k < n; k++) drain(ready[k].data.fd);
}

struct flow { int fd; struct sockaddr_in to; long sent; };

static int send_side(int argc, char **argv)
{
    const char *mode = argv[2], *to = NULL, *server_text = NULL, *user = NULL, *legs = NULL;
    int flows = 1, size = 160, echo = 0, spread_peers = 0, one_socket = 0;
    double rate = 50, seconds = 5, idle = -1;
    for (int i = 3; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--echo")) echo = 1;
        else if (!strcmp(o, "--spread")) spread_peers = 1;
        else if (!v) die("an option lacks its value");
        else if (!strcmp(o, "--to")) to = v, i++;
        else if (!strcmp(o, "--server")) server_text = v, i++;
        else if (!strcmp(o, "--user")) user = v, i++;
        else if (!strcmp(o, "--legs")) legs = v, i++;
        else if (!strcmp(o, "--flows")) flows = atoi(v), i++;
        else if (!strcmp(o, "--rate")) rate = atof(v), i++;
        else if (!strcmp(o, "--size")) size = atoi(v), i++;
        else if (!strcmp(o, "--seconds")) seconds = atof(v), i++;
        else if (!strcmp(o, "--idle")) idle = atof(v), i++;
        else if (!strcmp(o, "--socket")) one_socket = !strcmp(v, "one"), i++;
        else if (!strcmp(o, "--cgroup-fd")) cgroup_usage = atoi(v), i++;
        else { fprintf(stderr, "flows: unknown option %s\n", o); return 2; }
    }
    if (idle < 0) idle = seconds;
    int turn = !strcmp(mode, "turn");
    if (flows < 1 || flows > MAX_FLOWS || size < 8 || size > 1400 || rate <= 0) die("bad --flows, --size or --rate");
    if (turn && (!server_text || !user || !to)) die("turn needs --server, --user and --to");
    if (!strcmp(mode, "plain") && !to) die("plain needs --to");
    if (!strcmp(mode, "legs") && !legs) die("legs needs --legs");
    if (!turn && strcmp(mode, "plain") && strcmp(mode, "legs")) die("MODE is plain, turn or legs");

    static struct flow flow[MAX_FLOWS];
    int shared = one_socket ? udp_socket(0) : -1;
    FILE *legs_file = legs ? fopen(legs, "r") : NULL;
    if (legs && !legs_file) die("cannot read --legs");
    for (int i = 0; i < flows; i++) {
        flow[i].fd = shared >= 0 ? shared : udp_socket(0);
        if (legs_file) {
            char a[80], b[80];
            if (fscanf(legs_file, "%79s %79s", a, b) != 2) die("--legs has fewer lines than --flows");
            flow[i].to = parse_address(a);
        } else {
            flow[i].to = spread_peers ? spread(parse_address(to), i) : parse_address(to);
        }
    }
    int64_t setup_start = now_ns();
    int failed = 0;
    if (turn) {
        struct sockaddr_in server = parse_address(server_text);
        char name[128];
        const char *colon = strchr(user, ':');
        if (!colon || colon - user >= (long)sizeof(name)) die("--user is NAME:PASSWORD");
        memcpy(name, user, colon - user); name[colon - user] = 0;
        for (int i = 0; i < flows; i++) {
            if (turn_client(flow[i].fd, server, name, colon + 1, flow[i].to) != 0) failed++;
            flow[i].to = server;
        }
        if (failed) fprintf(stderr, "flows: %d of %d TURN clients failed to allocate and bind\n", failed, flows);
    }
    int64_t setup_ns = now_ns() - setup_start;

    int poller = in.poller = epoll_create1(0);
    if (echo) {
        for (int i = 0; i < flows; i++) {
            if (shared >= 0 && i > 0) break;
            struct epoll_event e = { .events = EPOLLIN, .data.fd = flow[i].fd };
            epoll_ctl(poller, EPOLL_CTL_ADD, flow[i].fd, &e);
        }
    }

    static uint8_t payload[1500];
    int header = turn ? 4 : 0;
    put16(payload, CHANNEL);
    put16(payload + 2, (uint16_t)size);
    memset(payload + header, 0x5a, size);
    struct iovec send_vector = { payload, (size_t)size + header };
    struct mmsghdr send_messages[BATCH];
    in.length = size + header;
    in.turn = turn;
    for (int i = 0; i < BATCH; i++) {
        in.vectors[i] = (struct iovec){ in.buffers[i], sizeof(in.buffers[i]) };
        in.messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &in.vectors[i], .msg_iovlen = 1 } };
    }
    // The idle interval: everything set up, nothing sent.
    int64_t idle_start_ns = now_ns();
    long long idle_start = busy_ticks(), own_idle_start = own_ns();
    usleep((useconds_t)(idle * 1e6));
    long long idle_end = busy_ticks(), own_idle_end = own_ns();
    int64_t idle_ns = now_ns() - idle_start_ns;

    // The data phase: every millisecond, what is due on each flow (flow i starts i/N of a
    // period late, so the flows are spread evenly), one sendmmsg per socket.
    long long run_start = busy_ticks(), own_run_start = own_ns();
    int64_t start = now_ns(), end = start + (int64_t)(seconds * 1e9);
    long total_sent = 0;
    while (!stopping) {
        int64_t t = now_ns();
        if (t >= end) break;
        double elapsed = (t - start) / 1e9;
        int batched = 0;
        for (int i = 0; i < flows; i++) {
            long due = (long)(elapsed * rate + (double)i / flows) - flow[i].sent;
            while (due > 0) {
                send_messages[batched] = (struct mmsghdr){ .msg_hdr = { .msg_name = &flow[i].to, .msg_namelen = sizeof(flow[i].to),
                                                                        .msg_iov = &send_vector, .msg_iovlen = 1 } };
                batched++, due--, flow[i].sent++;
                // One call per socket; one socket for every flow takes up to BATCH at once.
                if (shared < 0 || batched == BATCH) {
                    int sent = sendmmsg(flow[i].fd, send_messages, batched, 0);
                    total_sent += sent > 0 ? sent : 0;
                    batched = 0;
                }
            }
        }
        if (batched) {
            int sent = sendmmsg(shared, send_messages, batched, 0);
            total_sent += sent > 0 ? sent : 0;
        }
        // A fixed rhythm for both ends in every column: the ends wake once a millisecond, however
        // the path in between spaces the datagrams, so what they cost per datagram stays the same.
        if (echo) receive_for(0);
        usleep(1000);
    }
    // What is in flight: echoes until all came back or 0.5 s passed.
    int64_t drain_end = now_ns() + 500000000;
    while (echo && in.received < total_sent && now_ns() < drain_end) receive_for(10);
    if (!echo) usleep(300000);
    long long run_end = busy_ticks(), own_run_end = own_ns();
    int64_t run_ns = now_ns() - start;
    printf("sent=%ld received=%ld idle_ticks=%lld idle_ns=%lld run_ticks=%lld run_ns=%lld own_idle_ns=%lld own_run_ns=%lld "
           "setup_ms=%lld failed=%d\n", total_sent, in.received, idle_end - idle_start, (long long)idle_ns, run_end - run_start,
           (long long)run_ns, own_idle_end - own_idle_start, own_run_end - own_run_start, (long long)(setup_ns / 1000000), failed);
    return 0;
}

int main(int argc, char **argv)
{
    srand((unsigned)now_ns());
    if (argc > 2 && !strcmp(argv[1], "send")) return send_side(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "echo")) return peer_side(argc, argv, 1);
    if (argc > 1 && !strcmp(argv[1], "sink")) return peer_side(argc, argv, 0);
    fprintf(stderr, "usage: flows send plain|turn|legs [options] | flows echo --port P | flows sink --port P [--legs FILE]\n"
                    "(the comment at the top of bench/fastpath/flows.c says more)\n");
    return 2;
}
