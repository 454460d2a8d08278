// Vetting stack candidates (issue 25): marks made with the keyboard shortcuts (R real, B bogus,
// U unmark) and notes survive a save and a reload into a new window that runs the same search;
// the ECSV file round-trips notes with quotes and spaces; a damaged file fails naming the file,
// the line and the column; rows that match no candidate are counted, not applied.
#include <QAction>
#include <QApplication>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>

#include <fstream>

#include "almagest/core/error.hpp"
#include "almagest/stack/synthetic.hpp"
#include "panels/LogPanel.hpp"
#include "stackview/StackWindow.hpp"
#include "stackview/Vetting.hpp"

using almagest::ui::StackWindow;
using State = almagest::ui::JobRunner::State;
namespace stk = almagest::stack;
namespace sv = almagest::ui::stackview;

namespace {

QString tmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

State waitJob(QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty() && !finished.wait(timeoutMs)) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

/// Three movers on a small stack, searched on a 9 x 9 grid: a handful of candidates.
bool loadAndSearch(StackWindow& w) {
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  stk::SyntheticConfig c;
  c.n_exp = 16;
  c.width = 64;
  c.height = 64;
  c.seed = 925;
  c.baseline_days = 8.0;
  c.movers = {stk::Mover{20, 20, 1.0, 0.5, 15, 0}, stk::Mover{40, 44, -1.5, 0.0, 13, 0}, stk::Mover{30, 12, 0.5, 1.5, 12, 0}};
  if (!w.newSyntheticStack(c) || waitJob(finished) != State::Completed) return false;
  sv::SearchSettings s;
  s.vxMin = s.vyMin = -2;
  s.vxMax = s.vyMax = 2;
  s.nvx = s.nvy = 9;
  s.minObs = 8;
  s.bestZMap = false;
  w.setSearchSettings(s);
  return w.runSearch() && waitJob(finished) == State::Completed;
}

/// Triggers the window's action bound to `key` (Xvfb has no window manager to make the window
/// active, so key events would not reach the shortcut map; the binding itself is checked here).
bool press(StackWindow& w, const char* key) {
  for (QAction* a : w.findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(QString::fromLatin1(key)) && a->isEnabled()) {
      a->trigger();
      QCoreApplication::processEvents();
      return true;
    }
  return false;
}

}  // namespace

class TestVetting : public QObject {
  Q_OBJECT

private slots:
  void marksSurviveSaveAndReload();
  void ecsvRoundTripsNotes();
  void damagedFileNamesLineAndColumn();
};

