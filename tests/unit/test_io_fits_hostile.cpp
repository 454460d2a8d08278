// Hostile FITS files through every FITS reader of the engine (io::FitsFile underneath): the
// fixtures of tests/fixtures/corrupt, and seeded damage made here with cfitsio (NaN and inf
// values, INDEX beyond the rows, NAXIS2 / NAXIS1 / NUMIMG larger than the file, a flipped byte
// under CHECKSUM / DATASUM), file names with blanks, parentheses and brackets, and the writers'
// refusal of non-finite results. Each case expects an IoError naming the file and the field.
#include <QtTest>
#include <fitsio.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/stack/stack_io.hpp"
#include "fits_tables.hpp"

using namespace almagest;
namespace fs = std::filesystem;

namespace {

const std::string kCorrupt = ALMAGEST_SOURCE_DIR "/tests/fixtures/corrupt/";

std::string tmp_root() {
  const QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath().toStdString() : env.toStdString();
}

/// A fresh, empty folder for one test (so stray files can be counted).
std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(tmp_root()) / ("fits_hostile_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

/// Runs `f`, expecting an IoError whose file is `file`, whose field contains `field` and whose
/// message contains every one of `words`. Prints what came instead.
bool io_error(const std::function<void()>& f, const std::string& file, const std::string& field,
              const std::vector<std::string>& words) {
  try {
    f();
  } catch (const IoError& e) {
    bool ok = e.file() == file && e.field().find(field) != std::string::npos;
    for (const auto& w : words) ok = ok && std::string(e.what()).find(w) != std::string::npos;
    if (!ok) qWarning("unexpected IoError: [%s] [%s] %s", e.file().c_str(), e.field().c_str(), e.what());
    return ok;
  } catch (const std::exception& e) {
    qWarning("expected IoError, got: %s", e.what());
    return false;
  }
  qWarning("expected IoError, nothing thrown");
  return false;
}

/// Adds ORDERING = 'RING' to HDU 2 of a table written raw (testing::write_fits_table); the
/// cfitsio status (0: done).
int set_ring_ordering(const std::string& path) {
  fitsfile* f = nullptr;
  int st = 0, type = 0;
  fits_open_diskfile(&f, path.c_str(), READWRITE, &st);
  fits_movabs_hdu(f, 2, &type, &st);
  char ring[] = "RING";
  fits_update_key(f, TSTRING, "ORDERING", ring, nullptr, &st);
  fits_close_file(f, &st);
  return st;
}

/// A seeded full-sky map (RING, one column).
sht::HealpixMap seeded_map(int nside, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  sht::HealpixMap m;
  m.nside = nside;
  m.names = {"TEMPERATURE"};
  m.columns.assign(1, std::vector<double>(static_cast<std::size_t>(sht::npix_of(nside))));
  for (double& x : m.columns[0]) x = g(rng);
  return m;
}

/// An alm table as healpy writes it (INDEX K, REAL D, IMAG D), from raw columns.
void write_alm_table(const std::string& path, const std::vector<long long>& idx,
                     const std::vector<double>& re, const std::vector<double>& im) {
  fitsfile* f = nullptr;
  int st = 0;
  fs::remove(path);
  fits_create_diskfile(&f, path.c_str(), &st);
  fits_create_img(f, 8, 0, nullptr, &st);
  char c1[] = "INDEX", c2[] = "REAL", c3[] = "IMAG", f1[] = "K", f2[] = "D", f3[] = "D", u[] = "";
  char* tt[] = {c1, c2, c3};
  char* tf[] = {f1, f2, f3};
  char* tu[] = {u, u, u};
  fits_create_tbl(f, BINARY_TBL, static_cast<LONGLONG>(idx.size()), 3, tt, tf, tu, nullptr, &st);
  std::vector<LONGLONG> ix(idx.begin(), idx.end());
  fits_write_col(f, TLONGLONG, 1, 1, 1, static_cast<LONGLONG>(ix.size()), ix.data(), &st);
  fits_write_col(f, TDOUBLE, 2, 1, 1, static_cast<LONGLONG>(re.size()), const_cast<double*>(re.data()), &st);
  fits_write_col(f, TDOUBLE, 3, 1, 1, static_cast<LONGLONG>(im.size()), const_cast<double*>(im.data()), &st);
  fits_close_file(f, &st);
  QCOMPARE(st, 0);
}

/// A dense seeded alm table up to lmax (healpy's row order: m outer, l inner).
void seeded_alm_table(const std::string& path, int lmax, unsigned seed, std::vector<long long>& idx,
                      std::vector<double>& re, std::vector<double>& im) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  idx.clear();
  re.clear();
  im.clear();
  for (int m = 0; m <= lmax; ++m)
    for (int l = m; l <= lmax; ++l) {
      idx.push_back(static_cast<long long>(l) * l + l + m + 1);
      re.push_back(u(rng));
      im.push_back(m == 0 ? 0.0 : u(rng));
    }
  write_alm_table(path, idx, re, im);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::string& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
}

/// Replaces the value of the `nth` (0-based) header card `key` by `value`, right-justified in
/// columns 11-30 as a fixed-format integer (the file keeps its size and layout).
void patch_card(const std::string& path, const std::string& key, int nth, const std::string& value) {
  std::string b = read_bytes(path);
  std::string pad = key;
  pad.resize(8, ' ');
  pad += "= ";
  std::size_t at = std::string::npos;
  for (std::size_t off = 0, seen = 0; off + 80 <= b.size(); off += 80)
    if (b.compare(off, 10, pad) == 0 && seen++ == static_cast<std::size_t>(nth)) {
      at = off;
      break;
    }
  QVERIFY2(at != std::string::npos, key.c_str());
  std::string v(20, ' ');
  v.replace(20 - value.size(), value.size(), value);
  b.replace(at + 10, 20, v);
  write_bytes(path, b);
}

/// Byte offset of HDU `hdu`'s data (1 = primary).
long long data_start(const std::string& path, int hdu) {
  fitsfile* f = nullptr;
  int st = 0, type = 0;
  fits_open_diskfile(&f, path.c_str(), READONLY, &st);
  fits_movabs_hdu(f, hdu, &type, &st);
  LONGLONG head = 0, data = 0, end = 0;
  fits_get_hduaddrll(f, &head, &data, &end, &st);
  fits_close_file(f, &st);
  return st ? -1 : data;
}

/// Adds CHECKSUM and DATASUM to every HDU.
void add_checksums(const std::string& path) {
  fitsfile* f = nullptr;
  int st = 0, n = 0, type = 0;
  fits_open_diskfile(&f, path.c_str(), READWRITE, &st);
  fits_get_num_hdus(f, &n, &st);
  for (int h = 1; h <= n; ++h) {
    fits_movabs_hdu(f, h, &type, &st);
    fits_write_chksum(f, &st);
  }
  fits_close_file(f, &st);
  QCOMPARE(st, 0);
}

bool bit_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

class TestIoFitsHostile : public QObject {
  Q_OBJECT

private slots:
  // --- the fixtures found by the campaign ---------------------------------------------------
  void fixtureChecksumMismatchIsRefused() {
    const std::string bad = kCorrupt + "map_cks_bad.fits";
    QVERIFY(io_error([&] { sht::read_healpix_map(bad); }, bad, "HDU 1", {"DATASUM", "damaged"}));
    // The intact file with the same sums is read.
    const auto m = sht::read_healpix_map(kCorrupt + "map_cks.fits");
    QCOMPARE(m.nside, 8);
    QCOMPARE(m.columns.at(0).size(), std::size_t{768});
  }

