#include "app/class/server.h"

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "app/class/grading_pool.h"
#include "app/class/rate_limit.h"
#include "app/class/secrets.h"
#include "app/class/store.h"
#include "app/class/summary.h"
#include "app/class/teacher_page.h"
#include "core/error.h"

namespace opscope::classroom {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kCodeCap = 64 * 1024;  // a student's answer, bytes
constexpr size_t kBodyCap = 512 * 1024;  // a request (64 KiB of code escaped in JSON fits)
constexpr size_t kSmallBodyCap = 4096;  // join
constexpr size_t kClientResultCap = 4096;  // the client's claimed result, as JSON text

std::string bearer(const httplib::Request& req) {
  const std::string h = req.get_header_value("Authorization");
  return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : std::string();
}

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void refuse(httplib::Response& res, int status, const std::string& why) { reply(res, status, {{"error", why}}); }

bool valid_id(const std::string& s, size_t cap) {
  if (s.empty() || s.size() > cap) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':')) return false;
  return true;
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > kNameCap) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

// The course's exercises as the grader lists them (ids, titles, time limits).
std::vector<CourseExercise> load_course(const std::string& grader, const std::string& lang) {
  const ChildRun run = run_child({grader, "exercise", "list", "--json", "--lang", lang}, {30, 2048, 1 << 20});
  std::vector<CourseExercise> course;
  const json j = json::parse(run.out, nullptr, false);
  if (!j.is_array()) {
    std::fprintf(stderr, "class: the grader listed no exercises (%s); any exercise id is accepted\n", run.err.c_str());
    return course;
  }
  for (const json& e : j)
    course.push_back({e.value("id", std::string()), e.value("title", std::string()), e.value("seconds", 0.0)});
  return course;
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("opscope") : p.string();
}

// Everything a request handler needs.
struct Class {
  Store& store;
  GradingPool& pool;
  RateLimit& limit;
  ClassInfo info;
  std::vector<CourseExercise> course;
};

// The teacher's key from the Authorization header or, for the page and downloads a browser
// opens, ?key=. Refuses (401 missing, 403 wrong) and returns false.
bool teacher_allowed(const Class& c, const httplib::Request& req, httplib::Response& res) {
  std::string key = bearer(req);
  if (key.empty() && req.has_param("key")) key = req.get_param_value("key");
  if (key.empty()) {
    refuse(res, 401, "the teacher's key is required");
    return false;
  }
  if (!same_secret(key, c.info.teacher_key)) {
    refuse(res, 403, "wrong teacher key");
    return false;
  }
  return true;
}

// The student the bearer token names, rate-limited; null after refusing.
std::optional<Student> student_allowed(Class& c, const httplib::Request& req, httplib::Response& res) {
  const std::string token = bearer(req);
  if (token.empty()) {
    refuse(res, 401, "a student token is required (POST /api/join)");
    return std::nullopt;
  }
  auto s = c.store.student_by_token(token);
  if (!s) {
    refuse(res, 403, "unknown student token");
    return std::nullopt;
  }
  if (!c.limit.allow(s->id)) {
    res.set_header("Retry-After", "2");
    refuse(res, 429, "too many requests: wait a moment");
    return std::nullopt;
  }
  return s;
}

// The request's body as a JSON object, or nothing with the refusal sent: 413 over `cap` bytes,
// 400 when it is not an object (`shape` names the fields expected).
std::optional<json> object_body(const httplib::Request& req, httplib::Response& res, size_t cap,
                                const std::string& shape) {
  if (req.body.size() > cap) {
    refuse(res, 413, "the request is too large");
    return std::nullopt;
  }
  json j = json::parse(req.body, nullptr, false);
  if (!j.is_object()) {
    refuse(res, 400, "the body must be a JSON object" + shape);
    return std::nullopt;
  }
  return j;
}

