// The GUI as a user sees it: runs `opscope gui` headless (under xvfb-run, Mesa software GL)
// on an MLP stopped mid-backward, then checks the JSON dump of what is on screen and the
// pixels of its screenshot.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#include <stb/stb_image.h>

namespace {

struct GuiRun {
  int rc = -1;
  nlohmann::json state;
  std::vector<unsigned char> pixels;
  int w = 0, h = 0;
};

// `what` is what the window opens: "--script FILE" (default: the MLP) or "--lesson N".
std::string script_arg(const std::string& name) {
  return std::string("--script '") + OPSCOPE_SOURCE_DIR + "/tests/gui/" + name + "'";
}
// The folder a run keeps its settings, lesson progress and workspace journal in.
std::string config_dir(const std::string& name) { return std::string(OPSCOPE_TEST_OUT) + "/gui-test-config-" + name; }
// `config_of`: run in that earlier run's config folder (a next session); "": one of its own, emptied first.
GuiRun run_gui(const std::string& name, const std::string& actions, int frames = 20,
               const std::string& what = script_arg("mlp.ops"), const std::string& extra = "",
               const std::string& config_of = "") {
  const std::string dir = OPSCOPE_TEST_OUT;
  const std::string png = dir + "/" + name + ".png", json = dir + "/" + name + ".json";
  std::remove(png.c_str());
  std::remove(json.c_str());
  const std::string config = config_dir(config_of.empty() ? name : config_of);
  if (config_of.empty()) std::system(("rm -rf '" + config + "'").c_str());
  const std::string cmd = "XDG_CONFIG_HOME='" + config + "' '" + std::string(OPSCOPE_BIN) + "' gui " + what +
                          " --frames " + std::to_string(frames) + " --screenshot '" + png + "' --state-json '" + json +
                          "' --actions '" + actions + "' " + extra;
  GuiRun r;
  r.rc = std::system(cmd.c_str());
  std::ifstream f(json);
  if (f) r.state = nlohmann::json::parse(f);
  int channels = 0;
  unsigned char* data = stbi_load(png.c_str(), &r.w, &r.h, &channels, 4);
  if (data) {
    r.pixels.assign(data, data + static_cast<size_t>(r.w) * static_cast<size_t>(r.h) * 4);
    stbi_image_free(data);
  }
  return r;
}

// Pixels within `tol` of (r, g, b) inside [x0, x1) x [y0, y1).
int count_color(const GuiRun& r, float x0, float y0, float x1, float y1, int cr, int cg, int cb, int tol) {
  int n = 0;
  for (int y = std::max(0, static_cast<int>(y0)); y < std::min(r.h, static_cast<int>(y1)); ++y)
    for (int x = std::max(0, static_cast<int>(x0)); x < std::min(r.w, static_cast<int>(x1)); ++x) {
      const unsigned char* p =
          &r.pixels[(static_cast<size_t>(y) * static_cast<size_t>(r.w) + static_cast<size_t>(x)) * 4];
      n += std::abs(p[0] - cr) <= tol && std::abs(p[1] - cg) <= tol && std::abs(p[2] - cb) <= tol;
    }
  return n;
}

const nlohmann::json* box(const nlohmann::json& state, const std::string& key) {
  for (const auto& n : state["nodes"])
    if (n["key"] == key) return &n;
  return nullptr;
}

float x0(const nlohmann::json& b) { return b["rect"][0].get<float>(); }
float y0(const nlohmann::json& b) { return b["rect"][1].get<float>(); }
float x1(const nlohmann::json& b) { return b["rect"][2].get<float>(); }
float y1(const nlohmann::json& b) { return b["rect"][3].get<float>(); }

int count_titled(const nlohmann::json& state, const std::string& part) {
  int n = 0;
  for (const auto& b : state["nodes"]) n += std::string(b["title"]).find(part) != std::string::npos;
  return n;
}

const std::string kTransformer =
    std::string("--script '") + OPSCOPE_SOURCE_DIR + "/assets/examples/transformer_block.ops'";

}  // namespace

