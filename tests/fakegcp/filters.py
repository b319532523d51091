"""AIP-160 list filters, the subset Vertex AI documents for customJobs.list (also used for Cloud Quotas).

Grammar (AIP-160):
    filter     := sequence { AND sequence }            (AND binds loosest)
    sequence   := factor { factor }                    (implicit AND)
    factor     := term { OR term }                     (OR binds tighter than AND)
    term       := [NOT | -] simple
    simple     := '(' filter ')' | comparison
    comparison := field op value ;  op in = != < <= > >= :
    field      := name { '.' (name | "quoted") }       e.g. labels.vx-stack, labels."vx-stack"
    value      := bare word | "quoted string" | *

compile(text, resolver) returns a predicate obj -> bool. `resolver(field_parts, op, value)` returns a
function obj -> bool for one comparison, or raises FilterError for an unsupported field/op.
"""

import fnmatch
import re


class FilterError(Exception):
    pass


_TOKEN_RE = re.compile(r'''
    (?P<ws>\s+)
  | (?P<lp>\()
  | (?P<rp>\))
  | (?P<op><=|>=|!=|=|<|>|:)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<ts>\d{4}-\d{2}-\d{2}[Tt][0-9:.]+(?:[Zz]|[+-]\d{2}:\d{2})?)
  | (?P<word>[^\s()=!<>:"']+)
''', re.X)


def tokenize(text):
    toks = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise FilterError("Invalid filter: unexpected character at position %d" % pos)
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        v = m.group(kind)
        if kind == "ts":
            kind = "word"
        elif kind == "str":
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        toks.append((kind, v))
    return toks


class _Parser:
    def __init__(self, toks, resolver):
        self.toks = toks
        self.i = 0
        self.resolver = resolver

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def is_kw(self, word, k=0):
        t = self.peek(k)
        return t[0] == "word" and t[1] == word

    def parse(self):
        if not self.toks:
            return lambda o: True
        f = self.expr()
        if self.i != len(self.toks):
            raise FilterError("Invalid filter: unexpected token %r" % (self.peek()[1],))
        return f

    def expr(self):
        parts = [self.sequence()]
        while self.is_kw("AND"):
            self.take()
            parts.append(self.sequence())
        return parts[0] if len(parts) == 1 else (lambda o, ps=parts: all(p(o) for p in ps))

    def sequence(self):
        parts = [self.factor()]
        while True:
            t = self.peek()
            if t[0] is None or t[0] == "rp" or self.is_kw("AND"):
                break
            parts.append(self.factor())
        return parts[0] if len(parts) == 1 else (lambda o, ps=parts: all(p(o) for p in ps))

    def factor(self):
        parts = [self.term()]
        while self.is_kw("OR"):
            self.take()
            parts.append(self.term())
        return parts[0] if len(parts) == 1 else (lambda o, ps=parts: any(p(o) for p in ps))

    def term(self):
        if self.is_kw("NOT"):
            self.take()
            inner = self.simple()
            return lambda o: not inner(o)
        t = self.peek()
        if t[0] == "word" and t[1] == "-":
            self.take()
            inner = self.simple()
            return lambda o: not inner(o)
        if t[0] == "word" and t[1].startswith("-") and len(t[1]) > 1 and self.peek(1)[0] == "op":
            self.toks[self.i] = ("word", t[1][1:])
            inner = self.simple()
            return lambda o: not inner(o)
        return self.simple()

    def simple(self):
        t = self.peek()
        if t[0] == "lp":
            self.take()
            f = self.expr()
            if self.take()[0] != "rp":
                raise FilterError("Invalid filter: missing ')'")
            return f
        return self.comparison()

    def field(self):
        t = self.take()
        if t[0] not in ("word", "str"):
            raise FilterError("Invalid filter: expected a field name, got %r" % (t[1],))
        parts = []
        text = t[1]
        if t[0] == "str":
            parts.append(text)
        else:
            parts.extend(p for p in text.split(".") if p != "")
            # labels."vx-stack" tokenizes as word 'labels.' + string 'vx-stack'
            while text.endswith(".") and self.peek()[0] == "str":
                text = self.take()[1]
                parts.append(text)
                if self.peek()[0] == "word" and self.peek()[1].startswith("."):
                    text = self.take()[1]
                    parts.extend(p for p in text.split(".") if p != "")
        return parts

    def comparison(self):
        parts = self.field()
        t = self.take()
        if t[0] != "op":
            raise FilterError("Invalid filter: expected an operator after %r" % ".".join(parts))
        op = t[1]
        v = self.take()
        if v[0] not in ("word", "str"):
            raise FilterError("Invalid filter: expected a value after %r" % op)
        return self.resolver(parts, op, v[1], v[0] == "str")


def compile_filter(text, resolver):
    return _Parser(tokenize(text or ""), resolver).parse()


def str_compare(actual, op, value):
    """String comparison with AIP-160 wildcards (`*`) for = and :."""
    if actual is None:
        actual = ""
    if op == ":":
        if value == "*":
            return actual != ""
        if "*" in value:
            return fnmatch.fnmatchcase(actual, value)
        return value in actual
    if op in ("=", "!="):
        eq = fnmatch.fnmatchcase(actual, value) if "*" in value else actual == value
        return eq if op == "=" else not eq
    if op == "<":
        return actual < value
    if op == "<=":
        return actual <= value
    if op == ">":
        return actual > value
    if op == ">=":
        return actual >= value
    raise FilterError("Invalid filter: unsupported operator %s" % op)


def num_compare(actual, op, value):
    if op in ("=", ":"):
        return actual == value
    if op == "!=":
        return actual != value
    if op == "<":
        return actual < value
    if op == "<=":
        return actual <= value
    if op == ">":
        return actual > value
    if op == ">=":
        return actual >= value
    raise FilterError("Invalid filter: unsupported operator %s" % op)
