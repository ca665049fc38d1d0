// NumPy .npy reader and writer. Format reference: numpy/lib/format.py (NEP 1).
//
// Layout: "\x93NUMPY", major, minor, header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0),
// then a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded
// with spaces and a final '\n' so the data starts on a 64-byte boundary, then the raw data.
#include "app/lang/npy.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace opscope::lang {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader and writer copy little-endian bytes straight into tensors");

namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes
constexpr size_t kMagicLen = 6;
constexpr int64_t kAlign = 64;  // NumPy's ARRAY_ALIGN
// NumPy itself refuses headers above 10000 bytes by default; we allow more but keep a bound so a
// corrupt length field cannot make us read gigabytes of "header".
constexpr int64_t kMaxHeader = 1 << 20;
constexpr int kMaxNesting = 32;

using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

const char* kNotNpyHint =
    "the file was not written by np.save (or is damaged); save it again with np.save(path, array)";

[[noreturn]] void fail(const std::string& path, const std::string& what, const std::string& hint) {
  throw Error("cannot load '" + path + "' as .npy: " + what, hint);
}

// --- a parser for the small subset of Python literals that .npy headers use ---------------

struct PyValue {
  enum class Kind { str, integer, boolean, none, tuple, list, dict } kind = Kind::none;
  std::string s;
  int64_t i = 0;
  bool b = false;
  std::vector<PyValue> items;  // tuple and list; dict: key, value, key, value, ...
};

