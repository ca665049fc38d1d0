// Kernels written in the language (`@kernel`, app/lang/kernel_*.cpp) on the simulated GPU: their
// values, the simulator's counters per kernel line, its checks (each proven by a kernel with the
// defect, the workspace unchanged after), wrong launch shapes, last_launch() and Ctrl-C.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "app/lang/error.h"
#include "core/interrupt.h"
#include "tests/lab.h"

using namespace opscope;
using opscope::test::Lab;
using opscope::test::var;

namespace {

// The error a statement must fail with.
std::string fails(Lab& lab, const std::string& code) {
  INFO(code);
  REQUIRE_FALSE(lab.run(code));
  return lab.err;
}

const lang::Value& field(const lang::Value& dict, const std::string& key) {
  REQUIRE(dict.kind() == lang::Value::dict);
  const lang::Value* v = dict.as_dict()->find(lang::Value::Str(key));
  INFO("key " << key);
  REQUIRE(v);
  return *v;
}

// last_launch()'s report, as the script sees it.
lang::Value last_launch(Lab& lab) {
  lab.ok("report_ = last_launch()");
  return *lab.session.interpreter().lookup("report_");
}

// A field of the report's sites at a kernel line and access kind, as text ("4"; "" when none).
std::string site_field(Lab& lab, int line, const std::string& access, const std::string& name) {
  const lang::Value r = last_launch(lab);
  std::string out;
  for (const lang::Value& s : *field(r, "sites").items())
    if (field(s, "line").as_int() == line && field(s, "access").as_str() == access)
      out += (out.empty() ? "" : ", ") + lang::repr(field(s, name));
  return out;
}

const char* kAdd =
    "@kernel\n"
    "def add(A, B, C, n):\n"
    "    i = blockIdx.x * blockDim.x + threadIdx.x\n"
    "    if i < n:\n"
    "        C[i] = A[i] + B[i]\n";

}  // namespace

TEST_CASE("kernel: a map with a guard fills C, and only C", "[kernel]") {
  Lab lab;
  lab.ok(kAdd);
  lab.ok("A = arange(100) * 1.0\nB = ones(100) * 2.0\nC = zeros(100)\nadd[4, 32](A, B, C, 100)");
  const Tensor c = var(lab, "C");
  for (int64_t i = 0; i < 100; ++i) REQUIRE(c.get(i) == Approx(double(i) + 2.0));
  CHECK(var(lab, "A").get(7) == 7.0);  // read-only arguments are not written back
  CHECK(lab.echo("add") == "<kernel add(A, B, C, n)>");
  CHECK(lab.echo("add[4, (8, 4)]") == "<launch add[(4,), (8, 4)]>");
}

TEST_CASE("kernel: 2-D indices, 2-D grids and blocks, float and int arguments", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def fill(C, scale, bias):\n"
      "    row = blockIdx.y * blockDim.y + threadIdx.y\n"
      "    col = blockIdx.x * blockDim.x + threadIdx.x\n"
      "    if row < C.shape[0] and col < C.shape[1]:\n"
      "        C[row, col] = row * scale + col + bias\n"
      "C = zeros(12, 20)\n"
      "fill[(3, 2), (8, 8)](C, 100, 0.5)");
  const Tensor c = var(lab, "C");
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t col = 0; col < 20; ++col) REQUIRE(c.get(r * 20 + col) == Approx(double(r * 100 + col) + 0.5));
}

