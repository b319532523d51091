#!/usr/bin/env python3
"""Checks the CI recipes in examples/ci/ for the keys they rely on (make lint-ci).

yamllint checks that the files are well-formed YAML; this checks what GitHub
and GitLab would otherwise only report once the recipe runs in a user's
repository:

GitHub workflows (*.yml under a folder named github):
  * top-level keys are known; `on`, `permissions` and `jobs` are present;
  * every job has `runs-on` and a non-empty list of `steps`;
  * every step has exactly one of `uses` and `run`, and only known keys;
  * every `uses` is pinned to a version (vN, vN.N, vN.N.N or a commit SHA),
    never a branch;
  * a workflow with google-github-actions/auth grants `id-token: write` (the
    OIDC token workload identity federation exchanges; without it auth fails);
  * every `secrets.X` and `vars.X` it references is named in docs/gitops.md;
  * two identities: google-github-actions/auth takes `service_account` from
    vars.GCP_PLAN_SERVICE_ACCOUNT with vars.GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER
    (plan), or from any other name, which counts as the identity that applies
    (apply, watch), with vars.GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER; a workflow
    using the applying identity runs only on push to main (and workflow_dispatch,
    and schedule: GitHub runs the default branch's scheduled workflows), and its
    job only on main (`if: github.ref == 'refs/heads/main'`, or a protected
    `environment`). A pull request runs the workflow files of its own branch:
    anything it can trigger must not hold the identity that applies.
GitLab (.gitlab-ci.yml, with the files its `include: local:` names merged in
first, as GitLab merges them; a local path is taken from the folder of the
.gitlab-ci.yml, which is the repository's root where the recipe is used):
  * `stages` is a list; every job (after `extends`) has a `stage` in it and a
    `script`;
  * every `id_tokens` entry sets `aud`, and a job that uses an ID token has one;
  * every GCP_* and VX_* variable it references is named in docs/gitops.md (or set
    under `variables:`, by an id_tokens entry, or by the scripts themselves);
  * a job that references a variable kept for the apply (APPLY_ONLY below:
    the applying identity and the protected tokens) has `rules` that run it only
    on the default branch; and no ID token audience of such a job is also one of
    a job that may run elsewhere (a merge request pipeline runs the MR's own
    .gitlab-ci.yml: its token must not be one the apply's provider accepts).

A GitLab template (NAME.gitlab-ci.yml, included by a .gitlab-ci.yml): every
job is hidden (.NAME) and has a script or before_script, or extends another.
A GitHub action (action.yml, the setup action at the repository's root),
against GitHub's documented metadata syntax (make lint-ci also runs GitHub's own
parser on it, tools/check-gh-parse.mjs, where node is installed):
  * top-level keys are known; name, description and runs are present;
  * every input and output has a description, an output of a composite action
    a value; the setup action has the inputs version, build-from and
    github-token and the output version;
  * runs.using is composite with a non-empty list of steps, each with exactly
    one of uses and run, known keys, a shell for every run, uses pinned;
  * every inputs.X and steps.ID.outputs an expression names is declared.

usage: tools/check-ci.py [--docs docs/gitops.md] FILE...
Prints one line per problem, "FILE: where: what", and exits 1 if any.
Needs python3-yaml (PyYAML).
"""
import argparse
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GH_TOP = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
GH_JOB = {"name", "runs-on", "steps", "needs", "if", "permissions", "env", "defaults", "environment",
          "concurrency", "outputs", "timeout-minutes", "strategy", "continue-on-error", "container",
          "services"}
GH_STEP = {"id", "name", "if", "uses", "run", "with", "env", "working-directory", "shell",
           "continue-on-error", "timeout-minutes"}
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")
GH_REF = re.compile(r"\$\{\{[^}]*?\b(secrets|vars)\.([A-Za-z_][A-Za-z0-9_]*)")

