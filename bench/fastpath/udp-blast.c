// udp-blast: the sender and the receiver of bench/fastpath-cpu.sh, small and fixed in cost so
// that the relay path between them is what differs from run to run.
//   udp-blast send SRC_PORT DST_ADDRESS DST_PORT RATE SECONDS SIZE
//     sends RATE datagrams/s of SIZE bytes from SRC_PORT for SECONDS, paced every millisecond
//     with one sendmmsg for what is due; prints the number sent.
//   udp-blast receive PORT SECONDS
//     counts the datagrams arriving on PORT until SECONDS pass, or 1 s passes without one
//     after the first; prints the number received.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

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

static int blast(int argc, char **argv)
{
    if (argc != 8) return 2;
    int fd = bound_socket(atoi(argv[2]));
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[4])) };
    inet_pton(AF_INET, argv[3], &to.sin_addr);
    double rate = atof(argv[5]), seconds = atof(argv[6]);
    size_t size = atoi(argv[7]);
    static char payload[9000];
    struct iovec vector = { payload, size };
    struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++)
        messages[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &vector, .msg_iovlen = 1 } };
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

int main(int argc, char **argv)
{
    int status = 2;
    if (argc > 1 && strcmp(argv[1], "send") == 0) status = blast(argc, argv);
    else if (argc > 1 && strcmp(argv[1], "receive") == 0) status = count(argc, argv);
    if (status == 2)
        fprintf(stderr, "usage: udp-blast send SRC_PORT DST_ADDRESS DST_PORT RATE SECONDS SIZE | receive PORT SECONDS\n");
    return status;
}
