// Scalars a script logs step by step (log("loss", l)): one series per name, in the order the
// names were first logged. The GUI's metrics panel plots them and `opscope run --metrics`
// writes them as CSV. Plain data: no ImGui here, so the script language can own one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opscope::viz {

struct MetricSeries {
  std::string name;
  std::vector<int64_t> steps;
  std::vector<double> values;
};

class MetricLog {
 public:
  static constexpr size_t kMaxPoints = 1 << 20;  // per series: a runaway loop cannot eat memory
  // Appends (step, value) to the series `name`; the step defaults to the number of points the
  // series has. Throws opscope::Error past kMaxPoints.
  void log(const std::string& name, double value, std::optional<int64_t> step = std::nullopt);
  const std::vector<MetricSeries>& series() const { return series_; }
  const MetricSeries* find(const std::string& name) const;
  bool empty() const { return series_.empty(); }
  // The latest step logged in any series (-1: none): the panel marks it.
  int64_t current_step() const { return current_step_; }
  // Bumped on every change, so views redraw only then.
  uint64_t version() const { return version_; }

  // A failed statement takes back what it logged.
  struct Mark {
    std::vector<size_t> sizes;
    int64_t current_step = -1;
  };
  Mark mark() const;
  void rollback(const Mark& m);
  void clear();

 private:
  std::vector<MetricSeries> series_;
  int64_t current_step_ = -1;
  uint64_t version_ = 0;
};

// "name,step,value" rows (one per point, series in order), with a header line.
std::string metrics_csv(const MetricLog& log);

}  // namespace opscope::viz
