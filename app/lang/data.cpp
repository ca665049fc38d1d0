// Data for training: load_idx(path) (IDX files, gzip too), fashion_mnist(split) from Debian's
// dataset-fashion-mnist, and batches(x, y, batch_size=64, shuffle=True, seed=0), which a for
// loop walks as (xb, yb) pairs of fresh tensors (the data loader's copies, not graph nodes).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "app/lang/call_args.h"
#include "app/lang/idx.h"
#include "app/lang/interpreter.h"
#include "app/lang/training.h"

namespace opscope::lang {

namespace {

// The folders fashion_mnist() looks in: $OPSCOPE_DATA/fashion-mnist, then Debian's.
std::vector<std::string> fashion_mnist_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("OPSCOPE_DATA"); d && *d) dirs.push_back(std::string(d) + "/fashion-mnist");
  dirs.push_back("/usr/share/datasets/fashion-mnist");
  return dirs;
}

// `stem`-ubyte.gz (or without .gz) in the first folder that has it; "" if none does.
std::string find_dataset_file(const std::string& stem) {
  for (const auto& dir : fashion_mnist_dirs())
    for (const char* ext : {"-ubyte.gz", "-ubyte"}) {
      const std::string p = dir + "/" + stem + ext;
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) return p;
    }
  return {};
}

int64_t limit_arg(Interpreter& in, CallArgs& a, const char* fn) {
  const Value* v = keyword(a, "limit");
  if (!v || v->kind() == Value::none) return -1;
  if (v->kind() != Value::integer || v->as_int() < 0)
    in.fail(a.pos, std::string(fn) + "(): limit must be an integer >= 0", "limit=1000");
  return v->as_int();
}

Tensor loaded(Interpreter& in, CallArgs& a, const std::string& path, int64_t limit) {
  try {
    return load_idx(path, limit).to(in.ws().default_device(), MemCategory::input);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    in.fail(a.pos, e.what(), e.hint());
  }
}

// Mini-batches of (x, y) in a shuffled (or the given) order, made when the loop asks for them.
class Batches final : public NativeObject {
 public:
  Tensor x, y;  // y may be undefined: batches(x) yields tensors, not pairs
  int64_t batch_size = 64;
  bool shuffle = true, drop_last = false;
  uint64_t seed = 0;
  std::vector<int64_t> order;

  int64_t samples() const { return x.size(0); }
  std::string type_name() const override { return "batches"; }
  std::string repr() const override {
    return "<batches: " + std::to_string(length()) + " of " + std::to_string(batch_size) + " from " +
           std::to_string(samples()) + " samples" + (shuffle ? ", shuffled (seed " + std::to_string(seed) + ")" : "") +
           ">";
  }
  std::vector<std::string> members() const override { return {"batch_size", "samples", "shuffle", "seed"}; }
  bool has_method(const std::string&) const override { return false; }
  std::optional<Value> attr(Interpreter&, const std::string& n, Pos) override {
    if (n == "batch_size") return Value::Int(batch_size);
    if (n == "samples") return Value::Int(samples());
    if (n == "shuffle") return Value::Bool(shuffle);
    if (n == "seed") return Value::Int(static_cast<int64_t>(seed));
    return std::nullopt;
  }
  Value call(Interpreter& in, const std::string& m, CallArgs& a) override {
    in.fail(a.pos, "batches has no method " + m);
  }
  int64_t length() const override {
    return drop_last ? samples() / batch_size : (samples() + batch_size - 1) / batch_size;
  }
  bool shows_progress() const override { return true; }

  Value item(Interpreter& in, int64_t i, Pos p) override {
    const int64_t lo = i * batch_size, hi = std::min(samples(), lo + batch_size);
    try {
      Tensor xb = gather(x, lo, hi), yb = y.defined() ? gather(y, lo, hi) : Tensor();
      if (!yb.defined()) return Value::Tensor_(xb);
      return Value::List({Value::Tensor_(xb), Value::Tensor_(yb)}, Value::tuple);
    } catch (const Error& e) {
      in.fail(p, e.what(), e.hint());
    }
  }

 private:
  // Rows order[lo..hi) of t (contiguous, CPU or not) copied into a new tensor.
  Tensor gather(const Tensor& t, int64_t lo, int64_t hi) const {
    Shape s = t.shape();
    s[0] = hi - lo;
    Tensor out = Tensor::empty(s, t.dtype(), MemCategory::input, t.device());
    if (t.device() == Device::cpu) {
      const size_t row = static_cast<size_t>(t.nbytes() / std::max<int64_t>(1, t.size(0)));
      const char* src = static_cast<const char*>(t.raw_data());
      char* dst = static_cast<char*>(out.raw_data());
      for (int64_t k = lo; k < hi; ++k)
        std::memcpy(dst + static_cast<size_t>(k - lo) * row, src + static_cast<size_t>(order[k]) * row, row);
    } else {
      for (int64_t k = lo; k < hi; ++k)
        out.view_slice(0, k - lo, k - lo + 1, 1).copy_from(t.view_slice(0, order[k], order[k] + 1, 1));
    }
    return out;
  }
};

}  // namespace

