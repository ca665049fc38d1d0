#include "app/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "app/lang/interpreter.h"

namespace opscope::app {

namespace {

struct ProgressLine {
  lang::Interpreter& in;
  bool drawn = false;
  double last_draw = -1;

  int width() const {
    winsize ws{};
    return ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col : 80;
  }
  void erase() {
    if (!drawn) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn = false;
  }
  // The loss if the loop logs one, else the first series logged.
  std::string last_metric() const {
    const auto& log = in.metrics();
    const viz::MetricSeries* s = log.find("loss");
    if (!s && !log.series().empty()) s = &log.series().front();
    if (!s || s->values.empty()) return {};
    char buf[96];
    std::snprintf(buf, sizeof buf, " · %s %.4g", s->name.c_str(), s->values.back());
    return buf;
  }
  void on(const lang::Interpreter::LoopProgress& p) {
    using P = lang::Interpreter::LoopProgress;
    if (p.event != P::step) {
      erase();
      return;
    }
    // Quiet for loops that finish in a blink; then ten redraws a second at most.
    if (p.seconds < 0.3 || (last_draw >= 0 && p.seconds - last_draw < 0.1)) return;
    last_draw = p.seconds;
    char head[96];
    std::snprintf(head, sizeof head, "batch %lld/%lld · %.1f batch/s", static_cast<long long>(p.done_items),
                  static_cast<long long>(p.total), p.seconds > 0 ? static_cast<double>(p.done_items) / p.seconds : 0.0);
    std::string line = head + last_metric();
    const size_t room = static_cast<size_t>(width() - 1);
    if (line.size() > room) line.resize(room);  // never wraps (a wrapped line cannot be redrawn)
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    drawn = true;
  }
};

}  // namespace

void install_progress_line(lang::Interpreter& in) {
  if (!isatty(2)) return;
  auto line = std::make_shared<ProgressLine>(ProgressLine{in});
  in.set_progress_hook([line](const lang::Interpreter::LoopProgress& p) {
    if (p.event == lang::Interpreter::LoopProgress::done) line->last_draw = -1;
    line->on(p);
  });
}

}  // namespace opscope::app
