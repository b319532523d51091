"""vx's JSON output checked against its published schemas (docs/*.schema.json) with a real
JSON Schema validator: Debian's python3-jsonschema, Draft 2020-12 as each schema declares
(maxLength, minimum, pattern, const, oneOf and $ref included).

  plan     docs/plan-json.schema.json  vxplan -format json, vxplan -out FILE
  status   docs/status.schema.json     vx status -format json
  report   docs/report.schema.json     vx report (-format json, the default; -o FILE too)
  webhook  docs/webhook.schema.json    the body of a notify: target of format json

harness.Result.checked calls check_run on every run of vx the tests make through the harness
(Repo.vx, and the helpers of the test files that wrap their own runs in Result), so every JSON
document a test gets from vx has been validated before the test looks at it.
"""
import json
import os

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = {"plan": "plan-json.schema.json", "status": "status.schema.json",
         "report": "report.schema.json", "webhook": "webhook.schema.json"}
_VALIDATORS = {}


def validator(kind):
    if kind not in _VALIDATORS:
        with open(os.path.join(ROOT, "docs", FILES[kind])) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        if cls is not jsonschema.Draft202012Validator:
            raise AssertionError("docs/%s: $schema is not Draft 2020-12" % FILES[kind])
        _VALIDATORS[kind] = cls(schema)
    return _VALIDATORS[kind]


def shorten(text, most=300):
    return text if len(text) <= most else text[:most // 2] + " ... " + text[-most // 2:]


def check(doc, kind, what=None):
    """Raises AssertionError naming every place doc breaks the schema of kind."""
    errors = sorted(validator(kind).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError("%s does not match docs/%s:\n%s" % (
            what or kind, FILES[kind],
            "\n".join("  %s: %s: %s" % (e.json_path, e.validator, shorten(e.message)) for e in errors[:20])))
    return doc


def check_text(text, kind, what=None):
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise AssertionError("%s is not JSON (%s): %r" % (what or kind, e, text[:500]))
    return check(doc, kind, what)


def _flag(args, name):
    """The value of -name (or --name, -name=V) in args, else None."""
    for i, a in enumerate(args):
        for p in ("-" + name, "--" + name):
            if a == p and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(p + "="):
                return a[len(p) + 1:]
    return None


def check_run(argv, result, cwd):
    """The JSON a run of vx (argv: the binary, vx or a vxplan/vxapply link, and its arguments)
    printed or wrote, checked against its schema: the plan (-format json; -out FILE), the status
    (-format json) and the report (JSON by default; -o FILE). Runs that failed (exit 1 or more,
    2 being the plan's 'changes') are left alone when they printed nothing. A relative FILE is
    checked only when cwd is known."""
    argv = [str(a) for a in argv] if isinstance(argv, (list, tuple)) else []
    prog = os.path.basename(argv[0]) if argv else ""
    if prog not in ("vx", "vxplan", "vxapply"):
        return
    args = argv[1:]
    if prog != "vx":
        args = [prog[2:]] + args
    if any(a in ("-help", "--help", "-h") for a in args):
        return
    verb = args[0] if args and not args[0].startswith("-") else None
    fmt = _flag(args, "format")
    ok = result.code == 0 or (verb == "plan" and result.code == 2)
    if verb == "plan":
        if fmt == "json" and (ok or result.out.strip()):
            check_text(result.out, "plan", "vx %s: stdout" % " ".join(args))
        out = _flag(args, "out")
        if out and ok and (cwd or os.path.isabs(out)):
            path = os.path.join(cwd or "", out)
            if os.path.exists(path):
                with open(path) as f:
                    check_text(f.read(), "plan", "the plan file %s" % out)
    elif verb == "status" and fmt == "json" and ok:
        check_text(result.out, "status", "vx %s: stdout" % " ".join(args))
    elif verb == "report" and fmt in (None, "json") and ok:
        out = _flag(args, "o")
        if fmt is None and out and os.path.splitext(out)[1].lower() in (".html", ".htm", ".csv"):
            return  # without -format, the file's extension picks the format (docs/report.md)
        if out and out != "-":
            if cwd or os.path.isabs(out):
                with open(os.path.join(cwd or "", out)) as f:
                    check_text(f.read(), "report", "the report file %s" % out)
        else:
            check_text(result.out, "report", "vx %s: stdout" % " ".join(args))