void post_join(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto body = object_body(req, res, kSmallBodyCap, " {\"class_code\", \"name\"}");
  if (!body) return;
  const json& j = *body;
  std::string code, name, link;
  try {
    code = j.value("class_code", std::string());
    name = j.value("name", std::string());
    link = j.value("join_token", std::string());
  } catch (const json::exception&) {
    return refuse(res, 400, "class_code, name and join_token are strings");
  }
  if (!link.empty()) {  // a roster student's own join link (class init --roster: join_links.csv)
    auto s = valid_id(link, 128) ? c.store.join_by_link(link, random_hex(32)) : std::nullopt;
    if (!s) return refuse(res, 403, "this join link is not one of this class's: ask the teacher for yours");
    return reply(res, 200, {{"student_token", s->token}, {"name", s->name}, {"class", c.info.name}});
  }
  if (!same_secret(code, c.info.class_code)) return refuse(res, 403, "wrong class code");
  if (!valid_name(name)) return refuse(res, 400, "a name is 1 to 80 bytes without control characters");
  std::string why;
  bool taken = false;
  auto s = c.store.join(name, random_hex(32), why, taken);
  if (!s) return refuse(res, taken ? 409 : 403, why);
  reply(res, 200, {{"student_token", s->token}, {"name", s->name}, {"class", c.info.name}});
}

void post_attempt(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto s = student_allowed(c, req, res);
  if (!s) return;
  const auto body = object_body(req, res, kBodyCap, "");
  if (!body) return;
  const json& j = *body;
  AttemptIn a;
  try {
    a.exercise = j.at("exercise").get<std::string>();
    a.code = j.at("code").get<std::string>();
    a.idempotency_key = j.at("idempotency_key").get<std::string>();
    a.hints_used = j.value("hints_used", 0);
  } catch (const json::exception&) {
    return refuse(res, 400, "exercise, code and idempotency_key are strings, hints_used a number");
  }
  if (a.code.size() > kCodeCap) return refuse(res, 413, "the code is over 64 KiB");
  if (!valid_id(a.exercise, 64)) return refuse(res, 400, "not an exercise id");
  if (!c.course.empty() &&
      std::none_of(c.course.begin(), c.course.end(), [&](const CourseExercise& e) { return e.id == a.exercise; }))
    return refuse(res, 400, "no exercise '" + a.exercise + "' in this course");
  if (!valid_id(a.idempotency_key, 128)) return refuse(res, 400, "idempotency_key: 1 to 128 letters, digits, - _ . :");
  if (a.hints_used < 0 || a.hints_used > 1000) return refuse(res, 400, "hints_used is out of range");
  a.client_result =
      j.contains("client_result") ? j["client_result"].dump(-1, ' ', false, json::error_handler_t::replace) : "null";
  if (a.client_result.size() > kClientResultCap) return refuse(res, 413, "client_result is over 4 KiB");
  const auto [id, fresh] = c.store.add_attempt(s->id, a);  // in the WAL when this returns
  if (fresh) c.pool.add({id, a.exercise, a.code, a.client_result});
  reply(res, 202, {{"attempt_id", id}, {"duplicate", !fresh}});
}

