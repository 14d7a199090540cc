// SPDX-License-Identifier: GPL-2.0
// siw, the kernel's software iWARP device, through rdma-core: memory
// registration on a device opened by name, and a connected RC pair (over
// librdmacm, the way iWARP connects) that posts small RDMA Writes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common.hpp"

namespace vdbench::verbs {

// An ibv_context opened by device name, with one PD.
class Device {
public:
    explicit Device(const std::string &name);
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    ~Device();

    // The timed pair.
    ibv_mr *reg_mr(void *addr, size_t length, int access) const;
    static void dereg_mr(ibv_mr *mr);

private:
    ibv_context *ctx_ = nullptr;
    ibv_pd *pd_ = nullptr;
};

// What the server tells the client in its MPA reply's private data.
struct WriteTarget {
    uint64_t addr; // big-endian
    uint32_t rkey; // big-endian
    uint32_t reserved;
};

// Resources of one connected endpoint: PD, CQ, QP, one 4 KiB MR.
class Endpoint {
public:
    Endpoint(rdma_cm_id *id, uint32_t sq_depth, int mr_access);
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;
    ~Endpoint();

    ibv_qp *qp() const { return id_->qp; }
    ibv_cq *cq() const { return cq_; }
    ibv_mr *mr() const { return mr_; }
    void *buf() const { return buf_.as(); }

private:
    void release() noexcept;

    rdma_cm_id *id_;
    ibv_pd *pd_ = nullptr;
    ibv_cq *cq_ = nullptr;
    Mapping buf_;
    ibv_mr *mr_ = nullptr;
};

// The client side: connects to a server started with serve(), then posts
// signaled RDMA Writes of @bytes (at most 4096) to the server's buffer and
// spins on the CQ.
class WritePair {
public:
    WritePair(const std::string &server, uint16_t port, uint32_t sq_depth, uint32_t bytes);
    WritePair(const WritePair &) = delete;
    WritePair &operator=(const WritePair &) = delete;
    ~WritePair();

    uint32_t sq_depth() const { return sq_depth_; }
    // One ibv_post_send() of a chain of @n WRs, wr_ids @first...
    void post(uint64_t first, uint32_t n);
    // Spins on ibv_poll_cq() until @n successful completions arrived.
    void wait(uint32_t n);

private:
    void release() noexcept;

    rdma_event_channel *ch_ = nullptr;
    rdma_cm_id *id_ = nullptr;
    std::unique_ptr<Endpoint> ep_;
    bool connected_ = false;
    uint32_t sq_depth_;
    WriteTarget target_{};
    std::vector<ibv_send_wr> wrs_;
    std::vector<ibv_sge> sges_;
};

// Serves one client: accepts it, offers a 4 KiB buffer for its RDMA
// Writes, and returns when it disconnects. Writes "listening" to @ready
// (if not empty) once the listener is up.
void serve(const std::string &bind_addr, uint16_t port, const std::string &ready);

} // namespace vdbench::verbs
