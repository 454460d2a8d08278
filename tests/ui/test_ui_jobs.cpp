// JobRunner: the GUI's job state machine. Progress is monotone, throttled and ends at 100;
// cancel takes effect within 1 s, is an outcome (Cancelled) with no result and no output file;
// failures carry the engine's message; a queued job cancelled before it starts never runs; and a
// real engine job run through the runner gives the brute-force pair count.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "jobs/JobRunner.hpp"
#include "jobs/NpcfJob.hpp"

using almagest::JobContext;
using almagest::ui::JobRunner;
using State = almagest::ui::JobRunner::State;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

// Busy work for one chunk (~ms); returns something so it is not optimised away.
double work(int chunk) {
  double s = 0;
  for (int i = 1; i < 20000; ++i) s += std::sin(chunk * 1e-3 + i * 1e-5) / i;
  return s;
}

QList<int> percents(const QSignalSpy& spy) {
  QList<int> v;
  for (const auto& args : spy) v << args.at(0).toInt();
  return v;
}

}  // namespace

class TestUiJobs : public QObject {
  Q_OBJECT

private slots:
  void progressIsMonotoneThrottledAndEndsAt100();
  void stageContextsMapOntoOneRange();
  void cancelTakesEffectWithinOneSecondAndLeavesNoFile();
  void cancelIsAnOutcomeEvenIfTheJobReturns();
  void failureIsReportedWithTheEngineMessage();
  void otherExceptionsAreInternalErrors();
  void queuedJobCancelledBeforeStartNeverRuns();
  void destroyingARunningJobCancelsIt();
  void engineJobMatchesBruteForcePairCount();
};

void TestUiJobs::progressIsMonotoneThrottledAndEndsAt100() {
  constexpr int kChunks = 60;
  JobRunner runner(QStringLiteral("steps"), [](const JobContext& ctx) -> std::any {
    double acc = 0;
    for (int i = 0; i < kChunks; ++i) {
      ctx.check_cancel();
      acc += work(i);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ctx.progress(i + 1, kChunks, "counting");
    }
    return acc;
  });
  QSignalSpy progress(&runner, &JobRunner::progressChanged);
  QSignalSpy finished(&runner, &JobRunner::finished);
  QSignalSpy states(&runner, &JobRunner::stateChanged);
  QElapsedTimer timer;
  timer.start();
  runner.start();
  QVERIFY(finished.wait(20000));
  const double seconds = timer.elapsed() / 1000.0;

  QCOMPARE(runner.state(), State::Completed);
  QCOMPARE(finished.count(), 1);
  QCOMPARE(finished.at(0).at(0).value<State>(), State::Completed);
  double expected = 0;
  for (int i = 0; i < kChunks; ++i) expected += work(i);
  QVERIFY(runner.resultAs<double>() != nullptr);
  QCOMPARE(*runner.resultAs<double>(), expected);
  QVERIFY(runner.errorMessage().isEmpty());

  const QList<int> p = percents(progress);
  QVERIFY2(p.size() >= 3, qPrintable(QStringLiteral("only %1 progress signals").arg(p.size())));
  for (int i = 1; i < p.size(); ++i) QVERIFY2(p[i] >= p[i - 1], "progress went down");
  QCOMPARE(p.last(), 100);
  QCOMPARE(p.count(100), 1);
  // Throttled to ~10 Hz: at most one signal per 100 ms of run time, plus the first and the 100.
  QVERIFY2(p.size() <= static_cast<int>(seconds * 10.0) + 3,
           qPrintable(QStringLiteral("%1 signals in %2 s").arg(p.size()).arg(seconds)));
  QCOMPARE(runner.percent(), 100);

  // Queued -> Running -> Completed, in that order.
  QList<State> seen;
  for (const auto& args : states) seen << args.at(0).value<State>();
  QCOMPARE(seen, (QList<State>{State::Queued, State::Running, State::Completed}));
  QVERIFY(runner.elapsedSeconds() > 0.5);
}

