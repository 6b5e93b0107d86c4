// flows-turn.c: part of bench/fastpath/flows.c. TURN over UDP, just what a client needs to reach
// ChannelData (RFC 8656): Allocate with long-term credentials, then ChannelBind.
#define _GNU_SOURCE
#include "flows.h"
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct message { uint8_t bytes[1024]; size_t length; };


static void begin(struct message *m, uint16_t type)
{
    memset(m->bytes, 0, 20);
    put16(m->bytes, type);
    m->bytes[4] = 0x21; m->bytes[5] = 0x12; m->bytes[6] = 0xa4; m->bytes[7] = 0x42;
    for (int i = 8; i < 20; i++) m->bytes[i] = (uint8_t)rand();
    m->length = 20;
}

static void attribute(struct message *m, uint16_t type, const void *value, size_t length)
{
    put16(m->bytes + m->length, type);
    put16(m->bytes + m->length + 2, (uint16_t)length);
    memcpy(m->bytes + m->length + 4, value, length);
    size_t padded = (length + 3) & ~(size_t)3;
    memset(m->bytes + m->length + 4 + length, 0, padded - length);
    m->length += 4 + padded;
    put16(m->bytes + 2, (uint16_t)(m->length - 20));
}

static void integrity(struct message *m, const uint8_t key[16])
{
    uint8_t mac[20];
    unsigned int mac_length = 0;
    put16(m->bytes + 2, (uint16_t)(m->length - 20 + 24));
    HMAC(EVP_sha1(), key, 16, m->bytes, m->length, mac, &mac_length);
    attribute(m, 0x0008, mac, 20);
}

static void xor_peer(struct message *m, struct sockaddr_in peer)
{
    uint8_t value[8] = { 0, 1 };
    put16(value + 2, ntohs(peer.sin_port) ^ 0x2112);
    uint32_t address = ntohl(peer.sin_addr.s_addr) ^ 0x2112a442;
    value[4] = address >> 24; value[5] = address >> 16; value[6] = address >> 8; value[7] = address;
    attribute(m, 0x0012, value, 8);
}

// Sends m and waits for the answer to its transaction id (three tries, 1 s each); returns its
// type, or -1.
static int transact(int fd, struct sockaddr_in server, const struct message *m, struct message *answer)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        sendto(fd, m->bytes, m->length, 0, (struct sockaddr *)&server, sizeof(server));
        int64_t deadline = now_ns() + 1000000000;
        while (now_ns() < deadline) {
            struct pollfd wait = { fd, POLLIN, 0 };
            if (poll(&wait, 1, 100) <= 0) continue;
            ssize_t n = recv(fd, answer->bytes, sizeof(answer->bytes), 0);
            if (n >= 20 && memcmp(answer->bytes + 8, m->bytes + 8, 12) == 0) {
                answer->length = (size_t)n;
                return get16(answer->bytes);
            }
        }
    }
    return -1;
}

// The value of attribute `type` in m, its length in *length; NULL when absent.
static const uint8_t *find(const struct message *m, uint16_t type, size_t *length)
{
    size_t at = 20;
    while (at + 4 <= m->length) {
        uint16_t t = get16(m->bytes + at), l = get16(m->bytes + at + 2);
        if (at + 4 + l > m->length) break;
        if (t == type) { *length = l; return m->bytes + at + 4; }
        at += 4 + ((l + 3u) & ~3u);
    }
    return NULL;
}

int turn_client(int fd, struct sockaddr_in server, const char *user, const char *password, struct sockaddr_in peer)
{
    struct message request, answer;
    uint8_t transport[4] = { 17 };
    begin(&request, 0x0003);
    attribute(&request, 0x0019, transport, 4);
    if (transact(fd, server, &request, &answer) != 0x0113) return -1;
    size_t realm_length = 0, nonce_length = 0;
    const uint8_t *realm = find(&answer, 0x0014, &realm_length), *nonce = find(&answer, 0x0015, &nonce_length);
    if (!realm || !nonce || realm_length > 200 || nonce_length > 200) return -1;
    char realm_text[256], nonce_bytes[256], joined[600];
    memcpy(realm_text, realm, realm_length); realm_text[realm_length] = 0;
    memcpy(nonce_bytes, nonce, nonce_length);
    snprintf(joined, sizeof(joined), "%s:%s:%s", user, realm_text, password);
    uint8_t key[16];
    unsigned int key_length = 0;
    EVP_Digest(joined, strlen(joined), key, &key_length, EVP_md5(), NULL);

    begin(&request, 0x0003);
    attribute(&request, 0x0019, transport, 4);
    attribute(&request, 0x0006, user, strlen(user));
    attribute(&request, 0x0014, realm_text, realm_length);
    attribute(&request, 0x0015, nonce_bytes, nonce_length);
    integrity(&request, key);
    if (transact(fd, server, &request, &answer) != 0x0103) return -1;

    uint8_t channel[4] = { CHANNEL >> 8, CHANNEL & 0xff };
    begin(&request, 0x0009);
    attribute(&request, 0x000c, channel, 4);
    xor_peer(&request, peer);
    attribute(&request, 0x0006, user, strlen(user));
    attribute(&request, 0x0014, realm_text, realm_length);
    attribute(&request, 0x0015, nonce_bytes, nonce_length);
    integrity(&request, key);
    return transact(fd, server, &request, &answer) == 0x0109 ? 0 : -1;
}
