// SPDX-License-Identifier: GPL-2.0
// viaduct-facecost: what each API face adds to posting a work request and
// reaping its completion, against the native API, on one viaduct device.
//
//   viaduct-facecost [-d DEV] [-n ITERS] [-r ROUNDS] [-S BYTES] [-f FACE]
//
// Each face gets its own queue pair on DEV, moved to Error before the
// measurement: the kernel takes every posted WQE from the ring (the same
// intake, checks and copy as on a connected QP) and completes it at once
// as flushed, so nothing goes on the wire and no peer, scheduler or
// transport adds its noise. The loop is the same for every face: build a
// signaled Send of BYTES from registered memory, post it with the face's
// call, spin on the face's completion call until it returns it. The faces:
//
//   native  viaduct::QueuePair::post_send(), CompletionQueue::poll()
//   native252  the same on a QP shaped as libvipl makes them, 252 SGEs per
//           WQE (a VIPL descriptor may have that many segments): the
//           kernel copies every 4 KiB slot whole, so this row shows what
//           the QP's shape costs apart from the face's code
//   vipl    VipPostSend() of a descriptor in registered memory,
//           VipSendDone() (libvipl; the VI is put in Error by a malformed
//           descriptor, as the guide's Reliable Delivery VI does)
//   verbs   ibv_post_send(), ibv_poll_cq() (libviaduct-verbs, through
//           rdma-core's inline dispatch; the QP moved RESET -> ERR)
//   itapi   it_post_send() with IT_COMPLETION_FLAG, it_evd_dequeue() on
//           the EP's request SEVD (libviaduct-itapi; the EP is
//           NONOPERATIONAL after a connection attempt to a port of its
//           own address nobody listens on)
//
// Rounds rotate the order of the faces (round 1: native native252 vipl
// verbs itapi, round 2: native252 vipl verbs itapi native, ...). Per face the table gives the
// median over the rounds of each round's median (and their range) for post + reap and for the post
// call alone, and the cost over native within each round. With -f only that face runs (for a
// profiler: perf record -e cpu-clock). Every time is from CLOCK_MONOTONIC; nothing sleeps while it
// is measured. Exit status: 0 done, 1 a step failed, 2 usage error.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <viaduct/viaduct.hpp>
#include <vipl.h>
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kWarmup = 200;
constexpr std::uint32_t kDepth = 64;

[[noreturn]] void fail(const std::string &what) {
    throw std::runtime_error(what);
}

