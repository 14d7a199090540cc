// SPDX-License-Identifier: GPL-2.0
// viaduct-bench: viaduct against siw in the same VM run.
//
//   viaduct-bench mr    [--viaduct DEV] [--siw DEV] [--mr-scale F]
//   viaduct-bench post  [--viaduct DEV] [--siw-server ADDR] [--port N]
//                       [--iters N] [--batches N] [--bytes N]
//   viaduct-bench serve --bind ADDR [--port N] [--ready FILE]
//   viaduct-bench --help
//
// "mr" times memory registration and deregistration of anonymous,
// populated memory: viaduct's REG_MR/DEREG_MR ioctls against
// ibv_reg_mr/ibv_dereg_mr on an siw device. "post" times posting one work
// request and spinning until its completion arrives, and batches of 64:
// viaduct on its flush path (QP in Error: the kernel takes the WQE and
// completes it FLUSHED, nothing goes on the wire) with the DOORBELL ioctl
// and with the polled doorbell, against siw posting RDMA Writes (64 bytes by
// default) on a connected RC pair to a "serve" process in another network
// namespace. siw copies payloads of up to 32 bytes into the frame header,
// from user memory only while it believes it runs in the posting system
// call; its transmit thread, which takes over every 100 segments, can run
// while that flag is still set, and the WR then fails with a local QP
// operation error (Documentation/performance.rst). Hence 64 bytes.
// Every time is a median; nothing sleeps while it is measured. The results
// are tables on stdout; nothing is pass or fail but the steps themselves.
// Exit status: 0 done, 1 a step failed, 2 usage error.
#include <array>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sys/utsname.h>
#include <thread>

#include "common.hpp"
#include "raw.hpp"
#include "table.hpp"
#include "verbs.hpp"

using namespace vdbench;

namespace {

constexpr uint32_t batch_size = 64;
constexpr uint32_t warmup = 100;

struct Options {
    std::string cmd;
    std::string viaduct;
    std::string siw;
    std::string siw_server;
    std::string bind;
    std::string ready;
    uint16_t port = 19875;
    uint32_t iters = 10000;
    uint32_t batches = 1000;
    uint32_t bytes = 64;
    double mr_scale = 1.0;
};

void print_usage(std::ostream &os) {
    os << "usage: viaduct-bench mr    [--viaduct DEV] [--siw DEV] [--mr-scale F]\n"
       << "       viaduct-bench post  [--viaduct DEV] [--siw-server ADDR] [--port N]\n"
       << "                           [--iters N] [--batches N] [--bytes N]\n"
       << "       viaduct-bench serve --bind ADDR [--port N] [--ready FILE]\n"
       << "\n"
       << "mr:    memory registration, 4 KiB to 256 MiB: viaduct REG_MR/DEREG_MR on\n"
       << "       device DEV against ibv_reg_mr/ibv_dereg_mr on the RDMA device DEV\n"
       << "       (siw); --mr-scale scales the iteration counts.\n"
       << "post:  post + poll of signaled work requests: viaduct on its flush path\n"
       << "       (QP in Error, DOORBELL ioctl and polled doorbell) against siw RDMA\n"
       << "       Writes of N bytes (at most 4096) to a 'serve' process at ADDR.\n"
       << "serve: the siw peer of 'post'; writes 'listening' to FILE when ready.\n"
       << "Give at least one of the two sides to mr and post. Defaults: --port 19875,\n"
       << "--iters 10000, --batches 1000 (of 64 WRs), --bytes 64, --mr-scale 1.\n";
}

[[noreturn]] void usage(const std::string &why) {
    std::cerr << "viaduct-bench: " << why << "\n";
    print_usage(std::cerr);
    std::exit(2);
}

uint64_t number(const std::string &s, uint64_t max) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end || errno || v == 0 || v > max)
        usage("bad number " + s);
    return v;
}

double fraction(const std::string &s) {
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end || errno || !(v > 0 && v <= 100))
        usage("--mr-scale must be a number in (0, 100]: " + s);
    return v;
}

