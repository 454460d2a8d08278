// almagest-cli stack against the library: `simulate` writes exactly the engine's synthetic stack
// (WorkUnit FITS and HDF5 cube alike) with its truth table and common curve; `search` recovers
// the injected movers (position and velocity within one grid step) and its candidate table equals
// the engine's in-process result for the same job (Cartesian, speed x angle and list banks, FP32,
// FP16 and INT8 storage, threshold and top-k); `psiphi` writes the engine's planes; `stamps` writes
// the engine's curves, stamps and tracks (with RA/Dec); every bad input (mismatched shapes,
// missing MJD, non-positive variance everywhere, empty bank, PSF not odd square, missing
// file/HDU, ...) is rejected with one line naming the file and field, a non-zero exit code and no
// output at all.
#include <QtTest>
#include <hdf5.h>

#include <bit>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"

namespace fs = std::filesystem;
using namespace almagest;
using namespace almagest::stack;

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {






/// Data rows of an ECSV/CSV text file after its column-name row, split at commas.
std::vector<std::vector<std::string>> csv_rows(const fs::path& p, std::vector<std::string>* names = nullptr) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (!header) {
      header = true;
      if (names) *names = f;
      continue;
    }
    rows.push_back(f);
  }
  return rows;
}

// ---- a minimal FITS writer (big-endian float images), to make WorkUnits with defects -----------

std::string card(const std::string& key, const std::string& value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-8s= %20s", key.c_str(), value.c_str());
  std::string c = buf;
  c.resize(80, ' ');
  return c;
}
std::string str_card(const std::string& key, const std::string& value) {
  std::string v = "'" + value + std::string(value.size() < 8 ? 8 - value.size() : 0, ' ') + "'";
  std::string c = key + std::string(8 - key.size(), ' ') + "= " + v;
  c.resize(80, ' ');
  return c;
}
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12f", v);
  return buf;
}

struct FitsHdu {
  std::string extname;
  int w = 0, h = 0;
  std::vector<float> data;
  std::vector<std::string> cards;
};

void write_block_padded(std::ofstream& out, const std::string& bytes, char pad) {
  out << bytes;
  const std::size_t rest = bytes.size() % 2880;
  if (rest) out << std::string(2880 - rest, pad);
}

void write_fits(const fs::path& path, const std::vector<std::string>& primary_cards, const std::vector<FitsHdu>& hdus) {
  std::ofstream out(path, std::ios::binary);
  std::string h = card("SIMPLE", "T") + card("BITPIX", "8") + card("NAXIS", "0") + card("EXTEND", "T");
  for (const auto& c : primary_cards) h += c;
  h += std::string("END").append(77, ' ');
  write_block_padded(out, h, ' ');
  for (const auto& u : hdus) {
    std::string hh = str_card("XTENSION", "IMAGE") + card("BITPIX", "-32") + card("NAXIS", "2") +
                     card("NAXIS1", std::to_string(u.w)) + card("NAXIS2", std::to_string(u.h)) + card("PCOUNT", "0") +
                     card("GCOUNT", "1") + str_card("EXTNAME", u.extname);
    for (const auto& c : u.cards) hh += c;
    hh += std::string("END").append(77, ' ');
    write_block_padded(out, hh, ' ');
    std::string bytes(u.data.size() * 4, '\0');
    for (std::size_t i = 0; i < u.data.size(); ++i) {
      const std::uint32_t b = __builtin_bswap32(std::bit_cast<std::uint32_t>(u.data[i]));
      std::memcpy(&bytes[i * 4], &b, 4);
    }
    write_block_padded(out, bytes, '\0');
  }
}

struct Defects {
  int drop_var = -1, no_mjd = -1, narrow_sci = -1, narrow_var = -1, zero_var = -1, even_psf = -1, nonsquare_psf = -1;
};

/// A KBMOD WorkUnit of `s` (0-based SCI_e/VAR_e/MSK_e/PSF_e, MJD in the SCI header) with defects.
void write_workunit_fits(const fs::path& path, const ExposureStack& s, const Defects& d) {
  const int n = int(s.size()), W = s.width, H = s.height;
  const std::size_t np = s.pixels();
  std::vector<FitsHdu> hdus;
  for (int e = 0; e < n; ++e) {
    const std::string t = "_" + std::to_string(e);
    auto plane = [&](const std::vector<float>& v, int w) {
      std::vector<float> out;
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < w; ++x) out.push_back(v[e * np + std::size_t(y) * W + x]);
      return out;
    };
    const int ws = e == d.narrow_sci ? W - 3 : W;
    FitsHdu sci{"SCI" + t, ws, H, plane(s.sci, ws), {}};
    if (e != d.no_mjd) sci.cards.push_back(card("MJD", num(s.mjd[e])));
    hdus.push_back(sci);
    if (e != d.drop_var) {
      const int wv = e == d.narrow_var || e == d.narrow_sci ? ws - (e == d.narrow_var ? 2 : 0) : W;
      FitsHdu var{"VAR" + t, wv, H, plane(s.var, wv), {}};
      if (e == d.zero_var)
        for (std::size_t i = 0; i < var.data.size(); ++i) var.data[i] = (i % 2) ? 0.0f : -1.0f;
      hdus.push_back(var);
    }
    std::vector<float> m(np);
    for (std::size_t i = 0; i < np; ++i) m[i] = s.mask[e * np + i];
    std::vector<float> mm;
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < ws; ++x) mm.push_back(m[std::size_t(y) * W + x]);
    hdus.push_back({"MSK" + t, ws, H, mm, {}});
    FitsHdu psf{"PSF" + t, s.psf[e].size, s.psf[e].size, s.psf[e].kernel, {}};
    if (e == d.even_psf) psf = {"PSF" + t, 4, 4, std::vector<float>(16, 1.0f / 16), {}};
    if (e == d.nonsquare_psf) psf = {"PSF" + t, 5, 3, std::vector<float>(15, 1.0f / 15), {}};
    hdus.push_back(psf);
  }
  write_fits(path, {card("NUMIMG", std::to_string(n))}, hdus);
}

