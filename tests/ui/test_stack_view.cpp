// The exposure viewer and the Moving objects window's fixes (issue 25):
//  - StackImageView draws data y UP (row 0 at the bottom, as FITS / DS9): known pixels land at
//    the expected widget positions; the wheel zooms about the pointer (the pixel under it stays),
//    a drag pans by the dragged distance, double-click fits again;
//  - the track overlay is at least 3 px wide (counted across it in the rendered scene);
//  - the best-Z PNG written by the window has the candidate circles (pixels on each circle are
//    the circle colour, the centre is not), y up;
//  - the coadded stamp is shown at least 6 screen pixels per stamp pixel;
//  - a synthetic stack whose movers are outside the search grid (4.75 px/day, the grid +-4)
//    widens the grid to cover them, and the default search then finds the mover;
//  - a plain FITS image opened as a stack says what a stack must be and what the file holds.
#include <QApplication>
#include <QLabel>
#include <QSignalSpy>
#include <QtTest>

#include <fitsio.h>

#include <cmath>

#include "almagest/core/error.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "stackview/SearchPanel.hpp"
#include "stackview/StackImageView.hpp"
#include "stackview/StackReach.hpp"
#include "panels/LogPanel.hpp"
#include "stackview/StackWindow.hpp"

using almagest::ui::JobRunner;
using almagest::ui::StackWindow;
using almagest::ui::stackview::StackImageView;
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

/// A seeded grey test image whose pixel (x, y) has a value unique to it.
QImage gradientImage(int w, int h) {
  QImage img(w, h, QImage::Format_RGB32);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) img.setPixel(x, y, qRgb(x * 255 / (w - 1), y * 255 / (h - 1), 77));
  return img;
}

bool isOrange(QRgb c) { return qRed(c) > 220 && qGreen(c) > 110 && qGreen(c) < 190 && qBlue(c) < 90; }

}  // namespace

class TestStackView : public QObject {
  Q_OBJECT

private slots:
  void yUpMapsKnownPixels();
  void wheelZoomsAboutPointerDragPans();
  void trackIsWide();
  void reachCoversMovers();
  void windowExportsCirclesStampsAndWidensGrid();
  void plainFitsImageSaysWhatWasExpected();
};

void TestStackView::yUpMapsKnownPixels() {
  StackImageView v;
  v.resize(400, 200);
  v.setImage(gradientImage(40, 20));  // fit scale 10
  QCOMPARE(v.scale(), 10.0);
  // Pixel (0, 0) is drawn at the BOTTOM left; (39, 19) at the top right.
  const QPointF p00 = v.toWidget({0, 0}), p_top = v.toWidget({39, 19});
  QVERIFY(std::abs(p00.x() - 5.0) < 1e-9 && std::abs(p00.y() - 195.0) < 1e-9);
  QVERIFY(std::abs(p_top.x() - 395.0) < 1e-9 && std::abs(p_top.y() - 5.0) < 1e-9);
  const QPointF back = v.toImage({5.0, 195.0});
  QVERIFY(std::abs(back.x()) < 1e-9 && std::abs(back.y()) < 1e-9);
  // The painted widget has the data's row 0 at the bottom.
  const QImage shot = v.grab().toImage();
  const QRgb bottom = shot.pixel(5, 195), top = shot.pixel(5, 5);
  QCOMPARE(qGreen(bottom), 0);    // data y = 0
  QCOMPARE(qGreen(top), 255);     // data y = 19
  v.setYUp(false);
  QVERIFY(std::abs(v.toWidget({0, 0}).y() - 5.0) < 1e-9);
}