Options parse(int argc, char **argv) {
    Options o;
    if (argc < 2)
        usage("no command");
    o.cmd = argv[1];
    if (o.cmd == "--help" || o.cmd == "-h") {
        print_usage(std::cout);
        std::exit(0);
    }
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage("missing value after " + a);
        std::string v = argv[++i];
        if (a == "--viaduct")
            o.viaduct = v;
        else if (a == "--siw")
            o.siw = v;
        else if (a == "--siw-server")
            o.siw_server = v;
        else if (a == "--bind")
            o.bind = v;
        else if (a == "--ready")
            o.ready = v;
        else if (a == "--port")
            o.port = static_cast<uint16_t>(number(v, 65535));
        else if (a == "--iters")
            o.iters = static_cast<uint32_t>(number(v, 10'000'000));
        else if (a == "--bytes")
            o.bytes = static_cast<uint32_t>(number(v, 4096));
        else if (a == "--batches")
            o.batches = static_cast<uint32_t>(number(v, 1'000'000));
        else if (a == "--mr-scale")
            o.mr_scale = fraction(v);
        else
            usage("unknown option " + a);
    }
    if (o.cmd != "mr" && o.cmd != "post" && o.cmd != "serve")
        usage("unknown command " + o.cmd);
    if (o.cmd == "serve" && o.bind.empty())
        usage("serve needs --bind");
    if (o.cmd == "mr" && o.viaduct.empty() && o.siw.empty())
        usage("mr needs --viaduct or --siw (or both)");
    if (o.cmd == "post" && o.viaduct.empty() && o.siw_server.empty())
        usage("post needs --viaduct or --siw-server (or both)");
    return o;
}

std::string opt_us(std::optional<double> ns, int decimals) {
    return ns ? fmt(*ns / 1000.0, decimals) : "-";
}

std::string ratio(std::optional<double> a, std::optional<double> b) {
    return a && b && *b > 0 ? fmt(*a / *b, 2) : "-";
}

// The line of /sys/kernel/mm/transparent_hugepage/enabled, which decides
// whether the registered buffers are backed by huge pages.
std::string thp_mode() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(f, line))
        return "not available";
    return line;
}

void print_setting() {
    utsname u{};
    ::uname(&u);
    std::cout << "# kernel " << u.release << ", " << std::thread::hardware_concurrency()
              << " cpus, transparent huge pages: " << thp_mode()
              << "\n# times are medians of spinning loops (nothing sleeps)\n";
}

// ------------------------------------------------------------------------
// Memory registration

struct MrSample {
    std::vector<uint64_t> reg, dereg;
};

void bench_mr(const Options &o) {
    struct Size {
        uint64_t bytes;
        uint32_t iters;
    };
    static constexpr std::array<Size, 5> sizes{{{4ULL << 10, 2001},
                                                {64ULL << 10, 1001},
                                                {1ULL << 20, 401},
                                                {16ULL << 20, 61},
                                                {256ULL << 20, 21}}};
    std::optional<raw::Context> vd;
    std::optional<verbs::Device> siw;
    if (!o.viaduct.empty())
        vd.emplace(o.viaduct);
    if (!o.siw.empty())
        siw.emplace(o.siw);
    constexpr uint32_t vd_access =
        VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE | VIADUCT_ACCESS_REMOTE_READ;
    constexpr int siw_access =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    const auto page = static_cast<double>(::sysconf(_SC_PAGESIZE));

    std::cout << "\nMemory registration: register, then deregister, one region of anonymous "
                 "populated memory\n"
              << "(viaduct: REG_MR/DEREG_MR ioctls on /dev/viaduct " << o.viaduct
              << "; siw: ibv_reg_mr/ibv_dereg_mr on " << o.siw
              << "; both pin the pages; same buffer, runs interleaved)\n";
    Table t({"size", "iters", "viaduct reg[us]", "siw reg[us]", "reg vd/siw", "viaduct dereg[us]",
             "siw dereg[us]", "dereg vd/siw", "viaduct reg[ns/page]", "siw reg[ns/page]"});
    for (const Size &s : sizes) {
        const auto iters = std::max<uint32_t>(3, static_cast<uint32_t>(s.iters * o.mr_scale) | 1U);
        Mapping buf = Mapping::anonymous_populated(s.bytes);
        MrSample a, b;
        auto run_vd = [&](MrSample *out) {
            uint64_t t0 = now_ns();
            uint32_t h = vd->reg_mr(buf.as(), s.bytes, vd_access).handle;
            uint64_t t1 = now_ns();
            vd->dereg_mr(h);
            uint64_t t2 = now_ns();
            if (out) {
                out->reg.push_back(t1 - t0);
                out->dereg.push_back(t2 - t1);
            }
        };
        auto run_siw = [&](MrSample *out) {
            uint64_t t0 = now_ns();
            ibv_mr *mr = siw->reg_mr(buf.as(), s.bytes, siw_access);
            uint64_t t1 = now_ns();
            verbs::Device::dereg_mr(mr);
            uint64_t t2 = now_ns();
            if (out) {
                out->reg.push_back(t1 - t0);
                out->dereg.push_back(t2 - t1);
            }
        };
        // One untimed round each, then alternate who goes first.
        if (vd)
            run_vd(nullptr);
        if (siw)
            run_siw(nullptr);
        for (uint32_t i = 0; i < iters; i++) {
            if (vd && i % 2 == 0)
                run_vd(&a);
            if (siw)
                run_siw(&b);
            if (vd && i % 2 == 1)
                run_vd(&a);
        }
        std::optional<double> vr, vdr, sr, sdr;
        if (vd) {
            vr = median(a.reg);
            vdr = median(a.dereg);
        }
        if (siw) {
            sr = median(b.reg);
            sdr = median(b.dereg);
        }
        const double pages = static_cast<double>(s.bytes) / page;
        const int dec = s.bytes >= (16ULL << 20) ? 0 : 1;
        t.add({fmt_size(s.bytes), fmt_int(iters), opt_us(vr, dec), opt_us(sr, dec), ratio(vr, sr),
               opt_us(vdr, dec), opt_us(sdr, dec), ratio(vdr, sdr), vr ? fmt(*vr / pages, 0) : "-",
               sr ? fmt(*sr / pages, 0) : "-"});
    }
    t.print(std::cout);
}

