// Shift-and-stack inputs and outputs: WorkUnit FITS, per-exposure MEF folder and HDF5 cube round
// trips (bit-exact planes, MJDs, PSFs, WCS), clear errors for bad inputs, candidate details (curves,
// stamps, RA/Dec through wcslib) and ECSV/HDF5 result tables.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "almagest/stack/wcs.hpp"

using namespace almagest;
using namespace almagest::stack;

namespace {
std::string card(const std::string& k, const std::string& v) {
  std::string c = k;
  c.resize(8, ' ');
  c += "= " + v;
  c.resize(80, ' ');
  return c;
}
std::string tan_header() {
  return card("WCSAXES", "2") + card("CTYPE1", "'RA---TAN'") + card("CTYPE2", "'DEC--TAN'") + card("CRPIX1", "11.0") +
         card("CRPIX2", "9.0") + card("CRVAL1", "150.0") + card("CRVAL2", "2.0") + card("CD1_1", "-0.0001") +
         card("CD1_2", "0.0") + card("CD2_1", "0.0") + card("CD2_2", "0.0001");
}
SyntheticStack small() {
  SyntheticConfig c;
  c.n_exp = 6;
  c.width = 24;
  c.height = 18;
  c.seed = 3;
  c.movers = {Mover{10, 8, 1.0, 0.5, 20.0, 0}};
  SyntheticStack s = make_synthetic(c);
  s.stack.wcs_header = tan_header();
  return s;
}
void same(const ExposureStack& a, const ExposureStack& b) {
  QCOMPARE(a.width, b.width);
  QCOMPARE(a.height, b.height);
  QCOMPARE(a.mjd, b.mjd);
  QCOMPARE(a.sci.size(), b.sci.size());
  for (std::size_t i = 0; i < a.sci.size(); ++i) {
    QCOMPARE(a.sci[i], b.sci[i]);
    QCOMPARE(a.var[i], b.var[i]);
    QCOMPARE(a.mask[i], b.mask[i]);
  }
  for (std::size_t e = 0; e < a.size(); ++e) {
    const Psf& p = a.psf[e];
    const Psf& q = b.psf[e];
    QVERIFY(q.size >= p.size);
    double sp = 0, sq = 0;
    for (float k : p.kernel) sp += k;
    for (float k : q.kernel) sq += k;
    QCOMPARE(sp, sq);
  }
}
}  // namespace

class TestStackIo : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path(const char* n) { return (std::filesystem::path(dir_.path().toStdString()) / n).string(); }

private slots:
  void round_trips() {
    const SyntheticStack s = small();
    write_workunit(path("wu.fits"), s.stack);
    same(s.stack, read_stack(path("wu.fits")));
    QVERIFY(read_workunit(path("wu.fits")).wcs_header.find("RA---TAN") != std::string::npos);
    write_stack_hdf5(path("cube.h5"), s.stack);
    const ExposureStack h = read_stack(path("cube.h5"));
    same(s.stack, h);
    QCOMPARE(h.wcs_header, s.stack.wcs_header);
    std::filesystem::create_directory(path("mef"));
    write_exposure_files(path("mef"), s.stack);
    same(s.stack, read_stack(path("mef")));
    const ExposureStack g = read_stack(path("cube.h5"), StackReadOptions{1.3, 0});
    QCOMPARE(g.psf[0].size, Psf::gaussian(1.3).size);
  }

  void bad_inputs_name_file_and_field() {
    SyntheticStack s = small();
    ExposureStack bad = s.stack;
    bad.mjd[2] = std::nan("");
    try {
      bad.validate();
      QFAIL("missing MJD accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find("MJD") != std::string::npos);
    }
    bad = s.stack;
    bad.psf[1].size = 4;
    bad.psf[1].kernel.assign(16, 1.0f);
    QVERIFY_THROWS_EXCEPTION(IoError, bad.validate());
    bad = s.stack;
    for (std::size_t i = 0; i < bad.pixels(); ++i) bad.var[bad.pixels() * 3 + i] = -1.0f;
    try {
      bad.validate();
      QFAIL("non-positive variance accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find("VAR_3") != std::string::npos);
    }
    bad = s.stack;
    bad.sci.pop_back();
    QVERIFY_THROWS_EXCEPTION(IoError, bad.validate());
    // mismatched shapes between exposure files
    std::filesystem::create_directory(path("mix"));
    write_exposure_files(path("mix"), s.stack);
    ExposureStack other = make_synthetic([] { SyntheticConfig c; c.n_exp = 1; c.width = 20; c.height = 18; return c; }()).stack;
    std::filesystem::create_directory(path("mix2"));
    write_exposure_files(path("mix2"), other);
    std::filesystem::copy_file(path("mix2") + "/exposure_0000.fits", path("mix") + "/exposure_9999.fits");
    try {
      read_stack(path("mix"));
      QFAIL("mismatched shapes accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find("exposure_9999.fits") != std::string::npos);
    }
    QVERIFY_THROWS_EXCEPTION(IoError, read_stack(path("does_not_exist.fits")));
  }

  void candidates_and_tables() {
    const SyntheticStack s = small();
    const PsiPhi p = compute_psiphi(s.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(0, 2, 5, 0, 1, 5);
    cfg.curve_dx = s.curve_dx;
    cfg.curve_dy = s.curve_dy;
    cfg.threshold_z = 5;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    QVERIFY(!r.candidates.empty());
    const auto det = describe_candidates(r, plan, s.stack, p, 3, JobContext{});
    QCOMPARE(det.size(), r.candidates.size());
    const auto& d = det[0];
    float a = 0, b = 0;
    for (int e = 0; e < p.n; ++e) {
      a += d.psi[e];
      b += d.phi[e];
    }
    QCOMPARE(a, r.candidates[0].a);
    QCOMPARE(b, r.candidates[0].b);
    QCOMPARE(d.stamp_size, 7);
    // the mover is bright (SNR 20): the centre of the weighted stamp beats its corners
    QVERIFY(d.stamp_weighted[3 * 7 + 3] > d.stamp_weighted[0]);
    QVERIFY(d.stamp_median[3 * 7 + 3] > 0);
    // RA/Dec: pixel (10, 8) is CRPIX (11, 9) in FITS numbering -> (150, 2)
    const Wcs w = Wcs::from_header(tan_header(), "test");
    const auto [ra, dec] = w.pixel_to_sky(10, 8);
    QVERIFY(std::fabs(ra - 150.0) < 1e-9 && std::fabs(dec - 2.0) < 1e-9);
    QCOMPARE(d.ra.size(), std::size_t(p.n));
    QVERIFY(std::fabs(d.dec[0] - 2.0) < 0.01);
    write_candidates_ecsv(path("c.ecsv"), r, det);
    std::ifstream in(path("c.ecsv"));
    std::string first;
    std::getline(in, first);
    QCOMPARE(first, std::string("# %ECSV 1.0"));
    int rows = 0;
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') ++rows;
    QCOMPARE(rows, int(r.candidates.size()) + 1);
    write_result_hdf5(path("c.h5"), r, det);
    io::Hdf5Reader h(path("c.h5"));
    QCOMPARE(h.read_int32("/candidates/x").size(), r.candidates.size());
    QCOMPARE(h.shape("/stamps/median"), (io::Shape{r.candidates.size(), 7, 7}));
    QCOMPARE(h.read_attr_double("/", "digest_max_z"), r.digest.max_z);
    QVERIFY_THROWS_EXCEPTION(IoError, Wcs::from_header(card("NAXIS", "2"), "nowcs"));
  }
};

QTEST_GUILESS_MAIN(TestStackIo)
#include "test_stack_io.moc"
