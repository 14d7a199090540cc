// SPDX-License-Identifier: GPL-2.0
#include "verbs.hpp"

#include <arpa/inet.h>
#include <array>
#include <cstring>
#include <endian.h>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <thread>

namespace vdbench::verbs {

namespace {

constexpr int resolve_timeout_ms = 5000;
constexpr size_t buf_size = 4096;

// ibv_* and rdma_* report errors in errno (or return it); make both throw.
void check(int ret, const char *what) {
    if (ret != 0)
        fail(what, ret > 0 ? ret : errno);
}

sockaddr_in ipv4(const std::string &addr, uint16_t port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1)
        throw Error("not an IPv4 address: " + addr);
    return sa;
}

// The next CM event, acknowledged by the destructor.
class CmEvent {
public:
    explicit CmEvent(rdma_event_channel *ch) {
        check(rdma_get_cm_event(ch, &ev_), "rdma_get_cm_event");
    }
    CmEvent(const CmEvent &) = delete;
    CmEvent &operator=(const CmEvent &) = delete;
    ~CmEvent() { rdma_ack_cm_event(ev_); }
    const rdma_cm_event *operator->() const { return ev_; }
    void expect(rdma_cm_event_type type) const {
        if (ev_->event != type)
            throw Error(std::string("expected ") + rdma_event_str(type) + ", got " +
                        rdma_event_str(ev_->event) + " (status " + std::to_string(ev_->status) +
                        ")");
    }

private:
    rdma_cm_event *ev_ = nullptr;
};

} // namespace

Device::Device(const std::string &name) {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list)
        fail("ibv_get_device_list");
    for (int i = 0; i < n && !ctx_; i++)
        if (name == ibv_get_device_name(list[i]))
            ctx_ = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    if (!ctx_)
        throw Error("no RDMA device " + name + " (or ibv_open_device failed)");
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) {
        ibv_close_device(ctx_);
        fail("ibv_alloc_pd");
    }
}

Device::~Device() {
    ibv_dealloc_pd(pd_);
    ibv_close_device(ctx_);
}

ibv_mr *Device::reg_mr(void *addr, size_t length, int access) const {
    ibv_mr *mr = ibv_reg_mr(pd_, addr, length, static_cast<unsigned int>(access));
    if (!mr)
        fail("ibv_reg_mr");
    return mr;
}

void Device::dereg_mr(ibv_mr *mr) {
    check(ibv_dereg_mr(mr), "ibv_dereg_mr");
}

Endpoint::Endpoint(rdma_cm_id *id, uint32_t sq_depth, int mr_access) : id_(id) {
    try {
        pd_ = ibv_alloc_pd(id->verbs);
        if (!pd_)
            fail("ibv_alloc_pd");
        cq_ = ibv_create_cq(id->verbs, static_cast<int>(2 * sq_depth), nullptr, nullptr, 0);
        if (!cq_)
            fail("ibv_create_cq");
        ibv_qp_init_attr attr{};
        attr.send_cq = cq_;
        attr.recv_cq = cq_;
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = sq_depth;
        attr.cap.max_recv_wr = 4;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        check(rdma_create_qp(id, pd_, &attr), "rdma_create_qp");
        buf_ = Mapping::anonymous_populated(buf_size);
        mr_ = ibv_reg_mr(pd_, buf_.as(), buf_size, static_cast<unsigned int>(mr_access));
        if (!mr_)
            fail("ibv_reg_mr");
    } catch (...) {
        release();
        throw;
    }
}

Endpoint::~Endpoint() {
    release();
}

void Endpoint::release() noexcept {
    if (mr_)
        ibv_dereg_mr(std::exchange(mr_, nullptr));
    if (id_->qp)
        rdma_destroy_qp(id_);
    if (cq_)
        ibv_destroy_cq(std::exchange(cq_, nullptr));
    if (pd_)
        ibv_dealloc_pd(std::exchange(pd_, nullptr));
}

