#include "app/lesson/terminal_player.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/exercise_class.h"
#include "app/lesson/player_model.h"
#include "app/lesson/terminal_markdown.h"
#include "app/sigint.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace opscope::lesson {

namespace {

// The player's few words, in the lesson's language.
struct Words {
  const char* minutes;
  const char* prerequisites;
  const char* prerequisites_end;
  const char* press_enter_run;
  const char* press_enter_go_on;
  const char* check;
  const char* your_answer;
  const char* right;
  const char* wrong;
  const char* failed;
  const char* resume;
  const char* finished;
  const char* pause;
};

const Words kEnglish{"min",
                     "before this: lessons",
                     "",
                     "Enter: run it · type code to try something first · q: quit",
                     "Enter: go on · type code to try something · q: quit",
                     "engine check",
                     "your answer> ",
                     "Right.",
                     "Not quite: the answer is",
                     "The cell failed. Fix things at the prompt and press Enter to run it again, or s to skip it.",
                     "You stopped at block %zu of %zu last time. Enter: continue there · r: start again",
                     "Lesson finished.",
                     "Your turn: try things at the prompt."};
const Words kChinese{"分钟",
                     "先修：第",
                     " 课",
                     "回车：运行 · 也可以先输入代码试一试 · q：退出",
                     "回车：继续 · 输入代码试一试 · q：退出",
                     "引擎核对",
                     "你的答案> ",
                     "答对了。",
                     "不对，答案是",
                     "这个单元出错了。可以在提示符下修改后回车重试，或输入 s 跳过。",
                     "上次停在第 %zu / %zu 块。回车：从那里继续 · r：从头开始",
                     "本课结束。",
                     "轮到你了：在提示符下试一试。"};

class Player {
 public:
  Player(const TerminalPlayerOptions& o, std::istream& in, std::ostream& out)
      : o_(o), in_(in), out_(out), words_(o.lang == "zh" ? kChinese : kEnglish) {}

  int play(LessonPlayerModel& m) {
    header(m.lesson());
    if (size_t saved = m.saved_position()) {
      char line[256];
      std::snprintf(line, sizeof line, words_.resume, saved, m.lesson().blocks.size());
      const std::string a = ask(std::string(line) + "\n> ");
      if (quit_) return 0;
      if (a != "r") m.fast_forward(saved);
    }
    int status = 0;
    while (!m.done()) {
      const Block& b = *m.current();
      switch (b.kind) {
        case Block::Kind::prose:
          out_ << render_markdown(b.text, style()) << "\n";
          m.step();
          break;
        case Block::Kind::directive:
          m.step();
          if (m.paused() && !prompt(m, words_.pause, false)) return status;
          break;
        case Block::Kind::cell:
          show_code(b.text);
          if (!prompt(m, words_.press_enter_run, true)) return status;
          if (!run_cell(m) && !quit_) status = 1;
          break;
        case Block::Kind::check: {
          BlockResult r = run_step(m);
          std::istringstream lines(b.text);
          std::string l;
          while (std::getline(lines, l))
            if (!l.empty()) out_ << paint("2", "  ✓ " + std::string(words_.check) + ": " + l) << "\n";
          if (!r.ok) {  // a check that fails in front of a student is a bug in the lesson: say so plainly
            err_block(r);
            m.skip();
            status = 1;
          }
          out_ << "\n";
          break;
        }
        case Block::Kind::quiz: quiz(m); break;
      }
      if (quit_) return status;
    }
    out_ << paint("1", words_.finished) << "\n";
    return status;
  }

 private:
  TerminalStyle style() const { return {o_.color, o_.width}; }
  std::string paint(const char* code, const std::string& s) const {
    return o_.color ? std::string("\x1b[") + code + "m" + s + "\x1b[0m" : s;
  }