TEST_CASE("kernel: a block sum in shared memory with barriers, atomic_add and a shfl_xor reduction", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def block_sum(X, out):\n"
      "    s = shared(64)\n"
      "    t = threadIdx.x\n"
      "    s[t] = X[blockIdx.x * 64 + t]\n"
      "    syncthreads()\n"
      "    stride = 32\n"
      "    while stride > 0:\n"
      "        if t < stride:\n"
      "            s[t] += s[t + stride]\n"
      "        syncthreads()\n"
      "        stride = stride // 2\n"
      "    if t == 0:\n"
      "        out[blockIdx.x] = s[0]\n"
      "X = arange(256) * 1.0\nout = zeros(4)\nblock_sum[4, 64](X, out)");
  const Tensor out = var(lab, "out");
  for (int64_t b = 0; b < 4; ++b) CHECK(out.get(b) == Approx(double(64 * b * 64 + 63 * 64 / 2)));

  lab.ok(
      "@kernel\n"
      "def total(X, out, n):\n"
      "    i = blockIdx.x * blockDim.x + threadIdx.x\n"
      "    if i < n:\n"
      "        atomic_add(out, 0, X[i])\n"
      "T = zeros(1)\ntotal[3, 64](X, T, 150)");
  CHECK(var(lab, "T").get(0) == Approx(149.0 * 150 / 2));

  lab.ok(
      "@kernel\n"
      "def warp_sum(X, out):\n"
      "    v = X[threadIdx.x]\n"
      "    m = 16\n"
      "    while m > 0:\n"
      "        v += shfl_xor(v, m)\n"
      "        m = m // 2\n"
      "    out[threadIdx.x] = v\n"
      "W = zeros(32)\nwarp_sum[1, 32](arange(32) * 1.0, W)");
  const Tensor w = var(lab, "W");
  for (int64_t i = 0; i < 32; ++i) REQUIRE(w.get(i) == 496.0);  // every lane holds the warp's sum
}

TEST_CASE("kernel: sectors per request per kernel line: a coalesced row 4, a column 32", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def copy(A, B, C):\n"
      "    tx = threadIdx.x\n"
      "    ty = threadIdx.y\n"
      "    B[ty, tx] = A[ty, tx]\n"  // line 5: a warp reads one row: 128 bytes, 4 sectors
      "    C[ty, tx] = A[tx, ty]\n"  // line 6: a warp reads one column: 32 rows, 32 sectors
      "A = randn(32, 32)\nB = zeros(32, 32)\nC = zeros(32, 32)\ncopy[1, (32, 32)](A, B, C)");
  CHECK(site_field(lab, 5, "load", "sectors_per_request") == "4");
  CHECK(site_field(lab, 6, "load", "sectors_per_request") == "32");
  CHECK(site_field(lab, 6, "store", "sectors_per_request") == "4");
  CHECK(site_field(lab, 5, "load", "requests") == "32");
  CHECK(site_field(lab, 5, "load", "active_lanes") == "32");
  CHECK(site_field(lab, 5, "load", "space") == "'global'");
  CHECK(lab.echo("allclose(C, A.T)") == "True");
}

TEST_CASE("kernel: a shared column read is a 32-way bank conflict, a padded tile 1 wavefront", "[kernel]") {
  Lab lab;
  for (int width : {32, 33}) {
    lab.ok(
        "@kernel\n"
        "def transpose(A, B):\n"
        "    tile = shared((32, " +
        std::to_string(width) +
        "))\n"
        "    tx = threadIdx.x\n"
        "    ty = threadIdx.y\n"
        "    tile[ty, tx] = A[ty, tx]\n"  // line 6: a row of the tile
        "    syncthreads()\n"
        "    B[ty, tx] = tile[tx, ty]\n"  // line 8: a column of the tile
        "A = randn(32, 32)\nB = zeros(32, 32)\ntranspose[1, (32, 32)](A, B)");
    INFO("tile width " << width);
    CHECK(site_field(lab, 8, "load", "wavefronts_per_request") == (width == 32 ? "32" : "1"));
    CHECK(site_field(lab, 6, "store", "wavefronts_per_request") == "1");
    CHECK(site_field(lab, 8, "load", "space") == "'shared'");
    CHECK(lab.echo("allclose(B, A.T)") == "True");
  }
}

