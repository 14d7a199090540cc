// SPDX-License-Identifier: GPL-2.0
//
// libviaduct: the C++ core API.
//
// A Device is an open context on /dev/viaduct bound to one viaduct device
// (vd0, vd1, ...). The context, and everything created on it, lives as long
// as the Device or any object that shares its state (protection domains,
// queues) is alive; the last one to go closes the file descriptor, and the
// kernel then releases every resource of the context.
//
// Every failure is reported as viaduct::Error, a std::system_error whose
// code() is the errno in std::generic_category() and whose what() says what
// went wrong and, where there is one, what to do about it. See libviaduct(3)
// and Documentation/library.rst.
//
// The fast path (protection domains, memory regions, completion queues and
// channels, queue pairs) follows the Device. Every object is a handle on a
// shared state: a child holds its parents' states, so a Device, a PD or a CQ
// lives on, in the kernel too, until the last object using it is gone.
// Posting work requests and polling completions touch only memory shared
// with the kernel; see Documentation/rings.rst for the protocol.
//
// Threads. Distinct objects may be used from distinct threads freely. On one
// object, every const member and the members listed here may be called
// concurrently:
//  - QueuePair: post_send() and post_recv() take separate locks, one per
//    work queue, and the two queues share no memory that is written, so one
//    thread may post sends while another posts receives with no lock of the
//    caller's; threads posting on the same queue serialise on its lock.
//    poll_send() and poll_recv() have a lock per private ring; modify() and
//    query() are system calls and may run beside posting.
//  - CompletionQueue: poll(), wait() and resize() serialise on the CQ's
//    lock. Only one thread at a time may sleep on a completion channel
//    (CompletionQueue::wait() or CompletionChannel::wait()): a sleeper may
//    read the event meant for another CQ of the channel and keep it, and
//    the other sleeper is not woken for it.
//  - Device: read_event().
// Not thread-safe, as with any C++ object: moving from, assigning to or
// destroying an object while another thread uses it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <viaduct/viaduct-abi.h>

#define VIADUCT_API __attribute__((visibility("default")))

namespace viaduct {

class VIADUCT_API Error : public std::system_error {
public:
    Error(int err, const std::string &what);
    ~Error() override;

    Error(const Error &) noexcept = default;
    Error &operator=(const Error &) noexcept = default;

    // The message alone: unlike std::system_error's, it does not end in
    // strerror(), since it already says what went wrong in its own words.
    const char *what() const noexcept override;

    // The errno, the same as code().value().
    int errnum() const noexcept { return code().value(); }

private:
    std::shared_ptr<const std::string> what_; // shared: copies must not throw
};

// One device as listed by Device::list().
struct DeviceEntry {
    std::uint32_t index = 0;
    std::uint32_t ifindex = 0;
    std::string name;
    std::string ifname;
};

// An IP address of the device's interface.
struct VIADUCT_API Address {
    int family = 0;      // AF_INET or AF_INET6
    std::string address; // inet_ntop() form: "192.0.2.1", "2001:db8::1"
    unsigned prefixlen = 0;

    std::string to_string() const; // "192.0.2.1/24"
};

struct DeviceLimits {
    std::uint32_t max_pd = 0;
    std::uint32_t max_mr = 0;
    std::uint32_t max_cq = 0;
    std::uint32_t max_cqe = 0; // entries per CQ
    std::uint32_t max_qp = 0;
    std::uint32_t max_qp_wr = 0;  // work requests per send or receive queue
    std::uint32_t max_sge = 0;    // scatter/gather elements per work request
    std::uint32_t max_inline = 0; // bytes of inline data per send
    std::uint32_t max_ord = 0;    // outstanding RDMA reads as initiator
    std::uint32_t max_ird = 0;    // outstanding RDMA reads as responder
    std::uint64_t max_msg_size = 0;
    std::uint64_t max_mr_size = 0;
    std::uint32_t page_size = 0; // registration granule
    std::uint32_t max_mw = 0;    // memory windows; 0 from a module without them
};

struct VIADUCT_API DeviceAttributes {
    std::uint32_t index = 0;
    std::uint32_t abi_version = 0;
    std::string name;
    std::string ifname;
    std::uint32_t ifindex = 0;
    std::uint32_t mtu = 0;
    std::uint32_t flags = 0; // VIADUCT_DEV_F_*
    std::array<std::uint8_t, 6> hw_addr{};
    std::vector<Address> addresses;
    DeviceLimits limits;
    std::uint32_t caps = 0; // VIADUCT_DEV_CAP_*: what the module does

    bool up() const noexcept { return (flags & VIADUCT_DEV_F_UP) != 0; }
    bool running() const noexcept { return (flags & VIADUCT_DEV_F_RUNNING) != 0; }
    std::string hw_address() const; // "02:00:00:00:00:01"
};

// Convert the kernel's replies. Names are read up to their NUL or the end of
// their buffer, whichever comes first; addresses of an unknown family are
// skipped and num_addrs is clamped to the array.
VIADUCT_API DeviceAttributes to_attributes(const viaduct_device_attr &attr);
VIADUCT_API DeviceEntry to_entry(const viaduct_device_entry &entry);

// The character device: $VIADUCT_DEVICE if set and not empty, else /dev/viaduct.
VIADUCT_API std::string device_path();

enum class AsyncEventType : std::uint32_t {
    CqError = VIADUCT_EVENT_CQ_ERROR, // CQ overflow: the CQ is in error
    QpFatal = VIADUCT_EVENT_QP_FATAL,
    QpRequestError = VIADUCT_EVENT_QP_REQ_ERR,
    QpAccessError = VIADUCT_EVENT_QP_ACCESS_ERR,
    CommunicationEstablished = VIADUCT_EVENT_COMM_EST,
    SqDrained = VIADUCT_EVENT_SQ_DRAINED,
    QpLastWqe = VIADUCT_EVENT_QP_LAST_WQE,
    DeviceFatal = VIADUCT_EVENT_DEVICE_FATAL,
    SrqLimit = VIADUCT_EVENT_SRQ_LIMIT, // an armed SRQ limit was crossed
    SrqError = VIADUCT_EVENT_SRQ_ERR,   // the SRQ's ring was corrupted
};

struct AsyncEvent {
    AsyncEventType type{};
    std::uint32_t handle = 0;    // of the CQ, QP or SRQ; 0 for device events
    std::uint64_t user_data = 0; // the object's, as given at creation
    std::uint32_t detail = 0;    // e.g. the Terminate code
};

// An event record from the kernel.
VIADUCT_API AsyncEvent to_event(const viaduct_async_event &ev);

class VIADUCT_API Device {
public:
    // The devices visible in the caller's network namespace.
    static std::vector<DeviceEntry> list(const std::string &path = device_path());

