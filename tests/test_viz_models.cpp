// Real models in the figure (issue 31): a ViT-B/16-shaped model (12 encoder layers, narrow, from
// tools/make_onnx_models.py --zoo --tiny) opened as the window opens it, laid out scope by scope,
// reused from the cache when one call unfolds, and the same whether made at once, in slices or
// on a worker thread. No display needed.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/ran_script.h"
#include "viz/graph_layout.h"
#include "viz/layout_job.h"
#include "viz/layout_queue.h"

using namespace opscope;

namespace {

const std::string kVit = std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/vit_b_16_tiny.onnx";

// As File ▸ Open traces it: static mode, a placeholder for its input.
std::string open_vit() {
  return ":mode static\nvit = load_onnx(\"" + kVit + "\")\nx = input(\"x\", [1, 3, 32, 32])\ny = vit(x)\n";
}

std::set<std::string> every_layer_folded() {
  std::set<std::string> f;
  for (int i = 0; i < 12; ++i) f.insert("encoder/layers/encoder_layer_" + std::to_string(i));
  return f;
}

viz::GraphLayout lay_out(const Graph& g, const viz::LayoutOptions& o, const std::shared_ptr<viz::ScopeCache>& cache) {
  viz::FigureJob job(viz::plan_figure(g, o), cache);
  job.run_all();
  return job.take();
}

const viz::LayoutCluster* frame(const viz::GraphLayout& l, const std::string& key) {
  for (const auto& c : l.clusters)
    if (c.key == key) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("layout: a model with hundreds of nodes opens folded to fit, never laid out whole", "[viz][static]") {
  Ran r(open_vit());
  const Graph& g = r.ws.graph();
  REQUIRE(g.num_nodes() > 600);
  viz::LayoutOptions o;
  // The window's canvas at the readable zoom: ~1340 x 760 layout units.
  const auto folds = viz::initial_folds(viz::foldable_calls(g, {}), o, viz::shown_node_count(g, o), {1340, 760}, -1);
  CHECK(folds.count("encoder") == 1);  // its 12 layers are one box until asked for
  o.folded = folds;
  const auto cache = std::make_shared<viz::ScopeCache>();
  const viz::GraphLayout l = lay_out(g, o, cache);
  CHECK(l.boxes.size() < 30);
  CHECK(l.width < 3000);
  // Nothing inside the fold was laid out.
  CHECK(cache->runs("encoder/layers/encoder_layer_0") == 0);
  CHECK(cache->total_runs() <= 4);
}

TEST_CASE("layout: unfolding one call lays out it and the frames around it, never its siblings", "[viz][static]") {
  Ran r(open_vit());
  const Graph& g = r.ws.graph();
  const auto cache = std::make_shared<viz::ScopeCache>();
  viz::LayoutOptions o;
  o.folded = every_layer_folded();
  o.folded.erase("encoder/layers/encoder_layer_3");
  const viz::GraphLayout one = lay_out(g, o, cache);
  const std::string layer3 = "encoder/layers/encoder_layer_3";
  REQUIRE(cache->runs(layer3) == 1);
  const int root_runs = cache->runs(""), heads_runs = cache->runs("heads");
  // A second layer unfolds: it and the frames around it (the layers, the encoder, the root) are
  // laid out again; layer 3 and the heads come from the cache.
  o.folded.erase("encoder/layers/encoder_layer_5");
  const viz::GraphLayout two = lay_out(g, o, cache);
  CHECK(cache->runs("encoder/layers/encoder_layer_5") == 1);
  CHECK(cache->runs(layer3) == 1);
  CHECK(cache->runs("heads") == heads_runs);
  CHECK(cache->runs("") == root_runs + 1);
  // ...and layer 3 looks the same inside its frame, wherever the frame went.
  const viz::LayoutCluster* f1 = frame(one, layer3);
  const viz::LayoutCluster* f2 = frame(two, layer3);
  REQUIRE(f1);
  REQUIRE(f2);
  int compared = 0;
  for (const auto& b : one.boxes) {
    const int j = two.find(b.key);
    if (j < 0 || b.center.x < f1->min.x || b.center.x > f1->max.x || b.center.y < f1->min.y || b.center.y > f1->max.y)
      continue;
    const auto& c = two.boxes[static_cast<size_t>(j)];
    CHECK(std::abs((b.center.x - f1->min.x) - (c.center.x - f2->min.x)) < 0.01f);
    CHECK(std::abs((b.center.y - f1->min.y) - (c.center.y - f2->min.y)) < 0.01f);
    ++compared;
  }
  CHECK(compared > 10);
  // Every edge of the figure is drawn, into and out of the frames too.
  for (const auto& e : two.edges)
    if (!e.link) CHECK(e.spline.size() >= 4);
}

TEST_CASE("layout queue: slices run a step at a time; at once, in slices and on a worker the same figure",
          "[viz][static]") {
  Ran r(open_vit());
  const Graph& g = r.ws.graph();
  viz::LayoutOptions o;  // (big enough to be laid out call by call: the same to the bit each time)
  o.folded = every_layer_folded();
  o.folded.erase("encoder/layers/encoder_layer_0");
  o.folded.erase("encoder/layers/encoder_layer_11");
  viz::LayoutQueue sync(viz::LayoutMode::sync), slices(viz::LayoutMode::slices), worker(viz::LayoutMode::thread);
  const auto a = sync.submit(viz::plan_figure(g, o));
  REQUIRE(a->done);
  REQUIRE(a->error.empty());
  // Slices: nothing runs until the shell gives the queue time, then one step per slice of 0 ms.
  const auto b = slices.submit(viz::plan_figure(g, o));
  CHECK_FALSE(b->done);
  slices.run_for(0);
  CHECK(b->steps_done == 1);
  CHECK(b->steps_total > 4);
  int slices_run = 1;
  while (!b->done && slices_run < 1000) {
    slices.run_for(0);
    ++slices_run;
  }
  CHECK(slices_run == b->steps_total);
  // A worker thread: the view waits for nothing; finish() waits here for the test.
  std::thread serving([&] { worker.serve(); });
  const auto c = worker.submit(viz::plan_figure(g, o));
  worker.finish(c);
  worker.stop();
  serving.join();
  REQUIRE(b->done);
  REQUIRE(c->done);
  REQUIRE(a->layout.boxes.size() == b->layout.boxes.size());
  REQUIRE(a->layout.boxes.size() == c->layout.boxes.size());
  for (size_t i = 0; i < a->layout.boxes.size(); ++i) {
    CHECK(a->layout.boxes[i].center.x == b->layout.boxes[i].center.x);
    CHECK(a->layout.boxes[i].center.y == c->layout.boxes[i].center.y);
  }
  // A superseded request is dropped unfinished.
  const auto d = slices.submit(viz::plan_figure(g, o));
  d->cancelled = true;
  CHECK_FALSE(slices.run_for(5));
  CHECK(slices.idle());
}