// The worst request's detail (the "worst" dict of a site) as text: "bank=3 ways=32 lanes=0–31 first=Bt[0, 3]".
std::string worst_text(Lab& lab, int line, const std::string& access, std::initializer_list<const char*> keys) {
  const lang::Value r = last_launch(lab);
  std::string out;
  for (const lang::Value& s : *field(r, "sites").items()) {
    if (field(s, "line").as_int() != line || field(s, "access").as_str() != access) continue;
    const lang::Value& w = field(s, "worst");
    for (const char* k : keys) {
      const lang::Value& v = field(w, k);
      out += (out.empty() ? "" : " ") + std::string(k) + "=" +
             (v.kind() == lang::Value::string ? v.as_str() : lang::repr(v));
    }
  }
  return out;
}

TEST_CASE("kernel: a site's worst request names its bank, its lanes and the elements they read", "[kernel]") {
  Lab lab;
  // Lanes tx = 0..31 of warp ty read Bt[tx, 3]: word W·tx + 3, in bank (W·tx + 3) % 32.
  //  W = 32: bank 3 for every lane, 32 words, a 32-way conflict of lanes 0–31.
  //  W = 33: bank (tx + 3) % 32, one word each; the lowest bank, 0, is lane 29's.
  //  W = 34: bank (2·tx + 3) % 32, the odd banks twice each; the lowest, 1, is lanes 15 and 31's.
  const std::pair<int, const char*> cases[] = {
      {32,
       "bank=3 bank_words=32 ways=32 lanes_text=0\xe2\x80\x93"
       "31 first=Bt[0, 3] last=Bt[31, 3]"},
      {33, "bank=0 bank_words=1 ways=1 lanes_text=29 first=Bt[29, 3] last=Bt[29, 3]"},
      {34, "bank=1 bank_words=2 ways=2 lanes_text=15, 31 first=Bt[15, 3] last=Bt[31, 3]"},
  };
  for (const auto& [width, want] : cases) {
    INFO("tile width " << width);
    lab.ok(
        "@kernel\n"
        "def column(A, out):\n"
        "    Bt = shared((32, " +
        std::to_string(width) +
        "))\n"
        "    tx = threadIdx.x\n"
        "    ty = threadIdx.y\n"
        "    Bt[ty, tx] = A[ty, tx]\n"  // line 6: a row of the tile: 32 banks
        "    syncthreads()\n"
        "    out[ty, tx] = Bt[tx, 3]\n"  // line 8: column 3 of the tile
        "A = randn(32, 32)\nout = zeros(32, 32)\ncolumn[1, (32, 32)](A, out)");
    CHECK(worst_text(lab, 8, "load", {"bank", "bank_words", "ways", "lanes_text", "first", "last"}) == want);
    CHECK(worst_text(lab, 8, "load", {"block", "warp"}) == "block=[0, 0, 0] warp=0");
    CHECK(worst_text(lab, 6, "store", {"ways", "lanes_text", "first", "last"}) ==
          "ways=1 lanes_text=0 first=Bt[0, 0] last=Bt[0, 0]");  // bank 0 holds lane 0's word only
  }
  const lang::Value r = last_launch(lab);
  for (const lang::Value& s : *field(r, "sites").items())
    if (field(s, "line").as_int() == 8 && field(s, "access").as_str() == "load")
      CHECK(field(field(s, "worst"), "lanes").items()->size() == 2);
}

TEST_CASE("kernel: a global site's worst request names its sectors, lanes, stride and span", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def copy(A, B, C):\n"
      "    tx = threadIdx.x\n"
      "    ty = threadIdx.y\n"
      "    B[ty, tx] = A[ty, tx]\n"  // line 5: a row: lanes 4 bytes apart, 128 bytes, 4 sectors
      "    if tx < 20:\n"
      "        C[ty, tx] = A[tx, ty]\n"  // line 7: a column: rows 128 bytes apart, 20 lanes, 20 sectors
      "A = randn(32, 32)\nB = zeros(32, 32)\nC = zeros(32, 32)\ncopy[1, (32, 32)](A, B, C)");
  CHECK(worst_text(lab, 5, "load", {"sectors", "stride_bytes", "span_bytes", "lanes_text", "first", "last"}) ==
        "sectors=4 stride_bytes=4 span_bytes=128 lanes_text=0\xe2\x80\x93"
        "31 first=A[0, 0] last=A[0, 31]");
  // 19 steps of 128 bytes plus the last float: 19 · 128 + 4 = 2436 bytes.
  CHECK(worst_text(lab, 7, "load", {"sectors", "stride_bytes", "span_bytes", "lanes_text", "first", "last"}) ==
        "sectors=20 stride_bytes=128 span_bytes=2436 lanes_text=0\xe2\x80\x93"
        "19 first=A[0, 0] last=A[19, 0]");
  CHECK(worst_text(lab, 7, "load", {"first_offset", "last_offset"}) == "first_offset=0 last_offset=2432");
  CHECK(worst_text(lab, 7, "store", {"sectors", "stride_bytes", "first", "last"}) ==
        "sectors=3 stride_bytes=4 first=C[0, 0] last=C[0, 19]");  // 80 bytes from offset 0: sectors 0, 1, 2
}