    // Open a context, check the ABI version, select the device by name or
    // index and read its attributes.
    static Device open(std::string_view name, const std::string &path = device_path());
    static Device open(std::uint32_t index, const std::string &path = device_path());

    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    Device(Device &&) noexcept = default;
    Device &operator=(Device &&) noexcept = default;
    ~Device() = default;

    // False only for a moved-from Device; every other member then throws
    // Error(EBADF).
    explicit operator bool() const noexcept { return state_ != nullptr; }

    // The attributes read at open time; query() asks the kernel again and
    // throws Error(ENODEV, "device NAME was removed") once it is gone.
    const DeviceAttributes &attributes() const;
    DeviceAttributes query() const;

    std::uint32_t abi_version() const; // from VIADUCT_IOCTL_GET_ABI_VERSION
    const std::string &name() const;
    std::uint32_t index() const;
    const std::string &path() const;
    int fd() const; // owned by the Device: do not close

    // The next asynchronous event (CQ overflow, QP error, device removal)
    // of this context, or nothing if none came within @timeout (negative:
    // wait for ever). Interrupted waits are resumed with the time left.
    std::optional<AsyncEvent> read_event(std::chrono::milliseconds timeout) const;

    // The context itself. Child objects hold a reference so that the file
    // descriptor outlives them, whatever order they are destroyed in.
    struct State;
    std::shared_ptr<State> state() const;

private:
    explicit Device(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
    static Device select(const viaduct_select_device &sel, const std::string &what,
                         const std::string &path);
    const State &checked() const;

    std::shared_ptr<State> state_;
};

// A protection domain (VIPL protection tag): memory regions and queue pairs
// made in one may be used together.
class VIADUCT_API ProtectionDomain {
public:
    explicit ProtectionDomain(const Device &dev);

    ProtectionDomain(const ProtectionDomain &) = delete;
    ProtectionDomain &operator=(const ProtectionDomain &) = delete;
    ProtectionDomain(ProtectionDomain &&) noexcept = default;
    ProtectionDomain &operator=(ProtectionDomain &&) noexcept = default;
    ~ProtectionDomain() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;

    struct State;
    std::shared_ptr<State> state() const;

private:
    std::shared_ptr<State> state_;
};

// One scatter/gather element: @length bytes at @addr of a region whose
// STag (lkey) is @stag. Same layout as struct viaduct_sge.
struct Sge {
    std::uint64_t addr = 0;
    std::uint32_t length = 0;
    std::uint32_t stag = 0;
};

// Access rights of a memory region (local read is always granted).
namespace access {
inline constexpr std::uint32_t local_write = VIADUCT_ACCESS_LOCAL_WRITE;
inline constexpr std::uint32_t remote_write = VIADUCT_ACCESS_REMOTE_WRITE;
inline constexpr std::uint32_t remote_read = VIADUCT_ACCESS_REMOTE_READ;
inline constexpr std::uint32_t mw_bind = VIADUCT_ACCESS_MW_BIND;
// Binding a window only: address 0 is the window's first byte.
inline constexpr std::uint32_t zero_based = VIADUCT_ACCESS_ZERO_BASED;
} // namespace access

// [addr, addr + length) of this process, pinned and registered in a PD.
class VIADUCT_API MemoryRegion {
public:
    MemoryRegion(const ProtectionDomain &pd, void *addr, std::size_t length,
                 std::uint32_t access = access::local_write, std::uint8_t key = 0);
    MemoryRegion(const ProtectionDomain &pd, std::span<std::byte> memory,
                 std::uint32_t access = access::local_write, std::uint8_t key = 0)
        : MemoryRegion(pd, memory.data(), memory.size(), access, key) {}

    MemoryRegion(const MemoryRegion &) = delete;
    MemoryRegion &operator=(const MemoryRegion &) = delete;
    MemoryRegion(MemoryRegion &&) noexcept = default;
    MemoryRegion &operator=(MemoryRegion &&) noexcept = default;
    ~MemoryRegion() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    std::uint32_t stag() const;
    std::uint32_t lkey() const { return stag(); } // iWARP: one STag for both
    std::uint32_t rkey() const { return stag(); }
    std::uint64_t addr() const;
    std::uint64_t length() const;
    std::uint32_t access() const;
    std::uint32_t pd_handle() const; // the handle of its protection domain

    // MODIFY_MR (the module's VIADUCT_DEV_CAP_MODIFY_MR): new
    // access rights, and with @pd a new protection domain, in place: the
    // handle, STag, address and pages stay, so a peer's copy of the STag
    // keeps naming this region. Rights and PD change together or not at
    // all; checks after the call see the new ones. Error(EACCES) for a
    // write right on a region registered without local_write, EINVAL for
    // bad rights (remote_write needs local_write), EOPNOTSUPP without the
    // capability.
    void modify(std::uint32_t access);
    void modify(const ProtectionDomain &pd, std::uint32_t access);

