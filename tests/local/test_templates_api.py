"""abx-local: GET /templates (upstream E2B's Template objects), GET
/templates/{id} (id or alias: the template and its builds) and GET
/templates/aliases/{alias} (E2B's TemplateAliasResponse) on both
profiles, with a private templates dir: fields and types, aliases, the
profile's envdVersion, broken definitions left out, 404 / 401 / 405 shapes
and per-profile wording."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server  # noqa: E402
from abxtest import check, done, eq, err_shape, write_file  # noqa: E402

# Debian's essential set, nothing added: the root every profile shares
# (already cached by local.roots*).
ROOTFS = {"debian": "bookworm", "variant": "essential", "packages": []}
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
LIST_FIELDS = {"templateID": str, "buildID": str, "cpuCount": int, "memoryMB": int,
               "diskSizeMB": int, "public": bool, "aliases": list, "createdAt": str,
               "updatedAt": str, "spawnCount": int, "buildCount": int, "buildStatus": str,
               "envdVersion": str}
BUILD_FIELDS = {"buildID": str, "status": str, "createdAt": str, "updatedAt": str,
                "cpuCount": int, "memoryMB": int, "diskSizeMB": int, "envdVersion": str}


def typed(obj, fields, what):
    for k, t in fields.items():
        v = obj.get(k) if isinstance(obj, dict) else None
        # bool is an int in Python: keep the two apart.
        ok = isinstance(v, t) and (t is bool or not isinstance(v, bool))
        check(ok, "%s: %s is a %s (%r)" % (what, k, t.__name__, v))


def run(s, fc):
    name = "fc" if fc else "e2b"
    envd = "0.5.2" if fc else "0.6.4"

    # ---- auth first, as for /sandboxes ----
    st, js, _, _ = s.request("GET", "/templates", key=False)
    check(err_shape(st, js, 401), "%s: GET /templates without a key -> 401" % name)
    st, js, _, _ = s.request("GET", "/templates/base", key="e2b_00")
    check(err_shape(st, js, 401), "%s: GET /templates/{id} with a bad key -> 401" % name)

    # ---- the list ----
    st, lst, _, _ = s.request("GET", "/templates")
    check(st == 200 and isinstance(lst, list), "%s: GET /templates -> 200 array (%d)" % (name, st))
    lst = lst if isinstance(lst, list) else []
    by_id = {t.get("templateID"): t for t in lst}
    eq(sorted(by_id), ["base", "full-v1"], "%s: listed ids (the broken one left out)" % name)
    for tid, t in by_id.items():
        what = "%s: %s" % (name, tid)
        typed(t, LIST_FIELDS, what)
        check("createdBy" in t and t["createdBy"] is None, what + ": createdBy null")
        check("lastSpawnedAt" in t, what + ": lastSpawnedAt present")
        eq(t.get("buildStatus"), "ready", what + ": buildStatus")
        eq(t.get("envdVersion"), envd, what + ": the profile's envdVersion")
        check(re.fullmatch(UUID, t.get("buildID", "")) is not None, what + ": buildID is a UUID")
        check(all(re.fullmatch(RFC3339, t.get(k) or "") for k in ("createdAt", "updatedAt")),
              what + ": RFC3339 times")
        check((t.get("updatedAt") or "") >= (t.get("createdAt") or ""),
              what + ": updatedAt not before createdAt")
        check(t.get("public") is True, what + ": a shipped template is public")
    full = by_id.get("full-v1", {})
    eq(full.get("aliases"), ["full", "full-alias"], "%s: every alias listed" % name)
    eq((full.get("cpuCount"), full.get("memoryMB"), full.get("diskSizeMB")), (3, 768, 2048),
       "%s: sizes from the definition" % name)
    eq(by_id.get("base", {}).get("aliases"), [], "%s: no aliases -> []" % name)
    st, lst2, _, _ = s.request("GET", "/templates/")
    check(st == 200 and lst2 == lst, "%s: GET /templates/ = GET /templates" % name)

    # ---- one template, by id or alias ----
    for ref in ("full-v1", "full", "full-alias"):
        st, d, _, _ = s.request("GET", "/templates/" + ref)
        what = "%s: GET /templates/%s" % (name, ref)
        check(st == 200 and isinstance(d, dict), what + " -> 200 (%d)" % st)
        d = d if isinstance(d, dict) else {}
        eq(d.get("templateID"), "full-v1", what + ": templateID")
        eq(d.get("public"), True, what + ": public")
        eq(d.get("aliases"), ["full", "full-alias"], what + ": aliases")
        builds = d.get("builds")
        check(isinstance(builds, list) and len(builds) == 1, what + ": one build")
        b = builds[0] if isinstance(builds, list) and builds else {}
        typed(b, BUILD_FIELDS, what + " build")
        eq(b.get("status"), "ready", what + ": build status")
        eq(b.get("buildID"), full.get("buildID"), what + ": the listed buildID")
        eq(b.get("envdVersion"), envd, what + ": build envdVersion")
        eq((b.get("cpuCount"), b.get("memoryMB"), b.get("diskSizeMB")), (3, 768, 2048),
           what + ": build sizes")

    # ---- GET /templates/aliases/{alias}: the SDKs' Template.exists ----
    for ref, want in (("full", "full-v1"), ("full-alias", "full-v1"), ("base", "base")):
        st, d, _, _ = s.request("GET", "/templates/aliases/" + ref)
        eq((st, d), (200, {"templateID": want, "public": True}),
           "%s: GET /templates/aliases/%s" % (name, ref))
    st, js, _, _ = s.request("GET", "/templates/aliases/no-such-alias")
    check(err_shape(st, js, 404) and "no-such-alias" in js["message"],
          "%s: an unknown alias -> 404 naming it (%d)" % (name, st))
    st, js, _, _ = s.request("GET", "/templates/aliases/full", key="e2b_00")
    check(err_shape(st, js, 401), "%s: GET /templates/aliases/{alias} with a bad key -> 401"
          % name)
    st, js, _, _ = s.request("GET", "/templates/aliases/")
    check(err_shape(st, js, 404), "%s: GET /templates/aliases/ -> 404" % name)

    # ---- errors, worded like /sandboxes on each profile ----
    st, js, _, _ = s.request("GET", "/templates/no-such-template")
    check(err_shape(st, js, 404) and "no-such-template" in js["message"],
          "%s: unknown template -> 404 naming it" % name)
    if st == 404 and isinstance(js, dict):
        check(js["message"].startswith("ResourceNotFound: ") == fc,
              "%s: 404 wording (%r)" % (name, js["message"]))
    st, js, _, _ = s.request("GET", "/templates/broken")
    check(st == 500 and isinstance(js, dict) and "broken" in js.get("message", ""),
          "%s: a broken definition -> 500 naming it (%d %r)" % (name, st, js))
    for method, path in (("POST", "/templates"), ("DELETE", "/templates/base"),
                         ("PATCH", "/templates/full")):
        st, js, h, _ = s.request(method, path, {})
        what = "%s: %s %s" % (name, method, path)
        check(err_shape(st, js, 405), what + " -> 405 (%d)" % st)
        eq(h.get("allow"), "GET", what + ": Allow")
        if st == 405:
            check(js["message"].startswith("MethodNotAllowed: ") == fc,
                  what + ": wording (%r)" % js["message"])
    # Same 405 body as /sandboxes gives for a method it does not take.
    st, sj, _, _ = s.request("PUT", "/sandboxes", {})
    st2, tj, _, _ = s.request("PUT", "/templates", {})
    check(st == st2 == 405 and sj["message"].replace("/sandboxes", "/templates")
          .replace("GET, POST", "GET") == tj["message"],
          "%s: 405 worded as /sandboxes (%r / %r)" % (name, sj, tj))
    for path in ("/templates/base/builds", "/templates/base/builds/x/status"):
        st, js, _, _ = s.request("GET", path)
        check(err_shape(st, js, 404), "%s: GET %s -> 404" % (name, path))
    st, js, _, _ = s.request("GET", "/templatesx")
    check(err_shape(st, js, 404), "%s: /templatesx is no route" % name)

    # What the list offers can be created from.
    sb = s.create("full-alias", timeout=30)
    check(sb.get("templateID") == "full-v1", "%s: a listed alias creates" % name)
    check(s.kill(sb["sandboxID"]) == 204, "%s: kill it" % name)


def main():
    with tempfile.TemporaryDirectory(prefix="abx-local-tmplapi-") as tdir:
        write_file(tdir + "/base/template.json", json.dumps({"templateID": "base", "rootfs": ROOTFS}))
        write_file(tdir + "/full/template.json", json.dumps({
            "templateID": "full-v1", "aliases": ["full", "full-alias"], "rootfs": ROOTFS,
            "cpuCount": 3, "memoryMB": 768, "diskSizeMB": 2048}))
        write_file(tdir + "/broken/template.json", "{not json")
        for fc in (False, True):
            with Server(extra=["--templates", tdir, "--profile", "fc" if fc else "e2b"]) as s:
                run(s, fc)
    done()


if __name__ == "__main__":
    main()
