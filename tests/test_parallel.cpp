// The thread pool (core/parallel.h) and the CPU kernel-set switch (core/cpu_isa.h): every chunk
// runs once, chunk boundaries do not depend on the thread count, bodies cannot allocate,
// errors come back to the caller, nested loops run inline.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/cpu_isa.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "core/workspace.h"

using namespace opscope;

TEST_CASE("parallel_for runs every chunk exactly once, with boundaries fixed by size and grain", "[core]") {
  for (int threads : {1, 2, 5}) {
    NumThreadsScope nt(threads);
    std::vector<std::atomic<int>> hits(10007);
    std::mutex mu;
    std::set<std::pair<int64_t, int64_t>> chunks;
    parallel_for(10007, 1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
      std::lock_guard<std::mutex> lock(mu);
      chunks.insert({b, e});
    });
    for (auto& h : hits) REQUIRE(h.load() == 1);
    REQUIRE(chunks.size() == 11);
    REQUIRE(chunks.begin()->second == 1000);
    REQUIRE(chunks.rbegin()->first == 10000);
    REQUIRE(chunks.rbegin()->second == 10007);
  }
}

TEST_CASE("parallel_for: a per-chunk reduction gives the same bits for any thread count", "[core]") {
  std::vector<float> x(1 << 18);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f / static_cast<float>(1 + (i * 7919) % 1000);
  auto sum_with = [&](int threads) {
    NumThreadsScope nt(threads);
    const int64_t grain = 4096, chunks = static_cast<int64_t>(x.size()) / grain;
    std::vector<float> partial(chunks);
    parallel_for(static_cast<int64_t>(x.size()), grain, [&](int64_t b, int64_t e) {
      float s = 0;
      for (int64_t i = b; i < e; ++i) s += x[i];
      partial[b / grain] = s;
    });
    float total = 0;
    for (float p : partial) total += p;
    return total;
  };
  const float one = sum_with(1);
  for (int t : {2, 3, 8}) REQUIRE(sum_with(t) == one);
}

TEST_CASE("parallel_for uses other threads when asked to", "[core]") {
  NumThreadsScope nt(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Chunks that take a while, so the workers wake up before the caller has done them all.
  parallel_for(64, 1, [&](int64_t, int64_t) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
    while (std::chrono::steady_clock::now() < until) {}
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  REQUIRE(ids.size() >= 2);
  REQUIRE(ids.count(std::this_thread::get_id()) == 1);  // the caller takes part
}

TEST_CASE("parallel_for: bodies run inside the region, nested loops inline, errors reach the caller", "[core]") {
  NumThreadsScope nt(4);
  REQUIRE_FALSE(in_parallel_region());
  std::atomic<int> inner{0}, outside{0};
  parallel_for(8, 1, [&](int64_t, int64_t) {
    if (!in_parallel_region()) outside++;
    parallel_for(10, 2, [&](int64_t b, int64_t e) { inner += static_cast<int>(e - b); });
    if (!in_parallel_region()) outside++;  // the nested loop left the flag as it was
  });
  REQUIRE(inner == 80);
  REQUIRE(outside == 0);
  REQUIRE_FALSE(in_parallel_region());
  REQUIRE_THROWS_WITH(parallel_for(100, 1,
                                   [&](int64_t b, int64_t) {
                                     if (b == 37) throw Error("chunk 37 failed");
                                   }),
                      "chunk 37 failed");
  // The pool is usable after a failed loop.
  std::atomic<int64_t> n{0};
  parallel_for(1000, 10, [&](int64_t b, int64_t e) { n += e - b; });
  REQUIRE(n == 1000);
}

TEST_CASE("a parallel body that allocates gets an error: the memory tracker stays single-threaded", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NumThreadsScope nt(2);
  const int64_t live = ws.tracker().live_total();
  REQUIRE_THROWS_WITH(parallel_for(4, 1, [&](int64_t, int64_t) { Tensor::empty({16}); }),
                      Catch::Contains("allocated memory inside a parallel loop"));
  REQUIRE(ws.tracker().live_total() == live);
  Tensor ok = Tensor::empty({16});  // outside the loop: fine
  REQUIRE(ws.tracker().live_total() > live);
}

TEST_CASE("thread count: default from the machine or OPSCOPE_NUM_THREADS, bounds checked", "[core]") {
  REQUIRE(hardware_threads() >= 1);
  REQUIRE(num_threads() >= 1);
  REQUIRE_THROWS_WITH(set_num_threads(0), Catch::Contains("cannot use 0 threads"));
  REQUIRE_THROWS_WITH(set_num_threads(kMaxThreads + 1), Catch::Contains("cannot use 65 threads"));
  {
    NumThreadsScope nt(3);
    REQUIRE(num_threads() == 3);
  }
  setenv("OPSCOPE_NUM_THREADS", "3", 1);
  REQUIRE(default_num_threads() == 3);
  setenv("OPSCOPE_NUM_THREADS", "lots", 1);  // ignored with a warning
  REQUIRE(default_num_threads() == std::min(hardware_threads(), kMaxThreads));
  unsetenv("OPSCOPE_NUM_THREADS");
  REQUIRE(grain_for(0) == 1);
  REQUIRE(grain_for(kParallelChunkWork * 2) == 1);
  REQUIRE(grain_for(1) == static_cast<int64_t>(kParallelChunkWork));
}

TEST_CASE("CPU kernel set: detected from cpuid, switchable for tests, named", "[core]") {
  const CpuIsa best = detected_cpu_isa();
  REQUIRE(parse_cpu_isa("avx2") == CpuIsa::baseline);
  REQUIRE(parse_cpu_isa("baseline") == CpuIsa::baseline);
  REQUIRE(parse_cpu_isa("avx512") == CpuIsa::avx512);
  REQUIRE_THROWS_WITH(parse_cpu_isa("sse2"), Catch::Contains("unknown CPU kernel set 'sse2'"));
  {
    CpuIsaScope s(CpuIsa::baseline);
    REQUIRE(cpu_isa() == CpuIsa::baseline);
    REQUIRE(std::string(cpu_isa_name(cpu_isa())) == "AVX2+FMA (x86-64-v3)");
  }
  if (best == CpuIsa::avx512) {
    CpuIsaScope s(CpuIsa::avx512);
    REQUIRE(cpu_isa() == CpuIsa::avx512);
  } else {
    REQUIRE_THROWS_WITH(set_cpu_isa(CpuIsa::avx512), Catch::Contains("cannot run the AVX-512 kernels"));
  }
  REQUIRE_THAT(cpu_description(), Catch::Contains("threads") || Catch::Contains("thread ("));
}
