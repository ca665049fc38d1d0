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
  std::string text;  // name, attribute name, operator, string value, number text
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
  std::string text;  // def/class: name; for: loop variable (one name); block: block name; aug_assign: op; command
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