void TestStackView::wheelZoomsAboutPointerDragPans() {
  StackImageView v;
  v.resize(400, 200);
  v.setImage(gradientImage(40, 20));
  v.show();
  QVERIFY(QTest::qWaitForWindowExposed(&v));
  const QPointF at(100.0, 60.0);
  const QPointF under = v.toImage(at);
  QWheelEvent wheel(at, v.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(&v, &wheel);
  QVERIFY(std::abs(v.zoom() - 1.5625) < 1e-12);  // two notches of 1.25
  const QPointF still = v.toImage(at);
  QVERIFY2(std::hypot(still.x() - under.x(), still.y() - under.y()) < 1e-9, "the pixel under the pointer moved");
  // Drag 50 px right and 30 px down: the image follows the pointer.
  const QPointF before = v.toWidget({10, 10});
  QTest::mousePress(&v, Qt::LeftButton, Qt::NoModifier, QPoint(200, 100));
  QTest::mouseMove(&v, QPoint(230, 118));
  QTest::mouseMove(&v, QPoint(250, 130));
  QTest::mouseRelease(&v, Qt::LeftButton, Qt::NoModifier, QPoint(250, 130));
  const QPointF after = v.toWidget({10, 10});
  QVERIFY2(std::abs(after.x() - before.x() - 50) < 1e-6 && std::abs(after.y() - before.y() - 30) < 1e-6,
           qPrintable(QStringLiteral("moved by (%1, %2)").arg(after.x() - before.x()).arg(after.y() - before.y())));
  // A click without moving is a click, not a pan.
  QSignalSpy clicks(&v, &StackImageView::clicked);
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(200, 100));
  QCOMPARE(clicks.size(), 1);
  QTest::mouseDClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(200, 100));
  QCOMPARE(v.zoom(), 1.0);
}

void TestStackView::trackIsWide() {
  StackImageView v;
  QImage black(64, 64, QImage::Format_RGB32);
  black.fill(Qt::black);
  v.setImage(black);
  v.setTrack({QPointF(10, 32), QPointF(54, 32)});  // horizontal, y = 32
  const QImage scene = v.renderScene(4);
  QCOMPARE(scene.size(), QSize(256, 256));
  // Count orange pixels down the column through the track's middle.
  int orange = 0;
  for (int y = 0; y < scene.height(); ++y) orange += isOrange(scene.pixel(128, y)) ? 1 : 0;
  QVERIFY2(orange >= 3, qPrintable(QStringLiteral("track %1 px wide").arg(orange)));
  // y up: data y = 32 is at scene row (64 - 0.5 - 32) * 4 = 126.
  QVERIFY(isOrange(scene.pixel(128, 126)));
}

void TestStackView::reachCoversMovers() {
  sv::SearchSettings s;  // the schema's default grid, +-4 px/day
  const std::vector<stk::Mover> movers = {stk::Mover{40, 40, 4.75, -1.0, 10, 0}, stk::Mover{60, 50, -0.5, 3.0, 10, 0}};
  QVERIFY(!sv::gridCovers(s, movers));
  const sv::SearchSettings w = sv::coveringGrid(s, movers, 4.0);
  QVERIFY(sv::gridCovers(w, movers));
  QCOMPARE(w.vxMax, 5.25);  // 1.1 * 4.75 = 5.225, up to a multiple of 0.25
  QCOMPARE(w.nvx % 2, 1);
  QVERIFY((w.vxMax - w.vxMin) / (w.nvx - 1) * 4.0 <= 1.0 + 1e-12);  // <= 1 px drift per step
  // A covering grid is kept as it is.
  const sv::SearchSettings same = sv::coveringGrid(w, movers, 4.0);
  QCOMPARE(same.vxMax, w.vxMax);
  QCOMPARE(same.nvx, w.nvx);
}