// Where the student's site is in the lessons: the latest report replaces the one before.
void post_progress(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto s = student_allowed(c, req, res);
  if (!s) return;
  const auto body = object_body(req, res, kSmallBodyCap, " {\"lesson\", \"title\", \"block\", \"blocks\"}");
  if (!body) return;
  const json& j = *body;
  LessonAt at;
  try {
    at.lesson = j.at("lesson").get<std::string>();
    at.title = j.value("title", std::string());
    at.block = j.value("block", 0LL);
    at.blocks = j.value("blocks", 0LL);
    at.finished = j.value("finished", false);
  } catch (const json::exception&) {
    return refuse(res, 400, "lesson and title are strings, block and blocks numbers, finished true or false");
  }
  if (!valid_id(at.lesson, 16)) return refuse(res, 400, "not a lesson number");
  if (at.title.size() > 240) at.title.resize(240);  // (a lesson's title is about 70 bytes; shown, never parsed)
  if (std::any_of(at.title.begin(), at.title.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
    return refuse(res, 400, "a title has no control characters");
  if (at.block < 0 || at.blocks < 0 || at.block > 100000 || at.blocks > 100000)
    return refuse(res, 400, "block is out of range");
  c.store.set_lesson_at(s->id, at);
  reply(res, 200, {{"ok", true}});
}

// Who the token is (the site checks the token it remembers still belongs to this class).
void get_me(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto s = student_allowed(c, req, res);
  if (!s) return;
  reply(res, 200, {{"name", s->name}, {"class", c.info.name}});
}

void get_own_attempts(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto s = student_allowed(c, req, res);
  if (!s) return;
  reply(res, 200, json::parse(own_attempts_json(c.store.attempts(s->id))));
}

void get_own_attempt(Class& c, const httplib::Request& req, httplib::Response& res) {
  const auto s = student_allowed(c, req, res);
  if (!s) return;
  const long long id = std::atoll(req.matches[1].str().c_str());
  for (const AttemptRow& a : c.store.attempts(s->id))
    if (a.id == id) {
      json one = json::parse(own_attempts_json({a}))["attempts"][0];
      one["code"] = c.store.attempt_code(id).value_or("");
      return reply(res, 200, one);
    }
  refuse(res, 404, "no such attempt of yours");  // another student's attempt is not revealed
}

void get_teacher_attempt(Class& c, const httplib::Request& req, httplib::Response& res) {
  if (!teacher_allowed(c, req, res)) return;
  const long long id = std::atoll(req.matches[1].str().c_str());
  for (const AttemptRow& a : c.store.attempts(std::nullopt))
    if (a.id == id) {
      json one = json::parse(own_attempts_json({a}))["attempts"][0];
      one["student"] = a.student_name;
      one["code"] = c.store.attempt_code(id).value_or("");
      one["hints_used"] = a.hints_used;
      one["client_result"] = json::parse(a.client_result, nullptr, false);
      if (a.graded) one["feedback"] = a.grade.feedback;
      return reply(res, 200, one);
    }
  refuse(res, 404, "no such attempt");
}

void add_routes(httplib::Server& svr, Class& c) {
  // The site asks this first: a class is here (not a plain static host), and its name.
  svr.Get("/api/class", [&c](const auto&, auto& res) { reply(res, 200, {{"class", c.info.name}}); });
  svr.Post("/api/join", [&c](const auto& req, auto& res) { post_join(c, req, res); });
  svr.Get("/api/me", [&c](const auto& req, auto& res) { get_me(c, req, res); });
  svr.Post("/api/progress", [&c](const auto& req, auto& res) { post_progress(c, req, res); });
  svr.Post("/api/attempts", [&c](const auto& req, auto& res) { post_attempt(c, req, res); });
  svr.Get("/api/attempts", [&c](const auto& req, auto& res) { get_own_attempts(c, req, res); });
  svr.Get(R"(/api/attempts/(\d+))", [&c](const auto& req, auto& res) { get_own_attempt(c, req, res); });
  svr.Get("/api/teacher/summary", [&c](const auto& req, auto& res) {
    if (!teacher_allowed(c, req, res)) return;
    res.set_header("Cache-Control", "no-store");
    res.set_content(summary_json(c.info.name, c.store.students(), c.store.attempts(std::nullopt), c.course,
                                 c.store.lessons_at()),
                    "application/json");
  });
  svr.Get(R"(/api/teacher/attempts/(\d+))", [&c](const auto& req, auto& res) { get_teacher_attempt(c, req, res); });
  svr.Get("/api/teacher/grades.csv", [&c](const auto& req, auto& res) {
    if (!teacher_allowed(c, req, res)) return;
    res.set_header("Cache-Control", "no-store");
    res.set_header("Content-Disposition", "attachment; filename=\"grades.csv\"");
    res.set_content(grades_csv(c.store.students(), c.store.attempts(std::nullopt), c.course),
                    "text/csv; charset=utf-8");
  });
  svr.Get("/teacher", [&c](const auto& req, auto& res) {
    if (!teacher_allowed(c, req, res)) return;
    // The page's script is a file of its own: no inline script runs, injected or not.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.set_header("Cache-Control", "no-store");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_content(teacher_html(), "text/html; charset=utf-8");
  });
  svr.Get("/teacher.js",
          [](const auto&, auto& res) { res.set_content(teacher_js(), "text/javascript; charset=utf-8"); });
  svr.Get("/teacher.css", [](const auto&, auto& res) { res.set_content(teacher_css(), "text/css; charset=utf-8"); });
  svr.Get("/favicon.ico", [](const auto&, auto& res) { res.status = 204; });
  svr.set_post_routing_handler([](const auto&, auto& res) {
    res.set_header("X-Content-Type-Options", "nosniff");
    // The site asks its own page for this (a HEAD) before it asks /api/class: a plain static host
    // then sees no request it would answer 404 (a console error in every visitor's browser).
    res.set_header("X-Opscope-Class", "1");
  });
}

// SIGINT and SIGTERM stop the server cleanly; the waiting thread is the only one that sees them.
std::thread stop_on_signals(httplib::Server& svr, sigset_t set) {
  return std::thread([&svr, set] {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGUSR2) svr.stop();
  });
}

}  // namespace

