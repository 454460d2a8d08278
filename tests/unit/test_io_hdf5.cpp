// HDF5 result files: round trips of every dataset type and attribute, atomic behaviour of the
// writer (nothing at the destination before commit, nothing left without commit) and errors
// that name the file and the object.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "expect_io_error.hpp"

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#define ALMAGEST_TEST_HAVE_HDF5_H 1
#elif __has_include(<hdf5/serial/hdf5.h>)
#include <hdf5/serial/hdf5.h>
#define ALMAGEST_TEST_HAVE_HDF5_H 1
#endif

namespace fs = std::filesystem;
using almagest::IoError;
using almagest::io::Hdf5Reader;
using almagest::io::Hdf5Writer;
using almagest::io::Shape;

namespace {

QString temp_base() {
  QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

using almagest::test::throws_io_error;

}  // namespace

class TestIoHdf5 : public QObject {
  Q_OBJECT

private:
  QTemporaryDir dir_{temp_base() + "/test_io_hdf5-XXXXXX"};
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void roundTripEveryType() {
    std::mt19937_64 rng(20240611);
    std::uniform_real_distribution<double> uni(-1e3, 1e3);
    std::vector<double> d(3 * 4 * 5);
    for (auto& v : d) v = uni(rng);
    d[7] = std::numeric_limits<double>::denorm_min();
    d[8] = -0.0;
    std::vector<std::uint64_t> u64 = {0, 1, (std::uint64_t{1} << 53) + 1,
                                      std::numeric_limits<std::uint64_t>::max(), rng()};
    std::vector<std::int64_t> i64 = {std::numeric_limits<std::int64_t>::min(), -1, 0, 42,
                                     std::numeric_limits<std::int64_t>::max(),
                                     static_cast<std::int64_t>(rng())};
    std::vector<std::int32_t> i32 = {std::numeric_limits<std::int32_t>::min(), -7, 0, 123456,
                                     std::numeric_limits<std::int32_t>::max(), -2, 3, 5};
    std::vector<std::uint8_t> u8 = {0, 1, 127, 128, 254, 255};
    std::vector<double> edges = {0.0, 2.5, 5.0, 7.5, 10.0};
    std::string utf8 = "r [Mpc/h] \xc2\xb1 \xcf\x83 \xe2\x80\x94 \xce\xbe(r)";
    std::string big(200000, 'x');
    for (std::size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);

    const std::string dest = path("round_trip.h5");
    {
      Hdf5Writer w(dest);
      w.create_group("/npcf/3pcf");
      w.create_group("/npcf/3pcf");  // idempotent
      w.write("/npcf/3pcf/zeta", d, {3, 4, 5});
      w.write("/counts/u64", u64);
      w.write("/counts/i64", i64);
      w.write("/deep/er/still/i32", i32, {2, 4});  // intermediate groups created on the fly
      w.write("/u8", u8);
      w.write("/empty", std::vector<double>{});
      w.attr("/", "software", std::string("Almagest"));
      w.attr("/", "units", utf8);
      w.attr("/", "config", big);
      w.attr("/", "empty_string", std::string());
      w.attr("/npcf/3pcf", "rmax", 200.0);
      w.attr("/npcf/3pcf/zeta", "nbins", std::int64_t{-123456789012});
      w.attr("/npcf/3pcf/zeta", "edges", edges);
      w.attr("/npcf/3pcf/zeta", "no_edges", std::vector<double>{});
      w.attr("/npcf/3pcf", "rmax", 150.0);  // replaces the first value
      QVERIFY(!fs::exists(dest));
      w.commit();
      QVERIFY(fs::exists(dest));
    }
    // Only the result is left, no temporary.
    QCOMPARE(dir_entries(dir_.path().toStdString()).size(), std::size_t{1});

    Hdf5Reader r(dest);
    QCOMPARE(r.path(), dest);
    QVERIFY(r.exists("/"));
    QVERIFY(r.exists("/npcf"));
    QVERIFY(r.exists("npcf/3pcf/zeta"));
    QVERIFY(r.exists("/deep/er/still/i32"));
    QVERIFY(!r.exists("/npcf/4pcf"));
    QVERIFY(!r.exists("/missing/deeper/x"));
    QVERIFY(!r.exists("/u8/below_a_dataset"));
    QCOMPARE(r.shape("/npcf/3pcf/zeta"), (Shape{3, 4, 5}));
    QCOMPARE(r.shape("/deep/er/still/i32"), (Shape{2, 4}));
    QCOMPARE(r.shape("/empty"), (Shape{0}));
    QCOMPARE(r.list("/"), (std::vector<std::string>{"counts", "deep", "empty", "npcf", "u8"}));
    QCOMPARE(r.list("/counts"), (std::vector<std::string>{"i64", "u64"}));

    std::vector<double> d2 = r.read_double("/npcf/3pcf/zeta");
    QCOMPARE(d2.size(), d.size());
    for (std::size_t i = 0; i < d.size(); ++i) QCOMPARE(d2[i], d[i]);  // bit-exact
    QVERIFY(std::signbit(d2[8]));
    QCOMPARE(r.read_uint64("/counts/u64"), u64);
    QCOMPARE(r.read_int64("/counts/i64"), i64);
    QCOMPARE(r.read_int32("/deep/er/still/i32"), i32);
    QCOMPARE(r.read_uint8("/u8"), u8);
    QVERIFY(r.read_double("/empty").empty());

    // Typed reads convert.
    std::vector<double> i32_as_double = r.read_double("/deep/er/still/i32");
    for (std::size_t i = 0; i < i32.size(); ++i) QCOMPARE(i32_as_double[i], double(i32[i]));
    std::vector<std::int64_t> u8_as_i64 = r.read_int64("/u8");
    for (std::size_t i = 0; i < u8.size(); ++i) QCOMPARE(u8_as_i64[i], std::int64_t(u8[i]));

    QCOMPARE(r.read_attr_string("/", "software"), std::string("Almagest"));
    QCOMPARE(r.read_attr_string("/", "units"), utf8);
    QCOMPARE(r.read_attr_string("/", "config"), big);
    QCOMPARE(r.read_attr_string("/", "empty_string"), std::string());
    QCOMPARE(r.read_attr_double("/npcf/3pcf", "rmax"), 150.0);
    QCOMPARE(r.read_attr_int64("/npcf/3pcf/zeta", "nbins"), std::int64_t{-123456789012});
    QCOMPARE(r.read_attr_double("/npcf/3pcf/zeta", "nbins"), -123456789012.0);
    QCOMPARE(r.read_attr_doubles("/npcf/3pcf/zeta", "edges"), edges);
    QVERIFY(r.read_attr_doubles("/npcf/3pcf/zeta", "no_edges").empty());
    QVERIFY(r.has_attr("/npcf/3pcf/zeta", "edges"));
    QVERIFY(!r.has_attr("/npcf/3pcf/zeta", "nope"));
    QVERIFY(!r.has_attr("/nowhere", "edges"));
  }

