// frame-blast: the sender of bench/fastpath/one-core.sh. Finished Ethernet frames (IPv4, UDP, both
// checksums filled in, as a NIC delivers them) written to a packet socket that bypasses the
// qdisc, so a sender costs a frame copy and the veth transmit, not the UDP socket path: one core
// of this machine sends several times what a UDP socket sends, and the relay, not the sender,
// is what runs out first.
//   frame-blast IFNAME DST_MAC SRC_IP:PORT DST_IP:PORT RATE SECONDS SIZE
//     sends RATE frames/s carrying SIZE bytes of UDP payload for SECONDS, one sendmmsg of what
//     is due every millisecond; prints the number sent.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
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

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: frame-blast IFNAME DST_MAC SRC_IP:PORT DST_IP:PORT RATE SECONDS SIZE\n");
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, 0), on = 1;
    struct ifreq request = { 0 };
    snprintf(request.ifr_name, sizeof(request.ifr_name), "%s", argv[1]);
    if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &request) < 0) {
        perror("frame-blast: packet socket");
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
    double rate = atof(argv[5]), seconds = atof(argv[6]);
    long sent = 0;
    double start = now();
    for (;;) {
        double elapsed = now() - start;
        if (elapsed >= seconds) break;
        long due = (long)(elapsed * rate) - sent;
        while (due > 0) {
            int count = sendmmsg(fd, messages, due < BATCH ? (unsigned)due : BATCH, 0);
            if (count <= 0) break;
            sent += count;
            due -= count;
        }
        usleep(1000);
    }
    printf("%ld\n", sent);
    return 0;
}
