// Hostile text inputs and user values (issue 19): a text catalogue cut in the middle of a row is
// an error naming the line; devices, FIFOs and oversized files are refused before anything is
// read; redshifts, PSF sigmas, banks, synthetic stacks and npcf job values are bounded before any
// allocation and echoed as written; candidates outside the image are refused without overflow;
// content hashes identify a file's bytes.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

namespace fs = std::filesystem;
using namespace almagest;

namespace {

QString temp_base() {
  QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  if (!env.isEmpty()) fs::create_directories(env.toStdString());
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

/// The message of the exception `f` throws as E ("" if it throws nothing or something else).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    qWarning("unexpected exception type: %s", e.what());
    return {};
  }
  return {};
}

bool contains(const std::string& s, const std::string& needle) {
  if (s.find(needle) != std::string::npos) return true;
  qWarning("'%s' lacks '%s'", s.c_str(), needle.c_str());
  return false;
}

io::CatalogueSpec text_spec(const fs::path& p) {
  io::CatalogueSpec s;
  s.path = p.string();
  s.format = io::CatalogueFormat::Text;
  return s;
}

schema::Values base_job() {
  return {{"stat", std::string("2pcf")}, {"data", std::string("d.txt")}, {"randoms", std::string("r.txt")},
          {"rmin", 1.0}, {"rmax", 10.0}, {"nbins", std::int64_t{5}}, {"output", std::string("o.h5")}};
}

std::string job_error(const schema::Values& v) {
  return message_of<ConfigError>([&] { npcf::make_npcf_job(v, "", "--"); });
}

}  // namespace

class TestIoTextHostile : public QObject {
  Q_OBJECT
  QTemporaryDir dir_{temp_base() + "/text-hostile-XXXXXX"};
  fs::path at(const char* name) const { return fs::path(dir_.path().toStdString()) / name; }

private slots:
  void truncatedRowIsAnErrorNamingTheLine() {
    const fs::path p = at("cut.txt");
    write_file(p, "# x y z\n1 2 3\n4 5 6.25");  // cut after "6.25" of "6.25e3"
    const std::string m = message_of<IoError>([&] { io::load_catalogue(text_spec(p)); });
    QVERIFY(contains(m, p.string()));
    QVERIFY(contains(m, "line 3"));
    QVERIFY(contains(m, "newline"));
    // The same rows, terminated, load; so does a last line that is only a comment.
    write_file(p, "# x y z\n1 2 3\n4 5 6.25\n");
    QCOMPARE(io::load_catalogue(text_spec(p)).size(), std::size_t{2});
    write_file(p, "# x y z\n1 2 3\r\n4 5 6.25\r\n# end");
    QCOMPARE(io::load_catalogue(text_spec(p)).size(), std::size_t{2});
    // Provably complete without a newline: a separator or a comment after the last value.
    write_file(p, "# x y z\n1 2 3\n4 5 6.25 ");
    QCOMPARE(io::load_catalogue(text_spec(p)).size(), std::size_t{2});
    write_file(p, "# x y z\n1 2 3\n4 5 6.25 # last");
    QCOMPARE(io::load_catalogue(text_spec(p)).size(), std::size_t{2});
    write_file(p, "x,y,z\n1,2,3\n4,5,6.2");  // CSV with a bare header: the same rule
    QVERIFY(contains(message_of<IoError>([&] { io::load_catalogue(text_spec(p)); }), "line 3"));
  }

  void devicesAndFifosAreRefusedAtOnce() {
    const auto t0 = std::chrono::steady_clock::now();
    std::string m = message_of<IoError>([&] { io::load_catalogue(text_spec("/dev/zero")); });
    QVERIFY(contains(m, "not a regular file"));
    io::CatalogueSpec autodetect;
    autodetect.path = "/dev/zero";
    m = message_of<IoError>([&] { io::load_catalogue(autodetect); });
    QVERIFY(contains(m, "not a regular file"));
    m = message_of<IoError>([&] { io::read_text_file("/dev/zero", "candidate table"); });
    QVERIFY(contains(m, "/dev/zero"));
    QVERIFY(contains(m, "regular file"));
    const fs::path fifo = at("pipe.txt");
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    m = message_of<IoError>([&] { io::read_text_file(fifo.string(), "catalogue"); });  // no writer: must not wait
    QVERIFY(contains(m, "not a regular file"));
    m = message_of<IoError>([&] { io::read_text_file(dir_.path().toStdString(), "catalogue"); });
    QVERIFY(contains(m, "directory"));
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }

