#include "viz/graphviz.h"

#include <dlfcn.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/error.h"
#include "viz/graphviz_context.h"

// The plugin libraries' descriptors, linked directly (see cmake/gui.cmake): no plugin
// discovery through config6a, so the same binary works wherever the .so files are. The pango
// renderer (PNG/SVG files) is opened on first use instead: it brings cairo, pango, glib and
// some 30 more libraries, ~4 ms and ~6 MB on every start of opscope otherwise.
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_neato_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

namespace opscope::viz {

namespace detail {

GVC_t* layout_context() {
  static lt_symlist_t symbols[] = {{"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
                                   {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
                                   {nullptr, nullptr}};
  static GVC_t* gvc = gvContextPlugins(symbols, 0);
  return gvc;
}

// Graphviz's cairo renderer, where the build has it (the desktop); null where it has not (the
// browser, which turns the SVG into a PNG itself).
gvplugin_library_t* pango_plugin() {
#ifdef OPSCOPE_GV_PANGO_LIBRARY
  static gvplugin_library_t* plugin = [] {
    void* lib = dlopen(OPSCOPE_GV_PANGO_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    return lib ? static_cast<gvplugin_library_t*>(dlsym(lib, "gvplugin_pango_LTX_library")) : nullptr;
  }();
  if (!plugin)
    throw Error(std::string("cannot load Graphviz's renderer ") + OPSCOPE_GV_PANGO_LIBRARY,
                "install libgraphviz-dev (tools/setup.sh) or export DOT text instead of a picture");
  return plugin;
#else
  return nullptr;
#endif
}

GVC_t* render_context() {
  static gvplugin_library_t* pango = pango_plugin();
  static lt_symlist_t symbols[] = {{"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
                                   {"gvplugin_neato_layout_LTX_library",
                                    &gvplugin_neato_layout_LTX_library},  // nop2: positions given
                                   {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
                                   {pango ? "gvplugin_pango_LTX_library" : nullptr, pango},
                                   {nullptr, nullptr}};
  static GVC_t* gvc = gvContextPlugins(symbols, 0);
  return gvc;
}

std::mutex& graphviz_lock() {
  static std::mutex lock;
  return lock;
}

}  // namespace detail

bool can_render_png() { return detail::pango_plugin() != nullptr; }

void render_dot(const std::string& dot, const std::string& format, const std::string& path) {
  if (format != "svg" && format != "png") throw Error("cannot render the graph as '" + format + "'", "use svg or png");
  if (format == "png" && !can_render_png())
    throw Error("this build renders figures as SVG only", "export an .svg file, or use the desktop app for PNG");
  std::lock_guard<std::mutex> graphviz(detail::graphviz_lock());
  GVC_t* gvc = detail::render_context();
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) throw Error("Graphviz could not read the graph's DOT text", "this is a bug in opscope's DOT export");
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> graph(g, agclose);
  // Edge labels become xlabels (placed after layout, overlapping nothing): as real labels dot
  // adds label nodes, and Graphviz 2.42 double-frees those of edges within one rank.
  if (Agsym_t* label = agattr(g, AGEDGE, const_cast<char*>("label"), nullptr)) {
    agattr(g, AGEDGE, const_cast<char*>("xlabel"), const_cast<char*>(""));
    agattr(g, AGRAPH, const_cast<char*>("forcelabels"), const_cast<char*>("true"));
    for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n))
      for (Agedge_t* e = agfstout(g, n); e; e = agnxtout(g, e)) {
        std::string text = agxget(e, label);
        agset(e, const_cast<char*>("xlabel"), text.data());
        agxset(e, label, const_cast<char*>(""));
      }
  }
  if (gvLayout(gvc, g, "dot") != 0) throw Error("Graphviz could not lay out the graph");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), std::fclose);
  const int rc = file ? gvRender(gvc, g, format.c_str(), file.get()) : -1;
  gvFreeLayout(gvc, g);
  if (!file) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
  if (rc != 0) throw Error("Graphviz could not render " + format, "is the Graphviz cairo plugin installed?");
  if (std::fflush(file.get()) != 0) throw Error("cannot write '" + path + "'");
}

}  // namespace opscope::viz