/// HDF5 cube of `s`, then edited with the HDF5 C API: "no-mjd" deletes /mjd, "nan-mjd" sets
/// exposure 2's MJD to NaN, "narrow-var" replaces /var by a [n][H][W-1] dataset.
void write_cube_with_defect(const fs::path& path, const ExposureStack& s, const std::string& defect) {
  write_stack_hdf5(path.string(), s);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (defect == "no-mjd") {
    H5Ldelete(f, "mjd", H5P_DEFAULT);
  } else if (defect == "nan-mjd") {
    std::vector<double> mjd = s.mjd;
    mjd[2] = std::nan("");
    const hid_t ds = H5Dopen2(f, "mjd", H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, mjd.data());
    H5Dclose(ds);
  } else if (defect == "narrow-var") {
    H5Ldelete(f, "var", H5P_DEFAULT);
    hsize_t dims[3] = {s.size(), hsize_t(s.height), hsize_t(s.width - 1)};
    std::vector<float> v(dims[0] * dims[1] * dims[2], 100.0f);
    const hid_t sp = H5Screate_simple(3, dims, nullptr);
    const hid_t ds = H5Dcreate2(f, "var", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(ds);
    H5Sclose(sp);
  }
  H5Fclose(f);
}

// The main synthetic stack of this test (also the in-process reference).
constexpr int kExp = 30, kW = 64, kH = 64;
constexpr std::uint64_t kSeed = 11;
constexpr double kStep = 0.5;  // velocity grid step of the Cartesian bank below (-6..6, 25 values)

struct Truth {
  double x0, y0, vx, vy, snr, flux;
};

std::vector<Truth> read_truth(const fs::path& p) {
  std::vector<Truth> t;
  for (const auto& r : csv_rows(p))
    t.push_back({std::stod(r.at(1)), std::stod(r.at(2)), std::stod(r.at(3)), std::stod(r.at(4)), std::stod(r.at(5)), std::stod(r.at(6))});
  return t;
}

}  // namespace

class TestCliStack : public QObject {
  Q_OBJECT

  std::optional<QTemporaryDir> tmp_;
  fs::path dir_, fits_, cube_, truth_, curve_;

  fs::path fresh_dir(const std::string& name) {
    fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }
  QStringList cartesian() const { return {"--vx-range=-6,6", "--vy-range=-6,6", "--grid", "25"}; }

