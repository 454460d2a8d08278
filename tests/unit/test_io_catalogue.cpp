// Catalogue input: text (whitespace, CSV, headers, column selection), FITS binary tables written
// here with cfitsio, HDF5 column datasets, sky conversion, and every bad input with a message
// that names the file and the field.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <fitsio.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/hdf5_file.hpp"

namespace fs = std::filesystem;
using almagest::IoError;
using almagest::io::Catalogue;
using almagest::io::CatalogueFormat;
using almagest::io::CatalogueSpec;
using almagest::io::load_catalogue;

namespace {

QString temp_base() {
  QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

/// Loads `spec`, expects IoError whose message contains every needle.
bool fails_with(const CatalogueSpec& spec, const std::vector<std::string>& needles) {
  try {
    load_catalogue(spec);
  } catch (const IoError& e) {
    const std::string what = e.what();
    if (qEnvironmentVariableIsSet("ALMAGEST_TEST_VERBOSE")) qInfo("%s", what.c_str());
    for (const auto& n : needles)
      if (what.find(n) == std::string::npos) {
        qWarning("message '%s' lacks '%s'", what.c_str(), n.c_str());
        return false;
      }
    return true;
  }
  qWarning("no IoError for %s", spec.path.c_str());
  return false;
}

CatalogueSpec spec_for(const std::string& path) {
  CatalogueSpec s;
  s.path = path;
  return s;
}

struct Points {
  std::vector<double> a, b, c, w1, w2;
};

Points random_points(std::size_t n, std::uint64_t seed, bool sky) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> box(-500, 500), ra(0, 360), sd(-1, 1), red(0.01, 1.5),
      w(0.2, 2.0);
  Points p;
  for (std::size_t i = 0; i < n; ++i) {
    if (sky) {
      p.a.push_back(ra(rng));
      p.b.push_back(std::asin(sd(rng)) * 180.0 / M_PI);
      p.c.push_back(red(rng));
    } else {
      p.a.push_back(box(rng));
      p.b.push_back(box(rng));
      p.c.push_back(box(rng));
    }
    p.w1.push_back(w(rng));
    p.w2.push_back(w(rng));
  }
  return p;
}

std::string fmt17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Writes a FITS file: HDU 2 a Cartesian table (x, y, z), HDU 3 a sky table (RA, DEC as float,
/// Z, WEIGHT as float, WEIGHT_FKP, NZ as int32, NAME as string). Returns false on a cfitsio error.
bool write_fits(const std::string& path, const Points& box, const Points& sky, int nan_dec_row = 0) {
  int status = 0;
  fitsfile* f = nullptr;
  std::string name = "!" + path;  // '!' overwrites
  fits_create_file(&f, name.c_str(), &status);
  {
    char* ttype[] = {const_cast<char*>("x"), const_cast<char*>("y"), const_cast<char*>("z")};
    char* tform[] = {const_cast<char*>("1D"), const_cast<char*>("1D"), const_cast<char*>("1D")};
    fits_create_tbl(f, BINARY_TBL, 0, 3, ttype, tform, nullptr, "BOX", &status);
    const auto n = static_cast<LONGLONG>(box.a.size());
    fits_write_col(f, TDOUBLE, 1, 1, 1, n, const_cast<double*>(box.a.data()), &status);
    fits_write_col(f, TDOUBLE, 2, 1, 1, n, const_cast<double*>(box.b.data()), &status);
    fits_write_col(f, TDOUBLE, 3, 1, 1, n, const_cast<double*>(box.c.data()), &status);
  }
  {
    char* ttype[] = {const_cast<char*>("RA"),     const_cast<char*>("DEC"),
                     const_cast<char*>("Z"),      const_cast<char*>("WEIGHT"),
                     const_cast<char*>("WEIGHT_FKP"), const_cast<char*>("NZ"),
                     const_cast<char*>("NAME")};
    char* tform[] = {const_cast<char*>("1D"), const_cast<char*>("1E"), const_cast<char*>("1D"),
                     const_cast<char*>("1E"), const_cast<char*>("1D"), const_cast<char*>("1J"),
                     const_cast<char*>("8A")};
    fits_create_tbl(f, BINARY_TBL, 0, 7, ttype, tform, nullptr, "GALAXIES", &status);
    const std::size_t n = sky.a.size();
    std::vector<float> dec(sky.b.begin(), sky.b.end()), w1(sky.w1.begin(), sky.w1.end());
    if (nan_dec_row > 0) dec[nan_dec_row - 1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int> nz(n);
    for (std::size_t i = 0; i < n; ++i) nz[i] = static_cast<int>(i % 7) - 3;
    std::vector<std::string> names(n);
    std::vector<char*> name_ptrs(n);
    for (std::size_t i = 0; i < n; ++i) {
      names[i] = "g" + std::to_string(i);
      name_ptrs[i] = names[i].data();
    }
    const auto nn = static_cast<LONGLONG>(n);
    fits_write_col(f, TDOUBLE, 1, 1, 1, nn, const_cast<double*>(sky.a.data()), &status);
    fits_write_col(f, TFLOAT, 2, 1, 1, nn, dec.data(), &status);
    fits_write_col(f, TDOUBLE, 3, 1, 1, nn, const_cast<double*>(sky.c.data()), &status);
    fits_write_col(f, TFLOAT, 4, 1, 1, nn, w1.data(), &status);
    fits_write_col(f, TDOUBLE, 5, 1, 1, nn, const_cast<double*>(sky.w2.data()), &status);
    fits_write_col(f, TINT, 6, 1, 1, nn, nz.data(), &status);
    fits_write_col(f, TSTRING, 7, 1, 1, nn, name_ptrs.data(), &status);
  }
  fits_close_file(f, &status);
  return status == 0;
}

/// Independent sky conversion for the checks.
void expect_sky(const Catalogue& cat, const std::vector<double>& ra, const std::vector<double>& dec,
                const std::vector<double>& z, double om, double tol, bool& ok) {
  almagest::io::Cosmology c{om};
  ok = cat.size() == ra.size();
  for (std::size_t i = 0; ok && i < cat.size(); ++i) {
    const double d = c.comoving_distance(z[i]);
    const double r = ra[i] * M_PI / 180, de = dec[i] * M_PI / 180;
    const double ex = d * std::cos(de) * std::cos(r), ey = d * std::cos(de) * std::sin(r),
                 ez = d * std::sin(de);
    if (std::abs(cat.x[i] - ex) > tol * d || std::abs(cat.y[i] - ey) > tol * d ||
        std::abs(cat.z[i] - ez) > tol * d) {
      qWarning("row %zu: (%g %g %g) vs (%g %g %g)", i, cat.x[i], cat.y[i], cat.z[i], ex, ey, ez);
      ok = false;
    }
  }
}

}  // namespace

class TestIoCatalogue : public QObject {
  Q_OBJECT

private:
  QTemporaryDir dir_{temp_base() + "/test_io_catalogue-XXXXXX"};
  std::string path(const std::string& name) const { return dir_.path().toStdString() + "/" + name; }

private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void textWithHeaderAndWeights() {
    const Points p = random_points(500, 11, false);
    std::string text = "# demo catalogue\n# x y z w\n";
    for (std::size_t i = 0; i < p.a.size(); ++i)
      text += fmt17(p.a[i]) + " " + fmt17(p.b[i]) + "\t" + fmt17(p.c[i]) + "  " + fmt17(p.w1[i]) + "\n";
    write_file(path("h.txt"), text);
    Catalogue cat = load_catalogue(spec_for(path("h.txt")));
    QCOMPARE(cat.size(), p.a.size());
    QCOMPARE(cat.source, path("h.txt"));
    QCOMPARE(cat.x, p.a);
    QCOMPARE(cat.y, p.b);
    QCOMPARE(cat.z, p.c);
    QCOMPARE(cat.w, p.w1);  // column 4 is the default weight

    // Same columns chosen by name, in another order, case-insensitively.
    CatalogueSpec s = spec_for(path("h.txt"));
    s.columns = {"Z", "x", "y"};
    s.weight_columns = {"W"};
    Catalogue perm = load_catalogue(s);
    QCOMPARE(perm.x, p.c);
    QCOMPARE(perm.y, p.a);
    QCOMPARE(perm.z, p.b);
    QCOMPARE(perm.w, p.w1);
  }

  void textWithoutHeader() {
    // Three columns: unit weights. Comments, blank lines, CRLF, '+' signs, exponents.
    write_file(path("plain.txt"),
               "# no header here: 3 numbers\n\n1 2 3\r\n  +4.5e1\t-5E-1 6 # trailing comment\n"
               "\n7.25 .5 -9\n");
    Catalogue cat = load_catalogue(spec_for(path("plain.txt")));
    QCOMPARE(cat.x, (std::vector<double>{1, 45, 7.25}));
    QCOMPARE(cat.y, (std::vector<double>{2, -0.5, 0.5}));
    QCOMPARE(cat.z, (std::vector<double>{3, 6, -9}));
    QCOMPARE(cat.w, (std::vector<double>{1, 1, 1}));
  }

  void csvAndColumnSelection() {
    // Bare CSV header row; select by number and by name; two weight columns multiplied.
    const Points p = random_points(200, 12, false);
    std::string text = "id,px,py,pz,wa,wb\n";
    for (std::size_t i = 0; i < p.a.size(); ++i)
      text += std::to_string(i) + ", " + fmt17(p.a[i]) + "," + fmt17(p.b[i]) + "," + fmt17(p.c[i]) +
              "," + fmt17(p.w1[i]) + "," + fmt17(p.w2[i]) + "\n";
    write_file(path("cat.csv"), text);

    CatalogueSpec byname = spec_for(path("cat.csv"));
    byname.columns = {"px", "py", "pz"};
    byname.weight_columns = {"wa", "wb"};
    Catalogue a = load_catalogue(byname);
    CatalogueSpec bynum = spec_for(path("cat.csv"));
    bynum.columns = {"2", "3", "4"};
    bynum.weight_columns = {"5", "6"};
    Catalogue b = load_catalogue(bynum);
    QCOMPARE(a.x, p.a);
    QCOMPARE(a.y, p.b);
    QCOMPARE(a.z, p.c);
    for (std::size_t i = 0; i < p.a.size(); ++i) QCOMPARE(a.w[i], p.w1[i] * p.w2[i]);
    QCOMPARE(b.x, a.x);
    QCOMPARE(b.w, a.w);

    // A '#' header with commas, sky columns by name.
    const Points s = random_points(300, 13, true);
    std::string sky = "# RA,DEC,Z,WEIGHT\n";
    for (std::size_t i = 0; i < s.a.size(); ++i)
      sky += fmt17(s.a[i]) + "," + fmt17(s.b[i]) + "," + fmt17(s.c[i]) + "," + fmt17(s.w1[i]) + "\n";
    write_file(path("sky.csv"), sky);
    CatalogueSpec ss = spec_for(path("sky.csv"));
    ss.sky = true;
    ss.cosmology.omega_m = 0.3;
    ss.columns = {"RA", "DEC", "Z"};
    ss.weight_columns = {"WEIGHT"};
    Catalogue c = load_catalogue(ss);
    bool ok = false;
    expect_sky(c, s.a, s.b, s.c, 0.3, 1e-9, ok);
    QVERIFY(ok);
    QCOMPARE(c.w, s.w1);
  }

  void saveRoundTrip() {
    const Points p = random_points(1000, 14, false);
    Catalogue cat;
    cat.x = p.a;
    cat.y = p.b;
    cat.z = p.c;
    cat.w = p.w1;
    cat.x[3] = 1e-300;
    cat.y[4] = -0.0;
    const std::string out = path("saved.txt");
    almagest::io::save_catalogue_text(cat, out);
    Catalogue back = load_catalogue(spec_for(out));
    QCOMPARE(back.x, cat.x);  // exact: shortest round-trip formatting
    QCOMPARE(back.y, cat.y);
    QCOMPARE(back.z, cat.z);
    QCOMPARE(back.w, cat.w);
    CatalogueSpec named = spec_for(out);
    named.columns = {"x", "y", "z"};
    named.weight_columns = {"w"};
    QCOMPARE(load_catalogue(named).w, cat.w);
    QVERIFY_THROWS_EXCEPTION(IoError, almagest::io::save_catalogue_text(cat, path("nodir/x.txt")));
  }

  void fitsTables() {
    const Points box = random_points(50, 21, false);
    const Points sky = random_points(3000, 22, true);
    const std::string f = path("cat.fits");
    QVERIFY(write_fits(f, box, sky));

    // Default: first binary table, columns x y z, unit weights.
    Catalogue a = load_catalogue(spec_for(f));
    QCOMPARE(a.x, box.a);
    QCOMPARE(a.y, box.b);
    QCOMPARE(a.z, box.c);
    QCOMPARE(a.w, std::vector<double>(50, 1.0));

    // HDU 3, sky columns named in another case, two weight columns multiplied.
    CatalogueSpec s = spec_for(f);
    s.fits_hdu = 3;
    s.sky = true;
    s.columns = {"ra", "Dec", "z"};
    s.weight_columns = {"WEIGHT", "weight_fkp"};
    Catalogue b = load_catalogue(s);
    std::vector<double> dec_f(sky.b.size());
    for (std::size_t i = 0; i < dec_f.size(); ++i) dec_f[i] = static_cast<float>(sky.b[i]);
    bool ok = false;
    expect_sky(b, sky.a, dec_f, sky.c, 0.31, 1e-9, ok);
    QVERIFY(ok);
    for (std::size_t i = 0; i < sky.a.size(); ++i)
      QCOMPARE(b.w[i], static_cast<double>(static_cast<float>(sky.w1[i])) * sky.w2[i]);

    // Default sky column names (RA, DEC, Z); an integer column as weight; forced format.
    CatalogueSpec d = spec_for(f);
    d.fits_hdu = 3;
    d.sky = true;
    d.weight_columns = {"NZ"};
    d.format = CatalogueFormat::Fits;
    Catalogue c = load_catalogue(d);
    QCOMPARE(c.x, b.x);
    for (std::size_t i = 0; i < 20; ++i) QCOMPARE(c.w[i], double(int(i % 7) - 3));

    // Columns by number.
    CatalogueSpec n = spec_for(f);
    n.columns = {"3", "1", "2"};
    Catalogue e = load_catalogue(n);
    QCOMPARE(e.x, box.c);
    QCOMPARE(e.y, box.a);
  }

  void fitsErrors() {
    const Points box = random_points(20, 31, false);
    const Points sky = random_points(20000, 32, true);
    const std::string f = path("errors.fits");
    QVERIFY(write_fits(f, box, sky));
    CatalogueSpec s = spec_for(f);
    s.fits_hdu = 3;
    s.sky = true;
    s.weight_columns = {"WEIGHT", "NOPE"};
    QVERIFY(fails_with(s, {f, "NOPE", "no such column", "WEIGHT_FKP", "RA"}));
    s.weight_columns = {"NAME"};
    QVERIFY(fails_with(s, {f, "NAME", "not numeric"}));
    s.weight_columns = {};
    s.fits_hdu = 7;
    QVERIFY(fails_with(s, {f, "HDU 7", "no such HDU"}));
    s.fits_hdu = 1;
    QVERIFY(fails_with(s, {f, "HDU 1", "not a table"}));

    // A null (NaN) declination names the row and the column.
    const std::string fnan = path("nan.fits");
    QVERIFY(write_fits(fnan, box, sky, 17));
    CatalogueSpec sn = spec_for(fnan);
    sn.fits_hdu = 3;
    sn.sky = true;
    QVERIFY(fails_with(sn, {fnan, "row 17", "DEC", "not finite"}));

    // Truncated files: in the data and in the header.
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QVERIFY(bytes.size() > 400000);
    for (std::size_t keep : {bytes.size() * 6 / 10, std::size_t{4000}, std::size_t{100}}) {
      const std::string cut = path("truncated.fits");
      write_file(cut, bytes.substr(0, keep));
      CatalogueSpec t = spec_for(cut);
      t.fits_hdu = 3;
      t.sky = true;
      QVERIFY2(fails_with(t, {cut}), qPrintable(QString("kept %1 bytes").arg(keep)));
    }
  }

  void hdf5Catalogue() {
    const Points p = random_points(400, 41, false);
    const Points s = random_points(400, 42, true);
    const std::string f = path("cat.h5");
    {
      almagest::io::Hdf5Writer w(f);
      w.write("/galaxies/x", p.a);
      w.write("/galaxies/y", p.b);
      w.write("/galaxies/z", p.c);
      w.write("/galaxies/w", p.w1);
      std::vector<std::int32_t> flag(p.a.size());
      for (std::size_t i = 0; i < flag.size(); ++i) flag[i] = int(i % 3) + 1;
      w.write("/galaxies/flag", flag);
      w.write("/sky/RA", s.a);
      w.write("/sky/DEC", s.b);
      w.write("/sky/Z", s.c);
      w.write("/sky/short", std::vector<double>(10, 1.0));
      w.commit();
    }
    CatalogueSpec a = spec_for(f);
    a.hdf5_group = "/galaxies";
    a.weight_columns = {"w", "flag"};
    Catalogue ca = load_catalogue(a);
    QCOMPARE(ca.x, p.a);
    QCOMPARE(ca.y, p.b);
    QCOMPARE(ca.z, p.c);
    for (std::size_t i = 0; i < p.a.size(); ++i) QCOMPARE(ca.w[i], p.w1[i] * double(int(i % 3) + 1));

    CatalogueSpec b = spec_for(f);
    b.hdf5_group = "sky";
    b.sky = true;
    b.columns = {"ra", "dec", "z"};  // case-insensitive fallback
    Catalogue cb = load_catalogue(b);
    bool ok = false;
    expect_sky(cb, s.a, s.b, s.c, 0.31, 1e-9, ok);
    QVERIFY(ok);
    QCOMPARE(cb.w, std::vector<double>(s.a.size(), 1.0));

    CatalogueSpec m = spec_for(f);
    m.hdf5_group = "/galaxies";
    m.weight_columns = {"WEIGHT_FKP"};
    QVERIFY(fails_with(m, {f, "WEIGHT_FKP", "flag, w, x, y, z"}));
    CatalogueSpec g = spec_for(f);
    g.hdf5_group = "/nowhere";
    QVERIFY(fails_with(g, {f, "/nowhere"}));
    CatalogueSpec l = spec_for(f);
    l.hdf5_group = "/sky";
    l.sky = true;
    l.weight_columns = {"short"};
    QVERIFY(fails_with(l, {f, "short", "10 rows"}));
  }

  void badTextInput() {
    QVERIFY(fails_with(spec_for(path("absent.txt")), {path("absent.txt"), "does not exist"}));

    write_file(path("empty.txt"), "");
    QVERIFY(fails_with(spec_for(path("empty.txt")), {path("empty.txt"), "no rows"}));
    write_file(path("comments.txt"), "# x y z\n# nothing else\n\n");
    QVERIFY(fails_with(spec_for(path("comments.txt")), {path("comments.txt"), "no rows"}));

    write_file(path("nan.txt"), "# x y z w\n1 2 3 1\n4 5 6 1\n7 nan 9 1\n");
    QVERIFY(fails_with(spec_for(path("nan.txt")), {path("nan.txt"), "row 3", "line 4", "column 2 (y)", "not finite"}));
    write_file(path("inf.txt"), "1 2 3 1\n4 5 6 -inf\n");
    QVERIFY(fails_with(spec_for(path("inf.txt")), {path("inf.txt"), "row 2", "column 4", "not finite"}));

    write_file(path("junk.txt"), "1 2 3\n4 five 6\n");
    QVERIFY(fails_with(spec_for(path("junk.txt")), {path("junk.txt"), "line 2", "column 2", "'five'"}));
    write_file(path("short.txt"), "# x y z w\n1 2 3 4\n1 2 3\n");
    QVERIFY(fails_with(spec_for(path("short.txt")), {path("short.txt"), "line 3", "column 4 (w)", "missing"}));
    write_file(path("hole.csv"), "1,2,3\n4,,6\n");
    QVERIFY(fails_with(spec_for(path("hole.csv")), {path("hole.csv"), "line 2", "column 2", "missing"}));

    write_file(path("named.txt"), "# x y z w\n1 2 3 4\n");
    CatalogueSpec s = spec_for(path("named.txt"));
    s.columns = {"x", "y", "depth"};
    QVERIFY(fails_with(s, {path("named.txt"), "depth", "available columns: x, y, z, w"}));
    s.columns = {"x", "y", "0"};
    QVERIFY(fails_with(s, {path("named.txt"), "'0'", "1-based"}));
    s.columns = {"x", "y"};
    QVERIFY(fails_with(s, {path("named.txt"), "columns", "3 coordinate"}));
    CatalogueSpec nohdr = spec_for(path("plain_nohdr.txt"));
    write_file(nohdr.path, "1 2 3\n");
    nohdr.columns = {"x", "y", "z"};
    QVERIFY(fails_with(nohdr, {nohdr.path, "'x'", "no header"}));
  }

  void badSkyInput() {
    write_file(path("dec.txt"), "# RA DEC Z\n10 20 0.5\n10 95 0.5\n");
    CatalogueSpec s = spec_for(path("dec.txt"));
    s.sky = true;
    QVERIFY(fails_with(s, {path("dec.txt"), "row 2", "line 3", "column 2 (DEC)", "[-90, 90]"}));
    write_file(path("negz.txt"), "# RA DEC Z\n10 20 0.5\n10 -20 0.5\n11 21 -0.01\n");
    s.path = path("negz.txt");
    QVERIFY(fails_with(s, {path("negz.txt"), "row 3", "column 3 (Z)", "negative"}));
  }

  void demoCatalogues() {
    // The bundled demo inputs load with default options and hold what resources/demo/README.md says.
    const std::string dir = std::string(ALMAGEST_SOURCE_DIR) + "/resources/demo/";
    Catalogue data = load_catalogue(spec_for(dir + "data.txt"));
    Catalogue randoms = load_catalogue(spec_for(dir + "randoms.txt"));
    QCOMPARE(data.size(), std::size_t{3000});
    QCOMPARE(randoms.size(), std::size_t{6000});
    for (const Catalogue* c : {&data, &randoms})
      for (std::size_t i = 0; i < c->size(); ++i) {
        QVERIFY(c->x[i] >= 0 && c->x[i] < 200 && c->y[i] >= 0 && c->y[i] < 200 && c->z[i] >= 0 &&
                c->z[i] < 200);
        QVERIFY(c->w[i] >= 0.8 && c->w[i] <= 1.2);
      }
    QCOMPARE(randoms.w, std::vector<double>(6000, 1.0));
    QVERIFY(*std::min_element(data.w.begin(), data.w.end()) < 0.81);
    QVERIFY(*std::max_element(data.w.begin(), data.w.end()) > 1.19);
  }

  void millionRows() {
    // Speed and correctness on 10^6 rows: write with save_catalogue_text, read back exactly.
    const std::size_t n = 1000000;
    std::mt19937_64 rng(51);
    std::uniform_real_distribution<double> box(0, 1000), w(0.5, 1.5);
    Catalogue cat;
    for (std::size_t i = 0; i < n; ++i) {
      cat.x.push_back(box(rng));
      cat.y.push_back(box(rng));
      cat.z.push_back(box(rng));
      cat.w.push_back(w(rng));
    }
    const std::string f = path("million.txt");
    QElapsedTimer t;
    t.start();
    almagest::io::save_catalogue_text(cat, f);
    const qint64 write_ms = t.restart();
    Catalogue back = load_catalogue(spec_for(f));
    const qint64 read_ms = t.elapsed();
    qInfo("10^6 rows (%.1f MB): write %lld ms, read %lld ms", double(fs::file_size(f)) / 1e6,
          static_cast<long long>(write_ms), static_cast<long long>(read_ms));
    QCOMPARE(back.size(), n);
    QVERIFY(back.x == cat.x && back.y == cat.y && back.z == cat.z && back.w == cat.w);
    fs::remove(f);
  }
};

QTEST_GUILESS_MAIN(TestIoCatalogue)
#include "test_io_catalogue.moc"