  void nothingWithoutCommit() {
    QTemporaryDir sub(dir_.path() + "/nocommit-XXXXXX");
    QVERIFY(sub.isValid());
    const std::string dest = (sub.path() + "/result.h5").toStdString();
    {
      Hdf5Writer w(dest);
      w.write("/a/b", std::vector<double>{1, 2, 3});
      w.attr("/a/b", "units", std::string("Mpc/h"));
      // The temporary lives beside the destination while writing, the destination does not.
      QCOMPARE(dir_entries(sub.path().toStdString()).size(), std::size_t{1});
      QVERIFY(!fs::exists(dest));
    }
    QVERIFY(dir_entries(sub.path().toStdString()).empty());

    // An error half way (abandoned writer) leaves nothing either.
    try {
      Hdf5Writer w(dest);
      w.write("/x", std::vector<double>{1, 2, 3});
      w.write("/x", std::vector<double>{4, 5, 6});  // already exists -> throws
      QFAIL("duplicate dataset was accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find("/x") != std::string::npos);
    }
    QVERIFY(dir_entries(sub.path().toStdString()).empty());

    // Commit over an existing file replaces it.
    {
      Hdf5Writer w(dest);
      w.write("/v", std::vector<std::int32_t>{1});
      w.commit();
    }
    {
      Hdf5Writer w(dest);
      w.write("/v", std::vector<std::int32_t>{2});
      QCOMPARE(Hdf5Reader(dest).read_int32("/v"), (std::vector<std::int32_t>{1}));
      w.commit();
    }
    QCOMPARE(Hdf5Reader(dest).read_int32("/v"), (std::vector<std::int32_t>{2}));
  }

  void writerErrorsNameFileAndObject() {
    const std::string dest = path("errors.h5");
    Hdf5Writer w(dest);
    QVERIFY(throws_io_error([&] { w.write("/m", std::vector<double>(5), {2, 3}); },
                            {dest, "/m", "(2, 3)"}));
    QVERIFY(throws_io_error([&] { w.attr("/nowhere", "units", std::string("x")); },
                            {dest, "units", "/nowhere"}));
    w.write("/d", std::vector<double>{1});
    QVERIFY(throws_io_error([&] { w.create_group("/d"); }, {dest, "/d"}));
    QVERIFY(throws_io_error([&] { w.write("/d/below", std::vector<double>{1}); },
                            {dest, "/d/below"}));
    w.commit();
    QVERIFY(throws_io_error([&] { w.write("/late", std::vector<double>{1}); },
                            {dest, "/late", "committed"}));
    QVERIFY(throws_io_error([&] { Hdf5Writer bad(path("no_such_dir/x.h5")); },
                            {"no_such_dir"}));
  }

  void readerErrorsNameFileAndObject() {
    const std::string dest = path("reader_errors.h5");
    {
      Hdf5Writer w(dest);
      w.write("/g/d", std::vector<double>{1, 2});
      w.attr("/g/d", "s", std::string("text"));
      w.attr("/g/d", "v", std::vector<double>{1, 2});
      w.commit();
    }
    Hdf5Reader r(dest);
    QVERIFY(throws_io_error([&] { r.read_double("/g/missing"); }, {dest, "/g/missing"}));
    QVERIFY(throws_io_error([&] { r.shape("/nothing/here"); }, {dest, "/nothing/here"}));
    QVERIFY(throws_io_error([&] { r.read_double("/g"); }, {dest, "/g"}));
    QVERIFY(throws_io_error([&] { r.read_attr_double("/g/d", "missing"); },
                            {dest, "missing", "/g/d"}));
    QVERIFY(throws_io_error([&] { r.read_attr_double("/g/d", "s"); }, {dest, "'s'", "numeric"}));
    QVERIFY(throws_io_error([&] { r.read_attr_double("/g/d", "v"); }, {dest, "'v'", "2 values"}));
    QVERIFY(throws_io_error([&] { r.read_attr_string("/g/d", "v"); }, {dest, "'v'", "string"}));
    QVERIFY(throws_io_error([&] { r.list("/g/d"); }, {dest, "/g/d"}));

    QVERIFY(throws_io_error([&] { Hdf5Reader missing(path("absent.h5")); },
                            {path("absent.h5"), "does not exist"}));
    const std::string text = path("not_hdf5.h5");
    std::ofstream(text) << "x y z\n1 2 3\n";
    QVERIFY(throws_io_error([&] { Hdf5Reader bad(text); }, {text, "not an HDF5 file"}));
  }

  void truncatedFileNamesFile() {
    const std::string full = path("full.h5");
    {
      Hdf5Writer w(full);
      std::vector<double> v(100000);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.001 * double(i));
      w.write("/big", v);
      w.attr("/big", "units", std::string("none"));
      w.commit();
    }
    std::ifstream in(full, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QVERIFY(bytes.size() > 800000);
    for (std::size_t keep : {bytes.size() / 2, std::size_t{5000}, std::size_t{300}}) {
      const std::string cut = path("truncated.h5");
      std::ofstream(cut, std::ios::binary | std::ios::trunc).write(bytes.data(), long(keep));
      std::string msg;
      bool ok = throws_io_error(
          [&] {
            Hdf5Reader r(cut);
            r.read_double("/big");
          },
          {cut}, &msg);
      QVERIFY2(ok, qPrintable(QString("kept %1 bytes: %2").arg(keep).arg(msg.c_str())));
    }
  }

  void fixedLengthStringAttribute() {
#ifdef ALMAGEST_TEST_HAVE_HDF5_H
    // Files written by other tools may hold fixed-length strings (null- or space-padded).
    const std::string dest = path("fixed.h5");
    hid_t f = H5Fcreate(dest.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    QVERIFY(f >= 0);
    hid_t space = H5Screate(H5S_SCALAR);
    auto put = [&](const char* name, const char* value, std::size_t size, H5T_str_t pad) {
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, size);
      H5Tset_strpad(t, pad);
      hid_t a = H5Acreate2(f, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
      std::string buf(size, pad == H5T_STR_SPACEPAD ? ' ' : '\0');
      std::copy(value, value + std::strlen(value), buf.begin());
      H5Awrite(a, t, buf.data());
      H5Aclose(a);
      H5Tclose(t);
    };
    put("nullterm", "Mpc/h", 16, H5T_STR_NULLTERM);
    put("nullpad", "exactly8", 8, H5T_STR_NULLPAD);
    put("spacepad", "deg", 10, H5T_STR_SPACEPAD);
    H5Sclose(space);
    H5Fclose(f);
    Hdf5Reader r(dest);
    QCOMPARE(r.read_attr_string("/", "nullterm"), std::string("Mpc/h"));
    QCOMPARE(r.read_attr_string("/", "nullpad"), std::string("exactly8"));
    QCOMPARE(r.read_attr_string("/", "spacepad"), std::string("deg"));
#else
    QSKIP("hdf5.h is not on the test include path");
#endif
  }
};

QTEST_GUILESS_MAIN(TestIoHdf5)
#include "test_io_hdf5.moc"