    // The whole region, or @length bytes at @offset into it, as an SGE;
    // Error(ERANGE) if that is not inside the region.
    Sge sge() const;
    Sge sge(std::uint64_t offset, std::uint32_t length) const;

    struct State;

private:
    friend class MemoryWindow;
    std::shared_ptr<State> state_;
};

// An STag for fast registration (ALLOC_MR, VIADUCT_DEV_CAP_FAST_REG): INVALID
// and empty until a SendOp::FastRegister WR registers up to @max_pages
// pages of the caller's own registered memory in it, under a new key
// (with_key()); a LocalInvalidate WR, a peer's SendWithInvalidate or a
// RdmaReadWithInvalidate make it INVALID again. Deregistered on destruction.
class VIADUCT_API FastRegRegion {
public:
    FastRegRegion(const ProtectionDomain &pd, std::uint32_t max_pages, std::uint8_t key = 0);

    FastRegRegion(const FastRegRegion &) = delete;
    FastRegRegion &operator=(const FastRegRegion &) = delete;
    FastRegRegion(FastRegRegion &&) noexcept = default;
    FastRegRegion &operator=(FastRegRegion &&) noexcept = default;
    ~FastRegRegion() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    std::uint32_t stag() const; // as allocated; each registration picks its key
    std::uint32_t max_pages() const;

private:
    std::shared_ptr<MemoryRegion::State> state_;
    std::uint32_t max_pages_ = 0;
};

// Memory windows (VIADUCT_DEV_CAP_MW, Documentation/memory.rst): a window
// is an STag of its own onto part of a MemoryRegion registered with
// access::mw_bind, granting the peer remote read and/or write of that part
// only. Type 1 is bound by a call (bind()) or by a SendOp::BindWindow WR
// and is usable through every QP of the PD; type 2 is bound by a
// BindWindow WR to the QP that executes it, usable only through that QP,
// and unbound by a LocalInvalidate on it or a peer's SendWithInvalidate
// arriving on it. The kernel refuses to deregister a region while windows
// are bound to it: a window bound by bind() keeps its MemoryRegion's
// registration until it is unbound or destroyed; for a window bound
// through the send queue, invalidate or destroy it before its region (a
// region destroyed first stays registered until the device is closed).
enum class MwType : std::uint32_t {
    Type1 = VIADUCT_MW_TYPE_1,
    Type2 = VIADUCT_MW_TYPE_2,
};

class VIADUCT_API MemoryWindow {
public:
    MemoryWindow(const ProtectionDomain &pd, MwType type, std::uint8_t key = 0);

    MemoryWindow(const MemoryWindow &) = delete;
    MemoryWindow &operator=(const MemoryWindow &) = delete;
    MemoryWindow(MemoryWindow &&) noexcept = default;
    MemoryWindow &operator=(MemoryWindow &&) noexcept = default;
    ~MemoryWindow() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    // As allocated, then as the last bind() or unbind() left it; a bind
    // through the send queue picks its own key (with_key()).
    std::uint32_t stag() const;
    MwType type() const;

    // Type 1 only: binds @length bytes at @addr (an address of @mr) with
    // @access (access::remote_read and/or remote_write, optionally
    // access::zero_based) under the STag with @key; returns that STag.
    // Error(EACCES) if @mr refuses (no mw_bind, the range, the rights),
    // Error(EINVAL) for a type-2 window or bad rights.
    std::uint32_t bind(const MemoryRegion &mr, std::uint64_t addr, std::uint64_t length,
                       std::uint32_t access, std::uint8_t key);
    // Type 1 only: ends the binding; the window reaches nothing.
    void unbind();

    struct State;

private:
    std::shared_ptr<State> state_;
};

// @stag's index with another 8-bit key: the STag a FastRegister names.
constexpr std::uint32_t with_key(std::uint32_t stag, std::uint8_t key) noexcept {
    return (stag & ~std::uint32_t{VIADUCT_STAG_KEY_MASK}) | key;
}

// A completion channel: a descriptor that turns readable when an armed CQ
// attached to it gets a completion.
struct CqEvent {
    std::uint32_t cq_handle = 0;
    std::uint64_t user_data = 0; // the CQ's
};

class VIADUCT_API CompletionChannel {
public:
    explicit CompletionChannel(const Device &dev);

    CompletionChannel(const CompletionChannel &) = delete;
    CompletionChannel &operator=(const CompletionChannel &) = delete;
    CompletionChannel(CompletionChannel &&) noexcept = default;
    CompletionChannel &operator=(CompletionChannel &&) noexcept = default;
    ~CompletionChannel() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }

    // The next event, or nothing after @timeout (negative: wait for ever).
    // Events that CompletionQueue::wait() read for other CQs come first.
    std::optional<CqEvent> wait(std::chrono::milliseconds timeout) const;

    int fd() const; // non-blocking, owned by the channel: for poll()/epoll

