// almagest-cli sht against the SHT engine: synth equals the engine's synthesis exactly (FITS,
// HDF5, --pol, --spin 2, --nest-out, --lmax truncation), adjoint is the engine's Y^T and satisfies
// <Y a, m> = <a, Y^T m>, inverse recovers band-limited alm (nside 16, lmax 32) to 2e-9 and fails
// with exit code 6 when not converged, map2alm and cl equal the engine's, smooth with FWHM 0 is
// the identity on band-limited maps, cut-sky runs equal the engine's cut-sky plans, outputs carry
// provenance, and every bad input is rejected with one line naming the file and key, a non-zero
// exit code and no output.
#include <QtTest>
#include <fitsio.h>

#include <csignal>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "fits_tables.hpp"
#include "almagest/sht/plan.hpp"
#include "sht_testdata.hpp"
#include "almagest/sht/spectra.hpp"

namespace fs = std::filesystem;
using namespace almagest;
using namespace almagest::sht;

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {

constexpr int kThreads = 2;





using test::random_alm;

ShtPlan plan_of(int nside, int lmax, int spin, std::vector<std::int64_t> observed = {}) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.spin = spin;
  c.threads = kThreads;
  c.observed_pixels = std::move(observed);
  return make_plan(c);
}

std::vector<Complex> cat(const std::vector<Complex>& a, const std::vector<Complex>& b) {
  std::vector<Complex> o(a);
  o.insert(o.end(), b.begin(), b.end());
  return o;
}
std::vector<double> cat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> o(a);
  o.insert(o.end(), b.begin(), b.end());
  return o;
}
template <class T>
std::vector<T> part(const std::vector<T>& v, std::size_t k, std::size_t n) {
  return std::vector<T>(v.begin() + k * n, v.begin() + (k + 1) * n);
}

/// Engine synthesis of (T), (E, B) or (T, E, B) sets into map columns.
std::vector<std::vector<double>> engine_synth(int nside, int lmax, const std::vector<std::vector<Complex>>& sets) {
  std::vector<std::vector<double>> out;
  const std::size_t npix = static_cast<std::size_t>(npix_of(nside));
  std::size_t k = 0;
  if (sets.size() != 2) {
    std::vector<double> m(npix);
    plan_of(nside, lmax, 0).synthesis(sets[0], m);
    out.push_back(m);
    k = 1;
  }
  if (sets.size() >= 2) {
    std::vector<double> qu(2 * npix);
    plan_of(nside, lmax, 2).synthesis(cat(sets[k], sets[k + 1]), qu);
    out.push_back(part(qu, 0, npix));
    out.push_back(part(qu, 1, npix));
  }
  return out;
}

double max_abs_diff(const std::vector<Complex>& a, const std::vector<Complex>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}
double max_abs(const std::vector<Complex>& a) {
  double m = 0.0;
  for (const auto& x : a) m = std::max(m, std::abs(x));
  return m;
}

