// Sites named by source position: barriers, warp collectives and atomics pass the caller's
// __builtin_FILE()/__builtin_LINE() (gpusim/include/cuda_runtime.h), interned here into one
// table so that a site is a stable pointer, compared and hashed like a code address.
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "gpusim/state.h"

namespace gpusim {

namespace {

constexpr size_t kMaxSourceSites = 1 << 14;
SourceSite g_source_sites[kMaxSourceSites];
size_t g_source_site_count = 0;

struct Key {
  const char* file;
  int line;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const { return std::hash<const void*>()(k.file) * 31 + size_t(k.line); }
};

const char* base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

const void* source_site(const char* file, int line) {
  // A one-entry memo first: a lane calls the same barrier or atomic many times in a row.
  static thread_local Key last{nullptr, 0};
  static thread_local const void* last_site = nullptr;
  if (last.file == file && last.line == line) return last_site;
  static std::unordered_map<Key, const SourceSite*, KeyHash> interned;
  auto [it, fresh] = interned.try_emplace(Key{file, line}, nullptr);
  if (fresh) {
    if (g_source_site_count == kMaxSourceSites)
      throw opscope::Error("simulated GPU: too many distinct barrier, collective and atomic sites");
    g_source_sites[g_source_site_count] = SourceSite{base_name(file), line};
    it->second = &g_source_sites[g_source_site_count++];
  }
  last = Key{file, line};
  last_site = it->second;
  return last_site;
}

const SourceSite* as_source_site(const void* site) {
  const auto* s = static_cast<const SourceSite*>(site);
  return s >= g_source_sites && s < g_source_sites + g_source_site_count ? s : nullptr;
}

std::string site_text(const void* site) {
  if (const SourceSite* s = as_source_site(site)) return std::string(s->file) + ":" + std::to_string(s->line);
  return code_site_text(site);
}

}  // namespace gpusim