  void header(const Lesson& L) {
    std::string h = std::to_string(L.number) + " · " + L.title + " · ~" + std::to_string(L.minutes) + " " + words_.minutes;
    out_ << paint("1;33", h) << "\n";
    if (!L.prerequisites.empty()) {
      std::string p;
      for (int n : L.prerequisites) p += (p.empty() ? "" : o_.lang == "zh" ? "、" : ", ") + std::to_string(n);
      out_ << paint("2", std::string(words_.prerequisites) + " " + p + words_.prerequisites_end) << "\n";
    }
    out_ << "\n";
  }

  void show_code(const std::string& code) {
    std::istringstream is(code);
    std::string l;
    bool first = true;
    while (std::getline(is, l)) {
      out_ << paint("32", (first ? ">>> " : "... ") + l) << "\n";
      first = false;
    }
  }

  // Reads a line; at the end of the input behaves as if Enter was pressed.
  // Ctrl-C at the prompt leaves the lesson (back to the REPL when :lesson started it).
  std::string ask(const std::string& text) {
    out_ << paint("2", text) << std::flush;
    std::string line;
    bool got = false;
    {
      app::SigintInterrupts ctrl_c(/*restart_reads=*/false);
      got = static_cast<bool>(std::getline(in_, line));
    }
    if (!got && interrupt::requested()) {
      interrupt::clear();
      in_.clear();
      out_ << "\n";
      quit_ = true;
      return "q";
    }
    if (!got) {
      out_ << "\n";
      return o_.interactive ? "q" : "";
    }
    return line;
  }

  // A cell or a line typed at the prompt: Ctrl-C interrupts it (rolled back, shown as its error).
  BlockResult run_step(LessonPlayerModel& m) {
    app::SigintInterrupts ctrl_c;
    return m.step();
  }
  BlockResult run_typed(LessonPlayerModel& m, const std::string& line) {
    app::SigintInterrupts ctrl_c;
    return m.runner().run_code(line);
  }

  // Waits for Enter; lines typed meanwhile run in the lesson's session. False: the student quit.
  bool prompt(LessonPlayerModel& m, const char* what, bool before_cell) {
    (void)before_cell;
    for (;;) {
      std::string line = ask(std::string("[") + what + "]\n>>> ");
      if (line.empty()) return true;
      if (line == "q" || line == ":quit") return false;
      BlockResult r = run_typed(m, line);
      out_ << r.output;
      if (!r.ok) out_ << r.error;
    }
  }

  void err_block(const BlockResult& r) {
    out_ << r.output;
    out_ << paint("31", r.error);
  }

  bool run_cell(LessonPlayerModel& m) {
    for (;;) {
      const size_t at = m.position();
      BlockResult r = run_step(m);
      out_ << r.output;
      if (m.position() != at) {
        out_ << "\n";
        return true;
      }
      err_block(r);
      std::string a = ask(std::string(words_.failed) + "\n> ");
      if (a == "q") {
        quit_ = true;
        return false;
      }
      if (a == "s" || in_.eof()) {
        m.skip();
        return false;
      }
      if (!a.empty() && a != "r") {
        BlockResult t = run_typed(m, a);
        out_ << t.output << (t.ok ? "" : t.error);
      }
    }
  }

  void quiz(LessonPlayerModel& m) {
    const Quiz& q = m.current()->quiz;
    out_ << paint("1;35", "?") << " " << render_markdown(q.question, style());
    for (auto& c : q.choices) out_ << "    " << c << "\n";
    const std::string a = ask(words_.your_answer);
    if (quit_ || (o_.interactive && in_.eof())) {  // Ctrl-C or Ctrl-D: leave; the quiz stays unanswered
      quit_ = true;
      return;
    }
    const bool answered = !a.empty();
    QuizFeedback f = m.answer(a);
    if (f.right) out_ << paint("32", words_.right);
    else out_ << paint(answered ? "33" : "2", std::string(words_.wrong) + " " + f.expected);
    out_ << "\n";
    if (!f.explain.empty()) out_ << "  " << f.explain << "\n";
    out_ << "\n";
  }

  TerminalPlayerOptions o_;
  bool quit_ = false;
  std::istream& in_;
  std::ostream& out_;
  const Words& words_;
};

}  // namespace

