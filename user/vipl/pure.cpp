// SPDX-License-Identifier: GPL-2.0
//
// VIPL on viaduct: the parts without a device (internal.hpp).
#include "internal.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace vipl {

std::optional<NicSelector> parse_nic_name(const char *name) {
    if (!name || !*name)
        return std::nullopt;
    std::string s(name);
    const std::size_t base = std::strlen(VINICBASENAME);
    if (s.size() >= base && strncasecmp(s.c_str(), VINICBASENAME, base) == 0) {
        std::string digits = s.substr(base);
        NicSelector sel;
        if (digits.empty())
            return sel; // "VINIC" is VINIC0
        if (digits.size() > 4)
            return std::nullopt;
        for (char c : digits)
            if (!std::isdigit(static_cast<unsigned char>(c)))
                return std::nullopt;
        sel.index = static_cast<std::uint32_t>(std::stoul(digits));
        return sel;
    }
    for (const char *prefix : {"/dev/via_", "via_"}) {
        const std::size_t n = std::strlen(prefix);
        if (s.size() > n && s.compare(0, n, prefix) == 0)
            return NicSelector{NicSelector::Kind::Ifname, 0, s.substr(n)};
    }
    if (s.find('/') != std::string::npos)
        return std::nullopt;
    return NicSelector{NicSelector::Kind::Name, 0, s};
}

std::uint32_t discriminator_hash(std::span<const std::uint8_t> disc) noexcept {
    std::uint32_t h = 2166136261u; // FNV-1a
    for (std::uint8_t b : disc) {
        h ^= b;
        h *= 16777619u;
    }
    return h;
}

std::uint16_t rendezvous_port(std::span<const std::uint8_t> disc, unsigned probe,
                              std::uint16_t base) noexcept {
    const std::uint32_t slot = (discriminator_hash(disc) + probe) % port_range;
    return static_cast<std::uint16_t>(base + slot);
}

std::uint16_t port_base() {
    const char *env = std::getenv("VIADUCT_VIPL_PORT_BASE");
    if (env && *env) {
        char *end = nullptr;
        unsigned long v = std::strtoul(env, &end, 10);
        if (end && !*end && v >= 1024 && v + port_range <= 65536)
            return static_cast<std::uint16_t>(v);
    }
    return port_base_default;
}

namespace {

constexpr std::uint8_t magic[4] = {'V', 'I', 'P', 'L'};
constexpr std::uint8_t msg_version = 1;

void put16(std::vector<std::byte> &out, std::uint16_t v) {
    out.push_back(std::byte(v & 0xff));
    out.push_back(std::byte(v >> 8));
}

void put32(std::vector<std::byte> &out, std::uint32_t v) {
    for (int i = 0; i < 4; i++)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}

void put_bytes(std::vector<std::byte> &out, const std::vector<std::uint8_t> &b) {
    put16(out, static_cast<std::uint16_t>(b.size()));
    for (std::uint8_t c : b)
        out.push_back(std::byte(c));
}

struct Reader {
    std::span<const std::byte> d;
    std::size_t at = 0;
    bool ok = true;

    std::uint8_t u8() {
        if (at + 1 > d.size()) {
            ok = false;
            return 0;
        }
        return std::to_integer<std::uint8_t>(d[at++]);
    }
    std::uint16_t u16() {
        std::uint16_t lo = u8();
        return static_cast<std::uint16_t>(lo | (u8() << 8));
    }
    std::uint32_t u32() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; i++)
            v |= std::uint32_t{u8()} << (8 * i);
        return v;
    }
    std::vector<std::uint8_t> bytes(std::size_t max) {
        std::size_t n = u16();
        if (!ok || n > max || at + n > d.size()) {
            ok = false;
            return {};
        }
        std::vector<std::uint8_t> v(n);
        for (std::size_t i = 0; i < n; i++)
            v[i] = std::to_integer<std::uint8_t>(d[at + i]);
        at += n;
        return v;
    }
};

} // namespace

std::vector<std::byte> encode(const Msg &m) {
    std::vector<std::byte> out;
    for (std::uint8_t c : magic)
        out.push_back(std::byte(c));
    out.push_back(std::byte(msg_version));
    out.push_back(std::byte(m.kind));
    out.push_back(std::byte(m.reason));
    out.push_back(std::byte((m.rdma_write ? 1 : 0) | (m.rdma_read ? 2 : 0)));
    put16(out, m.reliability);
    put16(out, 0);
    put32(out, m.max_transfer);
    put_bytes(out, m.target);
    put_bytes(out, m.src_host);
    put_bytes(out, m.src_disc);
    return out;
}

std::optional<Msg> decode(std::span<const std::byte> data) {
    Reader r{data};
    for (std::uint8_t c : magic)
        if (r.u8() != c)
            return std::nullopt;
    if (r.u8() != msg_version)
        return std::nullopt;
    Msg m;
    std::uint8_t kind = r.u8();
    if (kind < 1 || kind > 6)
        return std::nullopt;
    m.kind = static_cast<MsgKind>(kind);
    m.reason = r.u8();
    std::uint8_t flags = r.u8();
    m.rdma_write = flags & 1;
    m.rdma_read = flags & 2;
    m.reliability = r.u16();
    r.u16();
    m.max_transfer = r.u32();
    m.target = r.bytes(max_discriminator);
    m.src_host = r.bytes(16);
    m.src_disc = r.bytes(max_discriminator);
    if (!r.ok)
        return std::nullopt;
    return m;
}

bool valid_reliability(unsigned level) noexcept {
    return level == VIP_SERVICE_UNRELIABLE || level == VIP_SERVICE_RELIABLE_DELIVERY ||
           level == VIP_SERVICE_RELIABLE_RECEPTION;
}

} // namespace vipl
