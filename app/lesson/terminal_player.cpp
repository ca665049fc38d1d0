#include "app/lesson/terminal_player.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/exercise_class.h"
#include "app/lesson/lesson_files.h"
#include "app/lesson/player_model.h"
#include "app/lesson/terminal_markdown.h"
#include "app/sigint.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace opscope::lesson {

namespace {

namespace fs = std::filesystem;

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
  const char* goals;
  const char* recap;
  const char* exercise;
  const char* your_file;
  const char* exercise_keys;
  const char* hint;
  const char* no_more_hints;
  const char* solution;
  const char* passed;
  const char* no_editor;
};

const Words kEnglish{
    "min",
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
    "Your turn: try things at the prompt.",
    "You will be able to:",
    "Recap:",
    "Exercise",
    "Your file (the starter is in it; edit it in any editor): ",
    "Enter: check your file · h: a hint · g: give up and see the solution · e: open $EDITOR · s: skip · q: quit",
    "Hint",
    "No more hints.",
    "The reference solution:",
    "Well done: every check passes.",
    "EDITOR is not set: open the file in your editor, save it, then press Enter."};
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
                     "轮到你了：在提示符下试一试。",
                     "学完这一课，你将能够：",
                     "回顾：",
                     "练习",
                     "你的文件（起始代码已经写在里面，用任何编辑器修改）：",
                     "回车：检查你的文件 · h：看一条提示 · g：放弃并查看答案 · e：用 $EDITOR 打开 · s：跳过 · q：退出",
                     "提示",
                     "没有更多提示了。",
                     "参考答案：",
                     "做得好：所有检查都通过了。",
                     "没有设置 EDITOR：用你的编辑器打开这个文件，保存后回车。"};

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
        case Block::Kind::goals:
        case Block::Kind::recap:
          out_ << paint("1;33", b.kind == Block::Kind::goals ? words_.goals : words_.recap) << "\n"
               << render_markdown(b.text, style()) << "\n";
          m.step();
          break;
        case Block::Kind::exercise: exercise(m); break;
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
    std::string h =
        std::to_string(L.number) + " · " + L.title + " · ~" + std::to_string(L.minutes) + " " + words_.minutes;
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
    bool answered = !a.empty();
    QuizFeedback f = m.answer(a);
    while (!f.final) {  // wrong, with a try left
      out_ << paint("33", m.language() == "zh" ? "不太对，再想想。" : "Not quite. Think again.") << "\n";
      const std::string again = ask(words_.your_answer);
      if (quit_ || (o_.interactive && in_.eof())) {
        quit_ = true;
        return;
      }
      answered = !again.empty();
      f = m.answer(again);
    }
    if (f.right) out_ << paint("32", words_.right);
    else out_ << paint(answered ? "33" : "2", std::string(words_.wrong) + " " + f.expected);
    out_ << "\n";
    if (!f.explain.empty()) out_ << "  " << f.explain << "\n";
    out_ << "\n";
  }

  // An exercise: the student edits a file in the lesson's scratch folder (the starter, or the code
  // they had), and each Enter checks it; hints one at a time; giving up shows the solution.
  void exercise(LessonPlayerModel& m) {
    const size_t at = m.position();
    const Exercise& ex = m.current()->exercise;
    out_ << paint("1;36", std::string(words_.exercise) + " " + ex.id + " · " + ex.title) << "\n";
    out_ << paint("3", ex.story) << "\n\n" << render_markdown(ex.prompt, style()) << "\n";
    const std::string path = answer_file(m, ex);
    out_ << words_.your_file << path << "\n";
    for (int i = 0; i < m.exercise(at).saved.hints; ++i) show_hint(ex, i);
    for (;;) {
      const std::string a = ask(std::string("[") + words_.exercise_keys + "]\n> ");
      if (quit_ || a == "q") {
        quit_ = true;
        return;
      }
      if (a == "s") break;
      if (a == "h") {
        const int before = m.exercise(at).saved.hints;
        if (m.reveal_hint(at) == before) out_ << words_.no_more_hints << "\n";
        else show_hint(ex, before);
        continue;
      }
      if (a == "g") {
        m.give_up(at);
        show_solution(ex);
        break;
      }
      if (a == "e") {
        edit(path);
        continue;
      }
      m.set_exercise_code(at, read_text(path));
      const Attempt& r = [&]() -> const Attempt& {
        app::SigintInterrupts ctrl_c;  // Ctrl-C stops a long attempt like its time limit
        return m.check_exercise(at, {}, path);
      }();
      out_ << feedback_text(ex, r, o_.lang == "zh");
      if (r.status == AttemptStatus::passed) {
        out_ << paint("32", words_.passed) << "\n";
        show_solution(ex);
        break;
      }
      if (in_.eof()) break;  // piped input that ran out: go on rather than check the same file forever
    }
    m.skip();
    out_ << "\n";
  }

  // The student's file for an exercise: written with their saved code (or the starter) when absent.
  std::string answer_file(LessonPlayerModel& m, const Exercise& ex) {
    const fs::path dir = lesson_scratch_dir(m.lesson().slug);
    const fs::path p = dir / (ex.id + ".ops");
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      fs::create_directories(dir, ec);
      std::ofstream(p, std::ios::binary) << m.exercise(m.position()).saved.code;
    }
    return p.string();
  }

  static std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  void edit(const std::string& path) {
    const char* editor = std::getenv("EDITOR");
    if (!o_.interactive || !editor || !*editor) {
      out_ << words_.no_editor << "\n";
      return;
    }
    std::string quoted = "'";
    for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    std::system((std::string(editor) + " " + quoted + "'").c_str());
  }

  void show_hint(const Exercise& ex, int i) {
    out_ << paint("1;33",
                  std::string(words_.hint) + " " + std::to_string(i + 1) + "/" + std::to_string(ex.hints.size()) + ":")
         << "\n"
         << render_markdown(ex.hints[static_cast<size_t>(i)], style()) << "\n";
  }

  void show_solution(const Exercise& ex) {
    out_ << paint("1", words_.solution) << "\n";
    show_code(ex.solution);
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

int check_lessons(const std::string& dir, const std::string& lang, const std::string& id, std::ostream& out,
                  std::ostream& err) {
  const std::vector<std::string> langs =
      lang.empty() ? std::vector<std::string>{"en", "zh"} : std::vector<std::string>{lang};
  int failed = 0, passed = 0;
  for (const std::string& l : langs) {
    std::vector<std::string> files =
        id.empty() ? lesson_files(dir, l) : std::vector<std::string>{find_lesson_file(dir, l, id)};
    if (files.empty()) {
      err << "error: no lessons in " << dir << "/" << l << "\n";
      ++failed;
    }
    for (const std::string& f : files) {
      try {
        Lesson L = load_lesson(f);
        std::string problem;  // the course's order first: goals, recap, each quiz before its answer
        for (const std::string& p : structure_problems(L)) problem += (problem.empty() ? "" : "\n") + p;
        if (problem.empty()) problem = check_lesson(L);
        // Each exercise both ways (the solution passes, the starter fails), in the first language
        // checked: the other carries the same code, which compare_languages proves below.
        for (const Exercise* ex : exercises_of(L))
          if (problem.empty() && l == langs.front()) problem = check_exercise(L, *ex);
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
        out << "PASS " << f << "  (" << L.count(Block::Kind::cell) << " cells, " << L.count(Block::Kind::check)
            << " checks, " << L.count(Block::Kind::quiz) << " quizzes, " << L.count(Block::Kind::exercise)
            << " exercises)\n";
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
      if (id.empty() && failed == 0) course_exercises(dir, l);
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

void list_lessons(const std::string& dir, const std::string& lang, const std::string& progress_path,
                  std::ostream& out) {
  Progress p = load_progress(progress_path);
  for (const std::string& f : lesson_files(dir, lang)) {
    Lesson L = load_lesson(f);
    std::string key = L.slug.substr(0, L.slug.find('-'));
    auto it = p.lessons.find(key);
    const char* mark = it == p.lessons.end() ? " " : it->second.finished ? "✓" : "…";
    char number[16];
    std::snprintf(number, sizeof number, "%2d", L.number);
    const int pad = std::max(1, 64 - display_width(L.title));  // titles may be Chinese: pad by columns
    out << mark << " " << number << "  " << L.title << std::string(static_cast<size_t>(pad), ' ') << "~" << L.minutes
        << " " << (lang == "zh" ? "分钟" : "min") << "\n";
  }
}

}  // namespace opscope::lesson
