// SPDX-License-Identifier: Apache-2.0
#include "tpu/text.h"

#include <cstdio>

namespace tpu {

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto esc = [&](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      esc(c);
    } else if (c < 0x80) {
      out += char(c);
    } else {
      // A well-formed UTF-8 sequence (no overlong forms, surrogates or code
      // points past U+10FFFF) is kept; any other byte is escaped.
      size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
      bool ok = len > 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok && len >= 3) {
        const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
        if (c == 0xe0 && c1 < 0xa0) ok = false;   // overlong
        if (c == 0xed && c1 >= 0xa0) ok = false;  // surrogates
        if (c == 0xf0 && c1 < 0x90) ok = false;   // overlong
        if (c == 0xf4 && c1 >= 0x90) ok = false;  // past U+10FFFF
      }
      if (!ok) {
        esc(c);
        ++i;
        continue;
      }
      // C1 control characters (U+0080..U+009F) are escaped too.
      if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
        esc(c);
        esc(static_cast<unsigned char>(s[i + 1]));
      } else {
        out.append(s.substr(i, len));
      }
      i += len;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace tpu