  /// The common curve simulate wrote (rows "mjd dx dy") into cfg.curve_dx, curve_dy.
  void read_curve(SearchConfig& cfg) const {
    std::ifstream in(curve_);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      double m, dx, dy;
      std::istringstream(line) >> m >> dx >> dy;
      cfg.curve_dx.push_back(dx);
      cfg.curve_dy.push_back(dy);
    }
  }

  /// The engine's search of `stack_path` for `cfg` (with the common curve), in this process.
  SearchResult engine_search(const std::string& stack_path, SearchConfig cfg, std::vector<CandidateDetail>* details = nullptr) {
    const ExposureStack s = read_stack(stack_path);
    read_curve(cfg);
    cfg.threads = 2;
    const PsiPhi p = compute_psiphi(s, JobContext{});
    // The job's post-search filters (stack/filters.hpp) with its duplicate settings.
    FilterConfig fc;
    fc.min_obs = cfg.min_obs;
    fc.dedup = cfg.cluster.enabled;
    fc.dedup_radius_px = cfg.cluster.radius_px;
    cfg.cluster.enabled = false;
    const SearchPlan plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    SearchResult r = plan.execute(encode(p, cfg.encoding), JobContext{});
    filter_candidates(r, plan, cfg.encoding == Encoding::Fp32 ? p : decode(encode(p, cfg.encoding)), &s, fc, JobContext{});
    if (details) *details = describe_candidates(r, plan, s, p, 0, JobContext{});
    return r;
  }

  void compare_hdf5_table(const fs::path& file, const SearchResult& lib) {
    io::Hdf5Reader h(file.string());
    const auto x = h.read_int32("/candidates/x"), y = h.read_int32("/candidates/y"), v = h.read_int32("/candidates/v");
    const auto obs = h.read_int32("/candidates/obs"), mem = h.read_int32("/candidates/members");
    const auto vx = h.read_double("/candidates/vx"), vy = h.read_double("/candidates/vy"), z = h.read_double("/candidates/z");
    const auto flux = h.read_double("/candidates/flux"), a = h.read_double("/candidates/a"), b = h.read_double("/candidates/b");
    QCOMPARE(x.size(), lib.candidates.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const Candidate& c = lib.candidates[i];
      QCOMPARE(x[i], c.x);
      QCOMPARE(y[i], c.y);
      QCOMPARE(v[i], c.v);
      QCOMPARE(obs[i], c.obs);
      QCOMPARE(mem[i], c.members);
      QCOMPARE(vx[i], c.vx);
      QCOMPARE(vy[i], c.vy);
      QCOMPARE(z[i], c.z);
      QCOMPARE(flux[i], c.flux);
      QCOMPARE(a[i], double(c.a));
      QCOMPARE(b[i], double(c.b));
    }
    QCOMPARE(h.read_attr_double("/", "threshold_z"), lib.threshold_z);
    QCOMPARE(h.read_attr_double("/", "digest_max_z"), lib.digest.max_z);
    QCOMPARE(std::uint64_t(h.read_attr_double("/", "digest_count_above")), lib.digest.count_above);
    QVERIFY(std::fabs(h.read_attr_double("/", "digest_sum_a") - lib.digest.sum_a) <= 1e-12 * std::fabs(lib.digest.sum_a) + 1e-9);
    QVERIFY(std::fabs(h.read_attr_double("/", "digest_sum_b") - lib.digest.sum_b) <= 1e-12 * lib.digest.sum_b);
    QVERIFY(h.read_attr_string("/", "provenance").find("\"stack search\"") != std::string::npos);
  }

  /// `sky`: the engine's details (RA/Dec at the exposure nearest the reference time), or empty.
  void compare_ecsv_table(const fs::path& file, const SearchResult& lib, const std::vector<CandidateDetail>& det) {
    const bool sky = !det.empty();
    std::vector<std::string> names;
    const auto rows = csv_rows(file, &names);
    QCOMPARE(names.size(), std::size_t(sky ? 18 : 16));  // + vx_spread, vy_spread, clipped, vx_fit, vy_fit
    QCOMPARE(names[0], std::string("x"));
    QCOMPARE(rows.size(), lib.candidates.size());
    auto close = [](const std::string& s, double v) { return std::fabs(std::stod(s) - v) <= 1e-8 * std::max(1.0, std::fabs(v)); };
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Candidate& c = lib.candidates[i];
      const auto& r = rows[i];
      QCOMPARE(std::stoi(r[0]), c.x);
      QCOMPARE(std::stoi(r[1]), c.y);
      QCOMPARE(std::stoi(r[2]), c.v);
      QVERIFY(close(r[3], c.vx) && close(r[4], c.vy) && close(r[5], c.z) && close(r[6], c.flux));
      QVERIFY(close(r[7], c.a) && close(r[8], c.b));
      QCOMPARE(std::stoi(r[9]), c.obs);
      QCOMPARE(std::stoi(r[10]), c.members);
      if (sky) {
        QVERIFY(close(r[11], det[i].ra[0]) && close(r[12], det[i].dec[0]));  // t = 0 at exposure 0
        QVERIFY(std::fabs(det[i].ra[0] - 150.0) < 0.01 && std::fabs(det[i].dec[0] - 2.0) < 0.01);
      }
    }
  }

