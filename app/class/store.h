// The class's SQLite database (DIR/class.db, WAL mode): the class, its students, their attempts
// (idempotency keys unique per student) and the server's grade of each. One connection behind a
// mutex: every statement is short, and a commit returns only once it is in the WAL.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace opscope::classroom {

// Joining is open to anyone with the class code: a cap keeps a script from filling the database.
constexpr long long kMaxStudents = 5000;
constexpr size_t kNameCap = 80;  // bytes of a student's name

struct ClassInfo {
  std::string name, teacher_key, class_code;
};

struct Student {
  long long id = 0;
  std::string name, token;
};

// The lesson a student's site is at (POST /api/progress), the latest one sent.
struct LessonAt {
  std::string lesson, title;  // "03", the lesson's title
  long long block = 0, blocks = 0;
  bool finished = false;
  std::string updated_at;
};

// What a student sent, as stored.
struct AttemptIn {
  std::string exercise, code, idempotency_key, client_result;  // client_result: JSON text
  int hints_used = 0;
};

// The server's grade of an attempt.
struct Grade {
  std::string status;  // pass, fail, error, timeout, out of memory
  int checks_passed = 0, checks_total = 0;
  std::string failures;  // JSON array of {check, message, line}
  std::string feedback;  // the grader's text for the student
  double seconds = 0;
};

struct PendingAttempt {
  long long id = 0;
  std::string exercise, code, client_result;
};

// One attempt as the summary and the student's own list read it.
struct AttemptRow {
  long long id = 0, student_id = 0;
  std::string student_name, exercise, received_at;
  int hints_used = 0;
  bool graded = false, mismatch = false;
  Grade grade;
  std::string client_result;
};

// A prepared statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& bind(int i, const std::string& v);
  Statement& bind(int i, long long v);
  Statement& bind(int i, double v);
  bool step();  // true: a row is there
  void reset();
  long long integer(int col) const;
  double real(int col) const;
  std::string text(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

class Store {
 public:
  explicit Store(const std::string& path);  // opens (creating the schema), WAL mode
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  void create_class(const ClassInfo& c);  // once, by `class init`
  ClassInfo class_info();

  // A roster's name waits for its student to join with it: by the class code and the name, or
  // by `link_token` alone (the student's own join link; empty: none).
  void add_roster_name(const std::string& name, const std::string& link_token = {});
  // The student whose join link holds `link_token`, joined now (given `new_token`) or before
  // (their token as it is: the link opened in another browser of theirs); null: no such link.
  std::optional<Student> join_by_link(const std::string& link_token, const std::string& new_token);
  // Joins `name`: a roster name not joined yet, or (without a roster) a new name. Null: refused,
  // `why` says why and `taken` whether the name had joined already (else: not allowed at all).
  std::optional<Student> join(const std::string& name, const std::string& new_token, std::string& why, bool& taken);
  std::optional<Student> student_by_token(const std::string& token);

  // Stores the attempt once per (student, idempotency key), committed before it returns; the
  // attempt's id and whether it was new.
  std::pair<long long, bool> add_attempt(long long student_id, const AttemptIn& a);
  std::vector<PendingAttempt> pending_attempts();  // not graded yet, oldest first
  // The grade, and whether it contradicts the result the client claimed.
  void store_grade(long long attempt_id, const Grade& g, bool mismatch);

  void set_lesson_at(long long student_id, const LessonAt& at);
  std::map<long long, LessonAt> lessons_at();  // by student id

  std::vector<Student> students();
  std::vector<AttemptRow> attempts(std::optional<long long> student_id);  // oldest first
  std::optional<std::string> attempt_code(long long attempt_id);

 private:
  void exec(const char* sql);
  std::mutex mutex_;
  sqlite3* db_ = nullptr;
};

}  // namespace opscope::classroom
