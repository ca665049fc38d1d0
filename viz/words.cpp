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
      {"drag: pan · wheel: zoom (folds, unfolds) · F: fit · click: inspect, unfold",
       "拖动：平移 · 滚轮：缩放（折叠、展开） · F：适应窗口 · 点击：查看、展开"},
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
      // the Kernel Lab and its warp view (every simulated number says so)
      {"Kernel Lab", "内核实验室"},
      {" on ", "，输入 "},
      {"CPU, measured", "CPU，实测"},
      {"No simulated GPU here: only the CPU algorithms are shown.", "这里没有模拟 GPU：只显示 CPU 算法。"},
      {"The simulated GPU could not run this operator; only the CPU algorithms are shown.",
       "模拟 GPU 无法运行这个算子；只显示 CPU 算法。"},
      {"CPU: measured now on one thread. GPU: the same CUDA kernels simulated (the `sim` device): each time is "
       "the launches' bound on a %s, max(FLOPs / peak, DRAM bytes / bandwidth, shared wavefronts / "
       "(SMs x clock)); every GPU row is checked against the simulated reference first.",
       "CPU：现在在一个线程上实测。GPU：同样的 CUDA 内核在模拟器（`sim` 设备）上运行：每个时间是这些启动在 %s "
       "上的下界，"
       "max(FLOPs / 峰值, DRAM 字节 / 带宽, 共享内存波前 / (SM 数 × 时钟))；每一行 GPU 结果都先与模拟的参考结果核对。"},
      {"Kernel Lab: %s", "内核实验室：%s"},
      {"Measuring...", "正在测量..."},
      {"Nothing measured yet.", "还没有测量。"},
      {"GPU (simulated)", "GPU（模拟）"},
      {"  warp view of:", "  线程束视图："},
      {"Warp view: %s", "线程束视图：%s"},
      {"Warp view: press a kernel's button above to step one block of it request by request (simulated).",
       "线程束视图：点击上方某个内核的按钮，逐个请求单步执行它的一个线程块（模拟）。"},
      {"< previous", "< 上一个"},
      {"next request >", "下一个请求 >"},
      {"next barrier >>", "下一个屏障 >>"},
      {", simulated", "，模拟"},
      {", library (not simulated)", "，库函数（未模拟）"},
      {"refused: ", "被拒绝："},
      {"reference", "参考"},
      {"error ", "误差 "},
      {"roofline: GFLOP/s (log) against FLOP per byte (log)", "屋顶线：GFLOP/s（对数）对每字节 FLOP（对数）"},
      {"%s roof (simulated): %.0f GFLOP/s", "%s 屋顶（模拟）：%.0f GFLOP/s"},
      {"lanes 0-31 (colour: the 32-byte sector each reads)", "线程 0-31（颜色：各自读取的 32 字节扇区）"},
      {"banks 0-31 (a row per distinct word a bank serves; red: conflict)",
       "存储体 0-31（每个存储体服务的每个不同字占一行；红色：冲突）"},
      {"shared memory stored so far (a row: 32 banks)", "到目前为止写入的共享内存（一行：32 个存储体）"},
      {"(no shared store yet)", "（还没有写入共享内存）"},
      {"%s: %s, block (0,0,0) of %ux%ux%u threads, request %d of %d%s  (simulated)",
       "%s：%s，线程块 (0,0,0)，%ux%ux%u 个线程，第 %d 个请求，共 %d 个%s（模拟）"},
      {" (trace bounded)", "（记录有上限）"},
      {" (after the barrier at %s)", "（在 %s 的屏障之后）"},
      {"of buffer %d (in the order the kernel first touches them)", "缓冲区 %d（按内核首次访问的顺序编号）"},
      {"warp %d, phase %d%s, %s %s %s", "线程束 %d，阶段 %d%s，%s %s %s"},
      {"shared", "共享内存"},
      {"global", "全局内存"},
      {"load", "读取"},
      {"store", "写入"},
      {"atomic", "原子操作"},
      {"(source not shipped)", "（未附带源代码）"},
      {"this request: %d lanes, %llu distinct words, %llu wavefronts (%s)",
       "本次请求：%d 个线程，%llu 个不同的字，%llu 个波前（%s）"},
      {"this request: %d lanes, %llu distinct words, %llu wavefront (%s)",
       "本次请求：%d 个线程，%llu 个不同的字，%llu 个波前（%s）"},
      {"%llu-way bank conflict: lanes %s, %llu words in bank %d", "%llu 路存储体冲突：线程 %s，%llu 个字在存储体 %d"},
      {"a broadcast", "广播"},
      {"no conflict", "无冲突"},
      {"this request: %d lanes, %llu sectors of 32 bytes (%s)", "本次请求：%d 个线程，%llu 个 32 字节扇区（%s）"},
      {"this request: %d lanes, %llu sector of 32 bytes (%s)", "本次请求：%d 个线程，%llu 个 32 字节扇区（%s）"},
      {"%.0f%% of the bytes moved are used", "搬运的字节中有 %.0f%% 被使用"},
      {"so far: global %llu requests, %s sectors/request; shared %llu requests, %s wavefronts/request",
       "到目前为止：全局内存 %llu 个请求，每个请求 %s 个扇区；共享内存 %llu 个请求，每个请求 %s 个波前"},
      {"this instruction so far: %llu requests, %s wavefronts/request",
       "这条指令到目前为止：%llu 个请求，每个请求 %s 个波前"},
      {"this instruction so far: %llu requests, %s sectors/request",
       "这条指令到目前为止：%llu 个请求，每个请求 %s 个扇区"},
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
