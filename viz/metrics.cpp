#include "viz/metrics.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace opscope::viz {

void MetricLog::log(const std::string& name, double value, std::optional<int64_t> step) {
  MetricSeries* s = nullptr;
  for (auto& x : series_)
    if (x.name == name) s = &x;
  if (!s) {
    series_.push_back({name, {}, {}});
    s = &series_.back();
  }
  if (s->steps.size() >= kMaxPoints)
    throw Error("log(): the series '" + name + "' already has " + std::to_string(kMaxPoints) + " points",
                "log every k-th step (if step % 100 == 0: log(...)) for long runs");
  const int64_t at = step ? *step : static_cast<int64_t>(s->steps.size());
  s->steps.push_back(at);
  s->values.push_back(value);
  current_step_ = std::max(current_step_, at);
  ++version_;
}

const MetricSeries* MetricLog::find(const std::string& name) const {
  for (auto& s : series_)
    if (s.name == name) return &s;
  return nullptr;
}

MetricLog::Mark MetricLog::mark() const {
  Mark m;
  for (auto& s : series_) m.sizes.push_back(s.steps.size());
  m.current_step = current_step_;
  return m;
}

void MetricLog::rollback(const Mark& m) {
  if (series_.size() > m.sizes.size()) series_.resize(m.sizes.size());
  for (size_t i = 0; i < series_.size(); ++i) {
    series_[i].steps.resize(std::min(series_[i].steps.size(), m.sizes[i]));
    series_[i].values.resize(series_[i].steps.size());
  }
  current_step_ = m.current_step;
  ++version_;
}

void MetricLog::clear() {
  series_.clear();
  current_step_ = -1;
  ++version_;
}

std::string metrics_csv(const MetricLog& log) {
  std::string out = "name,step,value\n";
  char buf[64];
  for (const auto& s : log.series()) {
    // A name with a comma or a quote is quoted, as RFC 4180 has it.
    std::string name = s.name;
    if (name.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      name = q + "\"";
    }
    for (size_t i = 0; i < s.steps.size(); ++i) {
      std::snprintf(buf, sizeof buf, ",%lld,%.9g\n", static_cast<long long>(s.steps[i]), s.values[i]);
      out += name + buf;
    }
  }
  return out;
}

}  // namespace opscope::viz
