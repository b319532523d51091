#!/usr/bin/env node
// Parses GitHub workflows and action.yml files with GitHub's own parser
// (@actions/workflow-parser, the one behind the Actions language service), as
// GitHub would when the file is pushed: an unknown key, a wrong type, a bad
// expression or a malformed cron fails here rather than in a user's repository.
// tools/check-ci.py checks what vx's recipes rely on beyond that.
//
// usage: node tools/check-gh-parse.mjs MODULES_DIR FILE...
//   MODULES_DIR: the node_modules that holds @actions/workflow-parser
//   (make lint-ci installs it from tools/ci-parser/package-lock.json).
// A file named action.yml or action.yaml is parsed as an action; any other as a
// workflow. Prints "FILE:LINE:COL: message" per error and exits 1 if any.
import { readFileSync } from "node:fs";
import { register } from "node:module";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
if (!modules || files.length === 0) {
  console.error("usage: node tools/check-gh-parse.mjs MODULES_DIR FILE...");
  process.exit(64);
}
// The package imports its JSON schemas without an import attribute, which its
// bundlers accept and Node does not: a load hook adds { type: "json" } to them.
const hook = `export async function load(url, context, next) {
  if (url.endsWith(".json"))
    return next(url, { ...context, importAttributes: { type: "json" } });
  return next(url, context);
}`;
register("data:text/javascript," + encodeURIComponent(hook));
const dist = join(modules, "@actions", "workflow-parser", "dist");
const { parseWorkflow, NoOperationTraceWriter } = await import(pathToFileURL(join(dist, "index.js")).href);
const { parseAction } = await import(pathToFileURL(join(dist, "actions", "index.js")).href);

let bad = 0;
for (const path of files) {
  const file = { name: path, content: readFileSync(path, "utf8") };
  const isAction = /^action\.ya?ml$/.test(basename(path));
  const result = isAction ? parseAction(file, new NoOperationTraceWriter())
                          : parseWorkflow(file, new NoOperationTraceWriter());
  const errors = result.context.errors.getErrors();
  if (!result.value && errors.length === 0) {
    console.log(`${path}: nothing parsed`);
    bad++;
  }
  for (const e of errors) {
    const at = e.range ? `${e.range.start.line}:${e.range.start.column}` : "1:1";
    console.log(`${path}:${at}: ${e.rawMessage}`);
    bad++;
  }
  if (errors.length === 0 && result.value)
    console.log(`${path}: parsed by @actions/workflow-parser as ${isAction ? "an action" : "a workflow"}: ok`);
}
process.exit(bad ? 1 : 0);
