/* SPDX-License-Identifier: GPL-2.0 */
/*
 * itapi-conformance: the scenarios of the IT-API document (inventory B.4,
 * S1-S11) on a real viaduct device, each side asserting the events, EP
 * states and statuses the document gives. Prints TAP.
 *
 *   itapi-conformance local            scenarios of one process
 *   itapi-conformance server CLIENTIP  the passive half of the two-host ones
 *   itapi-conformance client SERVERIP  the active half
 *
 * Both halves run the same scenarios in the same order; each scenario has
 * qualifiers (TCP ports) of its own, and the client retries a connection
 * that finds nobody listening yet (NONPEER_REJECT, IT_CN_REJ_BAD_PATH).
 *
 * This header is the harness a scenario file uses: conformance.c (the
 * connection side) and the data-path scenarios share it.
 */
#ifndef ITAPI_CONFORMANCE_H
#define ITAPI_CONFORMANCE_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How long a wait for something that must happen may take (microseconds):
 * a bound for a hang, not a measure of speed. Waits whose expiry is what a
 * test checks use short timeouts of their own.
 */
#define LONG_US (60ULL * 1000 * 1000)

void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bail(const char *what) __attribute__((noreturn));

#define IS(call, want) is_status((call), (want), #call, #want)
void is_status(it_status_t got, it_status_t want, const char *call, const char *wantname);

/* One side of a connection: an IA with its PZ, the three SEVDs of an RC EP
 * (request and receive DTO streams, the connect CM_MSG stream), a CM_REQ
 * SEVD for listen points, the EP, and a buffer registered in one LMR. */
struct fx {
    it_ia_handle_t ia;
    it_pz_handle_t pz;
    it_evd_handle_t req, rcv, cm, creq;
    it_ep_handle_t ep;
    it_lmr_handle_t lmr;
    it_rmr_context_t ctx; /* the LMR's implicit rmr_context (remote rights) */
    unsigned char *buf;
    size_t len;
    /* receives posted while UNCONNECTED, posted again by connect_to() when
     * a refused attempt (and the reset after it) flushed them */
    size_t npre;
    struct {
        size_t off, len;
        it_dto_cookie_t cookie;
    } pre[4];
};

/* The one IA of the test host; the peer's address (server/client). */
extern it_ia_handle_t the_ia;
extern struct in_addr peer_ip;
extern struct in_addr own_ip;

/* An fx on the_ia: buffer of @len bytes with @privs, an EP with @ird/@ord. */
void fx_open(struct fx *f, size_t len, it_mem_priv_t privs, uint32_t ird, uint32_t ord);
void fx_close(struct fx *f);

it_ep_state_rc_t ep_state(it_ep_handle_t ep);

/* The next event of @evd within @us; event_number 0 if none came. */
it_event_t next_event(it_evd_handle_t evd, uint64_t us);
/* Asserts that the next event of @evd is @want (and, for a DTO, the
 * cookie and status); returns it. */
it_event_t expect_event(it_evd_handle_t evd, it_event_type_t want, const char *what);
void expect_dto(it_evd_handle_t evd, it_event_type_t want, it_dto_cookie_t cookie,
                it_dto_status_t status, const char *what);

/* The completion of Send @cookie after which the peer ends the connection
 * as soon as the message is there: IT_DTO_SUCCESS, or IT_DTO_ERR_FLUSHED
 * when the peer ended it before the Send retired here. */
void expect_sent_before_peer_end(struct fx *f, it_dto_cookie_t cookie, const char *what);

/* A triplet of @len bytes at @off of f's buffer. */
it_lmr_triplet_t seg(const struct fx *f, size_t off, size_t len);

/* Active side: connects f->ep to @ip:@port (network order @port done here),
 * retrying while nobody listens; returns the first event that is not such
 * a BAD_PATH reject. */
it_event_t connect_to(struct fx *f, struct in_addr ip, uint16_t port, it_cn_est_flags_t flags,
                      const void *pdata, size_t pdlen, uint64_t timeout_us);
/* Passive side: listens on @port with f->creq (flags: INPUT always), takes
 * one request, returns it (the listen point in *l). */
it_event_t take_request(struct fx *f, uint16_t port, it_listen_flags_t flags,
                        it_listen_handle_t *l);

/* A path to @ip on spigot 0. */
it_path_t path_to(struct in_addr ip, uint64_t timeout_us);

/* Scenarios of other files (the data path): each runs both halves. */
struct scenario {
    const char *name;
    void (*server)(uint16_t port);
    void (*client)(uint16_t port);
    void (*local)(void);
};
extern const struct scenario dataplane_scenarios[];
extern const size_t dataplane_count;

#endif
