// SPDX-License-Identifier: GPL-2.0
//
// viaduct-perf: bandwidth, message rate and latency between two viaduct
// devices, in the manner of perftest.
//
//   server: viaduct-perf -d vd0 [--addr A] [-p PORT]
//   client: viaduct-perf -d vd0 [-p PORT] --test TEST [-n ITERS]
//                        [-s SIZE | -a | --sizes A,B,C] [-q QPS] [--polled] SERVER
//
// The options are perftest's where it has them, with its meanings: -s size,
// -a all sizes, -n, -q, -t TX depth, -p, -d, --report_gbits, the server's
// address as the argument; a client is a run with one. The older spellings
// (-s without a size for the server, -S and --addr, -t TEST) still work.
//
// The client connects QPS + 1 queue pairs with the connection manager: one
// control QP (Send/Receive of small messages that pace the test and carry
// the results of the server's data checks) and QPS data QPs. The CM private
// data carries the test parameters to the server and, both ways, the
// address, STag and size of each side's buffer. Tests:
//
//   write, read, send  the client streams ITERS work requests of SIZE bytes
//                      on every data QP, up to the send queue depth in
//                      flight; bandwidth and message rate over all QPs.
//                      Send runs in bursts of the receive queue depth: the
//                      server posts the receives of a burst before the client
//                      sends it (iWARP has no receiver-not-ready retry).
//   lat-send           Send/Receive ping-pong on one QP.
//   lat-write          RDMA Write ping-pong on one QP, each side spinning on
//                      the last byte of its buffer.
//
// Latency is half the round trip. After each size the receiving side checks
// the first and last bytes of the data against the pattern sent, or with
// --check=all every byte. Bandwidth is reported as perftest does: the peak
// (the best rate over intervals of at least 10 ms) and the average.
// The connection manager is libviaduct's (CmChannel, ConnectionId).
// Exit status: 0 done, 1 failure (setup, transfer or data check), 2 usage.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <getopt.h>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <unordered_map>
#include <vector>

#include <viaduct/viaduct.hpp>

using namespace std::chrono;
using viaduct::Completion;
using viaduct::Error;

