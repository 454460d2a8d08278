#pragma once
// LogPanel: a read-only, time-stamped log of what the window and its jobs did. Warnings and
// errors are coloured; the view keeps the last few thousand lines.
#include <QWidget>

class QPlainTextEdit;

namespace almagest::ui {

class LogPanel : public QWidget {
  Q_OBJECT
public:
  enum Level { Debug = 0, Info = 1, Warning = 2, Error = 3 };  // almagest::LogLevel order
  explicit LogPanel(QWidget* parent = nullptr);

  void append(int level, const QString& message);
  void info(const QString& message) { append(Info, message); }
  void warning(const QString& message) { append(Warning, message); }
  void error(const QString& message) { append(Error, message); }
  void clear();
  /// All text (for tests and copying).
  QString text() const;

private:
  QPlainTextEdit* edit_ = nullptr;
};

}  // namespace almagest::ui
