// viz-internal: the Graphviz contexts (layout only, and layout + renderers). Graphviz keeps
// global state and is not thread-safe: whoever calls it (a layout job on the GUI's worker
// thread, an export or the knowledge map on the UI thread) holds graphviz_lock() meanwhile.
#pragma once
#include <graphviz/gvc.h>

#include <mutex>

namespace opscope::viz::detail {

// dot layout and the core plugin only: text sizes come from Graphviz's built-in estimates,
// so positions do not depend on the fonts installed.
GVC_t* layout_context();
// dot layout, nop2 (positions given: the figure export), core (svg, dot) and cairo/pango (png)
// renderers.
GVC_t* render_context();
// Held around every use of Graphviz.
std::mutex& graphviz_lock();

}  // namespace opscope::viz::detail
