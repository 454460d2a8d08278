// The N-point job's defects of issue 21, each with a test:
//  - the progress of a parity 4pCF advances through the count (it sat at 99%: the graph stage
//    reached 99 and the bar never goes down) and the stages map into increasing ranges;
//  - a result computed for the GUI carries the input files with their content hashes in its
//    provenance (it carried "inputs": []), and so does the file File > Save writes;
//  - data and randoms over different volumes are flagged (bounding boxes beyond 5%).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "almagest/core/provenance.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "jobs/JobRunner.hpp"
#include "jobs/NpcfJob.hpp"
#include "npcf/VolumeCheck.hpp"

using namespace almagest;
using almagest::ui::JobRunner;
using State = JobRunner::State;

namespace {

QString tmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

}  // namespace

class TestNpcfGuiJob : public QObject {
  Q_OBJECT

private slots:
  void stageFractionsIncrease() {
    using ui::npcfJobFraction;
    const auto s = npcf::Statistic::FourPointParity;
    // The engine's stage sequence: each restarts at 0; the overall fraction must not go down.
    const std::vector<std::tuple<std::string, double, double>> seq = {
        {"reading catalogues", 0, 2}, {"reading catalogues", 1, 2}, {"building kd-tree", 0, 1},
        {"building graph", 0, 100},   {"building graph", 100, 100}, {"counting pairs", 0, 10},
        {"counting pairs", 10, 10},   {"4pcf-parity", 0, 1000},
        {"4pcf-parity", 500, 1000},   {"4pcf-parity", 999, 1000}};
    double prev = -1;
    for (const auto& [stage, done, total] : seq) {
      const double f = npcfJobFraction(s, stage, done, total);
      QVERIFY2(f >= prev, stage.c_str());
      QVERIFY(f >= 0 && f <= 1);
      prev = f;
    }
    // Counting is most of a 4pCF: half the hubs done is past the middle of the bar.
    QVERIFY(npcfJobFraction(s, "4pcf-parity", 500, 1000) > 0.5);
    QVERIFY(npcfJobFraction(s, "building graph", 100, 100) < 0.1);
    QCOMPARE(npcfJobFraction(s, "4pcf-parity", 1000, 1000), 1.0);
  }

  void parityProgressAdvancesAndInputsAreHashed() {
    QTemporaryDir tmp(tmpRoot() + QStringLiteral("/npcf_job_XXXXXX"));
    QVERIFY(tmp.isValid());
    const std::string data = tmp.filePath(QStringLiteral("data.txt")).toStdString();
    const std::string randoms = tmp.filePath(QStringLiteral("randoms.txt")).toStdString();
    io::save_catalogue_text(npcf::synthetic::neyman_scott(1500, 10, 4.0, 300.0, 3), data);
    io::save_catalogue_text(npcf::synthetic::uniform(3000, 300.0, 4), randoms);
    schema::Values v;
    v["stat"] = std::string("4pcf-parity");
    v["data"] = data;
    v["randoms"] = randoms;
    v["rmin"] = 5.0;
    v["rmax"] = 35.0;
    v["nbins"] = std::int64_t{3};
    v["threads"] = std::int64_t{1};
    v["output"] = std::string("unsaved.h5");
    const npcf::NpcfJob job = npcf::make_npcf_job(v, "", "");

    // The job as JobRunner runs it, on a context that records every progress call (JobRunner
    // throttles to 10 Hz and never lets the bar go down: the values must advance by themselves).
    std::vector<std::pair<double, std::string>> calls;
    ProgressFn progress = [&](double done, double total, std::string_view stage) {
      calls.emplace_back(total > 0 ? done / total : 0.0, std::string(stage));
    };
    JobContext ctx(CancelToken(), progress, LogFn([](LogLevel, std::string_view) {}));
    ctx.threads = 1;
    const std::any value = ui::makeNpcfJob(job)(ctx);
    double graphEnd = 0, prev = -1;
    std::vector<double> counting;
    for (const auto& [f, stage] : calls) {
      if (f < prev) qInfo("down: %g after %g at '%s'", f, prev, stage.c_str());
      QVERIFY2(f >= prev, stage.c_str());  // never down across the stages
      prev = f;
      if (stage.find("graph") != std::string::npos) graphEnd = std::max(graphEnd, f);
      else if (stage.find("4pcf") != std::string::npos) counting.push_back(f);
    }
    QVERIFY2(counting.size() >= 10, qPrintable(QStringLiteral("%1 counting calls").arg(counting.size())));
    QVERIFY(graphEnd < 0.1);  // the graph is a small part of a 4pCF
    QVERIFY(counting[counting.size() / 2] > counting.front());  // the bar moves with the hubs
    QVERIFY(counting.back() > 0.99);
    const auto* out = std::any_cast<ui::NpcfOutputPtr>(&value);
    QVERIFY(out && *out);
    const Provenance& p = (*out)->result.provenance;
    QCOMPARE(p.inputs, job.input_paths());
    QCOMPARE(p.inputs.size(), std::size_t(2));
    for (const std::string& in : p.inputs) QCOMPARE(p.input_hashes.at(in), io::content_hash(in));
    // What File > Save writes carries them too (read back as a batch would).
    const std::string saved = tmp.filePath(QStringLiteral("saved.h5")).toStdString();
    npcf::write_hdf5((*out)->result, saved);
    const Provenance back = jobs::read_provenance(saved);
    QCOMPARE(back.inputs, p.inputs);
    QCOMPARE(back.input_hashes, p.input_hashes);
  }

  void volumeMismatchIsFlagged() {
    const io::Catalogue data = npcf::synthetic::uniform(2000, 100.0, 1);
    io::Catalogue same = npcf::synthetic::uniform(4000, 100.0, 2);
    QVERIFY(ui::volumeMismatch(data, same).isEmpty());
    io::Catalogue wide = same;
    for (double& x : wide.x) x *= 2.0;  // randoms over twice the volume in x
    const QString w = ui::volumeMismatch(data, wide);
    QVERIFY(w.contains(QStringLiteral("different volumes")));
    QVERIFY2(w.contains(QStringLiteral("x:")), qPrintable(w));
    QVERIFY2(w.contains(QStringLiteral("randoms/data box volume 2")) || w.contains(QStringLiteral("randoms/data box volume 1.9")), qPrintable(w));
    io::Catalogue shifted = same;
    for (double& z : shifted.z) z += 10.0;  // 10% shift in z
    QVERIFY(ui::volumeMismatch(data, shifted).contains(QStringLiteral("z:")));
    io::Catalogue slightly = same;
    for (double& y : slightly.y) y *= 1.02;  // within the 5% tolerance
    QVERIFY(ui::volumeMismatch(data, slightly).isEmpty());
  }
};

QTEST_MAIN(TestNpcfGuiJob)
#include "test_npcf_gui_job.moc"