TEST_CASE("gui: mid-backward, the current step is highlighted on screen and in the dump", "[viz]") {
  const GuiRun r = run_gui("mid_backward", "step;step;step;select n3");
  REQUIRE(r.rc == 0);
  REQUIRE(r.state.is_object());
  REQUIRE(r.w > 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  // The forward pass ran as dynamic steps, then three stepped backward steps.
  CHECK(s["phase"] == "backward");
  CHECK(s["steps_left"].get<int>() > 0);
  const int graph_nodes = s["graph_nodes"];
  int op_boxes = 0, params = 0;
  bool saw_matmul = false, saw_relu = false, saw_loss = false;
  for (const auto& n : s["nodes"]) {
    const std::string title = n["title"];
    op_boxes += n["node"].get<int>() >= 0;
    params += n["subtitle"] == "[16, 32]" || n["subtitle"] == "[32, 4]";
    saw_matmul |= title.find("matmul") != std::string::npos;
    saw_relu |= title.find("relu") != std::string::npos;
    saw_loss |= title.find("cross_entropy") != std::string::npos;
  }
  CHECK(op_boxes == graph_nodes);  // every node once
  CHECK(params == 2);  // w1 and w2 as leaf boxes with their shapes
  CHECK(saw_matmul);
  CHECK(saw_relu);
  CHECK(saw_loss);
  // The highlighted box is the node the last step ran, and the dump says which step that was.
  const int current = s["current_node"];
  CHECK(s["highlighted_node"] == current);
  const auto& mem = s["memory"];
  REQUIRE(!mem.empty());
  CHECK(mem.back()["node"] == current);
  CHECK(mem.back()["step"] == s["step"]);
  CHECK(mem.back()["phase"] == "backward");
  CHECK(s["selected"] == "n3");
  const auto* sel = box(s, "n3");
  REQUIRE(sel);
  CHECK((*sel)["selected"] == true);

  // The image: not blank, and the current step's box is outlined in the highlight orange.
  std::map<uint32_t, int> colors;
  for (size_t i = 0; i < r.pixels.size(); i += 4 * 97)
    colors[(r.pixels[i] << 16) | (r.pixels[i + 1] << 8) | r.pixels[i + 2]]++;
  CHECK(colors.size() > 20);
  const auto* cur = box(s, "n" + std::to_string(current));
  REQUIRE(cur);
  const auto& rect = (*cur)["rect"];
  const float x0 = rect[0], y0 = rect[1], x1 = rect[2], y1 = rect[3];
  INFO("current box " << x0 << "," << y0 << " - " << x1 << "," << y1);
  CHECK(x1 - x0 > 20);
  CHECK(count_color(r, x0 - 3, y0 - 3, x1 + 3, y1 + 3, 255, 140, 0, 12) > static_cast<int>(x1 - x0));
  // Its label is drawn: dark text pixels inside the box (light theme text is #111827).
  CHECK(count_color(r, x0 + 4, y0 + 4, x1 - 4, y1 - 4, 17, 24, 39, 60) > 15);
  // ...and a box that is not current has no highlight outline.
  for (const auto& n : s["nodes"]) {
    if (n["current"] == true || n["next"] == true || n["node"].get<int>() < 0) continue;
    const auto& q = n["rect"];
    const float w = q[2].get<float>() - q[0].get<float>();
    CHECK(count_color(r, q[0].get<float>() + 4, q[1].get<float>() + 4, q[2].get<float>() - 4, q[3].get<float>() - 4,
                      255, 140, 0, 12) < w / 4);
    break;
  }
}

TEST_CASE("gui: toggling the backward view hides the backward nodes", "[viz]") {
  const GuiRun r = run_gui("forward_only", "step;toggle backward", 12);
  REQUIRE(r.rc == 0);
  CHECK(r.state["view"] == "forward");
  int ops = 0;
  for (const auto& n : r.state["nodes"]) {
    ops += n["node"].get<int>() >= 0;
    CHECK(std::string(n["title"]).find("backward") == std::string::npos);
  }
  CHECK(ops > 0);
  CHECK(ops < r.state["graph_nodes"].get<int>());
}

TEST_CASE("gui: a console statement and a fold change the graph in the next frame", "[viz]") {
  const GuiRun r = run_gui("console_fold", "exec z = relu(logits) * 2;fold dense;select z;theme dark", 20);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  const auto* z = box(s, s["selected"]);
  REQUIRE(z);
  CHECK((*z)["subtitle"] == "z");
  CHECK(std::string((*z)["title"]).find("mul") != std::string::npos);
  const nlohmann::json* dense = nullptr;  // each call of the function folded into a box of its own
  int folded = 0;
  for (const auto& n : s["nodes"])
    if (std::string(n["key"]).rfind("s:dense@", 0) == 0) {
      dense = &n;
      ++folded;
    }
  REQUIRE(dense);
  CHECK(folded == 2);
  CHECK(std::string((*dense)["title"]) == "dense()");
  CHECK((*dense)["folded_nodes"].get<int>() == 2);
  CHECK(s["theme"] == "dark");
  // The dark theme keeps the highlight colour on the last step's box (here: z's mul).
  const auto& rect = (*z)["rect"];
  CHECK((*z)["current"] == true);
  CHECK(count_color(r, rect[0].get<float>() - 3, rect[1].get<float>() - 3, rect[2].get<float>() + 3,
                    rect[3].get<float>() + 3, 255, 140, 0, 12) > 20);
}

TEST_CASE("gui: a mouse click on a box selects it and the inspector shows it", "[viz]") {
  const GuiRun r = run_gui("click", "step;click n2", 8);
  REQUIRE(r.rc == 0);
  CHECK(r.state["action_errors"].empty());
  CHECK(r.state["selected"] == "n2");
  const auto* b = box(r.state, "n2");
  REQUIRE(b);
  CHECK((*b)["selected"] == true);
}

TEST_CASE("gui: statements typed later do not move the graph on screen", "[viz]") {
  const GuiRun before = run_gui("stable_before", "", 20);
  const GuiRun after = run_gui("stable_after", "exec q = h * 3;exec r = relu(q)", 24);
  REQUIRE(before.rc == 0);
  REQUIRE(after.rc == 0);
  CHECK(after.state["graph_nodes"].get<int>() == before.state["graph_nodes"].get<int>() + 2);
  CHECK(after.state["layouts"].get<int>() > before.state["layouts"].get<int>());
  // The anchor (the first box) stays where it was; the new boxes are added around it.
  const auto* a = box(before.state, "n0");
  const auto* b = box(after.state, "n0");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(std::abs((*a)["rect"][0].get<float>() - (*b)["rect"][0].get<float>()) < 1.f);
  CHECK(std::abs((*a)["rect"][1].get<float>() - (*b)["rect"][1].get<float>()) < 1.f);
}

TEST_CASE("gui: a bad action fails with a message", "[viz]") {
  const GuiRun r = run_gui("bad_action", "dance", 3);
  CHECK(r.rc != 0);
  REQUIRE(r.state.is_object());
  CHECK(!r.state["action_errors"].empty());
}

TEST_CASE("gui: static mode shows the compiled program being stepped, fused nodes included", "[viz][static]") {
  const GuiRun r = run_gui("static_program",
                           "exec :mode static;exec xs = input(\"xs\", [4, 16]);exec ws2 = param(randn([16, 8]));"
                           "exec ls = tanh(xs @ ws2 * 2 + 1).sum();exec compile(ls);"
                           "exec run(ls, xs=randn([4, 16]), step=True);step 3",
                           16);
  REQUIRE(r.rc == 0);
  CHECK(r.state["mode"] == "static");
  CHECK(r.state["program_nodes"].get<int>() > 0);
  bool fused = false;
  for (const auto& n : r.state["nodes"]) fused = fused || std::string(n["title"]).find("fused(") != std::string::npos;
  CHECK(fused);
  CHECK(r.state["highlighted_node"] == r.state["current_node"]);
  CHECK(r.state["next_node"].get<int>() >= 0);
}

TEST_CASE("gui: File > Open shows an ONNX model (the Transformer encoder) traced in static mode", "[viz][static]") {
  const std::string kReveal =
      "select /layer/self_attn/MatMul;select /layer/self_attn/Gemm;select /layer/norm1/LayerNormalization;"
      "select /layer/Relu;select /layer/norm2/LayerNormalization;select /layer/self_attn/Softmax";
  const std::string dir = OPSCOPE_TEST_OUT;
  const std::string png = dir + "/onnx_encoder.png", json = dir + "/onnx_encoder.json";
  std::remove(png.c_str());
  std::remove(json.c_str());
  const std::string cmd = std::string("'") + OPSCOPE_BIN + "' gui --open '" + OPSCOPE_SOURCE_DIR +
                          "/assets/models/encoder.onnx' --frames 10 --screenshot '" + png + "' --state-json '" + json +
                          "' --actions '" + kReveal + "'";
  // The model opens folded by its PyTorch modules; selecting a node by its ONNX name reveals it.
  GuiRun r;
  r.rc = std::system(cmd.c_str());
  REQUIRE(r.rc == 0);
  std::ifstream f(json);
  REQUIRE(f);
  r.state = nlohmann::json::parse(f);
  int channels = 0;
  unsigned char* data = stbi_load(png.c_str(), &r.w, &r.h, &channels, 4);
  REQUIRE(data);
  r.pixels.assign(data, data + static_cast<size_t>(r.w) * static_cast<size_t>(r.h) * 4);
  stbi_image_free(data);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  CHECK(s["mode"] == "static");
  // One box per opscope node (PyTorch's shape arithmetic folded away) or a folded module's box
  // counting its nodes, named as in the file; initializers as parameter pills with their shapes.
  int ops = 0, params = 0, folded = 0;
  std::set<std::string> names;
  for (const auto& n : s["nodes"]) {
    if (n["node"].get<int>() >= 0) {
      ++ops;
      names.insert(n["subtitle"].get<std::string>());
    }
    params += n["title"].get<std::string>().rfind("layer.", 0) == 0;
    folded += n.value("folded_nodes", 0);
  }
  CHECK(ops + folded == s["graph_nodes"].get<int>());
  CHECK(s["graph_nodes"].get<int>() < 40);
  CHECK(params > 0);
  for (const char* n : {"/layer/self_attn/MatMul", "/layer/self_attn/Softmax", "/layer/self_attn/Gemm",
                        "/layer/norm1/LayerNormalization", "/layer/Relu", "/layer/norm2/LayerNormalization"})
    CHECK(names.count(n) == 1);
  CHECK(s["selected"] != "");
  // The softmax (off to the right) selected. (The view keeps the readable zoom of its first fit
  // and scrolls to it: the parameters may be out of view, the Fit below shows them.)
  const auto* sel = box(s, s["selected"]);
  REQUIRE(sel);
  CHECK((*sel)["subtitle"] == "/layer/self_attn/Softmax");
  CHECK((*sel)["selected"] == true);
  // The picture: parameter pills drawn in their yellow (more than the legend's swatch), the
  // out_proj's beside its Gemm.
  const GuiRun gemm = run_gui("onnx_encoder_gemm", "select /layer/self_attn/Gemm", 10,
                              "--open '" + std::string(OPSCOPE_SOURCE_DIR) + "/assets/models/encoder.onnx'");
  REQUIRE(gemm.rc == 0);
  const auto& c = gemm.state["canvas"];
  CHECK(count_color(gemm, c[0], c[1], c[2], c[3], 253, 230, 138, 8) > 200);
}

TEST_CASE("gui: the backward pass runs in a lane below, each node under the forward node it differentiates", "[viz]") {
  const GuiRun r = run_gui("lanes", "step 3", 8);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  float forward_bottom = 0;
  for (const auto& b : s["nodes"])
    if (b["lane"] == "forward") forward_bottom = std::max(forward_bottom, y1(b));
  // A backward node's group (the boxes drawn under one forward node) is centred under it.
  std::map<std::string, std::pair<float, float>> group;  // anchor -> x extent
  int backward_ops = 0;
  for (const auto& b : s["nodes"]) {
    if (b["phase"] != "backward") continue;
    INFO(b["key"] << " " << b["title"]);
    CHECK(b["lane"] == "backward");
    CHECK(y0(b) > forward_bottom);
    if (b["kind"] != "op") continue;
    ++backward_ops;
    REQUIRE(!std::string(b["anchor"]).empty());
    auto [it, fresh] = group.emplace(b["anchor"], std::make_pair(x0(b), x1(b)));
    if (!fresh) it->second = {std::min(it->second.first, x0(b)), std::max(it->second.second, x1(b))};
  }
  CHECK(backward_ops == s["graph_nodes"].get<int>() - 6);  // the MLP's 6 forward nodes
  for (const auto& [anchor, extent] : group) {
    const auto* a = box(s, anchor);
    REQUIRE(a);
    INFO("anchor " << anchor);
    CHECK((*a)["phase"] == "forward");
    CHECK(std::abs((extent.first + extent.second) / 2 - (x0(*a) + x1(*a)) / 2) < 2.f);
  }
  // Every drawn edge names its boxes and its curve; gradients run right to left.
  int gradients = 0;
  for (const auto& e : s["edges"]) {
    const auto* from = box(s, e["from"]);
    const auto* to = box(s, e["to"]);
    REQUIRE(from);
    REQUIRE(to);
    REQUIRE(e["points"].size() >= 4);
    if (e["kind"] != "gradient") continue;
    ++gradients;
    CHECK(e["points"].back()[0].get<float>() <= e["points"][0][0].get<float>() + 1.f);
  }
  CHECK(gradients > 5);
}

TEST_CASE("gui: at Fit a graph too big to read folds its calls; no box is narrower than its label", "[viz]") {
  const GuiRun r = run_gui("fit_transformer", "fit;search matmul", 8, kTransformer);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  CHECK(!s["auto_folded"].empty());
  CHECK(s["text_px"].get<float>() >= s["readable_text_px"].get<float>() - 0.01f);
  const nlohmann::json* attention = nullptr;
  for (const auto& b : s["nodes"]) {
    INFO(b["key"] << " " << b["title"] << " " << x1(b) - x0(b) << " px, label " << b["label_px"]);
    CHECK(x1(b) - x0(b) >= b["label_px"].get<float>());
    if (b["title"] == "attention()") attention = &b;
  }
  REQUIRE(attention);
  CHECK((*attention)["kind"] == "folded");
  CHECK((*attention)["folded_nodes"].get<int>() == 13);
  CHECK((*attention)["matched"] == true);  // its matmuls are found inside the fold
  // The picture: the folded box's label drawn in dark text.
  CHECK(count_color(r, x0(*attention) + 4, y0(*attention) + 4, x1(*attention) - 4, y1(*attention) - 4, 17, 24, 39, 60) >
        15);
}

TEST_CASE("gui: a click on a folded call unfolds it", "[viz]") {
  const GuiRun r = run_gui("unfold_click", "fit;click attention()", 10, kTransformer);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  CHECK(count_titled(s, "attention()") == 0);
  CHECK(count_titled(s, "scaled_dot_product_attention") == 1);
  int heads_frames = 0;  // its nested calls are frames or folded boxes now
  for (const auto& c : s["clusters"]) heads_frames += c["label"] == "heads()";
  CHECK(count_titled(s, "heads()") + heads_frames >= 1);
}

TEST_CASE("gui: a parameter's initialisation and a lesson's checks are not in the figure", "[viz][lesson]") {
  const GuiRun r = run_gui("not_the_model", "exec w9 = param(randn(16, 32) * 0.1)", 6);
  REQUIRE(r.rc == 0);
  CHECK(r.state["action_errors"].empty());
  CHECK(count_titled(r.state, "mul(·, 0.1)") == 0);
  CHECK(box(r.state, "n17") == nullptr);  // the mul that made w9's first value
  // Lesson 9: its checks and quizzes index tensors; at most the slices its cells make are drawn:
  // the print of W.grad[3] and W.grad[0], and BatchNorm's imgs[0:1] and y_eval[0:1]. (Its
  // simulated-GPU cells loop over a launch's sites, and a loop drops the tape no value reaches,
  // dead slices included: test_lesson checks block by block, on the runner the window uses, that
  // no check or quiz adds one.) `graph`: the lesson's show: kernel_lab brought the Kernel Lab's
  // tab over the graph.
  const GuiRun l = run_gui("lesson9_checks", "lesson all;graph", 4, "--lesson 9");
  REQUIRE(l.rc == 0);
  CHECK(l.state["action_errors"].empty());
  CHECK(count_titled(l.state, "slice") <= 4);
}

TEST_CASE("gui: the knowledge map is a figure in both languages; a click opens the lesson at its section",
          "[viz][lesson]") {
  const GuiRun en = run_gui("map_en", "map", 6, "--lesson 10");
  REQUIRE(en.rc == 0);
  CHECK(en.state["map_shown"] == true);
  REQUIRE(en.state["map"].size() >= 12);
  bool conv = false;
  for (const auto& c : en.state["map"])
    conv = conv || (c["id"] == "conv" && c["label"] == "Convolution" && c["status"] == "not yet");
  CHECK(conv);
  const GuiRun zh = run_gui("map_zh", "lesson lang zh;map;pause;lesson map conv", 12, "--lesson 10");
  REQUIRE(zh.rc == 0);
  CHECK(zh.state["action_errors"].empty());
  bool zh_label = false;
  for (const auto& c : zh.state["map"]) zh_label = zh_label || (c["id"] == "conv" && c["label"] == "卷积");
  CHECK(zh_label);
  // The click opened lesson 6 at "Different cost": the cells before it ran (conv2d nodes), and
  // the graph is shown again.
  CHECK(zh.state["map_shown"] == false);
  CHECK(count_titled(zh.state, "conv2d") > 0);
}

TEST_CASE("gui: the metrics panel plots each logged series, drawn while the loop ran, the current step marked",
          "[viz]") {
  const std::string live = std::string(OPSCOPE_TEST_OUT) + "/metrics_live.png";
  std::remove(live.c_str());
  const GuiRun r = run_gui("metrics", "", 6, script_arg("train.ops"), "--live-screenshot '" + live + "'");
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  REQUIRE(s.is_object());
  // The script's loop: 4 epochs of 8 batches, log("loss") and log("accuracy") per step.
  REQUIRE(s["metrics"].contains("loss"));
  CHECK(s["metrics"]["loss"]["points"] == 32);
  CHECK(s["metrics"]["accuracy"]["last_step"] == 31);
  CHECK(s["metrics"]["loss"]["last"].get<double>() < 1.0);  // it learned something
  CHECK(s["metrics_charts"] == 2);  // the Metrics tab came forward with a chart per series
  CHECK(s["idle_frames"].get<int>() >= 1);  // frames were drawn from inside the loop
  // The current step's line, in the highlight orange, in the panel under the graph.
  const float x = s["metrics_marker_x"];
  REQUIRE(x > 0);
  CHECK(count_color(r, x - 2, r.h * 0.7f, x + 3, static_cast<float>(r.h), 255, 140, 0, 12) > 40);
  // A frame drawn while the loop ran: the panel was there already, its line in the highlight orange.
  {
    GuiRun mid;
    int channels = 0;
    unsigned char* data = stbi_load(live.c_str(), &mid.w, &mid.h, &channels, 4);
    REQUIRE(data);
    mid.pixels.assign(data, data + static_cast<size_t>(mid.w) * static_cast<size_t>(mid.h) * 4);
    stbi_image_free(data);
    CHECK(count_color(mid, 0, mid.h * 0.7f, mid.w * 0.66f, static_cast<float>(mid.h), 255, 140, 0, 12) > 40);
  }
  // The optimizer's state is a memory category of its own.
  const auto& mem = s["memory"];
  REQUIRE(!mem.empty());
  CHECK(mem.back()["bytes"]["optimizer state"].get<int64_t>() == 2 * (8 * 32 + 32 + 32 * 3) * 4 + 3 * 4);
}

TEST_CASE("gui: a long statement keeps the window drawing, and Interrupt stops and undoes it", "[viz]") {
  // "interrupt 3": the Interrupt button is clicked in the third frame drawn while the loop runs.
  const GuiRun r =
      run_gui("interrupt",
              "interrupt 3;exec keep = logits\nfor i in range(1000000): z = matmul(randn(64, 64), randn(64, 64))", 8);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["idle_frames"].get<int>() >= 3);  // frames went on while the statement ran
  CHECK(s["running"] == false);
  bool reported = false;
  for (const auto& line : s["console"])
    reported = reported || std::string(line).rfind("interrupted at <console>:", 0) == 0;
  CHECK(reported);
  CHECK(s["graph_nodes"] == 16);  // the MLP's nodes, as before the loop (relu's backward is one node)
  CHECK(s["steps_left"] == 10);  // the stepped backward pass is still there
}