  void oversizedTextIsRefusedBeforeReading() {
    const fs::path p = at("big.txt");
    write_file(p, std::string(4096, '1') + "\n");
    const std::string m = message_of<IoError>([&] { io::read_text_file(p.string(), "velocity list", 1000); });
    QVERIFY(contains(m, "4097 bytes"));
    QCOMPARE(io::read_text_file(p.string(), "velocity list", 5000).size(), std::size_t{4097});
  }

  void textLinesReportTermination() {
    io::TextLines lines("a\r\nb\n\nc");
    std::string_view l;
    std::vector<std::string> got;
    std::vector<bool> term;
    while (lines.next(l)) {
      got.emplace_back(l);
      term.push_back(lines.terminated());
    }
    QCOMPARE(got, (std::vector<std::string>{"a", "b", "", "c"}));
    QCOMPARE(term, (std::vector<bool>{true, true, true, false}));
    QCOMPARE(lines.number(), std::size_t{4});
    QVERIFY(contains(message_of<IoError>([&] { lines.require_terminated("t.txt"); }), "t.txt: line 4"));
  }

  void skyRedshiftIsBoundedNamingTheRow() {
    const fs::path p = at("sky.txt");
    write_file(p, "10 20 0.5\n30 -10 1000000\n");
    io::CatalogueSpec s = text_spec(p);
    s.sky = true;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string m = message_of<IoError>([&] { io::load_catalogue(s); });
    QVERIFY(contains(m, "row 2 (line 2)"));
    QVERIFY(contains(m, "redshift 1e+06"));
    QVERIFY(contains(m, "maximum 100"));
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));  // no 7 GB table
    write_file(p, "10 20 0.5\n30 -10 99\n");
    QCOMPARE(io::load_catalogue(s).size(), std::size_t{2});
  }

  void contentHashIdentifiesBytes() {
    const fs::path a = at("h1.bin"), b = at("h2.bin");
    std::string bytes(100003, 'x');
    write_file(a, bytes);
    write_file(b, bytes);
    const std::string ha = io::content_hash(a.string());
    QVERIFY(ha.rfind("fnv1a64w:", 0) == 0);
    QCOMPARE(ha.size(), std::size_t{9 + 16});
    QCOMPARE(io::content_hash(b.string()), ha);
    bytes[77777] = 'y';
    write_file(b, bytes);
    QVERIFY(io::content_hash(b.string()) != ha);
    write_file(b, bytes.substr(0, 100002));  // a shorter file differs too
    QVERIFY(io::content_hash(b.string()) != ha);
    QVERIFY(!message_of<IoError>([] { io::content_hash("/dev/zero"); }).empty());
  }

  void npcfIntegersAreEchoedAsWritten() {
    auto v = base_job();
    v["nbins"] = std::int64_t{4294967296};
    std::string m = job_error(v);
    QVERIFY(contains(m, "--nbins"));
    QVERIFY(contains(m, "got 4294967296"));
    QVERIFY(m.find("100000") == std::string::npos);
    v["nbins"] = std::int64_t{-5};
    m = job_error(v);
    QVERIFY(contains(m, "got -5"));
    QVERIFY(m.find("got -1") == std::string::npos);
    v["nbins"] = std::string("4294967296");  // as the command line gives it
    QVERIFY(contains(job_error(v), "got 4294967296"));
    v["nbins"] = std::string("99999999999999999999");
    QVERIFY(contains(job_error(v), "got 99999999999999999999"));
    v["nbins"] = std::int64_t{40};
    v["stat"] = std::string("4pcf");
    QVERIFY(contains(job_error(v), "got 40"));  // the 4pCF limit, through validate(), exact too
    v = base_job();
    v["threads"] = std::int64_t{-5};
    QVERIFY(contains(job_error(v), "threads: must be in [0, 4096], got -5"));
    v = base_job();
    v["pixel-grid"] = std::string("8x99999999999");
    QVERIFY(contains(job_error(v), "'8x99999999999'"));
    v = base_job();
    v["fits-hdu"] = std::int64_t{5000000000};
    QVERIFY(contains(job_error(v), "got 5000000000"));
    QCOMPARE(npcf::make_npcf_job(base_job(), "", "--").config.bins.nbins, 5);
  }

  void stackValuesAreBoundedBeforeAllocation() {
    QVERIFY(contains(message_of<ConfigError>([] { stack::Psf::gaussian(1e6); }), "psf.sigma"));
    QCOMPARE(stack::Psf::gaussian(stack::kMaxPsfSigma).size, 2 * 150 + 1);
    stack::SyntheticConfig big;
    big.n_exp = 100000;
    big.width = big.height = 65536;
    QVERIFY(contains(message_of<ConfigError>([&] { stack::make_synthetic(big); }), "synthetic.size"));
    stack::SyntheticConfig seeing;
    seeing.seeing_max = 1e6;
    QVERIFY(contains(message_of<ConfigError>([&] { stack::make_synthetic(seeing); }), "synthetic.seeing"));
    stack::SearchConfig cfg;
    cfg.bank.vx.assign(stack::kMaxBankVelocities + 1, 0.0);
    cfg.bank.vy.assign(stack::kMaxBankVelocities + 1, 0.0);
    bool found = false;
    for (const auto& p : cfg.validate()) found = found || p.find("4194305 velocities") != std::string::npos;
    QVERIFY(found);
  }

  void candidateOutsideTheImageIsRefusedWithoutOverflow() {
    stack::SyntheticConfig sc;
    sc.n_exp = 4;
    sc.width = sc.height = 16;
    sc.seed = 7;
    sc.movers.clear();
    const stack::SyntheticStack syn = stack::make_synthetic(sc);
    const JobContext ctx;
    const stack::PsiPhi p = stack::compute_psiphi(syn.stack, ctx);
    stack::SearchConfig cfg;
    cfg.bank = stack::TrajectoryBank::list({0.5}, {-0.5});
    const stack::SearchPlan plan = stack::make_plan(cfg, p.mjd, p.width, p.height, ctx);
    stack::SearchResult r;
    stack::Candidate c;
    c.x = 3;
    c.y = 4;
    r.candidates = {c};
    QCOMPARE(stack::describe_candidates(r, plan, syn.stack, p, 3, ctx).size(), std::size_t{1});
    r.candidates[0].x = INT_MIN + 2;  // the ubsan_candh5_139 case
    QVERIFY(contains(message_of<ConfigError>([&] { stack::describe_candidates(r, plan, syn.stack, p, 3, ctx); }),
                     "candidate 1: x"));
    r.candidates[0].x = 3;
    r.candidates[0].v = 1;  // past the one-velocity bank
    QVERIFY(contains(message_of<ConfigError>([&] { stack::describe_candidates(r, plan, syn.stack, p, 3, ctx); }),
                     "candidate 1: v"));
  }

  void nsideOfAHugeNpixIsImmediate() {
    const auto t0 = std::chrono::steady_clock::now();
    QCOMPARE(sht::nside_of_npix(std::int64_t{1} << 62), -1);
    QCOMPARE(sht::nside_of_npix(INT64_MAX / 12 * 12), -1);
    QCOMPARE(sht::nside_of_npix(12 * std::int64_t{8192} * 8192), 8192);
    QCOMPARE(sht::nside_of_npix(12 * std::int64_t{3} * 3), 3);
    QCOMPARE(sht::nside_of_npix(12 * 10), -1);
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  }
};

QTEST_GUILESS_MAIN(TestIoTextHostile)
#include "test_io_text_hostile.moc"