// Page-aligned memory that the faces register.
struct Buffer {
    explicit Buffer(std::size_t n) : size(n) {
        if (posix_memalign(&base, 4096, n))
            fail("out of memory");
        std::memset(base, 0, n);
    }
    ~Buffer() { std::free(base); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    void *base = nullptr;
    std::size_t size;
};

class Native {
public:
    Native(const std::string &dev, std::uint32_t bytes, std::uint32_t sges = 1)
        : dev_(viaduct::Device::open(dev)), pd_(dev_), cq_(dev_, 2 * kDepth), buf_(4096),
          mr_(pd_, buf_.base, buf_.size, viaduct::access::local_write),
          qp_(pd_, config(cq_, sges)), sge_{reinterpret_cast<std::uintptr_t>(buf_.base), bytes,
                                            mr_.stag()} {
        qp_.modify(viaduct::QpState::Error);
    }
    void post(std::uint64_t id) { qp_.post_send(viaduct::SendWr{.wr_id = id, .sge = {&sge_, 1}}); }
    void reap(std::uint64_t id) {
        viaduct::Completion c;
        while (cq_.poll({&c, 1}) == 0)
            ;
        if (c.wr_id != id || c.status != viaduct::WcStatus::Flushed)
            fail("native: unexpected completion");
    }

private:
    static viaduct::QpConfig config(const viaduct::CompletionQueue &cq, std::uint32_t sges) {
        viaduct::QpConfig c;
        c.max_send_sge = sges;
        c.max_recv_sge = sges;
        c.send_cq = &cq;
        c.recv_cq = &cq;
        c.sq_depth = kDepth;
        c.rq_depth = kDepth;
        return c;
    }
    viaduct::Device dev_;
    viaduct::ProtectionDomain pd_;
    viaduct::CompletionQueue cq_;
    Buffer buf_;
    viaduct::MemoryRegion mr_;
    viaduct::QueuePair qp_;
    viaduct::Sge sge_;
};

class Vipl {
public:
    Vipl(const std::string &dev, std::uint32_t bytes) : buf_(4096), bytes_(bytes) {
        if (VipOpenNic(dev.c_str(), &nic_) != VIP_SUCCESS)
            fail("VipOpenNic " + dev);
        VIP_MEM_ATTRIBUTES ma{};
        if (VipRegisterMem(nic_, buf_.base, buf_.size, &ma, &mh_) != VIP_SUCCESS)
            fail("VipRegisterMem");
        VIP_VI_ATTRIBUTES va{};
        va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
        va.MaxTransferSize = bytes;
        if (VipCreateVi(nic_, &va, nullptr, nullptr, &vi_) != VIP_SUCCESS)
            fail("VipCreateVi");
        desc_ = static_cast<VIP_DESCRIPTOR *>(buf_.base);
        data_ = static_cast<char *>(buf_.base) + 1024;
        // A malformed descriptor (an RDMA Write without its address
        // segment) puts a Reliable Delivery VI in Error.
        std::memset(desc_, 0, sizeof(*desc_));
        desc_->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
        if (VipPostSend(vi_, desc_, mh_) != VIP_SUCCESS)
            fail("VipPostSend (malformed)");
        VIP_DESCRIPTOR *d = nullptr;
        VIP_RETURN r;
        while ((r = VipSendDone(vi_, &d)) == VIP_NOT_DONE)
            ;
        if (r != VIP_DESCRIPTOR_ERROR || d != desc_)
            fail("VipSendDone (malformed): no error");
    }
    ~Vipl() {
        VipDestroyVi(vi_);
        VipDeregisterMem(nic_, buf_.base, mh_);
        VipCloseNic(nic_);
    }
    Vipl(const Vipl &) = delete;
    Vipl &operator=(const Vipl &) = delete;
    void post(std::uint64_t) {
        VIP_DESCRIPTOR *d = desc_;
        std::memset(&d->CS, 0, sizeof(d->CS));
        d->CS.SegCount = 1;
        d->CS.Length = bytes_;
        d->DS[0].Local.Data.Address = data_;
        d->DS[0].Local.Handle = mh_;
        d->DS[0].Local.Length = bytes_;
        if (VipPostSend(vi_, d, mh_) != VIP_SUCCESS)
            fail("VipPostSend");
    }
    void reap(std::uint64_t) {
        VIP_DESCRIPTOR *d = nullptr;
        VIP_RETURN r;
        while ((r = VipSendDone(vi_, &d)) == VIP_NOT_DONE)
            ;
        // flushed: completed in error
        if (r != VIP_DESCRIPTOR_ERROR || d != desc_ || !(d->CS.Status & VIP_STATUS_DONE))
            fail("vipl: unexpected completion");
    }

private:
    Buffer buf_;
    std::uint32_t bytes_;
    VIP_NIC_HANDLE nic_ = nullptr;
    VIP_MEM_HANDLE mh_ = 0;
    VIP_VI_HANDLE vi_ = nullptr;
    VIP_DESCRIPTOR *desc_ = nullptr;
    char *data_ = nullptr;
};

class Verbs {
public:
    Verbs(const std::string &dev, std::uint32_t bytes) : buf_(4096), bytes_(bytes) {
        int n = 0;
        ibv_device **list = ibv_get_device_list(&n);
        if (!list)
            fail("ibv_get_device_list");
        for (int i = 0; i < n && !ctx_; i++)
            if (dev == ibv_get_device_name(list[i]))
                ctx_ = ibv_open_device(list[i]);
        ibv_free_device_list(list);
        if (!ctx_)
            fail("ibv_open_device " + dev);
        if (!(pd_ = ibv_alloc_pd(ctx_)))
            fail("ibv_alloc_pd");
        if (!(mr_ = ibv_reg_mr(pd_, buf_.base, buf_.size, IBV_ACCESS_LOCAL_WRITE)))
            fail("ibv_reg_mr");
        if (!(cq_ = ibv_create_cq(ctx_, 2 * kDepth, nullptr, nullptr, 0)))
            fail("ibv_create_cq");
        ibv_qp_init_attr ia{};
        ia.send_cq = cq_;
        ia.recv_cq = cq_;
        ia.cap.max_send_wr = kDepth;
        ia.cap.max_recv_wr = kDepth;
        ia.cap.max_send_sge = 1;
        ia.cap.max_recv_sge = 1;
        ia.qp_type = IBV_QPT_RC;
        ia.sq_sig_all = 0;
        if (!(qp_ = ibv_create_qp(pd_, &ia)))
            fail("ibv_create_qp");
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        if (ibv_modify_qp(qp_, &a, IBV_QP_STATE))
            fail("ibv_modify_qp ERR");
    }
    ~Verbs() {
        ibv_destroy_qp(qp_);
        ibv_destroy_cq(cq_);
        ibv_dereg_mr(mr_);
        ibv_dealloc_pd(pd_);
        ibv_close_device(ctx_);
    }
    Verbs(const Verbs &) = delete;
    Verbs &operator=(const Verbs &) = delete;
    void post(std::uint64_t id) {
        ibv_sge s{reinterpret_cast<std::uintptr_t>(buf_.base), bytes_, mr_->lkey};
        ibv_send_wr wr{};
        ibv_send_wr *bad = nullptr;
        wr.wr_id = id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        if (ibv_post_send(qp_, &wr, &bad))
            fail("ibv_post_send");
    }
    void reap(std::uint64_t id) {
        ibv_wc wc;
        int n;
        while ((n = ibv_poll_cq(cq_, 1, &wc)) == 0)
            ;
        if (n != 1 || wc.wr_id != id || wc.status != IBV_WC_WR_FLUSH_ERR)
            fail("verbs: unexpected completion");
    }

private:
    Buffer buf_;
    std::uint32_t bytes_;
    ibv_context *ctx_ = nullptr;
    ibv_pd *pd_ = nullptr;
    ibv_mr *mr_ = nullptr;
    ibv_cq *cq_ = nullptr;
    ibv_qp *qp_ = nullptr;
};

class Itapi {
public:
    Itapi(const std::string &dev, std::uint32_t bytes) : buf_(4096), bytes_(bytes) {
        check(it_ia_create(dev.c_str(), 2, 1, &ia_), "it_ia_create " + dev);
        check(it_pz_create(ia_, &pz_), "it_pz_create");
        check(it_evd_create(ia_, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * kDepth, 1,
                            nullptr, &req_, nullptr),
              "it_evd_create (request)");
        check(it_evd_create(ia_, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * kDepth, 1,
                            nullptr, &rcv_, nullptr),
              "it_evd_create (receive)");
        check(it_evd_create(ia_, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, nullptr,
                            &cm_, nullptr),
              "it_evd_create (CM)");
        it_rmr_context_t ctx;
        check(it_lmr_create(pz_, buf_.base, nullptr, buf_.size, IT_ADDR_MODE_ABSOLUTE,
                            IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr_, &ctx),
              "it_lmr_create");
        it_ep_attributes_t a{};
        a.max_dto_payload_size = 4096;
        a.max_request_dtos = kDepth;
        a.max_rcv_dtos = kDepth;
        a.max_send_segments = 1;
        a.max_rcv_segments = 1;
        a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
        check(it_ep_rc_create(pz_, req_, rcv_, cm_, IT_EP_NO_FLAG, &a, &ep_), "it_ep_rc_create");
        // NONOPERATIONAL: a connection to a port of our own nobody listens on
        it_ia_info_t *info = nullptr;
        check(it_ia_query(ia_, &info), "it_ia_query");
        it_path_t path{};
        for (std::size_t i = 0; info->num_spigots > 0 && i < info->spigot_info[0].num_net_addr; i++)
            if (info->spigot_info[0].net_addr[i].addr_type == IT_IPV4)
                path.remote.iwarp.raddr.ipv4 = info->spigot_info[0].net_addr[i].addr.ipv4;
        it_ia_info_free(info);
        if (path.remote.iwarp.raddr.ipv4.s_addr == 0)
            fail("itapi: " + dev + " has no IPv4 address");
        path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
        it_conn_qual_t q{};
        q.type = IT_IANA_PORT;
        q.conn_qual.port = htons(9); // discard: nobody listens in the test VM
        check(it_ep_connect(ep_, &path, nullptr, &q, IT_CONNECT_FLAG_TWO_WAY, nullptr, 0),
              "it_ep_connect");
        it_event_t ev{};
        size_t more = 0;
        check(it_evd_wait(cm_, 30ULL * 1000 * 1000, &ev, &more), "it_evd_wait (CM)");
        if (ev.event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT)
            fail("itapi: the connection to port 9 was not refused");
        seg_.lmr = lmr_;
        seg_.addr.abs = buf_.base;
        seg_.length = bytes;
    }
    ~Itapi() {
        it_ep_free(ep_);
        it_lmr_free(lmr_);
        it_evd_free(cm_);
        it_evd_free(rcv_);
        it_evd_free(req_);
        it_pz_free(pz_);
        it_ia_free(ia_);
    }
    Itapi(const Itapi &) = delete;
    Itapi &operator=(const Itapi &) = delete;
    void post(std::uint64_t id) {
        if (it_post_send(ep_, &seg_, 1, id, IT_COMPLETION_FLAG) != IT_SUCCESS)
            fail("it_post_send");
    }
    void reap(std::uint64_t id) {
        it_event_t ev;
        it_status_t st;
        while ((st = it_evd_dequeue(req_, &ev)) == IT_ERR_QUEUE_EMPTY)
            ;
        if (st != IT_SUCCESS || ev.dto_cmpl.cookie != id ||
            ev.dto_cmpl.dto_status != IT_DTO_ERR_FLUSHED)
            fail("itapi: unexpected completion");
    }

private:
    static void check(it_status_t st, const std::string &what) {
        if (st != IT_SUCCESS)
            fail(what + ": " + viaduct_it_status_str(st));
    }
    Buffer buf_;
    std::uint32_t bytes_;
    it_ia_handle_t ia_ = nullptr;
    it_pz_handle_t pz_ = nullptr;
    it_evd_handle_t req_ = nullptr, rcv_ = nullptr, cm_ = nullptr;
    it_lmr_handle_t lmr_ = nullptr;
    it_ep_handle_t ep_ = nullptr;
    it_lmr_triplet_t seg_{};
};

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Round {
    double total; // post + reap, ns, median of the round
    double post;  // the post call alone
};

// One round of @iters WRs on @f: the medians of the round.
template <class Face> Round measure(Face &f, std::uint32_t iters, std::uint64_t &id) {
    std::vector<double> total, post;
    total.reserve(iters);
    post.reserve(iters);
    for (std::uint32_t i = 0; i < kWarmup; i++, id++) {
        f.post(id);
        f.reap(id);
    }
    for (std::uint32_t i = 0; i < iters; i++, id++) {
        auto t0 = Clock::now();
        f.post(id);
        auto t1 = Clock::now();
        f.reap(id);
        auto t2 = Clock::now();
        post.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
        total.push_back(std::chrono::duration<double, std::nano>(t2 - t0).count());
    }
    return {median(total), median(post)};
}

void usage(FILE *f) {
    std::fprintf(
        f, "usage: viaduct-facecost [-d DEV] [-n ITERS] [-r ROUNDS] [-S BYTES] [-f FACE]\n"
           "Post + reap of one signaled Send per iteration on a QP in Error (the\n"
           "flush path), through the native API, VIPL, verbs and IT-API, in rotating rounds.\n"
           "  -d DEV     viaduct device (default vd0)\n"
           "  -n ITERS   timed iterations per face and round (default 5000)\n"
           "  -r ROUNDS  rounds (default 5)\n"
           "  -S BYTES   Send size (default 8)\n"
           "  -f FACE    only this one: native, native252, vipl, verbs or itapi (for a\n"
           "             profiler)\n"
           "  -h         this text\n");
}

std::uint32_t number(const char *opt, const char *s, std::uint32_t min, std::uint32_t max) {
    char *end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(s, &end, 0);
    if (errno || !end || *end || v < min || v > max) {
        std::fprintf(stderr, "viaduct-facecost: bad %s '%s' (%u to %u)\n", opt, s, min, max);
        std::exit(2);
    }
    return static_cast<std::uint32_t>(v);
}

} // namespace