struct SyntaxError {
  std::string what;
};

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  PyValue parse_all() {
    PyValue v = parse_value(0);
    skip_ws();
    if (pos_ != text_.size()) error("unexpected text after the dict");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    throw SyntaxError{what + " at character " + std::to_string(pos_)};
  }
  void skip_ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool eat_word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  // Items of a tuple/list/dict up to `close`; a trailing comma is allowed, as in Python.
  void parse_items(PyValue& v, char close, bool dict, int depth) {
    while (!eat(close)) {
      v.items.push_back(parse_value(depth + 1));
      if (dict) {
        if (!eat(':')) error("expected ':'");
        v.items.push_back(parse_value(depth + 1));
      }
      if (!eat(',')) {
        if (!eat(close)) error(std::string("expected ',' or '") + close + "'");
        return;
      }
    }
  }

  PyValue parse_value(int depth) {
    if (depth > kMaxNesting) error("nesting too deep");
    skip_ws();
    if (pos_ >= text_.size()) error("unexpected end of header");
    PyValue v;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::str;
      ++pos_;
      while (true) {
        if (pos_ >= text_.size()) error("unterminated string");
        char d = text_[pos_++];
        if (d == c) break;
        if (d == '\\') {
          if (pos_ >= text_.size()) error("unterminated string");
          d = text_[pos_++];
        }
        v.s += d;
      }
    } else if (c == '(' || c == '[' || c == '{') {
      ++pos_;
      v.kind = c == '(' ? PyValue::Kind::tuple : c == '[' ? PyValue::Kind::list : PyValue::Kind::dict;
      parse_items(v, c == '(' ? ')' : c == '[' ? ']' : '}', c == '{', depth);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::integer;
      bool neg = c == '-';
      if (neg) ++pos_;
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("expected a digit");
      uint64_t n = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        uint64_t digit = static_cast<uint64_t>(text_[pos_++] - '0');
        if (n > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) error("integer too large");
        n = n * 10 + digit;
      }
      if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2 longs
      v.i = neg ? -static_cast<int64_t>(n) : static_cast<int64_t>(n);
    } else if (eat_word("True")) {
      v.kind = PyValue::Kind::boolean;
      v.b = true;
    } else if (eat_word("False")) {
      v.kind = PyValue::Kind::boolean;
    } else if (eat_word("None")) {
      v.kind = PyValue::Kind::none;
    } else {
      error(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// The element type as stored in the file.
enum class FileType { f4, f8, i8, i4, b1 };

size_t file_item_size(FileType f) { return f == FileType::b1 ? 1 : f == FileType::f4 || f == FileType::i4 ? 4 : 8; }

std::string shape_repr(const Shape& s) {  // Python's repr of a tuple: (), (3,), (2, 3)
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}

// "24 bytes", or "4398046511104 bytes (4096.00 GiB)" when a human size helps.
std::string bytes_text(int64_t n) {
  return std::to_string(n) + " bytes" + (n >= 1024 ? " (" + bytes_str(n) + ")" : "");
}

std::string errno_text() { return std::strerror(errno); }

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// Reads exactly n bytes; false on a short read.
bool read_exact(std::FILE* f, void* dst, size_t n) { return n == 0 || std::fread(dst, 1, n, f) == n; }

}  // namespace

void save_npy(const std::string& path, const Tensor& t, bool as_bool) {
  if (!t.defined()) throw Error("cannot save '" + path + "': the tensor is undefined");
  if (t.device() != Device::cpu)
    throw Error("cannot save '" + path + "': the tensor is on " + device_name(t.device()), "copy it to the CPU first");
  Tensor c = t.contiguous();
  std::vector<uint8_t> bools;  // as_bool: the bytes NumPy's bool holds
  if (as_bool) {
    bools.resize(static_cast<size_t>(c.numel()));
    for (int64_t i = 0; i < c.numel(); ++i) {
      const double v = c.get(i);
      if (v != 0 && v != 1)
        throw Error("cannot save '" + path + "' as bool: element " + std::to_string(i) + " is " + std::to_string(v) +
                        ", not 0 or 1",
                    "a mask is 0/1 (what comparisons give): save (x != 0) to keep where x is nonzero");
      bools[static_cast<size_t>(i)] = v != 0;
    }
  }
  const char* descr = as_bool ? "|b1" : t.dtype() == DType::f32 ? "<f4" : t.dtype() == DType::f64 ? "<f8" : "<i8";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_repr(t.shape()) + ", }";
  // Pad with spaces so that prefix + dict + '\n' is a multiple of 64 bytes (NumPy's _wrap_header).
  int64_t prefix = 10;  // magic 6, version 2, uint16 length 2
  auto padded_len = [&](int64_t pre) {
    int64_t used = pre + static_cast<int64_t>(dict.size()) + 1;
    return static_cast<int64_t>(dict.size()) + (kAlign - used % kAlign) % kAlign + 1;
  };
  int major = 1;
  int64_t header_len = padded_len(prefix);
  if (header_len > 0xFFFF) {  // version 2.0: uint32 length
    major = 2;
    prefix = 12;
    header_len = padded_len(prefix);
  }
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (int k = 0; k < (major == 1 ? 2 : 4); ++k) out += static_cast<char>((header_len >> (8 * k)) & 0xFF);
  out += dict;
  out.append(static_cast<size_t>(header_len) - dict.size() - 1, ' ');
  out += '\n';

  FilePtr f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw Error("cannot save '" + path + "': " + errno_text(), "check that the folder exists and is writable");
  bool ok = std::fwrite(out.data(), 1, out.size(), f.get()) == out.size();
  const size_t nbytes = as_bool ? bools.size() : static_cast<size_t>(c.nbytes());
  const void* data = as_bool ? static_cast<const void*>(bools.data()) : c.raw_data();
  if (ok && nbytes > 0) ok = std::fwrite(data, 1, nbytes, f.get()) == nbytes;
  if (!ok) throw Error("cannot save '" + path + "': write failed: " + errno_text(), "is the disk full?");
  if (std::fclose(f.release()) != 0)
    throw Error("cannot save '" + path + "': write failed: " + errno_text(), "is the disk full?");
}

Tensor load_npy(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error("cannot open '" + path + "': " + errno_text(), "check the path and the file's permissions");
  std::error_code ec;
  const auto size_u = std::filesystem::file_size(path, ec);
  if (ec) fail(path, "cannot tell its size: " + ec.message(), "load a regular file");
  const int64_t file_size = static_cast<int64_t>(size_u);

  // --- magic and version ---
  unsigned char pre[12];
  const size_t got = std::fread(pre, 1, 8, f.get());
  if (got < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    if (got >= 4 && std::memcmp(pre, "PK\x03\x04", 4) == 0)
      fail(path, "this is a zip archive (an .npz from np.savez?), not a .npy file",
           "unzip it, or in NumPy load it and np.save each array to its own .npy file");
    fail(path, "it does not start with the .npy magic bytes \\x93NUMPY", kNotNpyHint);
  }
  if (got < 8) fail(path, "the file is truncated inside the version bytes", kNotNpyHint);
  const int major = pre[6], minor = pre[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor),
         "versions 1.0, 2.0 and 3.0 are supported; save it again with np.save");
  const int len_bytes = major == 1 ? 2 : 4;
  if (!read_exact(f.get(), pre + 8, static_cast<size_t>(len_bytes)))
    fail(path, "the file is truncated inside the header length", kNotNpyHint);
  const int64_t header_len = read_le(pre + 8, len_bytes);
  const int64_t data_start = 8 + len_bytes + header_len;
  if (header_len > kMaxHeader)
    fail(path, "the header claims " + std::to_string(header_len) + " bytes, which is implausibly large", kNotNpyHint);
  if (data_start > file_size)
    fail(path,
         "the file is truncated: the header needs " + std::to_string(header_len) + " bytes but only " +
             std::to_string(file_size - 8 - len_bytes) + " follow",
         "the file is incomplete; save it again with np.save");

  // --- the header dict ---
  std::string header(static_cast<size_t>(header_len), '\0');
  if (!read_exact(f.get(), header.data(), header.size())) fail(path, "short read in the header", kNotNpyHint);
  PyValue dict;
  try {
    dict = LiteralParser(header).parse_all();
  } catch (const SyntaxError& e) {
    fail(path, "bad header: " + e.what, kNotNpyHint);
  }
  if (dict.kind != PyValue::Kind::dict) fail(path, "bad header: it is not a dict", kNotNpyHint);
  const PyValue *descr = nullptr, *fortran = nullptr, *shape_v = nullptr;
  for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
    const PyValue& key = dict.items[k];
    const PyValue* val = &dict.items[k + 1];
    if (key.kind != PyValue::Kind::str) fail(path, "bad header: a key is not a string", kNotNpyHint);
    if (key.s == "descr") descr = val;
    else if (key.s == "fortran_order") fortran = val;
    else if (key.s == "shape") shape_v = val;
    else fail(path, "bad header: unexpected key '" + key.s + "'", kNotNpyHint);
  }
  if (!descr || !fortran || !shape_v)
    fail(path, "bad header: it needs the keys 'descr', 'fortran_order' and 'shape'", kNotNpyHint);

  // descr: byte order + kind + item size, e.g. '<f4'.
  const char* dtype_hint =
      "convert it in NumPy before saving: np.save(path, arr.astype(np.float32)) (or float64 / int64)";
  if (descr->kind != PyValue::Kind::str) fail(path, "structured arrays (record dtypes) are not supported", dtype_hint);
  const std::string& d = descr->s;
  if (d.size() < 2) fail(path, "bad header: descr '" + d + "' is not a dtype", kNotNpyHint);
  if (d[0] == '>')
    fail(path, "the data is big-endian ('" + d + "'); only little-endian is supported",
         "in NumPy: np.save(path, arr.astype(arr.dtype.newbyteorder('<')))");
  // '=' is native order and '|' means "not applicable"; on the little-endian hosts we run on,
  // both mean the same bytes as '<'.
  const bool has_order = d[0] == '<' || d[0] == '=' || d[0] == '|';
  const std::string code = has_order ? d.substr(1) : d;
  FileType ft;
  DType dtype;
  if (code == "f4") ft = FileType::f4, dtype = DType::f32;
  else if (code == "f8") ft = FileType::f8, dtype = DType::f64;
  else if (code == "i8") ft = FileType::i8, dtype = DType::i64;
  else if (code == "i4") ft = FileType::i4, dtype = DType::i64;  // widened: opscope has no int32
  else if (code == "b1") ft = FileType::b1, dtype = DType::i64;  // a mask: 0/1 as comparisons give (no bool dtype)
  else fail(path, "unsupported dtype '" + d + "'; opscope reads float32, float64, int64, int32 and bool", dtype_hint);

  if (fortran->kind != PyValue::Kind::boolean)
    fail(path, "bad header: 'fortran_order' must be True or False", kNotNpyHint);
  if (shape_v->kind != PyValue::Kind::tuple) fail(path, "bad header: 'shape' must be a tuple", kNotNpyHint);
  Shape shape;
  for (const PyValue& v : shape_v->items) {
    if (v.kind != PyValue::Kind::integer || v.i < 0)
      fail(path, "bad header: 'shape' must hold non-negative integers", kNotNpyHint);
    shape.push_back(v.i);
  }

  // --- size checks before any allocation: the file must hold numel * itemsize bytes ---
  const int64_t item = static_cast<int64_t>(file_item_size(ft));
  int64_t numel = 1;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) numel = 0;
  else
    for (int64_t dim : shape) {
      if (numel > INT64_MAX / item / dim)
        fail(path, "shape " + shape_repr(shape) + " has too many elements", kNotNpyHint);
      numel *= dim;
    }
  const int64_t data_bytes = numel * item;
  const int64_t available = file_size - data_start;
  if (available < data_bytes)
    fail(path,
         "the file is truncated: shape " + shape_repr(shape) + " of '" + d + "' needs " + bytes_text(data_bytes) +
             " of data but only " + bytes_text(available) + " follow the header",
         "the file is incomplete or damaged; save it again with np.save");
  if (available > data_bytes)
    fail(path,
         "size mismatch: shape " + shape_repr(shape) + " of '" + d + "' needs " + bytes_text(data_bytes) +
             " of data but " + bytes_text(available) + " follow the header",
         kNotNpyHint);

  // --- the data ---
  // A Fortran-order array is the C-order array of the reversed shape, transposed.
  Shape file_shape = shape;
  if (fortran->b) std::reverse(file_shape.begin(), file_shape.end());
  Tensor t = Tensor::empty(file_shape, dtype, fortran->b ? MemCategory::temporary : MemCategory::input);
  // int32 and bool are widened to int64 in chunks as they are read.
  auto widen = [&](auto z) {
    using From = decltype(z);
    int64_t* out = t.data<int64_t>();
    constexpr int64_t kChunk = 16384;
    std::vector<From> buf(static_cast<size_t>(std::min(numel, kChunk)));
    for (int64_t done = 0; done < numel;) {
      const int64_t n = std::min(kChunk, numel - done);
      if (!read_exact(f.get(), buf.data(), static_cast<size_t>(n) * sizeof(From)))
        fail(path, "short read in the data", "the file changed while it was read?");
      for (int64_t k = 0; k < n; ++k) {
        const From v = buf[static_cast<size_t>(k)];
        if (ft == FileType::b1 && v > 1)
          fail(path,
               "element " + std::to_string(done + k) + " of a bool array is the byte " + std::to_string(v) +
                   ", not 0 or 1",
               kNotNpyHint);
        out[done + k] = v;
      }
      done += n;
    }
  };
  if (ft == FileType::i4) {
    widen(int32_t{});
  } else if (ft == FileType::b1) {
    widen(uint8_t{});
  } else if (!read_exact(f.get(), t.raw_data(), static_cast<size_t>(data_bytes))) {
    fail(path, "short read in the data", "the file changed while it was read?");
  }
  if (!fortran->b) return t;
  std::vector<int64_t> rev(shape.size());
  for (size_t k = 0; k < rev.size(); ++k) rev[k] = static_cast<int64_t>(rev.size() - 1 - k);
  Tensor c = Tensor::empty(shape, dtype, MemCategory::input);
  c.copy_from(rev.empty() ? t : t.view_permute(rev));
  return c;
}

}  // namespace opscope::lang