private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(ALMAGEST_CLI), ALMAGEST_CLI);
    tmp_.emplace(temp_dir_template("cli-stack"));
    QVERIFY(tmp_->isValid());
    dir_ = tmp_->path().toStdString();
    // One random mover (SNR 12, 3 px/day) and one explicit mover, a TAN WCS; WorkUnit and cube.
    const QStringList sim{"stack", "simulate", "--exposures", QString::number(kExp), "--width", QString::number(kW),
                          "--height", QString::number(kH), "--seed", QString::number(kSeed), "--snr", "12", "--speed", "3",
                          "--movers", "1", "--mover", "18.4,22.7,-1.6,2.2,11", "--wcs", "150,2,0.2", "--quiet"};
    fits_ = dir_ / "s.fits";
    CliRun r = run_cli(sim + QStringList{"-o", q(fits_)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
    fs::create_directories(dir_ / "cube");
    cube_ = dir_ / "cube" / "s.h5";
    r = run_cli(sim + QStringList{"-o", q(cube_)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    truth_ = dir_ / "s_truth.ecsv";
    curve_ = dir_ / "s_curve.txt";
    QCOMPARE(listing(dir_), (std::vector<std::string>{"cube", "s.fits", "s_curve.txt", "s_truth.ecsv"}));
    QCOMPARE(listing(dir_ / "cube"), (std::vector<std::string>{"s.h5", "s_curve.txt", "s_truth.ecsv"}));
  }

  // simulate writes the engine's synthetic stack (the reference recipe scaled by the options) in
  // both formats, and its truth table and curve are the generator's.
  void simulateWritesEngineStack() {
    const auto truth = read_truth(truth_);
    QCOMPARE(truth.size(), std::size_t(2));
    // Explicit movers first, then the random ones.
    QCOMPARE(truth[0].x0, 18.4);
    QCOMPARE(truth[0].snr, 11.0);
    QCOMPARE(truth[1].snr, 12.0);
    QVERIFY(std::fabs(std::hypot(truth[1].vx, truth[1].vy) - 3.0) < 1e-12);
    SyntheticConfig c = reference_workload();
    c.n_exp = kExp;
    c.width = kW;
    c.height = kH;
    c.seed = kSeed;
    c.movers.clear();  // the reference mover is replaced by the options' movers
    for (const auto& t : truth) c.movers.push_back(Mover{t.x0, t.y0, t.vx, t.vy, t.snr, 0.0});
    const SyntheticStack syn = make_synthetic(c);
    for (std::size_t i = 0; i < truth.size(); ++i) QCOMPARE(truth[i].flux, syn.movers[i].flux);
    for (const fs::path& file : {fits_, cube_}) {
      const ExposureStack s = read_stack(file.string());
      QCOMPARE(s.size(), std::size_t(kExp));
      QCOMPARE(s.width, kW);
      QCOMPARE(s.mjd, syn.stack.mjd);
      QVERIFY(s.sci == syn.stack.sci);
      QVERIFY(s.var == syn.stack.var);
      QVERIFY(s.mask == syn.stack.mask);
      // The cube zero-pads every kernel to the largest size; the WorkUnit keeps each size.
      for (int e = 0; e < kExp; ++e) {
        const Psf& a = s.psf[e];
        const Psf& b = syn.stack.psf[e];
        QVERIFY(file == fits_ ? a.size == b.size : a.size >= b.size);
        const int o = (a.size - b.size) / 2;
        for (int v = 0; v < a.size; ++v)
          for (int u = 0; u < a.size; ++u) {
            const bool inside = v >= o && v < o + b.size && u >= o && u < o + b.size;
            const float want = inside ? b.kernel[std::size_t(v - o) * b.size + (u - o)] : 0.0f;
            QCOMPARE(a.kernel[std::size_t(v) * a.size + u], want);
          }
      }
      QVERIFY(s.wcs_header.find("RA---TAN") != std::string::npos);
    }
    std::vector<double> dx;
    std::ifstream in(curve_);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') {
        double m, x, y;
        std::istringstream(line) >> m >> x >> y;
        dx.push_back(x);
      }
    QCOMPARE(dx, syn.curve_dx);
  }

  // search recovers both movers: a candidate within one pixel of the true origin and one grid
  // step of the true velocity, with a score near the injected SNR; the best candidate is one.
  void searchRecoversMovers() {
    fs::path out = fresh_dir("recover");
    CliRun r = run_cli(QStringList{"stack", "search", q(fits_)} + cartesian() +
                       QStringList{"--common-curve", q(curve_), "--no-cluster", "--min-obs", "15", "-o", q(out / "c.h5")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("wrote"), qPrintable(r.out));
    io::Hdf5Reader h((out / "c.h5").string());
    const auto x = h.read_int32("/candidates/x"), y = h.read_int32("/candidates/y");
    const auto vx = h.read_double("/candidates/vx"), vy = h.read_double("/candidates/vy"), z = h.read_double("/candidates/z");
    QVERIFY(!x.empty());
    bool best_is_mover = false;
    for (const Truth& t : read_truth(truth_)) {
      int found = -1;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (std::fabs(x[i] - t.x0) <= 1.0 && std::fabs(y[i] - t.y0) <= 1.0 && std::fabs(vx[i] - t.vx) <= kStep + 1e-9 &&
            std::fabs(vy[i] - t.vy) <= kStep + 1e-9 && (found < 0 || z[i] > z[found]))
          found = int(i);
      QVERIFY2(found >= 0, qPrintable(QString("mover (%1, %2) v = (%3, %4) not recovered").arg(t.x0).arg(t.y0).arg(t.vx).arg(t.vy)));
      qInfo("mover SNR %.0f at (%.2f, %.2f) v = (%.2f, %.2f): Z %.2f at (%d, %d) v = (%.2f, %.2f)", t.snr, t.x0, t.y0, t.vx, t.vy,
            z[found], x[found], y[found], vx[found], vy[found]);
      QVERIFY(z[found] > 0.6 * t.snr && z[found] < 1.4 * t.snr);
      best_is_mover = best_is_mover || (std::fabs(x[0] - t.x0) <= 2.0 && std::fabs(y[0] - t.y0) <= 2.0 &&
                                        std::fabs(vx[0] - t.vx) <= 2 * kStep && std::fabs(vy[0] - t.vy) <= 2 * kStep);
    }
    QVERIFY(best_is_mover);
  }

  // The CLI's candidate table equals the engine's in-process result for the same job.
  void searchEqualsEngine_data() {
    QTest::addColumn<int>("job");
    QTest::newRow("cartesian fp32, HDF5") << 0;
    QTest::newRow("cartesian fp32, ECSV with RA/Dec") << 1;
    QTest::newRow("speed x angle int8 top-k, cube input") << 2;
    QTest::newRow("velocity list fp16 fixed threshold") << 3;
  }
  void searchEqualsEngine() {
    QFETCH(int, job);
    fs::path out = fresh_dir("equal");
    SearchConfig cfg;
    QStringList args{"stack", "search", q(fits_), "--common-curve", q(curve_), "--threads", "2", "--quiet"};
    std::string stack = fits_.string();
    fs::path table = out / (job == 1 ? "c.ecsv" : "c.h5");
    if (job <= 1) {
      args << cartesian();
      cfg.bank = TrajectoryBank::cartesian(-6, 6, 25, -6, 6, 25);
    } else if (job == 2) {
      args[2] = q(cube_);
      stack = cube_.string();
      args << "--speed-range" << "0,5" << "--angle-range=-180,150" << "--grid" << "11x12" << "--storage" << "int8"
           << "--top-k" << "2" << "--min-obs" << "20" << "--cluster-radius" << "3";
      cfg.bank = TrajectoryBank::speed_angle(0, 5, 11, -15.0 * (M_PI / 180.0), 165.0 * (M_PI / 180.0), 12);
      cfg.encoding = Encoding::Int8;
      cfg.mode = ResultMode::TopK;
      cfg.top_k = 2;
      cfg.min_obs = 20;
      cfg.cluster.radius_px = 3;
    } else {
      std::string list = "# vx vy\n";
      std::vector<double> lx, ly;
      for (int i = 0; i < 40; ++i) {
        lx.push_back(-5 + 0.25 * i);
        ly.push_back(4 - 0.2 * i);
        list += std::to_string(lx.back()) + " " + std::to_string(ly.back()) + "\n";
      }
      write_text(out / "v.txt", list);
      for (auto& v : lx) v = std::stod(std::to_string(v));
      for (auto& v : ly) v = std::stod(std::to_string(v));
      args << "--velocities" << q(out / "v.txt") << "--storage" << "fp16" << "--threshold-sigma" << "4.5" << "--no-cluster";
      cfg.bank = TrajectoryBank::list(lx, ly);
      cfg.encoding = Encoding::Fp16;
      cfg.threshold_z = 4.5;
      cfg.cluster.enabled = false;
    }
    CliRun r = run_cli(args + QStringList{"-o", q(table)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(listing(out), job == 3 ? (std::vector<std::string>{"c.h5", "v.txt"})
                                    : (std::vector<std::string>{table.filename().string()}));
    std::vector<CandidateDetail> det;
    const SearchResult lib = engine_search(stack, cfg, job == 1 ? &det : nullptr);
    QVERIFY(!lib.candidates.empty());
    qInfo("%zu candidates, threshold %.3f, max Z %.3f", lib.candidates.size(), lib.threshold_z, lib.digest.max_z);
    if (job == 1) compare_ecsv_table(table, lib, det);
    else compare_hdf5_table(table, lib);
  }

  // psiphi writes the engine's planes (decoded from the chosen storage) and the stored codes.
  void psiphiEqualsEngine_data() {
    QTest::addColumn<QString>("storage");
    QTest::newRow("fp32") << "fp32";
    QTest::newRow("fp16") << "fp16";
    QTest::newRow("int8") << "int8";
  }
  void psiphiEqualsEngine() {
    QFETCH(QString, storage);
    fs::path out = fresh_dir("psiphi");
    CliRun r = run_cli({"stack", "psiphi", q(fits_), "--storage", storage, "-o", q(out / "pp.h5"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const Encoding enc = parse_encoding(storage.toStdString());
    const PsiPhi p = compute_psiphi(read_stack(fits_.string()), JobContext{});
    const EncodedPsiPhi e = encode(p, enc);
    const PsiPhi d = decode(e);
    io::Hdf5Reader h((out / "pp.h5").string());
    QCOMPARE(h.shape("/psi"), (io::Shape{kExp, kH, kW}));
    const auto psi = h.read_double("/psi"), phi = h.read_double("/phi");
    QVERIFY(std::equal(psi.begin(), psi.end(), d.psi.begin(), [](double a, float b) { return a == double(b); }));
    QVERIFY(std::equal(phi.begin(), phi.end(), d.phi.begin(), [](double a, float b) { return a == double(b); }));
    QCOMPARE(h.read_double("/mjd"), p.mjd);
    QCOMPARE(h.read_attr_string("/", "encoding"), storage.toStdString());
    QCOMPARE(h.exists("/codes/psi"), enc != Encoding::Fp32);
    if (enc == Encoding::Int8) {
      const auto codes = h.read_int32("/codes/psi");
      QVERIFY(std::equal(codes.begin(), codes.end(), e.psi8.begin(), [](std::int32_t a, std::int8_t b) { return a == b; }));
    }
    std::size_t nonzero = 0;
    for (double v : psi) nonzero += v != 0;
    QVERIFY(nonzero > psi.size() / 2);
  }

  // stamps writes curves, stamps and tracks equal to the engine's describe_candidates, from the
  // HDF5 and from the ECSV table alike (the bank is rebuilt exactly from the provenance).
  void stampsWritesEngineDetails() {
    fs::path out = fresh_dir("stamps");
    const QStringList search = QStringList{"stack", "search", q(fits_)} + cartesian() +
                               QStringList{"--common-curve", q(curve_), "--min-obs", "15", "--threads", "2", "--quiet"};
    for (const char* name : {"c.h5", "c.ecsv"}) {
      CliRun r = run_cli(search + QStringList{"-o", q(out / name)});
      QVERIFY2(r.code == 0, qPrintable(r.err));
    }
    CliRun r = run_cli({"stack", "stamps", q(out / "c.h5"), "--stamp-radius", "5", "-o", q(out / "st.h5"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = run_cli({"stack", "stamps", q(out / "c.ecsv"), "--stamp-radius", "5", "-o", q(out / "st_ecsv.h5")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("with RA/Dec"), qPrintable(r.out));

    // The engine, in process.
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(-6, 6, 25, -6, 6, 25);
    cfg.min_obs = 15;
    const ExposureStack s = read_stack(fits_.string());
    const SearchResult lib = engine_search(fits_.string(), cfg);
    SearchConfig cfg2 = cfg;
    read_curve(cfg2);
    const PsiPhi p = compute_psiphi(s, JobContext{});
    const SearchPlan plan = make_plan(cfg2, p.mjd, p.width, p.height, JobContext{});
    const auto det = describe_candidates(lib, plan, s, p, 5, JobContext{});
    const std::size_t nc = det.size(), side = 11;
    QVERIFY(nc > 0);

    for (const char* name : {"st.h5", "st_ecsv.h5"}) {
      io::Hdf5Reader h((out / name).string());
      QCOMPARE(h.shape("/curves/psi"), (io::Shape{nc, kExp}));
      QCOMPARE(h.shape("/tracks/ra"), (io::Shape{nc, kExp}));
      for (const char* k : {"sum", "mean", "median", "weighted"}) QCOMPARE(h.shape(std::string("/stamps/") + k), (io::Shape{nc, side, side}));
      const auto psi = h.read_double("/curves/psi"), phi = h.read_double("/curves/phi");
      const auto valid = h.read_uint8("/curves/valid");
      const auto tx = h.read_int32("/tracks/x"), ty = h.read_int32("/tracks/y");
      const auto ra = h.read_double("/tracks/ra"), dec = h.read_double("/tracks/dec");
      const auto sum = h.read_double("/stamps/sum"), med = h.read_double("/stamps/median"), wt = h.read_double("/stamps/weighted");
      const auto mean = h.read_double("/stamps/mean");
      QCOMPARE(h.read_double("/curves/t"), det[0].t);
      QCOMPARE(h.read_int32("/candidates/v").size(), nc);
      for (std::size_t c = 0; c < nc; ++c) {
        const auto& d = det[c];
        QCOMPARE(h.read_int32("/candidates/v")[c], lib.candidates[c].v);
        double a = 0;
        for (int e = 0; e < kExp; ++e) {
          const std::size_t i = c * kExp + e;
          QCOMPARE(psi[i], double(d.psi[e]));
          QCOMPARE(phi[i], double(d.phi[e]));
          QCOMPARE(valid[i], d.valid[e]);
          QCOMPARE(tx[i], d.px[e]);
          QCOMPARE(ty[i], d.py[e]);
          QCOMPARE(ra[i], d.ra[e]);
          QCOMPARE(dec[i], d.dec[e]);
          a += psi[i];
        }
        // The curve sums to the candidate's A (float sums in exposure order vs double here).
        QVERIFY(std::fabs(a - lib.candidates[c].a) <= 1e-4 * std::fabs(lib.candidates[c].a) + 1e-6);
        for (std::size_t k = 0; k < side * side; ++k) {
          QCOMPARE(sum[c * side * side + k], double(d.stamp_sum[k]));
          QCOMPARE(mean[c * side * side + k], double(d.stamp_mean[k]));
          QCOMPARE(med[c * side * side + k], double(d.stamp_median[k]));
          QCOMPARE(wt[c * side * side + k], double(d.stamp_weighted[k]));
        }
      }
      // The best candidate is a mover: its coadd peaks at the centre.
      const std::size_t centre = (side / 2) * side + side / 2;
      double border = 0;
      for (std::size_t k = 0; k < side; ++k) border += wt[k] + wt[(side - 1) * side + k];
      QVERIFY2(wt[centre] > 3 * std::fabs(border / (2 * side)), qPrintable(QString("centre %1, border mean %2").arg(wt[centre]).arg(border / (2 * side))));
    }
  }

  // Ctrl-C during the scan cancels through the cancel token: exit code 130, nothing written.
  void ctrlCCancels() {
    fs::path out = fresh_dir("cancel");
    CliRun r = run_cli({"stack", "simulate", "--exposures", "200", "--width", "128", "--height", "128", "-o", q(out / "big.h5"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QProcess p;
    p.start(QStringLiteral(ALMAGEST_CLI), {"stack", "search", q(out / "big.h5"), "--vx-range=-8,8", "--vy-range=-8,8", "--grid", "65",
                                           "--common-curve", q(out / "big_curve.txt"), "-o", q(out / "c.h5")});
    QVERIFY(p.waitForStarted(10000));
    QTest::qWait(1500);  // reading and psi/phi take ~0.3 s; the scan (1.4e10 samples) takes many seconds
    QCOMPARE(p.state(), QProcess::Running);
    ::kill(pid_t(p.processId()), SIGINT);
    QElapsedTimer t;
    t.start();
    QVERIFY(p.waitForFinished(20000));
    qInfo("cancel latency %lld ms", static_cast<long long>(t.elapsed()));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 130);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("cancelled; no output was written"));
    QCOMPARE(listing(out), (std::vector<std::string>{"big.h5", "big_curve.txt", "big_truth.ecsv"}));
  }

  // A WorkUnit written by this test's own FITS writer is read and searched (the control for the
  // defective files below).
  void handWrittenWorkUnitIsAccepted() {
    SyntheticConfig c;
    c.n_exp = 6;
    c.width = c.height = 24;
    c.seed = 3;
    const SyntheticStack syn = make_synthetic(c);
    fs::path out = fresh_dir("control");
    write_workunit_fits(out / "wu.fits", syn.stack, {});
    const ExposureStack s = read_stack((out / "wu.fits").string());
    QVERIFY(s.sci == syn.stack.sci && s.var == syn.stack.var && s.mask == syn.stack.mask && s.mjd == syn.stack.mjd);
    CliRun r = run_cli({"stack", "search", q(out / "wu.fits"), "--vx-range=-2,2", "--vy-range=-2,2", "--grid", "3", "-o",
                        q(out / "c.ecsv"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(fs::exists(out / "c.ecsv"));
  }

  // Every bad input: one line naming the file and field, its exit code, and no output at all.
  void badInputs_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");
    SyntheticConfig c;
    c.n_exp = 6;
    c.width = c.height = 24;
    c.seed = 3;
    const ExposureStack s = make_synthetic(c).stack;
    const fs::path bad = dir_ / "bad";
    fs::remove_all(bad);
    fs::create_directories(bad);
    auto wu = [&](const std::string& name, Defects d) {
      write_workunit_fits(bad / name, s, d);
      return q(bad / name);
    };
    const QString drop_var = wu("drop_var.fits", Defects{.drop_var = 1});
    const QString no_mjd = wu("no_mjd.fits", Defects{.no_mjd = 2});
    const QString narrow_sci = wu("narrow_sci.fits", Defects{.narrow_sci = 1});
    const QString narrow_var = wu("narrow_var.fits", Defects{.narrow_var = 4});
    const QString zero_var = wu("zero_var.fits", Defects{.zero_var = 3});
    const QString even_psf = wu("even_psf.fits", Defects{.even_psf = 0});
    const QString rect_psf = wu("rect_psf.fits", Defects{.nonsquare_psf = 1});
    const QString good = wu("good.fits", {});
    for (const char* d : {"no-mjd", "nan-mjd", "narrow-var"}) write_cube_with_defect(bad / (std::string(d) + ".h5"), s, d);
    write_text(bad / "empty_v.txt", "# vx vy\n\n");
    write_text(bad / "short_curve.txt", "0 0\n1 1\n");
    write_text(bad / "novx.ecsv", "x,y,vy\n1,2,0.5\n");
    const QString out = q(dir_ / "b-out" / "c.ecsv");
    auto search = [&](const QString& stack, QStringList extra = {}) {
      return QStringList{"stack", "search", stack, "--vx-range=-2,2", "--vy-range=-2,2", "-o", out} + extra;
    };
    const QString good_table = q(dir_ / "b-table.ecsv");
    // Stack defects, through search.
    QTest::newRow("missing stack file") << search(q(bad / "nope.fits")) << 3 << "nope.fits: stack not found";
    QTest::newRow("missing HDU") << search(drop_var) << 3 << "drop_var.fits: VAR_1: HDU missing";
    QTest::newRow("missing MJD") << search(no_mjd) << 3 << "no_mjd.fits: SCI_2: MJD";
    QTest::newRow("mismatched image shapes") << search(narrow_sci) << 3 << "narrow_sci.fits: SCI_1: image is 21 x 24";
    QTest::newRow("variance shape differs") << search(narrow_var) << 3 << "narrow_var.fits: VAR_4";
    QTest::newRow("non-positive variance everywhere") << search(zero_var) << 3 << "VAR_3: no valid pixel";
    QTest::newRow("PSF not odd (4 x 4)") << search(even_psf) << 3 << "even_psf.fits: PSF_0: PSF must be an odd square kernel";
    QTest::newRow("PSF not square (5 x 3)") << search(rect_psf) << 3 << "rect_psf.fits: PSF_1: PSF must be an odd square kernel";
    QTest::newRow("cube without MJD") << search(q(bad / "no-mjd.h5")) << 3 << "no-mjd.h5: mjd: dataset missing";
    QTest::newRow("cube with a NaN MJD") << search(q(bad / "nan-mjd.h5")) << 3 << "MJD (exposure 2)";
    QTest::newRow("cube variance shape") << search(q(bad / "narrow-var.h5")) << 3 << "narrow-var.h5: var: shape differs";
    // Bank and curve.
    QTest::newRow("empty bank (list)") << (QStringList{"stack", "search", good, "--velocities", q(bad / "empty_v.txt"), "-o", out}) << 3
                                       << "empty_v.txt: velocities: the file lists no velocities";
    QTest::newRow("empty bank (grid 0)") << search(good, {"--grid", "0"}) << 2 << "--grid";
    QTest::newRow("no bank") << (QStringList{"stack", "search", good, "-o", out}) << 2 << "no trajectory bank";
    QTest::newRow("missing velocity file") << (QStringList{"stack", "search", good, "--velocities", q(bad / "nov.txt"), "-o", out}) << 3
                                           << "nov.txt: velocity list file not found";
    QTest::newRow("common curve rows") << search(good, {"--common-curve", q(bad / "short_curve.txt")}) << 3
                                       << "short_curve.txt: rows: 2 offset rows, the stack has 6 exposures";
    QTest::newRow("missing common curve") << search(good, {"--common-curve", q(bad / "nocurve.txt")}) << 3 << "nocurve.txt";
    // Options.
    QTest::newRow("output directory missing") << (QStringList{"stack", "search", good, "--vx-range=-2,2", "--vy-range=-2,2", "-o", q(dir_ / "b-out" / "none" / "c.ecsv")})
                                              << 5 << "does not exist";
    QTest::newRow("bad output extension") << (QStringList{"stack", "search", good, "--vx-range=-2,2", "--vy-range=-2,2", "-o", q(dir_ / "b-out" / "c.txt")})
                                          << 2 << "--output";
    QTest::newRow("fourier on the CPU") << search(good, {"--method", "fourier"}) << 2 << "--method";
    QTest::newRow("unknown storage") << search(good, {"--storage", "fp8"}) << 2 << "--storage";
    QTest::newRow("top-k out of range") << search(good, {"--top-k", "17"}) << 2 << "--top-k";
    QTest::newRow("negative device memory") << search(good, {"--device-memory=-5"}) << 2 << "--device-memory: must be >= 0 MiB, got -5";  // the schema's range message
    QTest::newRow("bad range") << (QStringList{"stack", "search", good, "--vx-range", "3,1", "--vy-range=-2,2", "-o", out}) << 2
                               << "--vx-range: maximum 1 is below minimum 3";
    QTest::newRow("cuda backend without GPU") << search(good, {"--backend", "cuda"}) << 4 << "backend unavailable";
    // psiphi and stamps.
    QTest::newRow("psiphi: missing HDU") << (QStringList{"stack", "psiphi", drop_var, "-o", q(dir_ / "b-out" / "p.h5")}) << 3 << "VAR_1: HDU missing";
    QTest::newRow("psiphi: non-positive variance") << (QStringList{"stack", "psiphi", zero_var, "-o", q(dir_ / "b-out" / "p.h5")}) << 3 << "VAR_3";
    QTest::newRow("psiphi: PSF not odd square") << (QStringList{"stack", "psiphi", even_psf, "-o", q(dir_ / "b-out" / "p.h5")}) << 3 << "PSF_0";
    QTest::newRow("stamps: missing table") << (QStringList{"stack", "stamps", q(bad / "nocands.ecsv"), "--stack", good, "-o", q(dir_ / "b-out" / "st.h5")})
                                           << 3 << "nocands.ecsv: candidate table not found";
    QTest::newRow("stamps: table without vx") << (QStringList{"stack", "stamps", q(bad / "novx.ecsv"), "--stack", good, "-o", q(dir_ / "b-out" / "st.h5")})
                                              << 3 << "novx.ecsv: column vx: missing";
    QTest::newRow("stamps: mismatched stack shapes") << (QStringList{"stack", "stamps", good_table, "--stack", narrow_sci, "-o", q(dir_ / "b-out" / "st.h5")})
                                                     << 3 << "SCI_1";
    QTest::newRow("stamps: missing MJD") << (QStringList{"stack", "stamps", good_table, "--stack", no_mjd, "-o", q(dir_ / "b-out" / "st.h5")}) << 3 << "SCI_2: MJD";
    // simulate.
    QTest::newRow("simulate: mover leaves the image") << (QStringList{"stack", "simulate", "--exposures", "5", "--width", "16", "--height", "16", "--speed", "40", "-o", q(dir_ / "b-out" / "s.fits")})
                                                      << 2 << "--speed";
    QTest::newRow("simulate: unknown extension") << (QStringList{"stack", "simulate", "--exposures", "5", "--width", "16", "--height", "16", "-o", q(dir_ / "b-out" / "s.txt")})
                                                 << 2 << "--output";
    QTest::newRow("simulate: bad mover") << (QStringList{"stack", "simulate", "--exposures", "5", "--mover", "1,2,3", "-o", q(dir_ / "b-out" / "s.fits")})
                                         << 2 << "--mover";
    // The stamps rows need a valid table of the good stack.
    CliRun r = run_cli({"stack", "search", good, "--vx-range=-2,2", "--vy-range=-2,2", "--grid", "3", "--threshold-sigma", "3",
                        "--top-k", "1", "-o", good_table, "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }

  void badInputs() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, message);
    if (QString(QTest::currentDataTag()) == "cuda backend without GPU" && gpu_status().available)
      QSKIP("a GPU is available here: --backend cuda is valid");
    fs::path out = fresh_dir("b-out");
    CliRun r = run_cli(args);
    QVERIFY(r.finished);
    QVERIFY2(r.code == code, qPrintable(QString("exit %1, stderr: %2").arg(r.code).arg(r.err)));
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QVERIFY2(r.err.startsWith("almagest-cli: error: "), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(r.out.isEmpty());
    QCOMPARE(listing(out), std::vector<std::string>{});  // no output, no temporary left behind
  }
};

QTEST_GUILESS_MAIN(TestCliStack)
#include "test_cli_stack.moc"
