// Parses a lesson with md4c. md4c finds the top-level fenced blocks and HTML comments (so a
// fence inside a list or a quoted block is not mistaken for a cell); the prose between them is
// kept as the author's Markdown, which the players render with md4c again.
#include "app/lesson/lesson.h"
#include "app/kernel_lab.h"
#include "app/shipped_dir.h"

#include <md4c.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace opscope::lesson {

namespace fs = std::filesystem;

const char* kind_name(Block::Kind k) {
  switch (k) {
    case Block::Kind::prose: return "prose";
    case Block::Kind::cell: return "cell";
    case Block::Kind::check: return "check";
    case Block::Kind::quiz: return "quiz";
    case Block::Kind::directive: return "directive";
    case Block::Kind::exercise: return "exercise";
    case Block::Kind::goals: return "goals";
    case Block::Kind::recap: return "recap";
  }
  return "?";
}

int Lesson::count(Block::Kind k) const {
  return static_cast<int>(std::count_if(blocks.begin(), blocks.end(), [&](const Block& b) { return b.kind == k; }));
}

namespace {

const char* const kDirectives[] = {"show", "highlight", "pause"};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

[[noreturn]] void fail_at(const std::string& path, int line, const std::string& message, const std::string& hint = {}) {
  throw Error(path + ":" + std::to_string(line) + ": " + message, hint);
}

// Line numbers of byte offsets (1-based).
class LineIndex {
 public:
  explicit LineIndex(const std::string& text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(i + 1);
  }
  int line_of(size_t offset) const {
    return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
  }
  size_t start_of(int line) const { return starts_[std::clamp(line - 1, 0, static_cast<int>(starts_.size()) - 1)]; }
  int lines() const { return static_cast<int>(starts_.size()); }

 private:
  std::vector<size_t> starts_;
};

// A top-level block md4c reported that is not prose: a fenced cell/check/quiz or an HTML block.
struct Special {
  Block::Kind kind;
  int first_line = 0, last_line = 0;  // inclusive, fences included
  std::string info;  // the fence's language
  bool expect_error = false;  // "ops fails"
  bool desktop_only = false;  // "ops desktop", "check desktop"
  std::string content;
};

struct Walk {
  const std::string* text = nullptr;
  const LineIndex* lines = nullptr;
  int depth = 0;
  bool in_fence = false, in_html = false;
  Special cur;
  size_t html_begin = std::string::npos, html_end = 0;
  std::vector<Special> found;

