// Graphviz in memory: one context with the dot layout, core (SVG) and cairo (PNG) plugins
// linked in explicitly, so it works without the `config6a` file Debian's post-install writes.
#pragma once
#include <string>

namespace opscope::viz {

// Renders DOT text with `dot` to "svg" or "png" bytes. Throws opscope::Error on failure.
std::string render_dot(const std::string& dot, const std::string& format);

}  // namespace opscope::viz
