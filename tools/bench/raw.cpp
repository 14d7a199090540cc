// SPDX-License-Identifier: GPL-2.0
#include "raw.hpp"

#include <atomic>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>

namespace vdbench::raw {

namespace {

Mapping map_key(int fd, uint64_t key, uint64_t size, const char *what) {
    void *p =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(key));
    if (p == MAP_FAILED)
        fail(std::string("mmap ") + what);
    return Mapping(p, size);
}

// The shared indices, as rings.rst pairs them.
uint32_t load_acquire(const uint32_t &x) {
    return std::atomic_ref<const uint32_t>(x).load(std::memory_order_acquire);
}
void store_release(uint32_t &x, uint32_t v) {
    std::atomic_ref<uint32_t>(x).store(v, std::memory_order_release);
}

void destroy(int fd, unsigned long request, uint32_t handle) noexcept {
    viaduct_handle h{};
    h.handle = handle;
    ::ioctl(fd, request, &h);
}

} // namespace

Context::Context(const std::string &device) : fd_(::open("/dev/viaduct", O_RDWR | O_CLOEXEC)) {
    if (fd_.get() < 0)
        fail("open /dev/viaduct");
    viaduct_select_device sel{};
    if (device.size() >= sizeof(sel.name))
        throw Error("device name too long: " + device);
    std::memcpy(sel.name, device.data(), device.size());
    call(VIADUCT_IOCTL_SELECT_DEVICE, &sel, ("SELECT_DEVICE " + device).c_str());
    viaduct_handle pd{};
    call(VIADUCT_IOCTL_CREATE_PD, &pd, "CREATE_PD");
    pd_ = pd.handle;
}

Context::~Context() {
    destroy(fd_.get(), VIADUCT_IOCTL_DESTROY_PD, pd_);
}

void Context::call(unsigned long request, void *arg, const char *what) const {
    if (::ioctl(fd_.get(), request, arg) != 0)
        fail(what);
}

Context::Mr Context::reg_mr(const void *addr, uint64_t length, uint32_t access) const {
    viaduct_reg_mr r{};
    r.addr = reinterpret_cast<uintptr_t>(addr);
    r.length = length;
    r.pd_handle = pd_;
    r.access = access;
    call(VIADUCT_IOCTL_REG_MR, &r, "REG_MR");
    return {r.handle, r.stag};
}

void Context::dereg_mr(uint32_t handle) const {
    viaduct_handle h{};
    h.handle = handle;
    call(VIADUCT_IOCTL_DEREG_MR, &h, "DEREG_MR");
}

Cq::Cq(const Context &ctx, uint32_t entries) : ctx_(ctx) {
    viaduct_create_cq c{};
    c.entries = entries;
    c.channel_fd = -1;
    ctx.call(VIADUCT_IOCTL_CREATE_CQ, &c, "CREATE_CQ");
    handle_ = c.handle;
    entries_ = c.entries;
    ring_ = map_key(ctx.fd(), c.mmap_key, c.mmap_size, "CQ ring");
}

Cq::~Cq() {
    ring_ = Mapping();
    destroy(ctx_.fd(), VIADUCT_IOCTL_DESTROY_CQ, handle_);
}

bool Cq::poll(viaduct_cqe &out) {
    auto *hdr = ring_.as<viaduct_ring>();
    if (load_acquire(hdr->producer) == consumer_)
        return false;
    const auto *cqes = reinterpret_cast<const viaduct_cqe *>(ring_.as<const unsigned char>() +
                                                             VIADUCT_RING_HDR_SIZE);
    std::memcpy(&out, &cqes[consumer_ & (entries_ - 1)], sizeof(out));
    store_release(hdr->consumer, ++consumer_);
    return true;
}

FlushQp::FlushQp(const Context &ctx, const Cq &cq, uint32_t sq_depth, bool polled)
    : ctx_(ctx), polled_(polled) {
    viaduct_create_qp q{};
    q.pd_handle = ctx.pd();
    q.send_cq = cq.handle();
    q.recv_cq = cq.handle();
    q.flags = polled ? VIADUCT_QP_F_POLLED : 0;
    q.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
    q.sq_depth = sq_depth;
    q.rq_depth = 1;
    q.max_send_sge = 1;
    q.max_recv_sge = 1;
    ctx.call(VIADUCT_IOCTL_CREATE_QP, &q, "CREATE_QP");
    handle_ = q.handle;
    sq_depth_ = q.sq_depth;
    wqe_size_ = q.sq_wqe_size;
    db_ = map_key(ctx.fd(), q.db_key, q.db_size, "doorbell page");
    sq_ = map_key(ctx.fd(), q.sq_key, q.sq_size, "SQ ring");

    viaduct_modify_qp m{};
    m.handle = handle_;
    m.mask = VIADUCT_QP_ATTR_STATE;
    m.state = VIADUCT_QPS_ERROR;
    ctx.call(VIADUCT_IOCTL_MODIFY_QP, &m, "MODIFY_QP to Error");
}

FlushQp::~FlushQp() {
    sq_ = Mapping();
    db_ = Mapping();
    destroy(ctx_.fd(), VIADUCT_IOCTL_DESTROY_QP, handle_);
}

bool FlushQp::has_room(uint32_t n) const {
    const auto *db = db_.as<const viaduct_doorbell>();
    return producer_ - load_acquire(db->sq_consumer) + n <= sq_depth_;
}

void FlushQp::write_sqe(uint64_t wr_id, const viaduct_sge &sge, uint32_t remote_stag,
                        uint64_t remote_addr) {
    auto *slot = sq_.as<unsigned char>() + size_t{producer_ & (sq_depth_ - 1)} * wqe_size_;
    viaduct_sqe sqe{};
    sqe.wr_id = wr_id;
    sqe.opcode = VIADUCT_OP_RDMA_WRITE;
    sqe.flags = VIADUCT_SQE_SIGNALED;
    sqe.num_sge = 1;
    sqe.remote_stag = remote_stag;
    sqe.remote_addr = remote_addr;
    std::memcpy(slot, &sqe, sizeof(sqe));
    std::memcpy(slot + sizeof(sqe), &sge, sizeof(sge));
    producer_++;
}

bool FlushQp::publish() {
    auto *db = db_.as<viaduct_doorbell>();
    store_release(db->sq_producer, producer_);
    if (polled_) {
        // Store-buffer pattern against the worker's NEED_WAKEUP store and
        // its last look at the producer (Documentation/rings.rst).
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!(std::atomic_ref<uint32_t>(db->flags).load(std::memory_order_relaxed) &
              VIADUCT_DB_F_NEED_WAKEUP))
            return false;
    }
    viaduct_doorbell_req req{};
    req.handle = handle_;
    req.flags = VIADUCT_DOORBELL_SQ;
    ctx_.call(VIADUCT_IOCTL_DOORBELL, &req, "DOORBELL");
    return true;
}

} // namespace vdbench::raw
