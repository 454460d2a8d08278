// The Moving objects window's search form is the stack job schema's: one editor per search field
// (the window supplies op, stack, output; the backend is its combo box), a common-curve file set in
// the form reaches the job (the candidates equal the job layer's `stack search --common-curve` on
// the same file stack), and a bad value shows make_stack_job's message in the visible label.
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "almagest/core/error.hpp"
#include "almagest/stack/job.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "panels/SchemaForm.hpp"
#include "stackview/SearchPanel.hpp"
#include "stackview/StackWindow.hpp"

using almagest::ui::SchemaForm;
using almagest::ui::StackWindow;
using State = almagest::ui::JobRunner::State;
namespace stk = almagest::stack;

namespace {
QString tmpRoot() {
  const QByteArray t = qgetenv("ALMAGEST_TEST_TMP");
  return t.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(t);
}
State waitJob(StackWindow& w, QSignalSpy& finished) {
  if (finished.isEmpty() && !finished.wait(120000)) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}
void setText(SchemaForm* f, const char* key, const QString& text) {
  auto* e = f->editor(QString::fromLatin1(key));
  QVERIFY2(e, key);
  auto* l = qobject_cast<QLineEdit*>(e);
  if (!l) l = e->findChild<QLineEdit*>();
  QVERIFY2(l, key);
  l->setText(text);
  l->textEdited(text);
}
}  // namespace

class TestUiStackForm : public QObject {
  Q_OBJECT
private slots:
  void oneEditorPerSearchField();
  void commonCurveReachesTheJob();
  void badValueShowsSchemaMessage();
  void validationIsInlineRunGreyed();
};

void TestUiStackForm::oneEditorPerSearchField() {
  StackWindow w;
  SchemaForm* f = w.searchPanel()->form();
  const QStringList hidden = almagest::ui::stackview::SearchPanel::hiddenKeys();
  int n = 0;
  for (const auto* field : stk::stack_schema().fields_for("search")) {
    const QString key = QString::fromStdString(field->key);
    if (hidden.contains(key)) {
      QVERIFY2(!f->editor(key) || !f->editor(key)->isVisibleTo(f), qPrintable(key));
      continue;
    }
    QVERIFY2(f->editor(key), qPrintable(QStringLiteral("no editor for %1").arg(key)));
    ++n;
  }
  QVERIFY(n >= 20);
  QVERIFY(w.searchPanel()->backendCombo());  // the schema's backend
}

void TestUiStackForm::commonCurveReachesTheJob() {
  QTemporaryDir tmp(tmpRoot() + QStringLiteral("/ui_stack_form_XXXXXX"));
  QVERIFY(tmp.isValid());
  stk::SyntheticConfig c;
  c.n_exp = 12;
  c.width = c.height = 64;
  c.seed = 777;
  c.baseline_days = 4.0;
  c.common_curve = true;
  c.movers = {stk::Mover{22.0, 30.0, 1.5, -1.0, 14.0, 0}};
  const stk::SyntheticStack syn = stk::make_synthetic(c);
  const std::string stackPath = tmp.filePath(QStringLiteral("s.h5")).toStdString();
  const std::string curvePath = tmp.filePath(QStringLiteral("curve.txt")).toStdString();
  stk::write_stack_hdf5(stackPath, syn.stack);
  stk::files::write_common_curve(curvePath, syn.stack.mjd, syn.curve_dx, syn.curve_dy);

  // The CLI's job: `stack search --stack s.h5 --common-curve curve.txt --vx-range ... -o c.ecsv`.
  almagest::jobs::JobRequest req{"stack",
                                 {{"op", std::string("search")}, {"stack", stackPath}, {"common-curve", curvePath},
                                  {"vx-range", std::string("-3,3")}, {"vy-range", std::string("-3,3")},
                                  {"grid", std::string("13")}, {"min-obs", std::string("8")},
                                  {"output", tmp.filePath(QStringLiteral("cli.ecsv")).toStdString()}},
                                 "", ""};
  const stk::StackOutcome cli = stk::run_stack_job(stk::make_stack_job(req), almagest::JobContext{}, {});

  StackWindow w;
  w.setInteractiveErrors(false);
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.openStack(QString::fromStdString(stackPath)));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  SchemaForm* f = w.searchPanel()->form();
  almagest::schema::Values v{{"vx-range", std::string("-3,3")}, {"vy-range", std::string("-3,3")},
                             {"grid", std::string("13")}, {"min-obs", std::string("8")}};
  auto run = [&](const almagest::schema::Values& vals) {
    w.searchPanel()->setValues(vals);
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    if (!w.runSearch()) return false;
    return waitJob(w, finished) == State::Completed;
  };
  QVERIFY(run(v));
  const auto without = w.candidates();
  v["common-curve"] = curvePath;
  QVERIFY(run(v));
  QVERIFY(!f->problems().size());
  const auto& with = w.candidates();
  QCOMPARE(with.size(), cli.result.candidates.size());
  QVERIFY(!with.empty());
  for (std::size_t i = 0; i < with.size(); ++i) {
    QCOMPARE(with[i].x, cli.result.candidates[i].x);
    QCOMPARE(with[i].y, cli.result.candidates[i].y);
    QCOMPARE(with[i].v, cli.result.candidates[i].v);
    QCOMPARE(with[i].z, cli.result.candidates[i].z);
  }
  // The curve matters: without it the best track is a different (worse) one.
  QVERIFY(without.empty() || without.front().z < with.front().z);
}

