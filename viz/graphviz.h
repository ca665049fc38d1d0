// Graphviz in memory: one context with the dot layout, core (SVG) and cairo (PNG) plugins
// linked in explicitly, so it works without the `config6a` file Debian's post-install writes.
#pragma once
#include <string>

namespace opscope::viz {

// Lays out DOT text with `dot` and writes it to `path` as "svg" or "png". Throws opscope::Error
// on failure. (To a file, not to memory: gvRenderData of Graphviz 2.42 overruns its buffer.)
void render_dot(const std::string& dot, const std::string& format, const std::string& path);
// Whether "png" can be rendered: Graphviz's cairo renderer is there (the desktop build).
bool can_render_png();

}  // namespace opscope::viz
