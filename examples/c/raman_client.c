/*
 * raman_client: a small client of ramanserve's prediction channel in C,
 * on libzmq (a REQ socket) and msgpack-c. api/messages.md is its contract.
 *
 * It checks the handshake (ping: v == 1 and protocol_version == 1), sends a
 * predict with a 2048-point spectrum and prints the concentrations, then
 * sends a spectrum of the wrong length and prints the predict_reply's error
 * code. It exits 0 only when every answer is the expected one.
 *
 * Usage: raman_client [endpoint [spectrum-file]]
 *   endpoint       default tcp://127.0.0.1:5555
 *   spectrum-file  one "wavenumber intensity" pair per line; without it a
 *                  synthetic spectrum on the instrument axis is sent
 *                  (2048 points, 200 to 3200 cm-1).
 *
 * Exit status: 0 all answers as expected; 1 an unexpected answer;
 * 2 usage or input error; 3 no reply (the channel is down).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>
#include <zmq.h>

enum { EXIT_UNEXPECTED = 1, EXIT_USAGE = 2, EXIT_DOWN = 3 };

/* Lazy Pirate (api/messages.md, section 6): wait this long for a reply,
 * then close the socket, open a new one and resend with a new id. */
enum { REPLY_TIMEOUT_MS = 2000, MAX_ATTEMPTS = 3, MAX_POINTS = 65536 };

/* The largest reply accepted: the server's replies are a few hundred bytes
 * (messages.md, section 3); a peer that sends more is not the server. */
static const int64_t MAX_REPLY_BYTES = 1 << 20;

static const char *const ANALYTES[] = {"EPA", "DHA", "DPA"};

struct spectrum {
    double *wavenumbers;
    double *intensities;
    size_t n;
};

/* A request packer writes one complete request map with the given id. */
typedef void (*pack_request_fn)(msgpack_packer *pk, const char *id, const void *arg);

/* ---- Helpers for packing -------------------------------------------- */

static void pack_cstr(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* new_id writes a random version-4 UUID in text form (37 bytes with NUL). */
static void new_id(char out[37]) {
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    if (f == NULL || fread(b, 1, sizeof b, f) != sizeof b) {
        /* Unique enough for one process: time, pid and a counter. */
        static unsigned counter;
        uint64_t t = (uint64_t)(now_seconds() * 1e6);
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(t >> (8 * i));
        unsigned p = (unsigned)getpid() ^ (++counter << 20);
        for (int i = 0; i < 8; i++) b[8 + i] = (unsigned char)(p >> (4 * i));
    }
    if (f != NULL) fclose(f);
    b[6] = (unsigned char)(0x40 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* pack_head writes the request envelope up to and including the key
 * "body"; the caller packs the body value. */
static void pack_head(msgpack_packer *pk, const char *type, const char *id) {
    msgpack_pack_map(pk, 5);
    pack_cstr(pk, "v");
    msgpack_pack_int(pk, 1);
    pack_cstr(pk, "type");
    pack_cstr(pk, type);
    pack_cstr(pk, "id");
    pack_cstr(pk, id);
    pack_cstr(pk, "ts");
    msgpack_pack_double(pk, now_seconds());
    pack_cstr(pk, "body");
}

static void pack_ping(msgpack_packer *pk, const char *id, const void *arg) {
    (void)arg;
    pack_head(pk, "ping", id);
    msgpack_pack_map(pk, 0);
}

static void pack_doubles(msgpack_packer *pk, const double *v, size_t n) {
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) msgpack_pack_double(pk, v[i]);
}

static void pack_predict(msgpack_packer *pk, const char *id, const void *arg) {
    const struct spectrum *s = arg;
    pack_head(pk, "predict", id);
    msgpack_pack_map(pk, 1);
    pack_cstr(pk, "spectrum");
    msgpack_pack_map(pk, 2);
    pack_cstr(pk, "wavenumbers");
    pack_doubles(pk, s->wavenumbers, s->n);
    pack_cstr(pk, "intensities");
    pack_doubles(pk, s->intensities, s->n);
}

/* ---- Helpers for reading replies ------------------------------------ */

static int str_eq(const msgpack_object *o, const char *s) {
    return o != NULL && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

/* lookup returns the value under key in map m, NULL when m is no map or
 * has no such key. The server does not guarantee key order. */
static const msgpack_object *lookup(const msgpack_object *m, const char *key) {
    if (m == NULL || m->type != MSGPACK_OBJECT_MAP) return NULL;
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        if (str_eq(&m->via.map.ptr[i].key, key)) return &m->via.map.ptr[i].val;
    }
    return NULL;
}

/* number reads any MessagePack number (the server sends float64). */
static int number(const msgpack_object *o, double *out) {
    if (o == NULL) return 0;
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = o->via.f64;
        return 1;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)o->via.u64;
        return 1;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)o->via.i64;
        return 1;
    default:
        return 0;
    }
}

