#pragma once
// Bounded, seeded mutation fuzzing of the file readers (tests/fuzz/test_fuzz_*.cpp, label fuzz).
//
// A campaign starts from one valid file written by the project's own writer, reads it intact
// (case 0 must succeed: the harness can fail), reads any extra files given (the corrupt fixtures
// of that reader), then N seeded mutations of it: truncation at a random length, 1-4 random byte
// flips, a chunk zeroed, a chunk set to 0xff. Each case must return or throw almagest::Error;
// anything else (another exception, a crash, a sanitizer report) fails it, as does running past
// the per-case time bound or allocating past the per-case memory bound.
//
// Isolation: the campaign runs in a forked child so that a crash or a hang is reported with its
// case and the campaign goes on from the next case (up to kMaxRestarts times per reader); the
// parent is the watchdog (it kills a child whose case runs past the bound). Every failing case's
// file is kept in $ALMAGEST_TEST_TMP/fuzz-failures/ with its seed and case number in the name.
//
// Memory bound: a replacement global operator new counts the live bytes (malloc_usable_size) and
// refuses (std::bad_alloc, recorded as a failure even if the reader turns it into an Error) an
// allocation that would take a case past kCaseAllocBound. C libraries (libhdf5, cfitsio) call
// malloc directly: under AddressSanitizer max_allocation_size_mb caps them (and
// allocator_may_return_null makes them see NULL instead of a report); without it RLIMIT_AS caps
// the child (RLIMIT_AS cannot be used under ASan, whose shadow memory needs terabytes of address
// space).
//
// Environment: ALMAGEST_FUZZ_SEED (default 19), ALMAGEST_FUZZ_CASES (mutations per reader,
// default 300), ALMAGEST_FUZZ_CASE (run only this case: reproduces one failure).
//
// Include this header in exactly one translation unit per executable (it defines the
// replacement operator new/delete).
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <QByteArray>
#include <QCoreApplication>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include <hdf5.h>

#include "almagest/core/error.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define ALMAGEST_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALMAGEST_FUZZ_ASAN 1
#endif
#endif
#ifndef ALMAGEST_FUZZ_ASAN
#define ALMAGEST_FUZZ_ASAN 0
#endif

#if ALMAGEST_FUZZ_ASAN
// Defaults for the fuzz executables only (ASAN_OPTIONS from the environment still apply on top):
// a C library's malloc above the bound gets NULL instead of aborting the campaign.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=256:detect_leaks=0";
}
#endif