// ------------------------------------------------------------------------
// Post + poll

struct PostResult {
    std::string what;
    uint32_t iters = 0;
    double one_median = 0; // ns
    double one_p90 = 0;
    double batch_per_wr = 0; // ns, median over batches
    std::string syscalls;    // doorbell system calls per WR, one-WR loop
};

PostResult bench_viaduct(const raw::Context &ctx, bool polled, const Options &o) {
    raw::Cq cq(ctx, 4 * batch_size);
    raw::FlushQp qp(ctx, cq, 2 * batch_size, polled);
    Mapping buf = Mapping::anonymous_populated(4096);
    // The flush path checks no STag, but the WQE is a complete one: a
    // registered source and, as the target, the same buffer.
    const auto mr =
        ctx.reg_mr(buf.as(), 4096, VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE);
    viaduct_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(buf.as());
    sge.length = o.bytes;
    sge.stag = mr.stag;
    uint64_t wr_id = 0;
    uint64_t doorbells = 0;
    viaduct_cqe e{};

    auto reap = [&](uint64_t first, uint32_t n) {
        SpinDeadline deadline;
        for (uint32_t got = 0; got < n;) {
            if (!cq.poll(e)) {
                deadline.check("a viaduct CQE");
                continue;
            }
            if (e.status != VIADUCT_WC_FLUSHED || e.wr_id != first + got)
                throw Error("unexpected CQE: status " + std::to_string(e.status) + ", wr_id " +
                            std::to_string(e.wr_id));
            got++;
        }
    };
    auto post = [&](uint32_t n) {
        SpinDeadline deadline;
        while (!qp.has_room(n))
            deadline.check("room in the viaduct SQ");
        for (uint32_t i = 0; i < n; i++)
            qp.write_sqe(wr_id + i, sge, mr.stag, sge.addr);
        return qp.publish();
    };

    for (uint32_t i = 0; i < warmup; i++) {
        post(1);
        reap(wr_id, 1);
        wr_id++;
    }
    std::vector<uint64_t> one, batch;
    one.reserve(o.iters);
    for (uint32_t i = 0; i < o.iters; i++) {
        uint64_t t0 = now_ns();
        if (post(1))
            doorbells++;
        reap(wr_id, 1);
        one.push_back(now_ns() - t0);
        wr_id++;
    }
    for (uint32_t b = 0; b < o.batches; b++) {
        uint64_t t0 = now_ns();
        post(batch_size);
        reap(wr_id, batch_size);
        batch.push_back((now_ns() - t0) / batch_size);
        wr_id += batch_size;
    }
    ctx.dereg_mr(mr.handle);
    PostResult r;
    r.what = polled ? "viaduct flush, polled doorbell" : "viaduct flush, DOORBELL ioctl";
    r.iters = o.iters;
    r.one_median = median(one);
    r.one_p90 = quantile(one, 0.9);
    r.batch_per_wr = median(batch);
    r.syscalls = fmt(static_cast<double>(doorbells) / o.iters, 3);
    return r;
}

