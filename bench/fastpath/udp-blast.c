// udp-blast: the sender of bench/fastpath/one-core.sh (and a receiver), small and fixed in cost so
// that the relay path between them is what differs from run to run.
//   udp-blast send SRC_PORT DST_ADDRESS DST_PORT RATE SECONDS SIZE
//     sends RATE datagrams/s of SIZE bytes from SRC_PORT for SECONDS, paced every millisecond
//     with sendmmsg for what is due; prints the number sent.
//   udp-blast receive PORT SECONDS
//     counts the datagrams arriving on PORT until SECONDS pass, or 1 s passes without one
//     after the first; prints the number received.
//   udp-blast frames IFNAME DST_MAC SRC_IP:PORT DST_IP:PORT RATE SECONDS SIZE
//     the sender of bench/fastpath/one-core.sh: finished Ethernet frames (IPv4, UDP, both
//     checksums filled in, as a NIC delivers them) written to a packet socket on IFNAME that
//     bypasses the qdisc, so that a datagram costs the sender a frame copy and the veth transmit,
//     not the UDP socket path: one core sends several times what `send` does, and the relay's
//     core rather than the sender is what runs out first. Paced as `send`; prints the number sent.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int bound_socket(int port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in local = { .sin_family = AF_INET, .sin_port = htons(port) };
    int size = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    if (fd < 0 || bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
        perror("udp-blast: bind");
        exit(1);
    }
    return fd;
}

// Sends RATE of messages a second for SECONDS: every millisecond, what is due in sendmmsg calls
// of up to BATCH; prints the number sent.
static int paced(int fd, struct mmsghdr *messages, double rate, double seconds)
{
    long sent = 0;
    double start = now();
    for (;;) {
        double elapsed = now() - start;
        if (elapsed >= seconds) break;
        long due = (long)(elapsed * rate) - sent;
        while (due > 0) {
            int count = sendmmsg(fd, messages, due < BATCH ? due : BATCH, 0);
            if (count <= 0) break;
            sent += count;
            due -= count;
        }
        usleep(1000);
    }
    printf("%ld\n", sent);
    return 0;
}

static int blast(int argc, char **argv)
{
    if (argc != 8) return 2;
    int fd = bound_socket(atoi(argv[2]));
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[4])) };
    inet_pton(AF_INET, argv[3], &to.sin_addr);
    size_t size = atoi(argv[7]);
    static char payload[9000];
    struct iovec vector = { payload, size };
    struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++)
        messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &vector, .msg_iovlen = 1 } };
    return paced(fd, messages, atof(argv[5]), atof(argv[6]));
}

static int count(int argc, char **argv)
{
    if (argc != 4) return 2;
    int fd = bound_socket(atoi(argv[2]));
    double seconds = atof(argv[3]);
    struct timeval wait = { .tv_sec = 1 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    static char buffers[BATCH][2048];
    struct iovec vectors[BATCH];
    struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++) {
        vectors[i] = (struct iovec){ buffers[i], sizeof(buffers[i]) };
        messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &vectors[i], .msg_iovlen = 1 } };
    }
    long received = 0;
    double start = now();
    while (now() - start < seconds) {
        int got = recvmmsg(fd, messages, BATCH, MSG_WAITFORONE, NULL);
        if (got > 0) received += got;
        else if (received > 0 && errno == EAGAIN) break;
    }
    printf("%ld\n", received);
    return 0;
}

static uint32_t sum16(const void *data, size_t length, uint32_t sum)
{
    const uint8_t *p = data;
    for (size_t i = 0; i + 1 < length; i += 2) sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (length & 1) sum += (uint32_t)(p[length - 1] << 8);
    return sum;
}

static uint16_t fold(uint32_t sum)
{
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static void endpoint(const char *text, struct in_addr *address, uint16_t *port)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!colon || colon - text >= (long)sizeof(host)) exit(2);
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    if (inet_pton(AF_INET, host, address) != 1) exit(2);
    *port = (uint16_t)atoi(colon + 1);
}

static int frames(int argc, char **argv)
{
    if (argc != 9) return 2;
    argv++;
    int fd = socket(AF_PACKET, SOCK_RAW, 0), on = 1;
    struct ifreq request = { 0 };
    snprintf(request.ifr_name, sizeof(request.ifr_name), "%s", argv[1]);
    if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &request) < 0) {
        perror("udp-blast: packet socket");
        return 1;
    }
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &on, sizeof(on));
    struct sockaddr_ll link = { .sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(argv[1]), .sll_halen = ETH_ALEN };

    static uint8_t frame[1600];
    size_t size = (size_t)atoi(argv[7]);
    if (size < 8 || size > 1400) return 2;
    struct ether_header *ethernet = (struct ether_header *)frame;
    struct iphdr *ip = (struct iphdr *)(frame + sizeof(*ethernet));
    struct udphdr *udp = (struct udphdr *)((uint8_t *)ip + sizeof(*ip));
    uint8_t *payload = (uint8_t *)udp + sizeof(*udp);
    unsigned int mac[6];
    if (sscanf(argv[2], "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) != 6) return 2;
    for (int i = 0; i < 6; i++) ethernet->ether_dhost[i] = link.sll_addr[i] = (uint8_t)mac[i];
    memcpy(ethernet->ether_shost, request.ifr_hwaddr.sa_data, ETH_ALEN);
    ethernet->ether_type = htons(ETHERTYPE_IP);
    struct in_addr source, destination;
    uint16_t source_port, destination_port;
    endpoint(argv[3], &source, &source_port);
    endpoint(argv[4], &destination, &destination_port);
    memset(payload, 0x5a, size);
    *ip = (struct iphdr){ .ihl = 5, .version = 4, .tot_len = htons((uint16_t)(sizeof(*ip) + sizeof(*udp) + size)), .ttl = 64,
                          .protocol = IPPROTO_UDP, .saddr = source.s_addr, .daddr = destination.s_addr };
    ip->check = htons(fold(sum16(ip, sizeof(*ip), 0)));
    *udp = (struct udphdr){ .source = htons(source_port), .dest = htons(destination_port), .len = htons((uint16_t)(sizeof(*udp) + size)) };
    // The pseudo-header, then the UDP header and payload.
    uint32_t sum = sum16(&ip->saddr, 8, 0) + IPPROTO_UDP + (uint32_t)(sizeof(*udp) + size);
    uint16_t check = fold(sum16(udp, sizeof(*udp) + size, sum));
    udp->check = htons(check ? check : 0xffff);
    size_t length = sizeof(*ethernet) + sizeof(*ip) + sizeof(*udp) + size;

    struct iovec vector = { frame, length };
    static struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++)
        messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &link, .msg_namelen = sizeof(link), .msg_iov = &vector, .msg_iovlen = 1 } };
    return paced(fd, messages, atof(argv[5]), atof(argv[6]));
}

int main(int argc, char **argv)
{
    int status = 2;
    if (argc > 1 && strcmp(argv[1], "send") == 0) status = blast(argc, argv);
    else if (argc > 1 && strcmp(argv[1], "receive") == 0) status = count(argc, argv);
    else if (argc > 1 && strcmp(argv[1], "frames") == 0) status = frames(argc, argv);
    if (status == 2)
        fprintf(stderr, "usage: udp-blast send SRC_PORT DST_ADDRESS DST_PORT RATE SECONDS SIZE | receive PORT SECONDS\n"
                        "       udp-blast frames IFNAME DST_MAC SRC_IP:PORT DST_IP:PORT RATE SECONDS SIZE\n");
    return status;
}
