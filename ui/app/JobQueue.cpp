#include "app/JobQueue.hpp"

#include <QCoreApplication>
#include <QWidget>

#include <algorithm>
#include <thread>

#include "almagest/core/backend.hpp"
#include "almagest/core/error.hpp"

namespace almagest::ui {

JobQueue::JobQueue(QObject* parent) : QObject(parent) {
  // CPU jobs run beside each other; each one's own threads (JobContext::threads) do the work, so
  // the pool only bounds how many start at once.
  cpuPool_.setMaxThreadCount(std::max(2, static_cast<int>(std::thread::hardware_concurrency())));
}

JobQueue::~JobQueue() {
  cancelAll();
  waitForDone();
}

JobQueue& JobQueue::instance() {
  static QPointer<JobQueue> queue;
  if (!queue) queue = new JobQueue(QCoreApplication::instance());
  return *queue;
}

QString JobQueue::deviceFor(const QString& backend) {
  try {
    const almagest::BackendChoice choice = almagest::parse_backend(backend.trimmed().toStdString());
    if (choice.kind == almagest::BackendKind::Cpu) return QStringLiteral("cpu");
    if (choice.kind == almagest::BackendKind::Cuda)
      return QStringLiteral("cuda:%1").arg(choice.device);
    const almagest::ResolvedBackend r = almagest::resolve_backend(choice);
    return r.cuda() ? QStringLiteral("cuda:%1").arg(r.device) : QStringLiteral("cpu");
  } catch (const almagest::Error&) {
    return QStringLiteral("cpu");
  }
}

QThreadPool* JobQueue::poolFor(const QString& device) {
  if (device.isEmpty() || device == QLatin1String("cpu")) return &cpuPool_;
  auto& pool = devicePools_[device];
  if (!pool) {
    // One thread: the device's jobs run one at a time, first submitted first (QThreadPool is
    // FIFO among equal priorities).
    pool = std::make_unique<QThreadPool>();
    pool->setMaxThreadCount(1);
  }
  return pool.get();
}

int JobQueue::submit(JobRunner* runner, const QString& device, QObject* owner) {
  Entry e;
  e.id = nextId_++;
  e.runner = runner;
  e.name = runner->name();
  e.device = device.isEmpty() ? QStringLiteral("cpu") : device;
  e.ownerObject = owner;
  if (auto* w = qobject_cast<QWidget*>(owner)) e.owner = w->window()->windowTitle();
  const int id = e.id;
  entries_.push_back(e);

  connect(runner, &JobRunner::stateChanged, this, [this, id](JobRunner::State s) {
    if (Entry* en = find(id)) {
      if (JobRunner::isFinishedState(s)) return;  // finished() below records the outcome
      en->state = s;
      emit jobChanged(id);
    }
  });
  connect(runner, &JobRunner::progressChanged, this, [this, id](int pct, const QString& stage) {
    if (Entry* en = find(id)) {
      en->percent = pct;
      en->stage = stage;
      emit jobChanged(id);
    }
  });
  connect(runner, &JobRunner::finished, this, [this, id, runner](JobRunner::State s) {
    Entry* en = find(id);
    if (!en) return;
    en->state = s;
    en->elapsed = runner->elapsedSeconds();
    if (s == JobRunner::State::Failed) en->error = runner->errorMessage();
    const QString name = en->name, owner = en->owner, error = en->error;
    emit jobChanged(id);
    emit jobFinished(id, s);
    if (s == JobRunner::State::Failed) emit jobFailed(id, name, owner, error);
    trimFinished();
    if (activeCount() == 0) emit idle();
  });
  connect(runner, &QObject::destroyed, this, [this, id] {
    // The window deleted its runner (a new job, or the window closed): a finished row stays
    // listed with what it recorded; an unfinished one (the window was closed) is cancelled.
    if (Entry* en = find(id)) {
      if (!JobRunner::isFinishedState(en->state)) {
        en->state = JobRunner::State::Cancelled;
        emit jobChanged(id);
        if (activeCount() == 0) emit idle();
      }
    }
  });
  emit jobAdded(id);
  emit listChanged();
  runner->start(poolFor(e.device));
  return id;
}

JobQueue::Entry* JobQueue::find(int id) {
  for (auto& e : entries_)
    if (e.id == id) return &e;
  return nullptr;
}

const JobQueue::Entry* JobQueue::entry(int id) const {
  for (const auto& e : entries_)
    if (e.id == id) return &e;
  return nullptr;
}

std::vector<JobQueue::Entry> JobQueue::entries() const {
  std::vector<Entry> out = entries_;
  for (auto& e : out)
    if (!JobRunner::isFinishedState(e.state) && e.runner) e.elapsed = e.runner->elapsedSeconds();
  return out;
}

int JobQueue::activeCount(const QObject* owner) const {
  int n = 0;
  for (const auto& e : entries_)
    if (!JobRunner::isFinishedState(e.state) && e.runner && (!owner || e.ownerObject == owner)) ++n;
  return n;
}

bool JobQueue::cancel(int id) {
  Entry* e = find(id);
  if (!e || !e->runner || JobRunner::isFinishedState(e->state)) return false;
  e->runner->cancel();
  e->stage = tr("cancelling…");
  emit jobChanged(id);
  return true;
}

void JobQueue::cancelAll(const QObject* owner) {
  for (auto& e : entries_)
    if (e.runner && !JobRunner::isFinishedState(e.state) && (!owner || e.ownerObject == owner))
      e.runner->cancel();
}

void JobQueue::clearFinished() {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return JobRunner::isFinishedState(e.state); }),
                 entries_.end());
  emit listChanged();
}

void JobQueue::trimFinished() {
  int finished = 0;
  for (const auto& e : entries_) finished += JobRunner::isFinishedState(e.state) ? 1 : 0;
  if (finished <= kMaxFinished) return;
  for (auto it = entries_.begin(); it != entries_.end() && finished > kMaxFinished;) {
    if (JobRunner::isFinishedState(it->state)) {
      it = entries_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
  emit listChanged();
}

void JobQueue::waitForDone() {
  cpuPool_.waitForDone();
  for (auto& [device, pool] : devicePools_) pool->waitForDone();
}

}  // namespace almagest::ui