int serve_class(const ServeArgs& a) {
  if (!fs::exists(class_db_path(a.dir)))
    throw Error(a.dir + " holds no class", "make one with `opscope class init " + a.dir + " --name NAME`");
  // Signals are waited for by one thread; every thread made after this inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Store store(class_db_path(a.dir));
  const std::string grader = a.grader.empty() ? self_executable() : a.grader;
  const std::string scratch = a.dir + "/scratch";
  fs::create_directories(scratch);
  std::vector<CourseExercise> course = load_course(grader, a.lang);
  PoolOptions po;
  po.workers = a.workers > 0 ? a.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  po.grader = grader;
  po.lang = a.lang;
  po.scratch = scratch;
  po.limits.seconds = a.grade_seconds;
  po.limits.memory_mb = a.grade_memory_mb;
  for (const CourseExercise& e : course) po.exercise_seconds[e.id] = e.seconds;
  RateLimit limit(a.rate_per_second, a.rate_burst);
  GradingPool pool(store, po);
  Class c{store, pool, limit, store.class_info(), std::move(course)};

  httplib::Server svr;
  // A room's connections at once (each a thread while open); an idle one closes after 2 s.
  svr.new_task_queue = [] { return new httplib::ThreadPool(256); };
  svr.set_keep_alive_timeout(2);
  svr.set_payload_max_length(kBodyCap);
  svr.set_read_timeout(10, 0);
  add_routes(svr, c);
  if (!a.site.empty()) {  // the students' site, from the class's own address (same origin as the API)
    svr.set_file_extension_and_mimetype_mapping("wasm", "application/wasm");
    svr.set_file_extension_and_mimetype_mapping("data", "application/octet-stream");
    if (!svr.set_mount_point("/", a.site))
      throw Error("cannot serve the site from " + a.site, "--site names the browser build's site folder");
  }
  if (!svr.bind_to_port(a.host, a.port))
    throw Error("cannot listen on " + a.host + ":" + std::to_string(a.port),
                "is the port in use? choose another with --port");
  std::thread signals = stop_on_signals(svr, set);
  std::cout << "class: " << c.info.name << ", " << po.workers << " grading processes, " << pool.queued()
            << " attempts to grade\n";
  std::cout << "serving on http://" << a.host << ":" << a.port << std::endl;
  svr.listen_after_bind();
  pthread_kill(signals.native_handle(), SIGUSR2);  // stopped otherwise than by a signal
  signals.join();
  std::cout << "class: stopped\n";
  return 0;
}

}  // namespace opscope::classroom