/* print_str prints a str value, or "?" for anything else. */
static void print_str(FILE *f, const msgpack_object *o) {
    if (o != NULL && o->type == MSGPACK_OBJECT_STR)
        fprintf(f, "%.*s", (int)o->via.str.size, o->via.str.ptr);
    else
        fputs("?", f);
}

/* ---- The round trip ------------------------------------------------- */

struct channel {
    void *ctx;
    void *sock;
    const char *endpoint;
};

static int channel_open(struct channel *c) {
    int linger = 0, timeout = REPLY_TIMEOUT_MS;
    c->sock = zmq_socket(c->ctx, ZMQ_REQ);
    if (c->sock == NULL) return -1;
    /* LINGER 0: a socket closed after a timeout drops its unsent request.
     * RCVTIMEO/SNDTIMEO: never block for ever. MAXMSGSIZE: libzmq drops a
     * peer that announces a larger message instead of buffering it. */
    if (zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &MAX_REPLY_BYTES, sizeof MAX_REPLY_BYTES) != 0 ||
        zmq_setsockopt(c->sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout) != 0 ||
        zmq_setsockopt(c->sock, ZMQ_SNDTIMEO, &timeout, sizeof timeout) != 0 ||
        zmq_connect(c->sock, c->endpoint) != 0) {
        zmq_close(c->sock);
        c->sock = NULL;
        return -1;
    }
    return 0;
}

/* exchange sends one request and receives its reply into *msg. It
 * returns 0 on a reply, -1 on a timeout or socket error; the caller then
 * reopens the socket (a REQ socket without its reply cannot send again). */
static int exchange(struct channel *c, const msgpack_sbuffer *req, zmq_msg_t *msg) {
    if (zmq_send(c->sock, req->data, req->size, 0) < 0) return -1;
    if (zmq_msg_recv(msg, c->sock, 0) < 0) return -1;
    if (zmq_msg_more(msg)) {
        fprintf(stderr, "reply has more than one frame\n");
        return -1;
    }
    return 0;
}

/* A reply: the received frame and the MessagePack object unpacked from
 * it. msgpack_unpack_next does not copy strings: every str in unpacked
 * points into frame, so frame lives as long as unpacked (reply_close). */
struct reply {
    zmq_msg_t frame;
    msgpack_unpacked unpacked;
};

static void reply_close(struct reply *r) {
    msgpack_unpacked_destroy(&r->unpacked);
    zmq_msg_close(&r->frame);
}

/* round_trip sends the request built by pack and returns its reply in
 * *out, with the request id in id; the caller closes it with reply_close.
 * On a timeout it closes the socket, opens a new one and sends again with
 * a new id, up to MAX_ATTEMPTS times (Lazy Pirate). Returns 0,
 * EXIT_UNEXPECTED (a reply that is not one MessagePack value) or
 * EXIT_DOWN. */
