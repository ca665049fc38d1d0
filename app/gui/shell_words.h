// The window's own words (menus, step controls, tabs, the console's lines) in the language the
// student reads the lessons in: English, or Chinese once a Chinese lesson is open. Widgets keep
// their English names as ImGui ids ("###") and for the human-input tests.
#pragma once

namespace opscope::app {

struct ShellWords {
  const char *file, *open, *export_svg, *export_png, *save_metrics, *reset, *view, *zoom_in, *zoom_out, *actual_size,
      *present;
  const char *interrupt, *step, *step_bwd, *play, *pause, *run, *rewind, *show, *forward, *backward, *both, *fit,
      *search, *light, *dark, *no_steps;
  const char *graph, *console, *lesson, *metrics, *running, *restore, *start_fresh;
};

inline constexpr ShellWords kShellEn{"File",
                                     "Open...",
                                     "Export figure as SVG",
                                     "Export figure as PNG",
                                     "Save metrics as CSV",
                                     "Reset workspace",
                                     "View",
                                     "Zoom in",
                                     "Zoom out",
                                     "Actual size",
                                     "Present",
                                     "Interrupt",
                                     "Step",
                                     "Step bwd",
                                     "Play",
                                     "Pause",
                                     "Run",
                                     "Rewind",
                                     "show",
                                     "forward",
                                     "backward",
                                     "both",
                                     "Fit",
                                     "search name / op",
                                     "Light",
                                     "Dark",
                                     "no steps yet",
                                     "Graph",
                                     "Console",
                                     "Lesson",
                                     "Metrics",
                                     "running ... Esc, Ctrl-C or Interrupt stops it (and undoes it)",
                                     "Restore",
                                     "Start fresh"};

inline constexpr ShellWords kShellZh{"文件",
                                     "打开...",
                                     "导出图 (SVG)",
                                     "导出图 (PNG)",
                                     "保存指标 (CSV)",
                                     "重置工作区",
                                     "视图",
                                     "放大",
                                     "缩小",
                                     "实际大小",
                                     "演示模式",
                                     "中断",
                                     "单步",
                                     "反向单步",
                                     "播放",
                                     "暂停",
                                     "运行",
                                     "回到开头",
                                     "显示",
                                     "前向",
                                     "反向",
                                     "全部",
                                     "适应窗口",
                                     "搜索名字 / 算子",
                                     "浅色",
                                     "深色",
                                     "还没有运行任何一步",
                                     "计算图",
                                     "控制台",
                                     "课程",
                                     "指标",
                                     "正在运行 ... Esc、Ctrl-C 或“中断”可以停止（并撤销）",
                                     "恢复",
                                     "重新开始"};

}  // namespace opscope::app
