#include "app/JobQueuePanel.hpp"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>

#include "app/JobQueue.hpp"

namespace almagest::ui {

namespace {
enum Column { Name, Window, Device, State, Stage, Percent, Elapsed, Remaining, Action, NColumns };
}

JobQueuePanel::JobQueuePanel(JobQueue& queue, QWidget* parent) : QWidget(parent), queue_(queue) {
  setObjectName(QStringLiteral("JobQueuePanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  table_ = new QTableWidget(0, NColumns, this);
  table_->setObjectName(QStringLiteral("jobTable"));
  table_->setHorizontalHeaderLabels({tr("Job"), tr("Window"), tr("Device"), tr("State"), tr("Stage"),
                                     tr("Progress"), tr("Elapsed"), tr("Remaining"), QString()});
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(Stage, QHeaderView::Stretch);
  layout->addWidget(table_, 1);
  auto* row = new QHBoxLayout;
  row->addStretch(1);
  clear_ = new QPushButton(tr("Clear finished"), this);
  clear_->setObjectName(QStringLiteral("clearFinished"));
  row->addWidget(clear_);
  layout->addLayout(row);
  connect(clear_, &QPushButton::clicked, this, [this] { queue_.clearFinished(); });

  timer_ = new QTimer(this);
  timer_->setInterval(500);
  connect(timer_, &QTimer::timeout, this, &JobQueuePanel::refreshTimes);
  connect(&queue_, &JobQueue::listChanged, this, &JobQueuePanel::rebuild);
  connect(&queue_, &JobQueue::jobChanged, this, &JobQueuePanel::rebuild);
  rebuild();
}

QString JobQueuePanel::formatDuration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return QStringLiteral("–");
  if (s < 60) return QString::number(s, 'f', 1) + QStringLiteral(" s");
  const long long t = std::llround(s);
  if (t < 3600) return QStringLiteral("%1 min %2 s").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1 h %2 min").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QLatin1Char('0'));
}

double JobQueuePanel::remainingSeconds(double elapsed, int percent) {
  if (percent < 1 || percent >= 100 || elapsed <= 0) return percent >= 100 ? 0.0 : -1.0;
  return elapsed * (100.0 - percent) / percent;
}

void JobQueuePanel::rebuild() {
  const auto entries = queue_.entries();
  table_->setRowCount(static_cast<int>(entries.size()));
  bool active = false;
  for (int r = 0; r < static_cast<int>(entries.size()); ++r) {
    const JobQueue::Entry& e = entries[r];
    const bool finished = JobRunner::isFinishedState(e.state);
    active = active || !finished;
    auto set = [&](int col, const QString& text, const QString& tip = {}) {
      QTableWidgetItem* it = table_->item(r, col);
      if (!it) {
        it = new QTableWidgetItem;
        table_->setItem(r, col, it);
      }
      it->setText(text);
      it->setToolTip(tip.isEmpty() ? text : tip);
      it->setData(Qt::UserRole, e.id);
    };
    set(Name, e.name);
    set(Window, e.owner);
    set(Device, e.device);
    QString state = JobRunner::stateName(e.state);
    if (e.state == JobRunner::State::Failed) state += QStringLiteral(": ") + e.error;
    set(State, state, e.error.isEmpty() ? QString() : e.error);
    if (e.state == JobRunner::State::Failed)
      table_->item(r, State)->setForeground(QColor(0xb0, 0x00, 0x20));
    else
      table_->item(r, State)->setForeground(palette().color(QPalette::Text));
    set(Stage, e.stage);
    auto* bar = qobject_cast<QProgressBar*>(table_->cellWidget(r, Percent));
    if (!bar) {
      bar = new QProgressBar;
      bar->setRange(0, 100);
      bar->setMaximumHeight(18);
      table_->setCellWidget(r, Percent, bar);
    }
    bar->setValue(e.percent);
    set(Elapsed, e.state == JobRunner::State::Queued ? QString() : formatDuration(e.elapsed));
    set(Remaining, finished ? QString() : formatDuration(remainingSeconds(e.elapsed, e.percent)));
    // The Cancel button is rebuilt per row (rows move when finished jobs are cleared).
    QWidget* old = table_->cellWidget(r, Action);
    if (!finished) {
      auto* b = qobject_cast<QPushButton*>(old);
      if (!b || b->property("jobId").toInt() != e.id) {
        b = new QPushButton(tr("Cancel"));
        b->setObjectName(QStringLiteral("cancelJob%1").arg(e.id));
        b->setProperty("jobId", e.id);
        const int id = e.id;
        connect(b, &QPushButton::clicked, this, [this, id] { queue_.cancel(id); });
        table_->setCellWidget(r, Action, b);
      }
    } else if (old) {
      table_->removeCellWidget(r, Action);
    }
  }
  if (active && !timer_->isActive()) timer_->start();
  if (!active) timer_->stop();
}

void JobQueuePanel::refreshTimes() {
  const auto entries = queue_.entries();
  if (static_cast<int>(entries.size()) != table_->rowCount()) return rebuild();
  for (int r = 0; r < table_->rowCount(); ++r) {
    const JobQueue::Entry& e = entries[r];
    if (JobRunner::isFinishedState(e.state) || e.state == JobRunner::State::Queued) continue;
    if (auto* it = table_->item(r, Elapsed)) it->setText(formatDuration(e.elapsed));
    if (auto* it = table_->item(r, Remaining))
      it->setText(formatDuration(remainingSeconds(e.elapsed, e.percent)));
  }
}

}  // namespace almagest::ui
