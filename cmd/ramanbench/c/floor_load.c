/*
 * floor_load: closed-loop load on a prediction channel from libzmq REQ
 * clients, one thread each, sending pre-encoded requests: what a rig's C
 * client costs and nothing more, so that the same load measures ramanserve
 * and the no-work floor (floor_rep.c).
 *
 * Usage: floor_load ENDPOINT CLIENTS MILLISECONDS REQUEST-FILE...
 * Each client sends warm-up requests first, then sends the next request
 * as soon as the last is answered, for MILLISECONDS. The request files are
 * used in turn. It prints "requests errors elapsed_ns" on the first line,
 * then one latency in nanoseconds per line. A reply that is not at least
 * 64 bytes (a predict_reply is a few hundred) or does not come within 5 s
 * counts as an error. With FLOOR_SAVE_REPLY=FILE in the environment, the
 * last reply of the first client is written to FILE (ramanbench gives the
 * floor a real reply to send).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

enum { WARM_UP = 50, MAX_REQUESTS = 64, MAX_REPLY = 64 << 10, MIN_REPLY = 64, TIMEOUT_MS = 5000 };

struct request { char *data; size_t len; };

static struct request requests[MAX_REQUESTS];
static int nrequests;
static const char *endpoint;
static void *zctx;
static int64_t deadline_ns;
static pthread_barrier_t warmed;

struct worker {
    pthread_t thread;
    int index;
    int64_t *lat;
    size_t nlat, cap;
    long errors;
    size_t last_reply;
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int round_trip(void *req, const struct request *r, char *reply, size_t *len) {
    if (zmq_send(req, r->data, r->len, 0) < 0) return -1;
    int n = zmq_recv(req, reply, MAX_REPLY, 0);
    if (n < MIN_REPLY || n > MAX_REPLY) return -1;
    *len = (size_t)n;
    return 0;
}

static void *run(void *arg) {
    struct worker *w = arg;
    void *req = zmq_socket(zctx, ZMQ_REQ);
    int timeout = TIMEOUT_MS, linger = 0;
    zmq_setsockopt(req, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(req, ZMQ_LINGER, &linger, sizeof linger);
    /* A timed-out REQ must be able to send again. */
    int relaxed = 1;
    zmq_setsockopt(req, ZMQ_REQ_RELAXED, &relaxed, sizeof relaxed);
    zmq_setsockopt(req, ZMQ_REQ_CORRELATE, &relaxed, sizeof relaxed);
    zmq_connect(req, endpoint);
    char *reply = malloc(MAX_REPLY);
    for (int i = 0; i < WARM_UP; i++)
        if (round_trip(req, &requests[(w->index + i) % nrequests], reply, &w->last_reply) != 0) w->errors++;
    pthread_barrier_wait(&warmed);
    for (int k = w->index; ; k++) {
        int64_t t0 = now_ns();
        if (t0 >= __atomic_load_n(&deadline_ns, __ATOMIC_ACQUIRE)) break;
        if (round_trip(req, &requests[k % nrequests], reply, &w->last_reply) != 0) {
            w->errors++;
            continue;
        }
        if (w->nlat == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 1 << 16;
            w->lat = realloc(w->lat, w->cap * sizeof *w->lat);
        }
        w->lat[w->nlat++] = now_ns() - t0;
    }
    const char *save = getenv("FLOOR_SAVE_REPLY");
    if (save && w->index == 0 && w->nlat > 0) {
        FILE *f = fopen(save, "wb");
        if (f) {
            fwrite(reply, 1, w->last_reply, f);
            fclose(f);
        }
    }
    free(reply);
    zmq_close(req);
    return NULL;
}

static int read_request(const char *path, struct request *r) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    r->data = malloc(1 << 20);
    r->len = fread(r->data, 1, 1 << 20, f);
    fclose(f);
    return r->len > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: floor_load ENDPOINT CLIENTS MILLISECONDS REQUEST-FILE...\n");
        return 2;
    }
    endpoint = argv[1];
    int clients = atoi(argv[2]);
    long ms = atol(argv[3]);
    if (clients < 1 || clients > 256 || ms < 1) {
        fprintf(stderr, "floor_load: CLIENTS 1..256, MILLISECONDS > 0\n");
        return 2;
    }
    for (int i = 4; i < argc && nrequests < MAX_REQUESTS; i++)
        if (read_request(argv[i], &requests[nrequests++]) != 0) {
            perror(argv[i]);
            return 2;
        }
    zctx = zmq_ctx_new();
    pthread_barrier_init(&warmed, NULL, clients + 1);
    struct worker *ws = calloc(clients, sizeof *ws);
    deadline_ns = INT64_MAX;
    for (int i = 0; i < clients; i++) {
        ws[i].index = i;
        pthread_create(&ws[i].thread, NULL, run, &ws[i]);
    }
    /* The clock starts when every client is connected and warm. */
    pthread_barrier_wait(&warmed);
    int64_t start = now_ns();
    __atomic_store_n(&deadline_ns, start + ms * 1000000, __ATOMIC_RELEASE);
    long total = 0, errors = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(ws[i].thread, NULL);
        total += ws[i].nlat;
        errors += ws[i].errors;
    }
    int64_t elapsed = now_ns() - start;
    printf("%ld %ld %lld\n", total, errors, (long long)elapsed);
    for (int i = 0; i < clients; i++)
        for (size_t j = 0; j < ws[i].nlat; j++) printf("%lld\n", (long long)ws[i].lat[j]);
    zmq_ctx_term(zctx);
    return 0;
}
