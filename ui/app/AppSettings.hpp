#pragma once
// What the application remembers across restarts (QSettings) and how its windows open and close:
// window geometry (by object name), recent files, the last parameters of each window (a JSON
// object, the window's save_state()), windows kept inside the available screen, and the one
// question asked before closing a window or quitting drops a running job.
//
// Settings live in the platform's place for organisation/application "Almagest" unless
// setSettingsFile() (tests: a temporary INI file; or $ALMAGEST_SETTINGS) names a file.
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

class QSettings;
class QWidget;

namespace almagest::ui::app {

/// Uses `path` (INI format) for every later settings() call; empty: back to the default.
void setSettingsFile(const QString& path);
/// A settings object on the current store (cheap: QSettings caches the file).
std::unique_ptr<QSettings> settings();

/// Saves / restores `w`'s geometry under its objectName (restore: false when none saved). The
/// restored window is then fitted into the screen (a monitor may have gone since).
void saveGeometry(const QWidget* w);
bool restoreGeometry(QWidget* w);
/// Keeps `w` inside the available geometry of its screen (or the primary): shrinks it to fit
/// (window frame included) and moves it so that no part is off screen.
void fitToScreen(QWidget* w);

/// Most recent first, at most kMaxRecent, files that still exist.
constexpr int kMaxRecent = 10;
QStringList recentFiles();
void addRecentFile(const QString& path);
void clearRecentFiles();

/// The last parameters of a window (its save_state()), under `key`.
void saveLastState(const QString& key, const QJsonObject& state);
QJsonObject lastState(const QString& key);

/// What the user chose when a window closes (or the application quits) while a job runs.
enum class CloseChoice { CancelJobs, KeepRunning, DontClose };
/// Asks (a modal question: Cancel job / Keep running / Don't close). `jobs`: how many of the
/// window's jobs are queued or running. With setCloseAnswer(), answers without a dialog (tests,
/// scripted runs).
CloseChoice askCloseDuringJob(QWidget* parent, int jobs, bool quitting);
void setCloseAnswer(std::optional<CloseChoice> answer);

}  // namespace almagest::ui::app