PLAN_SA = "GCP_PLAN_SERVICE_ACCOUNT"
PLAN_PROVIDER = "GCP_PLAN_WORKLOAD_IDENTITY_PROVIDER"
APPLY_SA = "GCP_APPLY_SERVICE_ACCOUNT"
APPLY_PROVIDER = "GCP_APPLY_WORKLOAD_IDENTITY_PROVIDER"
GH_VAR_ONLY = re.compile(r"^\$\{\{\s*(?:vars|secrets)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
GH_MAIN_IF = re.compile(r"github\.ref\s*==\s*'refs/heads/main'")
# A scheduled workflow runs the default branch's files only (GitHub), so the
# identity that applies may run on a schedule: vx-watch.yml resubmits.
GH_APPLY_TRIGGERS = {"push", "workflow_dispatch", "schedule"}

# GitLab variables only the apply may see (protected, or naming the identity that
# applies). GCP_SERVICE_ACCOUNT and GCP_WORKLOAD_IDENTITY_PROVIDER are the one
# identity of recipes that had a single one: it applied, so it counts as that.
APPLY_ONLY = {APPLY_SA, APPLY_PROVIDER, "GCP_SERVICE_ACCOUNT", "GCP_WORKLOAD_IDENTITY_PROVIDER",
              "VX_PUSH_TOKEN", "VX_API_TOKEN"}
GL_DEFAULT_BRANCH = re.compile(r"\$CI_COMMIT_BRANCH\s*==\s*\$CI_DEFAULT_BRANCH")

GL_RESERVED = {"stages", "variables", "default", "include", "workflow", "image", "services",
               "before_script", "after_script", "cache"}
GL_VAR = re.compile(r"\$\{?((?:GCP|VX)_[A-Z0-9_]+)")


class Loader(yaml.SafeLoader):
    """Safe YAML, but `on:` stays the string "on" (YAML 1.1 reads it as true)."""


Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def strings(node):
    """Every string anywhere in a YAML tree."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def grants_id_token(perms):
    return isinstance(perms, dict) and perms.get("id-token") == "write"


def check_github(path, doc, documented, problems):
    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    if not isinstance(doc, dict):
        bad("top", "a workflow is a mapping")
        return
    for k in doc:
        if k not in GH_TOP:
            bad("top", "unknown key %r" % k)
    for k in ("on", "permissions", "jobs"):
        if k not in doc:
            bad("top", "no %r" % k)
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        bad("jobs", "no jobs")
        jobs = {}
    for name, job in jobs.items():
        where = "job %s" % name
        if not isinstance(job, dict):
            bad(where, "a job is a mapping")
            continue
        for k in job:
            if k not in GH_JOB:
                bad(where, "unknown key %r" % k)
        if "runs-on" not in job:
            bad(where, "no runs-on")
        steps = job.get("steps")
        if not isinstance(steps, list) or not steps:
            bad(where, "no steps")
            steps = []
        uses_auth = False
        for i, step in enumerate(steps, 1):
            sw = "%s step %d" % (where, i)
            if not isinstance(step, dict):
                bad(sw, "a step is a mapping")
                continue
            if isinstance(step.get("name"), str):
                sw += " (%s)" % step["name"]
            for k in step:
                if k not in GH_STEP:
                    bad(sw, "unknown key %r" % k)
            if ("uses" in step) == ("run" in step):
                bad(sw, "needs exactly one of uses and run")
            uses = step.get("uses")
            if uses is not None:
                if not isinstance(uses, str) or not PINNED.match(uses):
                    bad(sw, "uses %r is not pinned to a version (owner/repo@vN or @SHA)" % (uses,))
                elif uses.startswith("google-github-actions/auth@"):
                    uses_auth = True
                    check_identity(doc, job, sw, step.get("with"), bad)
        if uses_auth and not (grants_id_token(doc.get("permissions")) or
                              grants_id_token(job.get("permissions"))):
            bad(where, "authenticates with google-github-actions/auth but its permissions "
                "do not grant id-token: write")
    for s in strings(doc):
        for kind, name in GH_REF.findall(s):
            if name != "GITHUB_TOKEN" and name not in documented:
                bad("top", "%s.%s is not documented in docs/gitops.md" % (kind, name))


ACTION_TOP = {"name", "description", "author", "inputs", "outputs", "runs", "branding"}
ACTION_INPUT = {"description", "required", "default", "deprecationMessage"}
ACTION_OUTPUT = {"description", "value"}
SETUP_INPUTS = ("version", "build-from", "github-token")
SETUP_OUTPUTS = ("version",)
EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def check_action(path, doc, problems):
    """A composite action's metadata (action.yml), as GitHub documents its syntax."""
    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    if not isinstance(doc, dict):
        bad("top", "an action is a mapping")
        return
    for k in doc:
        if k not in ACTION_TOP:
            bad("top", "unknown key %r" % k)
    for k in ("name", "description", "runs"):
        if not doc.get(k):
            bad("top", "no %r" % k)
    sections = {}
    for section, known, want in (("inputs", ACTION_INPUT, SETUP_INPUTS),
                                 ("outputs", ACTION_OUTPUT, SETUP_OUTPUTS)):
        items = doc.get(section) or {}
        if not isinstance(items, dict):
            bad(section, "is a mapping")
            items = {}
        sections[section] = items
        for name, spec in items.items():
            where = "%s %s" % (section[:-1], name)
            if not isinstance(spec, dict):
                bad(where, "is a mapping")
                continue
            for k in spec:
                if k not in known:
                    bad(where, "unknown key %r" % k)
            if not spec.get("description"):
                bad(where, "no description")
            if section == "outputs" and "value" not in spec:
                bad(where, "a composite action's output needs a value")
        for name in want:
            if name not in items:
                bad(section, "no %s %r (the setup action's: docs/ci.md)" % (section[:-1], name))
    runs = doc.get("runs") if isinstance(doc.get("runs"), dict) else {}
    if runs.get("using") != "composite":
        bad("runs", "using is %r, not composite" % (runs.get("using"),))
    steps = runs.get("steps")
    if not isinstance(steps, list) or not steps:
        bad("runs", "no steps")
        steps = []
    ids = set()
    for i, step in enumerate(steps, 1):
        sw = "step %d" % i
        if not isinstance(step, dict):
            bad(sw, "a step is a mapping")
            continue
        if isinstance(step.get("name"), str):
            sw += " (%s)" % step["name"]
        for k in step:
            if k not in GH_STEP:
                bad(sw, "unknown key %r" % k)
        if ("uses" in step) == ("run" in step):
            bad(sw, "needs exactly one of uses and run")
        if "run" in step and not step.get("shell"):
            bad(sw, "a composite action's run step needs a shell")
        uses = step.get("uses")
        if uses is not None and (not isinstance(uses, str) or not PINNED.match(uses)):
            bad(sw, "uses %r is not pinned to a version (owner/repo@vN or @SHA)" % (uses,))
        if "id" in step:
            ids.add(step["id"])
    for s in strings(doc):
        for expr in EXPR.findall(s):
            for name in re.findall(r"\binputs\.([A-Za-z_][A-Za-z0-9_-]*)", expr):
                if name not in sections["inputs"]:
                    bad("top", "inputs.%s is not a declared input" % name)
            for sid in re.findall(r"\bsteps\.([A-Za-z_][A-Za-z0-9_-]*)\.", expr):
                if sid not in ids:
                    bad("top", "steps.%s: no step has that id" % sid)


def var_name(value):
    """X of a value that is exactly ${{ vars.X }} (or secrets.X); else None."""
    m = GH_VAR_ONLY.match(value.strip()) if isinstance(value, str) else None
    return m.group(1) if m else None


def triggers_beyond_main(on):
    """The workflow's triggers other than a push to main, workflow_dispatch and schedule."""
    if isinstance(on, str):
        on = {on: None}
    elif isinstance(on, list):
        on = {k: None for k in on if isinstance(k, str)}
    elif not isinstance(on, dict):
        return ["%r" % (on,)]
    out = []
    for event, spec in on.items():
        if event not in GH_APPLY_TRIGGERS:
            out.append(event)
        elif event == "push" and not (isinstance(spec, dict) and spec.get("branches") == ["main"]
                                       and set(spec) == {"branches"}):
            out.append("push to other than main")
    return out


def check_identity(doc, job, where, args, bad):
    """Plan and apply are two identities; the one that applies stays on main."""
    args = args if isinstance(args, dict) else {}
    sa, provider = args.get("service_account"), args.get("workload_identity_provider")
    sa_var, provider_var = var_name(sa), var_name(provider)
    if sa_var == PLAN_SA:
        if provider_var != PLAN_PROVIDER:
            bad(where, "the plan identity vars.%s with workload_identity_provider %r: it goes with "
                "vars.%s (the plan pool)" % (PLAN_SA, provider, PLAN_PROVIDER))
        return
    who = "vars.%s" % sa_var if sa_var else repr(sa)
    if provider_var != APPLY_PROVIDER:
        bad(where, "service_account %s is not vars.%s, so it counts as the identity that applies, "
            "and its workload_identity_provider %r is not vars.%s (a pool of its own whose "
            "attribute condition admits only pushes to main)" % (who, PLAN_SA, provider,
                                                                APPLY_PROVIDER))
    beyond = triggers_beyond_main(doc.get("on"))
    if beyond:
        bad(where, "the identity that applies (service_account %s) in a workflow that also runs "
            "on %s: anyone who can push a branch can edit this workflow in a pull request and "
            "act as it unreviewed; plans use vars.%s" % (who, ", ".join(beyond), PLAN_SA))
    cond = job.get("if")
    if not job.get("environment") and not (isinstance(cond, str) and GH_MAIN_IF.search(cond)):
        bad(where, "the identity that applies (service_account %s) in a job without "
            "if: github.ref == 'refs/heads/main' (or a protected environment): run by hand on "
            "another branch, that branch's workflow file would run as it" % who)


def resolve(jobs, name, seen=()):
    """A GitLab job with its `extends` merged in (shallowly, as GitLab does per key)."""
    job = jobs.get(name)
    if not isinstance(job, dict) or name in seen:
        return {}
    out = {}
    parents = job.get("extends", [])
    for p in [parents] if isinstance(parents, str) else parents:
        out.update(resolve(jobs, p, seen + (name,)))
    out.update({k: v for k, v in job.items() if k != "extends"})
    return out


def check_gitlab(path, doc, documented, problems):
    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    if not isinstance(doc, dict):
        bad("top", "a pipeline is a mapping")
        return
    stages = doc.get("stages")
    if not isinstance(stages, list) or not stages:
        bad("top", "no stages list")
        stages = []
    jobs = {k: v for k, v in doc.items() if k not in GL_RESERVED}
    real = [k for k in jobs if not k.startswith(".")]
    if not real:
        bad("top", "no jobs")
    check_gitlab_scripts(path, jobs, problems)
    for name in jobs:
        job = jobs[name]
        if isinstance(job, dict) and "id_tokens" in job:
            toks = job["id_tokens"]
            if not isinstance(toks, dict) or not toks:
                bad("job %s" % name, "id_tokens is empty")
                continue
            for tok, spec in toks.items():
                if not isinstance(spec, dict) or not spec.get("aud"):
                    bad("job %s" % name, "id_tokens %s has no aud" % tok)
    for name in real:
        job = resolve(jobs, name)
        where = "job %s" % name
        if job.get("stage") not in stages:
            bad(where, "stage %r is not in stages %r" % (job.get("stage"), stages))
        if not job.get("script"):
            bad(where, "no script")
        tokens = job.get("id_tokens") if isinstance(job.get("id_tokens"), dict) else {}
        for s in strings({k: v for k, v in job.items() if k != "id_tokens"}):
            for m in re.findall(r"\$\{?([A-Z][A-Z0-9_]*_ID_TOKEN)\b", s):
                if m not in tokens:
                    bad(where, "uses $%s but declares no such id_tokens entry" % m)
    check_gitlab_identities(jobs, real, bad)
    declared = set(doc.get("variables") or {})
    for job in jobs.values():
        if isinstance(job, dict) and isinstance(job.get("id_tokens"), dict):
            declared |= set(job["id_tokens"])
    for s in strings(doc):  # shell variables the scripts set themselves
        declared |= set(re.findall(r"(?m)^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=", s))
    for s in strings(doc):
        for name in GL_VAR.findall(s):
            if name not in documented and name not in declared:
                bad("top", "variable %s is not documented in docs/gitops.md" % name)


def default_branch_only(job):
    """Whether the job's rules run it only on the default branch."""
    rules = job.get("rules")
    if "only" in job or "except" in job or not isinstance(rules, list) or not rules:
        return False
    for rule in rules:
        if not isinstance(rule, dict):
            return False
        if rule.get("when") == "never":
            continue
        cond = rule.get("if")
        if not isinstance(cond, str) or not GL_DEFAULT_BRANCH.search(cond) or "||" in cond:
            return False
    return True


def check_gitlab_identities(jobs, real, bad):
    audiences = {}   # aud -> the jobs that may run off the default branch with it
    applying = []
    for name in real:
        job = resolve(jobs, name)
        used = sorted({v for s in strings(job) for v in GL_VAR.findall(s)} & APPLY_ONLY)
        toks = job.get("id_tokens") if isinstance(job.get("id_tokens"), dict) else {}
        auds = {spec.get("aud") for spec in toks.values() if isinstance(spec, dict)} - {None}
        on_default = default_branch_only(job)
        if used and on_default:
            applying.append((name, auds))
        if used:
            if not on_default:
                bad("job %s" % name, "uses %s, kept for the apply, but its rules do not run it only "
                    "on the default branch (each rule an if with $CI_COMMIT_BRANCH == "
                    "$CI_DEFAULT_BRANCH): a merge request pipeline runs the MR's own "
                    ".gitlab-ci.yml; plan jobs use %s" % (", ".join(used), PLAN_SA))
        if not on_default:
            for aud in auds:
                audiences.setdefault(aud, []).append(name)
    for name, auds in applying:
        for aud in sorted(a for a in auds if a in audiences):
            others = [o for o in audiences[aud] if o != name]
            if others:
                bad("job %s" % name, "its ID token audience %r is also that of %s, which may run "
                    "off the default branch: the apply's provider would accept their tokens; give "
                    "plans their own provider (%s)" % (aud, ", ".join(others), PLAN_PROVIDER))


def with_includes(path, doc, problems):
    """doc with the files of its include: local: entries merged under it."""
    if not isinstance(doc, dict) or "include" not in doc:
        return doc
    inc = doc["include"]
    entries = inc if isinstance(inc, list) else [inc]
    merged = {}
    for e in entries:
        local = e if isinstance(e, str) else e.get("local") if isinstance(e, dict) else None
        if not isinstance(local, str):
            problems.append("%s: include: only local includes are checked, not %r" % (path, e))
            continue
        ipath = os.path.join(os.path.dirname(os.path.abspath(path)), local.lstrip("/"))
        try:
            with open(ipath) as f:
                idoc = yaml.load(f, Loader=Loader)
        except (OSError, yaml.YAMLError) as err:
            problems.append("%s: include %s: %s" % (path, local, str(err).replace("\n", " ")))
            continue
        if isinstance(idoc, dict):
            for k, v in idoc.items():
                if k == "variables" and isinstance(v, dict):
                    merged.setdefault("variables", {}).update(v)
                else:
                    merged[k] = v
    for k, v in doc.items():
        if k == "include":
            continue
        if k == "variables" and isinstance(v, dict):
            merged.setdefault("variables", {}).update(v)
        else:
            merged[k] = v
    return merged


def check_gitlab_scripts(path, jobs, problems):
    """Each line of a job's scripts is a command: an unquoted line holding ": " is read by YAML
    as a mapping, which GitLab refuses ("script contains non string value")."""
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        for key in ("before_script", "script", "after_script"):
            lines = job.get(key)
            for i, line in enumerate(lines if isinstance(lines, list) else []):
                if isinstance(line, dict):
                    problems.append("%s: job %s: %s[%d] is a mapping, not a command: quote the line "
                                    "(its \": \" makes YAML read a key)" % (path, name, key, i))
                elif not isinstance(line, (str, list)):
                    problems.append("%s: job %s: %s[%d] is not a command (a %s)"
                                    % (path, name, key, i, type(line).__name__))


def check_gitlab_template(path, doc, problems):
    if not isinstance(doc, dict):
        problems.append("%s: top: a template is a mapping" % path)
        return
    for name, job in doc.items():
        if name in GL_RESERVED:
            continue
        if not name.startswith("."):
            problems.append("%s: job %s: a template's jobs are hidden (.%s): the including "
                            "file says which run, and as whom" % (path, name, name))
        if not isinstance(job, dict) or not any(job.get(k) for k in ("script", "before_script", "extends")):
            problems.append("%s: job %s: none of script, before_script and extends" % (path, name))
    check_gitlab_scripts(path, {k: v for k, v in doc.items() if k not in GL_RESERVED}, problems)


def documented_names(docs):
    try:
        with open(docs) as f:
            return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", f.read()))
    except OSError as e:
        sys.exit("check-ci: %s" % e)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "gitops.md"))
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    documented = documented_names(args.docs)
    problems = []
    for path in args.files:
        try:
            with open(path) as f:
                doc = yaml.load(f, Loader=Loader)
        except (OSError, yaml.YAMLError) as e:
            problems.append("%s: %s" % (path, str(e).replace("\n", " ")))
            continue
        if os.path.basename(path) in ("action.yml", "action.yaml"):
            check_action(path, doc, problems)
        elif os.path.basename(path) == ".gitlab-ci.yml":
            check_gitlab(path, with_includes(path, doc, problems), documented, problems)
        elif os.path.basename(path).endswith(".gitlab-ci.yml"):
            check_gitlab_template(path, doc, problems)
        elif os.path.basename(os.path.dirname(os.path.abspath(path))) == "github":
            check_github(path, doc, documented, problems)
        else:
            problems.append("%s: neither a GitHub workflow (in a folder named github) nor "
                            ".gitlab-ci.yml" % path)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