    struct State;
    std::shared_ptr<State> state() const;

private:
    std::shared_ptr<State> state_;
};

enum class WcOpcode : std::uint8_t {
    Send = VIADUCT_WC_SEND,
    RdmaWrite = VIADUCT_WC_RDMA_WRITE,
    RdmaRead = VIADUCT_WC_RDMA_READ,
    Recv = VIADUCT_WC_RECV,
    RecvRdmaWithImm = VIADUCT_WC_RECV_RDMA_WITH_IMM, // consumed by the peer's Write with imm
    LocalInvalidate = VIADUCT_WC_LOCAL_INV,
    FastRegister = VIADUCT_WC_FAST_REG,
    BindWindow = VIADUCT_WC_BIND_MW,
};

enum class WcStatus : std::uint8_t {
    Success = VIADUCT_WC_SUCCESS,
    Flushed = VIADUCT_WC_FLUSHED,
    LocalLengthError = VIADUCT_WC_LOC_LEN_ERR,
    LocalQpOperationError = VIADUCT_WC_LOC_QP_OP_ERR,
    LocalProtectionError = VIADUCT_WC_LOC_PROT_ERR,
    RemoteAccessError = VIADUCT_WC_REM_ACCESS_ERR,
    RemoteOperationError = VIADUCT_WC_REM_OP_ERR,
    RemoteInvalidRequest = VIADUCT_WC_REM_INV_REQ_ERR,
    TransportError = VIADUCT_WC_TRANSPORT_ERR,
    RemoteTerminated = VIADUCT_WC_REM_TERMINATED,
    GeneralError = VIADUCT_WC_GENERAL_ERR,
};

VIADUCT_API const char *to_string(WcStatus status) noexcept;

// One completion, as polled from a CQ or a private completion ring.
struct Completion {
    std::uint64_t wr_id = 0;
    std::uint32_t qp_handle = 0;
    std::uint32_t byte_len = 0;
    WcOpcode opcode{};
    WcStatus status{};
    std::uint8_t flags = 0; // VIADUCT_WC_F_*
    std::uint32_t imm_data = 0;
    std::uint32_t vendor_err = 0;
    std::uint32_t invalidated_stag = 0; // with has_invalidated()

    bool ok() const noexcept { return status == WcStatus::Success; }
    bool is_recv() const noexcept { return (flags & VIADUCT_WC_F_RECV) != 0; }
    bool has_imm() const noexcept { return (flags & VIADUCT_WC_F_IMMEDIATE) != 0; }
    // A receive of the peer's Send with Invalidate: @invalidated_stag is
    // INVALID now.
    bool has_invalidated() const noexcept { return (flags & VIADUCT_WC_F_INVALIDATED) != 0; }
};

VIADUCT_API Completion to_completion(const viaduct_cqe &cqe) noexcept;

// What to create a completion queue with.
struct CqConfig {
    std::uint32_t entries = 0; // at least; rounded up to a power of two
    const CompletionChannel *channel = nullptr;
    std::uint64_t user_data = 0; // returned in channel and asynchronous events
    // The caller serialises every call on the CQ, so it takes no lock of
    // its own (as verbs' IBV_CREATE_CQ_ATTR_SINGLE_THREADED).
    bool single_threaded = false;
};

// A completion queue: a ring the kernel writes CQEs into and poll() reads
// without a system call. poll(), wait() and resize() are serialised by a
// lock of the CQ's own, so any thread may call them (unless it was created
// single-threaded).
class VIADUCT_API CompletionQueue {
public:
    // At least @entries CQEs (rounded up to a power of two by the kernel).
    CompletionQueue(const Device &dev, std::uint32_t entries,
                    const CompletionChannel *channel = nullptr, std::uint64_t user_data = 0);
    CompletionQueue(const Device &dev, const CqConfig &config);

    CompletionQueue(const CompletionQueue &) = delete;
    CompletionQueue &operator=(const CompletionQueue &) = delete;
    CompletionQueue(CompletionQueue &&) noexcept = default;
    CompletionQueue &operator=(CompletionQueue &&) noexcept = default;
    ~CompletionQueue() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    std::uint32_t entries() const;

    // Copies up to out.size() completions, oldest first, and returns how
    // many. No system call. Once the CQ has overflowed and every CQE before
    // the overflow has been read, throws Error(EIO): the CQ is in error.
    std::size_t poll(std::span<Completion> out);
    std::size_t poll(std::span<viaduct_cqe> out);
    bool overflowed() const;

    // One event on the channel at the next completion (or the next
    // solicited or error completion). Error(EINVAL) without a channel.
    void arm(bool solicited_only = false);

    // Moderated arming (VIADUCT_DEV_CAP_CQ_THRESHOLD): one event on the
    // channel once at least @count completions are unread, counting those
    // already in the ring (an arm that finds @count fires at once, so no
    // completion racing it is lost), or at an error completion, or with
    // @solicited at a solicited one. Error(EINVAL) without a channel or for
    // a @count of 0 or above entries(); Error(EOPNOTSUPP) if the module
    // cannot.
    void arm_threshold(std::uint32_t count, bool solicited = false);

    // Completions in the ring not yet taken by poll(). No system call.
    std::uint32_t unread() const;

    // Sleeps on the channel until at least @count completions are unread,
    // or an unread one is an error, or the CQ overflowed, with one wakeup
    // however many completions that takes, then returns true without
    // taking any (poll() them). false on timeout (negative: for ever).
    // Needs a channel; one waiter per channel at a time, as wait().
    bool wait_unread(std::uint32_t count, std::chrono::milliseconds timeout);

    // poll(); if empty, arm, poll again (a completion that raced with the
    // arm is found here, not lost), then sleep on the channel until an
    // event for this CQ or @timeout (negative: for ever), and poll. Returns
    // 0 on timeout. Signals do not cut the wait short: an interrupted
    // poll() is resumed with the time left. Needs a channel and a non-empty
    // @out; one waiter per channel at a time.
    std::size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout);

    // A new ring of at least @entries; unread completions move over in
    // order. Returns the actual size.
    std::uint32_t resize(std::uint32_t entries);

    struct State;
    std::shared_ptr<State> state() const;

private:
    std::shared_ptr<State> state_;
};

