#include "app/lang/parser.h"

#include <cerrno>
#include <cstdlib>

#include "app/lang/error.h"
#include "app/lang/lexer.h"

namespace opscope::lang {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& src) : t_(std::move(toks)), src_(src) {}

  Block program() {
    Block out;
    while (!at(Tok::end)) {
      if (at(Tok::newline)) {
        ++p_;
        continue;
      }
      out.push_back(statement());
    }
    return out;
  }

 private:
  // --- token helpers ---------------------------------------------------------------------
  const Token& cur() const { return t_[p_]; }
  bool at(Tok k) const { return cur().kind == k; }
  // First characters compared before whole strings: the parser asks these many times per token.
  bool at_op(const char* o) const { return cur().kind == Tok::op && cur().text[0] == o[0] && cur().text == o; }
  bool at_name(const char* n) const { return cur().kind == Tok::name && cur().text[0] == n[0] && cur().text == n; }
  Pos pos() const { return {cur().line, cur().col}; }
  // A node for the operator at the current token (its spelling kept in text for the kernel compiler).
  ExprPtr operator_node(Expr::Kind kind, Operator op) const {
    auto e = std::make_unique<Expr>(kind, pos());
    e->op = op;
    e->text = name_of(op);
    return e;
  }
  [[noreturn]] void fail(const std::string& msg, const std::string& hint = {}) const {
    throw LangError(msg, cur().line, cur().col, hint);
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::newline: return "end of line";
      case Tok::end: return "end of input";
      case Tok::indent: return "an indented block";
      case Tok::dedent: return "the end of a block";
      case Tok::string: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* o, const std::string& hint = {}) {
    if (!at_op(o)) fail(std::string("expected '") + o + "', found " + describe(cur()), hint);
    ++p_;
  }
  std::string expect_name(const char* what) {
    if (!at(Tok::name)) fail(std::string("expected ") + what + ", found " + describe(cur()));
    return t_[p_++].text;
  }
  void end_of_statement() {
    if (at_op(";")) {  // `c = a + b; f = relu(c)`: the next statement follows on this line
      ++p_;
      if (at(Tok::newline)) ++p_;
      return;
    }
    if (at(Tok::newline)) {
      ++p_;
      return;
    }
    if (at(Tok::end) || at(Tok::dedent)) return;
    fail("unexpected " + describe(cur()) + " after the end of the statement",
         at_op("=") ? "only names, x.attr and tuples of names can be assigned to" : "put one statement on each line");
  }
  // The text of the statement that began at token `first` (up to its last real token).
  std::string source_from(size_t first) const {
    size_t last = p_;
    while (last > first &&
           (t_[last - 1].kind == Tok::newline || t_[last - 1].kind == Tok::dedent || t_[last - 1].kind == Tok::indent ||
            (t_[last - 1].kind == Tok::op && t_[last - 1].text == ";")))
      --last;
    if (last <= first) return {};
    return src_.substr(t_[first].begin, t_[last - 1].end - t_[first].begin);
  }
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& pp) : p(pp) {
      if (++p.depth_ > kMaxNesting)
        p.fail("nested too deeply (limit " + std::to_string(kMaxNesting) + ")", "split it into several statements");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // --- statements --------------------------------------------------------------------------
  StmtPtr statement() {
    DepthGuard g(*this);
    const size_t first = p_;
    StmtPtr s = statement_inner();
    s->source = source_from(first);
    return s;
  }

  StmtPtr statement_inner() {
    const Pos start = pos();
    if (at(Tok::indent))
      fail("unexpected indentation", "only the body of def, class, for, while, if and no_grad: is indented");
    if (at_op("@")) return decorated();
    if (at_name("def")) return def_stmt({});
    if (at_name("if")) return if_stmt();
    if (at_name("for")) return for_stmt();
    if (at_name("while")) return while_stmt();
    if (at_name("class")) return class_stmt();
    if (at_name("break") || at_name("continue")) {
      const bool brk = cur().text == "break";
      if (loops_.empty() || !loops_.back())
        fail("'" + cur().text + "' outside a loop", "break and continue go inside the body of a for or while loop");
      ++p_;
      end_of_statement();
      return std::make_unique<Stmt>(brk ? Stmt::break_ : Stmt::continue_, start);
    }
    if (at_name("return")) {
      ++p_;
      auto s = std::make_unique<Stmt>(Stmt::ret, start);
      if (!at(Tok::newline) && !at(Tok::end)) s->value = tuple_or_expr();
      end_of_statement();
      return s;
    }
    if (at_name("assert")) {  // assert cond[, message]: lessons check what they state
      ++p_;
      auto s = std::make_unique<Stmt>(Stmt::assert_, start);
      s->value = expr();
      if (at_op(",")) {
        ++p_;
        s->message = expr();
      }
      end_of_statement();
      return s;
    }
    if (at_name("pass")) {
      ++p_;
      end_of_statement();
      return std::make_unique<Stmt>(Stmt::pass, start);
    }
    if (at_name("else") || at_name("elif")) fail("'" + cur().text + "' without an 'if' before it");
    // A named block: `no_grad:` (and later `static:`).
    if (at(Tok::name) && t_[p_ + 1].kind == Tok::op && t_[p_ + 1].text == ":") {
      auto s = std::make_unique<Stmt>(Stmt::block, start);
      s->text = t_[p_].text;
      p_ += 2;
      s->body = block();
      return s;
    }
    ExprPtr first = tuple_or_expr();
    if (at_op("=")) {
      auto s = std::make_unique<Stmt>(Stmt::assign, start);
      check_target(*first);
      s->targets.push_back(std::move(first));
      ++p_;
      ExprPtr value = tuple_or_expr();
      while (at_op("=")) {  // a = b = value
        check_target(*value);
        s->targets.push_back(std::move(value));
        ++p_;
        value = tuple_or_expr();
      }
      s->value = std::move(value);
      end_of_statement();
      return s;
    }
    for (Operator op : {Operator::add, Operator::sub, Operator::mul, Operator::div, Operator::pow, Operator::floor_div})
      if (const std::string o = name_of(op) + std::string("="); at_op(o.c_str())) {
        auto s = std::make_unique<Stmt>(Stmt::aug_assign, start);
        check_target(*first);
        if (first->kind == Expr::tuple) fail("a tuple cannot be the target of " + o);
        s->op = op;
        s->text = name_of(op);
        ++p_;
        s->targets.push_back(std::move(first));
        s->value = expr();
        end_of_statement();
        return s;
      }
    auto s = std::make_unique<Stmt>(Stmt::expr, start);
    s->value = std::move(first);
    end_of_statement();
    return s;
  }

  void check_target(const Expr& e) {
    if (e.kind == Expr::name || e.kind == Expr::attr || e.kind == Expr::index) return;
    if (e.kind == Expr::tuple || e.kind == Expr::list) {
      for (auto& it : e.items) check_target(*it);
      return;
    }
    throw LangError("cannot assign to this expression", e.pos.line, e.pos.col,
                    "assign to a name (x = ...), an attribute (x.requires_grad = ...) or a tuple of names");
  }

  StmtPtr decorated() {
    std::vector<std::string> decos;
    while (at_op("@")) {
      ++p_;
      std::string name = expect_name("a decorator name");
      while (at_op(".")) {  // @swish.backward: the backward of the @op swish
        ++p_;
        name += "." + expect_name("a name after '.'");
      }
      decos.push_back(std::move(name));
      if (!at(Tok::newline)) fail("expected end of line after the decorator");
      ++p_;
    }
    if (!at_name("def")) fail("a decorator must be followed by 'def'");
    return def_stmt(std::move(decos));
  }

  StmtPtr def_stmt(std::vector<std::string> decos) {
    auto s = std::make_unique<Stmt>(Stmt::def, pos());
    ++p_;
    s->text = expect_name("a function name after 'def'");
    s->decorators = std::move(decos);
    expect_op("(", "write def name(a, b):");
    while (!at_op(")")) {
      Param prm;
      prm.pos = pos();
      prm.name = expect_name("a parameter name");
      if (at_op("=")) {
        ++p_;
        prm.default_value = expr();
      } else if (!s->params.empty() && s->params.back().default_value) {
        fail("a parameter without a default cannot follow one with a default");
      }
      s->params.push_back(std::move(prm));
      if (!at_op(",")) break;
      ++p_;
    }
    expect_op(")");
    if (at_op("->")) {  // a return annotation is accepted and ignored
      ++p_;
      expr();
    }
    expect_op(":", "a def line ends with ':'");
    s->body = loop_body(false);
    return s;
  }

  // A block that is (true) or is not (false: a def or class body) directly inside a loop, for
  // break and continue.
  Block loop_body(bool in_loop) {
    loops_.push_back(in_loop);
    Block b = block();
    loops_.pop_back();
    return b;
  }

  StmtPtr while_stmt() {
    auto s = std::make_unique<Stmt>(Stmt::while_, pos());
    ++p_;
    s->value = expr();
    expect_op(":", "a while line ends with ':'");
    s->body = loop_body(true);
    if (at_name("else"))
      fail("'while ... else' is not supported", "put the code after the loop (use break and a flag)");
    return s;
  }

  // class Name: with methods (def), class attributes (name = value) and docstrings. No
  // inheritance: a model is its attributes (parameters(model) finds every parameter).
  StmtPtr class_stmt() {
    auto s = std::make_unique<Stmt>(Stmt::class_, pos());
    ++p_;
    s->text = expect_name("a class name after 'class'");
    if (at_op("(")) {
      ++p_;
      if (!at_op(")"))
        fail("a class here has no base class (there is no inheritance)",
             "write class " + s->text +
                 ": — no nn.Module needed: parameters(model) collects the parameters of its attributes");
      ++p_;
    }
    expect_op(":", "a class line ends with ':'");
    s->body = loop_body(false);
    for (auto& st : s->body) {
      const bool docstring = st->kind == Stmt::expr && st->value->kind == Expr::string;
      if (st->kind != Stmt::def && st->kind != Stmt::assign && st->kind != Stmt::pass && !docstring)
        throw LangError("a class body holds methods (def), class attributes (name = value) and a docstring",
                        st->pos.line, st->pos.col, "put other statements inside a method, such as __init__(self)");
    }
    return s;
  }

  StmtPtr if_stmt() {
    auto s = std::make_unique<Stmt>(Stmt::if_, pos());
    ++p_;  // 'if' or 'elif'
    s->value = expr();
    expect_op(":", "an if line ends with ':'");
    s->body = block();
    if (at_name("elif")) {
      s->orelse.push_back(if_stmt());
    } else if (at_name("else")) {
      ++p_;
      expect_op(":", "write else:");
      s->orelse = block();
    }
    return s;
  }

  StmtPtr for_stmt() {
    auto s = std::make_unique<Stmt>(Stmt::for_, pos());
    ++p_;
    ExprPtr target = loop_target();
    if (target->kind == Expr::name) s->text = target->text;
    s->targets.push_back(std::move(target));
    if (!at_name("in")) fail("expected 'in' after the loop variable", "write for i in range(n): or for x, y in pairs:");
    ++p_;
    s->value = expr();
    expect_op(":", "a for line ends with ':'");
    s->body = loop_body(true);
    return s;
  }

  // for's target: a name, or names to unpack (for xb, yb in batches(...), for i, (a, b) in ...).
  ExprPtr loop_target() {
    const Pos start = pos();
    ExprPtr first = loop_target_item();
    if (!at_op(",")) return first;
    auto t = std::make_unique<Expr>(Expr::tuple, start);
    t->items.push_back(std::move(first));
    while (at_op(",")) {
      ++p_;
      if (at_name("in")) break;
      t->items.push_back(loop_target_item());
    }
    return t;
  }
  ExprPtr loop_target_item() {
    if (at_op("(") || at_op("[")) {
      DepthGuard g(*this);
      const char* close = at_op("(") ? ")" : "]";
      ++p_;
      ExprPtr inner = loop_target();
      expect_op(close);
      return inner;
    }
    const Pos start = pos();
    const std::string name = expect_name("a loop variable after 'for'");
    if (is_keyword(name))
      throw LangError("'" + name + "' cannot be a loop variable", start.line, start.col, "it is a keyword");
    auto e = std::make_unique<Expr>(Expr::name, start);
    e->text = name;
    return e;
  }

  Block block() {
    Block body;
    if (!at(Tok::newline)) {  // one-line body: `if x: y = 1`
      body.push_back(statement());
      return body;
    }
    ++p_;
    if (!at(Tok::indent)) fail("expected an indented block", "indent the body, e.g. by 4 spaces");
    ++p_;
    while (!at(Tok::dedent) && !at(Tok::end)) {
      if (at(Tok::newline)) {
        ++p_;
        continue;
      }
      body.push_back(statement());
    }
    if (at(Tok::dedent)) ++p_;
    return body;
  }

  // --- expressions -------------------------------------------------------------------------
  ExprPtr tuple_or_expr() {
    const Pos start = pos();
    ExprPtr e = expr();
    if (!at_op(",")) return e;
    auto t = std::make_unique<Expr>(Expr::tuple, start);
    t->items.push_back(std::move(e));
    while (at_op(",")) {
      ++p_;
      if (at(Tok::newline) || at_op("=") || at(Tok::end) || at_op(")")) break;  // (4,): a one-item tuple
      t->items.push_back(expr());
    }
    return t;
  }

  // A conditional expression, `a if c else b`, binds loosest (as in Python).
  ExprPtr expr() {
    ExprPtr e = or_expr();
    if (!at_name("if")) return e;
    DepthGuard g(*this);
    auto c = std::make_unique<Expr>(Expr::cond, e->pos);
    ++p_;
    ExprPtr cond = or_expr();
    if (!at_name("else"))
      fail("expected 'else' in a conditional expression, found " + describe(cur()), "write a if condition else b");
    ++p_;
    ExprPtr other = expr();
    c->items.push_back(std::move(e));
    c->items.push_back(std::move(cond));
    c->items.push_back(std::move(other));
    return c;
  }

  ExprPtr or_expr() {
    DepthGuard g(*this);
    ExprPtr l = and_expr();
    while (at_name("or")) {
      auto e = operator_node(Expr::logical, Operator::or_);
      ++p_;
      e->items.push_back(std::move(l));
      e->items.push_back(and_expr());
      l = std::move(e);
    }
    return l;
  }
  ExprPtr and_expr() {
    ExprPtr l = not_expr();
    while (at_name("and")) {
      auto e = operator_node(Expr::logical, Operator::and_);
      ++p_;
      e->items.push_back(std::move(l));
      e->items.push_back(not_expr());
      l = std::move(e);
    }
    return l;
  }
  ExprPtr not_expr() {
    if (at_name("not")) {
      DepthGuard g(*this);
      auto e = operator_node(Expr::unary, Operator::not_);
      ++p_;
      e->items.push_back(not_expr());
      return e;
    }
    return comparison();
  }
  ExprPtr comparison() {
    ExprPtr l = arith();
    for (;;) {
      Operator op = Operator::none;
      if (cur().kind == Tok::op &&
          (cur().text[0] == '=' || cur().text[0] == '!' || cur().text[0] == '<' || cur().text[0] == '>'))
        for (Operator o : {Operator::eq, Operator::ne, Operator::lt, Operator::le, Operator::gt, Operator::ge})
          if (at_op(name_of(o))) op = o;
      if (at_name("in")) op = Operator::in;
      if (op == Operator::none) return l;
      auto e = operator_node(Expr::compare, op);
      ++p_;
      e->items.push_back(std::move(l));
      e->items.push_back(arith());
      l = std::move(e);
    }
  }
  ExprPtr binary_level(int level) {
    static const std::vector<std::vector<Operator>> kLevels = {{Operator::add, Operator::sub},
                                                               {Operator::mul, Operator::div, Operator::matmul,
                                                                Operator::mod, Operator::floor_div}};
    if (level == 2) return unary();
    ExprPtr l = binary_level(level + 1);
    for (;;) {
      Operator found = Operator::none;
      for (Operator o : kLevels[level])
        if (at_op(name_of(o))) found = o;
      if (found == Operator::none) return l;
      auto e = operator_node(Expr::binary, found);
      ++p_;
      e->items.push_back(std::move(l));
      e->items.push_back(binary_level(level + 1));
      l = std::move(e);
    }
  }
  ExprPtr arith() { return binary_level(0); }
  ExprPtr unary() {
    if (at_op("-") || at_op("+")) {
      DepthGuard g(*this);
      auto e = operator_node(Expr::unary, at_op("-") ? Operator::neg : Operator::plus);
      ++p_;
      e->items.push_back(unary());
      return e;
    }
    return power();
  }
  ExprPtr power() {
    ExprPtr base = postfix();
    if (!at_op("**")) return base;
    DepthGuard g(*this);
    auto e = operator_node(Expr::binary, Operator::pow);
    ++p_;
    e->items.push_back(std::move(base));
    e->items.push_back(unary());  // right-associative, binds tighter than unary minus on its left
    return e;
  }
  ExprPtr postfix() {
    ExprPtr e = atom();
    for (;;) {
      if (at_op("(")) {
        DepthGuard g(*this);
        auto c = std::make_unique<Expr>(Expr::call, e->pos);  // errors point at what is called
        ++p_;
        c->items.push_back(std::move(e));
        bool seen_kw = false;
        while (!at_op(")")) {
          Arg a;
          a.pos = pos();
          if (at(Tok::name) && t_[p_ + 1].kind == Tok::op && t_[p_ + 1].text == "=") {
            a.name = t_[p_].text;
            p_ += 2;
            seen_kw = true;
          } else if (seen_kw) {
            fail("a positional argument cannot follow a keyword argument", "put positional arguments first");
          }
          a.value = expr();
          c->args.push_back(std::move(a));
          if (!at_op(",")) break;
          ++p_;
        }
        expect_op(")", "separate arguments with ','");
        e = std::move(c);
      } else if (at_op(".")) {
        ++p_;
        auto a = std::make_unique<Expr>(Expr::attr, pos());  // errors point at the name
        a->text = expect_name("an attribute name after '.'");
        a->items.push_back(std::move(e));
        e = std::move(a);
      } else if (at_op("[")) {
        DepthGuard g(*this);
        auto ix = std::make_unique<Expr>(Expr::index, pos());
        ++p_;
        ix->items.push_back(std::move(e));
        do {
          if (at_op(",")) ++p_;
          if (at_op("]")) break;
          ix->items.push_back(subscript());
        } while (at_op(","));
        expect_op("]");
        if (ix->items.size() < 2) fail("empty index []");
        e = std::move(ix);
      } else {
        return e;
      }
    }
  }
  ExprPtr subscript() {
    const Pos start = pos();
    ExprPtr first;
    if (!at_op(":")) first = expr();
    if (!at_op(":")) return first;
    auto s = std::make_unique<Expr>(Expr::slice, start);
    ++p_;
    s->items.push_back(std::move(first));
    s->items.push_back(at_op(":") || at_op(",") || at_op("]") ? nullptr : expr());
    if (at_op(":")) {
      ++p_;
      s->items.push_back(at_op(",") || at_op("]") ? nullptr : expr());
    } else {
      s->items.push_back(nullptr);
    }
    return s;
  }
  ExprPtr atom() {
    const Pos start = pos();
    const Token& tk = cur();
    switch (tk.kind) {
      case Tok::integer: {
        auto e = std::make_unique<Expr>(Expr::integer, start);
        errno = 0;
        e->int_value = std::strtoll(tk.text.c_str(), nullptr, 10);
        if (errno == ERANGE) fail("integer " + tk.text + " is too large", "integers are 64-bit; write it as a float");
        e->text = tk.text;
        ++p_;
        return e;
      }
      case Tok::real: {
        auto e = std::make_unique<Expr>(Expr::real, start);
        e->real_value = std::strtod(tk.text.c_str(), nullptr);
        e->text = tk.text;
        ++p_;
        return e;
      }
      case Tok::string: {
        auto e = std::make_unique<Expr>(Expr::string, start);
        e->text = tk.text;
        ++p_;
        return e;
      }
      case Tok::name: {
        if ((tk.text[0] == 'T' || tk.text[0] == 'F') && (tk.text == "True" || tk.text == "False")) {
          auto e = std::make_unique<Expr>(Expr::boolean, start);
          e->bool_value = tk.text == "True";
          ++p_;
          return e;
        }
        if (tk.text[0] == 'N' && tk.text == "None") {
          ++p_;
          return std::make_unique<Expr>(Expr::none, start);
        }
        if (is_keyword(tk.text)) fail("'" + tk.text + "' cannot be used here", "it is a keyword");
        auto e = std::make_unique<Expr>(Expr::name, start);
        e->text = tk.text;
        ++p_;
        return e;
      }
      case Tok::op:
        if (tk.text == "(") {
          DepthGuard g(*this);
          ++p_;
          if (at_op(")")) {
            ++p_;
            return std::make_unique<Expr>(Expr::tuple, start);
          }
          ExprPtr inner = tuple_or_expr();
          expect_op(")");
          return inner;
        }
        if (tk.text == "[") {
          DepthGuard g(*this);
          auto e = std::make_unique<Expr>(Expr::list, start);
          ++p_;
          while (!at_op("]")) {
            e->items.push_back(expr());
            if (e->items.size() > kMaxLiteralItems)
              fail("list literal too long (limit " + std::to_string(kMaxLiteralItems) + " items)",
                   "build large tensors with zeros, arange, randn or load");
            if (!at_op(",")) break;
            ++p_;
          }
          expect_op("]", "separate items with ','");
          return e;
        }
        if (tk.text == "{") {  // a dict: {"lr": 0.1, "epochs": 2}
          DepthGuard g(*this);
          auto e = std::make_unique<Expr>(Expr::dict, start);
          ++p_;
          while (!at_op("}")) {
            e->items.push_back(expr());
            expect_op(":", "a dict is written {key: value, ...}");
            e->items.push_back(expr());
            if (e->items.size() > 2 * kMaxLiteralItems)
              fail("dict literal too long (limit " + std::to_string(kMaxLiteralItems) + " entries)");
            if (!at_op(",")) break;
            ++p_;
          }
          expect_op("}", "separate entries with ','");
          return e;
        }
        break;
      default: break;
    }
    fail("expected an expression, found " + describe(tk), tk.kind == Tok::indent ? "remove the extra indentation" : "");
  }

  static bool is_keyword(const std::string& w) {
    static const char* const kKeywords[] = {"def", "if",  "elif", "else",   "for",   "in",    "return",   "and",
                                            "or",  "not", "pass", "assert", "while", "break", "continue", "class"};
    for (const char* k : kKeywords)
      if (w[0] == k[0] && w == k) return true;
    return false;
  }

  std::vector<Token> t_;
  const std::string& src_;
  size_t p_ = 0;
  int depth_ = 0;
  std::vector<bool> loops_;  // per enclosing block: is it a loop body (break/continue allowed)?
};

}  // namespace

Block parse_program(const std::string& source) {
  Parser p(tokenize(source), source);
  return p.program();
}

}  // namespace opscope::lang
