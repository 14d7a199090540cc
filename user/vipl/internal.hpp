// SPDX-License-Identifier: GPL-2.0
//
// The pure parts of VIPL on viaduct, shared by the library and its unit
// tests: NIC names, the rendezvous ports, the connection messages carried
// in MPA private data, descriptor checks and completion status. Nothing
// here touches the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <viaduct/viaduct.hpp>
#include <vipl.h>

namespace vipl {

// How VipOpenNic's name selects a viaduct device.
struct NicSelector {
    enum class Kind { Index, Name, Ifname } kind = Kind::Index;
    std::uint32_t index = 0; // Kind::Index: VINICn
    std::string name;        // Kind::Name: vd0; Kind::Ifname: eth0 of /dev/via_eth0
};

// "VINIC" and "VINIC0" (case-insensitive): index 0; "VINICn": n;
// "/dev/via_IF" or "via_IF": the device bound to interface IF; anything
// else: a viaduct device name. Nothing for NULL, "" or a malformed VINIC.
std::optional<NicSelector> parse_nic_name(const char *name);

// The rendezvous: discriminators hash into a fixed range of TCP ports.
inline constexpr std::uint16_t port_base_default = 20480;
inline constexpr unsigned port_range = 1024;
inline constexpr unsigned port_probes = 8;
inline constexpr std::size_t max_discriminator = 64;

std::uint32_t discriminator_hash(std::span<const std::uint8_t> disc) noexcept;
// The port of probe @probe (0 .. port_probes-1) of @disc.
std::uint16_t rendezvous_port(std::span<const std::uint8_t> disc, unsigned probe,
                              std::uint16_t base) noexcept;
// $VIADUCT_VIPL_PORT_BASE if valid, else port_base_default.
std::uint16_t port_base();

// The messages of the rendezvous, in the MPA private data (little-endian).
enum class MsgKind : std::uint8_t {
    Request = 1,     // client/server VipConnectRequest
    PeerRequest = 2, // VipConnectPeerRequest, active side
    Accept = 3,      // the reply of an accepted request
    Reject = 4,      // VipConnectReject: the client gets VIP_REJECT
    NoMatch = 5,     // nobody waits on that discriminator here: next port
    Conflict = 6,    // peer-to-peer attribute conflict (reason: a VIP_RETURN)
};

struct Msg {
    MsgKind kind = MsgKind::Request;
    std::uint8_t reason = 0; // Conflict: the VIP_RETURN both sides report
    std::uint16_t reliability = 0;
    std::uint32_t max_transfer = 0;
    bool rdma_write = false;
    bool rdma_read = false;
    std::vector<std::uint8_t> target;   // the discriminator asked for
    std::vector<std::uint8_t> src_host; // the sender's LocalAddr
    std::vector<std::uint8_t> src_disc;
};

std::vector<std::byte> encode(const Msg &m);
std::optional<Msg> decode(std::span<const std::byte> data);

// Descriptor checks, before anything is handed to the native queue.
struct DescCheck {
    std::uint32_t error = 0; // VIP_STATUS_* error bits; 0: postable
    std::uint32_t op = 0;    // VIP_STATUS_OP_* for the completed status
    unsigned nds = 0;        // data segments
    std::uint64_t total = 0; // sum of their lengths
};

// The reliability levels that are one of the three.
bool valid_reliability(unsigned level) noexcept;

// Data segment @k (0-based, counting the address segment) of a descriptor:
// the segments follow the control segment contiguously, however many.
inline const VIP_DATA_SEGMENT *segment(const VIP_DESCRIPTOR &d, unsigned k) noexcept {
    return reinterpret_cast<const VIP_DATA_SEGMENT *>(reinterpret_cast<const std::byte *>(&d) +
                                                      sizeof(VIP_CONTROL_SEGMENT) +
                                                      sizeof(VIP_DATA_SEGMENT) * k);
}

// The checks of a post and the status of a completion are on the data
// path: inline, so that each costs no call.

// @segs is the number of 16-byte segments readable after the control
// segment (the registered bytes there), so that a SegCount beyond the
// region is a format error and nothing past it is read.
[[gnu::always_inline]] inline DescCheck check_send(const VIP_DESCRIPTOR &d, unsigned segs,
                                                   unsigned max_sge, std::uint64_t max_transfer,
                                                   bool rdma_read_ok) noexcept {
    DescCheck c;
    const unsigned op = d.CS.Control & VIP_CONTROL_OP_MASK;
    const bool rdma = op == VIP_CONTROL_OP_RDMAWRITE || op == VIP_CONTROL_OP_RDMAREAD;
    c.op = op == VIP_CONTROL_OP_RDMAWRITE  ? VIP_STATUS_OP_RDMA_WRITE
           : op == VIP_CONTROL_OP_RDMAREAD ? VIP_STATUS_OP_RDMA_READ
                                           : VIP_STATUS_OP_SEND;
    if ((d.CS.Control & VIP_CONTROL_RESERVED) || op == VIP_CONTROL_OP_RESERVED ||
        d.CS.Reserved != 0 || (op == VIP_CONTROL_OP_RDMAREAD && !rdma_read_ok)) {
        c.error = VIP_STATUS_FORMAT_ERROR;
        return c;
    }
    if (d.CS.SegCount > segs || (rdma && d.CS.SegCount < 1)) {
        c.error = VIP_STATUS_FORMAT_ERROR;
        return c;
    }
    if (rdma && d.DS[0].Remote.Reserved != 0) {
        c.error = VIP_STATUS_FORMAT_ERROR;
        return c;
    }
    c.nds = d.CS.SegCount - (rdma ? 1u : 0u);
    if (c.nds > max_sge) {
        c.error = VIP_STATUS_LENGTH_ERROR;
        return c;
    }
    // an RDMA Read lands in one local segment on viaduct
    if (op == VIP_CONTROL_OP_RDMAREAD && c.nds != 1) {
        c.error = VIP_STATUS_FORMAT_ERROR;
        return c;
    }
    for (unsigned i = 0; i < c.nds; i++)
        c.total += segment(d, i + (rdma ? 1u : 0u))->Length;
    if (c.total != d.CS.Length || c.total > max_transfer)
        c.error = VIP_STATUS_LENGTH_ERROR;
    return c;
}

[[gnu::always_inline]] inline DescCheck check_recv(const VIP_DESCRIPTOR &d, unsigned segs,
                                                   unsigned max_sge) noexcept {
    DescCheck c;
    c.op = VIP_STATUS_OP_RECEIVE;
    if ((d.CS.Control & VIP_CONTROL_RESERVED) ||
        (d.CS.Control & VIP_CONTROL_OP_MASK) != VIP_CONTROL_OP_SENDRECV || d.CS.Reserved != 0 ||
        d.CS.SegCount > segs) {
        c.error = VIP_STATUS_FORMAT_ERROR;
        return c;
    }
    c.nds = d.CS.SegCount;
    if (c.nds > max_sge) {
        c.error = VIP_STATUS_LENGTH_ERROR;
        return c;
    }
    for (unsigned i = 0; i < c.nds; i++)
        c.total += segment(d, i)->Length;
    return c;
}

// The status error bits of a native completion status.
[[gnu::always_inline]] inline std::uint32_t status_bits(viaduct::WcStatus s) noexcept {
    using viaduct::WcStatus;
    switch (s) {
    case WcStatus::Success:
        return 0;
    case WcStatus::Flushed:
        return VIP_STATUS_DESC_FLUSHED_ERROR;
    case WcStatus::LocalLengthError:
        return VIP_STATUS_LENGTH_ERROR;
    case WcStatus::LocalQpOperationError:
        return VIP_STATUS_FORMAT_ERROR;
    case WcStatus::LocalProtectionError:
        return VIP_STATUS_PROTECTION_ERROR;
    case WcStatus::RemoteAccessError:
        return VIP_STATUS_RDMA_PROT_ERROR;
    case WcStatus::RemoteOperationError:
    case WcStatus::RemoteInvalidRequest:
        return VIP_STATUS_REMOTE_DESC_ERROR;
    case WcStatus::TransportError:
    case WcStatus::RemoteTerminated:
    case WcStatus::GeneralError:
        break;
    }
    return VIP_STATUS_TRANSPORT_ERROR;
}

} // namespace vipl
