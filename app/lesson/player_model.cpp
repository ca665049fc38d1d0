#include "app/lesson/player_model.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "platform/platform.h"

namespace opscope::lesson {

LessonPlayerModel::LessonPlayerModel(std::string dir, std::string lang, const std::string& id,
                                     std::string progress_path)
    : dir_(std::move(dir)), lang_(std::move(lang)), progress_path_(std::move(progress_path)) {
  lesson_ = load_lesson(find_lesson_file(dir_, lang_, id));
  restart();
}

LessonPlayerModel::LessonPlayerModel(std::string dir, std::string lang, const std::string& id,
                                     std::string progress_path, Workspace& ws, lang::Session& session)
    : dir_(std::move(dir)), lang_(std::move(lang)), progress_path_(std::move(progress_path)) {
  lesson_ = load_lesson(find_lesson_file(dir_, lang_, id));
  runner_ = std::make_unique<LessonRunner>(ws, session);
  restart();
}

void LessonPlayerModel::restart() {
  if (runner_) runner_->reset();
  else runner_ = std::make_unique<LessonRunner>();
  pos_ = 0;
  results_.assign(lesson_.blocks.size(), std::nullopt);
  feedback_.assign(lesson_.blocks.size(), std::nullopt);
  panel_ = "graph";
  highlight_.clear();
  paused_ = false;
  quizzes_right_ = 0;
}

BlockResult LessonPlayerModel::step() {
  if (done()) return {};
  const Block& b = lesson_.blocks[pos_];
  BlockResult r;
  paused_ = false;
  switch (b.kind) {
    case Block::Kind::cell:
    case Block::Kind::check:
      if (b.desktop_only && !platform::has(platform::Feature::cxx_extensions)) {  // said, and passed over
        r.output = lang_ == "zh" ? "（这里跳过：这一格需要桌面版 opscope，它要编译 C++。本课其余部分不依赖它。）"
                                 : "(Passed over here: this needs the desktop app, which compiles C++. The rest of the "
                                   "lesson does not depend on it.)";
        results_[pos_] = r;
        break;
      }
      r = runner_->run(lesson_, b);
      results_[pos_] = r;
      if (!r.ok) return r;  // stay on a failed block: the student can fix things at the prompt and retry
      break;
    case Block::Kind::directive:
      if (b.directive.name == "show") panel_ = b.directive.argument;
      else if (b.directive.name == "highlight") highlight_ = b.directive.argument;
      else if (b.directive.name == "pause") paused_ = true;
      break;
    case Block::Kind::prose:
    case Block::Kind::quiz:
    case Block::Kind::exercise:  // passed over: the student may come back to it
    case Block::Kind::goals:
    case Block::Kind::recap: break;
  }
  ++pos_;
  remember();
  return r;
}

bool LessonPlayerModel::run_all() {
  while (!done()) {
    const size_t at = pos_;
    BlockResult r = step();
    if (pos_ == at) return false;  // a failed cell or check
    (void)r;
  }
  return true;
}

QuizFeedback LessonPlayerModel::answer(const std::string& given) {
  if (done() || lesson_.blocks[pos_].kind != Block::Kind::quiz) throw Error("the current block is not a quiz");
  const Quiz& q = lesson_.blocks[pos_].quiz;
  const int tries = (feedback_[pos_] ? feedback_[pos_]->tries : 0) + 1;
  QuizFeedback f{quiz_answer_matches(q, given), q.answer, q.explain, tries, true};
  // A wrong answer gets another try before the answer is shown (an empty one gives up).
  if (!f.right && !given.empty() && tries < kQuizTries) {
    f.expected.clear();
    f.explain.clear();
    f.final = false;
    feedback_[pos_] = f;
    return f;
  }
  if (f.right && tries == 1) ++quizzes_right_;
  feedback_[pos_] = f;
  ++pos_;
  remember();
  return f;
}

ExerciseState& LessonPlayerModel::exercise_at(size_t block) {
  if (block >= lesson_.blocks.size() || lesson_.blocks[block].kind != Block::Kind::exercise)
    throw Error("block " + std::to_string(block) + " of lesson " + std::to_string(lesson_.number) +
                " is not an exercise");
  auto it = exercises_.find(block);
  if (it != exercises_.end()) return it->second;
  ExerciseState st;
  const Exercise& ex = lesson_.blocks[block].exercise;
  if (!progress_path_.empty()) {
    const Progress p = load_progress(progress_path_);
    if (auto l = p.lessons.find(progress_key()); l != p.lessons.end())
      if (auto e = l->second.exercises.find(ex.id); e != l->second.exercises.end()) st.saved = e->second;
  }
  st.saved.hints = std::clamp(st.saved.hints, 0, static_cast<int>(ex.hints.size()));
  if (st.saved.code.empty()) st.saved.code = ex.starter;
  return exercises_.emplace(block, std::move(st)).first->second;
}

const ExerciseState& LessonPlayerModel::exercise(size_t block) { return exercise_at(block); }

void LessonPlayerModel::set_exercise_code(size_t block, const std::string& code) {
  ExerciseState& st = exercise_at(block);
  if (st.saved.code == code) return;
  st.saved.code = code;
  remember_exercise(block);
}

const Attempt& LessonPlayerModel::check_exercise(size_t block, const AttemptOptions& options,
                                                 const std::string& filename) {
  ExerciseState& st = exercise_at(block);
  const Exercise& ex = lesson_.blocks[block].exercise;
  const std::string file = filename.empty() ? ex.id + ".ops" : filename;  // how the student's lines are named
  st.last = run_attempt(lesson_, ex, st.saved.code, file, options);
  ++st.saved.attempts;
  st.saved.passed = st.saved.passed || st.last->status == AttemptStatus::passed;
  remember_exercise(block);
  report_attempt(block);
  return *st.last;
}

int LessonPlayerModel::reveal_hint(size_t block) {
  ExerciseState& st = exercise_at(block);
  st.saved.hints = std::min(st.saved.hints + 1, static_cast<int>(lesson_.blocks[block].exercise.hints.size()));
  remember_exercise(block);
  return st.saved.hints;
}

void LessonPlayerModel::give_up(size_t block) {
  exercise_at(block).saved.gave_up = true;
  remember_exercise(block);
}

void LessonPlayerModel::reset_exercise(size_t block) {
  set_exercise_code(block, lesson_.blocks[block].exercise.starter);
}

void LessonPlayerModel::remember_exercise(size_t block) {
  if (progress_path_.empty()) return;
  Progress p = load_progress(progress_path_);
  p.lessons[progress_key()].exercises[lesson_.blocks[block].exercise.id] = exercises_.at(block).saved;
  save_progress(p, progress_path_);
}

// The class server (if the site came from one) regrades the code itself; the local result is
// sent only so that a disagreement can be flagged.
void LessonPlayerModel::report_attempt(size_t block) {
  if (progress_path_.empty()) return;  // a check or test run, not a student's session
  const ExerciseState& st = exercises_.at(block);
  const nlohmann::json j = {{"exercise", lesson_.blocks[block].exercise.id},
                            {"code", st.saved.code},
                            {"hints_used", st.saved.hints},
                            {"client_result",
                             {{"status", status_name(st.last->status)},
                              {"passed", st.last->status == AttemptStatus::passed},
                              {"checks_passed", st.last->checks_passed()},
                              {"checks_total", st.last->checks.size()}}}};
  platform::report_to_class("attempt", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void LessonPlayerModel::skip() {
  if (done()) return;
  ++pos_;
  remember();
}

size_t LessonPlayerModel::fast_forward(size_t block) {
  while (!done() && pos_ < block) {
    const size_t at = pos_;
    step();
    if (pos_ == at) break;
  }
  return pos_;
}

size_t LessonPlayerModel::saved_position() const {
  if (progress_path_.empty()) return 0;
  Progress p = load_progress(progress_path_);
  auto it = p.lessons.find(progress_key());
  if (it == p.lessons.end() || it->second.block <= 0 || it->second.block >= static_cast<int>(lesson_.blocks.size()))
    return 0;
  return static_cast<size_t>(it->second.block);
}

std::string LessonPlayerModel::progress_key() const { return lesson_.slug.substr(0, lesson_.slug.find('-')); }

void LessonPlayerModel::set_language(const std::string& lang) {
  if (lang == lang_) return;
  Lesson other = load_lesson(find_lesson_file(dir_, lang, std::to_string(lesson_.number)));
  if (other.blocks.size() != lesson_.blocks.size())
    throw Error("lesson " + std::to_string(lesson_.number) + " has " + std::to_string(other.blocks.size()) +
                    " blocks in '" + lang + "' but " + std::to_string(lesson_.blocks.size()) + " in '" + lang_ + "'",
                "the language versions must carry the same cells, checks, quizzes and directives");
  lesson_ = std::move(other);
  lang_ = lang;
  remember();
}

void LessonPlayerModel::remember() {
  if (progress_path_.empty()) return;
  Progress p = load_progress(progress_path_);
  p.lang = lang_;
  p.last = progress_key();
  LessonProgress& lp = p.lessons[p.last];
  lp.block = static_cast<int>(pos_);
  lp.finished = lp.finished || done();
  lp.quizzes_right = std::max(lp.quizzes_right, quizzes_right_);
  save_progress(p, progress_path_);
  const nlohmann::json j = {{"lesson", p.last},
                            {"title", lesson_.title},
                            {"block", pos_},
                            {"blocks", lesson_.blocks.size()},
                            {"finished", lp.finished}};
  platform::report_to_class("progress", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace opscope::lesson