void install_data_builtins(std::map<std::string, Builtin>& table) {
  BuiltinTable B(table);
  B.add("load_idx", "load_idx(path, limit=None)",
        "reads an IDX file (MNIST's format; .gz too): uint8 images become float32 in [0, 1], labels int64",
        [](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, "load_idx", {"limit"});
          need_args(in, a, "load_idx", 1, 1);
          if (a.positional[0].kind() != Value::string) in.fail(a.positions[0], "load_idx() needs a file name");
          const std::string path = in.resolve_path(a.positional[0].as_str(), FileMode::read, a.positions[0]);
          return Value::Tensor_(loaded(in, a, path, limit_arg(in, a, "load_idx")));
        });
  B.add("fashion_mnist", "fashion_mnist(split=\"train\", limit=None)",
        "Fashion-MNIST: (images [N, 1, 28, 28] float32 in [0, 1], labels [N] int64); split \"train\" (60000) or "
        "\"test\" (10000)",
        [](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, "fashion_mnist", {"split", "limit"});
          need_args(in, a, "fashion_mnist", 0, 1);
          const Value* sv = a.positional.empty() ? keyword(a, "split") : &a.positional[0];
          const std::string split = sv && sv->kind() == Value::string ? sv->as_str() : sv ? "" : "train";
          if (split != "train" && split != "test")
            in.fail(a.pos, "fashion_mnist(): split must be \"train\" or \"test\"",
                    "fashion_mnist(\"train\") or fashion_mnist(\"test\")");
          const std::string prefix = split == "train" ? "train" : "t10k";
          // A fixed system dataset, read-only: outside any lesson's file confinement by design.
          const std::string images = find_dataset_file(prefix + "-images-idx3"),
                            labels = find_dataset_file(prefix + "-labels-idx1");
          if (images.empty() || labels.empty()) {
            std::string where;
            for (auto& d : fashion_mnist_dirs()) where += (where.empty() ? "" : " or ") + d;
            in.fail(a.pos, "Fashion-MNIST is not installed (looked in " + where + ")",
                    "install Debian's package: sudo apt install dataset-fashion-mnist (or put its four .gz files in "
                    "$OPSCOPE_DATA/fashion-mnist)");
          }
          const int64_t limit = limit_arg(in, a, "fashion_mnist");
          Tensor x = loaded(in, a, images, limit), y = loaded(in, a, labels, limit);
          if (x.dim() != 3 || y.dim() != 1 || x.size(0) != y.size(0) || y.dtype() != DType::i64)
            in.fail(a.pos,
                    "fashion_mnist(): " + images + " and " + labels + " do not match (images " + shape_str(x.shape()) +
                        ", labels " + shape_str(y.shape()) + ")",
                    "reinstall dataset-fashion-mnist");
          x = x.view_reshape({x.size(0), 1, x.size(1), x.size(2)});  // NCHW, one channel
          return Value::List({Value::Tensor_(x), Value::Tensor_(y)}, Value::tuple);
        });
  B.add("batches", "batches(x, y=None, batch_size=64, shuffle=True, seed=0, drop_last=False)",
        "mini-batches for a loop: for xb, yb in batches(x, y): ... (each epoch's order from seed; pass seed=epoch for "
        "a new one)",
        [](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, "batches", {"y", "batch_size", "shuffle", "seed", "drop_last"});
          need_args(in, a, "batches", 1, 2);
          auto b = std::make_shared<Batches>();
          const Tensor& x = tensor_arg(in, a, 0, "batches");
          const Value* yv = a.positional.size() > 1 ? &a.positional[1] : keyword(a, "y");
          if (x.is_symbolic())
            in.fail(a.positions[0], "batches(): x is symbolic (static mode) and has no data to batch");
          if (x.dim() == 0) in.fail(a.positions[0], "batches(): x must have a first axis of samples, got a 0-d tensor");
          b->x = x.contiguous(MemCategory::input);
          if (yv && yv->kind() != Value::none) {
            if (yv->kind() != Value::tensor)
              in.fail(a.pos, "batches(): y must be a tensor, got " + std::string(kind_name(*yv)));
            if (yv->as_tensor().dim() == 0 || yv->as_tensor().size(0) != x.size(0))
              in.fail(a.pos,
                      "batches(): x has " + std::to_string(x.size(0)) + " samples but y " +
                          shape_str(yv->as_tensor().shape()) +
                          (yv->as_tensor().dim() == 0 ? " has none"
                                                      : " has " + std::to_string(yv->as_tensor().size(0))),
                      "x and y hold one row per sample, in the same order");
            b->y = yv->as_tensor().contiguous(MemCategory::input);
          }
          if (const Value* v = keyword(a, "batch_size")) {
            if (v->kind() != Value::integer || v->as_int() < 1)
              in.fail(a.pos, "batches(): batch_size must be an integer >= 1");
            b->batch_size = v->as_int();
          }
          if (const Value* v = keyword(a, "shuffle")) b->shuffle = in.truthy(*v, a.pos);
          if (const Value* v = keyword(a, "drop_last")) b->drop_last = in.truthy(*v, a.pos);
          if (const Value* v = keyword(a, "seed"); v && v->kind() != Value::none) {
            if (v->kind() != Value::integer) in.fail(a.pos, "batches(): seed must be an integer");
            b->seed = static_cast<uint64_t>(v->as_int());
          }
          b->order.resize(static_cast<size_t>(x.size(0)));
          for (size_t i = 0; i < b->order.size(); ++i) b->order[i] = static_cast<int64_t>(i);
          if (b->shuffle) {  // Fisher–Yates with the seed's own generator: the same order on every machine
            std::mt19937_64 rng(b->seed);
            for (size_t i = b->order.size(); i > 1; --i) std::swap(b->order[i - 1], b->order[rng() % i]);
          }
          Value out = Value::Of(b);
          return out;
        });
}

}  // namespace opscope::lang
