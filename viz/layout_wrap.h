// A long figure wrapped like a paragraph, and its edge labels kept clear of boxes. Both work on a
// finished layout (plain geometry, no Graph, Graphviz or ImGui), after the layout job, so the
// window, its export and the browser draw the same figure, and a new canvas or a Fit re-wraps
// it without laying it out again.
//
// Rows: the figure is cut at x positions no box, frame, edge label or backward group (with the
// forward box it hangs under) spans, and the slices are stacked top to bottom, each a row of
// forward ops with its backward mirror beneath it, read left to right, then the next row. An edge
// between two rows runs around them: out past its row's right end, along the gap between the
// rows, back in at the next row's left (a gradient the same way backwards).
#pragma once
#include <vector>

#include "viz/graph_layout.h"

namespace opscope::viz {

// The figure wrapped into rows no wider than `row_width` (a slice wider than that is a row of its
// own); 0: one row, as laid out. Then its edge labels placed (place_edge_labels).
GraphLayout wrap_rows(const GraphLayout& l, float row_width);

// The row width at which `l` reads in a canvas of `room` (its drawable area, pixels): 0 (one row,
// as laid out) when it reads at `readable_zoom` so; else the fewest rows that read comfortably
// (a little above the readable zoom), else the fewest that read, else 0 again (wrapped rows too
// small to read would only move the figure about). The window's Fit and the export use it.
// `scroll`: a figure that does not read whole is shown readable and scrolled (a user's unfolded
// call that Fit may not fold): then the last case is rows as wide as `room` at the readable zoom,
// so that it scrolls one way only, down.
float row_width_to_fit(const GraphLayout& l, Point room, float readable_zoom, bool scroll = false);
// The zoom at which `l` wrapped at `row_width` fits `room`.
float wrapped_zoom(const GraphLayout& l, float row_width, Point room);

// Moves each edge label that covers a box or an earlier label to a free place along its curve, or
// drops it (has_label_pos false, label_dropped true: the tooltip of its boxes shows it).
void place_edge_labels(GraphLayout& l);

// An edge label's rectangle in layout units, as the view draws it (0.85 of the text size).
struct LabelRect {
  float l, t, r, b;
};
LabelRect label_rect(const GraphLayout& l, const LayoutEdge& e, Point at);

}  // namespace opscope::viz
