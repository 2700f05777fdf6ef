/*
 * floor_rep: the transport floor of the prediction channel. A libzmq REP
 * socket that does no work: it answers every request with the same
 * pre-encoded reply. ramanbench -floor measures ramanserve against it in
 * the same run, with the same C clients (floor_load.c), so that what is
 * left between the two is the server's own cost.
 *
 * Usage: floor_rep ENDPOINT REPLY-FILE
 * It prints READY once bound, and runs until killed.
 */
#include <stdio.h>
#include <stdlib.h>

#include <zmq.h>

/* Requests of ramanbench are about 37 KiB; a larger one is cut, which a
 * no-work server may do (it answers without reading). */
enum { MAX_REQUEST = 1 << 20 };

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    if (!buf) { fclose(f); return NULL; }
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: floor_rep ENDPOINT REPLY-FILE\n");
        return 2;
    }
    size_t reply_len;
    char *reply = read_file(argv[2], &reply_len);
    if (!reply) {
        perror(argv[2]);
        return 2;
    }
    void *ctx = zmq_ctx_new();
    void *rep = zmq_socket(ctx, ZMQ_REP);
    if (zmq_bind(rep, argv[1]) != 0) {
        fprintf(stderr, "floor_rep: bind %s: %s\n", argv[1], zmq_strerror(zmq_errno()));
        return 1;
    }
    printf("READY\n");
    fflush(stdout);
    char *request = malloc(MAX_REQUEST);
    for (;;) {
        if (zmq_recv(rep, request, MAX_REQUEST, 0) < 0) continue;
        zmq_send(rep, reply, reply_len, 0);
    }
}
