// The application's one job queue (ui/app/JobQueue) and its panel: jobs of one GPU run one at a
// time in submission order while CPU jobs run beside them; Cancel during a running engine job
// leaves no output file and no result (a cancelled re-run keeps the previous result shown); the
// panel lists every job with its stage, percent, elapsed and remaining time and cancels per row;
// a failed job's engine message reaches the panel and the queue's failure signal.
#include <QDir>
#include <QElapsedTimer>
#include <QOpenGLContext>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "MainWindow.hpp"
#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "app/JobQueue.hpp"
#include "app/JobQueuePanel.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/JobPanel.hpp"
#include "views/CorrelationChart.hpp"
#include "views/VtkView.hpp"

using almagest::JobContext;
using almagest::ui::JobQueue;
using almagest::ui::JobQueuePanel;
using almagest::ui::JobRunner;
using almagest::ui::MainWindow;
using State = JobRunner::State;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

QString demoFile(const char* name) {
  return QStringLiteral(ALMAGEST_SOURCE_DIR "/resources/demo/") + QLatin1String(name);
}

// A record of which job ran when, written from the workers.
struct Timeline {
  std::mutex mutex;
  std::vector<std::string> events;
  void add(std::string e) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::move(e));
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
};

// A job that records its start and end and, while `hold` is set, waits (checking cancel).
JobRunner::Job recordingJob(Timeline& t, std::string name, std::atomic<bool>* hold, int ms = 50) {
  return [&t, name, hold, ms](const JobContext& ctx) -> std::any {
    t.add(name + " start");
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while ((hold && hold->load()) || std::chrono::steady_clock::now() < end) {
      ctx.check_cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    t.add(name + " end");
    return std::any(name);
  };
}

bool glAvailable() {
  if (QGuiApplication::platformName() != QLatin1String("xcb")) return false;
  QOpenGLContext ctx;
  ctx.setFormat(almagest::ui::VtkView::defaultFormat());
  return ctx.create() && ctx.format().version() >= qMakePair(3, 2);
}

}  // namespace

class TestAppJobs : public QObject {
  Q_OBJECT

private slots:
  void deviceOfABackend();
  void twoJobsOnOneDeviceRunInOrder();
  void cpuJobsRunBesideAGpuJob();
  void cancelDuringARunningEngineJobLeavesNoFile();
  void panelListsJobsAndCancelsPerRow();
  void failedJobCarriesTheEngineMessage();
  void remainingTimeFromElapsedAndPercent();
  void cancelledRerunKeepsThePreviousResult();
};

void TestAppJobs::deviceOfABackend() {
  QCOMPARE(JobQueue::deviceFor(QStringLiteral("cpu")), QStringLiteral("cpu"));
  QCOMPARE(JobQueue::deviceFor(QStringLiteral("cuda")), QStringLiteral("cuda:0"));
  QCOMPARE(JobQueue::deviceFor(QStringLiteral("cuda:3")), QStringLiteral("cuda:3"));
  QCOMPARE(JobQueue::deviceFor(QStringLiteral("nonsense")), QStringLiteral("cpu"));
  const QString autoDevice = JobQueue::deviceFor(QStringLiteral("auto"));
  QVERIFY2(autoDevice == QLatin1String("cpu") || autoDevice.startsWith(QLatin1String("cuda:")),
           qPrintable(autoDevice));
}

void TestAppJobs::twoJobsOnOneDeviceRunInOrder() {
  JobQueue queue;
  Timeline t;
  std::atomic<bool> holdA{true};
  JobRunner a(QStringLiteral("A"), recordingJob(t, "A", &holdA));
  JobRunner b(QStringLiteral("B"), recordingJob(t, "B", nullptr));
  QSignalSpy finishedB(&b, &JobRunner::finished);
  queue.submit(&a, QStringLiteral("cuda:0"));
  queue.submit(&b, QStringLiteral("cuda:0"));
  QTRY_COMPARE_WITH_TIMEOUT(a.state(), State::Running, 5000);
  // While A holds the device, B stays queued (give it every chance to start wrongly).
  QTest::qWait(300);
  QCOMPARE(b.state(), State::Queued);
  QCOMPARE(queue.activeCount(), 2);
  holdA = false;
  QVERIFY(finishedB.wait(5000));
  QCOMPARE(a.state(), State::Completed);
  QCOMPARE(b.state(), State::Completed);
  QCOMPARE(t.get(), (std::vector<std::string>{"A start", "A end", "B start", "B end"}));
  QCOMPARE(queue.activeCount(), 0);

  // A second device is independent of the first: its job runs while cuda:0 is held.
  Timeline t2;
  std::atomic<bool> hold{true};
  JobRunner c(QStringLiteral("C"), recordingJob(t2, "C", &hold));
  JobRunner d(QStringLiteral("D"), recordingJob(t2, "D", nullptr));
  queue.submit(&c, QStringLiteral("cuda:0"));
  queue.submit(&d, QStringLiteral("cuda:1"));
  QTRY_COMPARE_WITH_TIMEOUT(d.state(), State::Completed, 5000);
  QCOMPARE(c.state(), State::Running);
  hold = false;
  QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Completed, 5000);
}