TEST_CASE("gui: a loop's tape shows its last iteration and says how much was dropped", "[viz]") {
  const GuiRun r =
      run_gui("loop_tape", "exec for i in range(60): l2 = cross_entropy(dense(relu(dense(x, w1, b1)), w2, b2), labels)",
              6);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["loop"]["iterations"] == 60);
  CHECK(s["loop"]["dropped_iterations"] == 59);
  CHECK(s["graph_dropped_nodes"].get<int>() == 59 * 6);  // 6 nodes an iteration: 2 matmuls, 2 adds, relu, cross_entropy
  CHECK(s["graph_nodes"] == 16 + 6);  // the MLP and the loop's last iteration
  CHECK(s["steps_left"] == 10);  // the stepped pass keeps what it needs
  // The figure's loop frame counts the same 60 iterations though 59 of them were dropped.
  int loop_frames = 0;
  for (const auto& c : s["clusters"])
    if (c["loop"] == true) {
      ++loop_frames;
      CHECK(c["iterations"] == 60);
      CHECK(std::string(c["label"]).find("last of 60 iterations") != std::string::npos);
    }
  CHECK(loop_frames == 1);
}

TEST_CASE("gui: an @op's node expands to the ops of its body, its backward node too", "[viz][op]") {
  // Nodes: #0 matmul, #1 swish (the @op), #2 sum; backward: #3 reshape, #4 expand, #5 swish_backward, ...
  const GuiRun r = run_gui("custom_op", "step 3;expand n1;expand n5;select n5.5", 16, script_arg("custom_op.ops"));
  REQUIRE(r.rc == 0);
  CHECK(r.state["action_errors"].empty());
  CHECK(box(r.state, "n1") == nullptr);  // shown as its body instead
  for (const char* key : {"n1.0", "n1.1", "n1.2", "n5.0", "n5.5", "n0", "n2"}) {
    INFO(key);
    CHECK(box(r.state, key));
  }
  const auto* sig = box(r.state, "n1.1");
  REQUIRE(sig);
  CHECK(std::string((*sig)["title"]).find("sigmoid") != std::string::npos);
  CHECK((*sig)["subtitle"] == "s");
  const auto* bw = box(r.state, "n5.5");
  REQUIRE(bw);
  CHECK((*bw)["current"] == true);  // the backward node's step ran its whole body
  CHECK((*bw)["selected"] == true);
  const GuiRun folded = run_gui("custom_op_folded", "step 3", 10, script_arg("custom_op.ops"));
  REQUIRE(folded.rc == 0);
  CHECK(box(folded.state, "n1"));
  CHECK(box(folded.state, "n1.1") == nullptr);
}

