// SPDX-License-Identifier: BSD-3-Clause
// Replays saved inputs through a fuzz target without libFuzzer, so that every build (gcc,
// no sanitizer runtime needed) checks the seed corpus and the regression inputs of past
// crashes. Linked with one fuzz_*.cpp; arguments are files or directories (every regular
// file in a directory, sorted). A missing directory is reported and skipped (a target may
// have no regressions yet); replaying nothing at all is a failure. An input that breaks an
// invariant aborts the process, after its path has been printed.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_util.hpp"

namespace {

namespace fs = std::filesystem;

char current_input[4096];

// Async-signal-safe: names the input that crashed, then lets the signal take its course.
void on_crash(int sig) {
  const char prefix[] = "replay: crashed on input ";
  [[maybe_unused]] ssize_t w = write(2, prefix, sizeof prefix - 1);
  w = write(2, current_input, std::strlen(current_input));
  w = write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

bool replay_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  // Exact-size heap copy: a sanitizer build sees any read past the input.
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  std::snprintf(current_input, sizeof current_input, "%s", path.c_str());
  if (bytes.empty()) {
    LLVMFuzzerTestOneInput(nullptr, 0);
  } else {
    auto* copy = new uint8_t[bytes.size()];
    std::memcpy(copy, bytes.data(), bytes.size());
    LLVMFuzzerTestOneInput(copy, bytes.size());
    delete[] copy;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP})
    std::signal(sig, on_crash);
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_regular_file(arg, ec)) {
      if (!replay_file(arg)) return 1;
      ++replayed;
      continue;
    }
    if (!fs::is_directory(arg, ec)) {
      std::printf("replay: %s does not exist, skipped\n", arg.c_str());
      continue;
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(arg))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files)
      if (!replay_file(f)) return 1;
    std::printf("replay: %zu inputs from %s\n", files.size(), arg.c_str());
    replayed += files.size();
  }
  if (replayed == 0) {
    std::fprintf(stderr, "replay: no input replayed\n");
    return 1;
  }
  std::printf("replay: %zu inputs, all invariants held\n", replayed);
  return 0;
}