void TestVetting::marksSurviveSaveAndReload() {
  const QString path = tmpRoot() + QStringLiteral("/test_vetting.ecsv");
  QFile::remove(path);
  std::vector<sv::Vet> marks;
  {
    StackWindow w;
    w.setInteractiveErrors(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(loadAndSearch(w));
    const int n = int(w.candidates().size());
    QVERIFY2(n >= 3, qPrintable(QStringLiteral("%1 candidates").arg(n)));
    // Keyboard: R marks the selected candidate real and moves to the next, B bogus, U clears.
    QVERIFY(w.selectCandidate(0));
    w.candidateTable()->setFocus();
    QVERIFY(press(w, "R"));
    QCOMPARE(w.vetting()[0].verdict, sv::Verdict::Real);
    QCOMPARE(w.selectedCandidate(), 1);
    QVERIFY(press(w, "B"));
    QCOMPARE(w.vetting()[1].verdict, sv::Verdict::Bogus);
    QCOMPARE(w.selectedCandidate(), 2);
    QVERIFY(press(w, "B"));
    QVERIFY(w.selectCandidate(2));
    QVERIFY(press(w, "U"));
    QCOMPARE(w.vetting()[2].verdict, sv::Verdict::None);
    // A note typed in the note field (N focuses it).
    QVERIFY(w.selectCandidate(1));
    QVERIFY(press(w, "N"));
    QVERIFY(w.noteEdit()->isEnabled());  // focus needs an active window, which Xvfb without a WM never gives
    QTest::keyClicks(w.noteEdit(), QStringLiteral("bad column \"C3\", near edge"));
    QTest::keyClick(w.noteEdit(), Qt::Key_Return);
    QCOMPARE(w.vetting()[1].note, QStringLiteral("bad column \"C3\", near edge"));
    QVERIFY(w.setCandidateNote(0, QStringLiteral("clear track")));
    QVERIFY(w.saveVetting(path));
    marks = w.vetting();
  }
  StackWindow w2;
  w2.setInteractiveErrors(false);
  QVERIFY(loadAndSearch(w2));
  QCOMPARE(w2.vetting().size(), marks.size());
  QCOMPARE(w2.vetting()[0].verdict, sv::Verdict::None);
  QVERIFY(w2.loadVetting(path));
  QVERIFY(w2.vetting() == marks);
  QVERIFY(w2.logPanel()->text().contains(QStringLiteral("%1 of its %1 rows").arg(marks.size())));
  // The table shows the verdict.
  QVERIFY(w2.selectCandidate(0));
  QCOMPARE(w2.noteEdit()->text(), QStringLiteral("clear track"));
  QFile::remove(path);
}

void TestVetting::ecsvRoundTripsNotes() {
  std::vector<stk::Candidate> cands(3);
  for (int i = 0; i < 3; ++i) {
    cands[std::size_t(i)].x = 10 + i;
    cands[std::size_t(i)].y = 20 - i;
    cands[std::size_t(i)].vx = 0.1 * i - 0.37;
    cands[std::size_t(i)].vy = 1.0 / 3.0 + i;
    cands[std::size_t(i)].z = 7.25 + i;
    cands[std::size_t(i)].flux = 123.5 * (i + 1);
    cands[std::size_t(i)].obs = 14 + i;
    cands[std::size_t(i)].members = i + 1;
  }
  std::vector<sv::Vet> vets = {{sv::Verdict::Real, QStringLiteral("say \"hi\"  twice")},
                               {sv::Verdict::None, QString()},
                               {sv::Verdict::Bogus, QStringLiteral("ünïcode, ok")}};
  const std::string text = sv::vettingEcsv(cands, vets, "stack \"A\"");
  QVERIFY(text.rfind("# %ECSV 1.0\n", 0) == 0);
  const auto rows = sv::parseVettingEcsv(text, "mem.ecsv");
  QCOMPARE(rows.size(), std::size_t(3));
  for (std::size_t i = 0; i < 3; ++i) {
    QCOMPARE(rows[i].c.x, cands[i].x);
    QCOMPARE(rows[i].c.vx, cands[i].vx);  // %.17g round-trips exactly
    QCOMPARE(rows[i].c.vy, cands[i].vy);
    QVERIFY(rows[i].vet == vets[i]);
  }
  // A row that matches nothing is not applied.
  std::vector<stk::Candidate> other = cands;
  other[1].vx += 0.25;
  std::vector<sv::Vet> applied;
  QCOMPARE(sv::applyVetting(rows, other, applied), 2);
  QCOMPARE(applied[1].verdict, sv::Verdict::None);
}

void TestVetting::damagedFileNamesLineAndColumn() {
  std::vector<stk::Candidate> cands(2);
  std::string text = sv::vettingEcsv(cands, {{}, {}}, "s");
  auto expectError = [&](const std::string& t, const QString& field) {
    try {
      (void)sv::parseVettingEcsv(t, "damaged.ecsv");
    } catch (const almagest::IoError& e) {
      QVERIFY2(QString::fromStdString(e.field()).contains(field), e.what());
      QCOMPARE(QString::fromStdString(e.file()), QStringLiteral("damaged.ecsv"));
      return;
    }
    QFAIL(qPrintable(QStringLiteral("no error for field %1").arg(field)));
  };
  std::string badNumber = text;
  badNumber.replace(badNumber.rfind("\n0 0 "), 5, "\n0 zz ");
  expectError(badNumber, QStringLiteral(": y"));
  std::string badVerdict = text;
  badVerdict.replace(badVerdict.rfind("\"\" \"\""), 5, "\"maybe\" \"\"");
  expectError(badVerdict, QStringLiteral("verdict"));
  expectError("x y\n1 2\n", QStringLiteral("line 1"));
  std::string unterminated = text;
  unterminated.pop_back();
  unterminated.pop_back();
  expectError(unterminated, QStringLiteral("line"));
}

QTEST_MAIN(TestVetting)
#include "test_vetting.moc"
