#include "app/class/store.h"

#include <sqlite3.h>

#include "core/error.h"

namespace opscope::classroom {

namespace {

// Grades are kept apart from attempts: an attempt is immutable once acknowledged, a grade is the
// server's (re-)computation of it.
constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS class(
  id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, teacher_key TEXT NOT NULL,
  class_code TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE IF NOT EXISTS students(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token TEXT UNIQUE, on_roster INTEGER NOT NULL DEFAULT 0,
  joined_at TEXT);
CREATE TABLE IF NOT EXISTS attempts(
  id INTEGER PRIMARY KEY, student_id INTEGER NOT NULL REFERENCES students(id),
  idempotency_key TEXT NOT NULL, exercise TEXT NOT NULL, code TEXT NOT NULL,
  hints_used INTEGER NOT NULL, client_result TEXT NOT NULL,
  received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (student_id, idempotency_key));
CREATE TABLE IF NOT EXISTS results(
  attempt_id INTEGER PRIMARY KEY REFERENCES attempts(id), status TEXT NOT NULL,
  checks_passed INTEGER NOT NULL, checks_total INTEGER NOT NULL, failures TEXT NOT NULL,
  feedback TEXT NOT NULL, seconds REAL NOT NULL, mismatch INTEGER NOT NULL,
  graded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE IF NOT EXISTS join_links(
  student_id INTEGER PRIMARY KEY REFERENCES students(id), token TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS lesson_at(
  student_id INTEGER PRIMARY KEY REFERENCES students(id), lesson TEXT NOT NULL, title TEXT NOT NULL,
  block INTEGER NOT NULL, blocks INTEGER NOT NULL, finished INTEGER NOT NULL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
)";

}  // namespace

Statement::Statement(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
    throw Error(std::string("the class database: ") + sqlite3_errmsg(db));
}

Statement::~Statement() { sqlite3_finalize(st_); }

Statement& Statement::bind(int i, const std::string& v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind(int i, double v) {
  sqlite3_bind_double(st_, i, v);
  return *this;
}

Statement& Statement::bind(int i, long long v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw Error(std::string("the class database: ") + sqlite3_errmsg(db_));
}

void Statement::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

long long Statement::integer(int col) const { return sqlite3_column_int64(st_, col); }
double Statement::real(int col) const { return sqlite3_column_double(st_, col); }

std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, col))) : std::string();
}

Store::Store(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("cannot open the class database " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  // WAL: a commit appends to the log; synchronous=FULL syncs it before the commit returns, so an
  // acknowledged attempt survives a killed server and a power cut alike.
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=FULL");
  exec("PRAGMA foreign_keys=ON");
  exec(kSchema);
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    const std::string why = msg ? msg : "unknown error";
    sqlite3_free(msg);
    throw Error("the class database: " + why);
  }
}

void Store::create_class(const ClassInfo& c) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "INSERT INTO class(id, name, teacher_key, class_code) VALUES (1, ?, ?, ?)");
  s.bind(1, c.name).bind(2, c.teacher_key).bind(3, c.class_code).step();
}

ClassInfo Store::class_info() {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT name, teacher_key, class_code FROM class WHERE id = 1");
  if (!s.step()) throw Error("this folder holds no class", "make one with `opscope class init DIR --name NAME`");
  return {s.text(0), s.text(1), s.text(2)};
}

void Store::add_roster_name(const std::string& name, const std::string& link_token) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "INSERT OR IGNORE INTO students(name, on_roster) VALUES (?, 1)");
  s.bind(1, name).step();
  if (link_token.empty()) return;
  Statement link(db_, "INSERT OR IGNORE INTO join_links(student_id, token) SELECT id, ? FROM students WHERE name = ?");
  link.bind(1, link_token).bind(2, name).step();
}

std::optional<Student> Store::join_by_link(const std::string& link_token, const std::string& new_token) {
  std::lock_guard lock(mutex_);
  Statement find(
      db_, "SELECT s.id, s.name, s.token FROM join_links l JOIN students s ON s.id = l.student_id WHERE l.token = ?");
  find.bind(1, link_token);
  if (!find.step()) return std::nullopt;
  Student st{find.integer(0), find.text(1), find.text(2)};
  if (!st.token.empty()) return st;  // the link again (another browser of theirs): the same student
  Statement set(db_, "UPDATE students SET token = ?, joined_at = datetime('now') WHERE id = ?");
  set.bind(1, new_token).bind(2, st.id).step();
  st.token = new_token;
  return st;
}

void Store::set_lesson_at(long long student_id, const LessonAt& at) {
  std::lock_guard lock(mutex_);
  Statement s(
      db_,
      "INSERT OR REPLACE INTO lesson_at(student_id, lesson, title, block, blocks, finished) VALUES (?, ?, ?, ?, ?, ?)");
  s.bind(1, student_id).bind(2, at.lesson).bind(3, at.title).bind(4, at.block).bind(5, at.blocks);
  s.bind(6, static_cast<long long>(at.finished)).step();
}

std::map<long long, LessonAt> Store::lessons_at() {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT student_id, lesson, title, block, blocks, finished, updated_at FROM lesson_at");
  std::map<long long, LessonAt> out;
  while (s.step()) out[s.integer(0)] = {s.text(1), s.text(2), s.integer(3), s.integer(4), s.integer(5) != 0, s.text(6)};
  return out;
}

