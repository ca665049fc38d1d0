#include "app/lang/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace opscope::lang {

namespace {

const char* const kNotIdxHint =
    "an IDX file starts with two zero bytes, a type byte (0x08 uint8 ... 0x0E float64) and the number of "
    "dimensions; MNIST-style files are train-images-idx3-ubyte(.gz) and the like";

[[noreturn]] void fail(const std::string& path, const std::string& message, const std::string& hint = {}) {
  throw Error(path + ": " + message, hint);
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly n bytes (zlib reads plain files as they are). False at a short read.
bool read_all(gzFile f, void* dst, size_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

uint32_t big_endian32(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

struct FileFacts {
  bool gzip = false;
  int64_t size = 0;  // bytes on disk
  uint32_t gzip_isize = 0;  // gzip's record of the uncompressed size, modulo 2^32
};

FileFacts inspect(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, "cannot open the file", "check the path (load_idx(\"train-images-idx3-ubyte.gz\"))");
  FileFacts facts;
  unsigned char head[2] = {0, 0};
  const size_t got = std::fread(head, 1, 2, f.get());
  facts.gzip = got == 2 && head[0] == 0x1f && head[1] == 0x8b;
  if (std::fseek(f.get(), 0, SEEK_END) != 0) fail(path, "cannot read the file's size");
  facts.size = std::ftell(f.get());
  if (facts.gzip && facts.size >= 18) {  // the trailer: CRC32, then ISIZE, little-endian
    unsigned char t[4];
    if (std::fseek(f.get(), -4, SEEK_END) == 0 && std::fread(t, 1, 4, f.get()) == 4)
      facts.gzip_isize = uint32_t{t[0]} | (uint32_t{t[1]} << 8) | (uint32_t{t[2]} << 16) | (uint32_t{t[3]} << 24);
  }
  return facts;
}

struct ElementType {
  const char* name;
  int bytes;
};

ElementType element_type(const std::string& path, unsigned char code) {
  switch (code) {
    case 0x08: return {"uint8", 1};
    case 0x09: return {"int8", 1};
    case 0x0B: return {"int16", 2};
    case 0x0C: return {"int32", 4};
    case 0x0D: return {"float32", 4};
    case 0x0E: return {"float64", 8};
    default: {
      char b[8];
      std::snprintf(b, sizeof b, "0x%02X", code);
      fail(path, std::string("unknown IDX element type ") + b, kNotIdxHint);
    }
  }
}

// The element at p (big-endian), as double.
double element(const unsigned char* p, unsigned char code) {
  switch (code) {
    case 0x08: return p[0];
    case 0x09: return static_cast<int8_t>(p[0]);
    case 0x0B: return static_cast<int16_t>(static_cast<uint16_t>((p[0] << 8) | p[1]));
    case 0x0C: return static_cast<int32_t>(big_endian32(p));
    case 0x0D: {
      const uint32_t u = big_endian32(p);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: {
      const uint64_t u = (uint64_t{big_endian32(p)} << 32) | big_endian32(p + 4);
      double d;
      std::memcpy(&d, &u, 8);
      return d;
    }
  }
}

std::string shape_text(const Shape& s) { return shape_str(s); }

}  // namespace

Tensor load_idx(const std::string& path, int64_t limit) {
  const FileFacts facts = inspect(path);
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, "cannot open the file");
  gzbuffer(f.get(), 1 << 17);

  // --- header: magic, then one 32-bit size per dimension ---
  unsigned char magic[4];
  if (!read_all(f.get(), magic, 4)) fail(path, "the file is shorter than an IDX header (4 bytes)", kNotIdxHint);
  if (magic[0] != 0 || magic[1] != 0) {
    char b[64];
    std::snprintf(b, sizeof b, "wrong magic number %02X %02X %02X %02X", magic[0], magic[1], magic[2], magic[3]);
    fail(path, std::string(b) + ": this is not an IDX file", kNotIdxHint);
  }
  const ElementType et = element_type(path, magic[2]);
  const int rank = magic[3];
  if (rank < 1 || rank > 8)
    fail(path, "an IDX file of rank " + std::to_string(rank) + " (1 to 8 supported)", kNotIdxHint);
  std::vector<unsigned char> dims_raw(static_cast<size_t>(rank) * 4);
  if (!read_all(f.get(), dims_raw.data(), dims_raw.size()))
    fail(path, "the file is truncated in its header (" + std::to_string(rank) + " sizes expected)", kNotIdxHint);
  Shape shape;
  for (int i = 0; i < rank; ++i) shape.push_back(big_endian32(&dims_raw[static_cast<size_t>(i) * 4]));

  // --- sizes, checked before anything is allocated ---
  const int64_t header = 4 + 4 * static_cast<int64_t>(rank);
  int64_t item_elems = 1;  // elements per item along axis 0
  for (int i = 1; i < rank; ++i) {
    if (shape[i] != 0 && item_elems > (int64_t{1} << 40) / shape[i])
      fail(path, "shape " + shape_text(shape) + " has too many elements", kNotIdxHint);
    item_elems *= shape[i];
  }
  const int64_t items = shape[0];
  if (items > (int64_t{1} << 40) / std::max<int64_t>(item_elems, 1))
    fail(path, "shape " + shape_text(shape) + " has too many elements", kNotIdxHint);
  const int64_t data_bytes = items * item_elems * et.bytes;
  const std::string what =
      "shape " + shape_text(shape) + " of " + et.name + " needs " + std::to_string(data_bytes) + " bytes of data";
  if (!facts.gzip) {
    const int64_t available = facts.size - header;
    if (available < data_bytes)
      fail(path, "the file is truncated: " + what + " but only " + std::to_string(available) + " follow the header",
           "the download or copy is incomplete; fetch the file again");
    if (available > data_bytes)
      fail(path, "size mismatch: " + what + " but " + std::to_string(available) + " follow the header", kNotIdxHint);
  } else if (static_cast<uint32_t>(header + data_bytes) != facts.gzip_isize) {
    fail(path,
         "the compressed file does not hold what its header says: " + what + ", but gzip records " +
             std::to_string(facts.gzip_isize) + " bytes in all (modulo 4 GiB)",
         "the file is truncated or damaged; fetch it again (gzip -t checks it)");
  }
  const int64_t n = limit >= 0 ? std::min(limit, items) : items;
  Shape out_shape = shape;
  out_shape[0] = n;
  const bool images = magic[2] == 0x08 && rank >= 2;
  const DType dt = images || magic[2] == 0x0D ? DType::f32 : magic[2] == 0x0E ? DType::f64 : DType::i64;
  Tensor t = Tensor::empty(out_shape, dt, MemCategory::input);  // refused here if past the memory cap

  // --- the data, converted chunk by chunk ---
  const int64_t total = n * item_elems;
  constexpr int64_t kChunk = 1 << 16;  // elements
  std::vector<unsigned char> buf(static_cast<size_t>(std::min(total, kChunk) * et.bytes));
  for (int64_t done = 0; done < total;) {
    const int64_t m = std::min(kChunk, total - done);
    if (!read_all(f.get(), buf.data(), static_cast<size_t>(m * et.bytes)))
      fail(path,
           "the file is truncated: the data ends after " + std::to_string(done * et.bytes) + " of " +
               std::to_string(data_bytes) + " bytes",
           "the download or copy is incomplete; fetch the file again");
    if (dt == DType::f32) {
      float* out = t.data<float>() + done;
      if (images)
        for (int64_t k = 0; k < m; ++k) out[k] = static_cast<float>(buf[static_cast<size_t>(k)]) / 255.0f;
      else
        for (int64_t k = 0; k < m; ++k)
          out[k] = static_cast<float>(element(&buf[static_cast<size_t>(k * 4)], magic[2]));
    } else if (dt == DType::f64) {
      double* out = t.data<double>() + done;
      for (int64_t k = 0; k < m; ++k) out[k] = element(&buf[static_cast<size_t>(k * 8)], magic[2]);
    } else {
      int64_t* out = t.data<int64_t>() + done;
      for (int64_t k = 0; k < m; ++k)
        out[k] = static_cast<int64_t>(element(&buf[static_cast<size_t>(k * et.bytes)], magic[2]));
    }
    done += m;
  }
  return t;
}

}  // namespace opscope::lang
