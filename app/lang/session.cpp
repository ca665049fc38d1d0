#include "app/lang/session.h"

#include <ostream>

#include "app/lang/interpreter.h"
#include "app/lang/lexer.h"
#include "app/lang/parser.h"
#include "core/interrupt.h"

namespace opscope::lang {

std::string format_error(const LangError& e, const SourceText& fallback, bool color) {
  const SourceText& src = e.source() ? *e.source() : fallback;
  const char* red = color ? "\033[1;31m" : "";
  const char* bold = color ? "\033[1m" : "";
  const char* cyan = color ? "\033[36m" : "";
  const char* green = color ? "\033[32m" : "";
  const char* reset = color ? "\033[0m" : "";
  const std::string where = src.filename + ":" + std::to_string(e.line()) + ":" + std::to_string(e.col());
  std::string out =
      e.interrupted() ? std::string(red) + "interrupted" + reset + " at " + bold + where + reset + "\n"
                      : std::string(bold) + where + ":" + reset + " " + red + "error:" + reset + " " + e.what() + "\n";
  // The source line and a caret under the column.
  int line = 1;
  size_t start = 0;
  while (line < e.line() && start < src.text.size()) {
    size_t nl = src.text.find('\n', start);
    if (nl == std::string::npos) {
      start = src.text.size();
      break;
    }
    start = nl + 1;
    ++line;
  }
  if (line == e.line() && start <= src.text.size()) {
    size_t end = src.text.find('\n', start);
    std::string text = src.text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    out += "    " + text + "\n";
    std::string pad;
    for (int c = 1; c < e.col() && c - 1 < static_cast<int>(text.size()); ++c) pad += text[c - 1] == '\t' ? '\t' : ' ';
    out += "    " + pad + green + "^" + reset + "\n";
  }
  out += e.details();
  if (!e.hint().empty()) out += std::string(cyan) + "hint:" + reset + " " + e.hint() + "\n";
  return out;
}

Session::Session(Workspace& ws)
    : rollback_(std::make_unique<StatementRollback>(ws)),
      tape_(std::make_unique<TapePruner>(ws)),
      interp_(std::make_unique<Interpreter>(ws, *rollback_, *tape_)) {}
Session::~Session() = default;

bool Session::run(const std::string& source, const std::string& filename, std::ostream& out, std::ostream& err) {
  Interpreter& in = *interp_;
  auto src = std::make_shared<SourceText>(SourceText{filename, source});
  std::string trimmed = source;
  trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ' || trimmed.back() == '\r'))
    trimmed.pop_back();
  if (!trimmed.empty()) in.add_history(trimmed);
  // Lines that start with ':' in the first column are commands, run in order between the
  // statements around them (lessons mix `:mode static` with code). They are blanked in the
  // code handed to the parser, so every position still refers to the original lines.
  std::vector<std::pair<int, std::string>> commands;
  std::string code;
  {
    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i <= source.size(); ++i)
      if (i == source.size() || source[i] == '\n') {
        std::string text = source.substr(start, i - start);
        if (!text.empty() && text[0] == ':') {
          commands.emplace_back(line, text);
          text.clear();
        }
        code += text;
        if (i < source.size()) code += '\n';
        start = i + 1;
        ++line;
      }
  }
  auto run_command = [&](const std::pair<int, std::string>& c) {
    try {
      in.run_command(c.second, out);
    } catch (const LangError& e) {
      LangError at_line(e.what(), c.first, 1, e.hint());
      at_line.set_details(e.details());
      if (e.interrupted()) at_line.set_interrupted();
      throw at_line;
    } catch (const Error& e) {
      throw LangError(e.what(), c.first, 1, e.hint());
    }
  };
  interrupted_ = false;
  last_error_.reset();
  // A failure while Ctrl-C was pending is the interrupt (whichever wrapper the error went
  // through); the statement was rolled back either way. The request is answered here.
  auto report = [&](LangError e) {
    if (e.interrupted()) {
      interrupt::clear();
      interrupted_ = true;
    } else if (interrupt::requested()) {
      interrupt::clear();
      LangError stop("interrupted", e.line(), e.col(), Interrupted().hint());
      if (e.source()) stop.set_source(e.source());
      stop.set_interrupted();
      e = stop;
      interrupted_ = true;
    }
    err << format_error(e, *src, in.color());
    last_error_ = std::make_shared<const LangError>(e);
  };
  try {
    auto program = std::make_shared<Block>(parse_program(code));
    in.set_source(src);
    size_t next = 0;
    for (auto& stmt : *program) {
      while (next < commands.size() && commands[next].first < stmt->pos.line && !in.quit_requested())
        run_command(commands[next++]);
      if (in.quit_requested()) break;
      in.keep_alive(program);  // a def anywhere inside (even in an if) points into the program
      in.run_statement(*stmt, out);
      if (in.quit_requested()) break;
    }
    while (next < commands.size() && !in.quit_requested()) run_command(commands[next++]);
    return true;
  } catch (const LangError& e) {
    report(e);
  } catch (const Error& e) {  // an engine error outside any expression (should be rare)
    report(LangError(e.what(), 1, 1, e.hint()));
  } catch (const std::bad_alloc&) {
    report(LangError("out of memory", 1, 1, "use smaller tensors"));
  }
  return false;
}

