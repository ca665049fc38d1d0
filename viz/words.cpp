#include "viz/words.h"

#include <cstring>
#include <string_view>
#include <unordered_map>

namespace opscope::viz {

namespace {

bool g_chinese = false;

const std::unordered_map<std::string_view, const char*>& chinese_words() {
  static const std::unordered_map<std::string_view, const char*> words{
      // the graph
      {"forward pass  →", "前向传播  →"},
      {"←  backward pass", "←  反向传播"},
      {"parameter", "参数"},
      {"input / constant", "输入 / 常量"},
      {"forward op", "前向算子"},
      {"backward op", "反向算子"},
      {"folded call", "折叠的调用"},
      {"last step", "最近一步"},
      {"saved for backward", "为反向保存"},
      {"drag: pan · wheel: zoom (folds, unfolds) · F: fit · click: inspect, unfold", "拖动：平移 · 滚轮：缩放（折叠、展开） · F：适应窗口 · 点击：查看、展开"},
      {"laying out the graph ...", "正在布局计算图 ..."},
      {"laying out the graph: %d of %d steps", "正在布局计算图：第 %d 步，共 %d 步"},
      {"last run %s", "上次运行 %s"},
      {"double-click to show the ops inside it", "双击显示其中的算子"},
      {"click (or zoom in) to unfold", "点击（或放大）以展开"},
      {"made by %s (line %d)", "由 %s 创建（第 %d 行）"},
      {"The graph is empty: type  %s  in the console", "计算图是空的：在控制台输入  %s"},
      {"The graph could not be laid out: ", "无法布局计算图："},
      // the inspector
      {"Click a node in the graph to inspect it.", "点击计算图中的节点查看详情。"},
      {"Values of %s %s", "%s %s 的值"},
      {"not held any more (freed after its last use)", "已不再保留（最后一次使用后释放）"},
      {"showing the first %lld x %lld of the last two axes", "显示最后两个轴的前 %lld x %lld 个"},
      {"Gradient d%s", "梯度 d%s"},
      {"initialised by %s", "由 %s 初始化"},
      {"a folded call: click it in the graph to unfold", "折叠的调用：在计算图中点击它以展开"},
      {"click it in the graph (or zoom into it) to unfold", "在计算图中点击它（或放大）以展开"},
      {"gradient of #%d %s", "#%d %s 的梯度"},
      {"Saved for backward:", "为反向保存："},
      {"held", "仍保留"},
      {"freed by its backward", "已由其反向释放"},
      {"Cost: %.3g FLOPs, reads %s, writes %s", "开销：%.3g FLOPs，读 %s，写 %s"},
      {"Last run: %s (%lld runs)", "上次运行：%s（共 %lld 次）"},
      {"not run yet", "尚未运行"},
      {"name", "名字"},
      {"shape", "形状"},
      {"strides", "步长"},
      {"dtype", "数据类型"},
      {"device", "设备"},
      {"bytes", "字节"},
      // the window's step line and status bar (app/gui/panels.cpp)
      {"step %lld · %s #%d %s", "第 %lld 步 · %s #%d %s"},
      {"forward", "前向"},
      {"backward", "反向"},
      {"update", "更新"},
      {"· %lld left, next #%d", "· 还剩 %lld 步，下一个 #%d"},
      {"%.1f steps/s", "%.1f 步/秒"},
      {"mode: %s   device: cpu   live %s   peak %s   nodes %zu   layout %.1f ms   frame %.2f ms   %.0f FPS",
       "模式：%s   设备：cpu   当前 %s   峰值 %s   节点 %zu   布局 %.1f ms   帧 %.2f ms   %.0f FPS"},
      {"static (compiled program)", "静态（编译后的程序）"},
      {"static (tracing)", "静态（追踪中）"},
      {"dynamic", "动态"},
      // the memory panel
      {"Memory after each step", "每一步之后的内存"},
      {"input", "输入"},
      {"activation", "激活值"},
      {"saved for bwd", "为反向保存"},
      {"gradient", "梯度"},
      {"optimizer state", "优化器状态"},
      {"workspace", "工作区"},
      {"No steps yet: memory after each step appears here.", "还没有运行任何一步：每一步之后的内存会显示在这里。"},
      {"step %lld", "第 %lld 步"},
      {"backward pass", "反向传播"},
      {"peak %s after step %lld", "峰值 %s（第 %lld 步之后）"},
      {"step %lld (node #%d): %s", "第 %lld 步（节点 #%d）：%s"},
      // the metrics panel
      {"No metrics yet. In a training loop, log(\"loss\", loss) records one point per step; every series logged is "
       "plotted here while the loop runs.",
       "还没有指标。在训练循环中，log(\"loss\", loss) 每一步记录一个点；循环运行时，记录的每个序列都画在这里。"},
  };
  return words;
}

}  // namespace

void set_chinese(bool chinese) { g_chinese = chinese; }
bool chinese() { return g_chinese; }

const char* tr(const char* english) {
  if (!g_chinese) return english;
  const auto& words = chinese_words();
  const auto it = words.find(english);
  return it == words.end() ? english : it->second;
}

bool has_chinese(const char* english) { return chinese_words().count(english) > 0; }

}  // namespace opscope::viz