namespace {
const std::string kVitTiny = std::string("--open '") + OPSCOPE_SOURCE_DIR + "/tests/models/vit_b_16_tiny.onnx'";

bool inside_canvas(const nlohmann::json& s, const nlohmann::json& b) {
  const auto& c = s["canvas"];
  return x0(b) >= c[0].get<float>() - 0.5f && y0(b) >= c[1].get<float>() - 0.5f && x1(b) <= c[2].get<float>() + 0.5f &&
         y1(b) <= c[3].get<float>() + 0.5f;
}
}  // namespace

TEST_CASE("gui: a real model's first frame comes before its layout; then it fits the window, read in the dump",
          "[viz][static]") {
  for (const std::string mode : {"slices", "thread"}) {
    INFO(mode);
    const GuiRun r = run_gui("vit_open_" + mode, "", mode == "slices" ? 30 : 40, kVitTiny, "--layout " + mode);
    REQUIRE(r.rc == 0);
    const auto& s = r.state;
    CHECK(s["layout_mode"] == mode);
    CHECK(s["layout_current"] == true);
    // Slices (as in a browser): the first frame is drawn before any layout step has run.
    if (mode == "slices") CHECK(s["open_frame"].get<int>() >= 1);
    CHECK(s["open_ms"].get<double>() > 0);
    CHECK(s["max_frame_ms"].get<double>() > 0);
    CHECK(s["layout_ms_total"].get<double>() > 0);
    CHECK(s["graph_nodes"].get<int>() > 600);
    // Folded to fit: the encoder is one box, and every box is on screen. (Its top level, a chain
    // of nine ops and calls, is wider than the canvas at the readable size: Fit shows it smaller
    // rather than cut it.)
    CHECK(count_titled(s, "encoder()") == 1);
    CHECK(s["text_px"].get<float>() >= 0.6f * s["readable_text_px"].get<float>() - 0.01f);
    for (const auto& b : s["nodes"]) {
      INFO(b["key"]);
      CHECK(inside_canvas(s, b));
    }
  }
}

