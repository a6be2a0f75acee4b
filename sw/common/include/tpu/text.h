// SPDX-License-Identifier: Apache-2.0
// Text from files and command lines made safe to print in one line.
#pragma once

#include <string>
#include <string_view>

namespace tpu {

// Every byte that could cut or break a line of text is escaped: control
// characters (\n, \t, \r, \x00, \x1b, C1 controls) and bytes that are not
// well-formed UTF-8 (\xff); printable ASCII and UTF-8 are kept. A message
// built from a file's bytes keeps all of them this way: a NUL byte would
// otherwise end it wherever it is read as a C string (what()).
std::string printable(std::string_view s);

}  // namespace tpu