void TestUiJobs::stageContextsMapOntoOneRange() {
  JobRunner runner(QStringLiteral("stages"), [](const JobContext& ctx) -> std::any {
    const JobContext a = JobRunner::stageContext(ctx, 0.0, 0.3);
    for (int i = 1; i <= 10; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      a.progress(i, 10, "graph");
    }
    const JobContext b = JobRunner::stageContext(ctx, 0.3, 1.0);
    for (int i = 1; i <= 20; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      b.progress(i, 20, "counting");
    }
    return 1;
  });
  QSignalSpy progress(&runner, &JobRunner::progressChanged);
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QVERIFY(finished.wait(20000));
  QCOMPARE(runner.state(), State::Completed);
  bool sawGraph = false, sawCounting = false;
  int last = -1, lastGraph = -1, firstCounting = 101;
  for (const auto& args : progress) {
    const int pct = args.at(0).toInt();
    const QString stage = args.at(1).toString();
    QVERIFY(pct >= last);
    last = pct;
    if (stage == QLatin1String("graph")) { sawGraph = true; lastGraph = std::max(lastGraph, pct); }
    if (stage == QLatin1String("counting")) { sawCounting = true; firstCounting = std::min(firstCounting, pct); }
  }
  QVERIFY(sawGraph);
  QVERIFY(sawCounting);
  QVERIFY2(lastGraph <= 30, "the first stage must stay within its 30 %");
  QVERIFY2(firstCounting >= 30, "the second stage starts at 30 %");
  QCOMPARE(last, 100);
}

void TestUiJobs::cancelTakesEffectWithinOneSecondAndLeavesNoFile() {
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_jobs_XXXXXX"));
  QVERIFY(tmp.isValid());
  const std::string out = tmp.filePath(QStringLiteral("result.txt")).toStdString();
  std::atomic<int> chunksDone{0};

  // Writes its output progressively into an AtomicFile, as the engine's writers do; only a
  // finished job commits it. Would run for ~20 s if not cancelled.
  JobRunner runner(QStringLiteral("long"), [&out, &chunksDone](const JobContext& ctx) -> std::any {
    almagest::AtomicFile file(out);
    std::ofstream os(file.temp_path());
    constexpr int kChunks = 1000;
    for (int i = 0; i < kChunks; ++i) {
      ctx.check_cancel();
      os << work(i) << '\n';
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ctx.progress(i + 1, kChunks, "writing");
      ++chunksDone;
    }
    os.close();
    file.commit();
    return std::string(out);
  });
  QSignalSpy progress(&runner, &JobRunner::progressChanged);
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QTRY_VERIFY_WITH_TIMEOUT(chunksDone.load() >= 10, 10000);
  QCOMPARE(runner.state(), State::Running);
  QVERIFY2(QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden).size() == 1, "the temporary file exists while running");

  QElapsedTimer latency;
  latency.start();
  runner.cancel();
  QVERIFY(finished.wait(5000));
  const qint64 ms = latency.elapsed();
  QVERIFY2(ms < 1000, qPrintable(QStringLiteral("cancel took %1 ms").arg(ms)));
  QCOMPARE(runner.state(), State::Cancelled);
  QCOMPARE(finished.at(0).at(0).value<State>(), State::Cancelled);
  QVERIFY(!runner.result().has_value());
  QVERIFY(runner.resultAs<std::string>() == nullptr);
  QVERIFY(runner.errorMessage().isEmpty());
  QVERIFY(chunksDone.load() < 1000);
  // No output and no temporary left behind.
  QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
  QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
  // A cancelled job never reports 100.
  for (const auto& args : progress) QVERIFY(args.at(0).toInt() < 100);
}

void TestUiJobs::cancelIsAnOutcomeEvenIfTheJobReturns() {
  // A job that never looks at the token still ends Cancelled and hands over no result.
  std::atomic<bool> go{false};
  JobRunner runner(QStringLiteral("stubborn"), [&go](const JobContext&) -> std::any {
    while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 42;
  });
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QTRY_COMPARE_WITH_TIMEOUT(runner.state(), State::Running, 5000);
  runner.cancel();
  go = true;
  QVERIFY(finished.wait(5000));
  QCOMPARE(runner.state(), State::Cancelled);
  QVERIFY(!runner.result().has_value());
}

void TestUiJobs::failureIsReportedWithTheEngineMessage() {
  JobRunner runner(QStringLiteral("bad"), [](const JobContext& ctx) -> std::any {
    ctx.progress(1, 4, "reading");
    throw almagest::IoError("galaxies.txt", "line 17, column 3", "not a number: 'abc'");
  });
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QVERIFY(finished.wait(5000));
  QCOMPARE(runner.state(), State::Failed);
  QVERIFY(!runner.result().has_value());
  const QString msg = runner.errorMessage();
  QVERIFY2(msg.contains(QLatin1String("galaxies.txt")) && msg.contains(QLatin1String("line 17, column 3")) &&
               msg.contains(QLatin1String("not a number")),
           qPrintable(msg));
  QVERIFY(!msg.contains(QLatin1String("Internal error")));
}

void TestUiJobs::otherExceptionsAreInternalErrors() {
  JobRunner runner(QStringLiteral("bug"), [](const JobContext&) -> std::any {
    throw std::logic_error("index out of range");
  });
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QVERIFY(finished.wait(5000));
  QCOMPARE(runner.state(), State::Failed);
  QVERIFY(runner.errorMessage().contains(QLatin1String("Internal error")));
  QVERIFY(runner.errorMessage().contains(QLatin1String("index out of range")));
}