std::string fits_key(const std::string& path, int hdu, const char* key) {
  fitsfile* f = nullptr;
  int st = 0, type = 0;
  char v[FLEN_VALUE] = {0};
  fits_open_file(&f, path.c_str(), READONLY, &st);
  fits_movabs_hdu(f, hdu + 1, &type, &st);
  fits_read_key(f, TSTRING, key, v, nullptr, &st);
  std::string s = st ? std::string() : std::string(v);
  int st2 = 0;
  fits_close_file(f, &st2);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

/// Columns of the first table of a FITS file (spectra written by `sht cl`), with their names.
std::vector<std::vector<double>> fits_columns(const std::string& path, std::vector<std::string>& names) {
  fitsfile* f = nullptr;
  int st = 0, type = 0, ncols = 0;
  long nrows = 0;
  fits_open_file(&f, path.c_str(), READONLY, &st);
  fits_movabs_hdu(f, 2, &type, &st);
  fits_get_num_cols(f, &ncols, &st);
  fits_get_num_rows(f, &nrows, &st);
  std::vector<std::vector<double>> cols(static_cast<std::size_t>(ncols), std::vector<double>(nrows));
  for (int c = 1; c <= ncols; ++c) {
    int anynul = 0;
    fits_read_col(f, TDOUBLE, c, 1, 1, nrows, nullptr, cols[c - 1].data(), &anynul, &st);
    char key[FLEN_KEYWORD], v[FLEN_VALUE] = {0};
    std::snprintf(key, sizeof key, "TTYPE%d", c);
    fits_read_key(f, TSTRING, key, v, nullptr, &st);
    names.emplace_back(v);
  }
  int st2 = 0;
  fits_close_file(f, &st2);
  if (st) cols.clear();
  return cols;
}

/// A map FITS table written here from the format description, optionally corrupted: NSIDE key
/// value (or none), ORDERING, and the number of values per column.
void write_raw_map(const std::string& path, long long nside_key, const char* ordering, long long nvalues,
                   int ncols, double value = 1.0) {
  fitsfile* f = nullptr;
  int st = 0;
  fits_create_file(&f, ("!" + path).c_str(), &st);
  fits_create_img(f, 8, 0, nullptr, &st);
  std::vector<std::string> names = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  std::vector<char*> tt, tf, tu;
  char form[] = "D", empty[] = "";
  for (int i = 0; i < ncols; ++i) {
    tt.push_back(names[i].data());
    tf.push_back(form);
    tu.push_back(empty);
  }
  fits_create_tbl(f, BINARY_TBL, nvalues, ncols, tt.data(), tf.data(), tu.data(), nullptr, &st);
  char pixtype[] = "HEALPIX";
  fits_update_key(f, TSTRING, "PIXTYPE", pixtype, nullptr, &st);
  fits_update_key(f, TSTRING, "ORDERING", const_cast<char*>(ordering), nullptr, &st);
  if (nside_key > 0) fits_update_key(f, TLONGLONG, "NSIDE", &nside_key, nullptr, &st);
  std::vector<double> v(static_cast<std::size_t>(nvalues));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = value * std::sin(0.1 * static_cast<double>(i)) + 0.5;
  for (int c = 1; c <= ncols; ++c) fits_write_col(f, TDOUBLE, c, 1, 1, nvalues, v.data(), &st);
  fits_close_file(f, &st);
  QVERIFY2(st == 0, path.c_str());
}

HealpixMap make_map(int nside, std::vector<std::vector<double>> cols) {
  HealpixMap m;
  m.nside = nside;
  m.columns = std::move(cols);
  m.names = m.columns.size() == 1 ? std::vector<std::string>{"TEMPERATURE"}
            : m.columns.size() == 2 ? std::vector<std::string>{"Q_POLARISATION", "U_POLARISATION"}
                                    : std::vector<std::string>{"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  return m;
}


}  // namespace

class TestCliSht : public QObject {
  Q_OBJECT

  std::optional<QTemporaryDir> tmp_;
  fs::path dir_;
  // Band-limited test data: nside 16, alm (T, E, B) at lmax 40.
  static constexpr int kNside = 16, kLmax = 40;
  std::vector<std::vector<Complex>> teb_;
  fs::path alm_fits_, alm_h5_, map_fits_;  // alm sets and their synthesised (T, Q, U) map

  fs::path fresh_dir(const std::string& name) {
    fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }
  QStringList common() const { return {"--threads", QString::number(kThreads), "--quiet"}; }

private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(ALMAGEST_CLI), ALMAGEST_CLI);
    tmp_.emplace(temp_dir_template("cli-sht"));
    QVERIFY(tmp_->isValid());
    dir_ = tmp_->path().toStdString();
    teb_ = {random_alm(kLmax, false, 11), random_alm(kLmax, true, 12), random_alm(kLmax, true, 13)};
    alm_fits_ = dir_ / "teb.fits";
    alm_h5_ = dir_ / "eb.h5";
    map_fits_ = dir_ / "tqu.fits";
    write_alm(alm_fits_.string(), teb_, kLmax);
    write_alm_hdf5(alm_h5_.string(), {teb_[1], teb_[2]}, kLmax);
    write_healpix_map(map_fits_.string(), make_map(kNside, engine_synth(kNside, kLmax, teb_)));
  }

  // synth of a known alm file equals the engine's synthesis, bit for bit.
  void synthEqualsEngine() {
    fs::path out = fresh_dir("synth");
    const auto expected = engine_synth(kNside, kLmax, teb_);
    // Spin 0 (first HDU), FITS -> FITS.
    CliRun r = run_cli(QStringList{"sht", "synth", q(alm_fits_), "--nside", "16", "-o", q(out / "t.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    HealpixMap t = read_healpix_map((out / "t.fits").string());
    QCOMPARE(t.nside, kNside);
    QCOMPARE(t.columns.size(), std::size_t(1));
    QCOMPARE(t.columns[0], expected[0]);
    QVERIFY(std::any_of(expected[0].begin(), expected[0].end(), [](double v) { return std::abs(v) > 1.0; }));
    // Provenance keywords.
    QCOMPARE(fits_key((out / "t.fits").string(), 1, "ORIGIN"), std::string("Almagest"));
    QCOMPARE(fits_key((out / "t.fits").string(), 1, "ALMCMD"), std::string("sht synth"));
    QCOMPARE(fits_key((out / "t.fits").string(), 1, "ALMBACK"), std::string("cpu"));
    QCOMPARE(fits_key((out / "t.fits").string(), 1, "LMAX"), std::string("40"));

    // --pol: (T, E, B) -> (T, Q, U).
    r = run_cli(QStringList{"sht", "synth", q(alm_fits_), "--nside", "16", "--pol", "-o", q(out / "tqu.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    HealpixMap tqu = read_healpix_map((out / "tqu.fits").string());
    QCOMPARE(tqu.columns.size(), std::size_t(3));
    for (int c = 0; c < 3; ++c) QCOMPARE(tqu.columns[c], expected[c]);
    QCOMPARE(tqu.names, (std::vector<std::string>{"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"}));
    QCOMPARE(fits_key((out / "tqu.fits").string(), 1, "POLCCONV"), std::string("COSMO"));

    // --spin 2 from HDF5 alm (E, B) to an HDF5 map; NESTED output.
    r = run_cli(QStringList{"sht", "synth", q(alm_h5_), "--nside", "16", "--spin", "2", "--nest-out", "-o",
                            q(out / "qu.h5")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    HealpixMap qu = read_map_hdf5((out / "qu.h5").string());
    QCOMPARE(int(qu.ordering), int(Ordering::Nested));
    QCOMPARE(qu.columns.size(), std::size_t(2));
    QCOMPARE(qu.columns[0], ring_to_nest(expected[1], kNside));
    QCOMPARE(qu.columns[1], ring_to_nest(expected[2], kNside));
    io::Hdf5Reader h5((out / "qu.h5").string());
    const std::string prov = h5.read_attr_string("/", "provenance");
    QVERIFY2(prov.find("\"backend\":\"cpu\"") != std::string::npos, prov.c_str());
    QVERIFY2(prov.find("sht synth") != std::string::npos, prov.c_str());
    QCOMPARE(h5.read_attr_string("/", "almcmd"), std::string("sht synth"));

    // --lmax truncates the file's alm.
    r = run_cli(QStringList{"sht", "synth", q(alm_fits_), "--nside", "16", "--lmax", "20", "-o", q(out / "t20.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<Complex> a20(alm_size(20));
    for (int m = 0; m <= 20; ++m)
      for (int l = m; l <= 20; ++l) a20[alm_index(20, l, m)] = teb_[0][alm_index(kLmax, l, m)];
    QCOMPARE(read_healpix_map((out / "t20.fits").string()).columns[0], engine_synth(kNside, 20, {a20})[0]);
  }

  // adjoint of the synthesised map: equals the engine's Y^T, and <Y a, m> = <a, Y^T m>.
  void adjointIdentity() {
    fs::path out = fresh_dir("adjoint");
    const auto maps = engine_synth(kNside, kLmax, teb_);
    CliRun r = run_cli(QStringList{"sht", "adjoint", q(map_fits_), "--lmax", "40", "--pol", "-o", q(out / "ad.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::size_t npix = static_cast<std::size_t>(npix_of(kNside)), n = alm_size(kLmax);
    std::vector<std::vector<Complex>> got;
    for (int h = 1; h <= 3; ++h) {
      int lmax = -1;
      got.push_back(read_alm((out / "ad.fits").string(), h, -1, &lmax));
      QCOMPARE(lmax, kLmax);
    }
    std::vector<Complex> t(n), eb(2 * n);
    plan_of(kNside, kLmax, 0).adjoint(maps[0], t);
    plan_of(kNside, kLmax, 2).adjoint(cat(maps[1], maps[2]), eb);
    QCOMPARE(got[0], t);
    QCOMPARE(got[1], part(eb, 0, n));
    QCOMPARE(got[2], part(eb, 1, n));
    // Adjointness per spin: <Y a, m> (m = Y a, the map just transformed) = <a, Y^T m>.
    const double lhs0 = map_dot(maps[0], maps[0]);
    const double rhs0 = alm_dot(teb_[0], got[0], kLmax);
    const double lhs2 = map_dot(maps[1], maps[1]) + map_dot(maps[2], maps[2]);
    const double rhs2 = alm_dot(teb_[1], got[1], kLmax) + alm_dot(teb_[2], got[2], kLmax);
    qInfo("adjointness: spin 0 %.3e, spin 2 %.3e", std::abs(lhs0 - rhs0) / lhs0, std::abs(lhs2 - rhs2) / lhs2);
    QVERIFY(lhs0 > 0 && lhs2 > 0);
    QVERIFY(std::abs(lhs0 - rhs0) <= 1e-12 * lhs0);
    QVERIFY(std::abs(lhs2 - rhs2) <= 1e-12 * lhs2);
    QCOMPARE(fits_key((out / "ad.fits").string(), 3, "ALMCMD"), std::string("sht adjoint"));
    QCOMPARE(npix, maps[0].size());

    // Spin 2 alone from an HDF5 (Q, U) map, HDF5 alm out (engine layout, read back by the engine).
    write_map_hdf5((dir_ / "qu16.h5").string(), make_map(kNside, {maps[1], maps[2]}));
    r = run_cli(QStringList{"sht", "adjoint", q(dir_ / "qu16.h5"), "--spin", "2", "--lmax", "40", "-o", q(out / "eb.h5")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    int lm = -1;
    auto sets = read_alm_hdf5((out / "eb.h5").string(), &lm);
    QCOMPARE(lm, kLmax);
    QCOMPARE(sets.size(), std::size_t(2));
    QCOMPARE(sets[0], part(eb, 0, n));
    QCOMPARE(sets[1], part(eb, 1, n));
  }

  // inverse recovers band-limited alm (nside 16, lmax 32) to 2e-9; reports its iterations.
  void inverseRoundTrip() {
    fs::path out = fresh_dir("inverse");
    const int lmax = 32;
    std::vector<std::vector<Complex>> a = {random_alm(lmax, false, 21), random_alm(lmax, true, 22),
                                           random_alm(lmax, true, 23)};
    write_alm((out / "a.fits").string(), a, lmax);
    CliRun r = run_cli(QStringList{"sht", "synth", q(out / "a.fits"), "--nside", "16", "--pol", "-o", q(out / "m.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = run_cli({"sht", "inverse", q(out / "m.fits"), "--pol", "--lmax", "32", "--epsilon", "1e-11", "-o",
                 q(out / "inv.fits"), "--threads", "2"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("CGLS:") && r.out.contains("iterations"), qPrintable(r.out));
    double worst = 0.0;
    for (int h = 1; h <= 3; ++h) {
      int l = -1;
      auto got = read_alm((out / "inv.fits").string(), h, -1, &l);
      QCOMPARE(l, lmax);
      worst = std::max(worst, max_abs_diff(got, a[h - 1]) / max_abs(a[h - 1]));
    }
    qInfo("inverse recovery (nside 16, lmax 32, T/E/B): max relative error %.3e", worst);
    QVERIFY(worst < 2e-9);
    const int its = std::stoi(fits_key((out / "inv.fits").string(), 1, "CGITER"));
    QVERIFY(its >= 1 && its < 1000);
  }

  // NotConverged: its own exit code (6), one line naming the solver, no output.
  void inverseNotConverged() {
    fs::path out = fresh_dir("notconv");
    CliRun r = run_cli(QStringList{"sht", "inverse", q(map_fits_), "--max-iter", "1", "--epsilon", "1e-14", "-o",
                                   q(out / "x.fits")} + common());
    QVERIFY(r.finished);
    QCOMPARE(r.code, 6);
    QVERIFY2(r.err.startsWith("almagest-cli: error: ") && r.err.contains("CGLS did not reach"), qPrintable(r.err));
    QVERIFY2(r.err.contains("--max-iter"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QCOMPARE(listing(out), std::vector<std::string>{});
  }

  // map2alm (healpy iter) equals the engine's.
  void map2almEqualsEngine() {
    fs::path out = fresh_dir("map2alm");
    const auto maps = engine_synth(kNside, kLmax, teb_);
    CliRun r = run_cli(QStringList{"sht", "map2alm", q(map_fits_), "--iter", "2", "-o", q(out / "a.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const int lmax = 3 * kNside - 1;
    std::vector<Complex> a(alm_size(lmax));
    plan_of(kNside, lmax, 0).map2alm(maps[0], a, 2);
    int l = -1;
    QCOMPARE(read_alm((out / "a.fits").string(), 1, -1, &l), a);
    QCOMPARE(l, lmax);
    QCOMPARE(fits_key((out / "a.fits").string(), 1, "ITER"), std::string("2"));
  }

  // map2alm with a HEALPix ring weight file equals the engine's map2alm with those weights (w = 1 +
  // the stored float32 value); the file is named in the header and in the provenance. The same for
  // a full pixel weight file (healpy use_pixel_weights=True, no iterations).
  void map2almRingWeights() {
    fs::path out = fresh_dir("ringw");
    const auto maps = engine_synth(kNside, kLmax, teb_);
    std::vector<double> wm1(2 * kNside);
    for (std::size_t r = 0; r < wm1.size(); ++r) wm1[r] = 0.03 * std::cos(0.5 * static_cast<double>(r));
    const fs::path wfile = out / "weight_ring_n00016.fits";
    QCOMPARE(testing::write_fits_table(wfile.string(), {"TEMPERATURE WEIGHTS"}, wm1, 'E', 1, kNside), 0);
    CliRun r = run_cli(QStringList{"sht", "map2alm", q(map_fits_), "--iter", "1", "--ring-weights", q(wfile), "-o",
                                   q(out / "a.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<double> w(wm1.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + static_cast<double>(static_cast<float>(wm1[i]));
    const int lmax = 3 * kNside - 1;
    std::vector<Complex> a(alm_size(lmax)), plain(alm_size(lmax));
    auto plan = plan_of(kNside, lmax, 0);
    plan.map2alm(maps[0], a, 1, w);
    plan.map2alm(maps[0], plain, 1);
    QCOMPARE(read_alm((out / "a.fits").string()), a);
    QVERIFY(max_abs_diff(a, plain) > 1e-4 * max_abs(plain));  // the weights mattered
    QVERIFY(fits_key((out / "a.fits").string(), 1, "ALMRINGW").find("weight_ring_n00016.fits") != std::string::npos);
    // A weight file of another NSIDE: exit code 3 naming the file and the key, no output.
    QCOMPARE(testing::write_fits_table((out / "weight_ring_n00008.fits").string(), {"TEMPERATURE WEIGHTS"},
                                       std::vector<double>(16, 0.0), 'E', 1, 8),
             0);
    fs::path bad = fresh_dir("ringw-bad");
    r = run_cli(QStringList{"sht", "cl", q(map_fits_), "--ring-weights", q(out / "weight_ring_n00008.fits"), "-o",
                            q(bad / "cl.fits")} + common());
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("weight_ring_n00008.fits") && r.err.contains("NSIDE"), qPrintable(r.err));
    QCOMPARE(listing(bad), std::vector<std::string>{});
    // Pixel weights (healpy use_pixel_weights=True): no iterations, equal to the engine's.
    const int nclass = ((3 * kNside + 1) * (kNside + 1)) / 4;
    std::vector<double> pm1(static_cast<std::size_t>(nclass));
    for (int i = 0; i < nclass; ++i) pm1[static_cast<std::size_t>(i)] = 0.02 * std::sin(0.3 * i);
    const fs::path pfile = out / "healpix_full_weights_nside_0016.fits";
    QCOMPARE(testing::write_fits_table(pfile.string(), {"COMPRESSED PIXEL WEIGHTS"}, pm1, 'D', 1, kNside), 0);
    r = run_cli(QStringList{"sht", "map2alm", q(map_fits_), "--pixel-weights", q(pfile), "-o", q(out / "p.fits")} +
                common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<Complex> ap(alm_size(lmax));
    plan.map2alm_pixel_weights(maps[0], ap, read_pixel_weights(pfile.string(), kNside));
    QCOMPARE(read_alm((out / "p.fits").string()), ap);
    QCOMPARE(fits_key((out / "p.fits").string(), 1, "ITER"), std::string("0"));
    r = run_cli(QStringList{"sht", "map2alm", q(map_fits_), "--pixel-weights", q(pfile), "--iter", "2", "-o",
                            q(bad / "p.fits")} + common());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--iter") && r.err.contains("--pixel-weights"), qPrintable(r.err));
    r = run_cli(QStringList{"sht", "map2alm", q(map_fits_), "--pixel-weights", q(pfile), "--ring-weights", q(wfile),
                            "-o", q(bad / "p.fits")} + common());
    QCOMPARE(r.code, 2);
    QCOMPARE(listing(bad), std::vector<std::string>{});
    // Ring weights apply to map inputs only.
    r = run_cli(QStringList{"sht", "cl", q(alm_fits_), "--ring-weights", q(wfile), "-o", q(bad / "cl.fits")} + common());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--ring-weights"), qPrintable(r.err));
  }

  // cl of a synthesised map equals the engine's spectra (FITS, text, HDF5; auto, cross, alm).
  void clEqualsEngine() {
    fs::path out = fresh_dir("cl");
    const auto maps = engine_synth(kNside, kLmax, teb_);
    const int lmax = 3 * kNside - 1;
    auto pt = plan_of(kNside, lmax, 0), pp = plan_of(kNside, lmax, 2);
    const PolSpectra ref = anafast_pol(pt, pp, maps[0], cat(maps[1], maps[2]), 3);
    // --pol, FITS in healpy write_cl's layout.
    CliRun r = run_cli(QStringList{"sht", "cl", q(map_fits_), "--pol", "-o", q(out / "cl.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<std::string> names;
    auto cols = fits_columns((out / "cl.fits").string(), names);
    QCOMPARE(cols.size(), std::size_t(6));
    QCOMPARE(names, (std::vector<std::string>{"TEMPERATURE", "GRADIENT", "CURL", "G-T", "C-T", "C-G"}));
    QCOMPARE(cols[0], ref.tt);
    QCOMPARE(cols[1], ref.ee);
    QCOMPARE(cols[2], ref.bb);
    QCOMPARE(cols[3], ref.te);
    QCOMPARE(cols[4], ref.eb);
    QCOMPARE(cols[5], ref.tb);
    QCOMPARE(fits_key((out / "cl.fits").string(), 1, "SPECTRA"), std::string("TT,EE,BB,TE,EB,TB"));
    QVERIFY(ref.tt[10] > 0.1 && ref.ee[10] > 0.1);

    // Spin 0, text columns "l TT" with round-trip precision.
    r = run_cli(QStringList{"sht", "cl", q(map_fits_), "-o", q(out / "cl.txt")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::ifstream in(out / "cl.txt");
    std::string line;
    std::vector<double> tt;
    int expect_l = 0;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      int l = -1;
      double v = 0;
      ls >> l >> v;
      QCOMPARE(l, expect_l++);
      tt.push_back(v);
    }
    QCOMPARE(tt, ref.tt);

    // --spin 2 on the (Q, U) columns, HDF5: EE, BB, EB.
    r = run_cli(QStringList{"sht", "cl", q(map_fits_), "--spin", "2", "-o", q(out / "cl.h5")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    io::Hdf5Reader h((out / "cl.h5").string());
    QCOMPARE(h.shape("/cl"), (io::Shape{3, std::uint64_t(lmax + 1)}));
    QCOMPARE(h.read_attr_string("/cl", "spectra"), std::string("EE,BB,EB"));
    const auto flat = h.read_double("/cl");
    QCOMPARE(part(flat, 0, lmax + 1), ref.ee);
    QCOMPARE(part(flat, 1, lmax + 1), ref.bb);
    QCOMPARE(part(flat, 2, lmax + 1), ref.eb);

    // Cross spectrum of two maps, and the spectrum of an alm file.
    const auto other = engine_synth(kNside, kLmax, {random_alm(kLmax, false, 99)});
    write_healpix_map((out / "other.fits").string(), make_map(kNside, other));
    r = run_cli(QStringList{"sht", "cl", q(map_fits_), "--cross", q(out / "other.fits"), "--iter", "1", "-o",
                            q(out / "x.txt")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<Complex> a1(alm_size(lmax)), a2(alm_size(lmax));
    pt.map2alm(maps[0], a1, 1);
    pt.map2alm(other[0], a2, 1);
    const auto xref = alm2cl(a1, a2, lmax);
    std::ifstream xin(out / "x.txt");
    std::vector<double> xs;
    while (std::getline(xin, line))
      if (!line.empty() && line[0] != '#') xs.push_back(std::stod(line.substr(line.find(' ') + 1)));
    QCOMPARE(xs, xref);
    r = run_cli(QStringList{"sht", "cl", q(alm_fits_), "--pol", "-o", q(out / "alm.txt")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const PolSpectra aref = alm2cl_pol(teb_[0], teb_[1], teb_[2], kLmax);
    std::ifstream ain(out / "alm.txt");
    int rows = 0;
    while (std::getline(ain, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      int l = 0;
      double v[6];
      ls >> l >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5];
      QCOMPARE(v[0], aref.tt[l]);
      QCOMPARE(v[1], aref.ee[l]);
      QCOMPARE(v[4], aref.eb[l]);
      QCOMPARE(v[5], aref.tb[l]);
      ++rows;
    }
    QCOMPARE(rows, kLmax + 1);
  }

  // smooth with FWHM 0 is the identity on band-limited maps; with a beam it equals the engine.
  void smoothIdentity() {
    fs::path out = fresh_dir("smooth");
    const int lbl = 16;  // band limit of the input
    std::vector<std::vector<Complex>> a = {random_alm(lbl, false, 31), random_alm(lbl, true, 32),
                                           random_alm(lbl, true, 33)};
    const auto maps = engine_synth(kNside, lbl, a);
    write_healpix_map((out / "bl.fits").string(), make_map(kNside, maps));
    CliRun r = run_cli(QStringList{"sht", "smooth", q(out / "bl.fits"), "--pol", "--fwhm-arcmin", "0", "--lmax", "16",
                                   "--iter", "12", "-o", q(out / "s0.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    HealpixMap s0 = read_healpix_map((out / "s0.fits").string());
    QCOMPARE(s0.columns.size(), std::size_t(3));
    double worst = 0.0;
    for (int c = 0; c < 3; ++c) {
      double d = 0.0, m = 0.0;
      for (std::size_t i = 0; i < maps[c].size(); ++i) {
        d = std::max(d, std::abs(s0.columns[c][i] - maps[c][i]));
        m = std::max(m, std::abs(maps[c][i]));
      }
      worst = std::max(worst, d / m);
    }
    qInfo("smooth FWHM 0 (nside 16, band limit 16, iter 12): max relative change %.3e", worst);
    QVERIFY(worst < 1e-12);

    // A 300 arcmin beam on T equals the engine's smooth_map; the beam really smooths.
    r = run_cli(QStringList{"sht", "smooth", q(out / "bl.fits"), "--fwhm-arcmin", "300", "-o", q(out / "s.h5")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<double> ref(maps[0].size());
    smooth_map(plan_of(kNside, 3 * kNside - 1, 0), maps[0], ref, 300.0 * std::numbers::pi / 10800.0, 3);
    const HealpixMap s = read_map_hdf5((out / "s.h5").string());
    QCOMPARE(s.columns[0], ref);
    QVERIFY(map_dot(ref, ref) < 0.9 * map_dot(maps[0], maps[0]));
  }

  // Cut sky: UNSEEN pixels and a --mask give the engine's cut-sky plan; outputs stay partial.
  void cutSky() {
    fs::path out = fresh_dir("cut");
    auto maps = engine_synth(kNside, kLmax, teb_);
    const std::int64_t npix = npix_of(kNside);
    // UNSEEN on the first 300 pixels (north cap), a text mask dropping every 7th pixel.
    for (std::int64_t i = 0; i < 300; ++i) maps[0][i] = kUnseen;
    write_healpix_map((out / "cut.fits").string(), make_map(kNside, {maps[0]}));
    std::string mask_text = "# observed pixels\n";
    std::vector<std::int64_t> observed;
    for (std::int64_t i = 0; i < npix; ++i)
      if (i % 7 != 3) {
        mask_text += std::to_string(i) + (i % 10 == 0 ? "\n" : " ");
        if (i >= 300) observed.push_back(i);
      }
    write_text(out / "mask.txt", mask_text);
    CliRun r = run_cli(QStringList{"sht", "adjoint", q(out / "cut.fits"), "--mask", q(out / "mask.txt"), "-o",
                                   q(out / "a.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const int lmax = 3 * kNside - 1;
    auto plan = plan_of(kNside, lmax, 0, observed);
    std::vector<double> m(observed.size());
    for (std::size_t i = 0; i < observed.size(); ++i) m[i] = maps[0][observed[i]];
    std::vector<Complex> a(alm_size(lmax));
    plan.adjoint(m, a);
    QCOMPARE(read_alm((out / "a.fits").string(), 1), a);
    QCOMPARE(fits_key((out / "a.fits").string(), 1, "NOBS"), std::to_string(observed.size()));

    // Cut-sky synthesis on the mask's pixels: full sky with UNSEEN, or explicit-index.
    r = run_cli(QStringList{"sht", "synth", q(alm_fits_), "--nside", "16", "--mask", q(out / "cut.fits"), "-o",
                            q(out / "s.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto full = engine_synth(kNside, kLmax, {teb_[0]})[0];
    HealpixMap s = read_healpix_map((out / "s.fits").string());
    QVERIFY(!s.partial());
    for (std::int64_t i = 0; i < npix; ++i) {
      if (i < 300) QCOMPARE(s.columns[0][i], kUnseen);
      else QVERIFY(std::abs(s.columns[0][i] - full[i]) <= 1e-13 * (1.0 + std::abs(full[i])));
    }
    r = run_cli(QStringList{"sht", "synth", q(alm_fits_), "--nside", "16", "--mask", q(out / "cut.fits"),
                            "--partial-out", "-o", q(out / "p.fits")} + common());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    HealpixMap p = read_healpix_map((out / "p.fits").string());
    QVERIFY(p.partial());
    QCOMPARE(p.pixels.size(), std::size_t(npix - 300));
    QCOMPARE(p.pixels.front(), std::int64_t(300));
  }

  // Every bad input: one line naming the file and key, its exit code, no output at all.
  void badInputs_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QStringList>("message");

    write_raw_map((dir_ / "bad_npix.fits").string(), 16, "RING", 3000, 1);
    write_raw_map((dir_ / "no_nside.fits").string(), -1, "RING", 3072, 1);
    write_raw_map((dir_ / "bad_order.fits").string(), 16, "SPIRAL", 3072, 1);
    write_raw_map((dir_ / "t16.fits").string(), 16, "RING", 3072, 1);
    write_raw_map((dir_ / "mask8.fits").string(), 8, "RING", 768, 1);
    {
      HealpixMap inf = make_map(16, {std::vector<double>(3072, 1.0)});
      inf.columns[0][77] = std::numeric_limits<double>::infinity();
      write_map_hdf5((dir_ / "inf.h5").string(), inf);  // (FITS readers turn Inf into null = UNSEEN)
      io::Hdf5Writer w((dir_ / "bad_npix.h5").string());
      w.write("/map", std::vector<double>(3000, 1.0), {1, 3000});
      w.attr("/map", "nside", std::int64_t{16});
      w.attr("/map", "ordering", std::string("RING"));
      w.attr("/map", "names", std::string("TEMPERATURE"));
      w.attr("/map", "coordsys", std::string(""));
      w.commit();
      io::Hdf5Writer w2((dir_ / "no_nside.h5").string());
      w2.write("/map", std::vector<double>(3072, 1.0), {1, 3072});
      w2.attr("/map", "ordering", std::string("RING"));
      w2.commit();
    }
    write_text(dir_ / "badmask.txt", "1 2 3\n4 99999\n");
    const QString out = q(dir_ / "bad-out" / "out.fits");
    const QString map = q(map_fits_), alm = q(alm_fits_);
    auto adj = [&](const QString& in, QStringList extra = {}) {
      return QStringList{"sht", "adjoint", in, "-o", out} + extra;
    };
    QTest::newRow("missing input file") << adj(q(dir_ / "nope.fits")) << 3 << QStringList{"nope.fits", "file does not exist"};
    QTest::newRow("wrong nside") << adj(map, {"--nside", "32"}) << 3 << QStringList{"tqu.fits", "NSIDE", "is 16, but --nside 32"};
    QTest::newRow("npix not 12 nside^2") << adj(q(dir_ / "bad_npix.fits")) << 3 << QStringList{"bad_npix.fits", "NSIDE", "3000", "12 NSIDE^2"};
    QTest::newRow("missing NSIDE") << adj(q(dir_ / "no_nside.fits")) << 3 << QStringList{"no_nside.fits", "NSIDE", "missing keyword"};
    QTest::newRow("unknown ordering") << adj(q(dir_ / "bad_order.fits")) << 3 << QStringList{"bad_order.fits", "ORDERING", "SPIRAL"};
    QTest::newRow("HDF5 npix not 12 nside^2") << adj(q(dir_ / "bad_npix.h5")) << 3 << QStringList{"bad_npix.h5", "/map", "3000"};
    QTest::newRow("HDF5 missing nside") << adj(q(dir_ / "no_nside.h5")) << 3 << QStringList{"no_nside.h5", "nside"};
    QTest::newRow("lmax above 4 nside") << adj(map, {"--lmax", "65"}) << 2 << QStringList{"--lmax", "0..4 NSIDE = 64", "65"};
    QTest::newRow("negative lmax") << adj(map, {"--lmax", "-3"}) << 2 << QStringList{"--lmax", "must be in [0, 32768], got -3"};  // the schema's range message
    QTest::newRow("alm lmax above 4 nside") << QStringList{"sht", "synth", alm, "--nside", "8", "-o", out} << 3
                                            << QStringList{"teb.fits", "INDEX", "l = 40", "4 NSIDE = 32"};
    QTest::newRow("nside out of range") << QStringList{"sht", "synth", alm, "--nside", "0", "-o", out} << 2 << QStringList{"--nside", "must be in [1, 8192], got 0"};  // the schema's range message
    QTest::newRow("--pol on a one-column map") << adj(q(dir_ / "t16.fits"), {"--pol"}) << 3 << QStringList{"t16.fits", "TFIELDS", "1 map column", "--pol"};
    QTest::newRow("alm file given as a map") << adj(alm) << 3 << QStringList{"teb.fits", "NSIDE", "missing keyword"};
    QTest::newRow("map given as alm") << QStringList{"sht", "synth", map, "--nside", "16", "-o", out} << 3 << QStringList{"tqu.fits", "TTYPE1", "INDEX"};
    QTest::newRow("too few alm sets") << QStringList{"sht", "synth", q(alm_h5_), "--nside", "16", "--pol", "-o", out} << 3
                                      << QStringList{"eb.h5", "/alm", "2 alm sets"};
    QTest::newRow("infinite pixel value") << adj(q(dir_ / "inf.h5")) << 3 << QStringList{"inf.h5", "/map row 0", "pixel 77", "not finite"};
    QTest::newRow("mask of another nside") << adj(map, {"--mask", q(dir_ / "mask8.fits")}) << 3 << QStringList{"mask8.fits", "NSIDE", "is 8", "16"};
    QTest::newRow("mask pixel out of range") << adj(map, {"--mask", q(dir_ / "badmask.txt")}) << 3 << QStringList{"badmask.txt", "line 2", "99999"};
    QTest::newRow("missing mask file") << adj(map, {"--mask", q(dir_ / "nomask.txt")}) << 3 << QStringList{"nomask.txt", "does not exist"};
    QTest::newRow("spin 3") << adj(map, {"--spin", "3"}) << 2 << QStringList{"--spin", "0 or 2"};
    QTest::newRow("--pol with --spin 2") << adj(map, {"--pol", "--spin", "2"}) << 2 << QStringList{"--pol", "--spin 2"};
    QTest::newRow("negative fwhm") << QStringList{"sht", "smooth", map, "--fwhm-arcmin", "-5", "-o", out} << 2 << QStringList{"--fwhm-arcmin", ">= 0"};
    QTest::newRow("missing fwhm") << QStringList{"sht", "smooth", map, "-o", out} << 2 << QStringList{"--fwhm-arcmin", "required"};
    QTest::newRow("epsilon 0") << QStringList{"sht", "inverse", map, "--epsilon", "0", "-o", out} << 2 << QStringList{"--epsilon", "> 0"};
    QTest::newRow("unknown backend") << adj(map, {"--backend", "tpu"}) << 2 << QStringList{"--backend", "tpu"};
    QTest::newRow("text format for alm") << adj(map, {"--format", "text"}) << 2 << QStringList{"--format", "spectra"};
    QTest::newRow("nest-out with nside 12") << QStringList{"sht", "synth", alm, "--nside", "12", "--nest-out", "-o", out} << 2
                                            << QStringList{"--nest-out", "power-of-two"};
    QTest::newRow("output directory missing") << QStringList{"sht", "adjoint", map, "-o", q(dir_ / "bad-out" / "none" / "a.fits")} << 5
                                              << QStringList{"a.fits", "does not exist"};
    QTest::newRow("not converged") << QStringList{"sht", "inverse", map, "--max-iter", "2", "--epsilon", "1e-13", "-o", out} << 6
                                   << QStringList{"CGLS", "2 iterations"};
    QTest::newRow("cuda backend without GPU") << adj(map, {"--backend", "cuda"}) << 4 << QStringList{"backend unavailable"};
  }

  void badInputs() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QStringList, message);
    if (QString(QTest::currentDataTag()) == "cuda backend without GPU" && gpu_status().available)
      QSKIP("a GPU is available here: --backend cuda is valid");
    fs::path out = fresh_dir("bad-out");
    CliRun r = run_cli(args);
    QVERIFY(r.finished);
    QVERIFY2(r.code == code, qPrintable(QString("exit %1, stderr: %2").arg(r.code).arg(r.err)));
    for (const QString& m : message) QVERIFY2(r.err.contains(m), qPrintable(m + " not in: " + r.err));
    QVERIFY2(r.err.startsWith("almagest-cli: error: "), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QCOMPARE(listing(out), std::vector<std::string>{});
  }

  // Ctrl-C cancels a running inverse: exit code 130, no output, promptly.
  void interruptCancels() {
    fs::path out = fresh_dir("cancel");
    write_healpix_map((out / "m32.fits").string(), make_map(32, engine_synth(32, kLmax, {teb_[0]})));
    fs::path res = fresh_dir("cancel-out");
    const Interrupted r = interrupt_cli({"sht", "inverse", q(out / "m32.fits"), "--epsilon", "1e-300", "--max-iter",
                                           "100000000", "--threads", "1", "-o", q(res / "a.fits")}, 800);
    const QString why = cancel_failure(r, res);
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }

  // Help lists the operations, options and the exit code of a failed inverse.
  void help() {
    CliRun r = run_cli({"sht", "--help"});
    QCOMPARE(r.code, 0);
    for (const char* s : {"synth", "adjoint", "inverse", "map2alm", "cl", "smooth", "  6 "})
      QVERIFY2(r.out.contains(s), s);
    r = run_cli({"sht", "inverse", "--help"});
    QCOMPARE(r.code, 0);
    for (const char* s : {"--nside", "--lmax", "--pol", "--spin", "--epsilon", "--max-iter", "--mask", "--backend",
                          "--threads", "--output"})
      QVERIFY2(r.out.contains(s), s);
  }
};

QTEST_GUILESS_MAIN(TestCliSht)
#include "test_cli_sht.moc"