namespace almagest::fuzz {

constexpr std::size_t kCaseAllocBound = std::size_t(256) << 20;  ///< live bytes per case
/// Per-case wall-clock bound: 2 s, three times that under the sanitizers (2-3x slower code).
constexpr double kCaseSeconds = ALMAGEST_FUZZ_ASAN ? 6.0 : 2.0;
constexpr int kMaxRestarts = 8;   ///< crashes/hangs per reader before the campaign gives up

/// Allocation accounting shared by the replacement operator new/delete.
struct AllocCounter {
  std::atomic<std::int64_t> live{0};
  std::atomic<bool> armed{false};
  std::atomic<std::int64_t> baseline{0};
  std::atomic<std::uint64_t> refused{0};   ///< size of the first refused request of this case
};
inline AllocCounter& alloc_counter() {
  static AllocCounter c;
  return c;
}

inline void* counted_alloc(std::size_t n, bool nothrow) {
  AllocCounter& c = alloc_counter();
  if (c.armed.load(std::memory_order_relaxed)) {
    const std::int64_t used = c.live.load(std::memory_order_relaxed) - c.baseline.load();
    if (n > kCaseAllocBound || used + std::int64_t(n) > std::int64_t(kCaseAllocBound)) {
      std::uint64_t none = 0;
      c.refused.compare_exchange_strong(none, n);
      if (nothrow) return nullptr;
      throw std::bad_alloc();
    }
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  c.live.fetch_add(std::int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
inline void counted_free(void* p) noexcept {
  if (!p) return;
  alloc_counter().live.fetch_sub(std::int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}

/// State the child shares with the watchdog parent (one anonymous shared page set).
struct Shared {
  std::atomic<int> current{-1};            ///< case running now (-1: none yet)
  std::atomic<std::int64_t> started_ns{0}; ///< CLOCK_MONOTONIC at the current case's start
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  char description[512] = {};              ///< the current case: mutation and file
  char report[48 * 1024] = {};             ///< one line per failing case (child-side failures)
  std::atomic<std::size_t> report_len{0};
};

inline std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

inline std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoull(v, nullptr, 10);
}

inline std::filesystem::path test_tmp() {
  const char* root = std::getenv("ALMAGEST_TEST_TMP");
  std::filesystem::path p = root && *root ? std::filesystem::path(root)
                                          : std::filesystem::temp_directory_path();
  std::filesystem::create_directories(p);
  return p;
}

/// Path of a file in tests/fixtures/corrupt/ (earlier failing cases and hand-made files), for a
/// campaign's extra files. A missing one stops the test (qFatal): read as a case, it would only
/// give an IoError and pass unnoticed.
inline std::string corrupt_fixture(const char* name) {
  const std::string p = std::string(ALMAGEST_SOURCE_DIR "/tests/fixtures/corrupt/") + name;
  if (!std::filesystem::is_regular_file(p)) qFatal("fixture %s is missing", p.c_str());
  return p;
}

inline std::vector<unsigned char> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void spit(const std::filesystem::path& p, const std::vector<unsigned char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

/// One seeded mutation of `in`; `what` describes it (for the report).
inline std::vector<unsigned char> mutate(const std::vector<unsigned char>& in, std::uint64_t seed,
                                         std::string& what) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> b = in;
  const std::size_t n = b.size();
  // Half of the positions fall in the first 4 KB, where the FITS header and the HDF5 superblock
  // and root object headers live; the rest anywhere.
  auto pos = [&]() -> std::size_t {
    if (rng() & 1) return std::size_t(rng() % std::min<std::size_t>(n, 4096));
    return std::size_t(rng() % n);
  };
  char buf[160];
  switch (rng() % 4) {
    case 0: {
      const std::size_t len = std::size_t(rng() % n);
      b.resize(len);
      std::snprintf(buf, sizeof buf, "truncated to %zu of %zu bytes", len, n);
      what = buf;
      break;
    }
    case 1: {
      const int flips = 1 + int(rng() % 4);
      what = "byte flips:";
      for (int i = 0; i < flips; ++i) {
        const std::size_t at = pos();
        const unsigned char x = static_cast<unsigned char>(1 + rng() % 255);
        b[at] ^= x;
        std::snprintf(buf, sizeof buf, " [%zu]^=0x%02x", at, unsigned(x));
        what += buf;
      }
      break;
    }
    default: {
      const bool ones = b.size() && (rng() & 1);
      const std::size_t at = pos();
      const std::size_t len = std::min<std::size_t>(n - at, 1 + rng() % 512);
      std::fill(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + len),
                ones ? 0xff : 0x00);
      std::snprintf(buf, sizeof buf, "chunk [%zu, %zu) set to 0x%s", at, at + len, ones ? "ff" : "00");
      what = buf;
      break;
    }
  }
  return b;
}

struct Campaign {
  std::string name;                          ///< reader, e.g. "map-hdf5"
  std::string extension;                     ///< of the case files (readers dispatch on it)
  std::function<void(const std::string&)> write_seed;  ///< writes the valid file
  std::function<void(const std::string&)> read;        ///< the reader under test
  std::vector<std::string> extra_files;      ///< read as they are (corrupt fixtures)
};

namespace detail {

inline void append_report(Shared& sh, const std::string& line) {
  const std::size_t at = sh.report_len.load();
  if (at + line.size() + 2 >= sizeof sh.report) return;
  std::memcpy(sh.report + at, line.data(), line.size());
  sh.report[at + line.size()] = '\n';
  sh.report_len.store(at + line.size() + 1);
}

/// Child: cases [first, last) of the campaign; case 0 is the intact seed, cases 1..extra are the
/// extra files, then the mutations.
[[noreturn]] inline void run_child(const Campaign& c, Shared& sh, const std::filesystem::path& work,
                                   const std::filesystem::path& failures,
                                   const std::vector<unsigned char>& seed_bytes,
                                   std::uint64_t seed, int first, int last) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);   // 300 HDF5-DIAG dumps say nothing the case does not
#if !ALMAGEST_FUZZ_ASAN
  {
    // Address space now plus 1.5 GB: a C library's malloc sized from a corrupt header fails.
    std::ifstream st("/proc/self/statm");
    std::uint64_t pages = 0;
    st >> pages;
    rlimit rl{};
    rl.rlim_cur = rl.rlim_max = rlim_t(pages * std::uint64_t(sysconf(_SC_PAGESIZE)) + (1536ull << 20));
    setrlimit(RLIMIT_AS, &rl);
  }
#endif
  const int extras = int(c.extra_files.size());
  for (int i = first; i < last; ++i) {
    std::string what;
    std::string path;
    if (i == 0) {
      what = "intact seed file";
      path = (work / ("seed" + c.extension)).string();
    } else if (i <= extras) {
      what = "fixture as it is";
      path = c.extra_files[std::size_t(i - 1)];
    } else {
      const std::uint64_t cs = splitmix64(seed ^ splitmix64(fnv1a(c.name) + std::uint64_t(i)));
      std::vector<unsigned char> m = mutate(seed_bytes, cs, what);
      path = (work / (c.name + "-seed" + std::to_string(seed) + "-case" + std::to_string(i) +
                      c.extension)).string();
      spit(path, m);
    }
    std::snprintf(sh.description, sizeof sh.description, "%s: case %d (%s), file %s",
                  c.name.c_str(), i, what.c_str(), path.c_str());
    sh.started_ns.store(now_ns());
    sh.current.store(i);
    AllocCounter& ac = alloc_counter();
    ac.refused.store(0);
    ac.baseline.store(ac.live.load());
    ac.armed.store(true);
    std::string failure;
    try {
      c.read(path);
    } catch (const almagest::Error& e) {
      if (i == 0) failure = std::string("the intact file was rejected: ") + e.what();
    } catch (const std::bad_alloc&) {
      failure = "std::bad_alloc escaped";
    } catch (const std::exception& e) {
      failure = std::string("threw ") + typeid(e).name() + " (not almagest::Error): " + e.what();
    } catch (...) {
      failure = "threw a non-std exception";
    }
    ac.armed.store(false);
    if (const std::uint64_t r = ac.refused.load())
      failure += (failure.empty() ? "" : "; ") + std::string("asked for ") + std::to_string(r) +
                 " bytes past the bound of " + std::to_string(kCaseAllocBound >> 20) + " MB";
    if (!failure.empty()) {
      sh.failures.fetch_add(1);
      std::string kept = path;
      if (i > extras) {
        const auto dest = failures / std::filesystem::path(path).filename();
        std::error_code ec;
        std::filesystem::copy_file(path, dest, std::filesystem::copy_options::overwrite_existing, ec);
        kept = dest.string();
      }
      const std::string line = std::string("FUZZ FAIL ") + sh.description + ": " + failure +
                               " [kept: " + kept + "]";
      std::fprintf(stderr, "%s\n", line.c_str());
      append_report(sh, line);
    }
    if (i > extras) ::unlink(path.c_str());
  }
  sh.done.store(true);
  std::fflush(stderr);
  _exit(0);
}

}  // namespace detail

/// Runs the campaign; fails the current Qt test with every failing case listed.
inline void run_campaign(const Campaign& c) {
  namespace fs = std::filesystem;
  const std::uint64_t seed = env_u64("ALMAGEST_FUZZ_SEED", 19);
  const int ncases = int(env_u64("ALMAGEST_FUZZ_CASES", 300));
  const fs::path work = test_tmp() / ("fuzz-" + c.name + "-" + std::to_string(::getpid()));
  const fs::path failures = test_tmp() / "fuzz-failures";
  fs::remove_all(work);
  fs::create_directories(work);
  fs::create_directories(failures);
  const fs::path seed_path = work / ("seed" + c.extension);
  c.write_seed(seed_path.string());
  const std::vector<unsigned char> seed_bytes = slurp(seed_path);
  QVERIFY2(seed_bytes.size() > 16, qPrintable(QString::fromStdString(c.name + ": no seed file")));

  const int extras = int(c.extra_files.size());
  int first = 0, last = 1 + extras + ncases;
  if (const char* one = std::getenv("ALMAGEST_FUZZ_CASE"); one && *one) {
    first = std::atoi(one);
    last = first + 1;
  }

  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  QVERIFY(mem != MAP_FAILED);
  std::string report;
  int failed = 0, restarts = 0;
  const std::int64_t t0 = now_ns();
  while (first < last) {
    auto* sh = new (mem) Shared();
    std::fflush(nullptr);
    const pid_t pid = fork();
    QVERIFY(pid >= 0);
    if (pid == 0) detail::run_child(c, *sh, work, failures, seed_bytes, seed, first, last);
    int status = 0;
    bool hung = false;
    for (;;) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      const std::int64_t started = sh->started_ns.load();
      if (started && sh->current.load() >= 0 && !sh->done.load() &&
          double(now_ns() - started) * 1e-9 > kCaseSeconds) {
        hung = true;
        ::kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      usleep(10000);
    }
    failed += sh->failures.load();
    report.append(sh->report, sh->report_len.load());
    if (sh->done.load() && !hung) break;
    // A crash, a sanitizer report or a hang at sh->current: report it, keep its file, go on.
    const int at = std::max(sh->current.load(), first);
    std::string how;
    if (hung) how = "ran past " + std::to_string(int(kCaseSeconds)) + " s (killed)";
    else if (WIFSIGNALED(status)) how = std::string("crashed with signal ") + strsignal(WTERMSIG(status));
    else how = "exited with code " + std::to_string(WEXITSTATUS(status)) +
               " mid-case (a sanitizer report or an abort: see the output above)";
    std::string kept;
    if (at > extras) {
      const fs::path file = work / (c.name + "-seed" + std::to_string(seed) + "-case" +
                                    std::to_string(at) + c.extension);
      std::error_code ec;
      fs::copy_file(file, failures / file.filename(), fs::copy_options::overwrite_existing, ec);
      fs::remove(file, ec);
      kept = (failures / file.filename()).string();
    } else {
      kept = at == 0 ? seed_path.string() : c.extra_files[std::size_t(at - 1)];
    }
    const std::string line = std::string("FUZZ FAIL ") + sh->description + ": " + how + " [kept: " +
                             kept + "; reproduce: ALMAGEST_FUZZ_SEED=" + std::to_string(seed) +
                             " ALMAGEST_FUZZ_CASE=" + std::to_string(at) + "]";
    std::fprintf(stderr, "%s\n", line.c_str());
    report += line + "\n";
    ++failed;
    first = at + 1;
    if (++restarts >= kMaxRestarts) {
      report += c.name + ": stopped after " + std::to_string(kMaxRestarts) + " crashes or hangs\n";
      break;
    }
  }
  munmap(mem, sizeof(Shared));
  std::fprintf(stderr, "fuzz %s: seed %llu, %d mutations + %d fixtures, %d failing, %.1f s\n",
               c.name.c_str(), static_cast<unsigned long long>(seed), ncases, extras, failed,
               double(now_ns() - t0) * 1e-9);
  if (failed == 0) {
    std::error_code ec;
    fs::remove_all(work, ec);
  }
  QVERIFY2(failed == 0, qPrintable(QString::fromStdString(
                            c.name + ": " + std::to_string(failed) + " failing case(s):\n" + report)));
}

}  // namespace almagest::fuzz