void TestUiJobs::queuedJobCancelledBeforeStartNeverRuns() {
  QThreadPool pool;
  pool.setMaxThreadCount(1);  // one job at a time, like a device queue
  JobRunner first(QStringLiteral("first"), [](const JobContext& ctx) -> std::any {
    for (;;) {
      ctx.check_cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::atomic<bool> secondRan{false};
  JobRunner second(QStringLiteral("second"), [&secondRan](const JobContext&) -> std::any {
    secondRan = true;
    return 1;
  });
  QSignalSpy firstDone(&first, &JobRunner::finished);
  QSignalSpy secondDone(&second, &JobRunner::finished);
  first.start(&pool);
  second.start(&pool);
  QTRY_COMPARE_WITH_TIMEOUT(first.state(), State::Running, 5000);
  QTest::qWait(100);
  QCOMPARE(second.state(), State::Queued);
  second.cancel();
  first.cancel();
  QVERIFY(firstDone.count() == 1 || firstDone.wait(5000));
  QVERIFY(secondDone.count() == 1 || secondDone.wait(5000));
  QCOMPARE(first.state(), State::Cancelled);
  QCOMPARE(second.state(), State::Cancelled);
  QVERIFY(!secondRan.load());
}

void TestUiJobs::destroyingARunningJobCancelsIt() {
  std::atomic<bool> stopped{false};
  auto* runner = new JobRunner(QStringLiteral("orphan"), [&stopped](const JobContext& ctx) -> std::any {
    try {
      for (;;) {
        ctx.check_cancel();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    } catch (const almagest::Cancelled&) {
      stopped = true;
      throw;
    }
  });
  runner->start();
  QTRY_COMPARE_WITH_TIMEOUT(runner->state(), State::Running, 5000);
  QElapsedTimer t;
  t.start();
  delete runner;  // cancels and waits for the worker
  QVERIFY(stopped.load());
  QVERIFY(t.elapsed() < 1000);
}

void TestUiJobs::engineJobMatchesBruteForcePairCount() {
  namespace syn = almagest::npcf::synthetic;
  constexpr double kBox = 100.0;
  auto data = std::make_shared<const almagest::io::Catalogue>(syn::neyman_scott(900, 10, 3.0, kBox, 17));
  auto randoms = std::make_shared<const almagest::io::Catalogue>(syn::uniform(1800, kBox, 18));
  almagest::npcf::NpcfConfig cfg;
  cfg.statistic = almagest::npcf::Statistic::TwoPoint;
  cfg.bins.rmin = 2.0;
  cfg.bins.rmax = 20.0;
  cfg.bins.nbins = 6;
  cfg.threads = 2;

  JobRunner runner(QStringLiteral("2pcf"), almagest::ui::makeNpcfJob(data, randoms, cfg));
  runner.setThreads(2);
  QSignalSpy progress(&runner, &JobRunner::progressChanged);
  QSignalSpy finished(&runner, &JobRunner::finished);
  runner.start();
  QVERIFY(finished.wait(30000));
  QVERIFY2(runner.state() == State::Completed, qPrintable(runner.errorMessage()));
  const auto* out = runner.resultAs<almagest::ui::NpcfOutputPtr>();
  QVERIFY(out && *out);
  const auto& r = (*out)->result;
  QCOMPARE(r.rows(), std::size_t(6));
  QCOMPARE(percents(progress).last(), 100);

  // Brute force over all points (data then randoms): pairs with rmin < d < rmax, per bin.
  std::vector<double> x(data->x), y(data->y), z(data->z);
  x.insert(x.end(), randoms->x.begin(), randoms->x.end());
  y.insert(y.end(), randoms->y.begin(), randoms->y.end());
  z.insert(z.end(), randoms->z.begin(), randoms->z.end());
  std::vector<std::uint64_t> pairs(6, 0);
  const double r2min = cfg.bins.rmin * cfg.bins.rmin, r2max = cfg.bins.rmax * cfg.bins.rmax;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      const double dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
      const double d2 = dx * dx + dy * dy + dz * dz;
      if (d2 <= r2min || d2 >= r2max) continue;
      ++pairs[static_cast<std::size_t>(cfg.bins.bin_of(std::sqrt(d2)))];
    }
  for (int b = 0; b < 6; ++b) QCOMPARE(r.tuples[static_cast<std::size_t>(b)], pairs[static_cast<std::size_t>(b)]);
  // Clustered data: xi = NN/RR is positive in the smallest bin.
  QVERIFY(r.estimator[0] > 0);
}

QTEST_GUILESS_MAIN(TestUiJobs)
#include "test_ui_jobs.moc"
