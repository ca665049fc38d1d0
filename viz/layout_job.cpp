#include "viz/layout_job.h"

#include <algorithm>
#include <chrono>

namespace opscope::viz {

// [SECTION] cache

std::shared_ptr<const ScopeLayout> ScopeCache::find(const std::string& scope, const std::string& signature) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(scope);
  if (it == entries_.end()) return nullptr;
  auto& list = it->second;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].signature == signature) {
      std::rotate(list.begin() + static_cast<long>(i), list.begin() + static_cast<long>(i) + 1, list.end());
      ++hits_;
      return list.back().layout;
    }
  return nullptr;
}

void ScopeCache::store(const std::string& scope, const std::string& signature,
                       std::shared_ptr<const ScopeLayout> layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = entries_[scope];
  if (list.size() >= kPerScope) list.erase(list.begin());
  list.push_back({signature, std::move(layout)});
  ++runs_[scope];
  ++total_runs_;
}

int ScopeCache::runs(const std::string& scope) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = runs_.find(scope);
  return it == runs_.end() ? 0 : it->second;
}

int ScopeCache::total_runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_runs_;
}

int ScopeCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

// [SECTION] job

FigureJob::FigureJob(FigurePlan plan, std::shared_ptr<ScopeCache> cache)
    : plan_(std::move(plan)), cache_(std::move(cache)) {
  if (!cache_) cache_ = std::make_shared<ScopeCache>();
}

int FigureJob::steps_total() const { return 2 + static_cast<int>(tree_.jobs.size()) + route_steps_; }

void FigureJob::step() {
  const auto t0 = std::chrono::steady_clock::now();
  switch (stage_) {
    case Stage::prepare: prepare(); break;
    case Stage::scopes: lay_out_next_scope(); break;
    case Stage::assemble: assemble(); break;
    case Stage::route: route(); break;
    case Stage::finished: return;
  }
  ++steps_done_;
  work_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (stage_ == Stage::finished) result_.layout_ms = work_ms_;
}

void FigureJob::prepare() {
  if (plan_.boxes.empty()) {  // an empty graph: nothing to place
    result_.node_box = std::move(plan_.node_box);
    stage_ = Stage::finished;
    return;
  }
  std::vector<float> widths;
  if (plan_.one_dot) {
    for (const auto& b : plan_.boxes) widths.push_back(b.width);
  } else {
    groups_ = group_backward_boxes(plan_);
    widths = reserved_widths(plan_, groups_);
  }
  tree_ = build_scope_tree(plan_, widths);
  done_.resize(tree_.jobs.size());
  stage_ = tree_.jobs.empty() ? Stage::assemble : Stage::scopes;
}

void FigureJob::lay_out_next_scope() {
  const ScopeGraph g = sized_graph(tree_, next_, done_, plan_);
  const std::string signature = g.signature();
  std::shared_ptr<const ScopeLayout> l = cache_->find(g.scope, signature);
  if (!l) {
    l = std::make_shared<const ScopeLayout>(lay_out_scope(g));
    cache_->store(g.scope, signature, l);
  }
  done_[next_] = *l;
  if (++next_ == tree_.jobs.size()) stage_ = Stage::assemble;
}

void FigureJob::assemble() {
  const ForwardLane lane = place_scopes(tree_, done_, plan_);
  done_.clear();
  if (plan_.one_dot) {
    result_ = assemble_one_layout(std::move(plan_), lane);
    stage_ = Stage::finished;
    return;
  }
  lanes_ = std::make_unique<LanesAssembly>(std::move(plan_), std::move(groups_), lane);
  stage_ = Stage::route;
}

void FigureJob::route() {
  ++route_steps_;  // (counted as they run: how many there are is known once they are done)
  if (lanes_->route(kEdgesPerStep)) return;
  result_ = lanes_->finish();
  lanes_.reset();
  stage_ = Stage::finished;
}

}  // namespace opscope::viz
