"""What tests/lint/test_ci_examples.py reads out of a CI file: the YAML
with line numbers, the shell scripts (GitHub `run:`, GitLab `script:`),
the abx-e2e command lines in them and their options checked against the
options an `abx-e2e ... --help` lists, and GitHub's ${{ }} expressions
evaluated with sample values. python3 and python3-yaml only."""
import os
import re
import shlex

import yaml

SCRIPT_KEYS = ("run", "script", "before_script", "after_script")
SUBCOMMANDS = ("run", "cleanup", "merge", "doctor", "exec", "repl")
KEYWORDS = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "time"}
PUNCT = ";&|()<>"


class LintError(Exception):
    """A problem that names its file and line."""


def load(path):
    """(text, data, composed root node) of a YAML file; LintError naming
    the file and line on a syntax error."""
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)


def parse(text, path):
    """load() of text, path naming it."""
    try:
        return text, yaml.safe_load(text), yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark else 0
        raise LintError("%s:%d: YAML syntax error: %s" % (
            path, line, getattr(e, "problem", None) or e)) from None


def script_blocks(node):
    """Every script of the file as (text, first line): the scalars under a
    run/script/before_script/after_script key, nested lists flattened."""
    out = []

    def scalars(n):
        if isinstance(n, yaml.ScalarNode):
            # A block scalar (| or >) starts on the line after its indicator.
            out.append((n.value, n.start_mark.line + (2 if n.style in ("|", ">") else 1)))
        elif isinstance(n, yaml.SequenceNode):
            for item in n.value:
                scalars(item)

    def walk(n, seen):
        if id(n) in seen:
            return
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode) and k.value in SCRIPT_KEYS:
                    scalars(v)
                else:
                    walk(v, seen)
        elif isinstance(n, yaml.SequenceNode):
            for item in n.value:
                walk(item, seen)

    walk(node, set())
    return out


GHA_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _tokens(line):
    lex = shlex.shlex(line, posix=True, punctuation_chars=PUNCT)
    lex.whitespace_split = True
    return list(lex)


def _logical_lines(text, line0):
    """(line number, tokens) per shell line, `\\` continuations joined and
    a quote left open carried to the next line."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, buf = i, lines[i]
        while True:
            if buf.endswith("\\") and i + 1 < len(lines):
                i += 1
                buf = buf[:-1] + " " + lines[i]
                continue
            try:
                toks = _tokens(GHA_EXPR.sub("GHA_EXPR", buf))
                break
            except ValueError:  # an open quote: take the next line too
                if i + 1 >= len(lines):
                    toks = []
                    break
                i += 1
                buf += "\n" + lines[i]
        yield line0 + start, toks
        i += 1


def _is_sep(tok):
    return tok and all(c in PUNCT for c in tok) and not set(tok) & set("<>")


def invocations(text, line0, binary="abx-e2e"):
    """The abx-e2e command lines of a script: [(line, [args])], only where
    abx-e2e is the command (not an argument, as in `chmod +x .../abx-e2e`)."""
    found = []
    for line, toks in _logical_lines(text, line0):
        cmd_pos, i = True, 0
        while i < len(toks):
            t = toks[i]
            if _is_sep(t) or t in KEYWORDS:
                cmd_pos = True
            elif cmd_pos and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):
                pass  # VAR=value before the command
            elif cmd_pos and os.path.basename(t) == binary:
                args = []
                i += 1
                while i < len(toks) and not _is_sep(toks[i]):
                    args.append(toks[i])
                    i += 1
                found.append((line, args))
                cmd_pos = True
                continue
            else:
                cmd_pos = False
            i += 1
    return found


LOOP_WORDS = ("for", "while", "until", "select")


def loops(text, line0):
    """The shell loops of a script: [(line, keyword)] where for, while,
    until or select starts a command (not inside an argument or a string)."""
    found = []
    for line, toks in _logical_lines(text, line0):
        cmd_pos = True
        for t in toks:
            if cmd_pos and t in LOOP_WORDS:
                found.append((line, t))
            cmd_pos = bool(_is_sep(t)) or t in KEYWORDS
    return found


def subcommand(args):
    """(subcommand, its arguments); no subcommand word is `run`."""
    if args and args[0] in SUBCOMMANDS:
        return args[0], args[1:]
    return "run", args


HELP_LINE = re.compile(r"^\s+(-\S.*)$")
VALUE_WORD = re.compile(r"^([A-Z][A-Z0-9_/.]*|\S*\|\S*)$")  # FILE, K/N, yes|no


def parse_help(text):
    """{option: takes a value} of the option lines of a --help text
    ("  -n N|auto   ...", "  --lf, --last-failed  ...")."""
    opts = {}
    for line in text.splitlines():
        m = HELP_LINE.match(line)
        if not m:
            continue
        synopsis = re.split(r"\s{2,}", m.group(1).strip())[0]
        aliases = [a.split() for a in synopsis.split(", ")]
        # "--lfnf, --last-failed-no-failures all|none": the value is
        # written once, after the last alias; "--ff, --failed-first run
        # last ...": one space, then the description.
        value = any(len(w) > 1 and VALUE_WORD.match(w[1]) for w in aliases)
        for words in aliases:
            if words and words[0].startswith("-"):
                opts[words[0]] = bool(value)
    return opts


def unknown_options(args, opts):
    """The option tokens of args that opts (parse_help) does not list."""
    bad, i = [], 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            if name not in opts:
                bad.append(a)
            elif opts[name] and "=" not in a:
                i += 1  # its value
        elif a.startswith("-") and len(a) > 1 and not a[1].isdigit():
            name = a[:2]
            if name not in opts:
                bad.append(a)
            elif opts[name] and len(a) == 2:
                i += 1
            elif not opts[name] and len(a) > 2 and not all(
                    "-" + c in opts and not opts["-" + c] for c in a[1:]):
                bad.append(a)  # flags run together (-vs): each must exist
    return bad


def option_values(args, name):
    """The values given to option name in args ("--json F", "--json=F")."""
    out = []
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith(name + "="):
            out.append(a[len(name) + 1:])
    return out


def gha_eval(text, ctx):
    """text with every ${{ expr }} replaced by ctx[expr]; LintError for an
    expression the lint cannot evaluate offline."""
    def one(m):
        if m.group(1) not in ctx:
            raise LintError("cannot evaluate ${{ %s }} offline (known: %s)"
                            % (m.group(1), ", ".join(sorted(ctx))))
        return str(ctx[m.group(1)])
    return GHA_EXPR.sub(one, str(text))


def flatten(v):
    """A GitLab script: a string or a (nested) list of strings, as a list."""
    if v is None:
        return []
    if isinstance(v, list):
        return [s for item in v for s in flatten(item)]
    return [str(v)]


def line_of(text, needle, start):
    """The first line at or after start that holds needle (else start)."""
    for n, line in enumerate(text.splitlines()[start - 1:], start):
        if needle in line:
            return n
    return start
