"""Fenced code blocks of a Markdown file, for the scripts that run a
doc's blocks (tests/docs/). Standard library only."""
import re

from abxtest import Fail

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")


def fences(lines, rel):
    """(index of the opening line, indent, language, body lines) of every
    fenced block; the body without the fence's indent."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body, i = i, [], i + 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if (c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence)
                    and not c.group(3)):
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent)
                        else lines[i].lstrip())
            i += 1
        else:
            raise Fail("%s:%d: unclosed code block" % (rel, start + 1))
        i += 1
        yield start, indent, lang, body