int play_in_terminal(const TerminalPlayerOptions& o, std::istream& in, std::ostream& out) {
  std::string id = o.id;
  if (id.empty()) {
    Progress p = load_progress(o.progress_path);
    id = p.last.empty() ? "1" : p.last;
  }
  LessonPlayerModel m(o.dir, o.lang, id, o.progress_path);
  return Player(o, in, out).play(m);
}

int check_lessons(const std::string& dir, const std::string& lang, const std::string& id, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> langs = lang.empty() ? std::vector<std::string>{"en", "zh"} : std::vector<std::string>{lang};
  int failed = 0, passed = 0;
  for (const std::string& l : langs) {
    std::vector<std::string> files = id.empty() ? lesson_files(dir, l) : std::vector<std::string>{find_lesson_file(dir, l, id)};
    if (files.empty()) {
      err << "error: no lessons in " << dir << "/" << l << "\n";
      ++failed;
    }
    for (const std::string& f : files) {
      try {
        Lesson L = load_lesson(f);
        std::string problem = check_lesson(L);
        for (const Exercise* ex : exercises_of(L))  // each both ways: the solution passes, the starter fails
          if (problem.empty()) problem = check_exercise(L, *ex);
        if (problem.empty() && l != "en") {  // the translation carries the English version's cells and checks
          Lesson en = load_lesson(find_lesson_file(dir, "en", std::to_string(L.number)));
          problem = compare_languages(en, L);
        }
        if (!problem.empty()) {
          err << problem << "\n";
          out << "FAIL " << f << "\n";
          ++failed;
          continue;
        }
        out << "PASS " << f << "  (" << L.count(Block::Kind::cell) << " cells, " << L.count(Block::Kind::check) << " checks, "
            << L.count(Block::Kind::quiz) << " quizzes, " << L.count(Block::Kind::exercise) << " exercises)\n";
        ++passed;
      } catch (const Error& e) {
        err << e.what() << "\n";
        if (!e.hint().empty()) err << "hint: " << e.hint() << "\n";
        out << "FAIL " << f << "\n";
        ++failed;
      }
    }
  }
  for (const std::string& l : langs) {  // exercise ids are what students' files are named after: one each
    try {
      if (id.empty()) course_exercises(dir, l);
    } catch (const Error& e) {
      err << e.what() << "\n";
      ++failed;
    }
  }
  out << passed << " lessons passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

void install_lesson_command(lang::Session& session, const TerminalPlayerOptions& base) {
  session.interpreter().add_command(
      {"lesson", "[N] [en|zh]", "the lessons: list them, or play lesson N here (Enter runs each cell)",
       [base](lang::Interpreter&, const std::string& args, std::ostream& out) {
         std::istringstream is(args);
         TerminalPlayerOptions o = base;
         std::string word;
         while (is >> word) {
           if (word == "en" || word == "zh") o.lang = word;
           else o.id = word;
         }
         if (o.id.empty()) {
           list_lessons(o.dir, o.lang, o.progress_path, out);
           out << (o.lang == "zh" ? "输入 :lesson N 开始第 N 课\n" : "type :lesson N to play lesson N\n");
           return;
         }
         play_in_terminal(o, std::cin, out);
       }});
}

void list_lessons(const std::string& dir, const std::string& lang, const std::string& progress_path, std::ostream& out) {
  Progress p = load_progress(progress_path);
  for (const std::string& f : lesson_files(dir, lang)) {
    Lesson L = load_lesson(f);
    std::string key = L.slug.substr(0, L.slug.find('-'));
    auto it = p.lessons.find(key);
    const char* mark = it == p.lessons.end() ? " " : it->second.finished ? "✓" : "…";
    char number[16];
    std::snprintf(number, sizeof number, "%2d", L.number);
    const int pad = std::max(1, 64 - display_width(L.title));  // titles may be Chinese: pad by columns
    out << mark << " " << number << "  " << L.title << std::string(static_cast<size_t>(pad), ' ') << "~" << L.minutes << " "
        << (lang == "zh" ? "分钟" : "min") << "\n";
  }
}

}  // namespace opscope::lesson