void TestStackView::windowExportsCirclesStampsAndWidensGrid() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.setConfirmCloseDuringJob(false);
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  stk::SyntheticConfig c;
  c.n_exp = 16;
  c.width = 96;
  c.height = 80;
  c.seed = 2511;
  c.baseline_days = 4.0;
  c.movers = {stk::Mover{30.0, 30.0, 4.75, 1.0, 14.0, 0}};  // outside the default +-4 grid
  QVERIFY(w.newSyntheticStack(c));
  QCOMPARE(waitJob(finished), State::Completed);
  const sv::SearchSettings s = w.searchSettings();
  QVERIFY2(s.vxMax >= 4.75 && s.vxMin <= -4.75, qPrintable(QStringLiteral("grid vx %1..%2").arg(s.vxMin).arg(s.vxMax)));
  QVERIFY(w.logPanel()->text().contains(QStringLiteral("widened")));
  QVERIFY(w.runSearch());
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(!w.candidates().empty());
  const auto& best = w.candidates().front();
  QVERIFY2(std::abs(best.x - 30) <= 1 && std::abs(best.y - 30) <= 1 && std::abs(best.vx - 4.75) < 0.3,
           qPrintable(QStringLiteral("best (%1, %2) v (%3, %4)").arg(best.x).arg(best.y).arg(best.vx).arg(best.vy)));

  // The stamp: at least 6 screen pixels per stamp pixel.
  QVERIFY(w.selectCandidate(0));
  const QPixmap stamp = w.findChild<QLabel*>(QStringLiteral("stampLabel"))->pixmap();
  QVERIFY(!stamp.isNull());
  QVERIFY2(stamp.width() >= 6 * w.stampImage().width(), qPrintable(QStringLiteral("stamp %1 px").arg(stamp.width())));

  // The best-Z PNG has every candidate's circle; the highlighted one (0) is red.
  const QString png = tmpRoot() + QStringLiteral("/test_stack_view_bestz.png");
  QFile::remove(png);
  QVERIFY(w.saveBestZImage(png));
  QImage saved(png);
  QVERIFY(!saved.isNull());
  const int scale = saved.width() / c.width;
  QVERIFY(scale >= 1 && saved.height() == scale * c.height);
  // Highlighted circle radius: the duplicate (cluster) radius of the form's default, 3 px.
  const double r0 = std::max(6.0, sv::SearchSettings{}.clusterRadius * scale) * 1.4;
  const double cx = (best.x + 0.5) * scale, cy = (c.height - 0.5 - best.y) * scale;
  int red = 0;
  for (int k = 0; k < 72; ++k) {
    const double a = k * 2 * M_PI / 72;
    const QRgb p = saved.pixel(int(std::lround(cx + r0 * std::cos(a))), int(std::lround(cy + r0 * std::sin(a))));
    red += (qRed(p) > 200 && qGreen(p) < 120 && qBlue(p) < 120) ? 1 : 0;
  }
  if (red < 36) saved.save(png + QStringLiteral(".fail.png"));
  QVERIFY2(red >= 36, qPrintable(QStringLiteral("%1 of 72 points on the circle are red").arg(red)));

  // The exposure export has the track.
  const QString epng = tmpRoot() + QStringLiteral("/test_stack_view_exposure.png");
  QVERIFY(w.saveExposureImage(epng));
  QImage eimg(epng);
  int orange = 0;
  for (int y = 0; y < eimg.height(); ++y)
    for (int x = 0; x < eimg.width(); ++x) orange += isOrange(eimg.pixel(x, y)) ? 1 : 0;
  QVERIFY2(orange > 100, qPrintable(QStringLiteral("%1 track pixels").arg(orange)));
  if (!QTest::currentTestFailed()) {
    QFile::remove(png);
    QFile::remove(epng);
  }
}

void TestStackView::plainFitsImageSaysWhatWasExpected() {
  const QString path = tmpRoot() + QStringLiteral("/test_stack_view_plain.fits");
  QFile::remove(path);
  {
    fitsfile* f = nullptr;
    int st = 0;
    long naxes[2] = {32, 16};
    fits_create_diskfile(&f, path.toLocal8Bit().constData(), &st);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    std::vector<float> px(32 * 16);
    for (std::size_t i = 0; i < px.size(); ++i) px[i] = float(std::sin(0.37 * double(i)));
    fits_write_img(f, TFLOAT, 1, long(px.size()), px.data(), &st);
    fits_close_file(f, &st);
    QCOMPARE(st, 0);
  }
  QString message;
  try {
    (void)stk::read_stack(path.toStdString());
  } catch (const almagest::IoError& e) {
    message = QString::fromUtf8(e.what());
    QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("NUMIMG"));
  }
  for (const char* part : {"expected a KBMOD WorkUnit", "folder of per-exposure FITS files", "HDF5 cube",
                           "found a FITS file of 1 HDU", "2-D image of 32 x 16", "no NUMIMG"})
    QVERIFY2(message.contains(QLatin1String(part)), qPrintable(message));
  // The window shows the same message.
  StackWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  QVERIFY(w.openStack(path));
  QCOMPARE(waitJob(finished), State::Failed);
  QVERIFY2(w.logPanel()->text().contains(QStringLiteral("expected a KBMOD WorkUnit")), qPrintable(w.logPanel()->text()));
  QFile::remove(path);
}

QTEST_MAIN(TestStackView)
#include "test_stack_view.moc"
