#include "app/AppSettings.hpp"

#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QWidget>

#include <algorithm>

namespace almagest::ui::app {

namespace {
QString& settingsFile() {
  static QString file = qEnvironmentVariable("ALMAGEST_SETTINGS");
  return file;
}
std::optional<CloseChoice>& closeAnswer() {
  static std::optional<CloseChoice> answer;
  return answer;
}
QString geometryKey(const QWidget* w) {
  const QString name = w->objectName().isEmpty() ? QString::fromLatin1(w->metaObject()->className())
                                                 : w->objectName();
  return QStringLiteral("geometry/") + name;
}
}  // namespace

void setSettingsFile(const QString& path) { settingsFile() = path; }

std::unique_ptr<QSettings> settings() {
  if (!settingsFile().isEmpty())
    return std::make_unique<QSettings>(settingsFile(), QSettings::IniFormat);
  return std::make_unique<QSettings>(QStringLiteral("Almagest"), QStringLiteral("Almagest"));
}

void saveGeometry(const QWidget* w) { settings()->setValue(geometryKey(w), w->saveGeometry()); }

bool restoreGeometry(QWidget* w) {
  const QByteArray g = settings()->value(geometryKey(w)).toByteArray();
  const bool ok = !g.isEmpty() && w->restoreGeometry(g);
  fitToScreen(w);
  return ok;
}

void fitToScreen(QWidget* w) {
  QScreen* screen = w->screen() ? w->screen() : QGuiApplication::primaryScreen();
  if (!screen) return;
  const QRect avail = screen->availableGeometry();
  // The frame (title bar, borders) is known only once shown; before that assume a typical one.
  const QRect frame = w->frameGeometry(), inner = w->geometry();
  int fw = frame.width() - inner.width(), fh = frame.height() - inner.height();
  if (!w->isVisible() || fw <= 0 || fh <= 0) {
    fw = std::max(fw, 8);
    fh = std::max(fh, 32);
  }
  const int maxW = std::max(200, avail.width() - fw), maxH = std::max(150, avail.height() - fh);
  const QSize minimum = w->minimumSizeHint().expandedTo(w->minimumSize());
  if (minimum.width() > maxW || minimum.height() > maxH) w->setMinimumSize(0, 0);
  const QSize size(std::min(w->width(), maxW), std::min(w->height(), maxH));
  if (size != w->size()) w->resize(size);
  const int x = std::clamp(w->x(), avail.left(), avail.right() + 1 - (size.width() + fw));
  const int y = std::clamp(w->y(), avail.top(), avail.bottom() + 1 - (size.height() + fh));
  if (x != w->x() || y != w->y()) w->move(x, y);
}

QStringList recentFiles() {
  QStringList out;
  for (const QString& f : settings()->value(QStringLiteral("recentFiles")).toStringList())
    if (QFileInfo::exists(f) && !out.contains(f)) out << f;
  return out.mid(0, kMaxRecent);
}

void addRecentFile(const QString& path) {
  if (path.isEmpty()) return;
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList list = settings()->value(QStringLiteral("recentFiles")).toStringList();
  list.removeAll(abs);
  list.prepend(abs);
  settings()->setValue(QStringLiteral("recentFiles"), list.mid(0, kMaxRecent));
}

void clearRecentFiles() { settings()->remove(QStringLiteral("recentFiles")); }

void saveLastState(const QString& key, const QJsonObject& state) {
  settings()->setValue(QStringLiteral("state/") + key,
                       QString::fromUtf8(QJsonDocument(state).toJson(QJsonDocument::Compact)));
}

QJsonObject lastState(const QString& key) {
  const QString text = settings()->value(QStringLiteral("state/") + key).toString();
  return QJsonDocument::fromJson(text.toUtf8()).object();
}

void setCloseAnswer(std::optional<CloseChoice> answer) { closeAnswer() = answer; }

CloseChoice askCloseDuringJob(QWidget* parent, int jobs, bool quitting) {
  if (closeAnswer()) return *closeAnswer();
  QMessageBox box(QMessageBox::Question,
                  quitting ? QObject::tr("Quit while jobs run?") : QObject::tr("Close while a job runs?"),
                  (jobs == 1 ? QObject::tr("A job is running.")
                             : QObject::tr("%1 jobs are queued or running.").arg(jobs)) +
                      QLatin1Char(' ') +
                      (quitting ? QObject::tr("Cancelling writes nothing of them; keeping them running "
                                              "quits when the last one has finished.")
                                : QObject::tr("Cancelling writes nothing of it; keeping it running hides "
                                              "the window until the job has finished (Window menu).")),
                  QMessageBox::NoButton, parent);
  QPushButton* cancel = box.addButton(jobs == 1 ? QObject::tr("Cancel job") : QObject::tr("Cancel jobs"),
                                      QMessageBox::DestructiveRole);
  QPushButton* keep = box.addButton(QObject::tr("Keep running"), QMessageBox::AcceptRole);
  QPushButton* stay = box.addButton(quitting ? QObject::tr("Don't quit") : QObject::tr("Don't close"),
                                    QMessageBox::RejectRole);
  box.setDefaultButton(stay);
  box.setEscapeButton(stay);
  box.exec();
  if (box.clickedButton() == cancel) return CloseChoice::CancelJobs;
  if (box.clickedButton() == keep) return CloseChoice::KeepRunning;
  return CloseChoice::DontClose;
}

}  // namespace almagest::ui::app