std::optional<Student> Store::join(const std::string& name, const std::string& new_token, std::string& why,
                                   bool& taken) {
  std::lock_guard lock(mutex_);
  taken = false;
  Statement roster(db_, "SELECT count(*), coalesce(sum(on_roster), 0) FROM students");
  roster.step();
  const bool has_roster = roster.integer(1) > 0;
  if (roster.integer(0) >= kMaxStudents) {
    why = "the class is full (" + std::to_string(kMaxStudents) + " students)";
    return std::nullopt;
  }
  Statement find(db_, "SELECT id, token FROM students WHERE name = ?");
  find.bind(1, name);
  if (find.step()) {
    if (!find.text(1).empty()) {
      why = "the name '" + name + "' has joined already: ask the teacher if that was not you";
      taken = true;
      return std::nullopt;
    }
    const long long id = find.integer(0);
    Statement set(db_, "UPDATE students SET token = ?, joined_at = datetime('now') WHERE id = ?");
    set.bind(1, new_token).bind(2, id).step();
    return Student{id, name, new_token};
  }
  if (has_roster) {
    why = "the name '" + name + "' is not on the class's roster";
    return std::nullopt;
  }
  Statement add(db_, "INSERT INTO students(name, token, joined_at) VALUES (?, ?, datetime('now'))");
  add.bind(1, name).bind(2, new_token).step();
  return Student{sqlite3_last_insert_rowid(db_), name, new_token};
}

std::optional<Student> Store::student_by_token(const std::string& token) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT id, name FROM students WHERE token = ?");
  s.bind(1, token);
  if (!s.step()) return std::nullopt;
  return Student{s.integer(0), s.text(1), token};
}

std::pair<long long, bool> Store::add_attempt(long long student_id, const AttemptIn& a) {
  std::lock_guard lock(mutex_);
  // One statement, one implicit transaction: the row is in the WAL (synced) when step returns.
  Statement add(db_,
                "INSERT INTO attempts(student_id, idempotency_key, exercise, code, hints_used, client_result) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(student_id, idempotency_key) DO NOTHING");
  add.bind(1, student_id).bind(2, a.idempotency_key).bind(3, a.exercise).bind(4, a.code);
  add.bind(5, static_cast<long long>(a.hints_used)).bind(6, a.client_result).step();
  const bool fresh = sqlite3_changes(db_) == 1;
  Statement id(db_, "SELECT id FROM attempts WHERE student_id = ? AND idempotency_key = ?");
  id.bind(1, student_id).bind(2, a.idempotency_key);
  id.step();
  return {id.integer(0), fresh};
}

std::vector<PendingAttempt> Store::pending_attempts() {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT a.id, a.exercise, a.code, a.client_result FROM attempts a "
              "LEFT JOIN results r ON r.attempt_id = a.id WHERE r.attempt_id IS NULL ORDER BY a.id");
  std::vector<PendingAttempt> out;
  while (s.step()) out.push_back({s.integer(0), s.text(1), s.text(2), s.text(3)});
  return out;
}

void Store::store_grade(long long attempt_id, const Grade& g, bool mismatch) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "INSERT OR REPLACE INTO results(attempt_id, status, checks_passed, checks_total, failures, feedback, "
              "seconds, mismatch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, attempt_id).bind(2, g.status).bind(3, static_cast<long long>(g.checks_passed));
  s.bind(4, static_cast<long long>(g.checks_total)).bind(5, g.failures).bind(6, g.feedback);
  s.bind(7, g.seconds).bind(8, static_cast<long long>(mismatch));
  s.step();
}

std::vector<Student> Store::students() {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT id, name FROM students WHERE token IS NOT NULL ORDER BY id");
  std::vector<Student> out;
  while (s.step()) out.push_back({s.integer(0), s.text(1), {}});
  return out;
}

std::vector<AttemptRow> Store::attempts(std::optional<long long> student_id) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT a.id, a.student_id, st.name, a.exercise, a.received_at, a.hints_used, a.client_result, "
              "r.attempt_id IS NOT NULL, r.status, r.checks_passed, r.checks_total, r.failures, r.feedback, r.seconds, "
              "r.mismatch FROM attempts a JOIN students st ON st.id = a.student_id "
              "LEFT JOIN results r ON r.attempt_id = a.id WHERE ?1 IS NULL OR a.student_id = ?1 ORDER BY a.id");
  if (student_id) s.bind(1, *student_id);
  std::vector<AttemptRow> out;
  while (s.step()) {
    AttemptRow r;
    r.id = s.integer(0);
    r.student_id = s.integer(1);
    r.student_name = s.text(2);
    r.exercise = s.text(3);
    r.received_at = s.text(4);
    r.hints_used = static_cast<int>(s.integer(5));
    r.client_result = s.text(6);
    r.graded = s.integer(7) != 0;
    if (r.graded) {
      r.grade = {s.text(8), static_cast<int>(s.integer(9)), static_cast<int>(s.integer(10)), s.text(11), s.text(12),
                 s.real(13)};
      r.mismatch = s.integer(14) != 0;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> Store::attempt_code(long long attempt_id) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT code FROM attempts WHERE id = ?");
  s.bind(1, attempt_id);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

}  // namespace opscope::classroom