TEST_CASE("kernel: a missing barrier is a shared-memory race at both lines, the workspace unchanged", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def reverse(X, out):\n"
      "    s = shared(64)\n"
      "    t = threadIdx.x\n"
      "    s[t] = X[t]\n"  // line 5
      "    out[t] = s[63 - t]\n"  // line 6: no syncthreads() before it
      "X = arange(64) * 1.0\nout = zeros(64)");
  // Lanes run one after another: thread 31 reads s[32] (line 6) before thread 32 writes it (line 5).
  const std::string err = fails(lab, "reverse[1, 64](X, out)");
  CHECK(err.find("<test>:5:") != std::string::npos);
  CHECK(err.find("write-after-read hazard in shared memory: kernel reverse, block (0,0,0), thread (32,0,0) writes") !=
        std::string::npos);
  CHECK(err.find("at <test>:5; thread (31,0,0) read it at <test>:6") != std::string::npos);
  CHECK(var(lab, "out").get(5) == 0.0);  // nothing written back
  CHECK(lab.echo("len(last_launch()['hazards'])") == "1");
  // With the barrier the same kernel runs.
  lab.ok(
      "@kernel\n"
      "def reverse(X, out):\n"
      "    s = shared(64)\n"
      "    t = threadIdx.x\n"
      "    s[t] = X[t]\n"
      "    syncthreads()\n"
      "    out[t] = s[63 - t]\n"
      "reverse[1, 64](X, out)");
  CHECK(var(lab, "out").get(5) == 58.0);
}

TEST_CASE("kernel: an out-of-bounds access fails at its line with block and thread", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def add(A, B, C, n):\n"
      "    i = blockIdx.x * blockDim.x + threadIdx.x\n"
      "    C[i] = A[i] + B[i]\n"  // no guard: 128 threads for 100 elements
      "A = ones(100)\nB = ones(100)\nC = zeros(100)");
  const std::string err = fails(lab, "add[4, 32](A, B, C, 100)");
  CHECK(err.find("<test>:4:") != std::string::npos);
  CHECK(err.find("out-of-bounds global load of A: index 100 on axis 0 of shape (100)") != std::string::npos);
  CHECK(err.find("kernel add, block (3,0,0), thread (4,0,0)") != std::string::npos);
  CHECK(lab.echo("C.sum().item()") == "0.0");  // the lanes that ran wrote nothing the student sees
}

TEST_CASE("kernel: a barrier inside a branch some threads skip is a divergent barrier", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def half(X):\n"
      "    if threadIdx.x < 16:\n"
      "        syncthreads()\n"  // line 4
      "    X[threadIdx.x] = 1.0\n"
      "    syncthreads()\n"  // line 6
      "X = zeros(64)");
  const std::string err = fails(lab, "half[1, 64](X)");
  CHECK(err.find("divergent syncthreads()") != std::string::npos);
  CHECK(err.find("<test>:4") != std::string::npos);
  CHECK(err.find("<test>:6") != std::string::npos);
  CHECK(lab.echo("X.sum().item()") == "0.0");
}

