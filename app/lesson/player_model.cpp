#include "app/lesson/player_model.h"

#include "core/error.h"

namespace opscope::lesson {

LessonPlayerModel::LessonPlayerModel(std::string dir, std::string lang, const std::string& id, std::string progress_path)
    : dir_(std::move(dir)), lang_(std::move(lang)), progress_path_(std::move(progress_path)) {
  lesson_ = load_lesson(find_lesson_file(dir_, lang_, id));
  restart();
}

LessonPlayerModel::LessonPlayerModel(std::string dir, std::string lang, const std::string& id, std::string progress_path,
                                     Workspace& ws, lang::Session& session)
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
    case Block::Kind::quiz: break;
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
  QuizFeedback f{quiz_answer_matches(q, given), q.answer, q.explain};
  if (f.right) ++quizzes_right_;
  feedback_[pos_] = f;
  ++pos_;
  remember();
  return f;
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
  if (it == p.lessons.end() || it->second.block <= 0 || it->second.block >= static_cast<int>(lesson_.blocks.size())) return 0;
  return static_cast<size_t>(it->second.block);
}

std::string LessonPlayerModel::progress_key() const { return lesson_.slug.substr(0, lesson_.slug.find('-')); }

void LessonPlayerModel::set_language(const std::string& lang) {
  if (lang == lang_) return;
  Lesson other = load_lesson(find_lesson_file(dir_, lang, std::to_string(lesson_.number)));
  if (other.blocks.size() != lesson_.blocks.size())
    throw Error("lesson " + std::to_string(lesson_.number) + " has " + std::to_string(other.blocks.size()) + " blocks in '" + lang +
                    "' but " + std::to_string(lesson_.blocks.size()) + " in '" + lang_ + "'",
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
}

}  // namespace opscope::lesson