PostResult bench_siw(const Options &o) {
    verbs::WritePair pair(o.siw_server, o.port, 2 * batch_size, o.bytes);
    uint64_t wr_id = 0;
    for (uint32_t i = 0; i < warmup; i++) {
        pair.post(wr_id++, 1);
        pair.wait(1);
    }
    std::vector<uint64_t> one, batch;
    one.reserve(o.iters);
    for (uint32_t i = 0; i < o.iters; i++) {
        uint64_t t0 = now_ns();
        pair.post(wr_id++, 1);
        pair.wait(1);
        one.push_back(now_ns() - t0);
    }
    for (uint32_t b = 0; b < o.batches; b++) {
        uint64_t t0 = now_ns();
        pair.post(wr_id, batch_size);
        pair.wait(batch_size);
        batch.push_back((now_ns() - t0) / batch_size);
        wr_id += batch_size;
    }
    PostResult r;
    r.what = "siw RDMA Write " + std::to_string(o.bytes) + " B, RC over veth";
    r.iters = o.iters;
    r.one_median = median(one);
    r.one_p90 = quantile(one, 0.9);
    r.batch_per_wr = median(batch);
    // libsiw rings its write() doorbell when the SQ was idle, which it
    // always is here: the previous WR has completed.
    r.syscalls = "1 (write)";
    return r;
}

void bench_post(const Options &o) {
    std::vector<PostResult> rows;
    if (!o.viaduct.empty()) {
        raw::Context ctx(o.viaduct);
        rows.push_back(bench_viaduct(ctx, false, o));
        rows.push_back(bench_viaduct(ctx, true, o));
    }
    if (!o.siw_server.empty())
        rows.push_back(bench_siw(o));

    std::cout << "\nPost + poll: post signaled work requests, spin on the completion queue "
                 "until every completion is in\n"
              << "viaduct: " << o.bytes
              << "-byte RDMA Write SQE written into the mapped SQ, producer "
                 "store-released, doorbell (DOORBELL\n"
              << "  ioctl, or the device's polling worker); the QP is in Error, so the kernel "
                 "takes, copies and\n"
              << "  validates the WQE and completes it FLUSHED: intake + completion path, "
                 "nothing goes on the wire.\n"
              << "siw: ibv_post_send of a " << o.bytes
              << "-byte RDMA Write on a connected RC QP to "
              << (o.siw_server.empty() ? "-" : o.siw_server)
              << " (another netns, veth):\n"
                 "  libsiw writes the SQE into its mapped SQ and rings a write() doorbell; siw "
                 "sends in that call\n"
                 "  and completes once the data is handed to TCP. The real data path, "
                 "against viaduct's flush path.\n"
              << "1 WR: post one, poll until its CQE; batch: post " << batch_size
              << " (one doorbell), poll until all " << batch_size << " CQEs are in.\n";
    Table t({"path", "iters", "1 WR median[ns]", "1 WR p90[ns]", "doorbell calls/WR",
             "batch " + std::to_string(batch_size) + " [ns/WR]",
             "batch " + std::to_string(batch_size) + " [K WR/s]"});
    for (const auto &r : rows)
        t.add({r.what, fmt_int(r.iters), fmt(r.one_median, 0), fmt(r.one_p90, 0), r.syscalls,
               fmt(r.batch_per_wr, 0), fmt(1e6 / r.batch_per_wr, 1)});
    t.print(std::cout);
    if (rows.size() == 3) {
        const PostResult &siw = rows[2];
        for (size_t i = 0; i < 2; i++)
            std::cout << "siw / " << rows[i].what << ": 1 WR "
                      << fmt(siw.one_median / rows[i].one_median, 2) << "x, batch "
                      << fmt(siw.batch_per_wr / rows[i].batch_per_wr, 2) << "x\n";
    }
}

} // namespace

int main(int argc, char **argv) {
    const Options o = parse(argc, argv);
    try {
        if (o.cmd == "serve") {
            verbs::serve(o.bind, o.port, o.ready);
            return 0;
        }
        print_setting();
        if (o.cmd == "mr")
            bench_mr(o);
        else
            bench_post(o);
        std::cout.flush();
        return 0;
    } catch (const std::exception &ex) {
        std::cout.flush();
        std::cerr << "viaduct-bench " << o.cmd << ": " << ex.what() << "\n";
        return 1;
    }
}