TEST_CASE("gui: stepping a model's backward reveals the current node inside its folds and scrolls to it",
          "[viz][static]") {
  const std::string run =
      "exec loss = y.sum();exec compile(loss);exec run(loss, x=randn([1, 3, 32, 32]), step=True);step bwd;step bwd";
  const GuiRun r = run_gui("vit_step", run, 24, kVitTiny);
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  CHECK(s["phase"] == "backward");
  const int current = s["current_node"];
  CHECK(s["highlighted_node"] == current);
  const nlohmann::json* cur = nullptr;
  for (const auto& b : s["nodes"])
    if (b["current"] == true) cur = &b;
  REQUIRE(cur);
  CHECK((*cur)["kind"] == "op");  // its own box: the calls around it unfolded
  CHECK(inside_canvas(s, *cur));
  // A node deep in the encoder, selected by its name: revealed, and the view scrolled to it.
  const GuiRun sel_run =
      run_gui("vit_select", run + ";select /encoder/layers/encoder_layer_5/mlp/mlp.0/MatMul", 24, kVitTiny);
  REQUIRE(sel_run.rc == 0);
  const auto* sel = box(sel_run.state, sel_run.state["selected"]);
  REQUIRE(sel);
  CHECK((*sel)["subtitle"] == "/encoder/layers/encoder_layer_5/mlp/mlp.0/MatMul");
  CHECK(inside_canvas(sel_run.state, *sel));
}