static int round_trip(struct channel *c, pack_request_fn pack, const void *arg, char id[37],
                      struct reply *out) {
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        msgpack_sbuffer req;
        msgpack_packer pk;
        msgpack_sbuffer_init(&req);
        msgpack_packer_init(&pk, &req, msgpack_sbuffer_write);
        new_id(id);
        pack(&pk, id, arg);

        zmq_msg_init(&out->frame);
        int rc = exchange(c, &req, &out->frame);
        msgpack_sbuffer_destroy(&req);
        if (rc == 0) {
            size_t off = 0, size = zmq_msg_size(&out->frame);
            msgpack_unpacked_init(&out->unpacked);
            msgpack_unpack_return ur =
                msgpack_unpack_next(&out->unpacked, zmq_msg_data(&out->frame), size, &off);
            if (ur != MSGPACK_UNPACK_SUCCESS || off != size) {
                fprintf(stderr, "reply is not one MessagePack value\n");
                reply_close(out);
                return EXIT_UNEXPECTED;
            }
            return 0;
        }
        zmq_msg_close(&out->frame);
        fprintf(stderr, "no reply within %d ms (attempt %d of %d): %s\n", REPLY_TIMEOUT_MS, attempt,
                MAX_ATTEMPTS, zmq_strerror(zmq_errno()));
        zmq_close(c->sock);
        c->sock = NULL;
        if (attempt < MAX_ATTEMPTS) {
            usleep((useconds_t)(100000u << attempt)); /* back off: 0.2 s, 0.4 s */
        }
        if (channel_open(c) != 0) {
            fprintf(stderr, "reopen %s: %s\n", c->endpoint, zmq_strerror(zmq_errno()));
            return EXIT_DOWN;
        }
    }
    return EXIT_DOWN;
}

/* check_envelope verifies v, type and correlation_id of a reply and
 * returns its error object (NULL when error is nil) in *err. Returns 0
 * when the envelope is the expected one. */
static int check_envelope(const msgpack_object *reply, const char *want_type, const char *id,
                          const msgpack_object **err) {
    double v;
    const msgpack_object *type = lookup(reply, "type");
    const msgpack_object *corr = lookup(reply, "correlation_id");
    const msgpack_object *e = lookup(reply, "error");
    if (reply->type != MSGPACK_OBJECT_MAP) {
        fprintf(stderr, "reply is not a map\n");
        return -1;
    }
    if (!number(lookup(reply, "v"), &v) || v != 1) {
        fprintf(stderr, "reply v is not 1: refusing it\n");
        return -1;
    }
    /* On a REQ socket "" is also the reply to our request (one that could
     * not be decoded far enough to read its id). */
    if (!str_eq(corr, id) && !str_eq(corr, "")) {
        fprintf(stderr, "reply correlation_id does not match the request id %s\n", id);
        return -1;
    }
    *err = (e != NULL && e->type == MSGPACK_OBJECT_MAP) ? e : NULL;
    if (!str_eq(type, want_type)) {
        fprintf(stderr, "reply type ");
        print_str(stderr, type);
        fprintf(stderr, ", want %s", want_type);
        if (*err != NULL) {
            fprintf(stderr, " (error ");
            print_str(stderr, lookup(*err, "code"));
            fprintf(stderr, ": ");
            print_str(stderr, lookup(*err, "message"));
            fprintf(stderr, ")");
        }
        fprintf(stderr, "\n");
        return -1;
    }
    return 0;
}

/* fail_on_error reports an unexpected error object. */
static int fail_on_error(const char *what, const msgpack_object *err) {
    if (err == NULL) return 0;
    fprintf(stderr, "%s failed: ", what);
    print_str(stderr, lookup(err, "code"));
    fprintf(stderr, ": ");
    print_str(stderr, lookup(err, "message"));
    fprintf(stderr, "\n");
    return -1;
}

/* ---- The three exchanges -------------------------------------------- */