int main(int argc, char **argv) {
    std::string dev = "vd0", only;
    std::uint32_t iters = 5000, rounds = 5, bytes = 8;
    static const option longopts[] = {{"help", no_argument, nullptr, 'h'}, {}};
    int opt;
    while ((opt = getopt_long(argc, argv, "d:n:r:S:f:h", longopts, nullptr)) != -1) {
        switch (opt) {
        case 'd':
            dev = optarg;
            break;
        case 'n':
            iters = number("-n", optarg, 1, 10000000);
            break;
        case 'r':
            rounds = number("-r", optarg, 1, 1000);
            break;
        case 'f':
            only = optarg;
            if (only != "native" && only != "native252" && only != "vipl" && only != "verbs" &&
                only != "itapi") {
                std::fprintf(stderr, "viaduct-facecost: no face '%s'\n", optarg);
                return 2;
            }
            break;
        case 'S':
            bytes = number("-S", optarg, 1, 2048);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    try {
        constexpr std::size_t kFaces = 5;
        const char *names[kFaces] = {"native", "native252", "vipl", "verbs", "itapi"};
        if (!only.empty()) {
            std::uint64_t id = 0;
            Round x = only == "native" ? measure(*std::make_unique<Native>(dev, bytes), iters, id)
                      : only == "native252"
                          ? measure(*std::make_unique<Native>(dev, bytes, 252), iters, id)
                      : only == "vipl"  ? measure(*std::make_unique<Vipl>(dev, bytes), iters, id)
                      : only == "itapi" ? measure(*std::make_unique<Itapi>(dev, bytes), iters, id)
                                        : measure(*std::make_unique<Verbs>(dev, bytes), iters, id);
            std::printf("%-10s post+reap %.0f ns, post call %.0f ns (median of %u)\n", only.c_str(),
                        x.total, x.post, iters);
            return 0;
        }
        Native native(dev, bytes), native252(dev, bytes, 252);
        Vipl vipl(dev, bytes);
        Verbs verbs(dev, bytes);
        Itapi itapi(dev, bytes);
        std::array<std::vector<Round>, kFaces> res;
        std::array<std::uint64_t, kFaces> ids{};
        for (std::uint32_t r = 0; r < rounds; r++) {
            for (std::size_t k = 0; k < kFaces; k++) {
                const std::size_t f = (k + r) % kFaces;
                std::fprintf(stderr, "round %u of %u: %s\n", r + 1, rounds, names[f]);
                Round x = f == 0   ? measure(native, iters, ids[f])
                          : f == 1 ? measure(native252, iters, ids[f])
                          : f == 2 ? measure(vipl, iters, ids[f])
                          : f == 3 ? measure(verbs, iters, ids[f])
                                   : measure(itapi, iters, ids[f]);
                res[f].push_back(x);
            }
        }
        std::printf("# viaduct-facecost: post + reap of one signaled %u-byte Send on %s, QP in "
                    "Error\n# (flush path), %u rounds of %u iterations per face, the order "
                    "rotating; times in ns\n",
                    bytes, dev.c_str(), rounds, iters);
        std::printf("%-10s %12s %21s %12s %21s %16s %21s\n", "face", "post+reap", "[min, max]",
                    "post call", "[min, max]", "cost/WR [ns]", "cost [min, max]");
        for (std::size_t f = 0; f < kFaces; f++) {
            std::vector<double> tot, post, cost_ns, cost;
            for (std::uint32_t r = 0; r < rounds; r++) {
                tot.push_back(res[f][r].total);
                post.push_back(res[f][r].post);
                cost_ns.push_back(res[f][r].total - res[0][r].total);
                cost.push_back(res[f][r].total / res[0][r].total - 1);
            }
            char a[64], b[64], c[64], d[64];
            std::snprintf(a, sizeof(a), "[%.0f, %.0f]", *std::min_element(tot.begin(), tot.end()),
                          *std::max_element(tot.begin(), tot.end()));
            std::snprintf(b, sizeof(b), "[%.0f, %.0f]", *std::min_element(post.begin(), post.end()),
                          *std::max_element(post.begin(), post.end()));
            std::snprintf(c, sizeof(c), "%+.0f (%+.1f%%)", median(cost_ns), median(cost) * 100);
            std::snprintf(d, sizeof(d), "[%+.1f%%, %+.1f%%]",
                          *std::min_element(cost.begin(), cost.end()) * 100,
                          *std::max_element(cost.begin(), cost.end()) * 100);
            std::printf("%-10s %12.0f %21s %12.0f %21s %16s %21s\n", names[f], median(tot), a,
                        median(post), b, f ? c : "-", f ? d : "-");
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "viaduct-facecost: %s\n", e.what());
        return 1;
    }
    return 0;
}
