// flows-peer.c: part of bench/fastpath/flows.c. The peer side: the echo and the sink.
#define _GNU_SOURCE
#include "flows.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int peer_side(int argc, char **argv, int echo)
{
    int port = 0;
    const char *legs = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--legs")) legs = argv[i + 1];
        else { fprintf(stderr, "flows: unknown option %s\n", argv[i]); return 2; }
    }
    if (port <= 0) die("--port is needed");
    struct sigaction action = { .sa_handler = on_signal };
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    int fd = udp_socket((uint16_t)port);
    if (legs) {
        // Latch leg B of every session: its first datagram fixes where the relay sends.
        FILE *file = fopen(legs, "r");
        char a[80], b[80];
        static const char latch[] = "latch";
        if (!file) die("cannot read --legs");
        while (fscanf(file, "%79s %79s", a, b) == 2) {
            struct sockaddr_in leg = parse_address(b);
            for (int k = 0; k < 2; k++) sendto(fd, latch, sizeof(latch), 0, (struct sockaddr *)&leg, sizeof(leg));
        }
        fclose(file);
    }
    printf("ready\n");
    fflush(stdout);
    static uint8_t buffers[BATCH][2048];
    static uint8_t controls[BATCH][64];
    static struct sockaddr_in sources[BATCH];
    static uint8_t reply_controls[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
    struct iovec vectors[BATCH];
    struct mmsghdr messages[BATCH], replies[BATCH];
    long count = 0;
    while (!stopping) {
        for (int i = 0; i < BATCH; i++) {
            vectors[i] = (struct iovec){ buffers[i], sizeof(buffers[i]) };
            messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &sources[i], .msg_namelen = sizeof(sources[i]),
                                                         .msg_iov = &vectors[i], .msg_iovlen = 1,
                                                         .msg_control = controls[i], .msg_controllen = sizeof(controls[i]) } };
        }
        // Once a millisecond, everything waiting (see the sender's loop).
        int got = recvmmsg(fd, messages, BATCH, MSG_DONTWAIT, NULL);
        if (got <= 0) {
            usleep(1000);
            continue;
        }
        count += got;
        if (!echo) continue;
        for (int i = 0; i < got; i++) {
            // Back from the address it was sent to: a relay that tells its allocations apart by
            // peer address (coturn --multiplex-peer) needs that.
            struct in_pktinfo info = { 0 };
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c; c = CMSG_NXTHDR(&messages[i].msg_hdr, c))
                if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) memcpy(&info, CMSG_DATA(c), sizeof(info));
            struct in_pktinfo reply = { .ipi_spec_dst = info.ipi_addr };
            struct msghdr *h = &replies[i].msg_hdr;
            vectors[i].iov_len = messages[i].msg_len;
            *h = (struct msghdr){ .msg_name = &sources[i], .msg_namelen = sizeof(sources[i]), .msg_iov = &vectors[i], .msg_iovlen = 1,
                                  .msg_control = reply_controls[i], .msg_controllen = sizeof(reply_controls[i]) };
            struct cmsghdr *c = CMSG_FIRSTHDR(h);
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_PKTINFO;
            c->cmsg_len = CMSG_LEN(sizeof(reply));
            memcpy(CMSG_DATA(c), &reply, sizeof(reply));
        }
        sendmmsg(fd, replies, got, 0);
    }
    printf(echo ? "echoed=%ld\n" : "received=%ld\n", count);
    return 0;
}