void TestUiStackForm::badValueShowsSchemaMessage() {
  StackWindow w;
  w.setInteractiveErrors(false);
  SchemaForm* f = w.searchPanel()->form();
  setText(f, "vx-range", QStringLiteral("abc"));
  QString expected;
  try {
    almagest::jobs::JobRequest req{"stack", f->values(), "", ""};
    req.values["op"] = std::string("search");
    req.values["stack"] = std::string("x.h5");
    req.values["output"] = std::string("x.ecsv");
    (void)stk::make_stack_job(req);
  } catch (const almagest::ConfigError& e) {
    expected = QString::fromUtf8(e.what());
  }
  QVERIFY(!expected.isEmpty());
  QVERIFY(expected.contains(QStringLiteral("vx-range")));
  QTRY_VERIFY(!f->problems().isEmpty());
  QCOMPARE(f->problems(), expected);
  QVERIFY(w.checkSearchForm() == expected);
}

void TestUiStackForm::validationIsInlineRunGreyed() {
  // Interactive errors on (as for a user): a bad value still opens no dialog. The problem shows
  // under its field, Run (button and menu action) is greyed, and Run comes back once it is fixed.
  StackWindow w;
  w.setConfirmCloseDuringJob(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.newSyntheticStack(4, 24, 24, 11, 1, 10.0));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  w.setSearchSettings(almagest::ui::stackview::SearchSettings{});
  QVERIFY(w.checkSearchForm().isEmpty());
  SchemaForm* f = w.searchPanel()->form();
  QPushButton* run = w.searchPanel()->runButton();
  QAction* runAction = nullptr;
  for (QAction* a : w.findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+R"))) runAction = a;
  QVERIFY(runAction);
  QTRY_VERIFY(run->isEnabled());
  QVERIFY(runAction->isEnabled());
  auto* vxEdit = qobject_cast<QLineEdit*>(f->editor(QStringLiteral("vx-range")));
  if (!vxEdit) vxEdit = f->editor(QStringLiteral("vx-range"))->findChild<QLineEdit*>();
  QVERIFY(vxEdit);
  const QString original = vxEdit->text();
  setText(f, "vx-range", QStringLiteral("abc"));
  QTRY_VERIFY(!run->isEnabled());
  QVERIFY(!runAction->isEnabled());
  // The form drops the unparsable text, so the job layer names the pair: the message sits under
  // one of the two range fields, not in a dialog.
  auto inline_ = [f] {
    return !f->fieldProblem(QStringLiteral("vx-range")).isEmpty() || !f->fieldProblem(QStringLiteral("vy-range")).isEmpty();
  };
  QVERIFY2(inline_(), qPrintable(f->problems()));
  // Forcing a run (the shortcut path) is refused inline too: no message box appears.
  QVERIFY(!w.runSearch());
  QTest::qWait(50);
  QVERIFY(w.findChildren<QMessageBox*>().isEmpty());
  QVERIFY(inline_());
  setText(f, "vx-range", original);
  QTRY_VERIFY2(run->isEnabled(), qPrintable(f->problems()));
  QVERIFY(runAction->isEnabled());
  QVERIFY(!inline_());
  QVERIFY(f->problems().isEmpty());
}

QTEST_MAIN(TestUiStackForm)
#include "test_ui_stack_form.moc"