enum class QpState : std::uint32_t {
    Idle = VIADUCT_QPS_IDLE,
    Rts = VIADUCT_QPS_RTS,
    Closing = VIADUCT_QPS_CLOSING,
    Terminate = VIADUCT_QPS_TERMINATE,
    Error = VIADUCT_QPS_ERROR,
};

enum class Reliability : std::uint32_t {
    Unreliable = VIADUCT_RELIABILITY_UNRELIABLE,
    ReliableDelivery = VIADUCT_RELIABILITY_RELIABLE_DELIVERY,
    ReliableReception = VIADUCT_RELIABILITY_RELIABLE_RECEPTION,
};

class SharedReceiveQueue;

// What to create a queue pair with. A null CQ gives that queue a private
// completion ring, read with QueuePair::poll_send() / poll_recv(). With
// @srq the QP receives from that SRQ and has no receive queue of its own
// (rq_depth and max_recv_sge are ignored; @recv_cq is required).
struct QpConfig {
    const CompletionQueue *send_cq = nullptr;
    const CompletionQueue *recv_cq = nullptr;
    const SharedReceiveQueue *srq = nullptr;
    std::uint32_t sq_depth = 64; // minimum; rounded up to a power of two
    std::uint32_t rq_depth = 64;
    // Slots of the mapped rings, which hold the WRs posted and not yet
    // taken by the kernel (each doorbell takes them while fewer than the
    // depth are in flight): 0 for as many as the depth, else 1 to the
    // depth (rounded up to a power of two; VIADUCT_DEV_CAP_RING_DEPTH). A
    // queue of large slots (many SGEs) keeps its depth in flight in a
    // ring of few pages; a post finds the ring full only while the kernel
    // does not take (a full FIFO, or a QP that does not take on its SQ:
    // Closing, Terminate).
    std::uint32_t sq_ring_depth = 0;
    std::uint32_t rq_ring_depth = 0;
    std::uint32_t max_send_sge = 1;
    std::uint32_t max_recv_sge = 1;
    std::uint32_t max_inline = 0;
    Reliability reliability = Reliability::ReliableDelivery;
    std::uint32_t access = 0; // VIADUCT_QP_ACCESS_*
    std::uint32_t ord = 0;
    std::uint32_t ird = 0;
    std::uint32_t max_msg_size = 0; // 0: the device's limit
    bool polled_doorbell = false;   // the kernel polls the doorbell page
    std::uint64_t user_data = 0;    // returned in asynchronous events
    // The caller serialises all posting and polling on the QP, so it takes
    // no lock of its own.
    bool single_threaded = false;
};

// What the kernel made of a QpConfig.
struct QpCaps {
    std::uint32_t qpn = 0;
    std::uint32_t sq_depth = 0;
    std::uint32_t rq_depth = 0;
    std::uint32_t sq_ring_depth = 0; // slots of the mapped rings
    std::uint32_t rq_ring_depth = 0;
    std::uint32_t max_send_sge = 0;
    std::uint32_t max_recv_sge = 0;
    std::uint32_t max_inline = 0;
    std::uint32_t sq_wqe_size = 0;
    std::uint32_t rq_wqe_size = 0;
    std::uint32_t srq_handle = 0; // receives from this SRQ (no RQ), or 0
    bool polled_doorbell = false;
    bool private_send_ring = false;
    bool private_recv_ring = false;
    bool single_threaded = false;
};

struct QpAttributes {
    QpState state{};
    std::uint32_t access = 0;
    std::uint32_t ord = 0;
    std::uint32_t ird = 0;
    std::uint32_t qpn = 0;
    std::uint32_t sq_depth = 0;
    std::uint32_t rq_depth = 0;
    std::uint32_t sq_outstanding = 0; // WRs the kernel holds
    std::uint32_t rq_outstanding = 0;
    std::uint32_t terminate = 0; // last Terminate: layer << 12 | etype << 8 | code
};

// The fields of a MODIFY_QP; those left empty are not changed.
struct QpModify {
    std::optional<QpState> state{};
    std::optional<std::uint32_t> access{};
    std::optional<std::uint32_t> ord{};
    std::optional<std::uint32_t> ird{};
};

enum class SendOp : std::uint8_t {
    Send = VIADUCT_OP_SEND,
    RdmaWrite = VIADUCT_OP_RDMA_WRITE,
    RdmaRead = VIADUCT_OP_RDMA_READ,
    // A Send with Invalidate (with SE if solicited): the peer invalidates
    // SendWr::remote_stag, one of its fast-register MRs or windows
    // (VIADUCT_DEV_CAP_SEND_INV). No immediate data, no remote address.
    SendWithInvalidate = VIADUCT_OP_SEND_INV,
    // Invalidates remote_stag, a FastRegRegion's current STag, in SQ order.
    LocalInvalidate = VIADUCT_OP_LOCAL_INV,
    // Registers in the FastRegRegion of remote_stag's index, under the
    // STag remote_stag, at the address remote_addr, with fast_reg_access,
    // the pages the SGEs cover (memory of the caller's own MRs; every SGE
    // but the first starts a page, every one but the last ends one).
    FastRegister = VIADUCT_OP_FAST_REG,
    // An RDMA Read whose sink STag (a FastRegRegion's) is invalidated once
    // the data is placed.
    RdmaReadWithInvalidate = VIADUCT_OP_RDMA_READ_INV,
    // Binds the MemoryWindow of remote_stag's index under the STag
    // remote_stag to the one SGE's range of a MemoryRegion (its lkey),
    // with fast_reg_access (access::remote_read/remote_write, optionally
    // access::zero_based). A type-2 window is bound to this QP; a type-1
    // one is unbound by an SGE of length 0. Later WRs start after it.
    BindWindow = VIADUCT_OP_BIND_MW,
};