namespace {

constexpr std::uint32_t kMagic = 0x76647066; // "vdpf"
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kMaxSizes = 32;
constexpr std::uint32_t kMaxQps = 64;
constexpr std::uint32_t kSqDepth = 128;
constexpr std::uint32_t kRqDepthSend = 512;
constexpr std::uint32_t kSendBurst = kRqDepthSend / 2; // receives posted at a time
constexpr std::uint32_t kCtrlDepth = 16;
constexpr std::uint32_t kCtrlSlot = 64;
constexpr int kWaitMs = 30000;             // without progress, then the test fails
constexpr std::uint32_t kPostListMax = 32; // WRs per post call at most

enum class Test : std::uint32_t { Write = 1, Read, Send, LatSend, LatWrite };

const char *test_name(Test t) {
    switch (t) {
    case Test::Write:
        return "write";
    case Test::Read:
        return "read";
    case Test::Send:
        return "send";
    case Test::LatSend:
        return "lat-send";
    case Test::LatWrite:
        return "lat-write";
    }
    return "?";
}

const char *test_title(Test t) {
    switch (t) {
    case Test::Write:
        return "RDMA_Write BW Test";
    case Test::Read:
        return "RDMA_Read BW Test";
    case Test::Send:
        return "Send BW Test";
    case Test::LatSend:
        return "Send Latency Test";
    case Test::LatWrite:
        return "RDMA_Write Latency Test";
    }
    return "?";
}

bool is_latency(Test t) {
    return t == Test::LatSend || t == Test::LatWrite;
}

// CM private data of every connection, client to server.
struct Hello {
    std::uint32_t magic;
    std::uint32_t version;
    std::uint32_t index; // 0: the control QP, 1..nqps: data QPs
    std::uint32_t nqps;
    std::uint32_t test;
    std::uint32_t iters;
    std::uint32_t nsizes;
    std::uint32_t flags; // kCheckAll, kBidirectional
    std::uint64_t addr;  // the client's buffer: 2 * slot bytes per data QP
    std::uint64_t slot;
    std::uint32_t stag;
    std::uint32_t reserved2;
    std::uint32_t sizes[kMaxSizes];
    // How the client streams; with kBidirectional the server streams alike.
    std::uint32_t tx_depth;
    std::uint32_t cq_mod;
    std::uint32_t inline_size;
    std::uint32_t post_list;
};

// CM private data of the server's accept.
struct Welcome {
    std::uint32_t magic;
    std::uint32_t index;
    std::uint64_t addr;
    std::uint64_t slot;
    std::uint32_t stag;
    std::uint32_t reserved;
};

static_assert(sizeof(Hello) <= VIADUCT_CM_PRIVATE_DATA_MAX);

enum class Op : std::uint32_t { Start = 1, Ready, Post, Done, Verified, Bye };

constexpr std::uint32_t kCheckAll = 1;      // Hello::flags: check every byte
constexpr std::uint32_t kBidirectional = 2; // Hello::flags: -b, the server streams too

// A control message, Send/Receive on the control QP.
struct Ctrl {
    Op op;
    std::uint32_t size;
    std::uint32_t count;   // Post: receives per QP
    std::uint32_t bad;     // Verified: data checks that failed
    std::uint32_t checked; // Verified: data checks made
    std::uint32_t reserved = 0;
    // Verified after -b: what the server's own stream did.
    std::uint64_t msgs = 0;       // work requests completed over all QPs
    std::uint64_t ns = 0;         // from its first post to its last completion
    std::uint64_t peak_bytes = 0; // its peak, bytes per second
};

static_assert(sizeof(Ctrl) <= kCtrlSlot);

struct Options {
    std::string dev = "vd0";
    bool server = false;
    std::string addr;
    std::uint16_t port = 18515;
    std::optional<Test> test;
    std::uint32_t iters = 1000;
    std::vector<std::uint32_t> sizes;
    std::uint32_t qps = 1;
    std::uint32_t tx_depth = kSqDepth;
    std::uint32_t inline_size = 0;
    std::uint32_t cq_mod = 1;
    std::uint32_t post_list = kPostListMax; // WRs per post call
    std::uint32_t duration = 0;             // seconds per size; 0: -n work requests
    bool events = false;
    bool bidirectional = false; // -b: the server streams to the client too
    bool polled = false;
    bool crc = false; // ask for the MPA CRC
    bool check_all = false;
    bool gbits = false;
};

void print_usage(std::ostream &os) {
    os << "usage: viaduct-perf [-d DEV] [--server --addr A] [-p PORT]        (server)\n"
       << "       viaduct-perf [-d DEV] [-p PORT] --test TEST [-n ITERS] [-q QPS]\n"
       << "                    [-s SIZE | -a | --sizes A,B,C] [-t DEPTH] [--polled]\n"
       << "                    [--check=ends|all] [--report_gbits] [--crc] SERVER (client)\n"
       << "\n"
       << "TEST: write, read, send (bandwidth and message rate over QPS queue pairs),\n"
       << "      lat-send, lat-write (ping-pong latency on one queue pair).\n"
       << "Options as perftest's (ib_write_bw and friends) where it has them:\n"
       << "  -d, --ib-dev=DEV     viaduct device (default vd0)\n"
       << "  -p, --port=PORT      TCP port of the connection manager (default 18515)\n"
       << "  -s, --size=SIZE      message size in bytes (default 65536; 2 for latency)\n"
       << "  -a, --all            every size from 2 to 2^23 bytes\n"
       << "      --sizes=A,B,C    these sizes, in order (at most 32)\n"
       << "  -n, --iters=N        work requests per QP and size (default 1000)\n"
       << "  -q, --qp=N           data queue pairs (default 1, at most 64)\n"
       << "  -t, --tx-depth=N     send queue depth, 1 to 128 (default 128)\n"
       << "  -I, --inline_size=N  send messages of up to N bytes inline (write, send)\n"
       << "  -Q, --cq-mod=N       a completion every N work requests (bandwidth tests)\n"
       << "  -l, --post_list=N    post N work requests per call, 1 to 32 (bandwidth tests;\n"
       << "                       default 32, perftest's 1)\n"
       << "  -D, --duration=S     each size for S seconds, in rounds of -n (bandwidth tests)\n"
       << "  -e, --events         sleep on a completion channel for send completions\n"
       << "  -b, --bidirectional  the server streams to the client at the same time\n"
       << "                       (bandwidth tests; the sum of both ways is reported)\n"
       << "      --report_gbits   bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 bytes)\n"
       << "      --test=TEST      the test (-t TEST too)\n"
       << "      --addr=A         server: the address to listen on (default: every one)\n"
       << "      --server         be the server even with an address argument\n"
       << "      --polled         polled doorbells (the kernel polls the doorbell page)\n"
       << "      --crc            ask for the MPA CRC on every connection (client)\n"
       << "      --check=ends     check the first and last byte of each buffer (default)\n"
       << "      --check=all      check every byte\n"
       << "  -h, --help           this text\n"
       << "The test parameters are the client's; the server takes them from the\n"
       << "connection request. Latency is half the round trip.\n";
}

[[noreturn]] void usage(const std::string &why) {
    std::cerr << "viaduct-perf: " << why << "\n";
    print_usage(std::cerr);
    std::exit(2);
}

std::uint64_t parse_number(const std::string &opt, const std::string &s, std::uint64_t min,
                           std::uint64_t max) {
    std::size_t end = 0;
    unsigned long long v = 0;
    try {
        // Decimal ("010" is ten, never octal), or hex with 0x.
        const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        v = std::stoull(hex ? s.substr(2) : s, &end, hex ? 16 : 10);
        if (hex)
            end += 2;
    } catch (const std::exception &) {
        end = 0;
    }
    if (s.empty() || end != s.size() || s[0] == '-')
        usage(opt + ": '" + s + "' is not a number");
    if (v < min || v > max)
        usage(opt + ": " + s + " is out of range [" + std::to_string(min) + ", " +
              std::to_string(max) + "]");
    return v;
}

std::optional<Test> test_from_name(const std::string &t) {
    if (t == "write")
        return Test::Write;
    if (t == "read")
        return Test::Read;
    if (t == "send")
        return Test::Send;
    if (t == "lat-send")
        return Test::LatSend;
    if (t == "lat-write")
        return Test::LatWrite;
    return std::nullopt;
}

Options parse_args(int argc, char **argv) {
    enum {
        opt_sizes = 256,
        opt_test,
        opt_addr,
        opt_server,
        opt_polled,
        opt_check,
        opt_gbits,
        opt_crc,
    };
    static const option longs[] = {
        {"ib-dev", required_argument, nullptr, 'd'},
        {"dev", required_argument, nullptr, 'd'},
        {"port", required_argument, nullptr, 'p'},
        {"size", required_argument, nullptr, 's'},
        {"all", no_argument, nullptr, 'a'},
        {"iters", required_argument, nullptr, 'n'},
        {"qp", required_argument, nullptr, 'q'},
        {"qps", required_argument, nullptr, 'q'},
        {"tx-depth", required_argument, nullptr, 't'},
        {"duration", required_argument, nullptr, 'D'},
        {"inline_size", required_argument, nullptr, 'I'},
        {"events", no_argument, nullptr, 'e'},
        {"bidirectional", no_argument, nullptr, 'b'},
        {"cq-mod", required_argument, nullptr, 'Q'},
        {"post_list", required_argument, nullptr, 'l'},
        {"post-list", required_argument, nullptr, 'l'},
        {"sizes", required_argument, nullptr, opt_sizes},
        {"test", required_argument, nullptr, opt_test},
        {"addr", required_argument, nullptr, opt_addr},
        {"server", no_argument, nullptr, opt_server},
        {"polled", no_argument, nullptr, opt_polled},
        {"crc", no_argument, nullptr, opt_crc},
        {"check", required_argument, nullptr, opt_check},
        {"report_gbits", no_argument, nullptr, opt_gbits},
        {"report-gbits", no_argument, nullptr, opt_gbits},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    // The older "-s" for the server takes no value: a "-s" that is not
    // followed by a size is that.
    std::vector<char *> args(argv, argv + argc);
    static char server_opt[] = "--server";
    for (std::size_t i = 1; i < args.size(); i++) {
        std::string a = args[i];
        if (a == "--")
            break;
        if (a == "-s" && (i + 1 == args.size() || args[i + 1][0] == '-'))
            args[i] = server_opt;
    }
    args.push_back(nullptr);
    const int n = argc;

    Options o;
    bool addr_given = false;
    opterr = 0;
    int c;
    while ((c = ::getopt_long(n, args.data(), ":d:p:s:an:q:t:D:I:ebQ:l:S:h", longs, nullptr)) !=
           -1) {
        const std::string name = optopt > 0 && optopt < 256
                                     ? std::string("-") + static_cast<char>(optopt)
                                     : std::string(args[static_cast<std::size_t>(optind - 1)]);
        switch (c) {
        case 'h':
            print_usage(std::cout);
            std::exit(0);
        case 'd':
            o.dev = optarg;
            break;
        case 'p':
            o.port = static_cast<std::uint16_t>(parse_number("-p", optarg, 1, 65535));
            break;
        case 's':
        case 'S':
            o.sizes = {static_cast<std::uint32_t>(parse_number("-s", optarg, 1, 1U << 30))};
            break;
        case 'a':
            o.sizes.clear();
            for (std::uint32_t sz = 2; sz <= (1U << 23); sz *= 2)
                o.sizes.push_back(sz);
            break;
        case opt_sizes: {
            std::string list = optarg;
            o.sizes.clear();
            std::size_t pos = 0;
            while (pos <= list.size()) {
                std::size_t comma = list.find(',', pos);
                if (comma == std::string::npos)
                    comma = list.size();
                o.sizes.push_back(static_cast<std::uint32_t>(
                    parse_number("--sizes", list.substr(pos, comma - pos), 1, 1U << 30)));
                pos = comma + 1;
            }
            if (o.sizes.size() > kMaxSizes)
                usage("--sizes: at most " + std::to_string(kMaxSizes) + " sizes");
            break;
        }
        case 'n':
            o.iters = static_cast<std::uint32_t>(parse_number("-n", optarg, 1, 100000000));
            break;
        case 'q':
            o.qps = static_cast<std::uint32_t>(parse_number("-q", optarg, 1, kMaxQps));
            break;
        case 't':
            // perftest's TX depth; a test name is the older -t TEST.
            if (auto t = test_from_name(optarg))
                o.test = t;
            else
                o.tx_depth = static_cast<std::uint32_t>(parse_number("-t", optarg, 1, kSqDepth));
            break;
        case opt_test:
            o.test = test_from_name(optarg);
            if (!o.test)
                usage(std::string("unknown test '") + optarg +
                      "': write, read, send, lat-send or lat-write");
            break;
        case opt_addr:
            o.addr = optarg;
            addr_given = true;
            break;
        case opt_server:
            o.server = true;
            break;
        case opt_polled:
            o.polled = true;
            break;
        case opt_crc:
            o.crc = true;
            break;
        case opt_check:
            if (std::string(optarg) == "all")
                o.check_all = true;
            else if (std::string(optarg) != "ends")
                usage(std::string("--check: '") + optarg + "' is not ends or all");
            break;
        case opt_gbits:
            o.gbits = true;
            break;
        case 'I':
            o.inline_size = static_cast<std::uint32_t>(parse_number("-I", optarg, 0, 4096));
            break;
        case 'Q':
            o.cq_mod = static_cast<std::uint32_t>(parse_number("-Q", optarg, 1, kSqDepth));
            break;
        case 'l':
            o.post_list = static_cast<std::uint32_t>(parse_number("-l", optarg, 1, kPostListMax));
            break;
        case 'D':
            o.duration = static_cast<std::uint32_t>(parse_number("-D", optarg, 1, 3600));
            break;
        case 'e':
            o.events = true;
            break;
        case 'b':
            o.bidirectional = true;
            break;
        case ':':
            usage("option '" + name + "' needs a value");
        default:
            usage("unknown option '" + name + "'");
        }
    }
    if (optind < n) {
        if (optind + 1 < n)
            usage(std::string("unexpected argument '") +
                  args[static_cast<std::size_t>(optind) + 1] + "'");
        if (addr_given)
            usage("the server's address twice: as --addr and as the argument");
        o.addr = args[static_cast<std::size_t>(optind)];
        addr_given = true;
    }
    // perftest: with a server address, a client. The older spelling: -s
    // (--server) with --addr as the listening address.
    if (!o.server && !addr_given)
        o.server = true;
    if (!o.server) {
        if (!o.test)
            usage("the client needs --test write|read|send|lat-send|lat-write");
        if (is_latency(*o.test) && o.qps != 1)
            usage("latency tests run on one queue pair: drop -q");
        if (o.sizes.empty())
            o.sizes = {is_latency(*o.test) ? 2U : 65536U};
        if (o.events && is_latency(*o.test))
            usage("-e is for the bandwidth tests: the latency tests poll");
        if (o.duration && is_latency(*o.test))
            usage("-D is for the bandwidth tests: the latency tests run -n round trips");
        if (o.bidirectional && is_latency(*o.test))
            usage("-b is for the bandwidth tests: a latency test is a ping-pong both ways already");
        if (o.bidirectional && o.duration)
            usage("-b runs -n work requests each way: drop -D");
        if (o.cq_mod > o.tx_depth)
            usage("-Q " + std::to_string(o.cq_mod) + " is more than the TX depth (-t) of " +
                  std::to_string(o.tx_depth) + ": the queue would fill before a completion");
    }
    return o;
}

// The pattern of a message of @size bytes: byte @i.
std::uint8_t pattern(std::uint32_t size, std::uint64_t i) {
    return static_cast<std::uint8_t>(size * 131 + i * 7 + (i >> 8) + 1);
}

[[noreturn]] void fail(const std::string &what) {
    throw Error(EIO, what);
}

void check_ok(const Completion &c, const char *what) {
    if (!c.ok())
        fail(std::string(what) + " completed with status " + viaduct::to_string(c.status) +
             " (vendor error " + std::to_string(c.vendor_err) + ")");
}

// Progress watchdog: fails after kWaitMs without progress.
class Watchdog {
public:
    explicit Watchdog(std::string what) : what_(std::move(what)) { kick(); }
    void kick() { last_ = steady_clock::now(); }
    void check() {
        if (expired())
            fail("no progress for " + std::to_string(kWaitMs / 1000) + " s while " + what_);
    }
    // Whether kWaitMs have passed since the last kick (looked at every
    // 4096th call).
    bool expired() {
        return !(++spins_ % 4096) && steady_clock::now() - last_ > milliseconds(kWaitMs);
    }

private:
    std::string what_;
    steady_clock::time_point last_;
    std::uint64_t spins_ = 0;
};

// Anonymous, populated memory.
class Buffer {
public:
    explicit Buffer(std::size_t len) : len_(len) {
        void *p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            throw Error(errno, "cannot allocate " + std::to_string(len) + " bytes");
        p_ = static_cast<std::uint8_t *>(p);
    }
    ~Buffer() { ::munmap(p_, len_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    std::uint8_t *data() const { return p_; }
    std::size_t size() const { return len_; }

private:
    std::uint8_t *p_ = nullptr;
    std::size_t len_ = 0;
};

std::uint8_t load(const std::uint8_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

// One side: the device, a PD, the control QP and its buffer, the data QPs
// and their buffer: per data QP a "dst" area (the peer writes or reads it,
// receives land in it) and a "src" area (local data for writes and sends).
struct Side {
    viaduct::Device dev;
    viaduct::ProtectionDomain pd;
    std::uint64_t slot;
    Buffer buf;
    viaduct::MemoryRegion mr;
    Buffer ctrl_buf;
    viaduct::MemoryRegion ctrl_mr;
    std::optional<viaduct::CompletionChannel> channel; // -e
    std::optional<viaduct::CompletionQueue> send_cq;   // -e: the data QPs' sends
    std::unordered_map<std::uint32_t, std::uint32_t> qp_index;
    std::vector<viaduct::QueuePair> qps; // [0]: control
    std::uint64_t ctrl_sent = 0;

    Side(viaduct::Device device, std::uint32_t nqps, std::uint64_t max_size, Test test, bool polled,
         std::uint32_t inline_size = 0, bool events = false)
        : dev(std::move(device)), pd(dev),
          slot(std::max<std::uint64_t>(4096, (max_size + 4095) & ~std::uint64_t(4095))),
          buf(2 * slot * nqps), mr(pd, buf.data(), buf.size(),
                                   viaduct::access::local_write | viaduct::access::remote_write |
                                       viaduct::access::remote_read),
          ctrl_buf(2 * kCtrlDepth * kCtrlSlot), ctrl_mr(pd, ctrl_buf.data(), ctrl_buf.size()) {
        const auto &lim = dev.attributes().limits;
        if (lim.max_msg_size && max_size > lim.max_msg_size)
            throw Error(EINVAL, "message size " + std::to_string(max_size) + " exceeds " +
                                    dev.name() + "'s limit of " + std::to_string(lim.max_msg_size));
        viaduct::QpConfig c;
        c.sq_depth = kCtrlDepth;
        c.rq_depth = kCtrlDepth;
        c.polled_doorbell = polled;
        qps.emplace_back(pd, c);
        for (std::uint32_t i = 0; i < kCtrlDepth; i++)
            post_ctrl_recv(i);
        c.sq_depth = kSqDepth;
        c.rq_depth = test == Test::Send ? kRqDepthSend : kCtrlDepth;
        c.access = VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ;
        c.ord = std::min<std::uint32_t>(lim.max_ord ? lim.max_ord : 1, 16);
        c.ird = std::min<std::uint32_t>(lim.max_ird ? lim.max_ird : 1, 16);
        if (inline_size > lim.max_inline)
            throw Error(EINVAL, "inline data of " + std::to_string(inline_size) +
                                    " bytes exceeds " + dev.name() + "'s limit of " +
                                    std::to_string(lim.max_inline));
        c.max_inline = inline_size;
        if (events) {
            // perftest's -e: the data QPs' send completions go to one CQ on a
            // completion channel, and the client sleeps on it.
            channel.emplace(dev);
            std::uint32_t entries = std::min(kSqDepth * nqps, lim.max_cqe ? lim.max_cqe : 4096);
            send_cq.emplace(dev, entries, &*channel);
            c.send_cq = &*send_cq;
        }
        for (std::uint32_t i = 0; i < nqps; i++) {
            qps.emplace_back(pd, c);
            qp_index[qps.back().handle()] = i;
        }
    }

    // The data QP a completion of the shared send CQ is about.
    std::uint32_t index_of(std::uint32_t qp_handle) const {
        auto it = qp_index.find(qp_handle);
        if (it == qp_index.end())
            fail("a completion for QP handle " + std::to_string(qp_handle) + ", not a data QP");
        return it->second;
    }

    std::uint32_t nqps() const { return static_cast<std::uint32_t>(qps.size() - 1); }
    viaduct::QueuePair &qp(std::uint32_t i) { return qps[i + 1]; }
    std::uint8_t *dst(std::uint32_t i) const { return buf.data() + 2 * slot * i; }
    std::uint8_t *src(std::uint32_t i) const { return dst(i) + slot; }
    viaduct::Sge dst_sge(std::uint32_t i, std::uint32_t len) const {
        return mr.sge(2 * slot * i, len);
    }
    viaduct::Sge src_sge(std::uint32_t i, std::uint32_t len) const {
        return mr.sge(2 * slot * i + slot, len);
    }

    void post_ctrl_recv(std::uint32_t n) {
        viaduct::Sge s = ctrl_mr.sge(n * kCtrlSlot, kCtrlSlot);
        qps[0].post_recv({.wr_id = n, .sge = {&s, 1}});
    }

    void ctrl_send(const Ctrl &m) {
        std::uint32_t n = static_cast<std::uint32_t>(ctrl_sent++ % kCtrlDepth);
        std::uint64_t off = (kCtrlDepth + n) * kCtrlSlot;
        std::memcpy(ctrl_buf.data() + off, &m, sizeof(m));
        viaduct::Sge s = ctrl_mr.sge(off, sizeof(m));
        qps[0].post_send({.wr_id = n, .sge = {&s, 1}});
        Completion c;
        Watchdog w("sending a control message");
        while (qps[0].poll_send({&c, 1}) == 0)
            w.check();
        check_ok(c, "a control message Send");
    }

    Ctrl ctrl_recv(const char *waiting_for) {
        Completion c;
        Watchdog w(std::string("waiting for ") + waiting_for + " from the peer");
        while (qps[0].poll_recv({&c, 1}) == 0)
            w.check();
        check_ok(c, "a control message Receive");
        if (c.byte_len != sizeof(Ctrl))
            fail("control message of " + std::to_string(c.byte_len) + " bytes");
        Ctrl m;
        std::memcpy(&m, ctrl_buf.data() + c.wr_id * kCtrlSlot, sizeof(m));
        post_ctrl_recv(static_cast<std::uint32_t>(c.wr_id));
        return m;
    }

    Ctrl ctrl_expect(Op op, const char *what) {
        Ctrl m = ctrl_recv(what);
        if (m.op != op)
            fail(std::string("protocol error: expected ") + what + ", got control message " +
                 std::to_string(static_cast<std::uint32_t>(m.op)));
        return m;
    }

    void reap_sends(std::uint32_t i, std::uint32_t &outstanding, bool block, const char *what) {
        Completion c[16];
        Watchdog w(what);
        do {
            std::size_t n = qp(i).poll_send(c);
            for (std::size_t k = 0; k < n; k++)
                check_ok(c[k], what);
            outstanding -= static_cast<std::uint32_t>(n);
            if (n)
                w.kick();
            else if (block)
                w.check();
        } while (block && outstanding);
    }

    // Prepares for a size: the areas the peer will write or that will be
    // received into are cleared, with first and last byte set to the
    // complement of the pattern; src holds the pattern.
    void prepare(std::uint32_t size) {
        for (std::uint32_t i = 0; i < nqps(); i++) {
            std::memset(dst(i), 0, size);
            dst(i)[0] = static_cast<std::uint8_t>(~pattern(size, 0));
            dst(i)[size - 1] = static_cast<std::uint8_t>(~pattern(size, size - 1));
            for (std::uint32_t b = 0; b < size; b++)
                src(i)[b] = pattern(size, b);
        }
    }

    // First and last byte of every dst area against the pattern, or with
    // @all every byte; @checked counts the bytes compared.
    std::uint32_t check_dst(std::uint32_t size, std::uint32_t &checked, bool all) const {
        std::uint32_t bad = 0;
        for (std::uint32_t i = 0; i < nqps(); i++) {
            if (all) {
                for (std::uint32_t b = 0; b < size; b++)
                    bad += dst(i)[b] != pattern(size, b);
                checked += size;
                continue;
            }
            bad += dst(i)[0] != pattern(size, 0);
            bad += dst(i)[size - 1] != pattern(size, size - 1);
            checked += 2;
        }
        return bad;
    }
};

struct Peer {
    std::uint64_t addr = 0, slot = 0;
    std::uint32_t stag = 0;
    std::uint64_t dst(std::uint32_t i) const { return addr + 2 * slot * i; }
    std::uint64_t src(std::uint32_t i) const { return dst(i) + slot; }
};

// --- Latency --------------------------------------------------------------

struct LatStats {
    double min, max, typical, avg, stdev, p99, p999;
};

LatStats lat_stats(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    LatStats s{};
    const double n = static_cast<double>(us.size());
    auto at = [&](double q) {
        std::size_t k = static_cast<std::size_t>(std::ceil(q * n));
        return us[std::min(us.size() - 1, k ? k - 1 : 0)];
    };
    s.min = us.front();
    s.max = us.back();
    s.typical = us[us.size() / 2];
    double sum = 0, sq = 0;
    for (double v : us)
        sum += v;
    s.avg = sum / n;
    for (double v : us)
        sq += (v - s.avg) * (v - s.avg);
    s.stdev = std::sqrt(sq / n);
    s.p99 = at(0.99);
    s.p999 = at(0.999);
    return s;
}

// Send/Receive ping-pong on data QP 0; the client measures. Returns the
// one-way latencies (client) and the data checks that failed.
std::uint32_t lat_send(Side &s, std::uint32_t size, std::uint32_t iters, bool client,
                       std::vector<double> &us) {
    auto &qp = s.qp(0);
    viaduct::Sge rs = s.dst_sge(0, size), ss = s.src_sge(0, size);
    std::uint32_t outstanding = 0;
    Completion c;
    for (std::uint32_t i = 0; i < iters; i++) {
        auto t0 = steady_clock::now();
        if (client) {
            qp.post_send({.wr_id = i, .sge = {&ss, 1}});
            outstanding++;
        }
        Watchdog w("waiting for a Receive (lat-send)");
        while (qp.poll_recv({&c, 1}) == 0)
            w.check();
        check_ok(c, "a Receive");
        if (c.byte_len != size)
            fail("received " + std::to_string(c.byte_len) + " bytes, sent " + std::to_string(size));
        if (i + 1 < iters)
            qp.post_recv({.wr_id = i + 1, .sge = {&rs, 1}});
        if (client) {
            us.push_back(duration<double, std::micro>(steady_clock::now() - t0).count() / 2);
        } else {
            qp.post_send({.wr_id = i, .sge = {&ss, 1}});
            outstanding++;
        }
        s.reap_sends(0, outstanding, outstanding >= kSqDepth / 2, "a Send (lat-send)");
    }
    s.reap_sends(0, outstanding, true, "a Send (lat-send)");
    std::uint32_t checked = 0;
    return s.check_dst(size, checked, false);
}

// Whether the byte at @p becomes @want within kWaitMs.
bool settles(const std::uint8_t *p, std::uint8_t want) {
    Watchdog w("waiting for a byte of a message to be placed");
    while (load(p) != want)
        if (w.expired())
            return false;
    return true;
}

// RDMA Write ping-pong: each side writes the peer's dst and spins on the
// last byte of its own, which carries the iteration's tag.
std::uint32_t lat_write(Side &s, const Peer &p, std::uint32_t size, std::uint32_t iters,
                        bool client, std::vector<double> &us) {
    auto &qp = s.qp(0);
    viaduct::Sge ss = s.src_sge(0, size);
    std::uint8_t *mine = s.dst(0), *out = s.src(0);
    std::uint32_t outstanding = 0, bad = 0;
    auto write = [&](std::uint8_t tag, std::uint32_t i) {
        out[0] = tag;
        out[size - 1] = tag;
        qp.post_send({.wr_id = i,
                      .opcode = viaduct::SendOp::RdmaWrite,
                      .sge = {&ss, 1},
                      .remote_addr = p.dst(0),
                      .remote_stag = p.stag});
        outstanding++;
    };
    for (std::uint32_t i = 0; i < iters; i++) {
        auto tag = static_cast<std::uint8_t>(i % 255 + 1);
        auto t0 = steady_clock::now();
        if (client)
            write(tag, i);
        // The message has come once its last byte has, as perftest tests it.
        // Its other bytes are placed in no order the verbs promise
        // (ibv_query_qp_data_in_order(3)): the kernel's memcpy() of two or
        // three bytes stores the first one last. So the first byte gets the
        // time a message needs to be placed before it counts as wrong.
        Watchdog w("waiting for the peer's RDMA Write (lat-write)");
        while (load(mine + size - 1) != tag)
            w.check();
        bad += !settles(mine, tag);
        if (client)
            us.push_back(duration<double, std::micro>(steady_clock::now() - t0).count() / 2);
        else
            write(tag, i);
        s.reap_sends(0, outstanding, outstanding >= kSqDepth / 2, "an RDMA Write (lat-write)");
    }
    s.reap_sends(0, outstanding, true, "an RDMA Write (lat-write)");
    return bad;
}

// --- Bandwidth ------------------------------------------------------------

// perftest's peak bandwidth, as the best rate over intervals of at least
// 10 ms of the run, each timed between the polls that end them. (Shorter
// windows would measure how completions bunch up in one poll, not the
// link.) A run shorter than one interval reports its average.
class PeakMeter {
public:
    explicit PeakMeter(std::uint32_t size) : size_(size) {}

    void start() {
        last_t_ = steady_clock::now();
        last_done_ = 0;
    }

    // @done completions in all so far.
    void update(std::uint64_t done) {
        auto now = steady_clock::now();
        double secs = duration<double>(now - last_t_).count();
        if (secs < 0.010)
            return;
        best_ = std::max(best_, static_cast<double>(done - last_done_) * size_ / secs);
        last_done_ = done;
        last_t_ = now;
    }

    double bytes_per_sec() const { return best_; }

private:
    std::uint32_t size_;
    std::uint64_t last_done_ = 0;
    steady_clock::time_point last_t_{};
    double best_ = 0;
};

// The client streams @count WRs of @size on every data QP, at most the send
// queue depth in flight per QP.
// With @cq_mod > 1 only every cq_mod-th WR (and the last) is signaled, as
// perftest's -Q: a completion stands for the WRs before it too.
// At most @o.post_list WRs go to the QP per call (perftest's -l).
void stream(Side &s, const Peer &p, Test test, std::uint32_t size, std::uint32_t count,
            const Options &o, PeakMeter &peak, std::uint64_t &all_done) {
    const std::uint32_t depth = o.tx_depth, inline_size = o.inline_size, cq_mod = o.cq_mod;
    // perftest's -I: messages of up to @inline_size go inline (copied into
    // the WQE); the QP was made to take that many bytes.
    const bool inl = test != Test::Read && size <= inline_size;
    const std::uint32_t n = s.nqps();
    std::vector<std::uint32_t> posted(n), done(n);
    std::vector<viaduct::Sge> sge(n);
    for (std::uint32_t i = 0; i < n; i++)
        sge[i] = test == Test::Read ? s.dst_sge(i, size) : s.src_sge(i, size);
    const viaduct::SendOp op = test == Test::Write  ? viaduct::SendOp::RdmaWrite
                               : test == Test::Read ? viaduct::SendOp::RdmaRead
                                                    : viaduct::SendOp::Send;
    const char *what = test == Test::Write  ? "an RDMA Write"
                       : test == Test::Read ? "an RDMA Read"
                                            : "a Send";
    std::uint32_t finished = 0;
    std::vector<viaduct::SendWr> batch;
    Completion c[32];
    Watchdog w(std::string("waiting for completions of ") + what);
    while (finished < n) {
        for (std::uint32_t i = 0; i < n; i++) {
            if (done[i] == count)
                continue;
            std::uint32_t room = std::min(count - posted[i], depth - (posted[i] - done[i]));
            room = std::min(room, o.post_list);
            if (room) {
                batch.clear();
                for (std::uint32_t k = 0; k < room; k++) {
                    const std::uint32_t idx = posted[i] + k;
                    viaduct::SendWr wr{.wr_id = idx,
                                       .opcode = op,
                                       .signaled = (idx + 1) % cq_mod == 0 || idx + 1 == count,
                                       .sge = {&sge[i], 1},
                                       .remote_addr = test == Test::Send   ? 0
                                                      : test == Test::Read ? p.src(i)
                                                                           : p.dst(i),
                                       .remote_stag = test == Test::Send ? 0 : p.stag};
                    if (inl) {
                        wr.sge = {};
                        wr.inline_data = {reinterpret_cast<const std::byte *>(s.src(i)), size};
                    }
                    batch.push_back(wr);
                }
                s.qp(i).post_send(batch);
                posted[i] += room;
            }
            if (s.send_cq)
                continue; // reaped below, for every QP
            std::size_t got = s.qp(i).poll_send(c);
            std::uint32_t before = done[i];
            for (std::size_t k = 0; k < got; k++) {
                check_ok(c[k], what);
                // In order on one QP: everything up to this WR is done.
                done[i] = static_cast<std::uint32_t>(c[k].wr_id) + 1;
            }
            if (got) {
                w.kick();
                all_done += done[i] - before;
                peak.update(all_done);
            }
        }
        if (s.send_cq) {
            // Sleeps on the channel until a completion (or 200 ms).
            std::size_t got = s.send_cq->wait(c, milliseconds(200));
            for (std::size_t k = 0; k < got; k++) {
                check_ok(c[k], what);
                const std::uint32_t j = s.index_of(c[k].qp_handle);
                const auto upto = static_cast<std::uint32_t>(c[k].wr_id) + 1;
                all_done += upto - done[j];
                done[j] = upto;
            }
            if (got) {
                w.kick();
                peak.update(all_done);
            }
        }
        finished = static_cast<std::uint32_t>(std::count_if(
            done.begin(), done.end(), [count](std::uint32_t d) { return d == count; }));
        w.check();
    }
}

// Server side of the Send test: posts @count receives per data QP.
void post_recvs(Side &s, std::uint32_t size, std::uint32_t count) {
    for (std::uint32_t i = 0; i < s.nqps(); i++) {
        viaduct::Sge sge = s.dst_sge(i, size);
        std::vector<viaduct::RecvWr> wrs(count, viaduct::RecvWr{.wr_id = 0, .sge = {&sge, 1}});
        s.qp(i).post_recv(wrs);
    }
}

// Server side of the Send test: reaps @count receives per data QP.
void reap_recvs(Side &s, std::uint32_t size, std::uint32_t count) {
    Completion c[32];
    for (std::uint32_t i = 0; i < s.nqps(); i++) {
        Watchdog w("waiting for Receives (send)");
        for (std::uint32_t got = 0; got < count;) {
            std::size_t k = s.qp(i).poll_recv(c);
            for (std::size_t j = 0; j < k; j++) {
                check_ok(c[j], "a Receive");
                if (c[j].byte_len != size)
                    fail("received " + std::to_string(c[j].byte_len) + " bytes, sent " +
                         std::to_string(size));
            }
            got += static_cast<std::uint32_t>(k);
            if (k)
                w.kick();
            else
                w.check();
        }
    }
}

// --- Server ---------------------------------------------------------------

template <class T> std::span<const std::byte> bytes_of(const T &v) {
    return {reinterpret_cast<const std::byte *>(&v), sizeof(v)};
}

std::span<const std::byte> bytes_of(const std::string &v) {
    return {reinterpret_cast<const std::byte *>(v.data()), v.size()};
}

std::string event_text(const viaduct::CmEvent &ev) {
    std::string t = viaduct::to_string(ev.type());
    if (ev.status())
        t += std::string(" (") + std::strerror(-ev.status()) + ")";
    return t;
}

Hello read_hello(const viaduct::CmEvent &ev, std::string &why) {
    Hello h{};
    auto pd = ev.private_data();
    if (pd.size() < sizeof(Hello)) {
        why = "not a viaduct-perf client (private data of " + std::to_string(pd.size()) + " bytes)";
        return h;
    }
    std::memcpy(&h, pd.data(), sizeof(h));
    if (h.magic != kMagic)
        why = "not a viaduct-perf client";
    else if (h.version != kVersion)
        why = "viaduct-perf protocol version " + std::to_string(h.version) + ", the server has " +
              std::to_string(kVersion);
    else if (h.nqps < 1 || h.nqps > kMaxQps || h.nsizes < 1 || h.nsizes > kMaxSizes || h.test < 1 ||
             h.test > 5 || h.index > h.nqps || h.iters < 1 || h.tx_depth < 1 ||
             h.tx_depth > kSqDepth || h.cq_mod < 1 || h.cq_mod > h.tx_depth || h.post_list < 1 ||
             h.post_list > kPostListMax || h.inline_size > 4096 ||
             ((h.flags & kBidirectional) && is_latency(static_cast<Test>(h.test))))
        why = "bad test parameters";
    return h;
}

int run_server(const Options &o) {
    // The CM ids and the QPs must be of one context: the Side takes it over.
    auto dev = viaduct::Device::open(o.dev);
    viaduct::CmChannel ch(dev);
    viaduct::ConnectionId listener(ch);
    listener.listen(o.addr, o.port);
    std::vector<viaduct::ConnectionId> conns;
    std::cout << "viaduct-perf: " << o.dev << " waiting for a client on "
              << (o.addr.empty() ? "*" : o.addr) << " port " << o.port << std::endl;

    // The connections arrive on the listener, the control QP first.
    std::unique_ptr<Side> side;
    Hello first{};
    Peer peer;
    std::uint32_t established = 0, accepted = 0;
    while (!side || established < side->nqps() + 1) {
        auto ev = ch.read(milliseconds(side ? kWaitMs : -1));
        if (!ev)
            fail("the client did not complete its connections");
        if (ev->type() == viaduct::CmEventType::Established) {
            established++;
            continue;
        }
        if (ev->type() != viaduct::CmEventType::ConnectRequest)
            fail("connection manager event " + event_text(*ev));
        std::string why;
        Hello h = read_hello(*ev, why);
        if (why.empty() && h.index != accepted)
            why = "connection " + std::to_string(h.index) + " out of order";
        if (why.empty() && side &&
            (h.nqps != first.nqps || h.test != first.test || h.stag != first.stag))
            why = "connection of another client";
        if (!why.empty()) {
            std::cerr << "viaduct-perf: rejecting a connection: " << why << "\n";
            ev->connection().reject(bytes_of(why));
            continue;
        }
        if (!side) {
            first = h;
            std::uint32_t max = *std::max_element(h.sizes, h.sizes + h.nsizes);
            // With -b the server streams as the client does, inline too.
            side = std::make_unique<Side>(std::move(dev), h.nqps, max, static_cast<Test>(h.test),
                                          o.polled, (h.flags & kBidirectional) ? h.inline_size : 0);
            peer = {h.addr, h.slot, h.stag};
            std::cout << "viaduct-perf: client test " << test_name(static_cast<Test>(h.test))
                      << ", " << h.nqps << " QP(s), " << h.iters << " iterations, " << h.nsizes
                      << " size(s)" << std::endl;
        }
        Welcome wl{kMagic,     h.index,         reinterpret_cast<std::uintptr_t>(side->buf.data()),
                   side->slot, side->mr.stag(), 0};
        conns.push_back(ev->connection());
        conns.back().accept(side->qps[h.index], bytes_of(wl));
        accepted++;
    }

    Side &s = *side;
    const Test test = static_cast<Test>(first.test);
    const bool bidir = (first.flags & kBidirectional) != 0;
    // -b: the server streams with the client's parameters.
    Options so;
    so.tx_depth = first.tx_depth;
    so.cq_mod = first.cq_mod;
    so.inline_size = first.inline_size;
    so.post_list = first.post_list;
    std::uint32_t pending = 0; // Send test: receives posted, not reaped
    std::uint32_t size = 0, lat_bad = 0;
    // -b: the server's own stream at this size.
    PeakMeter peak(0);
    std::uint64_t own_done = 0;
    steady_clock::duration own_time{};
    auto own_stream = [&](std::uint32_t count) {
        auto t0 = steady_clock::now();
        stream(s, peer, test, size, count, so, peak, own_done);
        own_time += steady_clock::now() - t0;
    };
    for (;;) {
        Ctrl m = s.ctrl_recv("the next step");
        switch (m.op) {
        case Op::Start: {
            size = m.size;
            if (size > s.slot)
                fail("size " + std::to_string(size) + " beyond the buffer");
            s.prepare(size);
            if (test == Test::LatWrite) // the tags are 1..255
                s.dst(0)[0] = s.dst(0)[size - 1] = 0;
            peak = PeakMeter(size);
            own_done = 0;
            own_time = {};
            if (test == Test::LatSend)
                for (std::uint32_t i = 0; i < s.nqps(); i++) {
                    viaduct::Sge r = s.dst_sge(i, size);
                    s.qp(i).post_recv({.wr_id = 0, .sge = {&r, 1}});
                }
            s.ctrl_send({Op::Ready, size, 0, 0, 0});
            std::vector<double> unused;
            lat_bad = 0;
            if (test == Test::LatSend)
                lat_bad = lat_send(s, size, first.iters, false, unused);
            else if (test == Test::LatWrite)
                lat_bad = lat_write(s, peer, size, first.iters, false, unused);
            else if (bidir && test != Test::Send) {
                peak.start();
                own_stream(first.iters);
            }
            break;
        }
        case Op::Post:
            reap_recvs(s, size, pending);
            post_recvs(s, size, m.count);
            pending = m.count;
            s.ctrl_send({Op::Ready, size, 0, 0, 0});
            if (bidir) { // the client posted its receives before asking
                if (!own_done)
                    peak.start();
                own_stream(m.count);
            }
            break;
        case Op::Done: {
            std::uint32_t checked = 0, bad = 0;
            if (test == Test::Send) {
                reap_recvs(s, size, pending);
                pending = 0;
            }
            if (test == Test::Write || test == Test::Send || (bidir && test == Test::Read)) {
                bad = s.check_dst(size, checked, (first.flags & kCheckAll) != 0);
            } else if (test == Test::LatSend) {
                bad = lat_bad;
                checked = 2;
            } else if (test == Test::LatWrite) {
                bad = lat_bad; // first byte of every message
                checked = first.iters;
            }
            Ctrl v{Op::Verified, size, 0, bad, checked};
            v.msgs = own_done;
            v.ns = static_cast<std::uint64_t>(duration_cast<nanoseconds>(own_time).count());
            v.peak_bytes = static_cast<std::uint64_t>(peak.bytes_per_sec());
            s.ctrl_send(v);
            break;
        }
        case Op::Bye:
            std::cout << "viaduct-perf: done" << std::endl;
            return 0;
        default:
            fail("protocol error: control message " +
                 std::to_string(static_cast<std::uint32_t>(m.op)));
        }
    }
}

// --- Client ---------------------------------------------------------------

void print_header(const Options &o, const Side &s) {
    const std::string line(87, '-');
    std::cout << line << "\n"
              << "                    " << test_title(*o.test) << "\n"
              << " Device         : " << o.dev << "\n"
              << " Number of qps  : " << o.qps << "\t\tTransport type : iWARP\n"
              << " TX depth       : " << (is_latency(*o.test) ? kSqDepth : o.tx_depth)
              << "\t\tDoorbell       : " << (o.polled ? "polled" : "system call") << "\n"
              << " Inline data    : " << (is_latency(*o.test) ? 0 : o.inline_size) << " bytes"
              << "\t\tCompletions    : " << (s.send_cq ? "events" : "polling") << "\n"
              << " Post list      : " << (is_latency(*o.test) ? 1 : o.post_list)
              << "\t\tBidirectional  : " << (o.bidirectional ? "yes" : "no") << "\n"
              << " Server         : " << o.addr << " port " << o.port << "\n"
              << " Buffer STag    : 0x" << std::hex << s.mr.stag() << std::dec << "\n"
              << line << "\n";
    char row[160];
    if (is_latency(*o.test))
        std::snprintf(row, sizeof(row), " %-8s %-12s %-10s %-10s %-12s %-10s %-12s %-10s %-10s",
                      "#bytes", "#iterations", "t_min[us]", "t_max[us]", "t_typical[us]",
                      "t_avg[us]", "t_stdev[us]", "99%[us]", "99.9%[us]");
    else
        std::snprintf(row, sizeof(row), " %-10s %-14s %-20s %-20s %-16s", "#bytes", "#iterations",
                      o.gbits ? "BW peak[Gb/sec]" : "BW peak[MB/sec]",
                      o.gbits ? "BW average[Gb/sec]" : "BW average[MB/sec]", "MsgRate[Mpps]");
    std::cout << row << std::endl;
}

int run_client(const Options &o) {
    const Test test = *o.test;
    std::uint32_t max = *std::max_element(o.sizes.begin(), o.sizes.end());
    Side s(viaduct::Device::open(o.dev), o.qps, max, test, o.polled,
           is_latency(test) ? 0 : o.inline_size, o.events && !is_latency(test));
    viaduct::CmChannel ch(s.dev);
    std::vector<viaduct::ConnectionId> ids;

    Hello h{};
    h.magic = kMagic;
    h.version = kVersion;
    h.nqps = o.qps;
    h.test = static_cast<std::uint32_t>(test);
    h.iters = o.iters;
    h.nsizes = static_cast<std::uint32_t>(o.sizes.size());
    h.flags = (o.check_all ? kCheckAll : 0) | (o.bidirectional ? kBidirectional : 0);
    h.tx_depth = o.tx_depth;
    h.cq_mod = o.cq_mod;
    h.inline_size = o.inline_size;
    h.post_list = o.post_list;
    h.addr = reinterpret_cast<std::uintptr_t>(s.buf.data());
    h.slot = s.slot;
    h.stag = s.mr.stag();
    std::copy(o.sizes.begin(), o.sizes.end(), h.sizes);

    Peer peer;
    for (std::uint32_t i = 0; i <= o.qps; i++) {
        h.index = i;
        ids.emplace_back(ch);
        ids.back().connect(s.qps[i], o.addr, o.port, {.private_data = bytes_of(h), .crc = o.crc});
        auto ev = ch.read(milliseconds(kWaitMs));
        if (!ev)
            fail("no answer from " + o.addr + " port " + std::to_string(o.port) + " within " +
                 std::to_string(kWaitMs / 1000) + " s");
        if (ev->type() == viaduct::CmEventType::Rejected) {
            auto pd = ev->private_data();
            std::string why(reinterpret_cast<const char *>(pd.data()), pd.size());
            fail("the server rejected the connection" + (why.empty() ? "" : ": " + why));
        }
        if (ev->type() != viaduct::CmEventType::Established)
            fail("cannot connect to " + o.addr + " port " + std::to_string(o.port) + ": " +
                 event_text(*ev) + "; is 'viaduct-perf -s' running there?");
        Welcome wl{};
        if (ev->private_data().size() < sizeof(wl))
            fail("the peer is not a viaduct-perf server");
        std::memcpy(&wl, ev->private_data().data(), sizeof(wl));
        if (wl.magic != kMagic || wl.index != i)
            fail("the peer is not a viaduct-perf server");
        if (wl.slot < max)
            fail("the server's buffer is too small");
        peer = {wl.addr, wl.slot, wl.stag};
    }
    print_header(o, s);

    for (std::uint32_t size : o.sizes) {
        s.prepare(size);
        if (test == Test::LatWrite) // the tags are 1..255
            s.dst(0)[0] = s.dst(0)[size - 1] = 0;
        s.ctrl_send({Op::Start, size, 0, 0, 0});
        s.ctrl_expect(Op::Ready, "READY");
        std::vector<double> us;
        std::uint32_t bad = 0, checked = 0;
        PeakMeter peak(size);
        std::uint64_t iters_done = o.iters; // per data QP
        std::uint64_t all_done = 0;
        auto t0 = steady_clock::now();
        peak.start();
        if (test == Test::LatSend) {
            viaduct::Sge r = s.dst_sge(0, size);
            s.qp(0).post_recv({.wr_id = 0, .sge = {&r, 1}});
            bad = lat_send(s, size, o.iters, true, us);
            checked = 2;
        } else if (test == Test::LatWrite) {
            bad = lat_write(s, peer, size, o.iters, true, us);
            checked = o.iters;
        } else if (test == Test::Send) {
            // -n receives in bursts, or with -D bursts until the time is up.
            iters_done = 0;
            auto deadline = t0;
            std::uint32_t own_pending = 0; // -b: receives for the server's Sends
            for (std::uint32_t left = o.iters; o.duration || left;) {
                if (o.duration && iters_done && steady_clock::now() >= deadline)
                    break;
                std::uint32_t n = o.duration ? kSendBurst : std::min(left, kSendBurst);
                if (o.bidirectional) {
                    reap_recvs(s, size, own_pending);
                    post_recvs(s, size, n);
                    own_pending = n;
                }
                s.ctrl_send({Op::Post, size, n, 0, 0});
                s.ctrl_expect(Op::Ready, "READY");
                if (!iters_done) { // the first burst's receives come before the clock
                    t0 = steady_clock::now();
                    deadline = t0 + seconds(o.duration);
                    peak.start();
                }
                stream(s, peer, test, size, n, o, peak, all_done);
                iters_done += n;
                if (!o.duration)
                    left -= n;
            }
            reap_recvs(s, size, own_pending);
        } else {
            // -n work requests, or with -D rounds of -n until the time is up.
            iters_done = 0;
            const auto deadline = t0 + seconds(o.duration);
            do {
                stream(s, peer, test, size, o.iters, o, peak, all_done);
                iters_done += o.iters;
            } while (o.duration && steady_clock::now() < deadline);
        }
        double secs = duration<double>(steady_clock::now() - t0).count();
        if (test == Test::Read)
            bad = s.check_dst(size, checked, o.check_all);
        s.ctrl_send({Op::Done, size, 0, 0, 0});
        Ctrl v = s.ctrl_expect(Op::Verified, "the server's data check");
        bad += v.bad;
        checked += v.checked;
        // -b: the server's Writes or Sends into our buffer are complete.
        if (o.bidirectional && test != Test::Read)
            bad += s.check_dst(size, checked, o.check_all);
        if (bad)
            fail(std::to_string(bad) + " of " + std::to_string(checked) +
                 (o.check_all ? " bytes differ from what was sent at size " + std::to_string(size)
                              : " data checks failed at size " + std::to_string(size) +
                                    ": the first or last byte is not what was sent"));
        char row[200];
        if (is_latency(test)) {
            LatStats st = lat_stats(std::move(us));
            std::snprintf(row, sizeof(row),
                          " %-8u %-12u %-10.2f %-10.2f %-12.2f %-10.2f %-12.2f %-10.2f %-10.2f",
                          size, o.iters, st.min, st.max, st.typical, st.avg, st.stdev, st.p99,
                          st.p999);
        } else {
            double msgs = static_cast<double>(iters_done) * o.qps;
            // MB/s of 2^20 bytes, or Gb/s of 10^9 bits.
            const double unit = o.gbits ? 1e9 / 8 : 1024.0 * 1024.0;
            double rate = msgs / secs, pk_bytes = peak.bytes_per_sec();
            // -b: perftest's sum of both ways, each timed on its own side.
            if (o.bidirectional) {
                if (v.ns == 0 || v.msgs == 0)
                    fail("the server reports no stream of its own for -b");
                rate += static_cast<double>(v.msgs) / (static_cast<double>(v.ns) / 1e9);
                pk_bytes += static_cast<double>(v.peak_bytes);
            }
            double avg = rate * size / unit;
            double pk = std::max(pk_bytes / unit, avg);
            std::snprintf(row, sizeof(row), " %-10u %-14llu %-20.2f %-20.2f %-16.6f", size,
                          static_cast<unsigned long long>(iters_done), pk, avg, rate / 1e6);
        }
        std::cout << row << std::endl;
    }
    s.ctrl_send({Op::Bye, 0, 0, 0, 0});
    std::cout << std::string(87, '-') << std::endl;
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options o = parse_args(argc, argv);
    try {
        return o.server ? run_server(o) : run_client(o);
    } catch (const std::exception &e) {
        std::cerr << "viaduct-perf: " << e.what() << "\n";
        return 1;
    }
}