bool Session::needs_more_input(const std::string& buffer) const {
  try {
    tokenize(buffer);
  } catch (const LangError& e) {
    if (std::string(e.what()).find("never closed") != std::string::npos) return true;
    return false;
  }
  // An open block: the first line ends with ':' and the block has not ended with a blank line.
  std::vector<std::string> lines;
  size_t s = 0;
  for (size_t i = 0; i <= buffer.size(); ++i)
    if (i == buffer.size() || buffer[i] == '\n') {
      lines.push_back(buffer.substr(s, i - s));
      s = i + 1;
    }
  while (!lines.empty() && lines.back().find_first_not_of(" \t\r") == std::string::npos) {
    if (lines.size() > 1) return false;  // a blank line ends a block
    lines.pop_back();
  }
  if (lines.empty()) return false;
  auto ends_with_colon = [](const std::string& l) {
    size_t hash = l.find('#');
    std::string code = l.substr(0, hash);
    size_t e = code.find_last_not_of(" \t\r");
    return e != std::string::npos && code[e] == ':' && code.find_first_not_of(" \t") != std::string::npos &&
           code[code.find_first_not_of(" \t")] != ':';
  };
  if (ends_with_colon(lines.back())) return true;
  const size_t first = lines.back().find_first_not_of(" \t");
  if (first != std::string::npos && lines.back()[first] == '@') return true;  // a decorator: its def follows
  for (auto& l : lines)
    if (ends_with_colon(l)) return true;  // inside a block until a blank line
  return false;
}

std::vector<std::string> Session::completions(const std::string& line, size_t cursor) const {
  const Interpreter& in = *interp_;
  cursor = std::min(cursor, line.size());
  size_t start = cursor;
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(line[start - 1])) || line[start - 1] == '_')) --start;
  const std::string word = line.substr(start, cursor - start);
  std::vector<std::string> pool;
  if (start > 0 && line[start - 1] == ':' && line.find_first_not_of(" \t") == start - 1) {
    for (auto& [n, _] : in.commands()) pool.push_back(n);
  } else if (start > 0 && line[start - 1] == '.') {
    pool = tensor_member_names();
    // `model.`, `opt.`, `d.`: the members of a variable that is an object (a simple name before the dot).
    size_t b = start - 1;
    while (b > 0 && (std::isalnum(static_cast<unsigned char>(line[b - 1])) || line[b - 1] == '_')) --b;
    if (const Value* v = b < start - 1 ? in.lookup(line.substr(b, start - 1 - b)) : nullptr) {
      if (v->kind() == Value::instance) {
        const auto& inst = *v->as_instance();
        pool.clear();
        for (auto& [n, _] : inst.attrs) pool.push_back(n);
        for (auto& [n, _] : inst.cls->members) pool.push_back(n);
      } else if (v->kind() == Value::object) {
        pool = v->as_native()->members();
      } else if (v->kind() == Value::dict) {
        pool = {"items", "keys", "values", "get"};
      }
    }
  } else {
    pool = in.all_names();
    // Inside a call `name(...`: its keyword arguments (op attributes) come first.
    int depth = 0;
    for (size_t i = start; i-- > 0;) {
      if (line[i] == ')') ++depth;
      else if (line[i] == '(') {
        if (depth-- > 0) continue;
        size_t e = i, b = i;
        while (b > 0 && (std::isalnum(static_cast<unsigned char>(line[b - 1])) || line[b - 1] == '_')) --b;
        const std::string fn = line.substr(b, e - b);
        if (const OpDef* op = OpRegistry::instance().find(fn)) {
          for (auto& a : op->attrs) pool.push_back(a.name + "=");
          if (op->algorithms.size() > 1) pool.push_back("algo=");
        }
        break;
      }
    }
  }
  std::vector<std::string> out;
  for (auto& c : pool)
    if (c.compare(0, word.size(), word) == 0 && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  std::sort(out.begin(), out.end());
  return out;
}

bool Session::quit_requested() const { return interp_->quit_requested(); }
bool Session::interrupted() const { return interrupted_; }
void Session::set_color(bool on) { interp_->set_color(on); }
void Session::set_echo_expressions(bool on) { interp_->set_echo(on); }
const std::vector<ShownValue>& Session::shown() const { return interp_->shown(); }
const std::vector<std::string>& Session::history() const { return interp_->history(); }

}  // namespace opscope::lang