// A send-queue work request. Non-empty @inline_data is copied into the
// slot (no SGEs then, and the buffer may be reused at once).
struct SendWr {
    std::uint64_t wr_id = 0;
    SendOp opcode = SendOp::Send;
    bool signaled = true; // a CQE on success too, not only on error
    bool solicited = false;
    bool read_fence = false;
    bool local_fence = false; // wait for every earlier WR to complete
    std::span<const Sge> sge{};
    std::span<const std::byte> inline_data{};
    std::optional<std::uint32_t> imm_data{};
    std::uint64_t remote_addr = 0;     // RDMA Write and Read
    std::uint32_t remote_stag = 0;     // and the STag a SendWithInvalidate ends
    std::uint32_t fast_reg_access = 0; // FastRegister, BindWindow: access::* it grants
};

struct RecvWr {
    std::uint64_t wr_id = 0;
    std::span<const Sge> sge{};
};

// What to create a shared receive queue with.
struct SrqConfig {
    std::uint32_t depth = 64; // minimum; rounded up to a power of two
    std::uint32_t max_sge = 1;
    std::uint32_t max_msg_size = 0; // 0: the device's limit
    std::uint64_t user_data = 0;    // returned in asynchronous events
    bool single_threaded = false;   // the caller serialises posting
};

struct SrqAttributes {
    std::uint32_t depth = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t limit = 0;       // armed limit, 0 if none
    std::uint32_t outstanding = 0; // posted and not taken by a QP yet
    std::uint32_t num_qps = 0;     // QPs receiving from it
    bool broken = false;           // its ring was corrupted (SrqError)
};

// A shared receive queue (Documentation/qp.rst, "Shared receive queues"):
// receive WRs that the QPs made on it (QpConfig::srq) take as messages
// arrive, the oldest WR for whichever QP needs one first. Posting writes
// the ring and makes no system call. A WR a QP took completes on that
// QP's receive CQ, with its qp_handle; WRs not taken yet stay on the SRQ
// when a QP enters Error (which raises QpLastWqe for that QP). The SRQ
// lives as long as the QPs made on it; the kernel refuses to destroy one
// that QPs still use, so this object's state is kept by them.
class VIADUCT_API SharedReceiveQueue {
public:
    SharedReceiveQueue(const ProtectionDomain &pd, const SrqConfig &config);

    SharedReceiveQueue(const SharedReceiveQueue &) = delete;
    SharedReceiveQueue &operator=(const SharedReceiveQueue &) = delete;
    SharedReceiveQueue(SharedReceiveQueue &&) noexcept = default;
    SharedReceiveQueue &operator=(SharedReceiveQueue &&) noexcept = default;
    ~SharedReceiveQueue() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    std::uint32_t depth() const;
    std::uint32_t max_sge() const;

    // As QueuePair::post_recv() and try_post_recv(): a full SRQ is
    // Error(ENOMEM) (or false), a WR with too many SGEs Error(EINVAL), a
    // batch all or nothing.
    void post_recv(const RecvWr &wr);
    void post_recv(std::span<const RecvWr> wrs);
    bool try_post_recv(const RecvWr &wr);
    bool try_post_recv(std::span<const RecvWr> wrs);
    std::uint32_t room() const;

    // Arms the limit: the first time a QP's take leaves fewer than @limit
    // WRs, an SrqLimit event is raised once and the limit disarmed. 0
    // disarms; more than the depth is Error(EINVAL).
    void arm_limit(std::uint32_t limit);
    SrqAttributes query() const;

    struct State;
    std::shared_ptr<State> state() const;

private:
    std::shared_ptr<State> state_;
};

// A queue pair (a VIPL VI). Posting writes the shared ring and rings the
// doorbell, which costs one DOORBELL system call per post_send() or
// post_recv() call (a batch is one call): the kernel learns of new work
// only that way. With QpConfig::polled_doorbell a kernel thread polls the
// doorbell page instead and posting makes no system call, unless that
// poller has gone to sleep and flagged NEED_WAKEUP, when one call wakes
// it. Polling completions never makes one. The send and receive sides
// have locks of their own and share nothing writable, so one thread may
// post sends while another posts receives; so may several threads on one
// side (unless the QP was created single-threaded).
class VIADUCT_API QueuePair {
public:
    QueuePair(const ProtectionDomain &pd, const QpConfig &config);

    QueuePair(const QueuePair &) = delete;
    QueuePair &operator=(const QueuePair &) = delete;
    QueuePair(QueuePair &&) noexcept = default;
    QueuePair &operator=(QueuePair &&) noexcept = default;
    ~QueuePair() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;
    std::uint32_t qpn() const;
    const QpCaps &caps() const;

    void modify(QpState state);
    void modify(const QpModify &m);
    QpAttributes query() const;

    // Queue full: Error(ENOMEM), nothing posted. A WR the QP cannot hold
    // (more SGEs or inline bytes than its caps, a malformed RDMA Read):
    // Error(EINVAL), nothing posted. A batch is all or nothing: it is
    // checked and written whole before it is published. If the DOORBELL
    // call itself fails (ENODEV: the device was removed), the WRs are in
    // the ring and the error is thrown.
    void post_send(const SendWr &wr);
    void post_send(std::span<const SendWr> wrs);
    void post_recv(const RecvWr &wr);
    void post_recv(std::span<const RecvWr> wrs);

    // As post_send()/post_recv(), but a queue without room for the whole
    // batch, which is routine, is no exception: false, and nothing posted.
    // A WR the QP cannot hold and a failed doorbell still throw, as there.
    bool try_post_send(const SendWr &wr);
    bool try_post_send(std::span<const SendWr> wrs);
    bool try_post_recv(const RecvWr &wr);
    bool try_post_recv(std::span<const RecvWr> wrs);