/* do_ping is the handshake check: the server speaks envelope v 1 and
 * protocol_version 1, or this client must not talk to it. */
static int do_ping(struct channel *c) {
    char id[37];
    struct reply rep;
    const msgpack_object *err;
    double proto;
    int rc = round_trip(c, pack_ping, NULL, id, &rep);
    if (rc != 0) return rc;
    rc = EXIT_UNEXPECTED;
    const msgpack_object *body = lookup(&rep.unpacked.data, "body");
    if (check_envelope(&rep.unpacked.data, "pong", id, &err) != 0 || fail_on_error("ping", err) != 0) goto out;
    if (!number(lookup(body, "protocol_version"), &proto) || proto != 1) {
        fprintf(stderr, "server speaks another protocol_version: refusing it\n");
        goto out;
    }
    double uptime = 0;
    number(lookup(body, "uptime_seconds"), &uptime);
    printf("pong: server_version=");
    print_str(stdout, lookup(body, "server_version"));
    printf(" protocol_version=%.0f model_version=", proto);
    print_str(stdout, lookup(body, "model_version"));
    printf(" uptime_seconds=%.3f\n", uptime);
    rc = 0;
out:
    reply_close(&rep);
    return rc;
}

static int do_predict(struct channel *c, const struct spectrum *s) {
    char id[37];
    struct reply rep;
    const msgpack_object *err;
    int rc = round_trip(c, pack_predict, s, id, &rep);
    if (rc != 0) return rc;
    rc = EXIT_UNEXPECTED;
    const msgpack_object *body = lookup(&rep.unpacked.data, "body");
    if (check_envelope(&rep.unpacked.data, "predict_reply", id, &err) != 0 ||
        fail_on_error("predict", err) != 0)
        goto out;
    const msgpack_object *conc = lookup(body, "concentrations");
    const msgpack_object *conf = lookup(body, "confidence");
    const msgpack_object *diag = lookup(body, "diagnostics");
    double ms = 0;
    number(lookup(body, "inference_ms"), &ms);
    printf("predict_reply: model_version=");
    print_str(stdout, lookup(body, "model_version"));
    printf(" inference_ms=%.3f\n", ms);
    int shown = 0;
    for (size_t i = 0; i < sizeof ANALYTES / sizeof ANALYTES[0]; i++) {
        double g, p;
        if (!number(lookup(conc, ANALYTES[i]), &g)) continue; /* not predicted by this model */
        printf("  %s %.3f g/L", ANALYTES[i], g);
        if (number(lookup(conf, ANALYTES[i]), &p)) printf("  confidence %.3f", p);
        printf("\n");
        shown++;
    }
    if (shown == 0) {
        fprintf(stderr, "predict_reply has no concentrations\n");
        goto out;
    }
    double t2r, qr;
    if (number(lookup(diag, "t2_reduced"), &t2r)) printf("  t2_reduced %.3f\n", t2r);
    if (number(lookup(diag, "q_reduced"), &qr)) printf("  q_reduced %.3f\n", qr);
    rc = 0;
out:
    reply_close(&rep);
    return rc;
}

/* do_bad_predict sends a spectrum the model must refuse and expects a
 * predict_reply carrying error INVALID_SPECTRUM. */
static int do_bad_predict(struct channel *c, const struct spectrum *s) {
    char id[37];
    struct reply rep;
    const msgpack_object *err;
    struct spectrum bad = *s;
    bad.n = 100; /* the model wants 2048 points */
    int rc = round_trip(c, pack_predict, &bad, id, &rep);
    if (rc != 0) return rc;
    rc = EXIT_UNEXPECTED;
    if (check_envelope(&rep.unpacked.data, "predict_reply", id, &err) != 0) goto out;
    if (err == NULL) {
        fprintf(stderr, "a 100-point spectrum was accepted\n");
        goto out;
    }
    const msgpack_object *retryable = lookup(err, "retryable");
    printf("predict_reply: error ");
    print_str(stdout, lookup(err, "code"));
    printf(" retryable=%s: ", retryable != NULL && retryable->type == MSGPACK_OBJECT_BOOLEAN &&
                                      retryable->via.boolean
                                  ? "true"
                                  : "false");
    print_str(stdout, lookup(err, "message"));
    printf("\n");
    if (!str_eq(lookup(err, "code"), "INVALID_SPECTRUM")) {
        fprintf(stderr, "want error code INVALID_SPECTRUM\n");
        goto out;
    }
    rc = 0;
out:
    reply_close(&rep);
    return rc;
}