TEST_CASE("kernel: launches of the wrong shape say so", "[kernel]") {
  Lab lab;
  lab.ok(kAdd);
  lab.ok("A = ones(8)\nB = ones(8)\nC = zeros(8)");
  CHECK(fails(lab, "add[1, 2048](A, B, C, 8)").find("at most 1024 threads, not 2048") != std::string::npos);
  CHECK(fails(lab, "add[1, (32, 32, 2)](A, B, C, 8)").find("at most 1024 threads") != std::string::npos);
  CHECK(fails(lab, "add[(1, 1, 1, 1), 32](A, B, C, 8)").find("1 to 3 sizes (x, y, z), not 4") != std::string::npos);
  CHECK(fails(lab, "add[0, 32](A, B, C, 8)").find("at least 1, not 0") != std::string::npos);
  CHECK(fails(lab, "add[1, -4](A, B, C, 8)").find("at least 1, not -4") != std::string::npos);
  CHECK(fails(lab, "add[1](A, B, C, 8)").find("a launch takes [blocks, threads]") != std::string::npos);
  CHECK(fails(lab, "add[1, 2.5](A, B, C, 8)")
            .find("a launch's threads is an int or a tuple of up to 3 ints, not float") != std::string::npos);
  CHECK(fails(lab, "add(A, B, C, 8)").find("launched with its grid: add[blocks, threads]") != std::string::npos);
  CHECK(fails(lab, "add[1, 8](A, B, C)").find("add takes 4 arguments (A, B, C, n), not 3") != std::string::npos);
  CHECK(fails(lab, "add[1, 8](A, B, 'C', 8)").find("a kernel takes tensors and numbers") != std::string::npos);
  CHECK(lab.echo("C.sum().item()") == "0.0");
}

TEST_CASE("kernel: what a kernel cannot do fails at its line when launched", "[kernel]") {
  Lab lab;
  lab.ok(
      "@kernel\n"
      "def bad(A):\n"
      "    x = [1, 2]\n"
      "A = zeros(4)");
  std::string err = fails(lab, "bad[1, 4](A)");
  CHECK(err.find("<test>:3:") != std::string::npos);
  CHECK(err.find("kernel bad: a kernel computes with numbers only") != std::string::npos);
  lab.ok(
      "@kernel\n"
      "def bad2(A):\n"
      "    A[threadIdx.x] = nope\n");
  CHECK(fails(lab, "bad2[1, 4](A)").find("name 'nope' is not defined") != std::string::npos);
  lab.ok(
      "TILE = 4\n"
      "@kernel\n"
      "def good(A):\n"
      "    A[threadIdx.x] = TILE * 1.5 + sqrt(4.0) + min(threadIdx.x, 2) + max(0.0, -1.0)\n"
      "good[1, 4](A)");
  CHECK(var(lab, "A").get(3) == 10.0);
}

TEST_CASE("kernel: last_launch() gives the simulator's report, for a kernel and for a built-in op on sim", "[kernel]") {
  Lab lab;
  lab.ok(kAdd);
  lab.ok("A = ones(100)\nB = ones(100)\nC = zeros(100)\nadd[4, 32](A, B, C, 100)\nr = last_launch()");
  CHECK(lab.echo("r['kernel']") == "'add'");
  CHECK(lab.echo("r['grid']") == "[4, 1, 1]");
  CHECK(lab.echo("r['block']") == "[32, 1, 1]");
  CHECK(lab.echo("r['hazards']") == "[]");
  CHECK(lab.echo("r['flops']") == "100");  // one float add per lane that passes the guard
  CHECK(lab.echo("r['dram_bytes']") == "1248");  // 100 floats read twice and written once: 13 sectors each (12 + 1)
  CHECK(lab.echo("len(r['sites'])") == "3");
  CHECK(site_field(lab, 5, "load", "file") == "'<test>', '<test>'");
  CHECK(site_field(lab, 5, "load", "requests") == "4, 4");
  CHECK(site_field(lab, 5, "store", "active_lanes") == "25");  // 100 of 128 lanes pass the guard
  CHECK(site_field(lab, 5, "store", "wavefronts_per_request") == "0");
  // A built-in op on sim tensors: its kernels' report, through the same converter.
  lab.ok("a = randn(32, 32).to('sim')\nb = randn(32, 32).to('sim')\nc = matmul(a, b, algo='tiled')");
  const lang::Value r = last_launch(lab);
  CHECK(field(r, "kernel").as_str().find("tiled") != std::string::npos);
  CHECK(field(field(r, "sites").items()->at(0), "file").as_str() == "matmul.cu");
  CHECK(field(r, "dram_bytes").as_int() > 0);
  // last_launches(): every kernel of the last op, in order, the last one being last_launch().
  lab.ok("q = randn(1, 8, 4).to('sim')\no = scaled_dot_product_attention(q, q, q, algo='naive')");
  CHECK(lab.echo("len(last_launches())") == "3");  // scores, softmax, P·V
  CHECK(lab.echo("last_launches()[2]['kernel'] == last_launch()['kernel']") == "True");
  CHECK(lab.echo("last_launches()[0]['simulated']") == "True");
}

