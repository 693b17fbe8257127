"""Runner of e2e.remote (bindings/sdk/remote.lua), copied into every remote
sandbox and run there with python3 (stdlib only):

    python3 <dir>/runner.py <entry>

It reads <dir>/args.json (a JSON list in the tagged convention below),
runs <dir>/remote_fn.py, calls its function <entry>(*args) and writes
<dir>/result.json: {"ok": <tagged value>} or {"error": {"name", "message",
"traceback"}}. Exit status 0 whenever a result file was written.

Tagged JSON (both sides, docs/lua-api.md "e2e.remote"): plain JSON for
None/bool/int/float/str/list/dict; an object with exactly one key that
starts with "$" is a tag: {"$bytes": hex}, {"$float": "nan"|"inf"|"-inf"},
{"$dict": {...}} (a real dict whose only key starts with "$").
"""
import json
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class Unrepresentable(TypeError):
    """A result that has no Lua form (set, object, int beyond int64...)."""


def untag(v):
    if isinstance(v, list):
        return [untag(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (k, x), = v.items()
            if k == "$bytes":
                return bytes.fromhex(x)
            if k == "$float":
                return float(x)
            if k == "$dict":
                return {kk: untag(xx) for kk, xx in x.items()}
        return {k: untag(x) for k, x in v.items()}
    return v


def check_str(s, where):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise Unrepresentable("%s: str with a lone surrogate has no UTF-8 form"
                              % where) from None
    return s


def tag(v, where="result"):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        if not INT64_MIN <= v <= INT64_MAX:
            raise Unrepresentable("%s: int %d is beyond int64" % (where, v))
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return {"$float": "nan"}
        if math.isinf(v):
            return {"$float": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(v, str):
        return check_str(v, where)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(v).hex()}
    if isinstance(v, (list, tuple)):
        return [tag(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        d = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise Unrepresentable("%s: dict key %r of type %s (keys must "
                                      "be str)" % (where, k, type(k).__name__))
            d[check_str(k, where)] = tag(x, "%s[%r]" % (where, k))
        if len(d) == 1 and next(iter(d)).startswith("$"):
            return {"$dict": d}
        return d
    raise Unrepresentable("%s: a value of type %s has no Lua form"
                          % (where, type(v).__name__))


def run(entry):
    src_path = os.path.join(HERE, "remote_fn.py")
    with open(os.path.join(HERE, "args.json"), encoding="utf-8") as f:
        args = untag(json.load(f))
    with open(src_path, encoding="utf-8") as f:
        src = f.read()
    scope = {"__name__": "remote_fn", "__file__": src_path}
    exec(compile(src, src_path, "exec"), scope)
    fn = scope.get(entry)
    if not callable(fn):
        raise NameError("the source defines no function %r" % entry)
    return {"ok": tag(fn(*args))}


def failure(e, src_path):
    # Drop the runner's own frames: the traceback starts in the user's code.
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != src_path:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    name = "TypeError" if isinstance(e, Unrepresentable) else type(e).__name__
    return {"error": {"name": name, "message": str(e),
                      "traceback": text}}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: runner.py ENTRY")
    sys.path.insert(0, os.getcwd())  # files= of the call are importable
    try:
        out = run(sys.argv[1])
    except BaseException as e:  # SystemExit from user code too
        out = failure(e, os.path.join(HERE, "remote_fn.py"))
    tmp = os.path.join(HERE, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, allow_nan=False)
    os.replace(tmp, os.path.join(HERE, "result.json"))


if __name__ == "__main__":
    main()
