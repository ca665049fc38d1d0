#include "viz/graphviz.h"

#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "viz/graphviz_context.h"

// The plugin libraries' descriptors, linked directly (see CMakeLists.txt): no plugin
// discovery through config6a, so the same binary works wherever the .so files are.
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
extern gvplugin_library_t gvplugin_pango_LTX_library;
}

namespace opscope::viz {

namespace detail {

GVC_t* layout_context() {
  static lt_symlist_t symbols[] = {
      {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
      {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
      {nullptr, nullptr}};
  static GVC_t* gvc = gvContextPlugins(symbols, 0);
  return gvc;
}

GVC_t* render_context() {
  static lt_symlist_t symbols[] = {
      {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
      {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
      {"gvplugin_pango_LTX_library", &gvplugin_pango_LTX_library},
      {nullptr, nullptr}};
  static GVC_t* gvc = gvContextPlugins(symbols, 0);
  return gvc;
}

}  // namespace detail

std::string render_dot(const std::string& dot, const std::string& format) {
  if (format != "svg" && format != "png")
    throw Error("cannot render the graph as '" + format + "'", "use svg or png");
  GVC_t* gvc = detail::render_context();
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) throw Error("Graphviz could not read the graph's DOT text", "this is a bug in opscope's DOT export");
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> graph(g, agclose);
  if (gvLayout(gvc, g, "dot") != 0) throw Error("Graphviz could not lay out the graph");
  char* data = nullptr;
  unsigned int length = 0;
  int rc = gvRenderData(gvc, g, format.c_str(), &data, &length);
  gvFreeLayout(gvc, g);
  if (rc != 0 || !data) throw Error("Graphviz could not render " + format, "is the Graphviz cairo plugin installed?");
  std::string bytes(data, length);
  gvFreeRenderData(data);
  return bytes;
}

}  // namespace opscope::viz