// A kernel whose launches are long only for their number of blocks (the interrupt tests).
const char* kSpin =
    "@kernel\n"
    "def spin(X):\n"
    "    X[0] = 1.0\n"
    "X = zeros(1)";

TEST_CASE("kernel: Ctrl-C stops a launch of a million blocks and undoes the statement", "[kernel]") {
  Lab lab;
  lab.ok(kSpin);
  interrupt::clear();
  std::thread raiser([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    interrupt::request();
  });
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = lab.run("spin[1000000, 1024](X)");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  raiser.join();
  interrupt::clear();
  CHECK_FALSE(ok);
  CHECK(lab.err.find("interrupted at") != std::string::npos);
  CHECK(s < 5.0);
  CHECK(var(lab, "X").get(0) == 0.0);
}

// The window's Interrupt: a frame drawn by the idle hook during a launch reads the button. Here
// the hook stands for the window: its third call presses Interrupt. Without the simulator's turn
// between blocks the hook is never called in a launch, and the launch runs to its end.
TEST_CASE("kernel: the idle hook runs between a launch's blocks, and Interrupt in it stops the launch", "[kernel]") {
  Lab lab;
  lab.ok(kSpin);
  interrupt::clear();
  int calls = 0;
  interrupt::set_idle_hook(
      [&] {
        if (++calls == 3) interrupt::request();
      },
      0.0);
  const bool ok = lab.run("spin[200000, 32](X)");
  interrupt::set_idle_hook({});
  interrupt::clear();
  CHECK_FALSE(ok);
  CHECK(calls == 3);
  CHECK(lab.err.find("interrupted at") != std::string::npos);
  CHECK(var(lab, "X").get(0) == 0.0);  // the launch's writes never reach the tensor
}

TEST_CASE("kernel: the idle hook stops a built-in op's launch on sim too, the workspace unchanged", "[kernel]") {
  Lab lab;
  lab.ok("A = randn(128, 128).to(\"sim\")\nC = zeros(1)");
  interrupt::clear();
  int calls = 0;
  interrupt::set_idle_hook(
      [&] {
        if (++calls == 2) interrupt::request();
      },
      0.0);
  const bool ok = lab.run("C = matmul(A, A, algo=\"naive\")");  // 8 × 8 blocks of 16 × 16
  interrupt::set_idle_hook({});
  interrupt::clear();
  CHECK_FALSE(ok);
  CHECK(calls == 2);
  CHECK(lab.err.find("interrupted") != std::string::npos);
  CHECK(lab.echo("C.shape") == "[1]");
}

// `x /= 2` makes x a float, as `x = x / 2` does (the type pass once missed it: the lane read a
// missing expression and the program crashed).
TEST_CASE("kernel: x /= 2 turns an int variable into a float", "[kernel]") {
  Lab lab;
  lab.ok(
      "A = zeros(1)\n"
      "@kernel\n"
      "def halve(A):\n"
      "    x = 7\n"
      "    x /= 2\n"
      "    A[0] = x\n"
      "halve[1, 1](A)");
  CHECK(var(lab, "A").get(0) == 3.5);
}