TEST_CASE("gui: Fit mid-backward shows every box of the figure (folding more, not cutting)", "[viz]") {
  // The Transformer block's backward pass stepped: its script with backward(loss, step=True).
  std::ifstream in(std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/transformer_block.ops");
  std::stringstream code;
  code << in.rdbuf();
  std::string text = code.str();
  const size_t at = text.rfind("backward(loss)");
  REQUIRE(at != std::string::npos);
  text.replace(at, 14, "backward(loss, step=True)");
  const std::string script = std::string(OPSCOPE_TEST_OUT) + "/transformer_step.ops";
  std::ofstream(script) << text;
  const GuiRun r = run_gui("fit_mid_backward", "step 10;fit", 12, "--script '" + script + "'");
  REQUIRE(r.rc == 0);
  const auto& s = r.state;
  CHECK(s["action_errors"].empty());
  CHECK(s["phase"] == "backward");
  // Both calls folded, the one holding the step last; the whole figure on screen. (Its long
  // layer_norm boxes keep even the folded block wider than the canvas at 11 px text: Fit shows
  // it at the largest text that fits, never below 0.6 of that.)
  CHECK(s["auto_folded"].size() == 2);
  CHECK(s["text_px"].get<float>() >= 0.6f * s["readable_text_px"].get<float>() - 0.01f);
  for (const auto& b : s["nodes"]) {
    INFO(b["key"] << " " << b["title"] << " " << x1(b) - x0(b) << " px, label " << b["label_px"]);
    CHECK(inside_canvas(s, b));
    CHECK(x1(b) - x0(b) >= b["label_px"].get<float>());
  }
}

// The console's statements are kept for the next session (the browser's reload, a window
// closed): it offers them, Restore runs them again; a statement that failed is not kept.
TEST_CASE("gui: the next session restores the console's statements; a failed one is not kept", "[viz]") {
  const GuiRun first = run_gui("journal_first", "exec kept = 6 * 7;exec bad = no_such_name + 1;exec twice = kept * 2",
                               8, "", "--journal");
  CHECK(first.state["action_errors"].size() == 1);  // the failing statement, reported
  CHECK(first.state["journal"]["kept"] == 2);
  std::ifstream f(config_dir("journal_first") + "/opscope/workspace.json");
  const nlohmann::json journal = nlohmann::json::parse(f);
  CHECK(journal["statements"] == nlohmann::json::array({"kept = 6 * 7", "twice = kept * 2"}));

  const GuiRun offered = run_gui("journal_offer", "", 4, "", "--journal", "journal_first");
  CHECK(offered.rc == 0);
  CHECK(offered.state["journal"]["offered"] == 2);
  const GuiRun restored =
      run_gui("journal_restore", "workspace restore;exec print(twice)", 8, "", "--journal", "journal_first");
  CHECK(restored.rc == 0);
  CHECK(restored.state["journal"]["offered"] == 0);
  CHECK(restored.state["journal"]["kept"] == 3);
  CHECK(restored.state["console"].dump().find("\"84\"") != std::string::npos);
  // Without --journal a headless run neither offers nor keeps.
  const GuiRun headless = run_gui("journal_headless", "exec z = 1", 4, "", "", "journal_first");
  CHECK(headless.state["journal"]["offered"] == 0);
  CHECK(headless.state["journal"]["kept"] == 0);
}

TEST_CASE("gui: a workspace journal that is not one is moved aside, never overwritten", "[viz]") {
  const std::string config = config_dir("journal_broken");
  std::system(("rm -rf '" + config + "' && mkdir -p '" + config + "/opscope'").c_str());
  std::ofstream(config + "/opscope/workspace.json") << "{\"statements\": [1, 2";
  const GuiRun r = run_gui("journal_broken_run", "exec a = 1", 4, "", "--journal", "journal_broken");
  CHECK(r.rc == 0);
  CHECK(r.state["console"].dump().find("workspace.json.unreadable") != std::string::npos);
  std::ifstream kept(config + "/opscope/workspace.json.unreadable");
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  CHECK(text == "{\"statements\": [1, 2");
  CHECK(r.state["journal"]["kept"] == 1);
}

// [SECTION] the figure reads at every scale (issue 40): measured from the state JSON's geometry
namespace {

struct Rect {
  float l, t, r, b;
};
Rect rect_of(const nlohmann::json& r) {
  return {r[0].get<float>(), r[1].get<float>(), r[2].get<float>(), r[3].get<float>()};
}
// Overlapping by more than half a pixel each way (touching borders do not count).
bool overlap(const Rect& a, const Rect& b) {
  return std::min(a.r, b.r) - std::max(a.l, b.l) > 0.5f && std::min(a.b, b.b) - std::max(a.t, b.t) > 0.5f;
}

// What a student sees of a figure: its text size, whether every box is on screen, how much of the
// panel it fills, and where its edge labels run into boxes, into each other, or into what is
// drawn over the boxes and frames: the saved-for-backward badges and the frames' titles.
struct FigureMeasure {
  float text_px = 0, min_text_px = 0;
  int boxes = 0, off_screen = 0, labels = 0, box_label = 0, label_label = 0;
  int titles = 0, badges = 0, title_label = 0, badge_label = 0;
  float cover_w = 0, cover_h = 0;  // the boxes' bounding box over the canvas's width and height
  std::string worst;  // the first overlap found, for the failure message
};
std::ostream& operator<<(std::ostream& os, const FigureMeasure& m) {
  return os << "text " << m.text_px << " px (min " << m.min_text_px << "), " << m.boxes << " boxes, " << m.off_screen
            << " off screen, cover " << m.cover_w << " x " << m.cover_h << ", " << m.labels << " labels, "
            << m.box_label << " box-label and " << m.label_label << " label-label overlaps, " << m.titles
            << " frame titles and " << m.badges << " badges, " << m.title_label << " title-label and " << m.badge_label
            << " badge-label overlaps " << m.worst;
}

FigureMeasure measure_figure(const nlohmann::json& s) {
  FigureMeasure m;
  m.text_px = s["text_px"].get<float>();
  m.min_text_px = s.contains("min_text_px") ? s["min_text_px"].get<float>() : s["readable_text_px"].get<float>();
  const Rect canvas = rect_of(s["canvas"]);
  std::vector<std::pair<std::string, Rect>> boxes, labels;
  Rect all{1e9f, 1e9f, -1e9f, -1e9f};
  for (const auto& b : s["nodes"]) {
    const Rect r = rect_of(b["rect"]);
    boxes.push_back({b["key"], r});
    all = {std::min(all.l, r.l), std::min(all.t, r.t), std::max(all.r, r.r), std::max(all.b, r.b)};
    m.off_screen +=
        !(r.l >= canvas.l - 0.5f && r.t >= canvas.t - 0.5f && r.r <= canvas.r + 0.5f && r.b <= canvas.b + 0.5f);
  }
  m.boxes = static_cast<int>(boxes.size());
  for (const auto& e : s["edges"])
    if (e.contains("label"))
      labels.push_back({e["label"]["text"].get<std::string>() + " on " + e["from"].get<std::string>() + "->" +
                            e["to"].get<std::string>(),
                        rect_of(e["label"]["rect"])});
  m.labels = static_cast<int>(labels.size());
  std::vector<std::pair<std::string, Rect>> titles, badges;
  for (const auto& b : s["nodes"])
    if (b.contains("badge_rect")) badges.push_back({"of " + b["key"].get<std::string>(), rect_of(b["badge_rect"])});
  if (s.contains("frames"))
    for (const auto& f : s["frames"]) {
      if (f.contains("title_rect")) titles.push_back({f["key"], rect_of(f["title_rect"])});
      if (f.contains("badge_rect"))
        badges.push_back({"of frame " + f["key"].get<std::string>(), rect_of(f["badge_rect"])});
    }
  m.titles = static_cast<int>(titles.size());
  m.badges = static_cast<int>(badges.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    for (const auto& [key, r] : boxes)
      if (overlap(labels[i].second, r) && ++m.box_label == 1)
        m.worst = "(" + labels[i].first + " over box " + key + ")";
    for (const auto& [key, r] : titles)
      if (overlap(labels[i].second, r) && ++m.title_label == 1 && m.worst.empty())
        m.worst = "(" + labels[i].first + " over the title of " + key + ")";
    for (const auto& [key, r] : badges)
      if (overlap(labels[i].second, r) && ++m.badge_label == 1 && m.worst.empty())
        m.worst = "(" + labels[i].first + " over the badge " + key + ")";
    for (size_t j = i + 1; j < labels.size(); ++j)
      if (overlap(labels[i].second, labels[j].second) && ++m.label_label == 1 && m.worst.empty())
        m.worst = "(" + labels[i].first + " over " + labels[j].first + ")";
  }
  if (!boxes.empty()) {
    m.cover_w = (all.r - all.l) / (canvas.r - canvas.l);
    m.cover_h = (all.b - all.t) / (canvas.b - canvas.t);
  }
  return m;
}

// After Fit: readable, whole, and filling the panel along the side the figure's aspect fills.
void check_fitted(const FigureMeasure& m) {
  INFO(m);
  WARN(m);
  CHECK(m.text_px >= m.min_text_px - 0.01f);
  CHECK(m.off_screen == 0);
  CHECK(std::max(m.cover_w, m.cover_h) >= 0.6f);
  CHECK(m.box_label == 0);
  CHECK(m.label_label == 0);
  CHECK(m.title_label == 0);
  CHECK(m.badge_label == 0);
}

// The Transformer block with its backward pass stepped (backward(loss, step=True)).
std::string transformer_stepped() {
  std::ifstream in(std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/transformer_block.ops");
  std::stringstream code;
  code << in.rdbuf();
  std::string text = code.str();
  const size_t at = text.rfind("backward(loss)");
  if (at != std::string::npos) text.replace(at, 14, "backward(loss, step=True)");
  const std::string script = std::string(OPSCOPE_TEST_OUT) + "/transformer_step.ops";
  std::ofstream(script) << text;
  return "--script '" + script + "'";
}

}  // namespace

TEST_CASE("gui: the README's MLP figure has no edge label over a box or another label", "[viz][fit]") {
  const GuiRun r = run_gui("labels_mlp", "step 5;select n2", 40, script_arg("mlp.ops"));
  REQUIRE(r.rc == 0);
  const FigureMeasure m = measure_figure(r.state);
  INFO(m);
  WARN(m);
  CHECK(m.labels > 0);  // (the labels are drawn at this size: dropping them all would pass)
  CHECK(m.box_label == 0);
  CHECK(m.label_label == 0);
  CHECK(m.titles > 0);  // (dense()'s frames and the saved tensors' badges are drawn: none would pass)
  CHECK(m.badges > 0);
  CHECK(m.title_label == 0);
  CHECK(m.badge_label == 0);
}

TEST_CASE("gui: the Transformer block at Fit, mid-backward and at the end of backward, is readable and fills the panel",
          "[viz][fit]") {
  const std::string script = transformer_stepped();
  for (const std::string steps : {"step 21", "step 42"}) {
    for (const bool present : {false, true}) {
      INFO(steps << (present ? ", Present" : ""));
      const GuiRun r = run_gui("fit_block", (present ? "view present;" : "") + steps + ";fit", 16, script);
      REQUIRE(r.rc == 0);
      CHECK(r.state["action_errors"].empty());
      CHECK(r.state["phase"] == "backward");
      if (steps == "step 42") CHECK(r.state["steps_left"] == 0);
      if (present) CHECK(r.state["min_text_px"].get<float>() > r.state["readable_text_px"].get<float>());
      check_fitted(measure_figure(r.state));
    }
  }
}

// ViT-B/16's graph at its real depth (tests/models/vit_b_16_tiny.onnx: as deep, narrow).
// No edge label over a box, another label, a frame's title or a badge.
static void check_no_label_overlaps(const FigureMeasure& m) {
  CHECK(m.box_label == 0);
  CHECK(m.label_label == 0);
  CHECK(m.title_label == 0);
  CHECK(m.badge_label == 0);
}

static void check_vit_fit(const std::string& name, const std::string& actions) {
  {
    INFO(actions);
    const GuiRun r = run_gui(name, actions, 40, kVitTiny);
    REQUIRE(r.rc == 0);
    CHECK(r.state["action_errors"].empty());
    const FigureMeasure m = measure_figure(r.state);
    INFO(m);
    WARN(m);
    CHECK(m.text_px >= m.min_text_px - 0.01f);
    CHECK(m.off_screen == 0);
    check_no_label_overlaps(m);
  }
}

TEST_CASE("gui: ViT-B/16 at its opening depth, at Fit: readable, every box on screen, no label over a box",
          "[viz][fit][static]") {
  check_vit_fit("fit_vit", "fit");
}

// With one encoder layer unfolded by the user, ViT-B/16 does not fit the panel at the readable
// size however it wraps (the other 11 layers, folded, and the open one's frames are too wide and
// too tall together), and Fit may not fold what the user opened. It stays readable and scrolls, as
// Netron and Model Explorer do: rows as wide as the panel (it scrolls down only, as a page), the
// layer the user opened whole in view. (It was drawn at 6.6 px, all on screen, nothing legible.)
TEST_CASE(
    "gui: ViT-B/16 with one encoder layer unfolded, at Fit: readable, the open layer in view, scrolling down only",
    "[viz][fit][static]") {
  const GuiRun r =
      run_gui("fit_vit_layer", "fit;unfold encoder;unfold encoder/layers;unfold encoder/layers/encoder_layer_0;fit", 40,
              kVitTiny);
  REQUIRE(r.rc == 0);
  CHECK(r.state["action_errors"].empty());
  const FigureMeasure m = measure_figure(r.state);
  INFO(m);
  WARN(m);
  CHECK(m.text_px >= m.min_text_px - 0.01f);
  CHECK(r.state["figure_scrolls"] == true);  // (it does not fit: were it to, the test of the opening view applies)
  check_no_label_overlaps(m);
  const Rect canvas = rect_of(r.state["canvas"]);
  int layer_parts = 0;
  for (const auto& f : r.state["frames"])
    if (f["key"].get<std::string>().find("encoder_layer_0") != std::string::npos) {  // its frame, each row's part of it
      ++layer_parts;
      const Rect part = rect_of(f["rect"]);
      INFO(f.dump());
      CHECK(part.l >= canvas.l - 0.5f);
      CHECK(part.r <= canvas.r + 0.5f);
      CHECK(part.t >= canvas.t - 0.5f);
      CHECK(part.b <= canvas.b + 0.5f);
    }
  CHECK(layer_parts >= 1);
  int inside = 0;  // the boxes of the open layer: on screen (they are inside its frame's parts)
  for (const auto& b : r.state["nodes"]) {
    const Rect box = rect_of(b["rect"]);
    INFO(b["key"]);
    CHECK(box.l >= canvas.l - 0.5f);  // every box within the panel's width: nothing to scroll sideways
    CHECK(box.r <= canvas.r + 0.5f);
    if (b["key"].get<std::string>().find("encoder_layer_0/") != std::string::npos) {
      ++inside;
      CHECK(box.t >= canvas.t - 0.5f);
      CHECK(box.b <= canvas.b + 0.5f);
    }
  }
  CHECK(inside >= 4);  // ln_1, self_attention, ln_2, mlp (folded inside it)
}

// [SECTION] the Kernel Lab: its chart and warp view through the state dump
namespace {
// The 1-based line of the first line of ops/cuda/matmul.cu containing `text`, as "matmul.cu:N".
std::string matmul_site(const std::string& text) {
  std::ifstream in(std::string(OPSCOPE_SOURCE_DIR) + "/ops/cuda/matmul.cu");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return "matmul.cu:" + std::to_string(n);
  return "not found";
}
// The traced block's counters of the instructions at `where` with this space and access.
std::vector<nlohmann::json> lab_sites(const nlohmann::json& state, const std::string& where, const std::string& space) {
  std::vector<nlohmann::json> out;
  for (const auto& s : state["kernel_lab"]["warp_view"]["sites"])
    if (s["where"] == where && s["space"] == space && s["access"] == "load") out.push_back(s);
  return out;
}
}  // namespace

TEST_CASE("gui: the Kernel Lab shows matmul's CPU algorithms measured and its CUDA kernels simulated", "[viz][sim]") {
  const std::string line = matmul_site("acc += As[ty][k] * Bt[tx][k]");
  for (const std::string algo : {"tiled_conflicting", "tiled_padded"}) {
    INFO(algo);
    const GuiRun r = run_gui("lab_" + algo, "lab matmul 64;lab warp " + algo + ";lab step to " + line, 4);
    REQUIRE(r.rc == 0);
    const auto& lab = r.state["kernel_lab"];
    CHECK(lab["op"] == "matmul");
    CHECK(lab["shown"] == true);
    CHECK(lab["error"] == "");
    int cpu = 0, simulated = 0;
    for (const auto& a : lab["algos"]) {
      INFO(a.dump());
      CHECK(a["ok"] == true);
      if (a["simulated"] == true) {
        ++simulated;
        CHECK(std::string(a["where"]).find("simulated") != std::string::npos);
        CHECK(a["seconds"].get<double>() > 0);
      } else {
        ++cpu;
        CHECK(a["where"] == "CPU, measured");
      }
    }
    CHECK(cpu >= 3);
    CHECK(simulated >= 5);
    // The warp view stepped to the inner product's line: its first request there, warp 0.
    const auto& wv = lab["warp_view"];
    CHECK(wv["kernel"].get<std::string>().find("mm_tiled_transposed_b") != std::string::npos);
    CHECK(wv["request"]["where"] == line);
    CHECK(wv["request"]["source"].get<std::string>().find("Bt[tx][k]") != std::string::npos);
    CHECK(wv["request"]["warp"] == 0);
    CHECK(wv["request"]["phase"] == 1);  // after the barrier that ends the tile's loading
    CHECK(wv["shared_words_stored"].get<int>() > 0);  // the tiles were filled before
    // The two shared reads on that line: As[ty][k] a broadcast (one word, one wavefront), Bt[tx][k]
    // 32 words, in one bank unpadded (32 wavefronts), in 32 banks padded (1).
    const auto reads = lab_sites(r.state, line, "shared");
    REQUIRE(reads.size() == 2);
    const auto& as = reads[0]["words_per_request"] == 1 ? reads[0] : reads[1];
    const auto& bt = reads[0]["words_per_request"] == 1 ? reads[1] : reads[0];
    CHECK(as["words_per_request"] == 1);
    CHECK(as["wavefronts_per_request"] == 1);
    CHECK(as["active_lanes"] == 32);
    CHECK(bt["words_per_request"] == 32);
    CHECK(bt["wavefronts_per_request"] == (algo == "tiled_conflicting" ? 32 : 1));
    CHECK(as["requests"] == 32 /*warps*/ * 2 /*tiles*/ * 32 /*k*/);
  }
}

TEST_CASE("gui: the warp view steps naive matmul's 16x16 block: 2 sectors per request of A and of B", "[viz][sim]") {
  const std::string line = matmul_site("acc += A[int64_t(i) * g.K + k] * B[int64_t(k) * g.N + j]");
  const GuiRun r = run_gui("lab_naive", "lab matmul 64;lab warp naive;lab step to " + line + ";lab step", 4);
  REQUIRE(r.rc == 0);
  const auto& wv = r.state["kernel_lab"]["warp_view"];
  CHECK(wv["block"] == nlohmann::json({16, 16, 1}));
  CHECK(wv["request"]["where"] == line);
  CHECK(wv["request"]["space"] == "global");
  CHECK(wv["request"]["sectors"] == 2);  // the second of the line's two loads, stepped to by `lab step`
  CHECK(wv["request"]["lanes"].size() == 32);
  const auto reads = lab_sites(r.state, line, "global");
  REQUIRE(reads.size() == 2);
  for (const auto& s : reads) {
    CHECK(s["sectors_per_request"] == 2);
    CHECK(s["active_lanes"] == 32);
  }
  CHECK(wv["barriers"].empty());
}

TEST_CASE("gui: the warp view replays a @kernel written in the language: a transpose's column store, 32 sectors",
          "[viz][sim]") {
  const GuiRun r = run_gui("lab_language_kernel", "lab kernel;lab step", 4, script_arg("kernel_transpose.ops"));
  REQUIRE(r.rc == 0);
  const auto& lab = r.state["kernel_lab"];
  CHECK(lab["shown"] == true);
  const auto& wv = lab["warp_view"];
  CHECK(wv["kernel"] == "transpose32");
  CHECK(wv["block"] == nlohmann::json({32, 32, 1}));
  // The line's load first, then (`lab step`) its store: warp 0's 32 lanes write 32 rows of B.
  CHECK(wv["request"]["where"] == "kernel_transpose.ops:7");
  CHECK(wv["request"]["source"] == "B[col, row] = A[row, col]");
  CHECK(wv["request"]["access"] == "store");
  CHECK(wv["request"]["sectors"] == 32);
  CHECK(wv["request"]["lanes"].size() == 32);
  const auto loads = lab_sites(r.state, "kernel_transpose.ops:7", "global");
  REQUIRE(loads.size() == 1);
  CHECK(loads[0]["sectors_per_request"] == 4);
}