void TestAppJobs::cpuJobsRunBesideAGpuJob() {
  JobQueue queue;
  Timeline t;
  std::atomic<bool> hold{true};
  JobRunner gpu(QStringLiteral("gpu"), recordingJob(t, "gpu", &hold));
  JobRunner cpu1(QStringLiteral("cpu1"), recordingJob(t, "cpu1", nullptr, 100));
  JobRunner cpu2(QStringLiteral("cpu2"), recordingJob(t, "cpu2", nullptr, 100));
  queue.submit(&gpu, QStringLiteral("cuda:0"));
  queue.submit(&cpu1, QStringLiteral("cpu"));
  queue.submit(&cpu2, QStringLiteral("cpu"));
  QTRY_COMPARE_WITH_TIMEOUT(cpu1.state(), State::Completed, 5000);
  QTRY_COMPARE_WITH_TIMEOUT(cpu2.state(), State::Completed, 5000);
  QCOMPARE(gpu.state(), State::Running);  // still holding its device
  hold = false;
  QTRY_COMPARE_WITH_TIMEOUT(gpu.state(), State::Completed, 5000);
}

void TestAppJobs::cancelDuringARunningEngineJobLeavesNoFile() {
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/app_jobs_XXXXXX"));
  QVERIFY(tmp.isValid());
  // A 3pCF of the demo catalogues with wide bins: seconds of counting, cancellable between chunks.
  almagest::schema::Values v;
  v["stat"] = std::vector<std::string>{"3pcf"};
  v["data"] = demoFile("data.txt").toStdString();
  v["randoms"] = demoFile("randoms.txt").toStdString();
  v["rmin"] = 2.0;
  v["rmax"] = 50.0;
  v["nbins"] = std::int64_t(10);
  v["output"] = tmp.filePath(QStringLiteral("zeta.h5")).toStdString();
  std::shared_ptr<almagest::jobs::Job> job = almagest::jobs::make_job({"npcf", v, "", ""});
  almagest::jobs::check_job_files(*job, "");

  JobQueue queue;
  JobRunner runner(QStringLiteral("3pcf"), [job](const JobContext& ctx) -> std::any {
    return std::any(std::shared_ptr<almagest::jobs::Outcome>(job->run(ctx, {})));
  });
  QSignalSpy finished(&runner, &JobRunner::finished);
  const int id = queue.submit(&runner, QStringLiteral("cpu"));
  QTRY_VERIFY_WITH_TIMEOUT(runner.percent() > 0 || runner.isFinished(), 20000);
  QVERIFY2(!runner.isFinished(), "the job finished before it could be cancelled");
  QVERIFY(queue.cancel(id));
  QVERIFY(finished.count() == 1 || finished.wait(5000));
  QCOMPARE(runner.state(), State::Cancelled);
  QVERIFY(!runner.result().has_value());
  QCOMPARE(queue.entry(id)->state, State::Cancelled);
  // No output and no temporary left behind.
  const QStringList left = QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
  QVERIFY2(left.isEmpty(), qPrintable(left.join(QLatin1Char(' '))));
}

