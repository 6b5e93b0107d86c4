// flows.h: what the three parts of bench/fastpath/flows.c share (flows.c: the client side and
// the helpers; flows-turn.c: a TURN client's set-up; flows-peer.c: the echo and the sink).
#ifndef FLOWS_H
#define FLOWS_H
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define BATCH 64
#define MAX_FLOWS 10000
#define CHANNEL 0x4000

extern volatile sig_atomic_t stopping;
void on_signal(int signal);
int64_t now_ns(void);
void die(const char *what);
struct sockaddr_in parse_address(const char *text);
int udp_socket(uint16_t port);
void put16(uint8_t *p, uint16_t v);
uint16_t get16(const uint8_t *p);
// One client's Allocate (answered 401 first) and ChannelBind on fd; 0 when both succeeded.
int turn_client(int fd, struct sockaddr_in server, const char *user, const char *password, struct sockaddr_in peer);
// The echo (echo != 0) or the sink: `flows echo|sink ...`.
int peer_side(int argc, char **argv, int echo);
#endif
