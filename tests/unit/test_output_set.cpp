// The output layer (almagest/core/atomic_file.hpp): destinations that are inputs or special files
// are refused and left byte-identical, a set commits all or nothing, a cancel is honoured until
// the renames, temporaries are never nested and never outlive the set, and two concurrent writers
// of one set leave one complete set.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"

namespace fs = std::filesystem;
using namespace almagest;

namespace {

QString temp_base() {
  QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

/// Entries of `dir` whose name contains ".tmp." (leftover temporaries).
int temporaries_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

template <class F>
QString io_error_of(F&& f) {
  try {
    f();
  } catch (const IoError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestOutputSet : public QObject {
  Q_OBJECT

private slots:
  void output_onto_an_input_is_refused_through_links() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    const std::string input = dir + "/data.txt", hard = dir + "/hard.txt", soft = dir + "/soft.txt";
    spit(input, "1 2 3\n4 5 6\n");
    QVERIFY(::link(input.c_str(), hard.c_str()) == 0);
    fs::create_symlink(input, soft);
    for (const std::string& target : {input, hard, soft, dir + "/./data.txt"}) {
      OutputSet set({input});
      const QString msg = io_error_of([&] { set.add(target); });
      QVERIFY2(msg.contains("same file as the input"), qPrintable(msg));
      QVERIFY(msg.contains(QString::fromStdString(target)));
      // The engine's writers joining through an AtomicFile in the set's scope are refused too.
      OutputSet::Scope scope(set);
      const QString msg2 = io_error_of([&] { write_text_atomic(target, "overwritten\n"); });
      QVERIFY2(msg2.contains("same file as the input"), qPrintable(msg2));
    }
    QCOMPARE(slurp(input), std::string("1 2 3\n4 5 6\n"));
    QCOMPARE(temporaries_in(dir), 0);
  }

  void special_files_are_never_replaced() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    const std::string fifo = dir + "/pipe";
    QVERIFY(::mkfifo(fifo.c_str(), 0600) == 0);
    const QString m1 = io_error_of([&] { AtomicFile f(fifo); });
    QVERIFY2(m1.contains("not a regular file"), qPrintable(m1));
    const QString m2 = io_error_of([&] { write_text_atomic(fifo, "x"); });
    QVERIFY2(m2.contains("not a regular file"), qPrintable(m2));
    struct stat st {};
    QVERIFY(::stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
    // A character device: /dev/null itself is only checked (never written: the check refuses
    // before any file is created), and a private device node where mknod is allowed (root).
    const QString m3 = io_error_of([&] { check_output_target("/dev/null"); });
    QVERIFY2(m3.contains("not a regular file"), qPrintable(m3));
    QVERIFY(::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    const std::string dev = dir + "/null";
    if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
      OutputSet set;
      const QString m4 = io_error_of([&] { set.add(dev); });
      QVERIFY2(m4.contains("not a regular file"), qPrintable(m4));
      QVERIFY(::stat(dev.c_str(), &st) == 0 && S_ISCHR(st.st_mode));
    }
    const QString m5 = io_error_of([&] { AtomicFile f(dir); });
    QVERIFY2(m5.contains("is a directory"), qPrintable(m5));
    const QString m6 = io_error_of([&] { AtomicFile f(dir + "/missing/out.txt"); });
    QVERIFY2(m6.contains("does not exist"), qPrintable(m6));
    QCOMPARE(temporaries_in(dir), 0);
  }

  void a_set_commits_all_or_nothing() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    const std::string a = dir + "/a.txt", b = dir + "/b.h5", c = dir + "/c.txt";
    spit(c, "old c\n");
    {
      OutputSet set;
      OutputSet::Scope scope(set);
      write_text_atomic(a, "alpha\n");
      io::Hdf5Writer w(b);
      w.write("/x", std::vector<double>{1.5, 2.5, 3.5});
      w.commit();
      write_text_atomic(c, "new c\n");
      // Nothing is in place before the set commits.
      QVERIFY(!fs::exists(a) && !fs::exists(b));
      QCOMPARE(slurp(c), std::string("old c\n"));
      QCOMPARE(live_temp_file_count(), 3);
      set.commit();
    }
    QCOMPARE(slurp(a), std::string("alpha\n"));
    QCOMPARE(io::Hdf5Reader(b).read_double("/x"), (std::vector<double>{1.5, 2.5, 3.5}));
    QCOMPARE(slurp(c), std::string("new c\n"));
    QCOMPARE(temporaries_in(dir), 0);
    QCOMPARE(live_temp_file_count(), 0);

    // A writer that fails midway: the set refuses to commit and leaves nothing.
    fs::remove(a);
    {
      OutputSet set;
      OutputSet::Scope scope(set);
      write_text_atomic(a, "alpha 2\n");
      try {
        AtomicFile f(dir + "/d.txt");
        throw std::runtime_error("writer failed");
      } catch (const std::runtime_error&) {
      }
      const QString msg = io_error_of([&] { set.commit(); });
      QVERIFY2(msg.contains("d.txt") && msg.contains("stopped before finishing"), qPrintable(msg));
    }
    QVERIFY(!fs::exists(a) && !fs::exists(dir + "/d.txt"));
    QCOMPARE(temporaries_in(dir), 0);

    // The same destination twice in one set.
    OutputSet set;
    set.add(a);
    const QString twice = io_error_of([&] { set.add(dir + "/../" + fs::path(dir).filename().string() + "/a.txt"); });
    QVERIFY2(twice.contains("written twice"), qPrintable(twice));
  }

  void cancel_is_honoured_until_the_renames() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    CancelToken token;
    bool cancelled = false;
    {
      OutputSet set({}, token);
      OutputSet::Scope scope(set);
      write_text_atomic(dir + "/a.txt", "a\n");
      write_text_atomic(dir + "/b.txt", "b\n");
      token.cancel();  // after every write, before the commit
      try {
        set.commit();
      } catch (const Cancelled&) {
        cancelled = true;
      }
    }
    QVERIFY(cancelled);
    QVERIFY(!fs::exists(dir + "/a.txt") && !fs::exists(dir + "/b.txt"));
    QCOMPARE(temporaries_in(dir), 0);
  }

  void temporaries_are_never_nested_and_are_removable_from_a_signal_handler() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    {
      AtomicFile outer(dir + "/map.fits");
      // A front end handing its temporary to an engine writer: written in place.
      AtomicFile inner(outer.temp_path());
      QCOMPARE(inner.temp_path(), outer.temp_path());
      write_text_atomic(outer.temp_path(), "payload\n");
      inner.commit();
      QCOMPARE(temporaries_in(dir), 1);
      outer.commit();
    }
    QCOMPARE(slurp(dir + "/map.fits"), std::string("payload\n"));
    QCOMPARE(temporaries_in(dir), 0);

    // A temporary folder (exposure files) and its files, removed with raw system calls.
    OutputSet set;
    const std::string folder = set.add(dir + "/exposures", true);
    spit(folder + "/e0.fits", "x");
    spit(folder + "/e1.fits", "y");
    AtomicFile lone(dir + "/lone.txt");
    QCOMPARE(live_temp_file_count(), 2);
    remove_temp_files_now();
    QCOMPARE(live_temp_file_count(), 0);
    QVERIFY(!fs::exists(folder));
    QCOMPARE(temporaries_in(dir), 0);
  }