/* ---- Spectra -------------------------------------------------------- */

static int spectrum_alloc(struct spectrum *s, size_t n) {
    s->n = n;
    s->wavenumbers = calloc(n, sizeof(double));
    s->intensities = calloc(n, sizeof(double));
    return s->wavenumbers != NULL && s->intensities != NULL ? 0 : -1;
}

/* synthetic_spectrum: 2048 points evenly over 200..3200 cm-1, a baseline
 * and three Gaussian bands. The model predicts it, with low confidence
 * unless it resembles the calibration spectra. */
static int synthetic_spectrum(struct spectrum *s) {
    const size_t n = 2048;
    if (spectrum_alloc(s, n) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        double wn = 200.0 + 3000.0 * (double)i / (double)(n - 1);
        s->wavenumbers[i] = wn;
        s->intensities[i] = 1000.0 + 0.05 * wn + 800.0 * exp(-pow((wn - 1655.0) / 12.0, 2)) +
                            600.0 * exp(-pow((wn - 2930.0) / 25.0, 2)) +
                            300.0 * exp(-pow((wn - 1440.0) / 15.0, 2));
    }
    return 0;
}

/* read_spectrum reads "wavenumber intensity" pairs, one per line. */
static int read_spectrum(const char *path, struct spectrum *s) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    if (spectrum_alloc(s, MAX_POINTS) != 0) {
        fclose(f);
        return -1;
    }
    size_t n = 0;
    double wn, in;
    int got;
    while ((got = fscanf(f, "%lf %lf", &wn, &in)) == 2) {
        if (n == MAX_POINTS) {
            fprintf(stderr, "%s: more than %d points\n", path, MAX_POINTS);
            fclose(f);
            return -1;
        }
        s->wavenumbers[n] = wn;
        s->intensities[n] = in;
        n++;
    }
    int bad = got != EOF || ferror(f) || n < 100;
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: want at least 100 lines of \"wavenumber intensity\"\n", path);
        return -1;
    }
    s->n = n;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 3) {
        fprintf(stderr, "usage: %s [endpoint [spectrum-file]]\n", argv[0]);
        return EXIT_USAGE;
    }
    struct channel c = {.endpoint = argc > 1 ? argv[1] : "tcp://127.0.0.1:5555"};
    struct spectrum s = {0};
    if ((argc > 2 ? read_spectrum(argv[2], &s) : synthetic_spectrum(&s)) != 0) return EXIT_USAGE;

    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    printf("libzmq %d.%d.%d, endpoint %s, %zu points\n", major, minor, patch, c.endpoint, s.n);

    c.ctx = zmq_ctx_new();
    if (c.ctx == NULL || channel_open(&c) != 0) {
        fprintf(stderr, "connect %s: %s\n", c.endpoint, zmq_strerror(zmq_errno()));
        return EXIT_USAGE;
    }
    int rc = do_ping(&c);
    if (rc == 0) rc = do_predict(&c, &s);
    if (rc == 0) rc = do_bad_predict(&c, &s);
    if (c.sock != NULL) zmq_close(c.sock);
    zmq_ctx_term(c.ctx);
    free(s.wavenumbers);
    free(s.intensities);
    printf("%s\n", rc == 0 ? "ok" : "FAILED");
    return rc;
}