WritePair::WritePair(const std::string &server, uint16_t port, uint32_t sq_depth, uint32_t bytes)
    : sq_depth_(sq_depth) {
    if (bytes == 0 || bytes > buf_size)
        throw Error("bad RDMA Write size " + std::to_string(bytes));
    ch_ = rdma_create_event_channel();
    if (!ch_)
        fail("rdma_create_event_channel");
    try {
        sockaddr_in dst = ipv4(server, port);
        // The server may still be starting: a refused connection is retried.
        for (int attempt = 0;; attempt++) {
            check(rdma_create_id(ch_, &id_, nullptr, RDMA_PS_TCP), "rdma_create_id");
            check(rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr *>(&dst),
                                    resolve_timeout_ms),
                  "rdma_resolve_addr");
            CmEvent(ch_).expect(RDMA_CM_EVENT_ADDR_RESOLVED);
            check(rdma_resolve_route(id_, resolve_timeout_ms), "rdma_resolve_route");
            CmEvent(ch_).expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
            ep_ = std::make_unique<Endpoint>(id_, sq_depth, IBV_ACCESS_LOCAL_WRITE);
            rdma_conn_param param{};
            param.initiator_depth = 1;
            param.responder_resources = 1;
            check(rdma_connect(id_, &param), "rdma_connect");
            CmEvent ev(ch_);
            if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
                if (ev->param.conn.private_data_len < sizeof(target_))
                    throw Error("the server sent no write target");
                std::memcpy(&target_, ev->param.conn.private_data, sizeof(target_));
                break;
            }
            if (attempt >= 20 ||
                (ev->event != RDMA_CM_EVENT_REJECTED && ev->event != RDMA_CM_EVENT_CONNECT_ERROR &&
                 ev->event != RDMA_CM_EVENT_UNREACHABLE))
                ev.expect(RDMA_CM_EVENT_ESTABLISHED);
            ep_.reset();
            rdma_destroy_id(std::exchange(id_, nullptr));
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        connected_ = true;
    } catch (...) {
        release();
        throw;
    }
    wrs_.resize(sq_depth);
    sges_.resize(sq_depth);
    for (uint32_t i = 0; i < sq_depth; i++) {
        sges_[i].addr = reinterpret_cast<uintptr_t>(ep_->buf());
        sges_[i].length = bytes;
        sges_[i].lkey = ep_->mr()->lkey;
        ibv_send_wr &wr = wrs_[i];
        wr.sg_list = &sges_[i];
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = be64toh(target_.addr);
        wr.wr.rdma.rkey = be32toh(target_.rkey);
    }
}

WritePair::~WritePair() {
    release();
}

void WritePair::release() noexcept {
    if (connected_) {
        rdma_disconnect(id_);
        connected_ = false;
    }
    ep_.reset();
    if (id_)
        rdma_destroy_id(std::exchange(id_, nullptr));
    if (ch_)
        rdma_destroy_event_channel(std::exchange(ch_, nullptr));
}

void WritePair::post(uint64_t first, uint32_t n) {
    if (n == 0 || n > sq_depth_)
        throw Error("bad batch size");
    for (uint32_t i = 0; i < n; i++) {
        wrs_[i].wr_id = first + i;
        wrs_[i].next = i + 1 < n ? &wrs_[i + 1] : nullptr;
    }
    ibv_send_wr *bad = nullptr;
    check(ibv_post_send(ep_->qp(), wrs_.data(), &bad), "ibv_post_send");
}

void WritePair::wait(uint32_t n) {
    std::array<ibv_wc, 16> wc{};
    SpinDeadline deadline;
    while (n > 0) {
        int got = ibv_poll_cq(ep_->cq(), static_cast<int>(wc.size()), wc.data());
        if (got < 0)
            throw Error("ibv_poll_cq failed");
        for (int i = 0; i < got; i++) {
            const ibv_wc &c = wc[static_cast<size_t>(i)];
            if (c.status != IBV_WC_SUCCESS)
                throw Error("RDMA Write " + std::to_string(c.wr_id) + " completed with " +
                            ibv_wc_status_str(c.status) + " (vendor error " +
                            std::to_string(c.vendor_err) + ")");
        }
        n -= static_cast<uint32_t>(got);
        if (got == 0)
            deadline.check("an siw completion");
    }
}

void serve(const std::string &bind_addr, uint16_t port, const std::string &ready) {
    std::unique_ptr<rdma_event_channel, decltype(&rdma_destroy_event_channel)> ch(
        rdma_create_event_channel(), rdma_destroy_event_channel);
    if (!ch)
        fail("rdma_create_event_channel");
    rdma_cm_id *raw = nullptr;
    check(rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
    std::unique_ptr<rdma_cm_id, decltype(&rdma_destroy_id)> listener(raw, rdma_destroy_id);
    sockaddr_in sa = ipv4(bind_addr, port);
    check(rdma_bind_addr(listener.get(), reinterpret_cast<sockaddr *>(&sa)), "rdma_bind_addr");
    check(rdma_listen(listener.get(), 1), "rdma_listen");
    if (!ready.empty())
        std::ofstream(ready) << "listening\n";

    rdma_cm_id *child = nullptr;
    {
        CmEvent ev(ch.get());
        ev.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
        child = ev->id;
    }
    std::unique_ptr<rdma_cm_id, decltype(&rdma_destroy_id)> conn(child, rdma_destroy_id);
    Endpoint ep(child, 4, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    WriteTarget t{};
    t.addr = htobe64(reinterpret_cast<uintptr_t>(ep.buf()));
    t.rkey = htobe32(ep.mr()->rkey);
    rdma_conn_param param{};
    param.private_data = &t;
    param.private_data_len = sizeof(t);
    param.initiator_depth = 1;
    param.responder_resources = 1;
    check(rdma_accept(child, &param), "rdma_accept");
    CmEvent(ch.get()).expect(RDMA_CM_EVENT_ESTABLISHED);
    // The client's writes need nothing from this side; wait for the end.
    CmEvent(ch.get()).expect(RDMA_CM_EVENT_DISCONNECTED);
    rdma_disconnect(child);
}

} // namespace vdbench::verbs
