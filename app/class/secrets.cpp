#include "app/class/secrets.h"

#include <fstream>

#include "core/error.h"

namespace opscope::classroom {

std::string random_hex(size_t bytes) {
  std::ifstream f("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!f.read(raw.data(), static_cast<std::streamsize>(bytes))) throw Error("cannot read /dev/urandom");
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

std::string new_class_code() {
  static const std::string alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
  const std::string r = random_hex(6);
  std::string code;
  for (size_t i = 0; i < 6; ++i) code += alphabet[std::stoul(r.substr(2 * i, 2), nullptr, 16) % alphabet.size()];
  return code;
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace opscope::classroom