void TestAppJobs::panelListsJobsAndCancelsPerRow() {
  JobQueue queue;
  JobQueuePanel panel(queue);
  Timeline t;
  std::atomic<bool> hold{true};
  JobRunner a(QStringLiteral("held job"), [&hold](const JobContext& ctx) -> std::any {
    for (int i = 0; hold; ++i) {
      ctx.check_cancel();
      ctx.progress(std::min(i, 40), 100, "counting");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return {};
  });
  JobRunner b(QStringLiteral("waiting job"), recordingJob(t, "b", nullptr));
  queue.submit(&a, QStringLiteral("cuda:0"));
  const int idB = queue.submit(&b, QStringLiteral("cuda:0"));
  QCOMPARE(panel.table()->rowCount(), 2);
  QTRY_COMPARE_WITH_TIMEOUT(panel.table()->item(0, 4)->text(), QStringLiteral("counting"), 5000);
  QCOMPARE(panel.table()->item(0, 0)->text(), QStringLiteral("held job"));
  QCOMPARE(panel.table()->item(0, 2)->text(), QStringLiteral("cuda:0"));
  QCOMPARE(panel.table()->item(1, 3)->text(), JobRunner::stateName(State::Queued));
  QTRY_VERIFY_WITH_TIMEOUT(panel.table()->item(0, 7)->text().endsWith(QLatin1String(" s")), 5000);

  // Cancel the queued job from its row: it never runs.
  auto* cancelB = panel.findChild<QPushButton*>(QStringLiteral("cancelJob%1").arg(idB));
  QVERIFY(cancelB);
  QTest::mouseClick(cancelB, Qt::LeftButton);
  hold = false;
  QTRY_COMPARE_WITH_TIMEOUT(b.state(), State::Cancelled, 5000);
  QTRY_COMPARE_WITH_TIMEOUT(a.state(), State::Completed, 5000);
  QVERIFY(t.get().empty());
  QTRY_COMPARE_WITH_TIMEOUT(panel.table()->item(1, 3)->text(), JobRunner::stateName(State::Cancelled), 5000);
  QCOMPARE(panel.table()->item(0, 3)->text(), JobRunner::stateName(State::Completed));
  QVERIFY(!panel.table()->cellWidget(0, 8));  // no Cancel on a finished row
  queue.clearFinished();
  QCOMPARE(panel.table()->rowCount(), 0);
}

void TestAppJobs::failedJobCarriesTheEngineMessage() {
  JobQueue queue;
  JobQueuePanel panel(queue);
  QSignalSpy failed(&queue, &JobQueue::jobFailed);
  JobRunner r(QStringLiteral("bad"), [](const JobContext&) -> std::any {
    throw almagest::IoError("cat.fits", "RA", "column not found");
  });
  queue.submit(&r, QStringLiteral("cpu"));
  QVERIFY(failed.wait(5000));
  const QString expected = QString::fromUtf8(almagest::IoError("cat.fits", "RA", "column not found").what());
  QCOMPARE(failed.at(0).at(3).toString(), expected);
  QVERIFY(panel.table()->item(0, 3)->text().contains(expected));
}

void TestAppJobs::remainingTimeFromElapsedAndPercent() {
  QCOMPARE(JobQueuePanel::remainingSeconds(10.0, 25), 30.0);
  QCOMPARE(JobQueuePanel::remainingSeconds(10.0, 0), -1.0);
  QCOMPARE(JobQueuePanel::remainingSeconds(10.0, 100), 0.0);
  QCOMPARE(JobQueuePanel::formatDuration(3.24), QStringLiteral("3.2 s"));
  QCOMPARE(JobQueuePanel::formatDuration(125), QStringLiteral("2 min 05 s"));
  QCOMPARE(JobQueuePanel::formatDuration(3720), QStringLiteral("1 h 02 min"));
}

void TestAppJobs::cancelledRerunKeepsThePreviousResult() {
  if (!glAvailable()) QSKIP("needs the xcb platform with OpenGL 3.2 under Xvfb");
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
  QVERIFY(w.loadCatalogues(demoFile("data.txt"), demoFile("randoms.txt")));
  QVERIFY(loaded.wait(20000));
  QSignalSpy finished(&w, &MainWindow::jobFinished);
  almagest::npcf::NpcfConfig cfg = w.jobPanel()->config();
  cfg.statistic = almagest::npcf::Statistic::TwoPoint;
  cfg.bins.rmin = 2;
  cfg.bins.rmax = 20;
  cfg.bins.nbins = 8;
  w.jobPanel()->setConfig(cfg);
  QVERIFY(w.runJob());
  QVERIFY(finished.wait(30000));
  QCOMPARE(finished.at(0).at(0).value<State>(), State::Completed);
  const auto first = w.result();
  QVERIFY(first);
  const int points = w.chart()->pointCount();
  QVERIFY(points > 0);

  cfg.statistic = almagest::npcf::Statistic::ThreePoint;
  cfg.bins.rmax = 50;
  cfg.bins.nbins = 10;
  w.jobPanel()->setConfig(cfg);
  QVERIFY(w.runJob());
  JobRunner* job = w.currentJob();
  QTRY_VERIFY_WITH_TIMEOUT(job->percent() > 0 || job->isFinished(), 20000);
  QVERIFY2(!job->isFinished(), "the job finished before it could be cancelled");
  w.cancelJob();
  QVERIFY(finished.count() == 2 || finished.wait(5000));
  QCOMPARE(finished.at(1).at(0).value<State>(), State::Cancelled);
  QVERIFY(w.result() == first);  // the previous result is still the window's
  QCOMPARE(w.chart()->pointCount(), points);
}

QTEST_MAIN(TestAppJobs)
#include "test_app_jobs.moc"
