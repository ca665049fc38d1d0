// The syntax tree of the script language. Every node keeps the position of its first token
// so errors can point a caret at it.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace opscope::lang {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

// The operators of expressions (`a + b`, `not x`, `a < b`, `a and b`) and of augmented
// assignments (`x += 1` holds add). The parser sets them; evaluation switches on them.
enum class Operator {
  none,  // a node that is no operator
  add,
  sub,
  mul,
  div,
  floor_div,
  mod,
  pow,
  matmul,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  in,
  and_,
  or_,
  not_,
  neg,  // unary -
  plus  // unary +
};

// How the source spells an operator ("//", "not", "-"): for messages and printed programs.
constexpr const char* name_of(Operator op) {
  switch (op) {
    case Operator::none: return "";
    case Operator::add: return "+";
    case Operator::sub: return "-";
    case Operator::mul: return "*";
    case Operator::div: return "/";
    case Operator::floor_div: return "//";
    case Operator::mod: return "%";
    case Operator::pow: return "**";
    case Operator::matmul: return "@";
    case Operator::eq: return "==";
    case Operator::ne: return "!=";
    case Operator::lt: return "<";
    case Operator::le: return "<=";
    case Operator::gt: return ">";
    case Operator::ge: return ">=";
    case Operator::in: return "in";
    case Operator::and_: return "and";
    case Operator::or_: return "or";
    case Operator::not_: return "not";
    case Operator::neg: return "-";
    case Operator::plus: return "+";
  }
  return "?";
}

struct Pos {
  int line = 1, col = 1;
};

struct Arg {  // positional (name empty) or keyword argument
  std::string name;
  ExprPtr value;
  Pos pos;
};

struct Expr {
  enum Kind {
    integer,
    real,
    string,
    boolean,
    none,
    name,
    list,
    tuple,
    unary,
    binary,
    compare,
    logical,
    call,
    attr,
    index,
    slice,
    dict,  // {k: v, ...}: items are k0, v0, k1, v1, ...
    cond  // a if c else b: items are a, c, b
  } kind;
  Pos pos;
  Operator op = Operator::none;  // unary, binary, compare, logical
  std::string text;  // name, attribute name, string value, number text; an operator's spelling (name_of(op))
  int64_t int_value = 0;
  double real_value = 0;
  bool bool_value = false;
  std::vector<ExprPtr> items;  // list/tuple elements; unary/binary/compare/logical operands; index subscripts;
      // slice start/stop/step (null = omitted); attr/call/index object is items[0]
  std::vector<Arg> args;  // call arguments
  Expr(Kind k, Pos p) : kind(k), pos(p) {}
};

struct Param {
  std::string name;
  ExprPtr default_value;
  Pos pos;
};

struct Stmt {
  enum Kind {
    expr,
    assign,
    aug_assign,
    def,
    ret,
    if_,
    for_,
    block,
    pass,
    command,
    assert_,
    while_,
    break_,
    continue_,
    class_
  } kind;
  Pos pos;
  Operator op = Operator::none;  // aug_assign: `x += 1` holds add
  std::string text;  // def/class: name; for: loop variable (one name); block: block name; aug_assign: op's spelling;
      // command
  std::vector<ExprPtr> targets;  // assign targets (a tuple target is one Expr of kind tuple); for: its target
  ExprPtr value;  // expr, assign value, return value, if/while condition, for iterable, assert condition
  ExprPtr message;  // assert's optional message (assert cond, "message")
  std::vector<Param> params;  // def
  Block body, orelse;  // def/for/while/if/class/block bodies; if's else (an elif is a nested if)
  std::vector<std::string> decorators;
  std::string source;  // the statement's source text (for --json and history)
  Stmt(Kind k, Pos p) : kind(k), pos(p) {}
};

}  // namespace opscope::lang