    // Free slots now; the kernel frees slots as it takes WRs, long before
    // they complete.
    std::uint32_t send_queue_room() const;
    std::uint32_t recv_queue_room() const;

    // The private completion rings (QpConfig without a CQ), polled like
    // CompletionQueue::poll(); Error(EINVAL) for a queue with a CQ.
    std::size_t poll_send(std::span<Completion> out);
    std::size_t poll_recv(std::span<Completion> out);

    // DOORBELL system calls made so far (a debugging counter).
    std::uint64_t doorbell_calls() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

// The connection manager: connections of queue pairs over TCP and MPA
// (Documentation/cm.rst). A CmChannel is a descriptor that reports the
// events of the ConnectionIds made on it; each event read is a CmEvent,
// acknowledged to the kernel exactly once when it is destroyed (or by
// ack()). An id is used for one thing in its life: a listener, an outgoing
// connection, a converted socket, or one incoming connection, which arrives
// as a CONNECT_REQUEST event on the listener's channel and is answered with
// accept() or reject() on CmEvent::connection().
//
// An event holds its id's state: the kernel id is destroyed only once the
// ConnectionId and every event of it are gone, so destroying a ConnectionId
// while an event of it is held is safe and waits for the event's ack. The
// kernel refuses to destroy an id with events queued on the channel but not
// read yet; such an id is destroyed by the channel once it reads (and acks)
// them, by a later read() or when the channel goes, and with the context
// at the latest.
//
// Threads: a CmChannel may be read from one thread while ids are used from
// others; one ConnectionId is used by one thread at a time.

enum class CmEventType : std::uint32_t {
    ConnectRequest = VIADUCT_CM_EVENT_CONNECT_REQUEST,
    Established = VIADUCT_CM_EVENT_ESTABLISHED,
    Rejected = VIADUCT_CM_EVENT_REJECTED,
    Unreachable = VIADUCT_CM_EVENT_UNREACHABLE,
    Disconnected = VIADUCT_CM_EVENT_DISCONNECTED,
    Timeout = VIADUCT_CM_EVENT_TIMEOUT,
    ConnectError = VIADUCT_CM_EVENT_CONNECT_ERROR,
    DeviceRemoved = VIADUCT_CM_EVENT_DEVICE_REMOVED,
};

VIADUCT_API const char *to_string(CmEventType type) noexcept;

// An IPv4 or IPv6 address and a TCP port.
struct VIADUCT_API SocketAddress {
    int family = 0;      // AF_INET or AF_INET6
    std::string address; // inet_ntop() form
    std::uint16_t port = 0;
    std::uint32_t scope_id = 0; // IPv6 link-local scope

    std::string to_string() const; // "192.0.2.1:4791", "[2001:db8::1]:4791"
};

// Bytes of private data an MPA frame carries: 512 in revision 1, 508 in
// the enhanced form (the IRD/ORD words take 4).
inline constexpr std::size_t cm_private_data_max = VIADUCT_CM_PRIVATE_DATA_MAX;
inline constexpr std::size_t cm_private_data_max_enhanced = VIADUCT_CM_PRIVATE_DATA_MAX - 4;

// What connect(), accept() and convert_socket() negotiate.
struct ConnectionOptions {
    std::span<const std::byte> private_data{};
    bool mpa_v1 = false;   // plain RFC 5044: no IRD/ORD exchange, no P2P
    bool crc = false;      // ask for the MPA CRC (used if either side asks)
    bool p2p = false;      // RFC 6581 peer-to-peer ready-to-receive message
    std::uint32_t ird = 0; // 0: the QP's
    std::uint32_t ord = 0;
    std::chrono::milliseconds timeout{0}; // connect(), convert_socket(): 0 for 30 s
};

// What convert_socket() carries besides the socket (both may be empty).
struct SocketConversion {
    // IT-API's Last ULP Streaming-Mode Message of the conversion initiator:
    // sent on the socket before the MPA exchange, at most
    // socket_conversion_send_max bytes. Error(EAGAIN), nothing done, if the
    // socket's send buffer has no room for it now.
    std::span<const std::byte> last_message{};
    // Bytes the caller read from the socket past its own protocol that
    // belong to the MPA exchange (the peer's MPA request, or its start;
    // so the responder only): consumed as if read from the socket, at
    // most socket_conversion_recv_max bytes.
    std::span<const std::byte> already_read{};
};

inline constexpr std::size_t socket_conversion_send_max = VIADUCT_CM_CONVERT_SEND_MAX;
inline constexpr std::size_t socket_conversion_recv_max = VIADUCT_CM_CONVERT_RECV_MAX;

class CmEvent;
class ConnectionId;

class VIADUCT_API CmChannel {
public:
    explicit CmChannel(const Device &dev);

    CmChannel(const CmChannel &) = delete;
    CmChannel &operator=(const CmChannel &) = delete;
    CmChannel(CmChannel &&) noexcept = default;
    CmChannel &operator=(CmChannel &&) noexcept = default;
    ~CmChannel() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }

    // The next event, or nothing after @timeout (negative: wait for ever).
    // Interrupted waits are resumed with the time left.
    std::optional<CmEvent> read(std::chrono::milliseconds timeout) const;

    int fd() const; // non-blocking, owned by the channel: for poll()/epoll

    struct State;
    std::shared_ptr<State> state() const;

private:
    std::shared_ptr<State> state_;
};

class VIADUCT_API ConnectionId {
public:
    // A new id reporting to @channel; @user_data comes back in its events
    // (a listener's in its CONNECT_REQUESTs).
    explicit ConnectionId(const CmChannel &channel, std::uint64_t user_data = 0);

