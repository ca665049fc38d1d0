// viz-internal: the Graphviz contexts (layout only, and layout + renderers). Graphviz is
// not thread-safe; opscope lays out and renders from the GUI/CLI thread only.
#pragma once
#include <graphviz/gvc.h>

namespace opscope::viz::detail {

// dot layout and the core plugin only: text sizes come from Graphviz's built-in estimates,
// so positions do not depend on the fonts installed.
GVC_t* layout_context();
// dot layout, nop2 (positions given: the figure export), core (svg, dot) and cairo/pango (png)
// renderers.
GVC_t* render_context();

}  // namespace opscope::viz::detail