  void concurrent_writers_of_one_set_leave_one_complete_set() {
    QTemporaryDir tmp(temp_base() + "/outset-XXXXXX");
    const std::string dir = tmp.path().toStdString();
    const std::vector<std::string> names{dir + "/zeta_2pcf.txt", dir + "/zeta_3pcf.txt", dir + "/zeta_4pcf.txt"};
    // Each trial: two writers commit the same three outputs at the same moment. Without the
    // directory lock their renames interleave (a from one, b and c from the other).
    int mixed = 0;
    for (int trial = 0; trial < 150; ++trial) {
      std::atomic<int> ready{0};
      auto writer = [&](int who) {
        OutputSet set;
        OutputSet::Scope scope(set);
        for (const auto& n : names) write_text_atomic(n, "writer " + std::to_string(who) + " trial " + std::to_string(trial) + "\n");
        ready.fetch_add(1);
        while (ready.load() < 2) std::this_thread::yield();
        set.commit();
      };
      std::thread t1(writer, 1), t2(writer, 2);
      t1.join();
      t2.join();
      const std::string first = slurp(names[0]);
      QVERIFY(first.find("trial " + std::to_string(trial) + "\n") != std::string::npos);
      for (const auto& n : names) mixed += slurp(n) != first;
    }
    QCOMPARE(mixed, 0);
    QCOMPARE(temporaries_in(dir), 0);
  }
};

QTEST_GUILESS_MAIN(TestOutputSet)
#include "test_output_set.moc"