    ConnectionId(const ConnectionId &) = delete;
    ConnectionId &operator=(const ConnectionId &) = delete;
    ConnectionId(ConnectionId &&) noexcept = default;
    ConnectionId &operator=(ConnectionId &&) noexcept = default;
    ~ConnectionId() = default;

    explicit operator bool() const noexcept { return state_ != nullptr; }
    std::uint32_t handle() const;

    // Listens on @address and @port (0: the kernel picks one); returns the
    // port. "" is every address of the device, IPv4 and IPv6 (one IPv6
    // socket that takes IPv4 connections too, unless the system's
    // net.ipv6.bindv6only says otherwise; IPv4 only on a kernel without
    // IPv6); "0.0.0.0" every IPv4 address, "::" every IPv6 one (and IPv4
    // as for "").
    std::uint16_t listen(std::string_view address, std::uint16_t port, std::uint32_t backlog = 0);

    // Connects @qp (Idle) to @address:@port. The outcome is an event:
    // Established (the QP is in RTS), Rejected, Unreachable, Timeout or
    // ConnectError.
    void connect(QueuePair &qp, std::string_view address, std::uint16_t port,
                 const ConnectionOptions &options = {});

    // Answers the CONNECT_REQUEST this id came with; Established follows.
    // ConnectionOptions::timeout is not used here.
    void accept(QueuePair &qp, std::span<const std::byte> private_data = {});
    void accept(QueuePair &qp, const ConnectionOptions &options);
    void reject(std::span<const std::byte> private_data = {});

    // Graceful (FIN; the QP goes Closing, then Idle) or abortive (RST; the
    // QP goes to Error). Both sides get Disconnected.
    void disconnect(bool abort = false);

    // Makes an RDMA connection of @qp out of @sockfd, a connected TCP socket
    // of the caller's: @active sends the MPA request, the other side
    // answers it. Established follows. The socket is taken away: on
    // success @sockfd is closed (the number may be reused at once); a
    // socket whose file is shared (dup(), fork(), another thread using it)
    // or that has an upper layer protocol such as kTLS is refused with
    // Error(EBUSY) and left as it was. @carry: the last streaming-mode
    // message to send first, bytes already read (SocketConversion); needs
    // VIADUCT_DEV_CAP_CONVERT_DATA (Error(EOPNOTSUPP) otherwise).
    void convert_socket(int sockfd, QueuePair &qp, bool active,
                        const ConnectionOptions &options = {});
    void convert_socket(int sockfd, QueuePair &qp, bool active, const ConnectionOptions &options,
                        const SocketConversion &carry);

    // Hands the CONNECT_REQUEST this id came with, unanswered, to the
    // listener on @port (and @address; "" for any address) of the same
    // device, which may be another process's (of the same user, or the
    // caller needs CAP_NET_ADMIN): its channel gets a CONNECT_REQUEST with
    // the same private data, and this id is gone (it answers nothing any
    // more). Error(ENOENT) if no such listener, EBUSY if its backlog or
    // channel is full, EPERM if it is another user's: the request stays
    // here, to be answered or handed off again. Needs
    // VIADUCT_DEV_CAP_CM_HANDOFF.
    void handoff(std::string_view address, std::uint16_t port);

    struct State;
    std::shared_ptr<State> state() const;

private:
    friend class CmEvent;
    explicit ConnectionId(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}

    std::shared_ptr<State> state_;
};

// One event of a CM channel, acknowledged when it is destroyed. Move-only:
// a moved-from event acknowledges nothing, ack() on it does nothing, and
// every accessor throws Error(EBADF).
class VIADUCT_API CmEvent {
public:
    CmEvent(CmEvent &&other) noexcept;
    CmEvent &operator=(CmEvent &&other) noexcept;
    CmEvent(const CmEvent &) = delete;
    CmEvent &operator=(const CmEvent &) = delete;
    ~CmEvent(); // acks if not done yet; errors are ignored

    explicit operator bool() const noexcept { return ev_ != nullptr; }

    CmEventType type() const { return static_cast<CmEventType>(event().type); }
    int status() const { return event().status; } // 0 or a negative errno
    std::uint64_t user_data() const { return event().user_data; }
    std::uint32_t handle() const { return event().handle; }
    std::uint32_t listen_handle() const { return event().listen_handle; }
    std::uint32_t seq() const { return event().seq; }
    std::uint32_t ird() const { return event().ird; } // the peer's
    std::uint32_t ord() const { return event().ord; }
    std::uint32_t flags() const { return event().flags; } // VIADUCT_CM_F_*
    SocketAddress local() const;
    SocketAddress peer() const;
    std::span<const std::byte> private_data() const;
    const viaduct_cm_event &raw() const { return event(); }

    // The id the event is about: for a CONNECT_REQUEST the new one, to
    // accept or reject. Shares the state of the ConnectionId the event came
    // for; Error(ENOENT) for an id the library did not make.
    ConnectionId connection() const;

    // Acknowledges now; Error if the kernel refuses. Later calls, and the
    // destructor, do nothing.
    void ack();
    bool acked() const noexcept { return acked_; }

private:
    friend class CmChannel;
    const viaduct_cm_event &event() const; // Error(EBADF) if moved from
    CmEvent(std::unique_ptr<viaduct_cm_event> ev, std::shared_ptr<Device::State> dev,
            std::shared_ptr<ConnectionId::State> id) noexcept;

    std::unique_ptr<viaduct_cm_event> ev_;
    std::shared_ptr<Device::State> dev_;
    std::shared_ptr<ConnectionId::State> id_;
    bool acked_ = true;
};

} // namespace viaduct