/// main() of a fuzz test: QTEST_GUILESS_MAIN with Qt Test's crash handler off (-nocrashhandler).
/// Its handler would catch a child's SIGSEGV and attach gdb (the watchdog then sees a hang), and
/// under ASan it would replace ASan's own report.
#define ALMAGEST_FUZZ_MAIN(TestClass)                                  \
  int main(int argc, char** argv) {                                    \
    QCoreApplication app(argc, argv);                                  \
    std::vector<char*> args(argv, argv + argc);                        \
    static char no_handler[] = "-nocrashhandler";                      \
    args.insert(args.begin() + 1, no_handler);                         \
    TestClass t;                                                       \
    QTEST_SET_MAIN_SOURCE_PATH                                         \
    return QTest::qExec(&t, int(args.size()), args.data());            \
  }

// Replacement global allocation functions (see the header comment). The aligned forms are left
// to the library: they are not counted, and they are freed by its own aligned delete.
void* operator new(std::size_t n) { return almagest::fuzz::counted_alloc(n, false); }
void* operator new[](std::size_t n) { return almagest::fuzz::counted_alloc(n, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return almagest::fuzz::counted_alloc(n, true);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return almagest::fuzz::counted_alloc(n, true);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { almagest::fuzz::counted_free(p); }
void operator delete[](void* p) noexcept { almagest::fuzz::counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { almagest::fuzz::counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { almagest::fuzz::counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { almagest::fuzz::counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { almagest::fuzz::counted_free(p); }
