// viz-internal: how a figure's forward lane splits into scope layouts (scope_layout.h). A call
// whose content is small is laid out in one dot run with its nested calls as dot's own frames;
// a bigger one is laid out from its boxes and its child calls, each child laid out before it and
// placed as one fixed-size box (its frame). An edge that crosses frames is split where it
// crosses them: into each frame through a port on its left, out through a port on its right;
// the pieces are joined again once every scope is placed.
#pragma once
#include <string>
#include <vector>

#include "viz/layout_plan.h"
#include "viz/scope_layout.h"

namespace opscope::viz {

constexpr float kFramePad = 8.f;  // a frame's margin around what it holds
constexpr float kFrameBand = 30.f;  // above it: the frame's title and the saved-for-backward badges

struct ScopeTree {
  // One dot run: the root (the whole lane), or a call placed in its parent as a frame.
  struct Job {
    int cluster = -1;  // the plan's cluster it lays out, -1: the root
    int parent = -1;  // the job it is a frame of
    std::string scope;  // cache key: the cluster's key, "" for the root
    ScopeGraph graph;  // items; the sizes of child frames are filled in when the children are done
    std::vector<int> child_item, child_job;  // frames of child jobs: their items and jobs
    std::vector<int> box_item;  // per plan box: its item here, -1
    std::vector<int> native;  // per ScopeGraph cluster: the plan's cluster it draws
  };
  std::vector<Job> jobs;  // children before their parents; the root last
  std::vector<int> job_of_box;  // per plan box: the job it is laid out in, -1 (not in the forward lane)
  std::vector<int> job_of_cluster;  // per plan cluster: the job whose frame it is (-1: drawn by dot inside one)
  // Per plan edge: the pieces of its curve, in order (job, edge of that job's graph).
  struct Piece {
    int job = -1, edge = -1;
    bool labelled = false;  // this plan edge carries the piece's shape label
  };
  std::vector<std::vector<Piece>> pieces;
};

// `widths`: per plan box, the width dot reserves for it (a forward box with a wide backward group
// under it is given the group's width).
ScopeTree build_scope_tree(const FigurePlan& plan, const std::vector<float>& widths);

// A job's graph with its child frames sized by their layouts (`done`: per job, its layout).
ScopeGraph sized_graph(const ScopeTree& t, size_t job, const std::vector<ScopeLayout>& done, const FigurePlan& plan);

// The forward lane put together from every job's layout: boxes' centres, frames, the curves of
// forward edges (joined across frames) and their labels, in the root's coordinates.
struct ForwardLane {
  std::vector<Point> centers;  // per plan box (forward lane only)
  std::vector<LayoutCluster> clusters;
  std::vector<std::vector<Point>> splines;  // per plan edge (empty: not in the forward lane)
  std::vector<Point> label_pos;
  std::vector<char> has_label;
  float width = 0, height = 0;
};
ForwardLane place_scopes(const ScopeTree& t, const std::vector<ScopeLayout>& done, const FigurePlan& plan);

}  // namespace opscope::viz
