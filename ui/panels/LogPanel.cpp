#include "panels/LogPanel.hpp"

#include <QDateTime>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QVBoxLayout>

namespace almagest::ui {

LogPanel::LogPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  edit_ = new QPlainTextEdit(this);
  edit_->setReadOnly(true);
  edit_->setMaximumBlockCount(5000);
  edit_->setLineWrapMode(QPlainTextEdit::NoWrap);
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  mono.setPointSizeF(std::max(8.0, mono.pointSizeF() * 0.92));
  edit_->setFont(mono);
  layout->addWidget(edit_);
}

void LogPanel::append(int level, const QString& message) {
  QString colour;
  QString tag;
  switch (level) {
    case Debug: colour = QStringLiteral("#868e96"); tag = QStringLiteral("debug"); break;
    case Warning: colour = QStringLiteral("#b35c00"); tag = QStringLiteral("warning"); break;
    case Error: colour = QStringLiteral("#c92a2a"); tag = QStringLiteral("error"); break;
    default: break;
  }
  const QString time = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"));
  QString html = QStringLiteral("<span style='color:#868e96'>%1</span>&nbsp;&nbsp;").arg(time);
  const QString body = message.toHtmlEscaped();
  if (colour.isEmpty()) html += body;
  else html += QStringLiteral("<span style='color:%1'><b>%2:</b> %3</span>").arg(colour, tag, body);
  QScrollBar* bar = edit_->verticalScrollBar();
  const bool atEnd = bar->value() == bar->maximum();
  edit_->appendHtml(html);
  if (atEnd) bar->setValue(bar->maximum());
}

void LogPanel::clear() { edit_->clear(); }

QString LogPanel::text() const { return edit_->toPlainText(); }

}  // namespace almagest::ui