  size_t offset(const MD_CHAR* p) const { return static_cast<size_t>(p - text->data()); }
  bool inside(const MD_CHAR* p) const { return p >= text->data() && p < text->data() + text->size(); }
};

// The line of a fenced block's closing fence: the first later line made of at least as many of
// the same fence characters (CommonMark's rule); the last line when the fence is never closed.
int closing_fence_line(const std::string& text, const LineIndex& li, int open_line) {
  auto line_text = [&](int l) {
    size_t a = li.start_of(l), b = text.find('\n', a);
    return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
  };
  std::string open = trim(line_text(open_line));
  const char fc = open.empty() ? '`' : open[0];
  const size_t n = open.find_first_not_of(fc);
  for (int l = open_line + 1; l <= li.lines(); ++l) {
    std::string t = trim(line_text(l));
    if (t.size() >= n && t.find_first_not_of(fc) == std::string::npos) return l;
  }
  return li.lines();
}

int enter_block(MD_BLOCKTYPE type, void* detail, void* user) {
  auto& w = *static_cast<Walk*>(user);
  ++w.depth;
  if (w.depth != 2) return 0;  // depth 1 is the document; 2 its top-level blocks
  if (type == MD_BLOCK_CODE) {
    auto* d = static_cast<MD_BLOCK_CODE_DETAIL*>(detail);
    std::string info(d->lang.text ? d->lang.text : "", d->lang.size);
    Block::Kind kind;
    if (info == "ops") kind = Block::Kind::cell;
    else if (info == "check") kind = Block::Kind::check;
    else if (info == "quiz") kind = Block::Kind::quiz;
    else if (info == "exercise") kind = Block::Kind::exercise;
    else if (info == "goals") kind = Block::Kind::goals;
    else if (info == "recap") kind = Block::Kind::recap;
    else return 0;  // an ordinary code sample stays prose
    if (!d->fence_char || !w.inside(d->info.text)) return 0;
    w.in_fence = true;
    w.cur = Special{kind, w.lines->line_of(w.offset(d->info.text)), 0, info, false, {}};
    const std::string full(d->info.text, d->info.size);
    w.cur.expect_error = kind == Block::Kind::cell && full.find(" fails") != std::string::npos;
    w.cur.desktop_only =
        (kind == Block::Kind::cell || kind == Block::Kind::check) && full.find(" desktop") != std::string::npos;
  } else if (type == MD_BLOCK_HTML) {
    w.in_html = true;
    w.cur = Special{Block::Kind::directive, 0, 0, {}, false, {}};
    w.html_begin = std::string::npos;
  }
  return 0;
}

int leave_block(MD_BLOCKTYPE, void*, void* user) {
  auto& w = *static_cast<Walk*>(user);
  if (w.depth == 2 && w.in_fence) {
    w.cur.last_line = closing_fence_line(*w.text, *w.lines, w.cur.first_line);
    w.found.push_back(std::move(w.cur));
  } else if (w.depth == 2 && w.in_html && w.html_begin != std::string::npos) {
    std::string t = trim(w.cur.content);
    // Only comments are directives; other HTML stays prose.
    if (t.rfind("<!--", 0) == 0 && t.size() >= 7 && t.compare(t.size() - 3, 3, "-->") == 0) {
      w.cur.first_line = w.lines->line_of(w.html_begin);
      w.cur.last_line = w.lines->line_of(w.html_end > 0 ? w.html_end - 1 : 0);
      w.cur.content = trim(t.substr(4, t.size() - 7));
      w.found.push_back(std::move(w.cur));
    }
  }
  if (w.depth == 2) w.in_fence = w.in_html = false;
  --w.depth;
  return 0;
}

int on_text(MD_TEXTTYPE, const MD_CHAR* text, MD_SIZE size, void* user) {
  auto& w = *static_cast<Walk*>(user);
  if (!(w.in_fence || w.in_html)) return 0;
  w.cur.content.append(text, size);
  if (w.in_html && w.inside(text)) {
    w.html_begin = std::min(w.html_begin, w.offset(text));
    w.html_end = std::max(w.html_end, w.offset(text) + size);
  }
  return 0;
}

int no_span(MD_SPANTYPE, void*, void*) { return 0; }

Quiz parse_quiz(const std::string& body, const std::string& path, int line) {
  Quiz q;
  std::istringstream is(body);
  std::string l, question;
  auto value_of = [](const std::string& s, const char* key) { return trim(s.substr(std::string(key).size())); };
  while (std::getline(is, l)) {
    std::string t = trim(l);
    if (t.rfind("answer:", 0) == 0) q.answer = value_of(t, "answer:");
    else if (t.rfind("verify:", 0) == 0) q.verify = value_of(t, "verify:");
    else if (t.rfind("explain:", 0) == 0) q.explain = value_of(t, "explain:");
    else if (t.size() > 2 && std::islower(static_cast<unsigned char>(t[0])) && t[1] == ')' && t[2] == ' ')
      q.choices.push_back(t);
    else if (!q.explain.empty()) q.explain += " " + t;  // explain may run over several lines
    else question += (question.empty() ? "" : "\n") + l;
  }
  q.question = trim(question);
  if (q.question.empty())
    fail_at(path, line, "this quiz has no question", "write the question on the quiz's first lines");
  if (q.answer.empty()) fail_at(path, line, "this quiz has no answer", "add a line `answer: ...`");
  if (!q.choices.empty()) {
    bool found = false;
    for (auto& c : q.choices) found = found || normalize_answer(c.substr(3)) == normalize_answer(q.answer);
    if (!found)
      fail_at(path, line, "the quiz's answer '" + q.answer + "' is none of its choices",
              "the answer is the choice's text");
  }
  return q;
}

// `show: PANEL`; the Kernel Lab may add its operator and sizes (`show: kernel_lab matmul 64`).
void check_show_argument(const std::string& argument, const std::string& path, int line) {
  std::istringstream words(argument);
  std::string panel, op, size;
  words >> panel;
  if (!find_show_panel(panel)) {
    std::string all;
    for (const ShowPanel& p : show_panels()) all += (all.empty() ? "" : ", ") + std::string(p.id);
    fail_at(path, line, "show: no panel named '" + panel + "'", "panels: " + all);
  }
  if (!(words >> op)) return;
  if (panel != "kernel_lab")
    fail_at(path, line, "show: " + panel + " takes no more words, got '" + op + "'", "write show: " + panel);
  const auto ops = app::lab_ops();
  if (std::find(ops.begin(), ops.end(), op) == ops.end() && op != "attention")
    fail_at(path, line, "show: the kernel lab cannot feed '" + op + "'", "e.g. show: kernel_lab matmul 64");
  while (words >> size)
    if (size.size() > 9 || size.find_first_not_of("0123456789") != std::string::npos || std::stoll(size) <= 0)
      fail_at(path, line, "show: kernel_lab's sizes are positive numbers, got '" + size + "'", app::lab_usage(op));
}

// `<!-- show: memory -->`, one directive per line inside the comment.
std::vector<Directive> parse_directives(const std::string& body, const std::string& path, int line) {
  std::vector<Directive> out;
  std::istringstream is(body);
  std::string l;
  while (std::getline(is, l)) {
    std::string t = trim(l);
    if (t.empty()) continue;
    const size_t colon = t.find(':');
    Directive d{trim(t.substr(0, colon)), colon == std::string::npos ? "" : trim(t.substr(colon + 1))};
    if (std::find(std::begin(kDirectives), std::end(kDirectives), d.name) == std::end(kDirectives))
      fail_at(path, line, "unknown directive '" + d.name + "'",
              "directives are show: PANEL, highlight: NAME, pause (lessons/README.md); the knowledge map is "
              "assets/knowledge_map.txt");
    if (d.name != "pause" && d.argument.empty()) fail_at(path, line, "directive '" + d.name + "' needs an argument");
    if (d.name == "show") check_show_argument(d.argument, path, line);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& s, const std::string& path, int line) {
  std::vector<int> out;
  std::string t = trim(s);
  if (t == "none" || t.empty()) return out;
  if (t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::istringstream is(t);
  std::string item;
  while (std::getline(is, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (*end) fail_at(path, line, "prerequisites are lesson numbers, got '" + item + "'", "e.g. prerequisites: [1, 3]");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// `---` key: value lines `---` at the top. Returns the offset where the body starts.
size_t parse_front_matter(const std::string& text, const LineIndex& li, Lesson& L) {
  if (text.rfind("---", 0) != 0)
    fail_at(L.path, 1, "a lesson starts with front matter",
            "---\\nid: 1\\ntitle: ...\\nminutes: 10\\nprerequisites: []\\n---");
  bool has_id = false, closed = false;
  int line = 2;
  size_t body = text.size();
  for (; line <= li.lines(); ++line) {
    size_t a = li.start_of(line), b = text.find('\n', a);
    std::string t = trim(text.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (t == "---") {
      body = b == std::string::npos ? text.size() : b + 1;
      closed = true;
      break;
    }
    if (t.empty()) continue;
    const size_t colon = t.find(':');
    if (colon == std::string::npos) fail_at(L.path, line, "front matter lines are `key: value`, got '" + t + "'");
    std::string key = trim(t.substr(0, colon)), value = trim(t.substr(colon + 1));
    if (key == "id") {
      L.number = std::atoi(value.c_str());
      has_id = L.number > 0;
    } else if (key == "title") {
      // YAML allows quoting a title that holds a colon: "Softmax: overflow"
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
        value = value.substr(1, value.size() - 2);
      L.title = value;
    } else if (key == "minutes") {
      L.minutes = std::atoi(value.c_str());
    } else if (key == "prerequisites") {
      L.prerequisites = parse_int_list(value, L.path, line);
    } else {
      fail_at(L.path, line, "unknown front matter key '" + key + "'", "the keys are id, title, minutes, prerequisites");
    }
  }
  if (!closed) fail_at(L.path, 1, "the front matter is not closed", "end it with a line `---`");
  if (!has_id) fail_at(L.path, 1, "the front matter needs `id: N` (the lesson's number, from 1)");
  if (L.title.empty()) fail_at(L.path, 1, "the front matter needs `title: ...`");
  if (L.minutes <= 0) fail_at(L.path, 1, "the front matter needs `minutes: N` (the estimated time)");
  return body;
}

}  // namespace

Lesson parse_lesson(const std::string& text, const std::string& path) {
  Lesson L;
  L.path = path;
  fs::path p(path);
  L.slug = p.stem().string();
  L.lang = p.parent_path().filename().string();
  const LineIndex li(text);
  const size_t body = parse_front_matter(text, li, L);

  Walk w;
  w.text = &text;
  w.lines = &li;
  MD_PARSER parser{};
  parser.abi_version = 0;
  parser.flags = MD_DIALECT_GITHUB;
  parser.enter_block = enter_block;
  parser.leave_block = leave_block;
  parser.enter_span = no_span;
  parser.leave_span = no_span;
  parser.text = on_text;
  if (md_parse(text.data() + body, static_cast<MD_SIZE>(text.size() - body), &parser, &w) != 0)
    fail_at(path, li.line_of(body), "md4c could not parse this lesson");

  // Prose is the source between special blocks, kept as Markdown.
  int next_line = li.line_of(body);
  auto add_prose = [&](int from, int to) {  // lines [from, to)
    if (to <= from) return;
    size_t a = li.start_of(from), b = to > li.lines() ? text.size() : li.start_of(to);
    std::string md = text.substr(a, b - a);
    if (trim(md).empty()) return;
    // Start the block at its first non-blank line, so messages point at text.
    int first = from;
    while (first < to && trim(text.substr(li.start_of(first), li.start_of(first + 1) - li.start_of(first))).empty())
      ++first;
    Block blk;
    blk.kind = Block::Kind::prose;
    blk.line = first;
    blk.text = trim(md);
    L.blocks.push_back(std::move(blk));
  };
  for (Special& s : w.found) {
    add_prose(next_line, s.first_line);
    next_line = s.last_line + 1;
    if (s.kind == Block::Kind::directive) {
      for (Directive& d : parse_directives(s.content, path, s.first_line)) {
        Block blk;
        blk.kind = Block::Kind::directive;
        blk.line = s.first_line;
        blk.directive = std::move(d);
        L.blocks.push_back(std::move(blk));
      }
      continue;
    }
    Block blk;
    blk.kind = s.kind;
    blk.line = s.first_line;
    blk.text = s.content;
    blk.expect_error = s.expect_error;
    blk.desktop_only = s.desktop_only;
    if (trim(s.content).empty()) fail_at(path, s.first_line, "this ```" + s.info + " block is empty");
    if (s.kind == Block::Kind::quiz) blk.quiz = parse_quiz(s.content, path, s.first_line);
    if (s.kind == Block::Kind::exercise) blk.exercise = parse_exercise(s.content, path, s.first_line + 1);
    if (s.kind == Block::Kind::goals || s.kind == Block::Kind::recap) blk.text = trim(s.content);
    L.blocks.push_back(std::move(blk));
  }
  add_prose(next_line, li.lines() + 1);
  return L;
}

Lesson load_lesson(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open lesson '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_lesson(ss.str(), path);
}

const std::vector<ShowPanel>& show_panels() {
  static const std::vector<ShowPanel> panels{{"graph", "Graph", "计算图"},
                                             {"map", "knowledge map", "知识体系总览"},
                                             {"inspector", "inspector", "检查器"},
                                             {"memory", "memory", "内存"},
                                             {"metrics", "Metrics", "指标"},
                                             {"console", "Console", "控制台"},
                                             {"kernel_lab", "Kernel Lab", "Kernel Lab"}};
  return panels;
}

const ShowPanel* find_show_panel(const std::string& id) {
  for (const ShowPanel& p : show_panels())
    if (id == p.id) return &p;
  return nullptr;
}

std::string lessons_dir() {
#ifdef OPSCOPE_LESSONS_DIR
  const char* built_in = OPSCOPE_LESSONS_DIR;
#else
  const char* built_in = nullptr;
#endif
  const std::string dir = app::find_shipped_dir("OPSCOPE_LESSONS", built_in, "lessons", "lessons",
                                                [](const fs::path& d) { return fs::is_directory(d / "en"); });
  if (dir.empty())
    throw Error("cannot find the lessons folder", "set OPSCOPE_LESSONS to the repository's lessons/ folder");
  return dir;
}

std::vector<std::string> lesson_files(const std::string& dir, const std::string& lang) {
  const fs::path d = fs::path(dir) / lang;
  if (!fs::is_directory(d))
    throw Error("no lessons in language '" + lang + "' (" + d.string() + ")", "the languages are en and zh");
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(d)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".md" && name.size() > 3 &&
        std::isdigit(static_cast<unsigned char>(name[0])))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string find_lesson_file(const std::string& dir, const std::string& lang, const std::string& id) {
  const auto files = lesson_files(dir, lang);
  const bool numeric = !id.empty() && std::all_of(id.begin(), id.end(),
                                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  std::string names;
  for (auto& f : files) {
    const std::string stem = fs::path(f).stem().string();
    names += (names.empty() ? "" : ", ") + stem;
    if (numeric && std::atoi(stem.c_str()) == std::atoi(id.c_str())) return f;
    if (!numeric && stem.find(id) != std::string::npos) return f;
  }
  throw Error("no lesson '" + id + "'", "the lessons are " + names);
}

std::string compare_languages(const Lesson& a, const Lesson& b) {
  if (a.number != b.number || a.minutes != b.minutes || a.prerequisites != b.prerequisites)
    return a.path + " and " + b.path + ": the front matter differs (id, minutes or prerequisites)";
  // Block by block, so a player can switch language in the middle of a lesson; prose is
  // translated, everything else must be the same.
  for (size_t i = 0; i < std::min(a.blocks.size(), b.blocks.size()); ++i) {
    const Block &x = a.blocks[i], &y = b.blocks[i];
    const std::string where = a.path + ":" + std::to_string(x.line) + " and " + b.path + ":" + std::to_string(y.line);
    if (x.kind != y.kind) return where + ": a " + kind_name(x.kind) + " against a " + kind_name(y.kind);
    bool same = true;
    switch (x.kind) {
      case Block::Kind::prose:
      case Block::Kind::goals:
      case Block::Kind::recap: break;
      case Block::Kind::exercise:
        if (std::string d = compare_exercises(x.exercise, y.exercise); !d.empty()) return where + ": " + d;
        break;
      case Block::Kind::cell:
      case Block::Kind::check:
        same = x.text == y.text && x.expect_error == y.expect_error && x.desktop_only == y.desktop_only;
        break;
      case Block::Kind::quiz:
        same = normalize_answer(x.quiz.answer) == normalize_answer(y.quiz.answer) && x.quiz.verify == y.quiz.verify &&
               x.quiz.choices.size() == y.quiz.choices.size();
        break;
      case Block::Kind::directive:
        same = x.directive.name == y.directive.name && x.directive.argument == y.directive.argument;
        break;
    }
    if (!same) return where + ": the " + std::string(kind_name(x.kind)) + "s differ";
  }
  if (a.blocks.size() != b.blocks.size())
    return a.path + " has " + std::to_string(a.blocks.size()) + " blocks, " + b.path + " has " +
           std::to_string(b.blocks.size()) + " (prose, cells, checks, quizzes and directives must line up)";
  return {};
}

std::vector<std::string> structure_problems(const Lesson& L) {
  std::vector<std::string> out;
  auto at = [&](const Block& b) { return L.path + ":" + std::to_string(b.line) + ": "; };
  const Block* goals = nullptr;
  const Block* first_cell = nullptr;
  for (const Block& b : L.blocks) {
    if (b.kind == Block::Kind::goals) {
      if (goals) out.push_back(at(b) + "a second ```goals block (a lesson opens with one)");
      else if (first_cell)
        out.push_back(at(b) + "the ```goals block comes after the first cell: open the lesson with it");
      goals = goals ? goals : &b;
    }
    if (b.kind == Block::Kind::cell && !first_cell) first_cell = &b;
  }
  if (!goals)
    out.push_back(L.path + ":1: the lesson has no ```goals block: open it with what the student will be able to do");
  const Block* last = nullptr;  // the last block that is not a directive
  int recaps = 0;
  for (const Block& b : L.blocks) {
    recaps += b.kind == Block::Kind::recap;
    if (b.kind != Block::Kind::directive) last = &b;
  }
  if (recaps > 1) out.push_back(L.path + ": " + std::to_string(recaps) + " ```recap blocks (a lesson closes with one)");
  if (!last || last->kind != Block::Kind::recap)
    out.push_back((last ? at(*last) : L.path + ":1: ") + "the lesson does not close with a ```recap block");
  // Predict, then run: the cell that answers a quiz comes after it, before anything else is checked.
  for (size_t i = 0; i < L.blocks.size(); ++i) {
    if (L.blocks[i].kind != Block::Kind::quiz) continue;
    size_t j = i + 1;
    while (j < L.blocks.size() &&
           (L.blocks[j].kind == Block::Kind::prose || L.blocks[j].kind == Block::Kind::directive))
      ++j;
    if (j == L.blocks.size() || L.blocks[j].kind != Block::Kind::cell)
      out.push_back(
          at(L.blocks[i]) +
          "this quiz is not followed by the cell that answers it (ask it before the cell, then run the cell)");
  }
  return out;
}

std::vector<const Exercise*> exercises_of(const Lesson& L) {
  std::vector<const Exercise*> out;
  for (const Block& b : L.blocks)
    if (b.kind == Block::Kind::exercise) out.push_back(&b.exercise);
  return out;
}

std::string normalize_answer(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (!std::isspace(c)) out += static_cast<char>(std::tolower(c));
  while (!out.empty() && out.back() == '.') out.pop_back();
  // The CJK full stop U+3002 is E3 80 82.
  if (out.size() >= 3 && out.compare(out.size() - 3, 3, "\xe3\x80\x82") == 0) out.resize(out.size() - 3);
  return out;
}

bool answers_equal(const std::string& a, const std::string& b) {
  const std::string x = normalize_answer(a), y = normalize_answer(b);
  if (x == y) return !x.empty();
  // Numbers compare as numbers: "0" is "0.0", "1e3" is "1000".
  char *ex = nullptr, *ey = nullptr;
  const double u = std::strtod(x.c_str(), &ex), v = std::strtod(y.c_str(), &ey);
  return !x.empty() && !y.empty() && *ex == '\0' && *ey == '\0' &&
         std::fabs(u - v) <= 1e-9 * std::max(1.0, std::fabs(v));
}

bool quiz_answer_matches(const Quiz& q, const std::string& given) {
  const std::string g = normalize_answer(given);
  if (g.empty()) return false;
  if (answers_equal(given, q.answer)) return true;
  for (auto& c : q.choices)  // the letter of the right choice
    if (normalize_answer(c.substr(3)) == normalize_answer(q.answer) &&
        (g == std::string(1, c[0]) || g == std::string(1, c[0]) + ")"))
      return true;
  return false;
}

}  // namespace opscope::lesson