  void fixtureHugeAlmIndexIsRefusedBeforeAllocating() {
    const std::string f = kCorrupt + "oom_almfits_105.fits";
    QVERIFY(io_error([&] { sht::read_alm(f, 1); }, f, "HDU 1, column INDEX", {"row 296", "l = 486027", "300 rows"}));
    // With a requested band limit the corrupt entry is dropped, like every l above it.
    int L = -1;
    const auto a = sht::read_alm(f, 1, 23, &L);
    QCOMPARE(L, 23);
    QCOMPARE(a.size(), sht::alm_size(23));
  }

  void fixtureWorkUnitStillReads() {
    const auto s = stack::read_workunit(kCorrupt + "stack_for_stamps.fits");
    QCOMPARE(s.size(), std::size_t{12});
    QCOMPARE(s.width, 32);
  }

  // --- non-finite values --------------------------------------------------------------------
  void nanOrInfInAlmNamesHduColumnAndRow() {
    const std::string dir = fresh_dir("alm_nan");
    std::vector<long long> idx;
    std::vector<double> re, im;
    const std::string p = dir + "/alm.fits";
    seeded_alm_table(p, 5, 11, idx, re, im);
    int L = -1;
    const auto good = sht::read_alm(p, 1, -1, &L);
    QCOMPARE(L, 5);
    for (std::size_t i = 0; i < idx.size(); ++i)
      if (idx[i] == 3 * 3 + 3 + 2 + 1) QCOMPARE(good[sht::alm_index(5, 3, 2)], std::complex<double>(re[i], im[i]));
    re[6] = std::numeric_limits<double>::quiet_NaN();  // row 7
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "HDU 1, column REAL", {"row 7", "nan", "finite"}));
    re[6] = 0.5;
    im[12] = -std::numeric_limits<double>::infinity();  // row 13
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "HDU 1, column IMAG", {"row 13", "inf"}));
  }

  void infInMapNamesColumnAndPixelNanIsBlind() {
    const std::string dir = fresh_dir("map_inf");
    sht::HealpixMap m = seeded_map(4, 21);
    m.columns[0][17] = std::numeric_limits<double>::quiet_NaN();
    const std::string p = dir + "/map.fits";
    // Written raw (the engine's writer refuses non-finite maps).
    QCOMPARE(testing::write_fits_table(p, {"TEMPERATURE"}, m.columns[0], 'D', 1, 4), 0);
    QCOMPARE(set_ring_ordering(p), 0);
    const auto r = sht::read_healpix_map(p);
    QCOMPARE(r.columns[0][17], sht::kUnseen);  // NaN reads as UNSEEN (docs/cli.md)
    QCOMPARE(r.columns[0][18], m.columns[0][18]);
    m.columns[0][101] = std::numeric_limits<double>::infinity();
    QCOMPARE(testing::write_fits_table(p, {"TEMPERATURE"}, m.columns[0], 'E', 1, 4), 0);
    QCOMPARE(set_ring_ordering(p), 0);
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "TEMPERATURE", {"pixel 101", "inf"}));
  }

  // --- sizes from headers ---------------------------------------------------------------------
  void almIndexBeyondRows() {
    const std::string dir = fresh_dir("alm_index");
    std::vector<long long> idx;
    std::vector<double> re, im;
    const std::string p = dir + "/alm.fits";
    seeded_alm_table(p, 3, 5, idx, re, im);
    idx[4] = 1000000000LL;  // l = 31622 from a 10-row table
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "column INDEX", {"row 5", "INDEX 1000000000", "10 rows"}));
    // An INDEX near 2^63 is refused without overflow.
    idx[4] = std::numeric_limits<long long>::max();
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "column INDEX", {"row 5"}));
    idx[4] = 0;
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "column INDEX", {"row 5", ">= 1"}));
    idx[4] = std::numeric_limits<long long>::min();
    write_alm_table(p, idx, re, im);
    QVERIFY(io_error([&] { sht::read_alm(p, 1); }, p, "column INDEX", {"row 5"}));
    // A sparse but modest band limit (within kAlmFreeLmax) is read.
    idx[4] = 100LL * 100 + 100 + 3 + 1;
    write_alm_table(p, idx, re, im);
    int L = -1;
    const auto a = sht::read_alm(p, 1, -1, &L);
    QCOMPARE(L, 100);
    QCOMPARE(a[sht::alm_index(100, 100, 3)].real(), re[4]);
  }

  void naxis2LargerThanTheFile() {
    const std::string dir = fresh_dir("naxis2");
    const std::string p = dir + "/map.fits";
    sht::write_healpix_map(p, seeded_map(8, 3));
    patch_card(p, "NAXIS2", 0, "99999999999");
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 1", {"NAXIS2 = 99999999999", "bytes"}));

    std::vector<long long> idx;
    std::vector<double> re, im;
    const std::string pa = dir + "/alm.fits";
    seeded_alm_table(pa, 6, 8, idx, re, im);
    patch_card(pa, "NAXIS2", 0, "4000000000");
    QVERIFY(io_error([&] { sht::read_alm(pa, 1); }, pa, "HDU 1", {"NAXIS2 = 4000000000"}));

    const std::string pc = dir + "/cat.fits";
    std::vector<double> v(300);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25 * static_cast<double>(i);
    QCOMPARE(testing::write_fits_table(pc, {"x", "y", "z"}, v), 0);
    patch_card(pc, "NAXIS2", 0, "123456789012");
    io::CatalogueSpec spec;
    spec.path = pc;
    QVERIFY(io_error([&] { io::load_catalogue(spec); }, pc, "HDU 2", {"NAXIS2 = 123456789012"}));
  }

  void workUnitSizesCheckedAgainstTheFile() {
    const std::string dir = fresh_dir("workunit");
    const std::string p = dir + "/wu.fits";
    fs::copy_file(kCorrupt + "stack_for_stamps.fits", p);
    patch_card(p, "NUMIMG", 0, "2000000000");
    QVERIFY(io_error([&] { stack::read_workunit(p); }, p, "NUMIMG", {"2000000000", "bytes"}));
    fs::copy_file(kCorrupt + "stack_for_stamps.fits", p, fs::copy_options::overwrite_existing);
    patch_card(p, "NAXIS1", 0, "3000000");  // SCI_0 (the primary has no axes)
    QVERIFY(io_error([&] { stack::read_workunit(p); }, p, "SCI_0", {"3000000 x 32", "bytes"}));
  }

  // --- checksums ------------------------------------------------------------------------------
  void flippedDataByteUnderChecksum() {
    const std::string dir = fresh_dir("checksum");
    const std::string p = dir + "/map.fits";
    const auto m = seeded_map(4, 9);
    sht::write_healpix_map(p, m);
    add_checksums(p);
    QVERIFY(bit_equal(sht::read_healpix_map(p).columns[0], m.columns[0]));  // intact: read
    std::string b = read_bytes(p);
    const long long at = data_start(p, 2) + 8 * 37 + 3;
    QVERIFY(at > 0);
    b[static_cast<std::size_t>(at)] = static_cast<char>(b[static_cast<std::size_t>(at)] ^ 0x10);
    write_bytes(p, b);
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 1", {"DATASUM"}));

    // A header byte (ORDERING's comment) under CHECKSUM only.
    sht::write_healpix_map(p, m);
    add_checksums(p);
    b = read_bytes(p);
    const std::size_t card = b.find("OBJECT  =");
    QVERIFY(card != std::string::npos);
    b[card + 60] = b[card + 60] == 'x' ? 'y' : 'x';
    write_bytes(p, b);
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 1", {"CHECKSUM"}));

    // The catalogue reader and the WorkUnit reader verify too.
    const std::string pc = dir + "/cat.fits";
    std::vector<double> v(64);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + static_cast<double>(i);
    QCOMPARE(testing::write_fits_table(pc, {"x", "y", "z"}, v), 0);
    add_checksums(pc);
    io::CatalogueSpec spec;
    spec.path = pc;
    QCOMPARE(io::load_catalogue(spec).size(), std::size_t{64});
    b = read_bytes(pc);
    b[static_cast<std::size_t>(data_start(pc, 2) + 100)] ^= 0x01;
    write_bytes(pc, b);
    QVERIFY(io_error([&] { io::load_catalogue(spec); }, pc, "HDU 2", {"DATASUM"}));

    const std::string pw = dir + "/wu.fits";
    fs::copy_file(kCorrupt + "stack_for_stamps.fits", pw);
    add_checksums(pw);
    QCOMPARE(stack::read_workunit(pw).size(), std::size_t{12});
    b = read_bytes(pw);
    b[static_cast<std::size_t>(data_start(pw, 3) + 10)] ^= 0x40;  // VAR_0
    write_bytes(pw, b);
    QVERIFY(io_error([&] { stack::read_workunit(pw); }, pw, "VAR_0", {"DATASUM"}));
  }

  // --- literal file names ---------------------------------------------------------------------
  void namesWithBlanksParenthesesAndBrackets() {
    const std::string dir = fresh_dir("names");
    const auto m = seeded_map(4, 31);
    std::set<std::string> expected;
    for (const std::string name : {"map (copy).fits", "out[1].fits", "out.fits[1]", "!bang.fits",
                                   "a+b[SCI_0](x).fits"}) {
      const std::string p = dir + "/" + name;
      sht::write_healpix_map(p, m);
      expected.insert(name);
      const auto r = sht::read_healpix_map(p);
      QVERIFY2(bit_equal(r.columns[0], m.columns[0]), name.c_str());
    }
    // A relative name starting with a blank keeps it.
    {
      const fs::path old = fs::current_path();
      fs::current_path(dir);
      sht::write_healpix_map(" lead.fits", m);
      QVERIFY(bit_equal(sht::read_healpix_map(" lead.fits").columns[0], m.columns[0]));
      fs::current_path(old);
      expected.insert(" lead.fits");
    }
    // Alm and WorkUnit writers and readers with such names.
    std::vector<std::vector<std::complex<double>>> sets(2, std::vector<std::complex<double>>(sht::alm_size(7)));
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& s : sets)
      for (std::size_t i = 0; i < s.size(); ++i) s[i] = {u(rng), i < 8 ? 0.0 : u(rng)};
    const std::string pa = dir + "/alm (1)[2].fits";
    sht::write_alm(pa, sets, 7);
    expected.insert("alm (1)[2].fits");
    int L = -1;
    QVERIFY(sht::read_alm(pa, 1, -1, &L) == sets[0]);
    QVERIFY(sht::read_alm(pa, 2, -1, &L) == sets[1]);
    const auto wu = stack::read_workunit(kCorrupt + "stack_for_stamps.fits");
    const std::string pw = dir + "/stack (v2)[0].fits";
    stack::write_workunit(pw, wu);
    expected.insert("stack (v2)[0].fits");
    const auto wu2 = stack::read_workunit(pw);
    QVERIFY(wu2.sci == wu.sci);
    QVERIFY(wu2.var == wu.var);
    QCOMPARE(wu2.mjd, wu.mjd);
    // Nothing else appeared (no 0-byte files, no temporaries), and nothing is empty.
    QCOMPARE(listing(dir), expected);
    for (const auto& e : fs::directory_iterator(dir)) QVERIFY(fs::file_size(e.path()) > 0);
    // Reading a name that exists only as its cfitsio reading is an error, not another file.
    QVERIFY(io_error([&] { sht::read_healpix_map(dir + "/map (copy).fits[1]"); },
                     dir + "/map (copy).fits[1]", "", {"cannot open"}));
  }

  // --- writers refuse non-finite results --------------------------------------------------------
  void writersRefuseNonFiniteResults() {
    const std::string dir = fresh_dir("writers");
    // A map of 1e308: its adjoint overflows to non-finite alm.
    sht::ShtConfig cfg;
    cfg.nside = 4;
    cfg.lmax = 7;
    cfg.threads = 1;
    const auto plan = sht::make_plan(cfg);
    std::vector<double> map(plan.map_size(), 1e308);
    std::vector<sht::Complex> alm(plan.nalm());
    plan.adjoint(map, alm);
    bool any_bad = false;
    for (const auto& a : alm) any_bad = any_bad || !std::isfinite(a.real()) || !std::isfinite(a.imag());
    QVERIFY(any_bad);
    const std::string pa = dir + "/alm.fits";
    QVERIFY(io_error([&] { sht::write_alm(pa, {alm}, 7); }, pa, "alm set 0", {"not finite", "index 0", "l = 0, m = 0"}));
    // The first bad index is named with its l and m.
    std::vector<sht::Complex> a2(sht::alm_size(7), 1.0);
    a2[sht::alm_index(7, 5, 2)] = {0.0, std::numeric_limits<double>::quiet_NaN()};
    QVERIFY(io_error([&] { sht::write_alm(pa, {a2, a2}, 7); }, pa, "alm set 0",
                     {"index " + std::to_string(sht::alm_index(7, 5, 2)), "l = 5, m = 2"}));
    // Maps: NaN and inf refused, naming the pixel; UNSEEN is a valid value.
    auto m = seeded_map(4, 2);
    m.columns[0][5] = sht::kUnseen;
    const std::string pm = dir + "/map.fits";
    sht::write_healpix_map(pm, m);
    QCOMPARE(sht::read_healpix_map(pm).columns[0][5], sht::kUnseen);
    fs::remove(pm);
    m.columns[0][40] = 1e308 * 10;
    QVERIFY(io_error([&] { sht::write_healpix_map(pm, m); }, pm, "TEMPERATURE", {"pixel 40", "not finite"}));
    m.columns[0][40] = 0;
    m.columns[0][7] = std::numeric_limits<double>::quiet_NaN();
    QVERIFY(io_error([&] { sht::write_healpix_map(pm, m); }, pm, "TEMPERATURE", {"pixel 7"}));
    QVERIFY(listing(dir).empty());  // nothing written, no temporary left
    QCOMPARE(live_temp_file_count(), 0);
  }

  // --- header bytes outside printable ASCII, headers past the end (checked before cfitsio) ------
  void headerBytesCheckedBeforeCfitsio() {
    const std::string dir = fresh_dir("header_bytes");
    const std::string p = dir + "/map.fits";
    sht::write_healpix_map(p, seeded_map(4, 5));
    const std::string good = read_bytes(p);
    // The NSIDE card of HDU 2 (cfitsio's ffc2j strncat aborted on such bytes): its card number.
    // HDU 2's header starts where the primary's (empty) data do.
    const long long start2 = data_start(p, 1);
    QVERIFY(start2 > 0);
    const std::size_t hdu2 = static_cast<std::size_t>(start2);
    std::size_t at = std::string::npos;
    for (std::size_t off = hdu2; off + 80 <= good.size(); off += 80)
      if (good.compare(off, 8, "NSIDE   ") == 0) {
        at = off;
        break;
      }
    QVERIFY(at != std::string::npos);
    const std::string card = "header card " + std::to_string((at - hdu2) / 80 + 1);
    std::string b = good;
    b[at + 11] = static_cast<char>(0xc3);
    write_bytes(p, b);
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 2",
                     {card, "'NSIDE'", "non-ASCII byte 0xc3", "column 12"}));
    // A control byte in the primary header's first card.
    b = good;
    b[20] = '\n';
    write_bytes(p, b);
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 1",
                     {"header card 1", "'SIMPLE'", "non-printable byte 0x0a", "column 21"}));
    // A header cut before its END card.
    write_bytes(p, good.substr(0, hdu2 + 2000));
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "HDU 2", {"runs past the end of the file"}));
    // Intact again: read.
    write_bytes(p, good);
    QCOMPARE(sht::read_healpix_map(p).columns.size(), std::size_t(1));
  }

  void missingAndNonFitsFiles() {
    const std::string dir = fresh_dir("missing");
    const std::string p = dir + "/none.fits";
    QVERIFY(io_error([&] { sht::read_healpix_map(p); }, p, "", {"cannot open"}));
    const std::string t = dir + "/text.fits";
    write_bytes(t, "this is not FITS\n");
    QVERIFY(io_error([&] { sht::read_alm(t, 1); }, t, "", {"cannot open"}));
    const std::string e = dir + "/primary_only.fits";
    QCOMPARE(testing::write_fits_table(e, {"x"}, {1.0, 2.0}), 0);
    QVERIFY(io_error([&] { sht::read_alm(e, 2); }, e, "HDU 2", {"no such HDU"}));
  }
};

QTEST_GUILESS_MAIN(TestIoFitsHostile)
#include "test_io_fits_hostile.moc"
